/**
 * Shared by the client tests: one listening server with the fixture models (the ollama harness), plus a
 * script of answers: each chat generation takes the next text of the script (forced token by token, then
 * end of turn), so multi-turn client helpers (tool runners, agents) see real turns through the engine.
 */
import { after, before } from 'node:test';
import type { Config } from '../../src/config.ts';
import { forceTokens, type Harness, startHarness, tinyLlamaIds } from '../routes/ollama/harness.ts';

export type { Harness };

/** Makes the next generations say `texts` in order; past the end the model speaks freely. */
export async function script(h: Harness, texts: string[]): Promise<void> {
  const queue = await Promise.all(texts.map((t) => tinyLlamaIds(t)));
  h.steer(() => {
    const ids = queue.shift();
    return ids ? [forceTokens(ids)] : [];
  });
}

/** Runs fn with the script set, clearing it afterwards. */
export async function scripted<T>(h: Harness, texts: string[], fn: () => Promise<T>): Promise<T> {
  await script(h, texts);
  try {
    return await fn();
  } finally {
    h.steer(undefined);
  }
}

/** Creates a key through the admin HTTP API (anonymous loopback caller is admin while no key exists). */
export async function adminKey(h: Harness, name: string, auth?: string): Promise<string> {
  const res = await fetch(`${h.srv.url}/svc/v1/admin/keys`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(auth ? { authorization: `Bearer ${auth}` } : {}) },
    body: JSON.stringify({ name }),
  });
  if (res.status !== 201) throw new Error(`admin key create: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { token: string }).token;
}

/**
 * One listening server for a test file and a key for it from the admin API: started before the file's
 * tests (`ready` gets both), the script cleared and the server closed after them.
 */
export function serverWithKey(name: string, ready: (h: Harness, token: string) => void, overrides: Partial<Config> = {}): void {
  let h: Harness | undefined;
  before(async () => {
    h = await startHarness(overrides);
    ready(h, await adminKey(h, name));
  });
  after(async () => {
    h?.steer(undefined);
    await h?.close();
  });
}

export const toolCall = (name: string, args: unknown) => `<tool_call>\n${JSON.stringify({ name, arguments: args })}\n</tool_call>`;

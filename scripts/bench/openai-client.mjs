// The official openai client in its own process, as a real caller is: one streamed chat completion per
// line read on stdin, one JSON result line ({ttft, tps, tokens}) written back. Used by scripts/bench/openai.ts.
// Args: <baseURL> <model> <max_tokens>
import OpenAI from 'openai';
import { createInterface } from 'node:readline';

const [baseURL, model, maxTokens] = process.argv.slice(2);
const client = new OpenAI({ baseURL, apiKey: 'unused', maxRetries: 0 });
const messages = [{ role: 'user', content: 'Write a short story about a lighthouse keeper.' }];

for await (const _ of createInterface({ input: process.stdin })) {
  const t0 = performance.now();
  let tFirst = 0;
  let tokens = 0;
  const stream = await client.chat.completions.create({
    model,
    messages,
    max_tokens: Number(maxTokens),
    temperature: 0,
    stream: true,
    stream_options: { include_usage: true },
  });
  for await (const c of stream) {
    if (!tFirst && c.choices[0]?.delta?.content) tFirst = performance.now();
    if (c.usage) tokens = c.usage.completion_tokens;
  }
  const tEnd = performance.now();
  process.stdout.write(`${JSON.stringify({ ttft: tFirst - t0, tps: ((tokens - 1) * 1000) / (tEnd - tFirst), tokens })}\n`);
}

/**
 * onnxruntime-node's own telemetry stays off: loading a model leaves no usage-event database (under
 * ~/.cache/Microsoft) and no mat-debug log (in the temporary directory) on Node, Bun and Deno, unless the
 * operator set ORT_DISABLE_TELEMETRY themselves (the control: with it set to 0 both appear, so the check can see
 * them). The children run without CI's variables, as on a user's machine. src/services/inference/onnxruntime-node.ts.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SCRIPT_RUNNERS } from '../support/runtime-process.ts';

const RUNTIMES = SCRIPT_RUNNERS;

/** Variables by which ONNX Runtime itself recognises a CI machine and records nothing (read from its binary's strings). */
const CI_MARKERS = ['CI', 'TF_BUILD', 'GITHUB_ACTIONS', 'GITLAB_CI', 'CIRCLECI', 'TRAVIS', 'JENKINS_URL', 'CODEBUILD_BUILD_ID'];

/** Every path under `dir`, relative to it. */
const listing = (dir: string): string[] => readdirSync(dir, { recursive: true }).map(String);

describe('ONNX Runtime telemetry', () => {
  let root: string;
  before(() => {
    root = mkdtempSync(join(tmpdir(), 'svc-ort-telemetry-'));
  });
  after(() => rmSync(root, { recursive: true, force: true }));

  /** Runs the child with HOME and TMPDIR in a fresh directory; returns what it left there. */
  function left(runtime: keyof typeof RUNTIMES, setting: string | undefined): string[] {
    const dir = mkdtempSync(join(root, `${runtime}-`));
    const env: Record<string, string | undefined> = { ...process.env, HOME: dir, TMPDIR: dir, TMP: dir, TEMP: dir, NO_COLOR: '1' };
    delete env.XDG_CACHE_HOME;
    // as on a user's machine: where it sees CI, ONNX Runtime records nothing whatever the setting
    for (const v of CI_MARKERS) delete env[v];
    if (setting === undefined) delete env.ORT_DISABLE_TELEMETRY;
    else env.ORT_DISABLE_TELEMETRY = setting;
    const [cmd, ...pre] = RUNTIMES[runtime];
    const p = spawnSync(cmd, [...pre, 'test/support/ort-telemetry-child.ts'], { encoding: 'utf8', env, timeout: 120_000 });
    assert.equal(p.status, 0, `${runtime} exited ${p.status}: ${p.stderr.slice(-1500)}`);
    assert.match(p.stdout, /"ort":"onnxruntime-node"/);
    return listing(dir).filter((f) => /mat-debug-\d+\.log$|(^|\/)\.cache\/Microsoft$/.test(f));
  }

  for (const runtime of Object.keys(RUNTIMES) as (keyof typeof RUNTIMES)[]) {
    test(`${runtime}: no usage-event database, no mat-debug log`, () => {
      assert.deepEqual(left(runtime, undefined), []);
    });
    test(`${runtime}: the operator's own ORT_DISABLE_TELEMETRY=0 is left as it is (both appear)`, () => {
      const files = left(runtime, '0');
      assert.ok(files.some((f) => f.includes('mat-debug-')), JSON.stringify(files));
      assert.ok(files.some((f) => f.endsWith('.cache/Microsoft')), JSON.stringify(files));
    });
  }
});

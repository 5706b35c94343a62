/**
 * Reviews in child processes (issue 16): the hard stop at a deadline kills a child process of the
 * review pool (src/review/process-pool.ts), never a thread of the server. Runs the compiled
 * worker scripts (`npx tsc` first), like test/app/budget.test.ts.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import nock from 'nock';
import { afterAll, afterEach, beforeAll, expect, test } from 'vitest';
import { FakeGitHub } from '../app/fake-github.js';
import { examplePayload, GET_IN_LOOP } from '../app/harness.js';
import { loopFn, pythonFile } from '../app/python.js';
import type { Outcome } from '../../src/github/review-pr.js';
import { idleChildrenLost, setHardStopGraceMs } from '../../src/review/pool.js';
import { deliver, prPayload, start, waitFor, type Running } from './helpers.js';

const SCRIPT = join(import.meta.dirname, '..', '..', 'dist', 'src', 'review', 'review-worker.js');
const saved = process.env.GPU_REVIEW_WORKER_SCRIPT;
let run: Running | undefined;
let gh: FakeGitHub | undefined;
beforeAll(() => {
  expect(existsSync(SCRIPT)).toBe(true);
  expect(existsSync(SCRIPT.replace('review-worker', 'review-process'))).toBe(true);
  process.env.GPU_REVIEW_WORKER_SCRIPT = SCRIPT;
});
afterAll(() => {
  if (saved === undefined) delete process.env.GPU_REVIEW_WORKER_SCRIPT;
  else process.env.GPU_REVIEW_WORKER_SCRIPT = saved;
});
afterEach(async () => {
  setHardStopGraceMs();
  await run?.service.stop();
  run = undefined;
  gh?.stop();
  gh = undefined;
  nock.cleanAll();
  nock.enableNetConnect();
});

/** A CUDA file of about `bytes` characters: many small kernels, so the parse alone takes a while. */
function bigCuda(bytes: number): string {
  const out: string[] = [];
  let size = 0;
  for (let i = 0; size < bytes; i++) {
    const k = `__global__ void scale_${i}(float* a, const float* b, int n)\n{\n    int t = blockIdx.x * blockDim.x + threadIdx.x;\n    if (t < n) { a[t] = b[t] * ${i}.5f + a[(t + ${i}) % n]; }\n}\n\n`;
    out.push(k);
    size += k.length;
  }
  return out.join('');
}

/** A delivery for PR `n` at head `sha`, which the fake GitHub then serves. */
function pr(github: FakeGitHub, n: number, sha: string): unknown {
  github.headSha = sha;
  github.number = n;
  return prPayload(examplePayload('opened'), n, sha, 'opened');
}

/** Our tinypool children (their entry is tinypool's dist/entry/process.js). */
function children(): number[] {
  let out = '';
  try {
    out = execFileSync('ps', ['-o', 'pid=,args=', '--ppid', String(process.pid)], { encoding: 'utf8', timeout: 5000 });
  } catch {
    return [];
  }
  return out
    .split('\n')
    .filter((l) => /tinypool.*entry.process\.js/.test(l))
    .map((l) => Number(l.trim().split(/\s+/)[0]));
}

test('a hard stop inside the parse kills a child process: the service answers, the file is reported over budget, the next review is whole', { timeout: 240_000 }, async () => {
  gh = new FakeGitHub().start();
  gh.config = 'limits: { file_timeout_ms: 60000, max_file_bytes: 5000000 }\n';
  gh.files = [{ filename: 'src/big.cu', status: 'added', content: bigCuda(1_500_000) }];
  const outcomes: Outcome[] = [];
  run = await start({}, { app: { checks: GET_IN_LOOP, retryDelayMs: 5, onOutcome: (o) => outcomes.push(o) } });
  const base = run.service.url;
  // The worker's own stop is a minute away; the pool's hard stop comes 0.1 to 1.2 s into the task,
  // while the child reads the task or parses 1.5 MB of CUDA (a parse of it takes seconds here).
  const stops = [100, 300, 500, 800, 1200];
  for (const [i, at] of stops.entries()) {
    setHardStopGraceMs(at - 60_000);
    const before = gh.checkRuns.length;
    expect((await deliver(base, pr(gh, 100 + i, `${'a'.repeat(39)}${i}`))).status).toBe(200);
    // /healthz answers while the review runs and after its child was killed.
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    await run.service.queue.idle();
    expect(gh.checkRuns.length).toBe(before + 1);
    const cr = gh.checkRuns[before];
    expect(cr.conclusion).toBe('neutral');
    expect(cr.output.title).toBe('1 file not reviewed (time budget exceeded)');
    expect(cr.output.summary).toContain('`src/big.cu`');
  }
  expect(outcomes).toHaveLength(stops.length);
  expect((await fetch(`${base}/healthz`)).status).toBe(200);

  // The pool starts new children: a review after the kills is complete.
  setHardStopGraceMs();
  gh.files = [{ filename: 'pkg/a.py', status: 'added', content: pythonFile(loopFn('a')) }];
  expect((await deliver(base, pr(gh, 200, 'b'.repeat(40)))).status).toBe(200);
  await run.service.queue.idle();
  const last = gh.checkRuns.at(-1)!;
  expect(last.conclusion).toBe('failure');
  expect(outcomes.at(-1)).toMatchObject({ kind: 'reviewed', findings: 1 });
  expect(run.logs().filter((l) => l.level >= 60)).toEqual([]);
});

test('a child killed from outside while idle is replaced; the service keeps answering and reviewing', { timeout: 120_000 }, async () => {
  gh = new FakeGitHub().start();
  gh.files = [{ filename: 'pkg/a.py', status: 'added', content: pythonFile(loopFn('a')) }];
  const outcomes: Outcome[] = [];
  run = await start({}, { app: { checks: GET_IN_LOOP, retryDelayMs: 5, onOutcome: (o) => outcomes.push(o) } });
  const base = run.service.url;
  expect((await deliver(base, pr(gh, 300, 'c'.repeat(40)))).status).toBe(200);
  await run.service.queue.idle();
  const pids = children();
  expect(pids.length).toBeGreaterThan(0);
  const lost = idleChildrenLost();
  for (const pid of pids) process.kill(pid, 'SIGKILL');
  await waitFor(() => idleChildrenLost() >= lost + pids.length, 20_000);
  expect((await fetch(`${base}/healthz`)).status).toBe(200);
  expect((await deliver(base, pr(gh, 301, 'd'.repeat(40)))).status).toBe(200);
  await run.service.queue.idle();
  expect(outcomes.map((o) => o.kind)).toEqual(['reviewed', 'reviewed']);
  expect(outcomes.at(-1)).toMatchObject({ findings: 1 });
});

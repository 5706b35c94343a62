/**
 * /healthz while worst-case reviews run (issue 16): asked every 20 ms during each review; the
 * figures (p50 / p99 / max, and the event loop's own delay) are printed, not asserted (a busy
 * machine makes any bound flaky): the test asserts that every request was answered 200.
 * The fake GitHub answers in this process (nock), so its own JSON work counts against these
 * figures: they are an upper bound of the service's. Runs the compiled worker scripts (`npx tsc` first).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import nock from 'nock';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { FakeGitHub, type FakeFile } from '../app/fake-github.js';
import { examplePayload } from '../app/harness.js';
import type { Outcome } from '../../src/github/review-pr.js';
import { deliver, prPayload, start, type Running } from './helpers.js';

const SCRIPT = join(import.meta.dirname, '..', '..', 'dist', 'src', 'review', 'review-worker.js');
const saved = process.env.GPU_REVIEW_WORKER_SCRIPT;
let run: Running | undefined;
let gh: FakeGitHub | undefined;
beforeAll(() => {
  expect(existsSync(SCRIPT)).toBe(true);
  process.env.GPU_REVIEW_WORKER_SCRIPT = SCRIPT;
});
afterAll(async () => {
  await run?.service.stop();
  gh?.stop();
  nock.cleanAll();
  nock.enableNetConnect();
  if (saved === undefined) delete process.env.GPU_REVIEW_WORKER_SCRIPT;
  else process.env.GPU_REVIEW_WORKER_SCRIPT = saved;
});

/** The nine-line shape of the issue: comments in a declarator next to a long run of slashes (50 characters). */
function backtrackingCu(i: number): string {
  const decl = `s${i}(int ${'/*x*/'.repeat(16)}a)`;
  return `__global__ void k${i}(float* p, int n) {\n  int ${decl} = gridDim.x * blockDim.x;\n  for (int i = 0; i < n; i += 1) { p[i] = 0; // += sint ${'/'.repeat(50)}\n  }\n}\n`;
}

/** Generated NVRTC source: one Python concatenation of `n` string literals. */
function concatenationPy(n: number): string {
  const lits = Array.from({ length: n }, (_, i) => `    "x${i} " +`);
  return ['import cupy as cp', 'SRC = (', ...lits, "    '__global__ void k(float* a) { a[0] = 1.0; }'", ')', "k = cp.RawKernel(SRC, 'k')", ''].join('\n');
}

/** About `bytes` of CUDA in one file. */
function cuda(bytes: number, tag: number): string {
  const out: string[] = [];
  let size = 0;
  for (let i = 0; size < bytes; i++) {
    const k = `__global__ void f${tag}_${i}(float* a, int n)\n{\n    int t = blockIdx.x * blockDim.x + threadIdx.x;\n    if (t < n) a[t] = a[t] * ${i}.0f;\n}\n`;
    out.push(k);
    size += k.length;
  }
  return out.join('');
}

/** An added file with its patch made here, once (the fake would diff 50 MB on the event loop it shares with the service). */
function added(filename: string, content: string): FakeFile {
  const lines = content.split('\n');
  if (lines.at(-1) === '') lines.pop();
  // The counts given: the fake would split every patch again on each page it serves.
  return { filename, status: 'added', content, patch: `@@ -0,0 +1,${lines.length} @@\n` + lines.map((l) => '+' + l).join('\n'), additions: lines.length, deletions: 0 };
}

function quantile(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
}

const cases: Array<[string, () => FakeFile[], string]> = [
  ['200 backtracking-shaped .cu files', () => Array.from({ length: 200 }, (_, i) => added(`src/bt_${i}.cu`, backtrackingCu(i))), ''],
  ['a Python concatenation of 20,000 literals', () => [added('pkg/gen.py', concatenationPy(20_000))], ''],
  // 55 files of 0.9 MB: 50 MB of patches and contents through the main thread; the review budget bounds the analysis.
  ['50 MB: 55 files of 0.9 MB of CUDA', () => Array.from({ length: 55 }, (_, i) => added(`src/big_${i}.cu`, cuda(900_000, i))), 'limits: { review_timeout_ms: 20000 }\n'],
];

test('/healthz answers while worst-case reviews run (latencies printed)', { timeout: 600_000 }, async () => {
  gh = new FakeGitHub().start();
  // Like GitHub, the live query says how large the change is (the App sizes its reads by it).
  const fake = gh as unknown as { graphql(body: unknown): [number, any]; files: FakeFile[] };
  const answer = fake.graphql.bind(gh);
  fake.graphql = (body) => {
    const [status, json] = answer(body);
    const pull = json?.data?.repository?.pullRequest;
    if (pull?.headRefOid) {
      const lines = fake.files.reduce((n, f) => n + (f.additions ?? 0) + (f.deletions ?? 0), 0);
      Object.assign(pull, { changedFiles: fake.files.length, additions: lines, deletions: 0 });
    }
    return [status, json];
  };
  const outcomes: Outcome[] = [];
  run = await start({ logLevel: 'warn' }, { app: { retryDelayMs: 5, onOutcome: (o) => outcomes.push(o) } });
  const base = run.service.url;
  for (const [k, [name, files, config]] of cases.entries()) {
    gh.files = files();
    gh.config = config || null;
    const sha = `${String(k).padStart(4, '0')}`.padEnd(40, 'e');
    gh.headSha = sha;
    gh.number = 500 + k;
    const loop = monitorEventLoopDelay({ resolution: 10 });
    loop.enable();
    const t0 = performance.now();
    expect((await deliver(base, prPayload(examplePayload('opened'), 500 + k, sha, 'opened'))).status).toBe(200);
    const ms: number[] = [];
    const statuses = new Set<number>();
    let reviewing = true;
    const done = run.service.queue.idle().then(() => (reviewing = false));
    while (reviewing) {
      const s = performance.now();
      // A new connection per request: a kept-alive one closed by the server as it is reused is the client's race, not an answer.
      const r = await fetch(`${base}/healthz`, { headers: { connection: 'close' } }).catch((e: Error) => e);
      ms.push(performance.now() - s);
      if (r instanceof Error) {
        console.log(`[timing] /healthz request failed after ${Math.round(performance.now() - s)} ms: ${r.message} (${String((r.cause as Error | undefined)?.message)})`);
        statuses.add(0);
      } else {
        await r.text();
        statuses.add(r.status);
      }
      await new Promise((r) => setTimeout(r, 20));
    }
    await done;
    loop.disable();
    const wall = performance.now() - t0;
    console.log(
      `[timing] /healthz during ${name}: ${ms.length} requests over ${Math.round(wall)} ms, p50 ${quantile(ms, 0.5).toFixed(1)} ms, p99 ${quantile(ms, 0.99).toFixed(1)} ms, max ${Math.max(...ms).toFixed(1)} ms; ` +
        `event-loop delay p50 ${(loop.percentile(50) / 1e6).toFixed(1)} ms, p99 ${(loop.percentile(99) / 1e6).toFixed(1)} ms, max ${(loop.max / 1e6).toFixed(1)} ms; outcome ${JSON.stringify(outcomes.at(-1))}`,
    );
    expect([...statuses]).toEqual([200]);
    expect(ms.length).toBeGreaterThan(0);
    expect(outcomes).toHaveLength(k + 1);
  }
});

import { randomUUID } from 'node:crypto';
import nock from 'nock';
import { afterEach, expect, test } from 'vitest';
import { FakeGitHub } from '../app/fake-github.js';
import { examplePayload, GET_IN_LOOP } from '../app/harness.js';
import { loopFn, pythonFile } from '../app/python.js';
import type { Outcome } from '../../src/github/review-pr.js';
import { deliver, PRIVATE_KEY, SECRET, start, waitFor, type Running } from './helpers.js';

let run: Running | undefined;
let gh: FakeGitHub | undefined;

afterEach(async () => {
  await run?.service.stop();
  run = undefined;
  gh?.stop();
  gh = undefined;
  nock.cleanAll();
  nock.enableNetConnect();
});

function fake(): FakeGitHub {
  gh = new FakeGitHub().start();
  gh.files = [{ filename: 'pkg/a.py', status: 'added', content: pythonFile(loopFn('a')) }];
  return gh;
}

async function get(url: string): Promise<{ status: number; body: string }> {
  const res = await fetch(url);
  return { status: res.status, body: await res.text() };
}

test('healthz at once; readyz once GET /app succeeded; metrics in Prometheus text', async () => {
  const github = fake();
  // GitHub refuses the first GET /app: not ready until a retry succeeds.
  github.faults.push({ method: 'GET', path: /^\/app$/, status: 401, times: 1 });
  const outcomes: Outcome[] = [];
  run = await start({}, { app: { checks: GET_IN_LOOP, retryDelayMs: 5, onOutcome: (o) => outcomes.push(o) } });
  const base = run.service.url;
  expect((await get(`${base}/healthz`)).status).toBe(200);
  await waitFor(async () => (await get(`${base}/readyz`)).status === 200);
  // Compiler evidence is off unless the operator turns it on (COMPILE=on).
  expect(JSON.parse((await get(`${base}/readyz`)).body).compile).toEqual({ enabled: false, available: false, nvcc: null });
  expect(run.logs().some((l) => l.msg === 'GET /app failed; not ready yet')).toBe(true);
  expect((await get(`${base}/nope`)).status).toBe(404);

  expect((await deliver(base, examplePayload('opened'))).status).toBe(200);
  expect((await deliver(base, examplePayload('opened'), randomUUID(), 'wrong-secret')).status).toBe(400);
  await run.service.queue.idle();
  expect(outcomes.map((o) => o.kind)).toEqual(['reviewed']);

  const m = await get(`${base}/metrics`);
  expect(m.status).toBe(200);
  expect(m.body).toMatch(/gpu_review_webhook_deliveries_total\{event="pull_request",status="200"\} 1/);
  expect(m.body).toMatch(/gpu_review_webhook_deliveries_total\{event="pull_request",status="400"\} 1/);
  expect(m.body).toMatch(/gpu_review_reviews_total\{result="done"\} 1/);
  expect(m.body).toMatch(/gpu_review_queue_depth\{state="waiting"\} 0/);
  expect(m.body).toMatch(/gpu_review_review_duration_seconds_count 1/);
  expect(m.body).toMatch(/gpu_review_github_api_calls_total\{method="POST",status="201"\} \d+/);
  expect(m.body).toMatch(/gpu_review_github_rate_limit_waits_total 0/);
  expect(m.body).toMatch(/gpu_review_process_resident_memory_bytes \d+/);
  expect(github.violations).toEqual([]);
});

test('rate-limit answers are counted', async () => {
  const github = fake();
  github.faults.push({ method: 'GET', path: /\/files$/, status: 429, headers: { 'retry-after': '1' }, times: 1 });
  run = await start({}, { app: { checks: GET_IN_LOOP, retryDelayMs: 5 } });
  expect((await deliver(run.service.url, examplePayload('opened'))).status).toBe(200);
  await run.service.queue.idle();
  expect(await run.service.metrics.registry.getSingleMetricAsString('gpu_review_github_rate_limit_waits_total')).toMatch(/ 1$/m);
});

test('logs are JSON and carry no private key, webhook secret or token', async () => {
  const github = fake();
  // A failing write puts Octokit's request (with its authorization header) into an error log.
  github.faults.push({ method: 'POST', path: /\/check-runs$/, status: 422, times: 1 });
  run = await start({ logLevel: 'trace' }, { app: { checks: GET_IN_LOOP, retryDelayMs: 5 } });
  await waitFor(() => run!.service.ready);
  expect((await deliver(run.service.url, examplePayload('opened'))).status).toBe(200);
  await run.service.queue.idle();
  // And a log call that names the secrets outright.
  run.service.log.error({ privateKey: PRIVATE_KEY, webhookSecret: SECRET, headers: { authorization: 'token ghs_16C7e42F292c6912E7710c838347Ae178B4a' } }, `oops ${SECRET}`);
  run.service.log.warn({ err: new Error(`request failed with Authorization: token ghs_abcdefghijklmnopqrstuvwxyz0123 and ${PRIVATE_KEY}`) }, 'failed');
  const text = run.logText();
  expect(run.logs().length).toBeGreaterThan(5); // every line is JSON
  expect(text).not.toContain(SECRET);
  expect(text).not.toContain('ghs_');
  for (const line of PRIVATE_KEY.split('\n').filter((l) => l.length > 16 && !l.startsWith('-----'))) expect(text).not.toContain(line);
  expect(text).toContain('[redacted]');
  // GitHub issued tokens (the fake's installation token) appear in no line either.
  expect(text).not.toMatch(/"token":"(?!\[redacted\])/);
});

test('stop (SIGTERM): new deliveries get 503, the running and queued reviews finish, then it closes', async () => {
  const github = fake();
  github.slow.push({ method: 'GET', path: /\/files$/, ms: 300, times: 10 });
  const outcomes: Outcome[] = [];
  run = await start({}, { app: { checks: GET_IN_LOOP, retryDelayMs: 5, onOutcome: (o) => outcomes.push(o) } });
  const base = run.service.url;
  expect((await deliver(base, examplePayload('opened'))).status).toBe(200);
  await waitFor(() => run!.service.queue.running === 1);
  const stopped = run.service.stop();
  const late = await deliver(base, examplePayload('opened'));
  expect(late.status).toBe(503);
  expect((await get(`${base}/readyz`)).status).toBe(503);
  expect((await get(`${base}/healthz`)).status).toBe(200);
  expect(await stopped).toBe(true);
  expect(outcomes.map((o) => o.kind)).toEqual(['reviewed']);
  await expect(fetch(`${base}/healthz`)).rejects.toThrow();
  expect(run.logs().some((l) => l.msg === 'all reviews finished')).toBe(true);
});

test('stop gives up after SHUTDOWN_TIMEOUT_MS', async () => {
  const github = fake();
  // The review is held reading the files until stop has given up, so no duration needs asserting.
  let release!: () => void;
  github.holds.push({ method: 'GET', path: /\/files$/, until: new Promise<void>((r) => (release = r)) });
  run = await start({ shutdownTimeoutMs: 200 }, { app: { checks: GET_IN_LOOP, retryDelayMs: 5 } });
  expect((await deliver(run.service.url, examplePayload('opened'))).status).toBe(200);
  await waitFor(() => run!.service.queue.running === 1);
  const t0 = Date.now();
  expect(await run.service.stop()).toBe(false);
  console.log(`[timing] stop gave up after ${Date.now() - t0} ms (SHUTDOWN_TIMEOUT_MS 200)`);
  expect(run.service.queue.running).toBe(1); // it gave up on a review still running
  release();
  await run.service.queue.idle(); // let the abandoned job end before nock is torn down
});

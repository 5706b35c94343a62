import { randomUUID } from 'node:crypto';
import nock from 'nock';
import { afterAll, expect, test } from 'vitest';
import type { Outcome, PullRequestEvent } from '../../src/github/review-pr.js';
import { examplePayload } from '../app/harness.js';
import { deliver, prPayload, start, waitFor, type Running } from './helpers.js';
import { LightGitHub } from './light-github.js';

let run: Running | undefined;
let gh: LightGitHub | undefined;
afterAll(async () => {
  await run?.service.stop();
  gh?.stop();
  nock.cleanAll();
  nock.enableNetConnect();
});

const PRS = 100;
const CLIENT = 32;
const sha = (pr: number, push: number) => `${String(pr).padStart(4, '0')}${String(push).padStart(4, '0')}`.padEnd(40, 'a');

test('load on loopback: 500 signed deliveries for 100 PRs, each answered 200 (answer times printed), each head reviewed at most once, every last head exactly once', async () => {
  gh = new LightGitHub().start();
  const done: Array<{ o: Outcome; e: PullRequestEvent }> = [];
  run = await start({ concurrency: 8, queueMax: 1000, logLevel: 'warn' }, { app: { retryDelayMs: 5, onOutcome: (o, e) => done.push({ o, e }) } });
  await waitFor(() => run!.service.ready);
  const base = run.service.url;
  const example = examplePayload('opened');
  const rss0 = process.memoryUsage().rss;

  // Five rounds of 100 (one per PR), each round as fast as the client goes: push 1, push 2, GitHub redelivering
  // push 2, push 3, redelivering push 3. 300 distinct heads, 500 deliveries.
  const latencies: number[] = [];
  const statuses = new Map<number, number>();
  const ids: string[][] = [];
  const t0 = performance.now();
  for (const [round, push, redeliver] of [[0, 1, false], [1, 2, false], [2, 2, true], [3, 3, false], [4, 3, true]] as const) {
    ids[round] = [];
    // A client with CLIENT connections in flight, each sending its next delivery as soon as the
    // previous one is answered (the latency is then the server's, not the client's own queue).
    let next = 0;
    await Promise.all(
      Array.from({ length: CLIENT }, async () => {
        for (let i = next++; i < PRS; i = next++) await one(i);
      }),
    );
    async function one(i: number) {
      {
        const pr = i + 1;
        const id = redeliver ? ids[round - 1][i] : randomUUID();
        ids[round][i] = id;
        gh!.heads.set(pr, sha(pr, push));
        const r = await deliver(base, prPayload(example, pr, sha(pr, push), push === 1 ? 'opened' : 'synchronize'), id);
        latencies.push(r.ms);
        statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
      }
    }
  }
  const sent = performance.now() - t0;
  await run.service.queue.idle();
  const total = performance.now() - t0;
  const rss = process.memoryUsage().rss;

  latencies.sort((a, b) => a - b);
  const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))];
  const reviewed = done.filter((d) => d.o.kind === 'reviewed');
  console.log(
    `load: ${latencies.length} deliveries (${CLIENT} in flight) in ${sent.toFixed(0)} ms; ack p50 ${pct(50).toFixed(1)} ms, p99 ${pct(99).toFixed(1)} ms, max ${latencies[latencies.length - 1].toFixed(1)} ms; ` +
      `${done.length} jobs run (${reviewed.length} reviewed, ${done.length - reviewed.length} skipped as moot) in ${total.toFixed(0)} ms = ${((reviewed.length / total) * 1000).toFixed(1)} reviews/s; ` +
      `${gh.calls} GitHub calls; RSS ${(rss0 / 2 ** 20).toFixed(0)} → ${(rss / 2 ** 20).toFixed(0)} MiB`,
  );

  // Answer times are printed above, not asserted: a busy CI machine makes any bound flaky.
  expect(Object.fromEntries(statuses)).toEqual({ 200: 500 });
  // No head was reviewed (or even run) twice: redeliveries are dropped by id, and a waiting job
  // is replaced by a newer push.
  const runs = new Map<string, number>();
  for (const d of done) runs.set(`${d.e.number}@${d.e.headSha}`, (runs.get(`${d.e.number}@${d.e.headSha}`) ?? 0) + 1);
  expect([...runs.values()].every((n) => n === 1)).toBe(true);
  // GitHub's side: one completed check run per head at most.
  const posted = new Map<string, number>();
  for (const s of gh.completed) posted.set(s, (posted.get(s) ?? 0) + 1);
  expect([...posted.values()].every((n) => n === 1)).toBe(true);
  // Every PR's last head got exactly one review; older heads were reviewed, skipped or superseded.
  for (let pr = 1; pr <= PRS; pr++) {
    expect(posted.get(sha(pr, 3)), `PR ${pr}`).toBe(1);
    expect(reviewed.filter((d) => d.e.number === pr && d.e.headSha === sha(pr, 3))).toHaveLength(1);
  }
  expect(done.every((d) => d.o.kind === 'reviewed' || (d.o.kind === 'skipped' && /superseded/.test(d.o.reason)))).toBe(true);
  const superseded = Number(/result="superseded"\} (\d+)/.exec(await run.service.metrics.registry.metrics())?.[1] ?? 0);
  expect(done.length + superseded).toBe(300); // every distinct head accounted for: run once or superseded
});

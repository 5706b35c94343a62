import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { examplePayload } from '../app/harness.js';
import { deliver, prPayload } from './helpers.js';
import { LightGitHub } from './light-github.js';
import {
  cleanRedis,
  ensureBuilt,
  HAS_REDIS_SERVER,
  metric,
  prefix,
  PrivateRedis,
  rssMiB,
  sleep,
  startReplica,
  stopReplica,
  TEST_REDIS,
  type Replica,
} from './redis-helpers.js';

/**
 * Two service processes (the image's entry command, `node dist/src/server.js`) sharing one
 * Redis: the queue, the delivery de-duplication, the per-PR lock and GitHub's rate limits. GitHub
 * is LightGitHub on loopback as an Enterprise host; every PR is in an installation of its own, so
 * the production throttling (1 s between writes per installation, shared through Redis) applies
 * as it would. Faults: a replica killed mid-review, SIGTERM under load, Redis restarting.
 */

const example = examplePayload('opened');
const REPO = `${example.repository.owner.login}/${example.repository.name}`;
const sha = (pr: number, push: number) => `${String(pr).padStart(4, '0')}${String(push).padStart(4, '0')}`.padEnd(40, 'a');

/** A push to PR `pr`: its own installation, `updated_at` ordering the pushes as GitHub's does. */
function payload(pr: number, push: number): any {
  const p = prPayload(example, pr, sha(pr, push), push === 1 ? 'opened' : 'synchronize');
  p.installation.id = 1000 + pr;
  p.pull_request.updated_at = new Date(Date.UTC(2030, 0, 1) + push * 60_000).toISOString();
  return p;
}

/** What the replicas' logs say became of each job (`owner/repo#n@sha`): run to an outcome or superseded. */
function jobs(replicas: Replica[]) {
  const finished = new Map<string, string[]>();
  const superseded = new Map<string, number>();
  const started = new Map<string, string[]>();
  for (const r of replicas) {
    for (const l of r.logs()) {
      if (l.msg === 'review job finished') finished.set(l.job, [...(finished.get(l.job) ?? []), `${l.outcome}${l.reason ? `: ${l.reason}` : ''}`]);
      if (l.msg === 'queued review superseded by a newer push') superseded.set(l.job, (superseded.get(l.job) ?? 0) + 1);
      if (l.msg === 'review job started') started.set(l.job, [...(started.get(l.job) ?? []), r.name]);
    }
  }
  return { finished, superseded, started, accounted: [...finished.values()].reduce((n, v) => n + v.length, 0) + [...superseded.values()].reduce((n, v) => n + v, 0) };
}

const jobId = (pr: number, push: number) => `${REPO}#${pr}@${sha(pr, push)}`;

async function until(cond: () => boolean | Promise<boolean>, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(50);
  }
}

/** Completed check runs per head SHA (GitHub's side: one per review that ran to its end). */
function completedPerHead(gh: LightGitHub): Map<string, number> {
  const m = new Map<string, number>();
  for (const s of gh.completed) m.set(s, (m.get(s) ?? 0) + 1);
  return m;
}

describe.skipIf(!TEST_REDIS && !HAS_REDIS_SERVER)('two service processes sharing Redis', () => {
  let gh: LightGitHub;
  let ghe = '';
  let replicas: Replica[] = [];
  let p = '';
  let url = '';
  let own: PrivateRedis | undefined;

  beforeAll(async () => {
    await ensureBuilt();
  }, 120_000);

  afterEach(async () => {
    for (const r of replicas) await stopReplica(r, 'SIGKILL', 5000);
    replicas = [];
    await gh?.close();
    if (url && p) await cleanRedis(url, p);
    await own?.dispose();
    own = undefined;
    url = p = '';
  });

  afterAll(async () => {
    await own?.dispose();
  });

  /** LightGitHub on loopback, the test's Redis (the shared one, or a private one), two replicas. */
  async function setup(env: Record<string, string> = {}, opts: { privateRedis?: boolean } = {}): Promise<[Replica, Replica]> {
    gh = new LightGitHub();
    ghe = await gh.serve();
    if (opts.privateRedis || !TEST_REDIS) {
      own = new PrivateRedis();
      await own.start();
      url = own.url;
    } else {
      url = TEST_REDIS;
    }
    p = prefix('replicas');
    const common = { GHE_HOST: ghe, REDIS_URL: url, REDIS_PREFIX: p, REVIEW_CONCURRENCY: '8', QUEUE_MAX: '1000', SHUTDOWN_TIMEOUT_MS: '10000', ...env };
    replicas = await Promise.all([startReplica('A', common), startReplica('B', common)]);
    return replicas as [Replica, Replica];
  }

  test('load: 500 signed deliveries for 100 PRs, alternately to two processes, each answered 200 (answer times printed); each head run at most once; every last head reviewed exactly once', async () => {
    const [a, b] = await setup();
    const PRS = 100;
    const CLIENT = 32;
    const latencies: number[] = [];
    const statuses = new Map<number, number>();
    const ids: string[][] = [];
    let k = 0;
    const t0 = performance.now();
    for (const [round, push, redeliver] of [[0, 1, false], [1, 2, false], [2, 2, true], [3, 3, false], [4, 3, true]] as const) {
      ids[round] = [];
      let next = 0;
      await Promise.all(
        Array.from({ length: CLIENT }, async () => {
          for (let i = next++; i < PRS; i = next++) {
            const pr = i + 1;
            const id = redeliver ? ids[round - 1][i] : randomUUID();
            ids[round][i] = id;
            gh.heads.set(pr, sha(pr, push));
            const to = k++ % 2 ? b : a;
            const r = await deliver(to.base, payload(pr, push), id);
            latencies.push(r.ms);
            statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
          }
        }),
      );
    }
    const sent = performance.now() - t0;
    await until(() => jobs(replicas).accounted >= 300, 150_000, 'every distinct head to be reviewed or superseded');
    const total = performance.now() - t0;
    const { finished, superseded } = jobs(replicas);
    const rss = [await rssMiB(a), await rssMiB(b)];

    latencies.sort((x, y) => x - y);
    const pct = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor((q / 100) * latencies.length))];
    const reviewed = [...finished.values()].flat().filter((o) => o === 'reviewed').length;
    const perReplica = [a, b].map((r) => r.logs().filter((l) => l.msg === 'review job finished').length);
    console.log(
      `redis load (2 processes): ${latencies.length} deliveries (${CLIENT} in flight) in ${sent.toFixed(0)} ms; ack p50 ${pct(50).toFixed(1)} ms, p99 ${pct(99).toFixed(1)} ms, max ${latencies[latencies.length - 1].toFixed(1)} ms; ` +
        `${[...finished.values()].flat().length} jobs run (A ${perReplica[0]}, B ${perReplica[1]}; ${reviewed} reviewed), ${[...superseded.values()].reduce((x, y) => x + y, 0)} superseded in Redis, in ${total.toFixed(0)} ms = ${((reviewed / total) * 1000).toFixed(1)} reviews/s ` +
        `(the write pacer per installation, shared through Redis, applies); ${gh.calls} GitHub calls; RSS A ${rss[0].toFixed(0)} MiB, B ${rss[1].toFixed(0)} MiB`,
    );

    // Answer times are printed above, not asserted: a busy CI machine makes any bound flaky.
    expect(Object.fromEntries(statuses)).toEqual({ 200: 500 });
    // No head run twice (redeliveries dropped by id, one job per head, the PR lock), none lost.
    for (const [job, outcomes] of finished) expect(outcomes, job).toHaveLength(1);
    for (const [job, n] of superseded) expect(n, job).toBe(1);
    for (const job of finished.keys()) expect(superseded.has(job), job).toBe(false);
    expect(jobs(replicas).accounted).toBe(300);
    const posted = completedPerHead(gh);
    expect([...posted.values()].every((n) => n === 1)).toBe(true);
    for (let pr = 1; pr <= PRS; pr++) {
      expect(posted.get(sha(pr, 3)), `PR ${pr}`).toBe(1);
      expect(finished.get(jobId(pr, 3)), `PR ${pr}`).toEqual(['reviewed']);
    }
    expect([...finished.values()].flat().every((o) => o === 'reviewed' || /superseded/.test(o))).toBe(true);
    expect(gh.overlaps).toEqual([]);
    // Both processes worked.
    expect(perReplica[0]).toBeGreaterThan(0);
    expect(perReplica[1]).toBeGreaterThan(0);
    expect((await metric(a, 'gpu_review_webhook_deliveries_total', 'status="200"')) + (await metric(b, 'gpu_review_webhook_deliveries_total', 'status="200"'))).toBe(500);
    expect(await stopReplica(a)).toBe(0);
    expect(await stopReplica(b)).toBe(0);
  }, 240_000);

  test('a replica killed (SIGKILL) mid-review: its jobs are taken again by the other one after the lock lapses, each review posted once', async () => {
    const [a, b] = await setup({ REVIEW_LOCK_MS: '2000', REVIEW_CONCURRENCY: '2' });
    let release!: () => void;
    gh.gate = new Promise((r) => (release = r));
    const PRS = 4;
    for (let pr = 1; pr <= PRS; pr++) {
      gh.heads.set(pr, sha(pr, 1));
      expect((await deliver((pr % 2 ? a : b).base, payload(pr, 1))).status).toBe(200);
    }
    // All four reviews are in flight (two slots per replica), held reading the PR's files.
    await until(() => gh.filesRead.size === PRS, 20_000, 'four reviews in flight');
    const onA = [...jobs(replicas).started.entries()].filter(([, who]) => who.includes('A')).map(([job]) => job);
    expect(onA.length).toBeGreaterThan(0);
    const t0 = Date.now();
    a.child.kill('SIGKILL');
    await a.exit;
    release();
    gh.gate = null;
    await until(() => gh.completed.length >= PRS, 30_000, 'every review to complete');
    const retried = Date.now() - t0;
    await sleep(500); // nothing else arrives
    const { finished } = jobs(replicas);
    console.log(`kill -9: ${onA.length} reviews of the killed replica finished by the other ${retried} ms after the kill (REVIEW_LOCK_MS 2000)`);
    const posted = completedPerHead(gh);
    for (let pr = 1; pr <= PRS; pr++) expect(posted.get(sha(pr, 1)), `PR ${pr}`).toBe(1);
    expect(gh.completed).toHaveLength(PRS);
    for (const job of onA) expect(finished.get(job), job).toEqual(['reviewed']);
    expect(b.logs().some((l) => l.msg?.startsWith('review job stalled'))).toBe(true);
  }, 90_000);

  test('SIGTERM during load: the stopping replica answers 503 (sent again to the other), finishes its running reviews, exits 0; nothing lost, nothing twice', async () => {
    const [a, b] = await setup({ SHUTDOWN_TIMEOUT_MS: '15000' });
    gh.filesDelayMs = 100;
    const PRS = 40;
    let refused = 0;
    let k = 0;
    let exitA: Promise<number | null> | undefined;
    const latencies: number[] = [];
    for (let push = 1; push <= 3; push++) {
      let next = 0;
      await Promise.all(
        Array.from({ length: 16 }, async () => {
          for (let i = next++; i < PRS; i = next++) {
            const pr = i + 1;
            gh.heads.set(pr, sha(pr, push));
            const id = randomUUID();
            let to = k++ % 2 && !exitA ? a : b;
            if (push === 2 && i === PRS / 2 && !exitA) {
              // Halfway through: docker stop.
              exitA = stopReplica(a, 'SIGTERM', 20_000);
              await until(async () => (await fetch(`${a.base}/readyz`).then((x) => x.status, () => 0)) !== 200, 10_000, 'A to stop taking deliveries');
              to = a;
            }
            let r = await deliver(to.base, payload(pr, push), id).catch(() => ({ status: 0, ms: 0, body: '' }));
            if (r.status !== 200) {
              // 503 (or, once closed, no answer): the load balancer / GitHub's redelivery reaches the other replica.
              expect([0, 503]).toContain(r.status);
              refused++;
              r = await deliver(b.base, payload(pr, push), id);
              // If A had already claimed this delivery when it stopped, B answers 503 until A's claim is
              // confirmed or lapses (CLAIM_TTL_MS); GitHub's redelivery retries the same way.
              for (const until = Date.now() + 20_000; r.status === 503 && Date.now() < until; ) {
                await sleep(250);
                r = await deliver(b.base, payload(pr, push), id);
              }
            }
            latencies.push(r.ms);
            expect(r.status).toBe(200);
          }
        }),
      );
    }
    expect(await exitA).toBe(0);
    expect(a.logs().some((l) => l.msg === 'all reviews finished')).toBe(true);
    await until(() => jobs(replicas).accounted >= PRS * 3, 90_000, 'every distinct head to be reviewed or superseded');
    const { finished, superseded } = jobs(replicas);
    console.log(`SIGTERM under load: ${refused} deliveries refused by the stopping replica and taken by the other; A ran ${a.logs().filter((l) => l.msg === 'review job finished').length} jobs, B ${b.logs().filter((l) => l.msg === 'review job finished').length}`);
    expect(refused).toBeGreaterThan(0);
    for (const [job, outcomes] of finished) expect(outcomes, job).toHaveLength(1);
    for (const job of finished.keys()) expect(superseded.has(job), job).toBe(false);
    expect(jobs(replicas).accounted).toBe(PRS * 3);
    const posted = completedPerHead(gh);
    expect([...posted.values()].every((n) => n === 1)).toBe(true);
    for (let pr = 1; pr <= PRS; pr++) expect(posted.get(sha(pr, 3)), `PR ${pr}`).toBe(1);
    expect(gh.overlaps).toEqual([]);
  }, 180_000);

  test('SIGTERM with reviews running past SHUTDOWN_TIMEOUT_MS: exit 0, the cut-off jobs are taken again by the other replica', async () => {
    const [a, b] = await setup({ SHUTDOWN_TIMEOUT_MS: '300', REVIEW_LOCK_MS: '2000', REVIEW_CONCURRENCY: '2' });
    let release!: () => void;
    gh.gate = new Promise((r) => (release = r));
    const PRS = 4;
    for (let pr = 1; pr <= PRS; pr++) {
      gh.heads.set(pr, sha(pr, 1));
      expect((await deliver((pr % 2 ? a : b).base, payload(pr, 1))).status).toBe(200);
    }
    await until(() => gh.filesRead.size === PRS, 20_000, 'four reviews in flight');
    const onA = [...jobs(replicas).started.entries()].filter(([, who]) => who.includes('A')).map(([job]) => job);
    expect(onA.length).toBeGreaterThan(0);
    expect(await stopReplica(a, 'SIGTERM', 10_000)).toBe(0);
    expect(a.logs().some((l) => /^shutdown timeout/.test(l.msg ?? ''))).toBe(true);
    release();
    gh.gate = null;
    await until(() => gh.completed.length >= PRS, 30_000, 'every review to complete');
    await sleep(500);
    const posted = completedPerHead(gh);
    for (let pr = 1; pr <= PRS; pr++) expect(posted.get(sha(pr, 1)), `PR ${pr}`).toBe(1);
    expect(gh.completed).toHaveLength(PRS);
    const { finished } = jobs([b]);
    for (const job of onA) expect(finished.get(job), job).toEqual(['reviewed']);
  }, 90_000);

  test.skipIf(!HAS_REDIS_SERVER)('Redis restarting during load: deliveries while it is down get 503 (and are taken when redelivered), no delivery lost, no review twice', async () => {
    const [a, b] = await setup({}, { privateRedis: true });
    gh.filesDelayMs = 150;
    const PRS = 40;
    let k = 0;
    const refusedIds: Array<{ pr: number; push: number; id: string }> = [];
    const downLatencies: number[] = [];
    const send = async (pr: number, push: number, id: string, down = false) => {
      gh.heads.set(pr, sha(pr, push));
      const r = await deliver((k++ % 2 ? b : a).base, payload(pr, push), id);
      if (down) downLatencies.push(r.ms);
      if (r.status !== 200) {
        expect(r.status).toBe(503);
        refusedIds.push({ pr, push, id });
      }
    };
    const round = async (push: number, down = false) => {
      let next = 0;
      await Promise.all(
        Array.from({ length: 16 }, async () => {
          for (let i = next++; i < PRS; i = next++) await send(i + 1, push, randomUUID(), down);
        }),
      );
    };
    await round(1);
    await round(2);
    // Reviews of pushes 1 and 2 are running and queued: Redis goes away.
    const running = a.logs().length + b.logs().length;
    await own!.stop();
    const downAt = Date.now();
    await round(3, true);
    await sleep(Math.max(0, 1500 - (Date.now() - downAt)));
    await own!.start();
    const downFor = Date.now() - downAt;
    for (const r of [a, b]) await until(async () => (await fetch(`${r.base}/readyz`)).status === 200, 30_000, `${r.name} ready again`);
    const readyAfter = Date.now() - downAt - downFor;
    // GitHub's redelivery of the refused deliveries (a claim cut off by the outage frees itself in 15 s).
    const refused = refusedIds.length;
    const end = Date.now() + 40_000;
    while (refusedIds.length && Date.now() < end) {
      const batch = refusedIds.splice(0);
      for (const d of batch) await send(d.pr, d.push, d.id);
      if (refusedIds.length) await sleep(500);
    }
    expect(refusedIds).toEqual([]);
    const redelivered = Date.now() - downAt - downFor;
    await round(4);
    await until(() => [...Array(PRS).keys()].every((i) => gh.completed.includes(sha(i + 1, 4))), 90_000, 'every last head reviewed');
    const drained = Date.now() - downAt - downFor;
    await sleep(1000);
    const { finished, superseded } = jobs(replicas);
    console.log(
      `Redis restart: down ${downFor} ms with ${running} log lines written before; ${refused} deliveries refused with 503 while down (answered in max ${Math.max(...downLatencies).toFixed(0)} ms), all taken on redelivery; ` +
        `after the restart: ready in ${readyAfter} ms, redeliveries taken by ${redelivered} ms, all reviewed by ${drained} ms; ` +
        `${[...finished.values()].flat().length} jobs run, ${[...superseded.values()].reduce((x, y) => x + y, 0)} superseded`,
    );
    expect(refused).toBeGreaterThan(0);
    // How fast the refusals came is printed above, not asserted (a busy machine makes any bound flaky).
    for (const [job, outcomes] of finished) expect(outcomes, job).toHaveLength(1);
    for (const job of finished.keys()) expect(superseded.has(job), job).toBe(false);
    const posted = completedPerHead(gh);
    expect([...posted.entries()].filter(([, n]) => n !== 1)).toEqual([]);
    for (let pr = 1; pr <= PRS; pr++) {
      expect(posted.get(sha(pr, 4)), `PR ${pr}`).toBe(1);
      expect(finished.get(jobId(pr, 4)), `PR ${pr}`).toEqual(['reviewed']);
    }
    expect(gh.overlaps).toEqual([]);
  }, 240_000);
});

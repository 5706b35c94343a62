import { randomUUID } from 'node:crypto';
import nock from 'nock';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import type { Outcome, PullRequestEvent } from '../../src/github/review-pr.js';
import { examplePayload } from '../app/harness.js';
import { deliver, prPayload, start, waitFor, type Running } from './helpers.js';
import { LightGitHub } from './light-github.js';
import { cleanRedis, freePort, HAS_REDIS_SERVER, prefix, PrivateRedis, TEST_REDIS } from './redis-helpers.js';

/**
 * The service with REDIS_URL set, in this process (GitHub answered by nock): de-duplication,
 * supersede and the per-PR lock across two services sharing one queue, 503 without Redis,
 * readiness, metrics, clustered rate limits. The multi-process load and fault tests are in
 * redis-replicas.test.ts.
 */
describe.skipIf(!TEST_REDIS && !HAS_REDIS_SERVER)('Redis mode, in process', () => {
  // .ci/run's Redis, or (a developer's run) a scratch redis-server of this file's own.
  let url = TEST_REDIS ?? '';
  let own: PrivateRedis | undefined;
  beforeAll(async () => {
    if (url) return;
    own = new PrivateRedis({ persist: false });
    await own.start();
    url = own.url;
  }, 30_000);
  afterAll(async () => {
    await own?.dispose();
  });
  let runs: Running[] = [];
  let gh: LightGitHub | undefined;
  let p = '';

  afterEach(async () => {
    for (const r of runs) await r.service.stop();
    runs = [];
    gh?.stop();
    gh = undefined;
    nock.cleanAll();
    nock.enableNetConnect();
    if (p) await cleanRedis(url, p);
    p = '';
  });

  async function replicas(n: number, over: Record<string, unknown> = {}, done?: Array<{ o: Outcome; e: PullRequestEvent }>) {
    p = prefix('inproc');
    for (let i = 0; i < n; i++) {
      runs.push(
        await start(
          { redisUrl: url, redisPrefix: p, reviewLockMs: 2000, concurrency: 2, ...over },
          { app: { retryDelayMs: 5, slug: 'gpu-review', onOutcome: done ? (o, e) => done.push({ o, e }) : undefined } },
        ),
      );
    }
    for (const r of runs) await waitFor(() => r.service.ready, 10_000);
    return runs;
  }

  const example = () => examplePayload('opened');
  /** A push: `at` orders the heads as GitHub's `updated_at` does. */
  function payload(n: number, sha: string, at: number) {
    const pl = prPayload(example(), n, sha);
    pl.pull_request.updated_at = new Date(Date.UTC(2030, 0, 1) + at * 1000).toISOString();
    return pl;
  }

  test('a delivery is reviewed once; its redelivery (to either replica) is ignored; readyz and metrics read Redis', async () => {
    gh = new LightGitHub().start();
    const done: Array<{ o: Outcome; e: PullRequestEvent }> = [];
    const [a, b] = await replicas(2, {}, done);
    expect(a.service.mode).toBe('redis');
    const id = randomUUID();
    gh.heads.set(1, 'a'.repeat(40));
    expect((await deliver(a.service.url, payload(1, 'a'.repeat(40), 1), id)).status).toBe(200);
    expect((await deliver(b.service.url, payload(1, 'a'.repeat(40), 1), id)).status).toBe(200);
    expect((await deliver(a.service.url, payload(1, 'a'.repeat(40), 1), id)).status).toBe(200);
    await a.service.queue.idle();
    expect(done.map((d) => `${d.e.number}@${d.e.headSha[0]}:${d.o.kind}`)).toEqual(['1@a:reviewed']);
    expect(gh.completed).toEqual(['a'.repeat(40)]);
    expect([...a.logs(), ...b.logs()].filter((l) => l.msg === 'redelivered webhook: already handled, ignoring')).toHaveLength(2);

    const ready = await fetch(`${a.service.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({ ready: true, redis: 'ok', queued: 0, running: 0 });
    const m = await a.service.metrics.registry.metrics();
    expect(m).toMatch(/gpu_review_queue_depth\{state="waiting"\} 0/);
    expect(m).toMatch(/gpu_review_webhook_deliveries_total\{event="pull_request",status="200"\} 2/);
  });

  test('newer push supersedes a queued older one; one review per PR at a time across replicas', async () => {
    gh = new LightGitHub().start();
    let release!: () => void;
    gh.gate = new Promise((r) => (release = r));
    const done: Array<{ o: Outcome; e: PullRequestEvent }> = [];
    const [a, b] = await replicas(2, {}, done);
    const push = async (to: Running, n: number, sha: string, at: number) => {
      gh!.heads.set(n, sha);
      return (await deliver(to.service.url, payload(n, sha, at))).status;
    };
    expect(await push(a, 1, 'a'.repeat(40), 1)).toBe(200);
    await waitFor(() => (gh!.filesRead.get(1) ?? 0) === 1, 5000); // a's review holds PR 1
    expect(await push(b, 1, 'b'.repeat(40), 2)).toBe(200); // waits for PR 1's lock
    expect(await push(a, 1, 'c'.repeat(40), 3)).toBe(200); // supersedes b…
    expect(await push(b, 2, 'd'.repeat(40), 1)).toBe(200); // another PR runs alongside
    await waitFor(() => (gh!.filesRead.get(2) ?? 0) === 1, 5000);
    // While PR 1 is locked, its other jobs wait in BullMQ's delayed set, not in a worker slot.
    await new Promise((r) => setTimeout(r, 700));
    expect(gh.filesRead.get(1)).toBe(1);
    release();
    gh.gate = null;
    await a.service.queue.idle();
    const ran = done.map((d) => `${d.e.number}@${d.e.headSha[0]}:${d.o.kind}`).sort();
    // a's review had read GitHub's head (then a) before b and c were pushed: it ran to the end.
    expect(ran).toEqual(['1@a:reviewed', '1@c:reviewed', '2@d:reviewed']);
    expect(gh.overlaps).toEqual([]);
    const superseded = [...a.logs(), ...b.logs()].filter((l) => l.msg === 'queued review superseded by a newer push');
    expect(superseded.map((l) => l.job)).toEqual([`${example().repository.owner.login}/${example().repository.name}#1@${'b'.repeat(40)}`]);
    expect(gh.completed.sort()).toEqual(['a'.repeat(40), 'c'.repeat(40), 'd'.repeat(40)]);
  });

  test('the config is read once for both replicas: cached in Redis by its blob, read again when it changes', async () => {
    gh = new LightGitHub().start();
    gh.configText = 'fail_on: none\n';
    const done: Array<{ o: Outcome; e: PullRequestEvent }> = [];
    const [a, b] = await replicas(2, {}, done);
    const review = async (to: Running, n: number, sha: string) => {
      gh!.heads.set(n, sha);
      expect((await deliver(to.service.url, payload(n, sha, Date.now()))).status).toBe(200);
      await waitFor(() => done.some((d) => d.e.number === n && d.e.headSha === sha), 20_000);
    };
    await review(a, 1, '1'.repeat(40));
    await review(b, 2, '2'.repeat(40));
    expect(gh.configReads).toBe(1);
    gh.configText = 'fail_on: critical\n';
    await review(b, 3, '3'.repeat(40));
    await review(a, 4, '4'.repeat(40));
    expect(gh.configReads).toBe(2);
    expect(done.map((d) => d.o.kind)).toEqual(['reviewed', 'reviewed', 'reviewed', 'reviewed']);
  });

  test('a late redelivery of an older push does not make it current again', async () => {
    gh = new LightGitHub().start();
    let release!: () => void;
    gh.gate = new Promise((r) => (release = r));
    const done: Array<{ o: Outcome; e: PullRequestEvent }> = [];
    const [a] = await replicas(1, { concurrency: 1 }, done);
    gh.heads.set(2, 'e'.repeat(40));
    expect((await deliver(a.service.url, payload(2, 'e'.repeat(40), 1))).status).toBe(200); // holds the only slot
    await waitFor(() => (gh!.filesRead.get(2) ?? 0) === 1, 5000);
    gh.heads.set(1, 'b'.repeat(40));
    expect((await deliver(a.service.url, payload(1, 'b'.repeat(40), 2))).status).toBe(200);
    // GitHub redelivers the (refused, say) delivery of the older head a after b was pushed.
    expect((await deliver(a.service.url, payload(1, 'a'.repeat(40), 1))).status).toBe(200);
    release();
    gh.gate = null;
    await a.service.queue.idle();
    const ran = done.map((d) => `${d.e.number}@${d.e.headSha[0]}:${d.o.kind}`).sort();
    expect(ran).toEqual(['1@b:reviewed', '2@e:reviewed']);
  });

  test('Redis unreachable: deliveries get 503 (answer time printed), readyz 503; healthz still 200; the Redis password is not logged', async () => {
    gh = new LightGitHub().start();
    const port = await freePort(); // nothing listens there
    p = prefix('down');
    const password = 'redis-pass-Zq81xk';
    runs.push(await start({ redisUrl: `redis://:${password}@127.0.0.1:${port}`, redisPrefix: p }, { app: { retryDelayMs: 5, slug: 'gpu-review' } }));
    const r = runs[0];
    await waitFor(async () => (await fetch(`${r.service.url}/readyz`).then((x) => x.json())).authenticated === true, 10_000);
    const res = await deliver(r.service.url, payload(1, 'a'.repeat(40), 1));
    expect(res.status).toBe(503);
    console.log(`[timing] delivery with Redis unreachable answered 503 in ${res.ms.toFixed(0)} ms`);
    const ready = await fetch(`${r.service.url}/readyz`);
    expect(ready.status).toBe(503);
    expect(await ready.json()).toMatchObject({ ready: false, authenticated: true, redis: 'unreachable' });
    expect((await fetch(`${r.service.url}/healthz`)).status).toBe(200);
    expect(await r.service.metrics.registry.metrics()).toMatch(/gpu_review_webhook_deliveries_total\{event="pull_request",status="503"\} 1/);
    r.service.log.error({ err: new Error(`connect to redis://:${password}@127.0.0.1:${port} failed`) }, `oops ${password}`);
    expect(r.logText()).not.toContain(password);
    expect(r.logs().some((l) => l.msg === 'listening' && /^redis 127\.0\.0\.1:\d+ prefix /.test(l.queue))).toBe(true);
    const t0 = Date.now();
    await r.service.stop();
    console.log(`stop with Redis unreachable: ${Date.now() - t0} ms`);
    runs = [];
    p = '';
  });

  test('QUEUE_MAX bounds the shared queue: past it, 503', async () => {
    gh = new LightGitHub().start();
    let release!: () => void;
    gh.gate = new Promise((r) => (release = r));
    const [a] = await replicas(1, { concurrency: 1, queueMax: 2 });
    const statuses: number[] = [];
    for (let n = 1; n <= 4; n++) {
      gh.heads.set(n, String(n).repeat(40));
      statuses.push((await deliver(a.service.url, payload(n, String(n).repeat(40), 1))).status);
      if (n === 1) await waitFor(() => (gh!.filesRead.get(1) ?? 0) === 1, 5000);
    }
    expect(statuses).toEqual([200, 200, 200, 503]);
    expect((await fetch(`${a.service.url}/readyz`)).status).toBe(503);
    release();
    gh.gate = null;
    await a.service.queue.idle();
  });

  test("GitHub's rate-limit state is shared: two replicas' writes for one installation keep the write spacing between them", async () => {
    const times: number[] = [];
    let inFlight = 0;
    let maxInFlight = 0;
    // Before LightGitHub's catch-all, so that this one answers. Each write is held 150 ms: writes
    // that take turns never overlap, however slow the machine; two separate limiters would.
    nock('https://api.github.com')
      .persist()
      .post(/\/repos\/o\/r\/issues\/1\/labels$/)
      .reply((_uri, _body, cb) => {
        times.push(Date.now());
        maxInFlight = Math.max(maxInFlight, ++inFlight);
        setTimeout(() => {
          inFlight--;
          cb(null, [200, []]);
        }, 150);
      });
    gh = new LightGitHub().start();
    p = prefix('throttle');
    for (let i = 0; i < 2; i++) {
      // No test Octokit: the service's own, clustered on Redis; the write spacing set to 500 ms.
      runs.push(await start({ redisUrl: url, redisPrefix: p }, { Octokit: undefined, throttleGroups: { write: { minTime: 500 } }, app: { slug: 'gpu-review' } }));
    }
    const clients = await Promise.all(runs.map((r) => r.service.probot.auth(4242)));
    const t0 = Date.now();
    await Promise.all(clients.flatMap((c) => [1, 2].map(() => c.request('POST /repos/{owner}/{repo}/issues/{issue_number}/labels', { owner: 'o', repo: 'r', issue_number: 1, labels: ['x'] }))));
    expect(times).toHaveLength(4);
    times.sort((x, y) => x - y);
    const gaps = times.slice(1).map((t, i) => t - times[i]);
    console.log(`clustered throttle: 4 writes from 2 replicas, gaps ${gaps.join(', ')} ms, total ${Date.now() - t0} ms`);
    // Shared, the four writes of the two replicas take turns: one in flight at a time. (Each
    // replica alone would run its writes beside the other's.) The gaps are printed, not asserted.
    expect(maxInFlight).toBe(1);
  });
});

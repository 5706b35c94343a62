import { randomUUID } from 'node:crypto';
import Bottleneck from 'bottleneck';
import { DelayedError, Queue, Worker, type Job } from 'bullmq';
import { Redis, type RedisOptions } from 'ioredis';
import type { Logger } from 'pino';
import type { Probot } from 'probot';
import { CONFIG_TTL_MS, type CachedConfig, type ConfigStore } from '../github/config.js';
import { decodeCachedConfig, encodeCachedConfig } from './config-codec.js';
import { writePacing, type GitHubClient } from '../github/octokit.js';
import { QueueRejected, type JobQueue, type ReviewRequest, type RunJob } from '../github/queue.js';
import type { PullRequestEvent } from '../github/review-pr.js';
import type { ServiceConfig } from './config.js';
import type { Metrics } from './metrics.js';

/**
 * Scale-out: the review queue, the delivery de-duplication and GitHub's rate-limit state in
 * Redis, so several replicas behind one webhook URL share the work.
 *
 * - Webhook path (any replica): `SET delivery NX` claims the delivery id, the PR's newest head
 *   moves forward, the job goes onto BullMQ with the id `owner/repo#n@sha` (one job per head,
 *   however many deliveries name it), the claim is confirmed. Each step fails fast when Redis is
 *   unreachable, and the delivery is answered 503 with the claim dropped, so GitHub's redelivery
 *   is taken later.
 * - Worker (every replica): a job first takes the PR's lock (one review per PR across replicas;
 *   busy: the job waits a moment in BullMQ's delayed set), then skips itself when a newer head of
 *   its PR was delivered since (superseded), else reviews. A replica that dies mid-review stops
 *   renewing BullMQ's job lock and the PR lock; after `REVIEW_LOCK_MS` another replica's stalled
 *   check puts the job back and it runs there.
 * - GitHub's rate limits: Octokit throttling's Bottleneck groups clustered on Redis, so the write
 *   spacing and concurrency per installation hold across replicas.
 */

/** What a job carries: the review request (src/github/queue.ts), with its installation. */
export type ReviewJobData = ReviewRequest & { installationId: number };

/** GitHub lets a delivery be redelivered for three days; its id is remembered that long. */
const DELIVERY_TTL_S = 3 * 24 * 3600;
/** A claimed delivery whose enqueueing never confirmed is free again after this. */
const CLAIM_TTL_MS = 15_000;
/** The newest head of a PR is remembered this long after its last push. */
const HEAD_TTL_S = 30 * 24 * 3600;
/** Longest a webhook waits on Redis before it is answered 503. */
const HOOK_TIMEOUT_MS = 3000;

const SCRIPTS = {
  // KEYS[1] head key; ARGV at, sha, ttl. Moves the head forward only (a late redelivery of an
  // older push does not make it current again).
  gpuReviewAdvanceHead: {
    numberOfKeys: 1,
    lua: `local cur = redis.call('GET', KEYS[1])
if cur then
  local at = tonumber(string.match(cur, '^(%d+)|'))
  if at and at > tonumber(ARGV[1]) then return 0 end
end
redis.call('SET', KEYS[1], ARGV[1] .. '|' .. ARGV[2], 'EX', ARGV[3])
return 1`,
  },
  // KEYS[1] lock; ARGV token, ms.
  gpuReviewExtendLock: {
    numberOfKeys: 1,
    lua: `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0`,
  },
  gpuReviewReleaseLock: {
    numberOfKeys: 1,
    lua: `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`,
  },
} as const;

type ScriptClient = Redis & {
  gpuReviewAdvanceHead(key: string, at: number, sha: string, ttl: number): Promise<number>;
  gpuReviewExtendLock(key: string, token: string, ms: number): Promise<number>;
  gpuReviewReleaseLock(key: string, token: string): Promise<number>;
};

function client(url: string, name: string, opts: RedisOptions): ScriptClient {
  const c = new Redis(url, { connectionName: name, ...opts });
  for (const [n, def] of Object.entries(SCRIPTS)) c.defineCommand(n, def);
  return c as ScriptClient;
}

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p.finally(() => clearTimeout(timer)),
    new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: no answer from Redis in ${ms} ms`)), ms))),
  ]);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Longest a review waits on the config cache before it reads the file itself. */
const CONFIG_CACHE_TIMEOUT_MS = 1000;

/**
 * The config cache of every replica, in Redis: one key per config blob (`prefix:config:…`),
 * expiring after CONFIG_TTL_MS. A Redis fault is a miss (the file is read from GitHub). The value
 * is kept exact (configCodec.ts: V8's serialization, not JSON, in which a YAML `.inf` limit became null).
 */
export class RedisConfigStore implements ConfigStore {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly ttlMs = CONFIG_TTL_MS,
  ) {}

  private key(k: string): string {
    return `${this.prefix}:config:${k}`;
  }

  async get(k: string): Promise<CachedConfig | undefined> {
    const text = await withTimeout(this.redis.get(this.key(k)), CONFIG_CACHE_TIMEOUT_MS, 'config cache');
    if (!text) return undefined;
    const v = decodeCachedConfig(text);
    return v && typeof v === 'object' && ('raw' in v || 'message' in v) ? v : undefined;
  }

  async set(k: string, value: CachedConfig): Promise<void> {
    await withTimeout(this.redis.set(this.key(k), encodeCachedConfig(value), 'PX', this.ttlMs), CONFIG_CACHE_TIMEOUT_MS, 'config cache');
  }
}

export const prKey = (e: Pick<PullRequestEvent, 'owner' | 'repo' | 'number'>) => `${e.owner}/${e.repo}#${e.number}`;

/** BullMQ's job id: one job per head (a draft and its ready-for-review state count apart). */
export const jobIdOf = (e: PullRequestEvent) => `${prKey(e)}@${e.headSha}${e.draft ? '.draft' : ''}`;

export interface RedisReviewsOptions {
  config: ServiceConfig;
  log: Logger;
  metrics: Metrics;
  /** Options laid over the clustered throttle groups (tests drop the write spacing). */
  throttleGroups?: Partial<Record<'global' | 'auth' | 'search' | 'write' | 'notifications', Bottleneck.ConstructorOptions>>;
}

export class RedisReviews implements JobQueue {
  readonly queue: Queue<ReviewJobData>;
  /** Octokit `throttle` options: Bottleneck groups clustered on Redis. */
  readonly throttle: Record<string, unknown>;
  private worker: Worker<ReviewJobData> | undefined;
  private readonly hook: ScriptClient;
  private readonly work: ScriptClient;
  private readonly bottleneck: Bottleneck.IORedisConnection;
  private readonly id = randomUUID().slice(0, 8);
  private readonly prefix: string;
  /** Configs read by any replica, keyed by their blob (see `configKey`). */
  readonly configs: RedisConfigStore;
  private active = 0;
  private closed = false;
  private counts = { waiting: 0, running: 0 };
  private runJob: RunJob | undefined;

  constructor(private readonly o: RedisReviewsOptions) {
    const { config, log } = o;
    const url = config.redisUrl!;
    this.prefix = config.redisPrefix;
    // The webhook path fails fast: no offline queue, one try per command.
    this.hook = client(url, `${this.prefix}-hook`, { enableOfflineQueue: false, maxRetriesPerRequest: 1, connectTimeout: 2000 });
    // The worker's own commands (PR locks, heads) wait out a Redis restart instead of failing.
    this.work = client(url, `${this.prefix}-work`, { maxRetriesPerRequest: null });
    // The config cache fails fast like the webhook path: a miss costs one read from GitHub.
    this.configs = new RedisConfigStore(this.hook, this.prefix);
    for (const [name, c] of [['hook', this.hook], ['work', this.work]] as const) {
      let lastError = '';
      c.on('error', (err: Error) => {
        // ioredis repeats the error on every reconnection attempt; one line per new error.
        if (err.message !== lastError) log.warn({ redis: name, err: { message: err.message } }, 'Redis connection error');
        lastError = err.message;
      });
      c.on('ready', () => {
        if (lastError) log.info({ redis: name }, 'Redis connection ready again');
        lastError = '';
      });
    }
    this.queue = new Queue<ReviewJobData>('reviews', {
      connection: this.hook,
      prefix: this.prefix,
      defaultJobOptions: {
        // A job that throws (not a failed review: that is an outcome) gets two more tries.
        attempts: 3,
        backoff: { type: 'exponential', delay: 5000 },
        removeOnComplete: true,
        removeOnFail: { age: 7 * 24 * 3600, count: 1000 },
      },
    });
    this.queue.on('error', (err) => log.debug({ err: { message: err.message } }, 'queue connection error'));

    // Octokit throttling, clustered: the same groups as @octokit/plugin-throttling makes, with
    // the connection, so a limiter per installation is shared by every replica.
    this.bottleneck = new Bottleneck.IORedisConnection({ Redis, client: new Redis(url, { connectionName: `${this.prefix}-throttle`, maxRetriesPerRequest: null }) });
    let lastThrottleError = '';
    this.bottleneck.on('error', (err: Error) => {
      if (err?.message !== lastThrottleError) log.warn({ err: { message: err?.message } }, 'rate-limit state (Bottleneck): Redis error');
      lastThrottleError = err?.message ?? '';
    });
    const common = { connection: this.bottleneck, timeout: 2 * 60 * 1000 };
    const group = (name: 'global' | 'auth' | 'search' | 'write' | 'notifications', opts: Bottleneck.ConstructorOptions) =>
      new Bottleneck.Group({ id: `${this.prefix}-octokit-${name}`, ...opts, ...common, ...(o.throttleGroups?.[name] ?? {}) });
    this.throttle = {
      Bottleneck,
      connection: this.bottleneck,
      global: group('global', { maxConcurrent: 10 }),
      auth: group('auth', { maxConcurrent: 1 }),
      search: group('search', { maxConcurrent: 1, minTime: 2000 }),
      // Content writes: one at a time per installation within GitHub's per-minute and per-hour budgets, shared by every replica.
      write: writePacing({ ...common, ...(o.throttleGroups?.write ?? {}) }, `${this.prefix}-octokit-write`),
      notifications: group('notifications', { maxConcurrent: 1, minTime: 3000 }),
    };
  }

  private key(kind: string, rest: string): string {
    return `${this.prefix}:${kind}:${rest}`;
  }

  /** The job the application function (`createApp`) runs for each request: the same as the embedded queue's. */
  bind(run: RunJob): void {
    this.runJob = run;
  }

  /** `createApp`'s deliveries onto the shared queue (the delivery's own client stays here: the worker authenticates as the installation). */
  async submit(req: ReviewRequest, via: { log: Logger | { warn(o: unknown, m?: string): void } }): Promise<'queued' | 'duplicate' | 'ignored'> {
    const log = via.log as Logger;
    if (!req.installationId) {
      log.warn('delivery without an installation; ignoring');
      return 'ignored';
    }
    return this.enqueue({ ...req, installationId: req.installationId }, log);
  }

  /** Throws `QueueRejected` (answered 503) when the delivery cannot be taken now. */
  async enqueue(data: ReviewJobData, log: Logger): Promise<'queued' | 'duplicate'> {
    if (this.closed) throw new QueueRejected('closed');
    if (this.hook.status !== 'ready') {
      log.warn({ redis: this.hook.status }, 'delivery refused with 503: Redis unreachable');
      throw new QueueRejected('unavailable');
    }
    const e = data.event;
    const claim = this.key('delivery', e.deliveryId);
    let claimed = false;
    try {
      return await withTimeout(
        (async () => {
          const c = await this.queue.getJobCounts('wait', 'prioritized', 'delayed');
          if ((c.wait ?? 0) + (c.prioritized ?? 0) + (c.delayed ?? 0) >= this.o.config.queueMax) {
            log.warn({ pr: prKey(e) }, 'delivery refused with 503: queue full');
            throw new QueueRejected('full');
          }
          if ((await this.hook.set(claim, 'pending', 'PX', CLAIM_TTL_MS, 'NX')) !== 'OK') {
            // Handled, or being enqueued by another replica right now: then say 503, in case that fails.
            if ((await this.hook.get(claim)) === 'pending') throw new QueueRejected('unavailable');
            return 'duplicate' as const;
          }
          claimed = true;
          await this.hook.gpuReviewAdvanceHead(this.key('head', prKey(e)), data.at, e.headSha, HEAD_TTL_S);
          await this.queue.add('review', data, { jobId: jobIdOf(e) });
          await this.hook.set(claim, 'done', 'EX', DELIVERY_TTL_S);
          return 'queued' as const;
        })(),
        HOOK_TIMEOUT_MS,
        'enqueue',
      );
    } catch (err) {
      if (claimed) await this.hook.del(claim).catch(() => {});
      if (err instanceof QueueRejected) throw err;
      log.warn({ err: { message: (err as Error).message } }, 'delivery refused with 503: Redis unreachable');
      throw new QueueRejected('unavailable');
    }
  }

  /** Starts this replica's worker. */
  start(probot: Probot): void {
    const { config, log, metrics } = this.o;
    const lockMs = config.reviewLockMs;

    const processor = async (job: Job<ReviewJobData>, token?: string) => {
      this.active++;
      try {
        return await review(job, token);
      } finally {
        this.active--;
      }
    };
    const review = async (job: Job<ReviewJobData>, token?: string) => {
      const { event: e, installationId, at } = job.data;
      const pr = prKey(e);
      const lock = this.key('lock', pr);
      const mine = `${this.id}:${job.id}:${token}`;
      if ((await this.work.set(lock, mine, 'PX', lockMs, 'NX')) !== 'OK' && (await this.work.get(lock)) !== mine) {
        // Another replica (or slot) is reviewing this PR: wait in the delayed set, freeing the
        // slot; 0.1 s doubling up to 2 s (each wait counts as a start), plus a little jitter.
        const wait = Math.min(2000, 100 * 2 ** Math.min(5, job.attemptsStarted)) + Math.floor(Math.random() * 200);
        await job.moveToDelayed(Date.now() + wait, token);
        throw new DelayedError();
      }
      const beat = setInterval(() => {
        this.work.gpuReviewExtendLock(lock, mine, lockMs).then(
          (ok) => {
            if (!ok) log.warn({ pr, job: job.id }, 'the PR lock lapsed during the review (Redis unreachable for longer than REVIEW_LOCK_MS?)');
          },
          (err: Error) => log.warn({ pr, err: { message: err.message } }, 'could not renew the PR lock'),
        );
      }, Math.max(250, Math.floor(lockMs / 3)));
      beat.unref();
      const jlog = log.child({ deliveryId: e.deliveryId, pr, head: e.headSha.slice(0, 7), job: job.id });
      try {
        const head = await this.work.get(this.key('head', pr));
        const m = head ? /^(\d+)\|(.*)$/.exec(head) : null;
        if (m && m[2] !== e.headSha && Number(m[1]) > at) {
          metrics.reviews.inc({ result: 'superseded' });
          jlog.info({ newer: m[2].slice(0, 7) }, 'queued review superseded by a newer push');
          return { kind: 'superseded' };
        }
        jlog.info({ attempt: job.attemptsStarted, stalled: job.stalledCounter }, 'review job started');
        const end = metrics.duration.startTimer();
        try {
          if (!this.runJob) throw new Error('no review job bound (createApp binds it)');
          const octokit = (await probot.auth(installationId)) as unknown as GitHubClient;
          const outcome = await this.runJob(job.data, octokit, jlog);
          jlog.info({ outcome: outcome.kind, reason: 'reason' in outcome ? outcome.reason : undefined }, 'review job finished');
          return { kind: outcome.kind };
        } finally {
          end();
        }
      } finally {
        clearInterval(beat);
        await this.work.gpuReviewReleaseLock(lock, mine).catch((err: Error) => log.warn({ pr, err: { message: err.message } }, 'could not release the PR lock (it expires by itself)'));
      }
    };

    this.worker = new Worker<ReviewJobData>('reviews', processor, {
      connection: { url: config.redisUrl!, connectionName: `${this.prefix}-worker` },
      prefix: this.prefix,
      concurrency: config.concurrency,
      lockDuration: lockMs,
      stalledInterval: lockMs,
      // A job whose replica died twice in a row still gets a third replica.
      maxStalledCount: 2,
      autorun: false,
    });
    this.worker.on('failed', (job, err) => {
      if (!job) return;
      const last = job.attemptsMade >= (job.opts.attempts ?? 1);
      if (last) metrics.reviews.inc({ result: 'failed' });
      log.error({ err: { message: err.message }, pr: prKey(job.data.event), job: job.id, attempts: job.attemptsMade }, last ? 'review job crashed' : 'review job crashed; retrying later');
    });
    this.worker.on('stalled', (jobId) => log.warn({ job: jobId }, 'review job stalled (its replica stopped renewing the lock); queued again'));
    let lastError = '';
    this.worker.on('error', (err) => {
      if (err.message !== lastError) log.warn({ err: { message: err.message } }, 'queue worker error');
      lastError = err.message;
    });
    void this.worker.run().catch((err) => log.error({ err }, 'queue worker stopped'));
  }

  /** Jobs waiting (incl. delayed) and running across all replicas; last known when Redis is down. */
  async depth(): Promise<{ waiting: number; running: number }> {
    if (this.hook.status !== 'ready') return this.counts;
    try {
      const c = await withTimeout(this.queue.getJobCounts('wait', 'prioritized', 'delayed', 'active'), 1000, 'counts');
      this.counts = { waiting: (c.wait ?? 0) + (c.prioritized ?? 0) + (c.delayed ?? 0), running: c.active ?? 0 };
    } catch {
      // keep the last counts
    }
    return this.counts;
  }

  /** Whether Redis answers (PING within a second). */
  async reachable(): Promise<boolean> {
    if (this.hook.status !== 'ready') return false;
    return withTimeout(this.hook.ping(), 1000, 'ping').then(
      (r) => r === 'PONG',
      () => false,
    );
  }

  /** Reviews running in this process. */
  get running(): number {
    return this.active;
  }

  get waiting(): number {
    return this.counts.waiting;
  }

  get accepting(): boolean {
    return !this.closed && this.hook.status === 'ready';
  }

  /** Resolves once this replica runs nothing and the shared queue is empty. */
  async idle(): Promise<void> {
    for (;;) {
      const d = await this.depth();
      if (this.active === 0 && d.waiting === 0 && d.running === 0) return;
      await sleep(25);
    }
  }

  /**
   * Stops taking deliveries and jobs; waits up to `timeoutMs` for the reviews running here. Jobs
   * still waiting stay in Redis for the other replicas; a review cut off by the timeout is put
   * back by another replica's stalled check once its lock lapses. True when nothing was cut off.
   */
  async stop(timeoutMs: number): Promise<boolean> {
    if (this.closed) return false;
    this.closed = true;
    const { log } = this.o;
    let finished = true;
    if (this.worker) {
      const w = this.worker;
      let timer: NodeJS.Timeout | undefined;
      let settled = false;
      finished = await Promise.race([
        // Stops fetching jobs, waits for the running ones and records them done.
        w.close().then(
          () => true,
          () => false,
        ),
        new Promise<boolean>((r) => (timer = setTimeout(() => r(false), timeoutMs))),
        // Nothing runs here any more, but the close does not end (Redis is gone): a second for
        // the last job to be recorded, then no more waiting.
        (async () => {
          while (this.active > 0 && !settled) await sleep(50);
          if (this.hook.status === 'ready') await sleep(1000);
          return true;
        })(),
      ]);
      settled = true;
      clearTimeout(timer);
      if (!finished) log.error({ running: this.active }, 'shutdown timeout: leaving the running reviews to the other replicas (their jobs are taken again once the lock lapses)');
    }
    await Promise.all([
      this.worker ? withTimeout(this.worker.close(true), 1000, 'worker close').catch(() => {}) : undefined,
      withTimeout(this.queue.close(), 1000, 'queue close').catch(() => {}),
      withTimeout(this.bottleneck.disconnect(false), 1000, 'throttle close').catch(() => {}),
    ]);
    this.hook.disconnect();
    this.work.disconnect();
    return finished;
  }
}

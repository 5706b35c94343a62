import type { Outcome, PullRequestEvent } from './job.js';
import type { GitHubClient } from './octokit.js';
import type { Logger } from './post.js';

/**
 * Reviews run off the webhook's request path: the handler enqueues and GitHub gets its answer at
 * once (it gives up on a delivery after 10 s, and throttled writes alone can take longer). Jobs
 * of one pull request run in order, so a push's review sees the comments of the one before.
 * Bounded and closable for the self-hosted service (`src/service/`); in-process only.
 */
/** Thrown by `add` when the queue takes no more work; `status` becomes the webhook's answer. */
export class QueueRejected extends Error {
  readonly status = 503;
  /** `unavailable`: the shared queue (Redis) cannot be reached or did not answer in time. */
  constructor(readonly reason: 'full' | 'closed' | 'unavailable') {
    super(
      reason === 'full' ? 'review queue is full; redeliver later' : reason === 'closed' ? 'shutting down; redeliver later' : 'review queue unreachable; redeliver later',
    );
  }
}

export interface QueueOptions {
  /** Most jobs waiting to start; past it `add` throws `QueueRejected('full')`. Default: unbounded. */
  maxBacklog?: number;
  /** A job added for a key that already has one waiting replaces it (the newer push wins). */
  supersede?: boolean;
  /** Called with the key of a waiting job that a newer one replaced. */
  onSuperseded?: (key: string) => void;
}

interface Entry {
  key: string;
  job: () => Promise<unknown>;
}

export class ReviewQueue {
  private readonly backlog: Entry[] = [];
  private readonly busy = new Set<string>();
  private active = 0;
  private closed = false;
  private idlers: Array<() => void> = [];

  constructor(
    private readonly concurrency = 4,
    private readonly onError: (err: unknown, key: string) => void = () => {},
    private readonly options: QueueOptions = {},
  ) {}

  add(key: string, job: () => Promise<unknown>): void {
    if (this.closed) throw new QueueRejected('closed');
    if (this.options.supersede) {
      const waiting = this.backlog.find((e) => e.key === key);
      if (waiting) {
        waiting.job = job; // keeps its place in line
        this.options.onSuperseded?.(key);
        return;
      }
    }
    if (this.backlog.length >= (this.options.maxBacklog ?? Infinity)) throw new QueueRejected('full');
    this.backlog.push({ key, job });
    this.pump();
  }

  /** Stops taking jobs (`add` throws); the ones already queued still run. */
  close(): void {
    this.closed = true;
  }

  get accepting(): boolean {
    return !this.closed && this.backlog.length < (this.options.maxBacklog ?? Infinity);
  }

  /** Resolves when every job queued so far (and any they queue) has finished. */
  idle(): Promise<void> {
    if (this.size === 0) return Promise.resolve();
    return new Promise((r) => this.idlers.push(r));
  }

  /** Jobs waiting plus jobs running. */
  get size(): number {
    return this.backlog.length + this.active;
  }

  get waiting(): number {
    return this.backlog.length;
  }

  get running(): number {
    return this.active;
  }

  private pump(): void {
    while (this.active < this.concurrency) {
      const i = this.backlog.findIndex((e) => !this.busy.has(e.key));
      if (i < 0) break;
      const [entry] = this.backlog.splice(i, 1);
      this.active++;
      this.busy.add(entry.key);
      // A microtask later, as before: the caller's synchronous code after `add` runs first.
      void Promise.resolve()
        .then(() => entry.job())
        .catch((err) => this.onError(err, entry.key))
        .finally(() => {
          this.active--;
          this.busy.delete(entry.key);
          this.pump();
          if (this.size === 0) for (const r of this.idlers.splice(0)) r();
        });
    }
  }
}

/**
 * Delivery ids already accepted. GitHub redelivers with the same `X-GitHub-Delivery`, so a
 * redelivered event is recognised and not reviewed twice. Bounded: the oldest ids drop first.
 */
export class DeliveryLog {
  private readonly seen = new Set<string>();

  constructor(private readonly capacity = 10_000) {}

  /** Records the id; false when it was already there. */
  accept(id: string): boolean {
    if (this.seen.has(id)) return false;
    this.seen.add(id);
    if (this.seen.size > this.capacity) {
      const oldest = this.seen.values().next().value;
      if (oldest !== undefined) this.seen.delete(oldest);
    }
    return true;
  }

  /** Drops the id again (its delivery was refused, so GitHub's redelivery must be taken). */
  forget(id: string): void {
    this.seen.delete(id);
  }
}

/** One delivery to review, as a queue keeps it: enough to review without the webhook payload. */
export interface ReviewRequest {
  event: PullRequestEvent;
  /** The installation the delivery came from (the Redis worker authenticates as it). */
  installationId?: number;
  /** `pull_request.updated_at` in ms: orders the heads of one PR. */
  at: number;
}

/** The one job every queue runs: a review of one request with an installation's client. */
export type RunJob = (req: ReviewRequest, octokit: GitHubClient, log: Logger) => Promise<Outcome>;

/**
 * What the application function (`createApp`) needs of a queue; the embedded one below and the
 * Redis one (src/service/redis.ts) both implement it, so both run the same job.
 */
export interface JobQueue {
  /** The job to run for each request; the application function binds it once, before any delivery. */
  bind(run: RunJob): void;
  /**
   * Takes a verified delivery: `duplicate` when this delivery id was already taken, `ignored` when
   * it cannot be reviewed here. Throws `QueueRejected` (answered 503) when it cannot be taken now.
   * `via` is the delivery's own client, usable by a queue that runs in this process.
   */
  submit(req: ReviewRequest, via: { octokit: GitHubClient; log: Logger }): Promise<'queued' | 'duplicate' | 'ignored'>;
}

/** The queue of one process: the delivery log de-duplicates, the review queue orders the jobs per PR. */
export class EmbeddedQueue implements JobQueue {
  private run: RunJob | undefined;

  constructor(
    readonly queue: ReviewQueue,
    readonly deliveries: DeliveryLog = new DeliveryLog(),
  ) {}

  bind(run: RunJob): void {
    this.run = run;
  }

  async submit(req: ReviewRequest, via: { octokit: GitHubClient; log: Logger }): Promise<'queued' | 'duplicate'> {
    const run = this.run;
    if (!run) throw new Error('EmbeddedQueue: no job bound (createApp binds it)');
    const e = req.event;
    if (!this.deliveries.accept(e.deliveryId)) return 'duplicate';
    try {
      this.queue.add(`${e.owner}/${e.repo}#${e.number}`, () => run(req, via.octokit, via.log));
    } catch (err) {
      // Refused (full, shutting down): GitHub's redelivery of this id must be taken then.
      if (err instanceof QueueRejected) this.deliveries.forget(e.deliveryId);
      throw err;
    }
    return 'queued';
  }
}

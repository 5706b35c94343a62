/**
 * Reviews run off the webhook's request path: the handler enqueues and GitHub gets its answer at
 * once (it gives up on a delivery after 10 s, and throttled writes alone can take longer). Jobs
 * of one pull request run in order, so a push's review sees the comments of the one before.
 * In-process only; the self-hosted service replaces it with a durable queue.
 */
export class ReviewQueue {
  private readonly chains = new Map<string, Promise<void>>();
  private readonly running = new Set<Promise<void>>();
  private active = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(
    private readonly concurrency = 4,
    private readonly onError: (err: unknown, key: string) => void = () => {},
  ) {}

  add(key: string, job: () => Promise<unknown>): void {
    const prev = this.chains.get(key) ?? Promise.resolve();
    const next = prev
      .then(() => this.slot())
      .then(async () => {
        try {
          await job();
        } catch (err) {
          this.onError(err, key);
        } finally {
          this.release();
        }
      });
    this.chains.set(key, next);
    this.running.add(next);
    void next.finally(() => {
      this.running.delete(next);
      if (this.chains.get(key) === next) this.chains.delete(key);
    });
  }

  /** Resolves when every job queued so far (and any they queue) has finished. */
  async idle(): Promise<void> {
    while (this.running.size > 0) await Promise.allSettled([...this.running]);
  }

  get size(): number {
    return this.running.size;
  }

  private slot(): Promise<void> {
    if (this.active < this.concurrency) {
      this.active++;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiting.push(() => {
      this.active++;
      resolve();
    }));
  }

  private release(): void {
    this.active--;
    this.waiting.shift()?.();
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
}

import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** The service's Prometheus metrics, on a registry of its own (tests run several services). */
export interface QueueDepth {
  waiting: number;
  running: number;
}

/** `depth` may ask Redis (the shared queue's counts): then it is awaited at each scrape. */
export function createMetrics(depth: () => QueueDepth | Promise<QueueDepth>) {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'gpu_review_' });
  const deliveries = new Counter({
    name: 'gpu_review_webhook_deliveries_total',
    help: 'Webhook deliveries received, by event and HTTP status answered (503: queue full or shutting down).',
    labelNames: ['event', 'status'] as const,
    registers: [registry],
  });
  const reviews = new Counter({
    name: 'gpu_review_reviews_total',
    help: 'Review jobs finished, by result: done, failed, skipped, config_error, superseded.',
    labelNames: ['result'] as const,
    registers: [registry],
  });
  new Gauge({
    name: 'gpu_review_queue_depth',
    help: 'Review jobs in the queue, by state (with Redis: the shared queue, all replicas; waiting includes delayed).',
    labelNames: ['state'] as const,
    registers: [registry],
    async collect() {
      const d = await depth();
      this.set({ state: 'waiting' }, d.waiting);
      this.set({ state: 'running' }, d.running);
    },
  });
  const duration = new Histogram({
    name: 'gpu_review_review_duration_seconds',
    help: 'Wall time of one review job, from start to its last GitHub call.',
    buckets: [0.1, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600],
    registers: [registry],
  });
  const apiCalls = new Counter({
    name: 'gpu_review_github_api_calls_total',
    help: 'HTTP requests to the GitHub API, by method and status (0: no answer).',
    labelNames: ['method', 'status'] as const,
    registers: [registry],
  });
  const rateLimited = new Counter({
    name: 'gpu_review_github_rate_limit_waits_total',
    help: 'GitHub answers that asked to wait (429, or 403 with retry-after or no remaining quota).',
    registers: [registry],
  });
  return { registry, deliveries, reviews, duration, apiCalls, rateLimited };
}

export type Metrics = ReturnType<typeof createMetrics>;

/** A fetch that counts GitHub API calls and rate-limit answers; handed to every Octokit. */
export function countingFetch(m: Metrics, inner: typeof fetch = globalThis.fetch): typeof fetch {
  return async (input, init) => {
    const method = (init?.method ?? (input instanceof Request ? input.method : 'GET')).toUpperCase();
    let res: Response;
    try {
      res = await inner(input, init);
    } catch (err) {
      m.apiCalls.inc({ method, status: '0' });
      throw err;
    }
    m.apiCalls.inc({ method, status: String(res.status) });
    const h = res.headers;
    if (res.status === 429 || (res.status === 403 && (h.get('retry-after') !== null || h.get('x-ratelimit-remaining') === '0'))) m.rateLimited.inc();
    return res;
  };
}

import { probeNvcc } from '../compile/nvcc.js';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { z } from 'zod';
import { createNodeMiddleware, Probot, type ProbotOctokit } from 'probot';
import { createApp, type AppOptions } from '../app.js';
import { useProcessIsolation } from '../review/process-pool.js';
import { createOctokitClass, GpuReviewOctokit } from '../github/octokit.js';
import { DeliveryLog, EmbeddedQueue, QueueRejected, ReviewQueue, type JobQueue } from '../github/queue.js';
import type { Outcome } from '../github/review-pr.js';
import type { ServiceConfig } from './config.js';
import { createLogger } from './log.js';
import { countingFetch, createMetrics, type Metrics } from './metrics.js';
import { RedisReviews, type RedisReviewsOptions } from './redis.js';

export interface ServiceOptions {
  config: ServiceConfig;
  /** Where the JSON log lines go (default stdout). */
  logStream?: NodeJS.WritableStream;
  Octokit?: typeof ProbotOctokit;
  /** Passed through to `createApp` (tests pin checks, shrink retry delays, watch outcomes). */
  app?: Pick<AppOptions, 'checks' | 'retryDelayMs' | 'slug' | 'onOutcome' | 'inProgressAfterMs'>;
  /** Delay between attempts of the start-up `GET /app` while not ready. Default 5 s. */
  authRetryMs?: number;
  /** Redis mode: options laid over the clustered throttle groups (tests drop the write spacing). */
  throttleGroups?: RedisReviewsOptions['throttleGroups'];
}

/**
 * The embedded queue's review queue. Each job is timed and counted; a refused job (queue full or
 * shutting down) throws `QueueRejected`, which the webhook endpoint answers with its status
 * (503) so GitHub marks the delivery failed and it can be redelivered (`EmbeddedQueue` forgets
 * the delivery id then).
 */
class ServiceQueue extends ReviewQueue {
  constructor(
    concurrency: number,
    maxBacklog: number,
    private readonly metrics: Metrics,
    private readonly log: Logger,
  ) {
    super(
      concurrency,
      (err, key) => {
        metrics.reviews.inc({ result: 'failed' });
        log.error({ err, pr: key }, 'review job crashed');
      },
      {
        maxBacklog,
        supersede: true,
        onSuperseded: (key) => {
          metrics.reviews.inc({ result: 'superseded' });
          log.info({ pr: key }, 'queued review superseded by a newer push');
        },
      },
    );
  }

  override add(key: string, job: () => Promise<unknown>): void {
    try {
      super.add(key, async () => {
        const end = this.metrics.duration.startTimer();
        try {
          await job();
        } finally {
          end();
        }
      });
    } catch (err) {
      if (err instanceof QueueRejected) this.log.warn({ pr: key, reason: err.reason }, 'delivery refused with 503');
      throw err;
    }
  }
}

const BAD_SIGNATURE_LOG_MS = 10_000;

/** The fields of a pull_request delivery that `toEvent` reads; without them it is not a delivery to review. */
const pullRequestShape = z.object({
  action: z.string(),
  repository: z.object({ name: z.string(), owner: z.object({ login: z.string() }), default_branch: z.string().optional() }),
  pull_request: z.object({ number: z.number().int(), state: z.string().optional(), head: z.object({ sha: z.string() }) }),
});

/** How long, and how much, the rest of a refused body is read and dropped before the connection is cut. */
const LINGER_MS = 10_000;
const LINGER_BYTES = 64 * 1024 * 1024;

/** The request body as text, or null once more than `max` bytes arrived (counted as read, chunked or not). */
function readBody(req: IncomingMessage, max: number): Promise<string | null> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    req.on('data', (c: Buffer) => {
      if (over) return;
      size += c.length;
      if (size > max) {
        over = true;
        chunks.length = 0;
        req.pause();
        resolve(null);
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => {
      if (!over) resolve(Buffer.concat(chunks).toString('utf8'));
    });
    req.on('error', (e) => {
      if (!over) reject(e);
    });
  });
}

/** The Redis password, if the URL has one, is redacted from the logs like the other secrets. */
function redisSecret(url: string | undefined): string[] {
  if (!url) return [];
  const u = new URL(url);
  return [u.password, decodeURIComponent(u.password)].filter((p) => p.length > 0);
}

/** host:port/db of the Redis URL, without credentials, for the logs. */
function redisHost(url: string): string {
  const u = new URL(url);
  return `${u.host}${u.pathname && u.pathname !== '/' ? u.pathname : ''}`;
}

const RESULT: Record<Outcome['kind'], string> = { reviewed: 'done', failed: 'failed', skipped: 'skipped', 'config-error': 'config_error' };

/** What the service's queue shows, embedded or on Redis. */
export interface QueueView {
  /** Reviews running in this process. */
  readonly running: number;
  /** Jobs waiting (with Redis: the shared queue, as last counted). */
  readonly waiting: number;
  readonly accepting: boolean;
  /** Embedded: every queued review finished. Redis: nothing runs here and the shared queue is empty. */
  idle(): Promise<void>;
}

export interface Service {
  readonly server: Server;
  readonly probot: Probot;
  /** `redis` when `REDIS_URL` is set. */
  readonly mode: 'embedded' | 'redis';
  readonly queue: QueueView;
  /** The Redis backend (Redis mode only). */
  readonly redis: RedisReviews | undefined;
  readonly metrics: Metrics;
  readonly log: Logger;
  /** `http://host:port` once listening. */
  url: string;
  readonly ready: boolean;
  listen(): Promise<void>;
  /**
   * Stops taking deliveries (503), waits for the queued and running reviews up to
   * `shutdownTimeoutMs`, closes the server. True when every review finished.
   */
  stop(): Promise<boolean>;
}

/**
 * Whether this replica can give compiler evidence: COMPILE=on and an nvcc that runs. Readiness does
 * not depend on it (reviews go on without it); it is reported so an operator sees a missing toolkit.
 */
async function compileStatus(enabled: boolean): Promise<{ enabled: boolean; available: boolean; nvcc: string | null }> {
  const info = enabled ? await probeNvcc(process.env.NVCC ?? 'nvcc') : null;
  return { enabled, available: Boolean(info), nvcc: info?.version ?? null };
}

export async function createService(opts: ServiceOptions): Promise<Service> {
  const { config } = opts;
  // Reviews in child processes (review/process-pool.ts), in the Redis mode too.
  useProcessIsolation();
  const log = createLogger(config.logLevel, [config.privateKey, config.webhookSecret, ...redisSecret(config.redisUrl)], opts.logStream);
  let embedded: ServiceQueue | undefined;
  let redis: RedisReviews | undefined;
  const metrics = createMetrics(() => (redis ? redis.depth() : { waiting: embedded?.waiting ?? 0, running: embedded?.running ?? 0 }));
  const onOutcome: NonNullable<AppOptions['onOutcome']> = (outcome, event) => {
    metrics.reviews.inc({ result: RESULT[outcome.kind] });
    opts.app?.onOutcome?.(outcome, event);
  };

  // One application function over either queue: both run the same review job.
  let jobs: JobQueue;
  if (config.redisUrl) {
    redis = new RedisReviews({ config, log, metrics, throttleGroups: opts.throttleGroups });
    jobs = redis;
  } else {
    embedded = new ServiceQueue(config.concurrency, config.queueMax, metrics, log);
    jobs = new EmbeddedQueue(embedded, new DeliveryLog());
  }
  const appFn = createApp({ ...opts.app, compile: config.compile, jobs, onOutcome, ...(redis ? { configCache: redis.configs } : {}) });
  const q: QueueView = redis ?? embedded!;

  const probot = new Probot({
    appId: config.appId,
    privateKey: config.privateKey,
    secret: config.webhookSecret,
    baseUrl: config.baseUrl,
    log: log as never,
    // With Redis, GitHub's rate-limit state (Octokit throttling) is clustered there.
    Octokit: opts.Octokit ?? (redis ? createOctokitClass({ throttle: redis.throttle }) : GpuReviewOctokit),
    request: { fetch: countingFetch(metrics) },
  });
  // Loads the app into Probot; the webhook path itself is served by `webhook` below.
  await createNodeMiddleware(appFn, { probot, webhooksPath: config.webhookPath });

  let authenticated = false;
  let stopping = false;
  let authTimer: NodeJS.Timeout | undefined;
  const authenticate = async () => {
    try {
      const octokit = await probot.auth();
      const { data } = await octokit.rest.apps.getAuthenticated();
      authenticated = true;
      log.info({ app: data?.slug }, 'authenticated as the GitHub App');
    } catch (err) {
      log.warn({ err: { message: (err as Error).message, status: (err as { status?: number }).status } }, 'GET /app failed; not ready yet');
      if (!stopping) authTimer = setTimeout(() => void authenticate(), opts.authRetryMs ?? 5000);
    }
  };

  const json = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method === 'GET' && path === '/healthz') return json(res, 200, { status: 'ok' });
    if (req.method === 'GET' && path === '/readyz') {
      if (redis) {
        // The shared queue must answer; a full one is not ready either.
        const [reachable, depth] = await Promise.all([redis.reachable(), redis.depth()]);
        const accepting = reachable && !stopping && depth.waiting < config.queueMax;
        const ok = authenticated && accepting;
        return json(res, ok ? 200 : 503, { ready: ok, authenticated, accepting, redis: reachable ? 'ok' : 'unreachable', queued: depth.waiting, running: depth.running, runningHere: redis.running, compile: await compileStatus(config.compile) });
      }
      const ok = authenticated && q.accepting && !stopping;
      return json(res, ok ? 200 : 503, { ready: ok, authenticated, accepting: q.accepting && !stopping, queued: q.waiting, running: q.running, compile: await compileStatus(config.compile) });
    }
    if (req.method === 'GET' && path === '/metrics') {
      const body = await metrics.registry.metrics();
      res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(body);
      return;
    }
    if (path === config.webhookPath) {
      const event = String(req.headers['x-github-event'] ?? 'unknown');
      res.on('finish', () => metrics.deliveries.inc({ event, status: String(res.statusCode) }));
      if (stopping) {
        res.setHeader('retry-after', '30');
        return json(res, 503, { error: 'shutting down; redeliver later' });
      }
      return webhook(req, res, event);
    }
    return json(res, 404, { error: 'not found' });
  };

  // A flood of badly signed deliveries gets one warn line per interval, with the count, never a body.
  let badSignatureLast = 0;
  let badSignatureQuiet = 0;
  const badSignature = (deliveryId: string, event: string) => {
    const now = Date.now();
    if (now - badSignatureLast < BAD_SIGNATURE_LOG_MS) {
      badSignatureQuiet++;
      return;
    }
    log.warn({ deliveryId, event, alsoRefusedSinceLastLine: badSignatureQuiet }, 'webhook signature does not match; delivery refused (400)');
    badSignatureLast = now;
    badSignatureQuiet = 0;
  };

  /**
   * The webhook endpoint, in place of Probot's middleware: the body is counted while it is read
   * (chunked or not) and refused with 413 past WEBHOOK_MAX_BYTES; a bad signature is 400 with one
   * rate-limited warn line; a signed payload without the fields a review needs is 400; nothing
   * of an exception's text goes back to the sender.
   */
  const webhook = async (req: IncomingMessage, res: ServerResponse, event: string) => {
    if (req.method !== 'POST') return json(res, 404, { error: 'not found' });
    const id = req.headers['x-github-delivery'];
    const signature = req.headers['x-hub-signature-256'];
    if (typeof id !== 'string' || typeof signature !== 'string' || req.headers['x-github-event'] === undefined) {
      return json(res, 400, { error: 'required headers missing: x-github-event, x-hub-signature-256, x-github-delivery' });
    }
    if (!/^\s*application\/json\s*(;|$)/i.test(String(req.headers['content-type'] ?? ''))) return json(res, 415, { error: 'content-type must be application/json' });
    const tooLarge = () => {
      json(res, 413, { error: `payload too large (limit ${config.maxBodyBytes} bytes)` });
      // Lingering close: the rest of the body is read and dropped (nothing kept) so the sender
      // reads the 413 before the connection goes. Closing while it still sends would reset the
      // connection, and a reset drops the unread 413 on the sender's side. A sender that does
      // not stop within LINGER_MS, or sends more than LINGER_BYTES after the 413, is cut off.
      let dropped = 0;
      const cut = () => req.socket.destroy();
      const timer = setTimeout(cut, LINGER_MS).unref();
      req.on('data', (c: Buffer) => {
        dropped += c.length;
        if (dropped > LINGER_BYTES) cut();
      });
      req.once('end', () => clearTimeout(timer));
      req.once('close', () => clearTimeout(timer));
      req.resume();
    };
    if (Number(req.headers['content-length'] ?? 0) > config.maxBodyBytes) return tooLarge();
    const body = await readBody(req, config.maxBodyBytes);
    if (body === null) return tooLarge();
    if (!(await probot.webhooks.verify(body, signature).catch(() => false))) {
      badSignature(id, event);
      return json(res, 400, { error: 'signature does not match' });
    }
    let payload: unknown;
    try {
      payload = JSON.parse(body);
    } catch {
      return json(res, 400, { error: 'payload is not valid JSON' });
    }
    if (event === 'pull_request' && !pullRequestShape.safeParse(payload).success) {
      log.warn({ deliveryId: id, event }, 'signed pull_request payload without the fields a review needs; refused (400)');
      return json(res, 400, { error: 'malformed pull_request payload' });
    }
    try {
      await probot.webhooks.receive({ id, name: event, payload } as never);
    } catch (err) {
      const errors = err instanceof AggregateError ? [...err.errors] : [err];
      const withStatus = errors.find((e) => typeof (e as { status?: unknown }).status === 'number') as { status: number; message: string } | undefined;
      if (withStatus && withStatus.status < 500) return json(res, withStatus.status, { error: 'delivery refused' });
      if (withStatus) return json(res, withStatus.status, { error: withStatus instanceof QueueRejected ? withStatus.message : 'unavailable' });
      log.error({ deliveryId: id, event, err: errors[0] }, 'webhook handler failed');
      return json(res, 500, { error: 'internal error' });
    }
    res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n');
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((err) => {
      log.error({ err }, 'request failed');
      if (!res.headersSent) json(res, 500, { error: 'internal error' });
    });
  });
  // GitHub's delivery must be answered within 10 s; nothing here should take close to that.
  server.requestTimeout = 10_000;

  const service: Service = {
    server,
    probot,
    mode: redis ? 'redis' : 'embedded',
    queue: q,
    redis,
    metrics,
    log,
    url: '',
    get ready() {
      return authenticated && q.accepting && !stopping;
    },
    async listen() {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(config.port, config.host, () => resolve());
      });
      const a = server.address() as AddressInfo;
      service.url = `http://${a.family === 'IPv6' ? `[${a.address}]` : a.address}:${a.port}`;
      log.info({ url: service.url, webhookPath: config.webhookPath, concurrency: config.concurrency, queueMax: config.queueMax, queue: redis ? `redis ${redisHost(config.redisUrl!)} prefix ${config.redisPrefix}` : 'embedded' }, 'listening');
      redis?.start(probot);
      void authenticate();
    },
    async stop() {
      if (stopping) return false;
      stopping = true;
      clearTimeout(authTimer);
      if (redis) {
        log.info({ runningHere: redis.running, timeoutMs: config.shutdownTimeoutMs }, 'shutting down: new deliveries get 503, finishing the reviews running here (queued ones stay in Redis)');
        const finished = await redis.stop(config.shutdownTimeoutMs);
        if (finished) log.info('all reviews finished');
        await new Promise<void>((r) => {
          server.close(() => r());
          server.closeAllConnections();
        });
        return finished;
      }
      const q = embedded!;
      q.close();
      log.info({ queued: q.waiting, running: q.running, timeoutMs: config.shutdownTimeoutMs }, 'shutting down: new deliveries get 503, finishing queued reviews');
      let timer: NodeJS.Timeout | undefined;
      const drained = await Promise.race([
        q.idle().then(() => true),
        new Promise<boolean>((r) => (timer = setTimeout(() => r(false), config.shutdownTimeoutMs))),
      ]);
      clearTimeout(timer);
      if (drained) log.info('all reviews finished');
      else log.error({ queued: q.waiting, running: q.running }, 'shutdown timeout: abandoning unfinished reviews (their deliveries can be redelivered from the App settings)');
      await new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections();
      });
      return drained;
    },
  };
  return service;
}

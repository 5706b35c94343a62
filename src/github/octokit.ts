import Bottleneck from 'bottleneck';
import { ProbotOctokit } from 'probot';

/** The installation client the handlers get (`context.octokit`). */
export type GitHubClient = InstanceType<typeof ProbotOctokit>;

export interface OctokitTuning {
  /** Milliseconds per second of `retry-after` (tests shrink it). Default 1000. */
  retryAfterBaseValue?: number;
  /** Most retries after a secondary rate limit before the request fails. Default 3. */
  maxRateLimitRetries?: number;
  /** Longest `retry-after` (seconds) worth waiting for; longer waits fail the request. Default 900. */
  maxRetryAfterSeconds?: number;
  /** Per-attempt request timeout; a timeout is a 500 to the retry plugin. Default 60 000. */
  requestTimeoutMs?: number;
  /**
   * Extra throttle options (tests pass Bottleneck groups without spacing). A `write` group given
   * here paces the requests `isContentWrite` picks, keyed by installation (see `writePacing`).
   */
  throttle?: Record<string, unknown>;
}

/**
 * GitHub's secondary limits for requests that create content, per installation: no more than 80
 * a minute and 500 an hour ("Rate limits for the REST API", about secondary rate limits). Reads —
 * REST GETs and read-only GraphQL queries — have no such limit (the 900-points-per-minute endpoint
 * limit and 100 concurrent requests are far above one review's needs).
 */
export const CONTENT_WRITES_PER_MINUTE = 80;
export const CONTENT_WRITES_PER_HOUR = 500;

/** The keyed limiter shape @octokit/plugin-throttling and Bottleneck.Group share. */
export interface KeyedLimiters {
  key(k: string): { schedule<R>(options: Bottleneck.JobOptions, fn: () => PromiseLike<R>): Promise<R> };
}

/**
 * The write pacer: writes of one installation go one at a time, within GitHub's per-minute and
 * per-hour budgets, and otherwise without delay; `retry-after` answers are handled by the
 * throttling plugin's retry. `common` carries a Redis connection in scale-out mode (every replica
 * then draws on one budget per installation) and test overrides.
 */
export function writePacing(common: Bottleneck.ConstructorOptions = {}, id = 'gpu-review-writes'): KeyedLimiters {
  const hour = new Bottleneck.Group({
    id: `${id}-hour`,
    reservoir: CONTENT_WRITES_PER_HOUR,
    reservoirRefreshAmount: CONTENT_WRITES_PER_HOUR,
    reservoirRefreshInterval: 3_600_000,
    ...common,
    // A key idle for less than two hours keeps its hourly count.
    timeout: 2 * 3_600_000,
  });
  const minute = new Bottleneck.Group({
    id: `${id}-minute`,
    maxConcurrent: 1,
    reservoir: CONTENT_WRITES_PER_MINUTE,
    reservoirRefreshAmount: CONTENT_WRITES_PER_MINUTE,
    reservoirRefreshInterval: 60_000,
    ...common,
  });
  minute.on('created', (limiter: Bottleneck, key: string) => limiter.chain(hour.key(key)));
  return minute as unknown as KeyedLimiters;
}

/** Hands the throttling plugin's own write and notification spacing a limiter that does not wait. */
const NO_WAIT: KeyedLimiters = { key: () => ({ schedule: async (_o, fn) => fn() }) };

interface RequestOptionsLike {
  method?: string;
  url?: string;
  query?: unknown;
  [k: string]: unknown;
}

/** Token exchanges: never paced (the plugin's own exemption, same paths). */
function isAuthRequest(method: string, pathname: string): boolean {
  return (
    (method === 'PATCH' && /^\/applications\/[^/]+\/token\/scoped$/.test(pathname)) ||
    (method === 'POST' &&
      (/^\/applications\/[^/]+\/token$/.test(pathname) || /^\/app\/installations\/[^/]+\/access_tokens$/.test(pathname) || pathname === '/login/oauth/access_token'))
  );
}

/**
 * A GraphQL document that only reads: every top-level operation is an anonymous `{ … }` or a
 * `query` (fragments may sit beside them); a `mutation` or `subscription` anywhere at the top level
 * makes it a write. Strings and comments are skipped; anything unreadable counts as a write.
 */
export function isReadOnlyGraphQL(query: unknown): boolean {
  if (typeof query !== 'string') return false;
  const text = query.replace(/"""[\s\S]*?"""|"(?:[^"\\\n]|\\.)*"|#[^\n]*/g, ' ');
  let depth = 0;
  let operations = 0;
  for (const m of text.matchAll(/[{}()]|[_A-Za-z][_0-9A-Za-z]*/g)) {
    const tok = m[0];
    if (tok === '{' || tok === '(') {
      if (depth === 0 && tok === '{') operations++;
      depth++;
    } else if (tok === '}' || tok === ')') {
      depth--;
      if (depth < 0) return false;
    } else if (depth === 0 && (tok === 'mutation' || tok === 'subscription')) {
      return false;
    }
  }
  return depth === 0 && operations > 0;
}

/** Requests that count against GitHub's content-creation limits: non-GET REST calls and GraphQL mutations. */
export function isContentWrite(o: RequestOptionsLike): boolean {
  const method = (o.method ?? 'GET').toUpperCase();
  if (method === 'GET' || method === 'HEAD') return false;
  const pathname = new URL(o.url ?? '/', 'http://github.test').pathname;
  if (isAuthRequest(method, pathname)) return false;
  if (/\/graphql$/.test(pathname)) return !isReadOnlyGraphQL(o.query);
  return true;
}

/**
 * An Octokit plugin that paces content writes per installation (Probot names each installation
 * client's throttle id after its installation). It wraps the request outside the throttling
 * plugin, where the request itself is known, so a read-only GraphQL query is not spaced like a write.
 */
function pacePlugin(writes: KeyedLimiters) {
  return (octokit: { hook: { wrap: (name: 'request', fn: (request: (o: RequestOptionsLike) => Promise<unknown>, o: RequestOptionsLike) => Promise<unknown>) => void } }, options: { throttle?: { id?: unknown } }) => {
    const key = String(options.throttle?.id ?? 'app');
    octokit.hook.wrap('request', (request, o) => (isContentWrite(o) ? writes.key(key).schedule({}, () => request(o)) : request(o)));
  };
}

interface RetryHandlerOptions {
  method?: string;
  url?: string;
  request?: { retryCount?: number };
}

interface LogLike {
  warn(obj: unknown, msg?: string): void;
}

/**
 * Probot's defaults only log a secondary rate limit and give up, so the review being posted is
 * lost. Here both limits wait for `retry-after` (GitHub's own number) and retry a few times.
 */
export function rateLimitHandlers(t: OctokitTuning = {}) {
  const max = t.maxRateLimitRetries ?? 3;
  const longest = t.maxRetryAfterSeconds ?? 900;
  const handler = (kind: string) => (retryAfter: number, options: RetryHandlerOptions, octokit: { log?: LogLike }, retryCount?: number) => {
    const count = retryCount ?? options.request?.retryCount ?? 0;
    const retry = count < max && retryAfter <= longest;
    octokit.log?.warn(
      { retryAfter, retryCount: count, method: options.method, url: options.url },
      retry ? `${kind} rate limit: retrying after ${retryAfter} s` : `${kind} rate limit: giving up after ${count} retries`,
    );
    return retry;
  };
  return { onSecondaryRateLimit: handler('secondary'), onRateLimit: handler('primary') };
}

type Fetch = typeof globalThis.fetch;

/** A fetch that gives up on a request that hangs; @octokit/request turns the abort into a 500. */
function timeoutFetch(ms: number, inner?: Fetch): Fetch {
  return (input, init) => {
    const signal = init?.signal ?? AbortSignal.timeout(ms);
    return (inner ?? globalThis.fetch)(input, { ...init, signal });
  };
}

/**
 * ProbotOctokit with the throttling and retry plugins tuned for posting reviews, and writes paced
 * at GitHub's content-creation limits instead of the plugin's fixed 1 s between writes (and 3 s
 * between notifying writes), which it also applies to read-only GraphQL queries. Probot builds
 * every client with its own throttle options (the log-only secondary handler) and merges ours
 * underneath, so the override has to be a defaults *function* that runs last.
 */
export function createOctokitClass(t: OctokitTuning = {}): typeof ProbotOctokit {
  const handlers = rateLimitHandlers(t);
  const base = t.retryAfterBaseValue ?? 1000;
  // One pacer per class, so every installation client of this process shares the per-installation budgets.
  const writes = (t.throttle?.write as KeyedLimiters | undefined) ?? writePacing();
  const Paced = ProbotOctokit.plugin(pacePlugin(writes) as never);
  return Paced.defaults((instance: Record<string, any>) => ({
    ...instance,
    throttle: { ...(instance.throttle ?? {}), ...handlers, retryAfterBaseValue: base, ...(t.throttle ?? {}), write: NO_WAIT, notifications: NO_WAIT },
    retry: { ...(instance.retry ?? {}), retryAfterBaseValue: base },
    request: { ...(instance.request ?? {}), fetch: timeoutFetch(t.requestTimeoutMs ?? 60_000, instance.request?.fetch) },
  })) as typeof ProbotOctokit;
}

/** The class `src/github/main.ts` hands to Probot. */
export const GpuReviewOctokit = createOctokitClass();

/** Status of an Octokit error (a timeout or network failure arrives as 500). */
export function statusOf(e: unknown): number | undefined {
  const s = (e as { status?: unknown }).status;
  return typeof s === 'number' ? s : undefined;
}

/** Worth another try: GitHub's 5xx, a timeout, a dropped connection. */
export function isTransient(e: unknown): boolean {
  const s = statusOf(e);
  return s === undefined || s >= 500 || s === 408;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

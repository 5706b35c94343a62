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
  /** Extra throttle options (tests pass Bottleneck groups without the 1 s / 3 s write spacing). */
  throttle?: Record<string, unknown>;
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
 * ProbotOctokit with the throttling and retry plugins tuned for posting reviews. Probot builds
 * every client with its own throttle options (the log-only secondary handler) and merges ours
 * underneath, so the override has to be a defaults *function* that runs last.
 */
export function createOctokitClass(t: OctokitTuning = {}): typeof ProbotOctokit {
  const handlers = rateLimitHandlers(t);
  const base = t.retryAfterBaseValue ?? 1000;
  return ProbotOctokit.defaults((instance: Record<string, any>) => ({
    ...instance,
    throttle: { ...(instance.throttle ?? {}), ...handlers, retryAfterBaseValue: base, ...(t.throttle ?? {}) },
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

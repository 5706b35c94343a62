import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ApplicationFunction, Context, Probot } from 'probot';
import type { CheckDef } from './engine/check.js';
import { MemoryConfigStore, readRepoConfig, type ConfigStore } from './github/config.js';
import { identityResolver } from './github/identity.js';
import type { GitHubClient } from './github/octokit.js';
import { DeliveryLog, EmbeddedQueue, ReviewQueue, type JobQueue, type ReviewRequest, type RunJob } from './github/queue.js';
import { reviewPullRequest, type Outcome, type PullRequestEvent } from './github/review-pr.js';
import { useProcessIsolation } from './review/process-pool.js';

export { GpuReviewOctokit, createOctokitClass } from './github/octokit.js';

/** The pull_request actions that put a new head in front of reviewers. */
export const EVENTS = ['pull_request.opened', 'pull_request.synchronize', 'pull_request.reopened', 'pull_request.ready_for_review'] as const;

const here = dirname(fileURLToPath(import.meta.url));
const root = existsSync(join(here, '..', 'package.json')) ? join(here, '..') : join(here, '..', '..');
export const VERSION = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version;

export interface AppOptions {
  /** The queue the deliveries go onto (the Redis one of src/service/redis.ts); default: an embedded one over `queue` and `deliveries`. */
  jobs?: JobQueue;
  queue?: ReviewQueue;
  deliveries?: DeliveryLog;
  /** The App's slug; looked up with GET /app when not given. */
  slug?: string;
  checks?: readonly CheckDef[];
  /** Base delay of the bot's own retries when posting a review (tests shrink it). */
  retryDelayMs?: number;
  /**
   * The operator allows nvcc compiler evidence (service setting COMPILE); a repository still has to
   * ask for it with `compile: { enabled: true }`. Off by default.
   */
  compile?: boolean;
  /**
   * Configs read, by the blob id of the file (see `configKey`); default: an in-process LRU per
   * app. The Redis mode shares one through Redis.
   */
  configCache?: ConfigStore;
  /** See `ReviewJob.inProgressAfterMs` (default 5 s; 0 opens the in-progress check run at once). */
  inProgressAfterMs?: number;
  /** Called with each finished job (tests, metrics). */
  onOutcome?: (outcome: Outcome, event: PullRequestEvent) => void;
}

type PullRequestContext = Context<'pull_request'>;

export function toEvent(context: PullRequestContext): PullRequestEvent {
  const p = context.payload;
  const pr = p.pull_request;
  const sync = p as { before?: string; after?: string };
  return {
    deliveryId: context.id,
    action: p.action,
    owner: p.repository.owner.login,
    repo: p.repository.name,
    number: pr.number,
    headSha: pr.head.sha,
    before: sync.before,
    after: sync.after,
    state: pr.state,
    draft: Boolean(pr.draft),
    author: { login: pr.user?.login ?? '', type: pr.user?.type ?? 'User' },
    defaultBranch: p.repository.default_branch,
  };
}

/** A delivery as a queue keeps it. */
export function toRequest(context: PullRequestContext): ReviewRequest {
  const p = context.payload as { installation?: { id?: number }; pull_request: { updated_at?: string } };
  return { event: toEvent(context), installationId: p.installation?.id, at: Date.parse(p.pull_request.updated_at ?? '') || Date.now() };
}

/**
 * The Probot app: pull_request events in, one review request per new delivery onto the queue
 * (embedded or Redis: the same `JobQueue`), and the one job each runs: `reviewPullRequest` with
 * the installation's client. No analysis here; `src/github/review-pr.ts` does the work with the
 * CLI's pipeline.
 */
export function createApp(options: AppOptions = {}): ApplicationFunction {
  // A review's hard stop kills a child process, never a thread of the server (review/process-pool.ts).
  useProcessIsolation();
  return (app: Probot) => {
    const jobs =
      options.jobs ??
      new EmbeddedQueue(options.queue ?? new ReviewQueue(4, (err, key) => app.log.error({ err, key }, 'review job crashed')), options.deliveries ?? new DeliveryLog());
    const configCache = options.configCache ?? new MemoryConfigStore();
    const bot = identityResolver(async () => {
      if (options.slug) return options.slug;
      const appOctokit = await app.auth();
      const { data } = await appOctokit.rest.apps.getAuthenticated();
      if (!data?.slug) throw new Error('GET /app returned no slug');
      return data.slug;
    }, app.log);

    const run: RunJob = async ({ event }, octokit, log) => {
      const outcome = await reviewPullRequest({
        octokit,
        log,
        event,
        readConfig: () => readRepoConfig(octokit, event.owner, event.repo),
        configCache,
        inProgressAfterMs: options.inProgressAfterMs,
        bot,
        toolVersion: VERSION,
        checks: options.checks,
        retryDelayMs: options.retryDelayMs,
        compile: options.compile,
      });
      options.onOutcome?.(outcome, event);
      return outcome;
    };
    jobs.bind(run);

    app.on([...EVENTS], async (context) => {
      const req = toRequest(context as PullRequestContext);
      const e = req.event;
      const log = context.log.child({ deliveryId: e.deliveryId, pr: `${e.owner}/${e.repo}#${e.number}`, head: e.headSha.slice(0, 7) });
      const r = await jobs.submit(req, { octokit: context.octokit as unknown as GitHubClient, log });
      if (r === 'duplicate') log.info({ deliveryId: e.deliveryId }, 'redelivered webhook: already handled, ignoring');
    });
  };
}

export default createApp();

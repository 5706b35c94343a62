import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ApplicationFunction, Context, Probot } from 'probot';
import type { CheckDef } from './engine/check.js';
import { CONFIG_FILE, MemoryConfigStore, type ConfigStore } from './github/config.js';
import { identityResolver } from './github/identity.js';
import { DeliveryLog, ReviewQueue } from './github/queue.js';
import { reviewPullRequest, type Outcome, type PullRequestEvent } from './github/review-pr.js';
import { useProcessIsolation } from './review/process-pool.js';

export { GpuReviewOctokit, createOctokitClass } from './github/octokit.js';

/** The pull_request actions that put a new head in front of reviewers. */
export const EVENTS = ['pull_request.opened', 'pull_request.synchronize', 'pull_request.reopened', 'pull_request.ready_for_review'] as const;

const here = dirname(fileURLToPath(import.meta.url));
const root = existsSync(join(here, '..', 'package.json')) ? join(here, '..') : join(here, '..', '..');
export const VERSION = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version;

export interface AppOptions {
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

/**
 * The Probot app: pull_request events in, one review job per new delivery onto the queue. No
 * analysis here; `src/github/review-pr.ts` does the work with the CLI's pipeline.
 */
export function createApp(options: AppOptions = {}): ApplicationFunction {
  // A review's hard stop kills a child process, never a thread of the server (review/process-pool.ts).
  useProcessIsolation();
  return (app: Probot) => {
    const queue = options.queue ?? new ReviewQueue(4, (err, key) => app.log.error({ err, key }, 'review job crashed'));
    const deliveries = options.deliveries ?? new DeliveryLog();
    const configCache = options.configCache ?? new MemoryConfigStore();
    const bot = identityResolver(async () => {
      if (options.slug) return options.slug;
      const appOctokit = await app.auth();
      const { data } = await appOctokit.rest.apps.getAuthenticated();
      if (!data?.slug) throw new Error('GET /app returned no slug');
      return data.slug;
    }, app.log);

    app.on([...EVENTS], async (context) => {
      if (!deliveries.accept(context.id)) {
        context.log.info({ deliveryId: context.id }, 'redelivered webhook: already handled, ignoring');
        return;
      }
      const event = toEvent(context as PullRequestContext);
      const log = context.log.child({ deliveryId: event.deliveryId, pr: `${event.owner}/${event.repo}#${event.number}`, head: event.headSha.slice(0, 7) });
      queue.add(`${event.owner}/${event.repo}#${event.number}`, async () => {
        const outcome = await reviewPullRequest({
          octokit: context.octokit,
          log,
          event,
          readConfig: () => context.config(CONFIG_FILE),
          configCache,
          inProgressAfterMs: options.inProgressAfterMs,
          bot,
          toolVersion: VERSION,
          checks: options.checks,
          retryDelayMs: options.retryDelayMs,
          compile: options.compile,
        });
        options.onOutcome?.(outcome, event);
      });
    });
  };
}

export default createApp();

import type { ResolvedConfig } from '../config/schema.js';
import type { CheckDef } from '../engine/check.js';
import type { CheckRef, Completion, SkipReason } from '../reporters/check-run.js';
import type { ConfigStore } from './config.js';
import type { BotIdentity } from './identity.js';
import type { GitHubClient } from './octokit.js';
import type { Logger } from './post.js';

/** The types the job's steps (src/github/steps/) share with `reviewPullRequest`. */

/** What the handler needs from a `pull_request` webhook. */
export interface PullRequestEvent {
  deliveryId: string;
  action: string;
  owner: string;
  repo: string;
  number: number;
  headSha: string;
  /** synchronize only: the head before and after the push. */
  before?: string;
  after?: string;
  state: string;
  draft: boolean;
  author: { login: string; type: string };
  defaultBranch: string;
}

export interface ReviewJob {
  octokit: GitHubClient;
  log: Logger;
  event: PullRequestEvent;
  /** Probot's `context.config(CONFIG_FILE)`. */
  readConfig: () => Promise<unknown>;
  bot: () => Promise<BotIdentity>;
  toolVersion: string;
  checks?: readonly CheckDef[];
  /** Base delay of the bot's own retries of a review post (tests shrink it). */
  retryDelayMs?: number;
  /**
   * Post-change files from a checkout of the head commit (the GitHub Action); default: GitHub's
   * contents at the head SHA.
   */
  readFile?: (path: string) => Promise<string | Uint8Array | null>;
  /** One-off changes on top of the repository's config (the Action's inputs). */
  adjustConfig?: (config: ResolvedConfig) => ResolvedConfig;
  /**
   * The text of the config's `baseline` file, or null when it does not exist. Default: the file on
   * the default branch, like the config (a pull request cannot baseline its own findings).
   */
  readBaseline?: (path: string) => Promise<string | null>;
  /** The operator allows compiler evidence (AppOptions.compile); the repository's config must enable it too. */
  compile?: boolean;
  /**
   * The App's config cache. `readConfig` is then the default branch's file (Probot's
   * `context.config`): it is read only when the file's blob id is new to the cache, and not at all
   * when neither the repository nor the owner's `.github` repository has one. Without it
   * (the Action: the checkout's file) `readConfig` runs every time.
   */
  configCache?: ConfigStore;
  /**
   * The check run is opened as in progress only when the review has not reached its posting step
   * after this many ms (default IN_PROGRESS_AFTER_MS); else it is created once, completed. 0: at
   * the start, as a separate write.
   */
  inProgressAfterMs?: number;
}

/** See `ReviewJob.inProgressAfterMs`: a typical review (1–2 s) needs one check-run write, not two. */
export const IN_PROGRESS_AFTER_MS = 5000;

export type Outcome =
  | { kind: 'skipped'; reason: string; skip: SkipReason }
  | { kind: 'config-error'; message: string }
  | { kind: 'reviewed'; findings: number; posted: number; repeated: number; resolved: number; reviewId: number | null; conclusion: string }
  | { kind: 'failed'; error: string };

/** The job's own view of where it writes: the check run, opened late (see `ReviewJob.inProgressAfterMs`). */
export interface JobRun {
  ref: CheckRef;
  /** Stops the delayed open (or waits for it): from then on the job writes anyway. */
  settle(): Promise<number | null>;
  finish(done: Completion): Promise<unknown>;
}


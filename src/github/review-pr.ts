import picomatch from 'picomatch';
import type { ResolvedConfig } from '../config/schema.js';
import type { DiffModel } from '../diff/model.js';
import type { CheckDef } from '../engine/check.js';
import { CHECKS } from '../../checks/registry.generated.js';
import { activeChecks, review } from '../review/pipeline.js';
import { planReview, withoutAlreadyPosted } from '../reporters/github-review.js';
import { reportInput } from '../reporters/types.js';
import { detectLanguage } from '../sources/detect.js';
import { annotationsFor, completeCheckRun, conclusionFor, PendingCheckRun, type CheckRef, type Completion } from '../reporters/check-run.js';
import { CONFIG_PATH, configKey, loadConfig, type ConfigOutcome, type ConfigStore } from './config.js';
import { readLive, type LiveState } from './live.js';
import { fetchContents } from './contents.js';
import { githubIndexReader } from './index-reader.js';
import { batchReaderOf } from '../index/readers.js';
import { indexNote } from '../index/note.js';
import type { BotIdentity } from './identity.js';
import type { GitHubClient } from './octokit.js';
import { addToBody, botReviews, deletePending, postReview, type Logger } from './post.js';
import { diffModelFromFilesAsync, listPullFiles, MAX_PR_FILES } from './pr-diff.js';
import { applyBaseline, parseBaseline } from '../adopt/baseline.js';
import { unreviewable } from '../adopt/skips.js';
import { closeStaleThreads, loadBotThreads, markerKey, type PullRef } from './threads.js';

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

async function defaultBranchFile(octokit: GitHubClient, owner: string, repo: string, path: string): Promise<string | null> {
  try {
    const { data } = await octokit.rest.repos.getContent({ owner, repo, path, mediaType: { format: 'raw' } });
    return typeof data === 'string' ? data : null;
  } catch (e) {
    if ((e as { status?: number }).status === 404) return null;
    throw e;
  }
}

export type Outcome =
  | { kind: 'skipped'; reason: string }
  | { kind: 'config-error'; message: string }
  | { kind: 'reviewed'; findings: number; posted: number; repeated: number; resolved: number; reviewId: number | null; conclusion: string }
  | { kind: 'failed'; error: string };

/** Why this event gets no review at all (before any API call), or null. */
export function skipBeforeConfig(e: PullRequestEvent): string | null {
  if (e.state !== 'open') return 'pull request is closed';
  if (e.action === 'synchronize' && e.before && e.after && e.before === e.after) return 'synchronize without a new head commit';
  return null;
}

/** Why the config says to skip this PR, or null. */
export function skipByConfig(e: PullRequestEvent, config: ResolvedConfig): string | null {
  if (config.skipDrafts && e.draft) return 'draft pull request (config skip_drafts)';
  if (config.skipBotAuthors && (e.author.type === 'Bot' || /\[bot\]$/.test(e.author.login))) return `author ${e.author.login} is a bot (config skip_bot_authors)`;
  return null;
}

/** Only files the pipeline can review are worth downloading. */
function wantsContent(path: string, config: ResolvedConfig): boolean {
  // A C++ file counts only when its text shows CUDA; any GPU marker stands in for the text here.
  return detectLanguage(path, '__global__', config.vocab.kernel_macros).language !== null;
}

function markSkips(diff: DiffModel, skipped: Map<string, { reason: string; binary?: boolean }>): void {
  for (const f of diff.files) {
    const s = skipped.get(f.path);
    if (!s) continue;
    if (s.binary) f.binary = true;
    else f.problem = s.reason;
  }
}

/**
 * One review of one push: config, files, contents at the head SHA, the CLI's pipeline, then the
 * payload `buildReview` makes, minus what earlier pushes already posted, as one review, plus a
 * check run with the findings as annotations.
 */
/** One file at the head SHA (an include of a compiled unit that the diff does not touch); null when absent, binary or too large. */
async function readAtHead(octokit: GitHubClient, e: PullRequestEvent, path: string, maxBytes: number): Promise<Uint8Array | null> {
  try {
    const { data } = await octokit.rest.repos.getContent({ owner: e.owner, repo: e.repo, path, ref: e.headSha });
    if (Array.isArray(data) || data.type !== 'file' || !('content' in data) || data.size > maxBytes) return null;
    return Buffer.from(data.content, 'base64');
  } catch {
    return null;
  }
}

/** The config of this review: from the cache when its blob was read before, not read at all when there is no file. */
async function loadJobConfig(job: ReviewJob, live: LiveState | null, ruleIds: readonly string[], log: Logger): Promise<ConfigOutcome> {
  const blobs = live?.config;
  if (!job.configCache || !blobs) return loadConfig(job.readConfig, ruleIds);
  const key = configKey(job.event.owner, job.event.repo, blobs);
  if (key === null) {
    log.info('no config file in the repository or its owner\'s .github repository; defaults apply');
    return loadConfig(async () => null, ruleIds);
  }
  let hit = false;
  const out = await loadConfig(job.readConfig, ruleIds, { store: job.configCache, key, onHit: () => (hit = true) });
  log.info({ config: key, cached: hit }, hit ? 'config unchanged since it was read; using the cached one' : 'read the config');
  return out;
}

export async function reviewPullRequest(job: ReviewJob): Promise<Outcome> {
  const { octokit, log, event: e } = job;
  const early = skipBeforeConfig(e);
  if (early) {
    log.info({ reason: early }, 'not reviewing');
    return { kind: 'skipped', reason: early };
  }
  const ref: CheckRef = { owner: e.owner, repo: e.repo, headSha: e.headSha };
  const pr: PullRef = { owner: e.owner, repo: e.repo, pull_number: e.number };
  const checks = job.checks ?? CHECKS;

  // The job may run well after the webhook: a newer push (its own event is queued behind this
  // one) or a close makes this review moot, and its anchors would point into an old diff. One
  // read-only query says so and, for the App, which config files exist (the cache's key).
  let live: LiveState | null = null;
  try {
    live = await readLive(octokit, { owner: e.owner, repo: e.repo, number: e.number }, job.configCache !== undefined);
  } catch (err) {
    log.warn({ err }, 'could not read the pull request through GraphQL; asking REST');
  }
  let moot: string | null = null;
  if (live) {
    moot = !live.open ? 'pull request was closed before the review ran' : live.headSha !== e.headSha ? `superseded by a newer push (head is now ${live.headSha.slice(0, 7)})` : null;
  } else {
    try {
      const { data: pull } = await octokit.rest.pulls.get({ ...pr });
      moot = pull.state !== 'open' ? 'pull request was closed before the review ran' : pull.head.sha !== e.headSha ? `superseded by a newer push (head is now ${pull.head.sha.slice(0, 7)})` : null;
    } catch (err) {
      // Not fatal by itself: if GitHub is really down, the steps below fail and the check run says so.
      log.warn({ err, deliveryId: e.deliveryId }, 'could not read the pull request; reviewing the event as delivered');
    }
  }
  if (moot) {
    log.info({ reason: moot }, 'not reviewing');
    return { kind: 'skipped', reason: moot };
  }

  const run = new PendingCheckRun(octokit, ref, log);
  const openAfter = job.inProgressAfterMs ?? IN_PROGRESS_AFTER_MS;
  if (openAfter <= 0) await run.start();
  else run.startAfter(openAfter);
  const finish = async (done: Completion) => completeCheckRun(octokit, ref, await run.settle(), done);

  try {
    const loaded = await loadJobConfig(job, live, checks.map((c) => c.id), log);
    if (!loaded.ok) {
      log.warn({ error: loaded.message }, 'invalid configuration');
      await finish({
        conclusion: 'failure',
        title: `Invalid configuration: ${CONFIG_PATH}`,
        summary: [
          `gpu-review did not review this pull request: its configuration \`${CONFIG_PATH}\` (read from the default branch \`${e.defaultBranch}\`, or the organization's \`.github\` repository) is invalid.`,
          '',
          '```text',
          loaded.message,
          '```',
          '',
          `Fix the file on \`${e.defaultBranch}\`; a pull request cannot change the rules it is reviewed by. The keys are described in the README ("Configuration").`,
        ].join('\n'),
      });
      return { kind: 'config-error', message: loaded.message };
    }
    const config = job.adjustConfig ? job.adjustConfig(loaded.config) : loaded.config;
    let baseline: Set<string> | null = null;
    if (config.baseline) {
      const text = await (job.readBaseline ?? ((p: string) => defaultBranchFile(octokit, e.owner, e.repo, p)))(config.baseline);
      try {
        baseline = text === null ? null : parseBaseline(text, config.baseline);
      } catch (err) {
        const message = (err as Error).message;
        await finish({ conclusion: 'failure', title: `Invalid baseline: ${config.baseline}`, summary: `gpu-review did not review this pull request: ${message}` });
        return { kind: 'config-error', message };
      }
      if (text === null) log.warn({ baseline: config.baseline }, 'the config names a baseline file that does not exist; reviewing without one');
    }
    const skip = skipByConfig(e, config);
    if (skip) {
      log.info({ reason: skip }, 'not reviewing');
      await finish({ conclusion: 'skipped', title: `Skipped: ${skip}`, summary: `gpu-review skipped this pull request: ${skip}.` });
      return { kind: 'skipped', reason: skip };
    }

    const listed = await listPullFiles(octokit, pr);
    const diff = await diffModelFromFilesAsync(listed.files);
    const include = config.include.length ? picomatch(config.include, { dot: true }) : null;
    const exclude = config.exclude.length ? picomatch(config.exclude, { dot: true }) : null;
    const paths = diff.files
      .filter((f) => f.status !== 'deleted' && !f.binary && !f.modeOnly && !f.problem && f.hunks.length > 0)
      .filter((f) => (!include || include(f.path)) && !(exclude && exclude(f.path)))
      .filter((f) => wantsContent(f.path, config))
      .map((f) => f.path);
    const contents = job.readFile
      ? { texts: new Map<string, string | Uint8Array>(), skipped: new Map<string, { reason: string; binary?: boolean }>(), errors: [], calls: 0 }
      : await fetchContents(octokit, { owner: e.owner, repo: e.repo, sha: e.headSha, paths, maxBytes: config.limits.maxFileBytes });
    markSkips(diff, contents.skipped);
    log.info({ files: listed.files.length, fetched: contents.texts.size, calls: contents.calls }, 'read the pull request');

    // Project index (#15): the files the changed ones import or include, from the checkout (Action) or
    // the head commit in at most 2 GraphQL queries, blobs cached by SHA across pushes (src/github/index-reader.ts).
    const indexReader = job.readFile ? null : githubIndexReader(octokit, { owner: e.owner, repo: e.repo, sha: e.headSha, number: e.number, maxFileBytes: config.limits.maxFileBytes });
    const out = await review({
      diff,
      config,
      scope: 'added',
      checks,
      readFiles: job.readFile ? batchReaderOf(job.readFile) : indexReader!,
      readFile: job.readFile ?? (async (p) => contents.texts.get(p) ?? (job.compile && config.compile.enabled ? await readAtHead(octokit, e, p, config.limits.maxFileBytes) : null)),
      // The service picks the compiler (NVCC, default: nvcc on PATH), never the repository's config.
      compile: job.compile && config.compile.enabled ? { settings: { ...config.compile, nvcc: process.env.NVCC ?? 'nvcc' } } : undefined,
    });
    out.result.errors.push(...contents.errors);
    if (out.result.index) log.info({ index: out.result.index, requests: indexReader?.requests() ?? 0, cachedBlobs: indexReader?.cached() ?? 0 }, 'project index');
    const indexStopped = indexNote(out.result.index);
    if (indexStopped) out.result.errors.push({ message: indexStopped });
    let baselined = 0;
    if (baseline) {
      const kept = applyBaseline(out.result.findings, baseline);
      out.result.findings = kept.findings;
      baselined = kept.baselined;
    }
    if (config.rewrite.enabled && out.result.findings.some((f) => f.inHunk !== false)) {
      // Pass 7 for the findings that get an inline comment (loaded only when there are some), in
      // the review pool like the review itself. The service decides whether rewrites are compiled (like compiler evidence), never the repository.
      const { runPass7Isolated } = await import('../review/pass7.js');
      const p7 = await runPass7Isolated(out, { config, checks, compile: job.compile === true, budgetMs: config.rewrite.timeBudgetMs, select: (f) => f.inHunk !== false });
      log.info({ pass7: p7 }, 'pass 7');
    }
    const notReviewed = config.strict ? unreviewable(out.result.files) : [];
    if (listed.truncated) {
      out.result.errors.push({ message: `GitHub lists at most ${MAX_PR_FILES.toLocaleString('en-US')} files of a pull request; files past that were not reviewed.` });
    }
    const input = reportInput(out, { inlineCommentCap: config.inlineCommentCap, failOn: config.failOn, toolVersion: job.toolVersion });
    const planned = planReview(input);
    const built = planned.payload;
    const findings = out.result.findings;

    // What the bot already said on this PR: its reviews (a leftover pending one, this head's) and its threads.
    // From here on the review writes anyway: no in-progress run any more (it would be one more write).
    await run.settle();
    const bot = await job.bot();
    const reviews = await botReviews(octokit, pr, e.headSha, bot);
    await deletePending(octokit, pr, reviews.pending, log);
    const threads = await loadBotThreads(octokit, pr, bot, log);
    const posted = new Set(threads.map((t) => t.fingerprint));
    const { payload: fresh, repeated } = withoutAlreadyPosted(planned, posted);
    let payload = fresh;
    if (repeated > 0) {
      payload = {
        ...fresh,
        body: addToBody(
          fresh.body,
          `_${repeated} of the inline comments ${repeated === 1 ? 'was' : 'were'} already posted on an earlier push and ${repeated === 1 ? 'is' : 'are'} not repeated._`,
        ),
      };
    }

    let reviewId: number | null = null;
    let postedComments = 0;
    if (reviews.ofHead) {
      log.info({ reviewId: reviews.ofHead.id }, 'this head commit is already reviewed; not posting again');
      reviewId = reviews.ofHead.id;
    } else if (findings.length === 0 && !reviews.any && threads.length === 0) {
      // Nothing to say and nothing said before: the check run carries the summary.
      log.info('no findings; no review posted');
    } else if (reviews.any && payload.comments.length === 0) {
      // A push that adds no new inline finding posts no new review (each one notifies every
      // subscriber); the updated summary lives in this push's check run.
      log.info({ findings: findings.length, repeated }, 'nothing new since the last review; no review posted, the check run carries the summary');
    } else {
      const res = await postReview(octokit, payload, { pr, headSha: e.headSha, bot, log, retryDelayMs: job.retryDelayMs });
      reviewId = res.reviewId;
      postedComments = payload.comments.length - res.movedToBody;
      log.info({ reviewId, comments: payload.comments.length, movedToBody: res.movedToBody, recovered: res.recovered }, 'posted the review');
    }

    // A finding is gone when this push's review of its file no longer reports it; a file this run
    // could not review says nothing either way.
    const current = new Set(findings.map((f) => markerKey(f.fingerprint)));
    const reviewed = new Set(out.result.files.filter((f) => f.skipped === undefined).map((f) => f.path));
    const inDiff = new Set(diff.files.map((f) => f.path));
    const stale = await closeStaleThreads(octokit, pr, threads, (t) => !current.has(t.fingerprint) && (reviewed.has(t.path) || !inDiff.has(t.path)), log);

    const active = activeChecks(config, checks).length;
    // A file stopped at its time budget was not reviewed: never "success, no issues" for it.
    const timedOut = out.result.files.filter((f) => f.timedOut);
    const byFindings = notReviewed.length > 0 ? 'failure' : conclusionFor(findings, config.failOn, config.failOnConfidence);
    const conclusion = timedOut.length && byFindings !== 'failure' ? config.limits.onTimeout : byFindings;
    const late = timedOut.length ? `${timedOut.length} file${timedOut.length === 1 ? '' : 's'} not reviewed (time budget exceeded)` : '';
    let title = findings.length === 0 ? late || 'No GPU issues found' : `${findings.length} finding${findings.length === 1 ? '' : 's'} (fail_on: ${config.failOn})${late ? `; ${late}` : ''}`;
    if (notReviewed.length > 0) title += `; ${notReviewed.length} file${notReviewed.length === 1 ? '' : 's'} could not be reviewed (strict)`;
    const extra = [
      ...(timedOut.length ? [`**Not reviewed, time budget exceeded:** ${timedOut.map((f) => `\`${f.path}\``).join(', ')}`] : []),
      ...(baselined > 0 ? [`_${baselined} finding${baselined === 1 ? '' : 's'} listed in the baseline \`${config.baseline}\` ${baselined === 1 ? 'is' : 'are'} not reported._`] : []),
      ...(notReviewed.length > 0 ? [`**strict:** ${notReviewed.map((f) => `\`${f.path}\` (${f.skipped})`).join(', ')} could not be reviewed, which fails the check.`] : []),
    ];
    await finish({
      conclusion,
      title,
      summary: extra.length ? `${built.body}\n\n${extra.join('\n\n')}` : built.body,
      annotations: annotationsFor(findings, config.failOn, config.failOnConfidence),
    });
    log.info({ findings: findings.length, posted: postedComments, repeated, ...stale, conclusion, rules: active }, 'review done');
    return { kind: 'reviewed', findings: findings.length, posted: postedComments, repeated, resolved: stale.resolved + stale.deleted, reviewId, conclusion };
  } catch (err) {
    const message = (err as Error).message?.split('\n')[0] ?? String(err);
    log.error({ err, deliveryId: e.deliveryId }, 'review failed');
    try {
      await finish({
        conclusion: 'failure',
        title: 'gpu-review could not complete the review',
        summary: `The review of ${e.headSha.slice(0, 7)} failed: ${message}\n\nWebhook delivery \`${e.deliveryId}\`. Push again or redeliver the webhook to retry.`,
      });
    } catch (err2) {
      log.error({ err: err2, deliveryId: e.deliveryId }, 'could not report the failure on the check run');
    }
    return { kind: 'failed', error: message };
  }
}

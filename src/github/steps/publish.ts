import { buildReview, type Refusal } from '../../reporters/github-review.js';
import { botReviews, deletePending, postReview } from '../post.js';
import type { JobRun, Outcome, ReviewJob } from '../job.js';
import { closeStaleThreads, loadBotThreads, markerKey, type PullRef } from '../threads.js';
import type { Inputs } from './load.js';
import type { Planned } from './plan.js';

/**
 * Step 5, publish: what the bot already said on this PR (its reviews: a leftover pending one,
 * this head's; its threads), the review of what is new, the threads of findings that are gone,
 * the check run.
 */
export async function publish(job: ReviewJob, run: JobRun, inputs: Inputs, planned: Planned): Promise<Outcome> {
  const { octokit, log, event: e } = job;
  const pr: PullRef = { owner: e.owner, repo: e.repo, pull_number: e.number };
  const { findings, input } = planned;
  // From here on the review writes anyway: no in-progress run any more (it would be one more write).
  await run.settle();
  const bot = await job.bot();
  const reviews = await botReviews(octokit, pr, e.headSha, bot);
  await deletePending(octokit, pr, reviews.pending, log);
  const threads = await loadBotThreads(octokit, pr, bot, log);
  const alreadyPosted = new Set(threads.map((t) => t.fingerprint));
  const payload = buildReview(input, { alreadyPosted });
  const { repeated } = payload;

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
    const rebuild = (refused: readonly Refusal[]) => buildReview(input, { alreadyPosted, refused });
    const res = await postReview(octokit, payload, { pr, headSha: e.headSha, bot, log, retryDelayMs: job.retryDelayMs, rebuild });
    reviewId = res.reviewId;
    postedComments = payload.comments.length - res.movedToBody;
    log.info({ reviewId, comments: payload.comments.length, movedToBody: res.movedToBody, recovered: res.recovered }, 'posted the review');
  }

  // A finding is gone when this push's review of its file no longer reports it; a file this run
  // could not review says nothing either way.
  const current = new Set(findings.map((f) => markerKey(f.fingerprint)));
  const inDiff = new Set(inputs.diff.files.map((f) => f.path));
  const stale = await closeStaleThreads(octokit, pr, threads, (t) => !current.has(t.fingerprint) && (planned.reviewed.has(t.path) || !inDiff.has(t.path)), log);

  await run.finish(planned.checkRun);
  const conclusion = planned.checkRun.conclusion;
  log.info({ findings: findings.length, posted: postedComments, repeated, ...stale, conclusion, rules: planned.rules }, 'review done');
  return { kind: 'reviewed', findings: findings.length, posted: postedComments, repeated, resolved: stale.resolved + stale.deleted, reviewId, conclusion };
}

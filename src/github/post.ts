import { moveToBody, REVIEW_MARKER, type BuiltReview, type ReviewComment, type Refusal, type ReviewPayload } from '../reporters/github-review.js';

// Pure payload edits, kept importable from here.
export { addToBody, moveToBody } from '../reporters/github-review.js';
import type { BotIdentity } from './identity.js';
import { isTransient, sleep, statusOf, type GitHubClient } from './octokit.js';
import type { PullRef } from './threads.js';

export interface Logger {
  info(o: unknown, m?: string): void;
  warn(o: unknown, m?: string): void;
  error(o: unknown, m?: string): void;
}

interface ReviewSummary {
  id: number;
  state: string;
  commit_id: string | null;
  body: string | null;
  user: { login: string; type: string } | null;
}

export interface BotReviews {
  /** The bot's PENDING reviews (GitHub allows one per user; it blocks creating another). */
  pending: ReviewSummary[];
  /** The bot's submitted review of this head commit, if one exists. */
  ofHead: ReviewSummary | null;
  /** The bot reviewed this PR before (any commit). */
  any: boolean;
}

export async function botReviews(octokit: GitHubClient, pr: PullRef, headSha: string, bot: BotIdentity): Promise<BotReviews> {
  const all = (await octokit.paginate(octokit.rest.pulls.listReviews, { ...pr, per_page: 100 })) as ReviewSummary[];
  const mine = all.filter((r) => bot.isBot(r.user?.login, r.user?.type) && (r.body ?? '').includes(REVIEW_MARKER));
  const pendingAny = all.filter((r) => r.state === 'PENDING' && bot.isBot(r.user?.login, r.user?.type));
  return {
    pending: pendingAny,
    ofHead: mine.find((r) => r.state !== 'PENDING' && r.commit_id === headSha) ?? null,
    any: mine.some((r) => r.state !== 'PENDING'),
  };
}

/** A leftover PENDING review (a crash between creating and submitting, or GitHub's half-done 422) blocks every new review. */
export async function deletePending(octokit: GitHubClient, pr: PullRef, pending: readonly ReviewSummary[], log: Logger): Promise<number> {
  let n = 0;
  for (const r of pending) {
    await octokit.rest.pulls.deletePendingReview({ ...pr, review_id: r.id });
    log.info({ reviewId: r.id }, 'deleted a leftover pending review of the bot');
    n++;
  }
  return n;
}

/** GitHub's 422 sometimes names the path it could not resolve; then only those comments move. */
function offenders(e: unknown, comments: readonly ReviewComment[]): ReviewComment[] {
  const data = (e as { response?: { data?: unknown } }).response?.data;
  const text = JSON.stringify(data ?? (e as Error).message ?? '');
  const named = comments.filter((c) => text.includes(c.path));
  return named.length > 0 && named.length < comments.length ? named : [...comments];
}

function errorText(e: unknown): string {
  const data = (e as { response?: { data?: { message?: string; errors?: unknown[] } } }).response?.data;
  const errs = (data?.errors ?? []).map((x) => (typeof x === 'string' ? x : JSON.stringify(x))).join('; ');
  return [data?.message ?? (e as Error).message, errs].filter(Boolean).join(': ').replace(/\s+/g, ' ').slice(0, 300);
}

export interface PostOptions {
  pr: PullRef;
  headSha: string;
  bot: BotIdentity;
  log: Logger;
  /** Attempts for a transient failure (5xx, timeout). Default 3. */
  attempts?: number;
  /** Base delay between transient retries, doubled each time. Default 2000 ms. */
  retryDelayMs?: number;
  /**
   * The review made again with GitHub's refusals so far (`buildReview(input, { alreadyPosted,
   * refused })`); without it the refused comments are moved on the payload itself.
   */
  rebuild?: (refused: readonly Refusal[]) => BuiltReview;
}

/** The marker keys of some comments of a built review (by position: a comment object is its placement's). */
function markersOf(review: ReviewPayload, comments: readonly ReviewComment[]): Set<string> {
  const placements = (review as Partial<BuiltReview>).placements ?? [];
  const set = new Set(comments);
  return new Set(placements.filter((p) => set.has(p.comment)).map((p) => p.marker));
}

export interface Posted {
  reviewId: number;
  /** Comments that ended up in the body after a 422. */
  movedToBody: number;
  /** The review was found already stored after a 5xx (GitHub kept it and still answered an error). */
  recovered: boolean;
  requests: number;
}

/**
 * Posts one review. The retry plugin is off for this call: a 5xx to a write does not mean it
 * failed, so before each retry the bot looks for its review of this head commit. A 422 gets one
 * retry with the refused comments moved to the body, and a last one with all of them there.
 */
export async function postReview(octokit: GitHubClient, payload: ReviewPayload, opts: PostOptions): Promise<Posted> {
  const attempts = opts.attempts ?? 3;
  const delay = opts.retryDelayMs ?? 2000;
  let current = payload;
  let movedToBody = 0;
  let transientFailures = 0;
  let refusals = 0;
  const refused: Refusal[] = [];
  let requests = 0;
  const without = (from: ReviewPayload, bad: readonly ReviewComment[], why: string): ReviewPayload =>
    opts.rebuild ? opts.rebuild([...refused, { markers: markersOf(from, bad), why }]) : moveToBody(from, bad, why);
  for (;;) {
    try {
      requests++;
      const res = await octokit.rest.pulls.createReview({
        ...opts.pr,
        commit_id: opts.headSha,
        body: current.body,
        event: current.event,
        comments: current.comments,
        request: { retries: 0 },
      });
      return { reviewId: res.data.id, movedToBody, recovered: false, requests };
    } catch (e) {
      const status = statusOf(e);
      if (status === 422 && refusals < 2) {
        refusals++;
        opts.log.warn({ status, error: errorText(e), comments: current.comments.length }, 'GitHub refused the review (422)');
        // GitHub may keep a half-made review: a pending one blocks the retry, a submitted one
        // would be a duplicate.
        const left = await botReviews(octokit, opts.pr, opts.headSha, opts.bot);
        await deletePending(octokit, opts.pr, left.pending, opts.log);
        const bad = refusals === 1 ? offenders(e, current.comments) : [...current.comments];
        const why = errorText(e);
        const next = without(current, bad, why);
        if (left.ofHead) {
          // The review exists without its comments: complete its body rather than post a second one.
          const all = without(current, [...current.comments], why);
          requests++;
          await octokit.rest.pulls.updateReview({ ...opts.pr, review_id: left.ofHead.id, body: all.body });
          return { reviewId: left.ofHead.id, movedToBody: movedToBody + current.comments.length, recovered: true, requests };
        }
        if (current.comments.length === 0) throw e;
        movedToBody += current.comments.length - next.comments.length;
        refused.push({ markers: markersOf(current, bad), why });
        current = next;
        continue;
      }
      if (isTransient(e) && transientFailures < attempts - 1) {
        transientFailures++;
        opts.log.warn({ status, error: errorText(e), attempt: transientFailures }, 'posting the review failed transiently; checking whether GitHub stored it');
        await sleep(delay * 2 ** (transientFailures - 1));
        const left = await botReviews(octokit, opts.pr, opts.headSha, opts.bot);
        if (left.ofHead) {
          opts.log.info({ reviewId: left.ofHead.id }, 'GitHub stored the review despite the error; not posting it again');
          return { reviewId: left.ofHead.id, movedToBody, recovered: true, requests };
        }
        await deletePending(octokit, opts.pr, left.pending, opts.log);
        continue;
      }
      throw e;
    }
  }
}

import { REVIEW_MARKER, type ReviewComment, type ReviewPayload } from '../reporters/github-review.js';
import type { BotIdentity } from './identity.js';
import { isTransient, sleep, statusOf, type GitHubClient } from './octokit.js';
import type { PullRef } from './threads.js';

/** GitHub refuses a review body over 65,536 characters. */
const BODY_LIMIT = 65_000;

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

function where(c: ReviewComment): string {
  return c.start_line !== undefined ? `${c.path}:${c.start_line}-${c.line}` : `${c.path}:${c.line}`;
}

/** The rule line of a comment (`**[severity] rule** — message`) for the body listing. */
function headline(c: ReviewComment): string {
  return (c.body.split('\n')[0] ?? '').trim();
}

/** Inserts a section before the review marker, keeping the body under GitHub's limit. */
export function addToBody(body: string, section: string): string {
  const at = body.lastIndexOf(REVIEW_MARKER);
  const head = at >= 0 ? body.slice(0, at).replace(/\s+$/, '') : body;
  const tail = at >= 0 ? body.slice(at) : '';
  let text = `${head}\n\n${section}\n\n${tail}`.replace(/\n+$/, '');
  if (text.length > BODY_LIMIT) {
    const room = Math.max(0, BODY_LIMIT - head.length - tail.length - 100);
    text = `${head}\n\n${section.slice(0, room)}\n…(cut to fit GitHub's limit)\n\n${tail}`;
  }
  return text;
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

/** The payload with some comments moved into the body, so no finding is lost with them. */
export function moveToBody(payload: ReviewPayload, moved: readonly ReviewComment[], why: string): ReviewPayload {
  if (moved.length === 0) return payload;
  const set = new Set(moved);
  const lines = [
    '### Refused inline by GitHub',
    '',
    `GitHub did not accept ${moved.length === 1 ? 'this comment' : `these ${moved.length} comments`} on the diff (${why}); ${moved.length === 1 ? 'it is' : 'they are'} listed here instead.`,
    '',
    ...moved.map((c) => `- \`${where(c)}\` — ${headline(c)}`),
  ];
  return { ...payload, body: addToBody(payload.body, lines.join('\n')), comments: payload.comments.filter((c) => !set.has(c)) };
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
  let requests = 0;
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
        const next = moveToBody(current, bad, errorText(e));
        if (left.ofHead) {
          // The review exists without its comments: complete its body rather than post a second one.
          const all = moveToBody(current, [...current.comments], errorText(e));
          requests++;
          await octokit.rest.pulls.updateReview({ ...opts.pr, review_id: left.ofHead.id, body: all.body });
          return { reviewId: left.ofHead.id, movedToBody: movedToBody + current.comments.length, recovered: true, requests };
        }
        if (current.comments.length === 0) throw e;
        movedToBody += current.comments.length - next.comments.length;
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

import { markerFingerprint, markerKey } from '../reporters/github-review.js';
import type { BotIdentity } from './identity.js';
import type { GitHubClient } from './octokit.js';

// The marker format belongs to the reporter that writes it (reporters/github-review.ts).
export { markerFingerprint, markerKey };

/** A review thread the bot opened with a fingerprinted comment. */
export interface BotThread {
  /** GraphQL node id; null when the threads came from the REST fallback. */
  id: string | null;
  isResolved: boolean;
  path: string;
  fingerprint: string;
  /** REST id of the bot's first comment. */
  rootCommentId: number;
  /** Someone other than the bot wrote in the thread: it is theirs now, never touched. */
  othersReplied: boolean;
}

export interface PullRef {
  owner: string;
  repo: string;
  pull_number: number;
}

interface ThreadsPage {
  repository: {
    pullRequest: {
      reviewThreads: {
        pageInfo: { hasNextPage: boolean; endCursor: string | null };
        nodes: Array<{
          id: string;
          isResolved: boolean;
          path: string;
          comments: {
            totalCount: number;
            nodes: Array<{ databaseId: number | null; body: string; author: { __typename: string; login: string } | null }>;
          };
        }>;
      };
    } | null;
  } | null;
}

export const THREADS_QUERY = `query ($owner: String!, $repo: String!, $number: Int!, $cursor: String) {
  repository(owner: $owner, name: $repo) {
    pullRequest(number: $number) {
      reviewThreads(first: 100, after: $cursor) {
        pageInfo { hasNextPage endCursor }
        nodes {
          id
          isResolved
          path
          comments(first: 100) {
            totalCount
            nodes { databaseId body author { __typename login } }
          }
        }
      }
    }
  }
}`;

export const RESOLVE_MUTATION = `mutation ($threadId: ID!) {
  resolveReviewThread(input: { threadId: $threadId }) {
    thread { id isResolved }
  }
}`;

async function threadsViaGraphql(octokit: GitHubClient, pr: PullRef, bot: BotIdentity): Promise<BotThread[]> {
  const out: BotThread[] = [];
  let cursor: string | null = null;
  for (let page = 0; page < 100; page++) {
    const data: ThreadsPage = await octokit.graphql<ThreadsPage>(THREADS_QUERY, { owner: pr.owner, repo: pr.repo, number: pr.pull_number, cursor });
    const threads = data.repository?.pullRequest?.reviewThreads;
    if (!threads) break;
    for (const t of threads.nodes) {
      const [first, ...rest] = t.comments.nodes;
      if (!first || !bot.isBot(first.author?.login, first.author?.__typename)) continue;
      const fp = markerFingerprint(first.body);
      if (!fp || first.databaseId === null) continue;
      out.push({
        id: t.id,
        isResolved: t.isResolved,
        path: t.path,
        fingerprint: fp,
        rootCommentId: first.databaseId,
        // Replies past the first 100 are unseen: assume someone answered rather than close their thread.
        othersReplied: t.comments.totalCount > t.comments.nodes.length || rest.some((c) => !bot.isBot(c.author?.login, c.author?.__typename)),
      });
    }
    if (!threads.pageInfo.hasNextPage) break;
    cursor = threads.pageInfo.endCursor;
  }
  return out;
}

async function threadsViaRest(octokit: GitHubClient, pr: PullRef, bot: BotIdentity): Promise<BotThread[]> {
  const comments = await octokit.paginate(octokit.rest.pulls.listReviewComments, { ...pr, per_page: 100 });
  const replies = new Map<number, Array<(typeof comments)[number]>>();
  for (const c of comments) {
    if (c.in_reply_to_id) replies.set(c.in_reply_to_id, [...(replies.get(c.in_reply_to_id) ?? []), c]);
  }
  const out: BotThread[] = [];
  for (const c of comments) {
    if (c.in_reply_to_id || !bot.isBot(c.user?.login, c.user?.type)) continue;
    const fp = markerFingerprint(c.body);
    if (!fp) continue;
    out.push({
      id: null,
      isResolved: false,
      path: c.path,
      fingerprint: fp,
      rootCommentId: c.id,
      othersReplied: (replies.get(c.id) ?? []).some((r) => !bot.isBot(r.user?.login, r.user?.type)),
    });
  }
  return out;
}

/**
 * The bot's fingerprinted threads on the PR. GraphQL gives thread ids (needed to resolve) and the
 * resolved state; where it is unavailable the REST comments stand in and stale comments are
 * deleted instead of resolved.
 */
export async function loadBotThreads(octokit: GitHubClient, pr: PullRef, bot: BotIdentity, log?: { warn(o: unknown, m?: string): void }): Promise<BotThread[]> {
  try {
    return await threadsViaGraphql(octokit, pr, bot);
  } catch (e) {
    log?.warn({ err: e }, 'review threads unavailable through GraphQL; using REST review comments');
    return threadsViaRest(octokit, pr, bot);
  }
}

export interface StaleOutcome {
  resolved: number;
  deleted: number;
  keptForReplies: number;
  failed: number;
}

/**
 * Closes the bot's threads whose finding is gone: resolved through GraphQL, or the comment
 * deleted when threads are unavailable. A thread someone answered is left as it is.
 */
export async function closeStaleThreads(
  octokit: GitHubClient,
  pr: PullRef,
  threads: readonly BotThread[],
  isStale: (t: BotThread) => boolean,
  log?: { warn(o: unknown, m?: string): void },
): Promise<StaleOutcome> {
  const out: StaleOutcome = { resolved: 0, deleted: 0, keptForReplies: 0, failed: 0 };
  for (const t of threads) {
    if (t.isResolved || !isStale(t)) continue;
    if (t.othersReplied) {
      out.keptForReplies++;
      continue;
    }
    try {
      if (t.id) {
        await octokit.graphql(RESOLVE_MUTATION, { threadId: t.id });
        out.resolved++;
      } else {
        await octokit.rest.pulls.deleteReviewComment({ owner: pr.owner, repo: pr.repo, comment_id: t.rootCommentId });
        out.deleted++;
      }
    } catch (e) {
      out.failed++;
      log?.warn({ err: e, thread: t.id, comment: t.rootCommentId }, 'could not close a stale review thread');
    }
  }
  return out;
}

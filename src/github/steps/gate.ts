import type { SkipReason } from '../../reporters/check-run.js';
import { readLive, type LiveState } from '../live.js';
import type { PullRequestEvent, ReviewJob } from '../job.js';

/** Step 1's answer: review (with what the live query said), or the reason not to. */
export type Gated = { go: true; live: LiveState | null } | { go: false; skip: SkipReason };

/** Why this event gets no review at all (before any API call), or null. */
function skipBeforeRead(e: PullRequestEvent): SkipReason | null {
  if (e.state !== 'open') return { kind: 'closed' };
  if (e.action === 'synchronize' && e.before && e.after && e.before === e.after) return { kind: 'same-head' };
  return null;
}

function moot(open: boolean, headSha: string, e: PullRequestEvent): SkipReason | null {
  if (!open) return { kind: 'closed-since' };
  if (headSha !== e.headSha) return { kind: 'superseded', head: headSha };
  return null;
}

/**
 * Step 1, gate: no writes. The job may run well after the webhook: a newer push (its own event is
 * queued behind this one) or a close makes this review moot, and its anchors would point into an
 * old diff. One read-only query says so and, for the App, which config files exist (the cache's key).
 */
export async function gate(job: ReviewJob): Promise<Gated> {
  const { octokit, log, event: e } = job;
  const early = skipBeforeRead(e);
  if (early) return { go: false, skip: early };
  let live: LiveState | null = null;
  try {
    live = await readLive(octokit, { owner: e.owner, repo: e.repo, number: e.number }, job.configCache !== undefined);
  } catch (err) {
    log.warn({ err }, 'could not read the pull request through GraphQL; asking REST');
  }
  let skip: SkipReason | null = null;
  if (live) skip = moot(live.open, live.headSha, e);
  else {
    try {
      const { data: pull } = await octokit.rest.pulls.get({ owner: e.owner, repo: e.repo, pull_number: e.number });
      skip = moot(pull.state === 'open', pull.head.sha, e);
    } catch (err) {
      // Not fatal by itself: if GitHub is really down, the steps below fail and the check run says so.
      log.warn({ err, deliveryId: e.deliveryId }, 'could not read the pull request; reviewing the event as delivered');
    }
  }
  return skip ? { go: false, skip } : { go: true, live };
}

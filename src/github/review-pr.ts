import { CHECKS } from '../../checks/registry.generated.js';
import { completeCheckRun, PendingCheckRun, skipText, type CheckRef, type SkipReason } from '../reporters/check-run.js';
import { IN_PROGRESS_AFTER_MS, type JobRun, type Outcome, type ReviewJob } from './job.js';
import { gate } from './steps/gate.js';
import { loadInputs } from './steps/load.js';
import { reviewInputs } from './steps/review.js';
import { plan } from './steps/plan.js';
import { publish } from './steps/publish.js';

export { IN_PROGRESS_AFTER_MS, type JobRun, type Outcome, type PullRequestEvent, type ReviewJob } from './job.js';

async function openRun(job: ReviewJob): Promise<JobRun> {
  const { octokit, log, event: e } = job;
  const ref: CheckRef = { owner: e.owner, repo: e.repo, headSha: e.headSha };
  const run = new PendingCheckRun(octokit, ref, log);
  const openAfter = job.inProgressAfterMs ?? IN_PROGRESS_AFTER_MS;
  if (openAfter <= 0) await run.start();
  else run.startAfter(openAfter);
  return { ref, settle: () => run.settle(), finish: async (done) => completeCheckRun(octokit, ref, await run.settle(), done) };
}

function skipped(job: ReviewJob, skip: SkipReason): Outcome {
  const reason = skipText(skip);
  job.log.info({ reason }, 'not reviewing');
  return { kind: 'skipped', reason, skip };
}

/**
 * One review of one push, in five steps (src/github/steps/): gate (is there anything to review:
 * the event, the pull request's state now) → load inputs (config, baseline, the diff, the files'
 * contents) → review (the CLI's pipeline, baseline, pass 7) → plan (the review payload and the
 * check run, as data) → publish (what earlier pushes posted, the review, stale threads, the check
 * run). Each step takes and gives typed values; only publish writes (besides the check run's
 * in-progress state, opened when the review takes long).
 */
export async function reviewPullRequest(job: ReviewJob): Promise<Outcome> {
  const { log, event: e } = job;
  const checks = job.checks ?? CHECKS;
  const gated = await gate(job);
  if (!gated.go) return skipped(job, gated.skip);
  const run = await openRun(job);
  try {
    const loaded = await loadInputs(job, gated.live, checks);
    if (loaded.kind === 'skip') {
      const outcome = skipped(job, loaded.skip);
      await run.finish(loaded.completion);
      return outcome;
    }
    if (loaded.kind === 'config-error') {
      await run.finish(loaded.completion);
      return { kind: 'config-error', message: loaded.message };
    }
    const reviewed = await reviewInputs(job, loaded.inputs, checks);
    const planned = plan(job, loaded.inputs, reviewed, checks);
    return await publish(job, run, loaded.inputs, planned);
  } catch (err) {
    const message = (err as Error).message?.split('\n')[0] ?? String(err);
    log.error({ err, deliveryId: e.deliveryId }, 'review failed');
    try {
      await run.finish({
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

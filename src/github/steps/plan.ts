import type { Finding } from '../../core/types.js';
import type { CheckDef } from '../../engine/check.js';
import { annotationsFor, conclusionFor, type Completion } from '../../reporters/check-run.js';
import { buildReview } from '../../reporters/github-review.js';
import { reportInput, type ReportInput } from '../../reporters/types.js';
import { activeChecks } from '../../review/pipeline.js';
import type { ReviewJob } from '../job.js';
import type { Inputs } from './load.js';
import type { Reviewed } from './review.js';

/** Step 4's result: what to say, as data. Publish decides what of it still needs saying on GitHub. */
export interface Planned {
  /** The one ReportInput of this review (the review payload is built from it again in publish, with what is already posted). */
  input: ReportInput;
  findings: Finding[];
  /** Paths whose review this push completed (a thread on another path of the diff says nothing either way). */
  reviewed: ReadonlySet<string>;
  /** The check run's completion. */
  checkRun: Completion;
  /** Rules that ran (for the log). */
  rules: number;
}

/** Step 4, plan: the report input once, the check run's conclusion, title and summary. No I/O. */
export function plan(job: ReviewJob, inputs: Inputs, reviewed: Reviewed, checks: readonly CheckDef[]): Planned {
  const { config } = inputs;
  const { out, baselined, notReviewed } = reviewed;
  const input = reportInput(out, { inlineCommentCap: config.inlineCommentCap, failOn: config.failOn, toolVersion: job.toolVersion });
  const findings = out.result.findings;
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
  const body = buildReview(input).body;
  return {
    input,
    findings,
    reviewed: new Set(out.result.files.filter((f) => f.skipped === undefined).map((f) => f.path)),
    checkRun: {
      conclusion,
      title,
      summary: extra.length ? `${body}\n\n${extra.join('\n\n')}` : body,
      annotations: annotationsFor(findings, config.failOn, config.failOnConfidence),
    },
    rules: activeChecks(config, checks).length,
  };
}

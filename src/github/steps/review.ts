import { applyBaseline } from '../../adopt/baseline.js';
import { unreviewable } from '../../adopt/skips.js';
import type { FileReport } from '../../core/types.js';
import type { CheckDef } from '../../engine/check.js';
import { review, type ReviewOutput } from '../../review/pipeline.js';
import { MAX_PR_FILES } from '../pr-diff.js';
import { indexNote } from '../../index/note.js';
import type { ReviewJob } from '../job.js';
import type { Inputs } from './load.js';

/** Step 3's result: the pipeline's output with the baseline applied and pass 7 run. */
export interface Reviewed {
  out: ReviewOutput;
  /** Findings the baseline left out. */
  baselined: number;
  /** strict: files that could not be reviewed (they fail the check). */
  notReviewed: FileReport[];
}

/** Step 3, review: the CLI's pipeline over the loaded inputs, the baseline, pass 7 for the inline findings. */
export async function reviewInputs(job: ReviewJob, inputs: Inputs, checks: readonly CheckDef[]): Promise<Reviewed> {
  const { config, diff, baseline } = inputs;
  const withCompile = job.compile === true && config.compile.enabled;
  const out = await review({
    diff,
    config,
    scope: 'added',
    checks,
    readFile: inputs.readFile,
    readFiles: inputs.readFiles,
    skipped: inputs.skipped,
    // The service picks the compiler (NVCC, default: nvcc on PATH), never the repository's config.
    compile: withCompile ? { settings: { ...config.compile, nvcc: process.env.NVCC ?? 'nvcc' } } : undefined,
  });
  out.result.errors.push(...inputs.errors);
  const { indexReader } = inputs;
  if (out.result.index) job.log.info({ index: out.result.index, requests: indexReader?.requests() ?? 0, cachedBlobs: indexReader?.cached() ?? 0 }, 'project index');
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
    const { runPass7Isolated } = await import('../../review/pass7.js');
    const p7 = await runPass7Isolated(out, { config, checks, compile: job.compile === true, budgetMs: config.rewrite.timeBudgetMs, select: (f) => f.inHunk !== false });
    job.log.info({ pass7: p7 }, 'pass 7');
  }
  const notReviewed = config.strict ? unreviewable(out.result.files) : [];
  if (inputs.truncated) {
    out.result.errors.push({ message: `GitHub lists at most ${MAX_PR_FILES.toLocaleString('en-US')} files of a pull request; files past that were not reviewed.` });
  }
  return { out, baselined, notReviewed };
}

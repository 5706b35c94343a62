import type { DiffModel } from '../diff/model.js';
import type { ReviewResult, Severity } from '../core/types.js';
import type { ReviewOutput } from '../review/file.js';

/**
 * Everything a reporter needs. Findings arrive already filtered (scope, minimum severity) and
 * annotated by the diff filter (onAddedLine, inHunk, suggestionFits); reporters decide where each
 * goes and never drop one silently.
 */
export interface ReportInput {
  result: ReviewResult;
  diff: DiffModel;
  /** Post-change lines of a file (index 0 = line 1) where known; in diff-only mode lines outside hunks are undefined. */
  fileLines(path: string): ReadonlyArray<string | undefined> | undefined;
  inlineCommentCap: number;
  failOn: Severity | 'none';
  toolVersion: string;
}

/** The one way a ReportInput is made from a review (the CLI and the App both use it). */
export function reportInput(out: ReviewOutput, opts: { inlineCommentCap: number; failOn: Severity | 'none'; toolVersion: string }): ReportInput {
  return {
    result: out.result,
    diff: out.diff,
    fileLines: (p) => out.fileLines.get(p),
    inlineCommentCap: opts.inlineCommentCap,
    failOn: opts.failOn,
    toolVersion: opts.toolVersion,
  };
}

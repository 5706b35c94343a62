import type { ResolvedConfig } from '../config/schema.js';
import { pathGate, type PathGate } from '../diff/gate.js';
import { parseUnifiedDiff, type DiffFile } from '../diff/model.js';
import type { FileReport, Finding, ReviewError, UnusedSuppression } from '../core/types.js';
import { FileTimeout, isolatedRunner } from './pool.js';
import { treesDone } from '../engine/release.js';
import { applyCompileEvidence } from '../compile/apply.js';
import { compileEvidence } from '../compile/evidence.js';
import { diffScopeEnabled } from '../sources/diff-scope.js';
import type { FileReader } from '../core/types.js';
import { withProjectIndex } from '../index/review-hook.js';
import { readOnce } from '../index/readers.js';
import { activeChecks, reviewFileContent, type FileDone, type ReviewOptions, type ReviewOutput } from './file.js';

// The per-file review lives in file.ts; its names stay importable from here.
export type { FileReader };
export { activeChecks, MAX_NESTING, nestingDepth, reviewFileContent, type FileDone, type ReviewOptions, type ReviewOutput, type Scope } from './file.js';


/** The whole review: diff → sources → checks → precedence and suppressions → diff annotations. */
export async function review(opts: ReviewOptions): Promise<ReviewOutput> {
  const diff = typeof opts.diff === 'string' ? parseUnifiedDiff(opts.diff) : opts.diff;
  const compiled = opts.compile ? await compileEvidence(diff, opts.config, opts.readFile, opts.compile) : null;
  // Project index hook (src/index/review-hook.ts): facts of imported / included files reach the models via the config.
  const readFile = opts.readFile && opts.readFiles && opts.config.index.enabled ? readOnce(opts.readFile) : opts.readFile;
  const indexed = await withProjectIndex(diff, compiled ? { ...opts.config, compileEvidence: compiled.kernels } : opts.config, opts.readFiles, performance.now() + opts.config.limits.reviewTimeoutMs, readFile);
  const config = indexed.config;
  const scope = opts.scope ?? 'added';
  const checks = activeChecks(config, opts.checks);
  const gate = pathGate(config);

  const findings: Finding[] = [];
  const files: FileReport[] = [];
  const errors: ReviewError[] = [];
  const fileLines = new Map<string, Array<string | undefined>>();
  const unused: UnusedSuppression[] = [];

  // The index took part of the review budget (src/index/review-hook.ts).
  const reviewDeadline = performance.now() + config.limits.reviewTimeoutMs - (indexed.stats?.ms ?? 0);
  const reports: FileReport[] = diff.files.map((f) => ({ path: f.path, language: null, parseCoverage: 1, sources: [], findings: 0 }));
  const done: Array<FileDone | null> = diff.files.map(() => null);
  files.push(...reports);
  let next = 0;
  let index = 0;
  /**
   * One lane takes the next file in diff order until none is left. The main thread is one lane;
   * with a worker pool (see workerLanes) each worker adds lanes, and the files are analysed in
   * parallel. Results are merged in diff order, so the output does not depend on who ran what.
   */
  const isolated = isolatedRunner({ ...opts, config }, scope, reviewDeadline);
  const lane = async (run: ((file: DiffFile, content: string | Uint8Array | null) => Promise<FileDone>) | null): Promise<void> => {
    while (next < diff.files.length) {
      const i = next++;
      const file = diff.files[i];
      opts.onProgress?.(++index, diff.files.length, file.path);
      // Trees are freed by native finalizers, which only run once the event loop turns.
      await new Promise<void>((r) => setImmediate(r));
      const reason = skipReason(file, gate, opts.skipped, reviewDeadline, config);
      if (reason) {
        reports[i].skipped = reason;
        if (reason.startsWith('review time budget')) reports[i].timedOut = true;
        continue;
      }
      try {
        const content = readFile ? await readFile(file.path) : null;
        if (run) done[i] = await run(file, content);
        else {
          const d = reviewFileContent(file, content, config, checks, scope, undefined, opts.diffScope ?? diffScopeEnabled());
          done[i] = d;
          treesDone(d.sources.reduce((a, s) => a + s.bytes, 0));
        }
      } catch (e) {
        if (e instanceof FileTimeout) {
          const what = e.message === 'review' ? `review time budget (${config.limits.reviewTimeoutMs / 1000} s)` : `file time budget (${config.limits.fileTimeoutMs / 1000} s)`;
          done[i] = { language: null, skipped: `${what} exceeded: analysis stopped`, timedOut: true, errors: [{ path: file.path, message: `${what} exceeded: analysis stopped, findings of this file unknown` }], findings: [], sources: [], parseCoverage: 1 };
        } else {
          done[i] = { language: null, skipped: `internal error: ${(e as Error).message}`, errors: [{ path: file.path, message: (e as Error).message }], findings: [], sources: [], parseCoverage: 1 };
        }
      }
    }
  };
  // Isolated: every file in a worker (the main thread only reads files and merges); else one lane here.
  await Promise.all(isolated ? Array.from({ length: isolated.threads }, () => lane(isolated.run)) : [lane(null)]);
  for (let i = 0; i < diff.files.length; i++) {
    const d = done[i];
    if (!d) continue;
    const report = reports[i];
    errors.push(...d.errors);
    report.language = d.language;
    if (d.skipped) {
      report.skipped = d.skipped;
      if (d.timedOut) report.timedOut = true;
      continue;
    }
    report.sources = d.sources;
    report.parseCoverage = d.parseCoverage;
    // Checks stopped at the budget: the findings of this file are partial.
    if (d.timedOut) report.timedOut = true;
    fileLines.set(report.path, d.lines ?? []);
    report.findings = d.findings.length;
    findings.push(...d.findings);
    for (const u of d.unusedSuppressions ?? []) unused.push({ path: report.path, ...u });
  }
  findings.sort((a, b) => a.path.localeCompare(b.path) || a.line - b.line || a.column - b.column || a.ruleId.localeCompare(b.ruleId));
  const extra = { ...(unused.length ? { unusedSuppressions: unused } : {}), ...(indexed.stats ? { index: indexed.stats } : {}) };
  if (compiled) {
    const kept = applyCompileEvidence(findings, compiled, config.targets);
    return { result: { findings: kept, files, errors, ...extra, compile: compiled }, diff, fileLines };
  }
  return { result: { findings, files, errors, ...extra }, diff, fileLines };
}

function skipReason(file: DiffFile, gate: PathGate, skipped: ReadonlyMap<string, string> | undefined, reviewDeadline: number, config: ResolvedConfig): string | null {
  const reason = gate.skip(file) ?? skipped?.get(file.path) ?? null;
  if (reason) return reason;
  if (performance.now() > reviewDeadline) return `review time budget (${config.limits.reviewTimeoutMs / 1000} s) exhausted before this file`;
  return null;
}

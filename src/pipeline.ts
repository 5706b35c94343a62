import picomatch from 'picomatch';
import type { ResolvedConfig } from './config/schema.js';
import { parseUnifiedDiff, hunkNewText, hunkOfLine, type DiffFile, type DiffModel } from './diff/model.js';
import type { CheckDef } from './engine/check.js';
import { applyPrecedence } from './engine/precedence.js';
import { alsoAt, groupFindings } from './engine/group.js';
import { CHECKS } from './engine/registry.generated.js';
import { runChecks, type RawFinding } from './engine/runner.js';
import { isSuppressed, scanSuppressions, unknownSuppressionIds, unusedSuppressions } from './engine/suppress.js';
import { atLeast, type FileReport, type Finding, type Language, type ReviewError, type ReviewResult, type UnusedSuppression } from './engine/types.js';
import { usesVocabulary } from './analysis/syntax.js';
import { buildSources, type Unit } from './sources/build.js';
import { FileTimeout, isolatedRunner } from './engine/pool.js';
import { treesDone } from './engine/release.js';
import { detectLanguage } from './sources/detect.js';
import { ParseTimeout } from './sources/parsers.js';
import type { Source } from './sources/types.js';
import type { SyntaxNode } from './engine/types.js';
import { applyCompileEvidence } from './compile/apply.js';
import { compileEvidence, type CompileOptions } from './compile/evidence.js';
import { withProjectIndex } from './index/review-hook.js';
import { readOnce } from './index/readers.js';
import type { BatchReader } from './index/types.js';

export type Scope = 'added' | 'hunk' | 'file';

/** Reads a post-change file (repo checkout, GitHub contents at the head SHA); null when absent. */
export type FileReader = (path: string) => Promise<string | Uint8Array | null>;

export interface ReviewOptions {
  /** A unified diff, or an already parsed one. */
  diff: string | DiffModel;
  config: ResolvedConfig;
  scope?: Scope;
  readFile?: FileReader;
  /** Reads other files of the repository in batches, for the project index (src/index/); none: no index. */
  readFiles?: BatchReader;
  checks?: readonly CheckDef[];
  /**
   * Worker threads besides the main thread for large reviews (src/engine/pool.ts); default: one
   * fewer than the cores, at most 3. GPU_REVIEW_WORKERS overrides it.
   */
  workers?: number;
  /**
   * Compile the changed kernels with nvcc at base and head first (src/compile/): their figures
   * reach the checks through `config.compileEvidence`, and the result carries them in `compile`.
   */
  compile?: CompileOptions;
  /** Called after each file (1-based index). */
  onProgress?: (index: number, total: number, path: string) => void;
}

export interface ReviewOutput {
  result: ReviewResult;
  diff: DiffModel;
  /** Post-change lines per path (index 0 = line 1); lines the review never saw are undefined. */
  fileLines: Map<string, Array<string | undefined>>;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Checks that apply under a config, in pass order (the review procedure runs pass 1 → 6). */
export function activeChecks(config: ResolvedConfig, all: readonly CheckDef[] = CHECKS): CheckDef[] {
  return all
    .filter((c) => {
      const o = config.rules[c.id];
      if (o === 'off' || !config.passes[c.pass]) return false;
      // A rule that reads nvcc's figures runs whenever the review compiled (`--compile` asks for them).
      if (c.status === 'preview' && !config.enablePreview && o === undefined && !(c.requires === 'compiler' && config.compileEvidence)) return false;
      // A retired rule runs only when the config names it.
      if (c.status === 'retired' && o === undefined) return false;
      return true;
    })
    .map((c) => {
      const o = config.rules[c.id];
      return o && o !== 'on' && o !== 'off' ? { ...c, severity: o } : c;
    })
    .sort((a, b) => a.pass - b.pass);
}

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
  const include = config.include.length ? picomatch(config.include, { dot: true }) : null;
  const exclude = config.exclude.length ? picomatch(config.exclude, { dot: true }) : null;

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
      const reason = skipReason(file, include, exclude, reviewDeadline, config);
      if (reason) {
        reports[i].skipped = reason;
        if (reason.startsWith('review time budget')) reports[i].timedOut = true;
        continue;
      }
      try {
        const content = readFile ? await readFile(file.path) : null;
        if (run) done[i] = await run(file, content);
        else {
          const d = reviewFileContent(file, content, config, checks, scope);
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

function skipReason(file: DiffFile, include: picomatch.Matcher | null, exclude: picomatch.Matcher | null, reviewDeadline: number, config: ResolvedConfig): string | null {
  if (file.status === 'deleted') return 'deleted';
  if (file.binary) return 'binary file';
  if (file.modeOnly) return 'mode change only';
  if (include && !include(file.path)) return 'not matched by config "include"';
  if (exclude && exclude(file.path)) return 'matched by config "exclude"';
  if (file.problem) return file.problem;
  if (performance.now() > reviewDeadline) return `review time budget (${config.limits.reviewTimeoutMs / 1000} s) exhausted before this file`;
  return null;
}

/** What one file contributes to the review: plain data, so a worker thread can send it back. */
export interface FileDone {
  language: Language | null;
  skipped?: string;
  /** Skipped because a time budget ran out (the check run must not say "no issues"). */
  timedOut?: boolean;
  sources: FileReport['sources'];
  parseCoverage: number;
  lines?: Array<string | undefined>;
  /** Annotated by the diff filter, in the order the review reports them. */
  findings: Finding[];
  errors: ReviewError[];
  unusedSuppressions?: Array<{ line: number; column: number; ruleId: string }>;
}

/**
 * The per-file part of review() after the file was read (`content`: the post-change file, or null
 * to review the diff hunks alone). Synchronous and self-contained, so it also runs in a worker.
 */
/**
 * `budgetMs` (default: the file budget) is the time this file may take: the parse is bounded by it
 * natively and checks stop being started once it is spent, and the file is then reported timed out.
 * A worker's hard stop comes only a grace period later (pool.ts), for code that ignores it.
 */
export function reviewFileContent(file: DiffFile, content: string | Uint8Array | null, config: ResolvedConfig, checks: CheckDef[], scope: Scope, budgetMs?: number): FileDone {
  const errors: ReviewError[] = [];
  const deadline = performance.now() + Math.max(1, Math.min(config.limits.fileTimeoutMs, budgetMs ?? Number.POSITIVE_INFINITY));
  try {
    const got = reviewFile(file, content, config, checks, errors, deadline);
    if (got.skipped) return { language: got.language, skipped: got.skipped, sources: [], parseCoverage: 1, findings: [], errors };
    const sources = got.sources.map((s) => ({ language: s.language, label: s.label, parseCoverage: round(s.parseCoverage), bytes: s.text.length }));
    const total = got.sources.reduce((a, s) => a + s.text.length, 0);
    const parseCoverage = total ? round(got.sources.reduce((a, s) => a + s.parseCoverage * s.text.length, 0) / total) : 1;
    const done: FileDone = { language: got.language, sources, parseCoverage, lines: got.lines, findings: annotate(got.findings, file, scope), errors };
    if (got.unusedSuppressions?.length) done.unusedSuppressions = got.unusedSuppressions;
    if (performance.now() > deadline) done.timedOut = true;
    return done;
  } catch (e) {
    if (!(e instanceof ParseTimeout)) errors.push({ path: file.path, message: (e as Error).message });
    const skipped = e instanceof ParseTimeout ? `parse exceeded ${config.limits.fileTimeoutMs} ms` : `internal error: ${(e as Error).message}`;
    return { language: null, skipped, ...(e instanceof ParseTimeout ? { timedOut: true } : {}), sources: [], parseCoverage: 1, findings: [], errors };
  }
}

function round(x: number): number {
  return Math.round(x * 10000) / 10000;
}

interface FileOutcome {
  language: Language | null;
  skipped?: string;
  sources: Source[];
  findings: Finding[];
  lines: Array<string | undefined>;
  unusedSuppressions?: Array<{ line: number; column: number; ruleId: string }>;
}

function reviewFile(file: DiffFile, got: string | Uint8Array | null, config: ResolvedConfig, checks: CheckDef[], errors: ReviewError[], deadline: number): FileOutcome {
  let full: string | null = null;
  if (got !== null) {
    if (typeof got === 'string') full = got;
    else {
      if (got.length > config.limits.maxFileBytes) return tooLarge(got.length, config);
      try {
        full = utf8.decode(got);
      } catch {
        return { language: null, skipped: 'not valid UTF-8', sources: [], findings: [], lines: [] };
      }
    }
  }
  const hunkText = file.hunks.map((h) => hunkNewText(h).text).join('\n');
  if (full !== null && !matchesDiff(full, file)) {
    errors.push({ path: file.path, message: 'the file read from the repository does not match the diff; reviewed the diff hunks only' });
    full = null;
  }
  if (full === null && hunkText.includes('\uFFFD')) {
    return { language: null, skipped: 'not valid UTF-8', sources: [], findings: [], lines: [] };
  }
  const detected = detectLanguage(file.path, full ?? hunkText, config.vocab.kernel_macros);
  if (!detected.language) return { language: null, skipped: detected.reason, sources: [], findings: [], lines: [] };
  const language = detected.language;

  const units: Unit[] = [];
  let lines: Array<string | undefined>;
  if (full !== null) {
    if (full.length > config.limits.maxFileBytes) return tooLarge(full.length, config);
    const text = full.replace(/\r\n/g, '\n');
    units.push({ text, firstLine: 1, label: 'file', wholeFile: true });
    lines = text.split('\n');
  } else {
    lines = [];
    for (const h of file.hunks) {
      const { text, firstLine } = hunkNewText(h);
      text.split('\n').forEach((l, i) => {
        if (i < h.newLines) lines[firstLine - 1 + i] = l;
      });
      const whole = file.status === 'added' && file.hunks.length === 1 && h.newStart <= 1;
      units.push({ text, firstLine, label: whole ? 'file' : `hunk ${h.header.match(/@@[^@]*@@/)?.[0] ?? ''}`.trim(), wholeFile: whole });
    }
    const bytes = units.reduce((a, u) => a + u.text.length, 0);
    if (bytes > config.limits.maxFileBytes) return tooLarge(bytes, config);
  }
  const longest = lines.reduce((m, l) => Math.max(m, l?.length ?? 0), 0);
  if (longest > config.limits.maxLineLength) {
    return { language, skipped: `a line of ${longest} characters (over ${config.limits.maxLineLength}): minified or generated`, sources: [], findings: [], lines: [] };
  }

  const applicable = checks.filter((c) => c.languages.some((l) => l === language || (language === 'python' && l === 'nvrtc-in-python')));
  const projectVocabulary = usesVocabulary(full ?? hunkText, config.vocab.vibespatial_helpers);
  const sources: Source[] = [];
  const raw: RawFinding[] = [];
  for (const unit of units) {
    const built = buildSources(file.path, language, unit, Math.max(1, deadline - performance.now()));
    // The analyses walk trees recursively; a generated expression thousands of levels deep (a
    // Python concatenation of 2,000 string literals) would overflow the stack in most of them.
    for (const s of built) {
      const depth = nestingDepth(s.root, MAX_NESTING);
      if (depth > MAX_NESTING) return { language, skipped: `syntax nested over ${MAX_NESTING} levels deep (${s.label}): generated code`, sources: [], findings: [], lines: [] };
    }
    sources.push(...built);
    for (const s of built) {
      const forSource = applicable.filter((c) => c.languages.includes(s.language) && (!c.needsProjectVocabulary || projectVocabulary || (c.vocabularyOptIn?.(config, s.language, full ?? hunkText) ?? false)));
      if (forSource.length) raw.push(...runChecks(s, forSource, config, errors, deadline, projectVocabulary));
    }
  }
  const sup = scanSuppressions(lines);
  const known = new Set([...CHECKS.map((c) => c.id), ...checks.map((c) => c.id), '*']);
  if (sup.all.length) {
    for (const u of unknownSuppressionIds(sup, known)) errors.push({ path: file.path, message: `line ${u.line}: unknown rule id "${u.id}" in a gpu-review: ignore[…] comment` });
  }
  const visible = raw.filter((f) => !isSuppressed(sup, f.ruleId, f.line) && atLeast(f.severity, config.minSeverity));
  const ranked = groupFindings(applyPrecedence(visible, new Map(checks.map((c) => [c.id, c]))));
  // Identical code flagged twice in one function keeps distinct, still line-independent, identities.
  const seen = new Map<string, number>();
  const out: Finding[] = ranked
    .sort((a, b) => a.line - b.line || a.column - b.column)
    .map((f) => {
      const n = (seen.get(f.fingerprint) ?? 0) + 1;
      seen.set(f.fingerprint, n);
      const { sourceLabel: _s, startIndex: _a, endIndex: _b, scope: _c, groupKey: _g, subject: _j, ...finding } = f;
      return { ...finding, fingerprint: n > 1 ? `${f.fingerprint}-${n}` : f.fingerprint };
    });
  // An unknown id is an error of its own, not also an unused suppression.
  const unusedSup = unusedSuppressions(sup).filter((u) => known.has(u.id)).map((u) => ({ line: u.line, column: u.column, ruleId: u.id }));
  return { language, sources, findings: out, lines, ...(unusedSup.length ? { unusedSuppressions: unusedSup } : {}) };
}

/** Deepest nesting the analyses are given; real code stays far below it. */
export const MAX_NESTING = 1500;

/** Depth of the tree (iterative: the tree being measured is the one too deep to recurse on); stops past `limit`. */
export function nestingDepth(root: SyntaxNode, limit: number): number {
  let max = 0;
  const stack: Array<[SyntaxNode, number]> = [[root, 1]];
  while (stack.length) {
    const [n, d] = stack.pop()!;
    if (d > max) {
      max = d;
      if (max > limit) return max;
    }
    for (const c of n.namedChildren) stack.push([c, d + 1]);
  }
  return max;
}

/** A post-change file from the wrong tree would put every anchor on the wrong line. */
function matchesDiff(full: string, file: DiffFile): boolean {
  const lines = full.replace(/\r\n/g, '\n').split('\n');
  for (const h of file.hunks) {
    for (const l of h.lines) {
      if (l.newLine !== undefined && (lines[l.newLine - 1] ?? '').replace(/\r$/, '') !== l.text) return false;
    }
  }
  return true;
}

function tooLarge(bytes: number, config: ResolvedConfig): FileOutcome {
  return { language: null, skipped: `file too large (${(bytes / 1e6).toFixed(1)} MB, limit ${(config.limits.maxFileBytes / 1e6).toFixed(1)} MB)`, sources: [], findings: [], lines: [] };
}

/** Diff filter: where each finding sits relative to the diff, then the scope decides what is reported. */
function annotate(findings: Finding[], file: DiffFile, scope: Scope): Finding[] {
  const out: Finding[] = [];
  const isAdded = (m: { line: number; endLine: number }) => {
    for (let l = m.line; l <= m.endLine; l++) if (file.added.has(l)) return true;
    return false;
  };
  for (const f of findings) {
    // A grouped finding is anchored at its first site the diff adds (else: in a hunk), so the
    // comment lands on the change that brought the hazard in.
    if (f.members) {
      const at = f.members.find(isAdded) ?? f.members.find((m) => file.commentable.has(m.line));
      if (at && at.line !== f.line) {
        Object.assign(f, { line: at.line, endLine: at.endLine, column: at.column, endColumn: at.endColumn, message: `${at.message} ${alsoAt(at, f.members.filter((m) => m !== at))}` });
        if (at.fix) f.fix = at.fix;
        else delete f.fix;
      }
    }
    const added = f.members ? f.members.some(isAdded) : isAdded(f);
    f.onAddedLine = added;
    f.inHunk = file.commentable.has(f.line);
    if (f.fix?.replace) {
      const { startLine, endLine } = f.fix.replace;
      const h = hunkOfLine(file, startLine);
      let fits = h >= 0 && h === hunkOfLine(file, endLine);
      for (let l = startLine; fits && l <= endLine; l++) if (!file.commentable.has(l)) fits = false;
      f.suggestionFits = fits && f.fix.kind === 'safe';
    } else {
      f.suggestionFits = false;
    }
    if (scope === 'added' && !added) continue;
    if (scope === 'hunk' && !f.inHunk) continue;
    out.push(f);
  }
  return out;
}

/**
 * One file's review, after it was read: sources → checks → suppressions, precedence, grouping →
 * diff annotations. Synchronous and self-contained (a worker thread runs it too); the registry's
 * ids are the only thing it knows of the checks. The orchestration over many files is pipeline.ts.
 */
import type { ResolvedConfig } from '../config/schema.js';
import type { CompileOptions } from '../compile/evidence.js';
import type { FileReader } from '../core/types.js';
import { hunkNewText, type DiffFile, type DiffModel } from '../diff/model.js';
import { annotateFindings, inScope, type Scope } from '../diff/filter.js';
import type { CheckDef } from '../engine/check.js';
import { applyPrecedence } from '../engine/precedence.js';
import { groupFindings } from '../engine/group.js';
import { CHECKS } from '../../checks/registry.generated.js';
import { runChecks, type RawFinding } from '../engine/runner.js';
import { isSuppressed, scanSuppressions, unknownSuppressionIds, unusedSuppressions } from '../engine/suppress.js';
import { atLeast, type FileReport, type Finding, type Language, type ReviewError, type ReviewResult, type SyntaxNode } from '../core/types.js';
import { usesVocabulary } from '../analysis/syntax.js';
import { buildSources, type Unit } from '../sources/build.js';
import { detectLanguage } from '../sources/detect.js';
import { ParseTimeout } from '../sources/parsers.js';
import { textForScope } from '../sources/diff-scope.js';
import type { Source } from '../sources/types.js';
import type { BatchReader } from '../index/types.js';

export type { Scope };
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
   * Worker threads besides the main thread for large reviews (src/review/pool.ts); default: one
   * fewer than the cores, at most 3. GPU_REVIEW_WORKERS overrides it.
   */
  workers?: number;
  /**
   * Compile the changed kernels with nvcc at base and head first (src/compile/): their figures
   * reach the checks through `config.compileEvidence`, and the result carries them in `compile`.
   */
  compile?: CompileOptions;
  /**
   * With scope 'added': blank the function bodies the added lines do not need before the parse
   * (src/sources/diff-scope.ts). Default: on unless GPU_REVIEW_DIFF_SCOPE=0.
   */
  diffScope?: boolean;
  /**
   * Files the caller already knows it cannot review, with the reason (the App: too large or
   * binary as GitHub reported them). Carried as data next to the diff, never written into it.
   */
  skipped?: ReadonlyMap<string, string>;
  /** Called after each file (1-based index). */
  onProgress?: (index: number, total: number, path: string) => void;
}

export interface ReviewOutput {
  result: ReviewResult;
  diff: DiffModel;
  /**
   * Post-change lines per path (index 0 = line 1); lines the review never saw are undefined.
   * Filled for the files that have findings (the reporters and pass 7 read no other); empty for the rest.
   */
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

/** What one file contributes to the review: plain data, so a worker thread can send it back. */
export interface FileDone {
  language: Language | null;
  skipped?: string;
  /** Skipped because a time budget ran out (the check run must not say "no issues"). */
  timedOut?: boolean;
  sources: FileReport['sources'];
  parseCoverage: number;
  /** Post-change lines (see ReviewOutput.fileLines); only when the file has findings. */
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
export function reviewFileContent(file: DiffFile, content: string | Uint8Array | null, config: ResolvedConfig, checks: CheckDef[], scope: Scope, budgetMs?: number, diffScope = true): FileDone {
  const errors: ReviewError[] = [];
  const deadline = performance.now() + Math.max(1, Math.min(config.limits.fileTimeoutMs, budgetMs ?? Number.POSITIVE_INFINITY));
  try {
    const got = reviewFile(file, content, config, checks, errors, deadline, diffScope ? scope : 'file');
    if (got.skipped) return { language: got.language, skipped: got.skipped, sources: [], parseCoverage: 1, findings: [], errors };
    const sources = got.sources.map((s) => ({ language: s.language, label: s.label, parseCoverage: round(s.parseCoverage), bytes: s.text.length }));
    const total = got.sources.reduce((a, s) => a + s.text.length, 0);
    const parseCoverage = total ? round(got.sources.reduce((a, s) => a + s.parseCoverage * s.text.length, 0) / total) : 1;
    const findings = inFileScope(got.findings, file, scope);
    // The lines serve the reporters and pass 7, which read them only where a finding is: a file
    // without findings sends none back (a 3,000-file review kept every file's text twice).
    const done: FileDone = { language: got.language, sources, parseCoverage, ...(findings.length ? { lines: got.lines } : {}), findings, errors };
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

function reviewFile(file: DiffFile, got: string | Uint8Array | null, config: ResolvedConfig, checks: CheckDef[], errors: ReviewError[], deadline: number, scope: Scope = 'file'): FileOutcome {
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
    // Cost follows the diff: bodies the added lines do not need are blanked (sources/diff-scope.ts).
    units.push({ text: textForScope(text, language, file.added, scope, true), firstLine: 1, label: 'file', wholeFile: true });
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

/** The diff filter annotates every finding; the scope then decides which of them this review reports. */
function inFileScope(findings: Finding[], file: DiffFile, scope: Scope): Finding[] {
  annotateFindings(findings, file);
  return findings.filter((f) => inScope(f, scope));
}

import picomatch from 'picomatch';
import type { ResolvedConfig } from './config/schema.js';
import { parseUnifiedDiff, hunkNewText, hunkOfLine, type DiffFile, type DiffModel } from './diff/model.js';
import type { CheckDef } from './engine/check.js';
import { applyPrecedence } from './engine/precedence.js';
import { CHECKS } from './engine/registry.generated.js';
import { runChecks, type RawFinding } from './engine/runner.js';
import { isSuppressed, scanSuppressions } from './engine/suppress.js';
import { atLeast, type FileReport, type Finding, type Language, type ReviewError, type ReviewResult } from './engine/types.js';
import { usesVocabulary } from './analysis/syntax.js';
import { buildSources, type Unit } from './sources/build.js';
import { detectLanguage } from './sources/detect.js';
import { ParseTimeout } from './sources/parsers.js';
import type { Source } from './sources/types.js';

export type Scope = 'added' | 'hunk' | 'file';

/** Reads a post-change file (repo checkout, GitHub contents at the head SHA); null when absent. */
export type FileReader = (path: string) => Promise<string | Uint8Array | null>;

export interface ReviewOptions {
  /** A unified diff, or an already parsed one. */
  diff: string | DiffModel;
  config: ResolvedConfig;
  scope?: Scope;
  readFile?: FileReader;
  checks?: readonly CheckDef[];
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
      if (c.status === 'preview' && !config.enablePreview && o === undefined) return false;
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
  const config = opts.config;
  const scope = opts.scope ?? 'added';
  const checks = activeChecks(config, opts.checks);
  const include = config.include.length ? picomatch(config.include, { dot: true }) : null;
  const exclude = config.exclude.length ? picomatch(config.exclude, { dot: true }) : null;

  const findings: Finding[] = [];
  const files: FileReport[] = [];
  const errors: ReviewError[] = [];
  const fileLines = new Map<string, Array<string | undefined>>();

  let index = 0;
  const reviewDeadline = performance.now() + config.limits.reviewTimeoutMs;
  for (const file of diff.files) {
    opts.onProgress?.(++index, diff.files.length, file.path);
    // Trees are freed by native finalizers, which only run once the event loop turns.
    await new Promise<void>((r) => setImmediate(r));
    const report: FileReport = { path: file.path, language: null, parseCoverage: 1, sources: [], findings: 0 };
    files.push(report);
    const skip = (reason: string) => {
      report.skipped = reason;
    };
    if (file.status === 'deleted') { skip('deleted'); continue; }
    if (file.binary) { skip('binary file'); continue; }
    if (file.modeOnly) { skip('mode change only'); continue; }
    if (include && !include(file.path)) { skip('not matched by config "include"'); continue; }
    if (exclude && exclude(file.path)) { skip('matched by config "exclude"'); continue; }
    if (file.problem) { skip(file.problem); continue; }
    if (performance.now() > reviewDeadline) { skip(`review time budget (${config.limits.reviewTimeoutMs / 1000} s) exhausted before this file`); continue; }
    try {
      const got = await reviewFile(file, opts.readFile, config, checks, errors);
      if (got.skipped) { skip(got.skipped); report.language = got.language; continue; }
      report.language = got.language;
      report.sources = got.sources.map((s) => ({ language: s.language, label: s.label, parseCoverage: round(s.parseCoverage), bytes: s.text.length }));
      const total = got.sources.reduce((a, s) => a + s.text.length, 0);
      report.parseCoverage = total ? round(got.sources.reduce((a, s) => a + s.parseCoverage * s.text.length, 0) / total) : 1;
      fileLines.set(file.path, got.lines);
      const annotated = annotate(got.findings, file, scope);
      report.findings = annotated.length;
      findings.push(...annotated);
    } catch (e) {
      skip(e instanceof ParseTimeout ? `parse exceeded ${config.limits.fileTimeoutMs} ms` : `internal error: ${(e as Error).message}`);
      if (!(e instanceof ParseTimeout)) errors.push({ path: file.path, message: (e as Error).message });
    }
  }
  findings.sort((a, b) => a.path.localeCompare(b.path) || a.line - b.line || a.column - b.column || a.ruleId.localeCompare(b.ruleId));
  return { result: { findings, files, errors }, diff, fileLines };
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
}

async function reviewFile(file: DiffFile, readFile: FileReader | undefined, config: ResolvedConfig, checks: CheckDef[], errors: ReviewError[]): Promise<FileOutcome> {
  let full: string | null = null;
  if (readFile) {
    const got = await readFile(file.path);
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
  const deadline = performance.now() + config.limits.fileTimeoutMs;
  for (const unit of units) {
    const built = buildSources(file.path, language, unit, Math.max(1, deadline - performance.now()));
    sources.push(...built);
    for (const s of built) {
      const forSource = applicable.filter((c) => c.languages.includes(s.language) && (!c.needsProjectVocabulary || projectVocabulary || (c.vocabularyOptIn?.(config, s.language, full ?? hunkText) ?? false)));
      if (forSource.length) raw.push(...runChecks(s, forSource, config, errors, deadline));
    }
  }
  const sup = scanSuppressions(lines);
  const visible = raw.filter((f) => !isSuppressed(sup, f.ruleId, f.line) && atLeast(f.severity, config.minSeverity));
  const ranked = applyPrecedence(visible, new Map(checks.map((c) => [c.id, c])));
  // Identical code flagged twice in one function keeps distinct, still line-independent, identities.
  const seen = new Map<string, number>();
  const out: Finding[] = ranked
    .sort((a, b) => a.line - b.line || a.column - b.column)
    .map((f) => {
      const n = (seen.get(f.fingerprint) ?? 0) + 1;
      seen.set(f.fingerprint, n);
      const { sourceLabel: _s, startIndex: _a, endIndex: _b, scope: _c, ...finding } = f;
      return { ...finding, fingerprint: n > 1 ? `${f.fingerprint}-${n}` : f.fingerprint };
    });
  return { language, sources, findings: out, lines };
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
  for (const f of findings) {
    let added = false;
    for (let l = f.line; l <= f.endLine; l++) if (file.added.has(l)) added = true;
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

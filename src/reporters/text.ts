import { compileLines } from '../compile/render.js';
import { shownRewrite, verificationLabel } from '../rewrite/present.js';
import type { Finding, Severity } from '../core/types.js';
import { compareByLocation, plural, replacementLines, severityBreakdown } from './common.js';
import type { ReportInput } from './types.js';
import { skippedLine } from '../adopt/skips.js';
import { indexNote } from '../index/note.js';

export interface TextOptions {
  color: boolean;
}

type Style = 'bold' | 'dim' | 'red' | 'green' | 'yellow' | 'blue' | 'magenta' | 'cyan' | 'gray';

const ANSI: Record<Style, [number, number]> = {
  bold: [1, 22],
  dim: [2, 22],
  red: [31, 39],
  green: [32, 39],
  yellow: [33, 39],
  blue: [34, 39],
  magenta: [35, 39],
  cyan: [36, 39],
  gray: [90, 39],
};

// util.styleText is not used: from Node 22 on it drops colours by itself when stdout is not a
// TTY, and whether to colour is the caller's decision (opts.color), e.g. FORCE_COLOR in CI logs.
type Paint = (s: string, ...styles: Style[]) => string;

function painter(color: boolean): Paint {
  if (!color) return (s) => s;
  return (s, ...styles) => styles.reduce((acc, st) => `\u001b[${ANSI[st][0]}m${acc}\u001b[${ANSI[st][1]}m`, s);
}

const SEVERITY_STYLE: Record<Severity, Style[]> = {
  critical: ['bold', 'magenta'],
  high: ['bold', 'red'],
  'medium-high': ['yellow'],
  medium: ['yellow'],
  'low-medium': ['cyan'],
  low: ['blue'],
};

const CONTEXT = 2;
/** Longer flagged ranges show their first and last lines only. */
const MAX_FLAGGED = 6;

/** Keeps tabs so the underline stays under the code whatever the terminal's tab width. */
function padLike(text: string, width: number): string {
  let out = '';
  for (let i = 0; i < width; i++) out += text[i] === '\t' ? '\t' : ' ';
  return out;
}

/** Single-line spans get a full underline; longer ones mark where they start and where they end. */
function underline(f: Finding, line: number, text: string): { from: number; to: number } | null {
  const firstCode = text.search(/\S/);
  if (firstCode < 0 || (line !== f.line && line !== f.endLine)) return null;
  const from = line === f.line ? Math.max(0, f.column - 1) : firstCode;
  const lineEnd = text.replace(/\s+$/, '').length;
  let to = line === f.endLine ? Math.max(0, f.endColumn - 1) : lineEnd;
  if (to > lineEnd) to = lineEnd;
  if (to <= from) to = from + 1;
  return { from, to };
}

function codeFrame(f: Finding, lines: ReadonlyArray<string | undefined> | undefined, paint: Paint): string[] {
  if (!lines) return [];
  const endLine = Math.max(f.line, f.endLine);
  const wanted: Array<number | 'gap'> = [];
  const first = Math.max(1, f.line - CONTEXT);
  const last = Math.min(lines.length, endLine + CONTEXT);
  for (let l = first; l <= last; l++) {
    const flagged = l >= f.line && l <= endLine;
    if (endLine - f.line + 1 > MAX_FLAGGED && flagged && l > f.line + 2 && l < endLine - 1) {
      if (wanted[wanted.length - 1] !== 'gap') wanted.push('gap');
      continue;
    }
    wanted.push(l);
  }
  const known = wanted.filter((l): l is number => l !== 'gap' && lines[l - 1] !== undefined);
  if (known.length === 0) return [];
  const width = String(Math.max(...known)).length;
  const out: string[] = [];
  let previous = 0;
  for (const l of wanted) {
    if (l === 'gap') {
      out.push(paint(`    ${' '.repeat(width)} ⋮`, 'gray'));
      previous = 0;
      continue;
    }
    const text = lines[l - 1];
    // Diff-only mode knows the hunks, not the lines between them.
    if (text === undefined) continue;
    if (previous && l !== previous + 1 && out.length) out.push(paint(`    ${' '.repeat(width)} ⋮`, 'gray'));
    previous = l;
    const flagged = l >= f.line && l <= endLine;
    const gutter = `  ${flagged ? '>' : ' '} ${String(l).padStart(width)} │ `;
    out.push(`${flagged ? paint(gutter, 'bold') : paint(gutter, 'gray')}${text}`);
    if (flagged) {
      const mark = underline(f, l, text);
      if (mark) {
        const blank = `    ${' '.repeat(width)} │ `;
        out.push(`${paint(blank, 'gray')}${padLike(text, mark.from)}${paint('^'.repeat(mark.to - mark.from), ...SEVERITY_STYLE[f.severity])}`);
      }
    }
  }
  return out;
}

function fixLines(f: Finding, lines: ReadonlyArray<string | undefined> | undefined, paint: Paint, shared: ReadonlyMap<string, string>): string[] {
  const fix = f.fix;
  if (!fix) return [];
  if (!fix.replace) return [shared.get(f.ruleId) === fix.description ? `  fix: ${paint(`see ${f.ruleId} under "rules" below`, 'dim')}` : `  fix: ${fix.description}`];
  const { startLine, endLine } = fix.replace;
  const added = replacementLines(fix);
  const out = [`  ${fix.kind === 'safe' ? 'suggested change' : 'fix'}: ${fix.description}`];
  out.push(paint(`    @@ -${startLine},${endLine - startLine + 1} +${startLine},${added.length} @@`, 'cyan'));
  for (let l = startLine; l <= endLine; l++) {
    const old = lines?.[l - 1];
    out.push(paint(old === undefined ? `    - (line ${l} not available)` : `    -${old}`, 'red'));
  }
  for (const a of added) out.push(paint(`    +${a}`, 'green'));
  return out;
}

function rewriteLines(f: Finding, paint: Paint): string[] {
  const rw = shownRewrite(f);
  if (!rw || (rw.suggestion && f.fix?.replace)) return [];
  const out = [`  ${paint('proposed rewrite:', 'dim')} ${rw.description} (${verificationLabel(rw)})`];
  for (const l of rw.diff.split('\n').slice(2)) out.push(paint(`    ${l}`, l.startsWith('+') ? 'green' : l.startsWith('-') ? 'red' : l.startsWith('@@') ? 'cyan' : 'dim'));
  return out;
}

function renderFinding(f: Finding, input: ReportInput, paint: Paint, shared: ReadonlyMap<string, string>): string[] {
  const lines = input.fileLines(f.path);
  const out = [
    `${paint(`${f.path}:${f.line}:${f.column}`, 'bold')}  ${paint(f.severity, ...SEVERITY_STYLE[f.severity])}  ${paint(f.ruleId, 'dim')}  ${f.message}`,
    ...codeFrame(f, lines, paint),
    ...fixLines(f, lines, paint, shared),
    ...rewriteLines(f, paint),
  ];
  if (f.also && f.also.length > 0) out.push(`  ${paint('also matched:', 'dim')} ${f.also.join(', ')}`);
  return out;
}

/** A rule's prose fix that two or more of its findings share: printed once, under the rule. */
function sharedFixes(findings: readonly Finding[]): Map<string, string> {
  const counts = new Map<string, Map<string, number>>();
  for (const f of findings) {
    if (!f.fix || f.fix.replace) continue;
    const byText = counts.get(f.ruleId) ?? new Map<string, number>();
    byText.set(f.fix.description, (byText.get(f.fix.description) ?? 0) + 1);
    counts.set(f.ruleId, byText);
  }
  const out = new Map<string, string>();
  for (const [rule, byText] of counts) {
    const [text, n] = [...byText].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))[0];
    if (n >= 2) out.set(rule, text);
  }
  return out;
}

/** Each rule's explanation once per run: why, source, documentation, and its shared fix. */
function rulesSection(findings: readonly Finding[], shared: ReadonlyMap<string, string>, paint: Paint): string[] {
  const byRule = new Map<string, Finding[]>();
  for (const f of findings) {
    const list = byRule.get(f.ruleId);
    if (list) list.push(f);
    else byRule.set(f.ruleId, [f]);
  }
  if (byRule.size === 0) return [];
  const out = [paint('rules:', 'bold')];
  for (const [rule, list] of [...byRule].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))) {
    const f = list[0];
    out.push(`  ${paint(rule, 'bold')} (${plural(list.length, 'finding')})`);
    if (f.why) out.push(`    ${f.why}`);
    out.push(`    ${paint('source:', 'dim')} ${f.citation}${f.docUrl ? paint(`  (${f.docUrl})`, 'dim') : ''}`);
    const fix = shared.get(rule);
    if (fix) out.push(`    ${paint('fix:', 'dim')} ${fix}`);
  }
  return out;
}

/**
 * Terminal report: each finding with a code frame, its source and any fix, then skipped files,
 * errors and a one-line summary. Colour only when asked for; the exit code is the CLI's business.
 */
export function renderText(input: ReportInput, opts: TextOptions): string {
  const paint = painter(opts.color);
  const { findings, files, errors } = input.result;
  const blocks: string[] = [];
  const shared = sharedFixes(findings);
  for (const f of [...findings].sort(compareByLocation)) blocks.push(renderFinding(f, input, paint, shared).join('\n'));
  const rules = rulesSection(findings, shared, paint);
  if (rules.length) blocks.push(rules.join('\n'));

  if (input.result.compile) blocks.push([paint('compiler evidence:', 'bold'), ...compileLines(input.result.compile, 'text')].join('\n'));
  const skipped = files.filter((f) => f.skipped !== undefined);
  // One line, not one per non-GPU file: counts by reason, naming only files that could not be reviewed.
  const skippedSummary = skippedLine(files);
  if (skippedSummary) blocks.push(paint(skippedSummary, 'dim'));
  // Project index bound reached (src/index/review-hook.ts).
  const indexStopped = indexNote(input.result.index);
  if (indexStopped) blocks.push(paint(indexStopped, 'dim'));
  if (errors.length > 0) {
    blocks.push(
      [paint('errors:', 'bold', 'red'), ...errors.map((e) => `  ${e.path ? `${e.path}: ` : ''}${e.message}`)].join('\n'),
    );
  }

  const unused = input.result.unusedSuppressions ?? [];
  if (unused.length > 0) {
    blocks.push([paint('unused suppressions:', 'bold'), ...unused.map((u) => `  ${u.path}:${u.line}:${u.column}: gpu-review: ignore[${u.ruleId}] silenced nothing`)].join('\n'));
  }

  const reviewed = new Set([...files.filter((f) => f.skipped === undefined).map((f) => f.path), ...findings.map((f) => f.path)]);
  const breakdown = findings.length ? ` (${severityBreakdown(findings)})` : '';
  const onlyDeletes = files.length > 0 && files.every((f) => f.skipped === 'deleted');
  const summary = onlyDeletes
    ? `the diff only deletes files (${plural(files.length, 'file')}): nothing to review`
    : `${plural(findings.length, 'finding')}${breakdown} in ${plural(reviewed.size, 'file')}; ${plural(skipped.length, 'file')} skipped`;
  blocks.push(paint(summary, 'bold'));
  return `${blocks.join('\n\n')}\n`;
}

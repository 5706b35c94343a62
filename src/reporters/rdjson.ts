import { severityRank } from '../core/types.js';
import type { Finding, Severity } from '../core/types.js';
import { PROJECT_URL, compareByLocation, isApplicableFix, replacementLines } from './common.js';
import type { ReportInput } from './types.js';

/** reviewdog's Reviewdog Diagnostic Format (reviewdog/proto/rdf/reviewdog.proto), JSON form. */
export type RdSeverity = 'ERROR' | 'WARNING' | 'INFO';

export interface RdPosition {
  line: number;
  column?: number;
}

export interface RdRange {
  start: RdPosition;
  end?: RdPosition;
}

export interface RdSource {
  name: string;
  url?: string;
}

export interface RdDiagnostic {
  message: string;
  location: { path: string; range: RdRange };
  severity: RdSeverity;
  source: RdSource;
  code: { value: string; url?: string };
  suggestions?: Array<{ range: RdRange; text: string }>;
}

export interface RdDiagnosticResult {
  source: RdSource;
  severity?: RdSeverity;
  diagnostics: RdDiagnostic[];
}

export function rdSeverity(s: Severity): RdSeverity {
  if (severityRank(s) <= severityRank('high')) return 'ERROR';
  if (severityRank(s) <= severityRank('medium')) return 'WARNING';
  return 'INFO';
}

const RD_ORDER: RdSeverity[] = ['ERROR', 'WARNING', 'INFO'];

/**
 * rdf columns count UTF-8 bytes (reviewdog.proto: "column number, starting at 1 (byte count in
 * UTF-8)"); findings count UTF-16 code units, as tree-sitter reports them for JS strings. Without
 * the line's text (diff-only review of a line outside the hunks) the column is left as it is.
 */
export function utf8Column(line: string | undefined, column: number): number {
  if (line === undefined || column <= 1) return Math.max(1, column);
  return Buffer.byteLength(line.slice(0, column - 1), 'utf8') + 1;
}

function diagnostic(f: Finding, source: RdSource, lines: ReadonlyArray<string | undefined> | undefined): RdDiagnostic {
  const endLine = Math.max(f.line, f.endLine);
  const start = { line: f.line, column: utf8Column(lines?.[f.line - 1], Math.max(1, f.column)) };
  const endCol = utf8Column(lines?.[endLine - 1], Math.max(1, f.endColumn));
  // rdf ranges end exclusively, like ours; an empty one-line span would point at nothing.
  const endColumn = endLine === f.line ? Math.max(start.column + 1, endCol) : endCol;
  const d: RdDiagnostic = {
    message: [f.message, `Source: ${f.citation}`, f.why].filter(Boolean).join('\n'),
    location: { path: f.path, range: { start, end: { line: endLine, column: endColumn } } },
    severity: rdSeverity(f.severity),
    source,
    code: f.docUrl ? { value: f.ruleId, url: f.docUrl } : { value: f.ruleId },
  };
  if (isApplicableFix(f)) {
    const { startLine, endLine: fixEnd } = f.fix.replace;
    // Line-only positions make the range linewise and inclusive of the end line, which is how
    // reviewdog turns a suggestion into a GitHub suggestion block; it also moves the comment
    // onto these lines when they differ from the diagnostic's.
    d.suggestions = [{ range: { start: { line: startLine }, end: { line: fixEnd } }, text: replacementLines(f.fix).join('\n') }];
  }
  return d;
}

/** reviewdog's rdjson: one DiagnosticResult, for `reviewdog -f=rdjson`. */
export function renderRdjson(input: ReportInput, opts: { sourceUrl?: string } = {}): string {
  const source: RdSource = { name: 'gpu-review', url: opts.sourceUrl ?? PROJECT_URL };
  const diagnostics = [...input.result.findings].sort(compareByLocation).map((f) => diagnostic(f, source, input.fileLines(f.path)));
  const result: RdDiagnosticResult = { source, diagnostics };
  const worst = RD_ORDER.find((s) => diagnostics.some((d) => d.severity === s));
  if (worst) result.severity = worst;
  // Key order as in the proto, so diffs of two reports stay readable.
  const ordered = { source: result.source, ...(result.severity ? { severity: result.severity } : {}), diagnostics };
  return `${JSON.stringify(ordered, null, 2)}\n`;
}

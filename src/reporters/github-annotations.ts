import { sarifLevel } from './sarif.js';
import type { Finding, Severity } from '../core/types.js';
import { compareBySeverity, oneLine, plural, severityBreakdown } from './common.js';
import type { ReportInput } from './types.js';

/**
 * GitHub Actions workflow commands (`::error file=…,line=…::message`): each finding becomes an
 * annotation on the run and, for files in a pull request's diff, on the "Files changed" tab.
 * Most severe first, because GitHub shows only the first 10 errors and 10 warnings of a step.
 */
export type AnnotationLevel = 'error' | 'warning' | 'notice';

/** The same three bands as SARIF's levels (sarif.ts), in the workflow-command spelling. */
export function annotationLevel(s: Severity): AnnotationLevel {
  const l = sarifLevel(s);
  return l === 'note' ? 'notice' : l;
}

/** Message data: `%`, CR and LF are escaped (toolkit/core's escapeData). */
export function escapeData(s: string): string {
  return s.replace(/%/g, '%25').replace(/\r/g, '%0D').replace(/\n/g, '%0A');
}

/** Property values: additionally `:` and `,`, which delimit the properties (toolkit/core's escapeProperty). */
export function escapeProperty(s: string): string {
  return escapeData(s).replace(/:/g, '%3A').replace(/,/g, '%2C');
}

export function annotationCommand(f: Finding): string {
  const props: Array<[string, string | number]> = [
    ['file', f.path],
    ['line', f.line],
    ['endLine', Math.max(f.line, f.endLine)],
  ];
  // Columns only on one-line spans: GitHub ignores them (or misplaces the mark) across lines.
  if (f.endLine <= f.line) {
    props.push(['col', Math.max(1, f.column)]);
    props.push(['endColumn', Math.max(f.column + 1, f.endColumn)]);
  }
  props.push(['title', `gpu-review ${f.ruleId} (${f.severity})`]);
  const body = `${oneLine(f.message)}\nSource: ${f.citation}\n${f.docUrl}`;
  return `::${annotationLevel(f.severity)} ${props.map(([k, v]) => `${k}=${escapeProperty(String(v))}`).join(',')}::${escapeData(body)}`;
}

/** One command per finding, errors of the review as `::error::`, then a plain summary line. */
export function renderGithubAnnotations(input: ReportInput, extra: string[] = []): string {
  const { findings, errors } = input.result;
  const lines = [...findings].sort(compareBySeverity).map(annotationCommand);
  for (const e of errors) {
    const props = [...(e.path ? [`file=${escapeProperty(e.path)}`] : []), `title=${escapeProperty('gpu-review could not review a file')}`];
    lines.push(`::error ${props.join(',')}::${escapeData(e.message)}`);
  }
  const breakdown = findings.length ? ` (${severityBreakdown(findings)})` : '';
  lines.push(`gpu-review: ${plural(findings.length, 'finding')}${breakdown}`);
  lines.push(...extra);
  return `${lines.join('\n')}\n`;
}

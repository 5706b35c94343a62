import { SEVERITIES, severityRank } from '../core/types.js';
import type { Finding, Fix, Severity } from '../core/types.js';

/** Home of the project; the same base the rule docs live under. */
export const PROJECT_URL = 'https://github.com/gpu-review/gpu-review';

/** Reading order: file, then position; ties broken so output never depends on engine order. */
export function compareByLocation(a: Finding, b: Finding): number {
  return (
    cmp(a.path, b.path) ||
    a.line - b.line ||
    a.column - b.column ||
    severityRank(a.severity) - severityRank(b.severity) ||
    cmp(a.ruleId, b.ruleId) ||
    cmp(a.fingerprint, b.fingerprint)
  );
}

/** Most severe first, then reading order. */
export function compareBySeverity(a: Finding, b: Finding): number {
  return severityRank(a.severity) - severityRank(b.severity) || compareByLocation(a, b);
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

export function countBySeverity(findings: readonly Finding[]): Record<Severity, number> {
  const counts = Object.fromEntries(SEVERITIES.map((s) => [s, 0])) as Record<Severity, number>;
  for (const f of findings) counts[f.severity]++;
  return counts;
}

/** "1 critical, 2 high" — only the severities that occur, most severe first. */
export function severityBreakdown(findings: readonly Finding[]): string {
  const counts = countBySeverity(findings);
  return SEVERITIES.filter((s) => counts[s] > 0)
    .map((s) => `${counts[s]} ${s}`)
    .join(', ');
}

export function plural(n: number, word: string, pluralWord = `${word}s`): string {
  return `${n} ${n === 1 ? word : pluralWord}`;
}

export { replacementLines } from '../core/fix.js';

/** A safe, concrete rewrite that a reviewer could apply with one click. */
export function isApplicableFix(f: Finding): f is Finding & { fix: Fix & { replace: NonNullable<Fix['replace']> } } {
  return f.fix?.kind === 'safe' && f.fix.replace !== undefined && f.confidence !== 'low';
}

/** A code fence longer than any run of backticks in `text`, and at least three long. */
export function fenceFor(text: string): string {
  let longest = 0;
  for (const run of text.match(/`+/g) ?? []) longest = Math.max(longest, run.length);
  return '`'.repeat(Math.max(3, longest + 1));
}

/** Floors, so 99.96% never shows as a reassuring 100.0%. */
export function formatPercent(share: number): string {
  const tenths = Math.floor(Math.max(0, Math.min(1, share)) * 1000);
  return `${(tenths / 10).toFixed(1)}%`;
}

/** One line of prose: list items and table cells break on a newline. */
export function oneLine(s: string): string {
  return s.replace(/\s*\r?\n\s*/g, ' ').trim();
}

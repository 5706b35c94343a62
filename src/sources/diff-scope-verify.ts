import type { Finding } from '../core/types.js';

/**
 * Helpers to prove the diff-scope masking (diff-scope.ts) changes no finding: a one-line-change
 * diff of a file, and a stable rendering of a review's findings to compare with and without it.
 */

/** A unified diff that changes line `line` (1-based) of `text` into itself, with 3 lines of context. */
export function oneLineDiff(path: string, text: string, line: number): string {
  const lines = text.replace(/\r\n/g, '\n').split('\n');
  if (lines.length > 1 && lines[lines.length - 1] === '') lines.pop();
  const at = Math.min(Math.max(1, line), lines.length) - 1;
  const lo = Math.max(0, at - 3);
  const hi = Math.min(lines.length - 1, at + 3);
  const body: string[] = [];
  for (let k = lo; k <= hi; k++) {
    if (k === at) body.push('-' + lines[k] + ' ', '+' + lines[k]);
    else body.push(' ' + lines[k]);
  }
  const n = hi - lo + 1;
  return `diff --git a/${path} b/${path}\n--- a/${path}\n+++ b/${path}\n@@ -${lo + 1},${n} +${lo + 1},${n} @@\n${body.join('\n')}\n`;
}

/** Everything a reporter shows of a finding, in review order. */
export function findingKeys(findings: readonly Finding[]): string[] {
  return findings.map((f) =>
    JSON.stringify([f.ruleId, f.line, f.column, f.endLine, f.endColumn, f.severity, f.message, f.fingerprint, f.onAddedLine, f.inHunk, f.suggestionFits, f.fix ?? null, (f.members ?? []).map((m) => [m.line, m.column, m.message])]),
  );
}

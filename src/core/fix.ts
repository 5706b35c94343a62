import type { Fix } from './types.js';

/**
 * The replacement lines of a fix; empty when the fix deletes its lines. A final newline ends the
 * last line rather than adding an empty one: a suggestion block and a SARIF/rdjson whole-line
 * region both stop before the last line's EOL, so counting it would insert a blank line.
 */
export function replacementLines(fix: Fix): string[] {
  const text = fix.replace?.text ?? '';
  if (text === '') return [];
  return text.replace(/\r?\n$/, '').split(/\r?\n/);
}

import { createTwoFilesPatch } from 'diff';
import type { SyntaxNode } from '../core/types.js';
import type { LineEdit } from './types.js';

/** Apply non-overlapping whole-line edits to `lines` (index 0 = line 1); returns new lines. */
export function applyEdits(lines: readonly string[], edits: readonly LineEdit[]): string[] {
  const sorted = [...edits].sort((a, b) => b.startLine - a.startLine || b.endLine - a.endLine);
  const out = [...lines];
  for (const e of sorted) {
    const repl = e.text === '' ? [] : e.text.split('\n');
    out.splice(e.startLine - 1, e.endLine - e.startLine + 1, ...repl);
  }
  return out;
}

/** True when two edits touch a common line (an insertion touches the gap before its line). */
export function overlaps(a: LineEdit, b: LineEdit): boolean {
  const ar: [number, number] = [a.startLine, Math.max(a.endLine, a.startLine - 0.5)];
  const br: [number, number] = [b.startLine, Math.max(b.endLine, b.startLine - 0.5)];
  return ar[0] <= br[1] && br[0] <= ar[1];
}

export function editsConflict(a: readonly LineEdit[], b: readonly LineEdit[]): boolean {
  return a.some((x) => b.some((y) => overlaps(x, y)));
}

/** Where line `line` (1-based, old numbering) lands after the edits, or null when an edit replaced it. */
export function mapLine(line: number, edits: readonly LineEdit[]): number | null {
  let shift = 0;
  for (const e of edits) {
    const n = e.text === '' ? 0 : e.text.split('\n').length;
    if (line >= e.startLine && line <= e.endLine) return null;
    if (line > e.endLine) shift += n - (e.endLine - e.startLine + 1);
  }
  return line + shift;
}

/** Unified diff of lines start..end before and after the edits (line numbers as in the file). */
export function unitDiff(path: string, lines: readonly string[], edits: readonly LineEdit[], start: number, end: number): string {
  const after = applyEdits(lines, edits);
  let delta = 0;
  for (const e of edits) delta += (e.text === '' ? 0 : e.text.split('\n').length) - (e.endLine - e.startLine + 1);
  const before = lines.slice(start - 1, end).join('\n') + '\n';
  const now = after.slice(start - 1, end + delta).join('\n') + '\n';
  const patch = createTwoFilesPatch(`a/${path}`, `b/${path}`, before, now, undefined, undefined, { context: 3 });
  // Hunk headers count from the unit; shift them to file lines.
  return patch
    .split('\n')
    .filter((l) => !l.startsWith('====='))
    .map((l) => l.replace(/^@@ -(\d+)(,\d+)? \+(\d+)(,\d+)? @@/, (_, a: string, b = '', c: string, d = '') => `@@ -${Number(a) + start - 1}${b} +${Number(c) + start - 1}${d} @@`))
    .join('\n')
    .trimEnd();
}

/** The whole source line(s) of a node with the node's text replaced. */
export function lineWith(lines: readonly string[], node: SyntaxNode, replacement: string): LineEdit {
  const sr = node.startPosition.row;
  const er = node.endPosition.row;
  const first = lines[sr] ?? '';
  const last = lines[er] ?? '';
  const text = first.slice(0, node.startPosition.column) + replacement + last.slice(node.endPosition.column);
  return { startLine: sr + 1, endLine: er + 1, text };
}

/** Several same-line-range replacements inside one node range, applied right to left. */
export function linesWith(lines: readonly string[], parts: ReadonlyArray<{ node: SyntaxNode; text: string }>): LineEdit {
  const sr = Math.min(...parts.map((p) => p.node.startPosition.row));
  const er = Math.max(...parts.map((p) => p.node.endPosition.row));
  const block = lines.slice(sr, er + 1).join('\n');
  const offset = (row: number, col: number) => {
    let o = 0;
    for (let r = sr; r < row; r++) o += (lines[r] ?? '').length + 1;
    return o + col;
  };
  let out = block;
  const sorted = [...parts].sort((a, b) => b.node.startIndex - a.node.startIndex);
  for (const p of sorted) {
    const s = offset(p.node.startPosition.row, p.node.startPosition.column);
    const e = offset(p.node.endPosition.row, p.node.endPosition.column);
    out = out.slice(0, s) + p.text + out.slice(e);
  }
  return { startLine: sr + 1, endLine: er + 1, text: out };
}

export function indentOf(line: string): string {
  return /^\s*/.exec(line)?.[0] ?? '';
}

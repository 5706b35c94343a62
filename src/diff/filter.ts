import type { Finding } from '../core/types.js';
import { alsoAt } from '../engine/group.js';
import { hunkOfLine, type DiffFile } from './model.js';

/** What a review reports: findings on added lines, anywhere in a hunk, or anywhere in the file. */
export type Scope = 'added' | 'hunk' | 'file';

/**
 * Diff filter: where each finding sits relative to the diff (`onAddedLine`, `inHunk`,
 * `suggestionFits`), set on the findings themselves; it never drops one. A grouped finding is
 * re-anchored at its first site the diff adds (else: in a hunk), so the comment lands on the
 * change that brought the hazard in. The caller applies the scope (`inScope`).
 */
export function annotateFindings(findings: readonly Finding[], file: DiffFile): void {
  const isAdded = (m: { line: number; endLine: number }) => {
    for (let l = m.line; l <= m.endLine; l++) if (file.added.has(l)) return true;
    return false;
  };
  for (const f of findings) {
    if (f.members) {
      const at = f.members.find(isAdded) ?? f.members.find((m) => file.commentable.has(m.line));
      if (at && at.line !== f.line) {
        Object.assign(f, { line: at.line, endLine: at.endLine, column: at.column, endColumn: at.endColumn, message: `${at.message} ${alsoAt(at, f.members.filter((m) => m !== at))}` });
        if (at.fix) f.fix = at.fix;
        else delete f.fix;
      }
    }
    f.onAddedLine = f.members ? f.members.some(isAdded) : isAdded(f);
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
  }
}

/** Whether an annotated finding is reported under a scope. */
export function inScope(f: Pick<Finding, 'onAddedLine' | 'inHunk'>, scope: Scope): boolean {
  if (scope === 'added') return f.onAddedLine === true;
  if (scope === 'hunk') return f.inHunk === true;
  return true;
}

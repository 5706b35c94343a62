import type { FileReport } from '../core/types.js';

/**
 * Skip reasons that mean "not GPU code, or not meant to be reviewed": everything else (too large,
 * minified, not UTF-8, timed out, unreadable, an internal error, a diff gone wrong) means a file
 * that should have been reviewed was not, which `strict` turns into a failure. Unknown reasons
 * count as not reviewed, so a new way to skip a file can never pass a strict gate silently.
 */
const BY_DESIGN: RegExp[] = [
  /^deleted$/,
  /^binary file$/,
  /^mode change only$/,
  /^not matched by config "include"$/,
  /^matched by config "exclude"$/,
  /^not a GPU source type\b/,
  /^C\+\+ without CUDA or LuisaCompute code$/,
];

export function skippedByDesign(reason: string): boolean {
  return BY_DESIGN.some((r) => r.test(reason));
}

/** Files a strict review fails on. */
export function unreviewable(files: readonly FileReport[]): FileReport[] {
  return files.filter((f) => f.skipped !== undefined && !skippedByDesign(f.skipped));
}

/** A reason without its figures, so that "file too large (3.1 MB, …)" groups with the others. */
export function reasonGroup(reason: string): string {
  if (/^not a GPU source type\b/.test(reason) || /^C\+\+ without CUDA/.test(reason)) return 'not GPU code';
  if (/^a line of \d+ characters/.test(reason)) return 'minified or generated';
  if (/^review time budget/.test(reason)) return 'review time budget exhausted';
  if (/^internal error/.test(reason)) return 'internal error';
  return reason.replace(/\s*\([^)]*\)/g, '').replace(/:.*$/, '').trim() || reason;
}

/**
 * One line: "12 files skipped: 9 not GPU code, 2 deleted, 1 file too large (kernels/big.cu)".
 * Files that could not be reviewed are named (the first five), the rest only counted. Null when
 * nothing was skipped.
 */
export function skippedLine(files: readonly FileReport[]): string | null {
  const skipped = files.filter((f) => f.skipped !== undefined);
  if (skipped.length === 0) return null;
  const groups = new Map<string, { n: number; named: string[] }>();
  for (const f of skipped) {
    const g = reasonGroup(f.skipped!);
    const e = groups.get(g) ?? { n: 0, named: [] };
    e.n++;
    if (!skippedByDesign(f.skipped!) && e.named.length < 5) e.named.push(f.path);
    groups.set(g, e);
  }
  const parts = [...groups.entries()]
    .sort((a, b) => b[1].n - a[1].n || (a[0] < b[0] ? -1 : 1))
    .map(([g, e]) => `${e.n} ${g}${e.named.length ? ` (${e.named.join(', ')}${e.n > e.named.length ? ', …' : ''})` : ''}`);
  return `${skipped.length} file${skipped.length === 1 ? '' : 's'} skipped: ${parts.join(', ')}`;
}

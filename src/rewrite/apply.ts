import { createTwoFilesPatch } from 'diff';
import { readFile, writeFile } from 'node:fs/promises';
import { isAbsolute, relative, resolve } from 'node:path';
import type { Finding } from '../core/types.js';
import { applyEdits, editsConflict } from './edit.js';
import type { LineEdit, Rewrite } from './types.js';

export interface FixPlan {
  path: string;
  rewrites: Rewrite[];
  /** Findings whose rewrite was left out because it overlaps one already chosen. */
  conflicts: number;
}

export function isRewrite(r: Finding['rewrite']): r is Rewrite {
  return r !== undefined && 'edits' in r;
}

/**
 * The fixes `--fix` applies: verified (or, without a compiler, re-parsed and re-reviewed)
 * rewrites; behaviour-preserving ones only unless `unsafe`. Overlapping rewrites: the first wins.
 */
export function planFixes(findings: readonly Finding[], unsafe: boolean): FixPlan[] {
  const byPath = new Map<string, FixPlan>();
  const seen = new Set<Rewrite>();
  for (const f of findings) {
    const rw = f.rewrite;
    if (!isRewrite(rw) || rw.verification.status === 'failed' || seen.has(rw)) continue;
    if (!rw.behaviourPreserving && !unsafe) continue;
    seen.add(rw);
    let plan = byPath.get(f.path);
    if (!plan) byPath.set(f.path, (plan = { path: f.path, rewrites: [], conflicts: 0 }));
    if (plan.rewrites.some((o) => JSON.stringify(o.edits) === JSON.stringify(rw.edits))) continue;
    if (plan.rewrites.some((o) => editsConflict(o.edits, rw.edits))) {
      plan.conflicts++;
      continue;
    }
    plan.rewrites.push(rw);
  }
  return [...byPath.values()].filter((p) => p.rewrites.length);
}

export interface FixResult {
  patch: string;
  applied: Array<{ path: string; rewrites: number }>;
  errors: Array<{ path: string; message: string }>;
  conflicts: number;
}

/**
 * Apply the plan to the files under `root` (or only build the unified diff with `dryRun`). A file
 * whose text on disk is not the text that was reviewed is left alone, with an error.
 */
export async function applyFixes(plans: readonly FixPlan[], reviewed: (path: string) => ReadonlyArray<string | undefined> | undefined, root: string, dryRun: boolean): Promise<FixResult> {
  const res: FixResult = { patch: '', applied: [], errors: [], conflicts: 0 };
  for (const plan of plans) {
    res.conflicts += plan.conflicts;
    const abs = resolve(root, plan.path);
    const rel = relative(root, abs);
    if (rel.startsWith('..') || isAbsolute(rel)) {
      res.errors.push({ path: plan.path, message: 'outside the repository' });
      continue;
    }
    let disk: string;
    try {
      disk = await readFile(abs, 'utf8');
    } catch {
      res.errors.push({ path: plan.path, message: 'cannot read the file to fix' });
      continue;
    }
    const crlf = disk.includes('\r\n');
    const text = crlf ? disk.replace(/\r\n/g, '\n') : disk;
    const lines = text.split('\n');
    const seen = reviewed(plan.path);
    if (!seen || seen.length !== lines.length || seen.some((l, i) => l !== lines[i])) {
      res.errors.push({ path: plan.path, message: 'the file on disk is not the reviewed version; not fixed' });
      continue;
    }
    const edits: LineEdit[] = plan.rewrites.flatMap((r) => r.edits);
    const fixed = applyEdits(lines, edits).join('\n');
    res.patch += createTwoFilesPatch(`a/${plan.path}`, `b/${plan.path}`, text, fixed, undefined, undefined, { context: 3 }).replace(/^=+\n/m, '').replace(/^Index:.*\n/m, '');
    if (!dryRun) await writeFile(abs, crlf ? fixed.replace(/\n/g, '\r\n') : fixed);
    res.applied.push({ path: plan.path, rewrites: plan.rewrites.length });
  }
  return res;
}

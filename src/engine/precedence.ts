import type { CheckDef } from './check.js';
import type { Finding } from '../core/types.js';
import { severityRank } from '../core/types.js';

/**
 * Catalog §2.4: one finding per code location (the most severe wins, the others are named in
 * `also`), and the fixed pairs where one rule supersedes another on overlapping code.
 *
 * A correctness finding (the code fails to compile, does not launch or computes a wrong result)
 * wins over every finding of another kind on its node whatever their severities, and a fixed
 * pair never drops one: a launch whose shared memory exceeds the device limit must not be hidden
 * behind the advice to take its block size from the occupancy API.
 */
export function applyPrecedence<F extends Finding>(findings: F[], checks: ReadonlyMap<string, CheckDef>): F[] {
  const byNode = new Map<string, F[]>();
  for (const f of findings) {
    const key = `${f.path}\0${f.line}:${f.column}-${f.endLine}:${f.endColumn}`;
    const list = byNode.get(key) ?? [];
    list.push(f);
    byNode.set(key, list);
  }
  let kept: F[] = [];
  for (const list of byNode.values()) {
    list.sort((a, b) => hardRank(a) - hardRank(b) || severityRank(a.severity) - severityRank(b.severity) || a.pass - b.pass || a.ruleId.localeCompare(b.ruleId));
    const [winner, ...rest] = list;
    const others = [...new Set(rest.map((r) => r.ruleId).filter((id) => id !== winner.ruleId))];
    if (others.length) winner.also = [...new Set([...(winner.also ?? []), ...others])];
    kept.push(winner);
  }
  const dropped = new Set<F>();
  for (const f of kept) {
    const sup = checks.get(f.ruleId)?.supersedes;
    if (!sup?.length) continue;
    for (const g of kept) {
      if (g === f || dropped.has(g) || !sup.includes(g.ruleId) || g.path !== f.path || hardRank(g) < hardRank(f)) continue;
      const sameSubject = 'subject' in f && 'subject' in g && !!f.subject && f.subject === g.subject;
      if ((g.line <= f.endLine && f.line <= g.endLine) || sameSubject) {
        dropped.add(g);
        f.also = [...new Set([...(f.also ?? []), g.ruleId])];
      }
    }
  }
  kept = kept.filter((f) => !dropped.has(f));
  return kept;
}

/** 0 for a correctness finding, 1 for performance, portability and maintainability advice. */
function hardRank(f: Finding): number {
  return f.kind === 'correctness' ? 0 : 1;
}

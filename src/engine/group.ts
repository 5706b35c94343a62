import type { RawFinding } from './runner.js';
import type { FindingMember } from '../core/types.js';
import { severityRank } from '../core/types.js';

const MAX_LISTED = 4;

/**
 * One finding per root cause. Sites of one rule that share a group key (runner.ts `groupOf`: the
 * same loop, function or value) become one finding anchored at the first site, with every site in
 * `members`. Its fingerprint names the group, not a site, so it survives sites being added or
 * removed. Runs per file after precedence, so each site already won or lost its own node.
 */
export function groupFindings<F extends RawFinding>(findings: F[]): F[] {
  // Each group keeps the output slot of its first site in input order.
  const groups = new Map<string, { slot: number; list: F[] }>();
  const out: F[] = [];
  for (const f of findings) {
    if (f.groupKey === null) {
      out.push(f);
      continue;
    }
    const key = `${f.ruleId}\0${f.path}\0${f.groupKey}`;
    const g = groups.get(key);
    if (g) g.list.push(f);
    else {
      groups.set(key, { slot: out.length, list: [f] });
      out.push(f);
    }
  }
  for (const { slot, list } of groups.values()) {
    if (list.length < 2) continue;
    list.sort((a, b) => a.line - b.line || a.column - b.column);
    out[slot] = mergeGroup(list);
  }
  return out;
}

function member(f: RawFinding): FindingMember {
  return { path: f.path, line: f.line, endLine: f.endLine, column: f.column, endColumn: f.endColumn, message: f.message, ...(f.fix ? { fix: f.fix } : {}) };
}

function mergeGroup<F extends RawFinding>(list: F[]): F {
  const [head, ...rest] = list;
  const worst = list.reduce((a, b) => (severityRank(b.severity) < severityRank(a.severity) ? b : a), head);
  const also = [...new Set(list.flatMap((f) => f.also ?? []))].filter((id) => id !== head.ruleId);
  const merged: F = { ...head, severity: worst.severity, members: list.map(member) };
  if (also.length) merged.also = also;
  merged.message = `${head.message} ${alsoAt(head, rest)}`;
  return merged;
}

/** "Also at lines 25, 26 (3 sites)." with columns only where two sites share a line. */
export function alsoAt(head: { line: number; column: number }, rest: ReadonlyArray<{ line: number; column: number }>): string {
  const all = [head, ...rest];
  const where = (m: { line: number; column: number }) => (all.filter((x) => x.line === m.line).length > 1 ? `${m.line}:${m.column}` : String(m.line));
  const shown = rest.slice(0, MAX_LISTED).map(where);
  const more = rest.length > MAX_LISTED ? ` and ${rest.length - MAX_LISTED} more` : '';
  return `Also at line${rest.length > 1 ? 's' : ''} ${shown.join(', ')}${more} (${all.length} sites).`;
}

import type { KernelEvidence } from './evidence.js';

// Kept apart from evidence.ts, which loads the parsers: rules import this, and the rule registry
// must load without tree-sitter (`--version`, `rules` work where the parser binary does not).
/** Spill bytes (stores + loads) of one side on the worst architecture; 0 for a side without figures. */
export function spillBytes(ev: KernelEvidence, side: 'base' | 'head'): number {
  return Math.max(0, ...ev.arches.map((a) => (a[side] ? a[side]!.spillStores + a[side]!.spillLoads : 0)));
}

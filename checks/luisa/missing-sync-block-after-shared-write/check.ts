import { luisaModel, type LuisaModel, type SharedAccess } from '../../../src/analysis/luisa.js';
import { quote } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

const BLOCKS = new Set(['compound_statement', 'translation_unit']);

function statementOf(n: SyntaxNode): SyntaxNode {
  let cur = n;
  while (cur.parent && !BLOCKS.has(cur.parent.type)) cur = cur.parent;
  return cur;
}

/** `a` and `b` sit in different arms of one `if`/`$if … $else` (never both run in one thread). */
function exclusive(a: SyntaxNode, b: SyntaxNode, top: SyntaxNode): boolean {
  for (let p = a.parent; p && p.id !== top.id; p = p.parent) {
    if (p.type !== 'if_statement' || b.startIndex < p.startIndex || b.endIndex > p.endIndex) continue;
    const cons = p.childForFieldName('consequence');
    const alt = p.childForFieldName('alternative');
    const inCons = (n: SyntaxNode): boolean => !!cons && cons.startIndex <= n.startIndex && n.endIndex <= cons.endIndex;
    const inAlt = (n: SyntaxNode): boolean => !!alt && alt.startIndex <= n.startIndex && n.endIndex <= alt.endIndex;
    if ((inCons(a) && inAlt(b)) || (inAlt(a) && inCons(b))) return true;
  }
  return false;
}

function firstLeaf(n: SyntaxNode): SyntaxNode {
  let cur = n;
  while (cur.childCount > 0 && cur.child(0)) cur = cur.child(0)!;
  return cur;
}

/** Names of helpers (host functions, callables) that emit a `sync_block()` when called. */
function barrierHelpers(m: LuisaModel): Set<string> {
  const out = new Set<string>();
  for (const c of m.callsNamed('sync_block')) {
    const b = m.bodyOf(c.node);
    if (b?.kind === 'Callable' && b.name) out.add(b.name);
    const g = m.generatorOf(c.node);
    const d = g?.childForFieldName('declarator');
    const name = d?.childForFieldName('declarator')?.text.split('::').pop();
    if (name) out.add(name);
  }
  return out;
}

export default defineCheck({
  id: 'luisa/missing-sync-block-after-shared-write',
  pass: 5,
  severity: 'high',
  kind: 'correctness',
  confidence: 'medium',
  languages: ['luisa-dsl'],
  citation: '000 §4.7 Correctness & Performance Rules, rule 2 (barrier after filling shared, before others read); 000 §7 rule 11; 000 §10.7 (sync_block after shared stores before any cross-thread read)',
  summary: 'Shared<T> written by one thread and read at another thread\'s slot with no sync_block() in between.',
  why: 'Unlike warp collectives, shared memory is not self-synchronizing across warps: a block of 64 or more threads needs a sync_block() after the fill and before any thread reads another thread\'s slot, or it reads stale data (000 §4.7 rule 2, §7 rule 11, §10.7).',
  messages: {
    race: '`{{code}}` reads `{{name}}` after `{{write}}` with no sync_block() in between: Shared<T> is written and then read at a different thread\'s index without an intervening sync_block(); other warps may not see the write. Insert `sync_block();` before the read.',
  },
  fix: 'safe',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(luisaModel);
        if (!m.shared.length) return;
        const helpers = barrierHelpers(m);
        for (const s of m.shared) {
          if (!s.body || !s.name) continue;
          const kernel = m.kernelOf(s.node) ?? s.body;
          const warp = kernel.warpSize?.value ?? 32;
          // Unknown block sizes default to 256 (1D), 16×16 or 8×8×8 threads: several warps.
          const product = kernel.blockSize?.product ?? null;
          if (product !== null && product <= warp) continue;
          const body = s.body.body;
          const acc = m.sharedAccesses(s).filter((a) => a.node.startIndex > s.node.endIndex);
          const writes = acc.filter((a) => a.kind === 'write' || a.kind === 'atomic');
          const reads = acc.filter((a) => a.kind === 'read');
          if (!writes.length || !reads.length) continue;
          const syncs: number[] = [];
          for (const c of m.callsIn(body, /^sync_block$/)) syncs.push(c.node.startIndex);
          for (const name of helpers) for (const c of m.callsIn(body, name)) syncs.push(c.node.startIndex);
          const keyOf = new Map<SharedAccess, string>();
          const key = (a: SharedAccess): string => {
            let k = keyOf.get(a);
            if (k === undefined) keyOf.set(a, (k = m.indexKey(a.index)));
            return k;
          };
          const divergent = (n: SyntaxNode): SyntaxNode | null => m.deviceBranchesAround(n).find((b) => m.laneDependent(b.condition))?.stmt ?? null;
          for (const r of reads) {
            const rStmt = statementOf(r.node);
            const last = Math.max(-1, ...syncs.filter((p) => p < r.node.startIndex));
            const w = writes.find((w) => {
              if (w.node.startIndex <= last || w.node.endIndex > r.node.startIndex) return false;
              const wStmt = statementOf(w.node);
              if (wStmt.id === rStmt.id || (rStmt.startIndex <= wStmt.startIndex && wStmt.endIndex <= rStmt.endIndex)) return false;
              if (exclusive(w.node, r.node, body)) return false;
              const wc = m.constValue(w.index);
              const rc = m.constValue(r.index);
              if (wc !== null && rc !== null && wc !== rc) return false;
              if (w.kind === 'atomic') return true;
              if (m.laneDependent(w.index)) return key(w) !== key(r);
              // One thread (or one warp) writes a uniform slot that every thread then reads.
              const d = divergent(w.node);
              return !!d && key(w) === key(r) && !(d.startIndex <= r.node.startIndex && r.node.endIndex <= d.endIndex);
            });
            if (!w) continue;
            // The insertion point: the read's statement at the level of the block that holds the write.
            let at: SyntaxNode = rStmt;
            while (at.parent && at.parent.id !== body.id && !(at.parent.type === 'compound_statement' && at.parent.startIndex <= w.node.startIndex && w.node.endIndex <= at.parent.endIndex)) at = at.parent;
            while (at.parent && !BLOCKS.has(at.parent.type)) at = at.parent;
            syncs.push(at.startIndex - 1);
            const wStmt = statementOf(w.node);
            let fixText: string | null = null;
            const lead = firstLeaf(at);
            const line = m.lineText(lead);
            // A normalized `$if` starts one column after its `$`.
            const indent = line === null ? null : /^\s*/.exec(line)![0];
            const startsHere = indent !== null && (indent.length === at.startPosition.column || (indent.length === at.startPosition.column - 1 && line![indent.length] === '$'));
            // A device loop whose trip count differs between threads is as divergent as a $if.
            const divergentLoop = m.deviceLoopsAround(at).some((l) => {
              const lp = m.loopParts(l);
              return m.laneDependent(m.conditionOf(l)) || (!!lp && (m.laneDependent(lp.start) || m.laneDependent(lp.end) || m.laneDependent(lp.step)));
            });
            if (startsHere && !divergentLoop && wStmt.endPosition.row < at.startPosition.row && !divergent(at) && !m.deviceBranchesAround(at).some((b) => m.warpDivergent(b.condition))) {
              fixText = `${indent}sync_block();\n${line}`;
            }
            const description = 'Insert `sync_block();` between the write and the read, at a point every thread of the block reaches.';
            ctx.report({
              node: r.node,
              messageId: 'race',
              data: { code: quote(r.node), name: s.name, write: quote(w.kind === 'atomic' && w.node.parent?.parent ? w.node.parent.parent : wStmt) },
              fix: fixText !== null ? { description, replace: { from: lead, text: fixText } } : { description },
            });
          }
        }
      },
    };
  },
});

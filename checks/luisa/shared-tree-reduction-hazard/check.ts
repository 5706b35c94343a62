import { luisaModel, type LuisaModel, type SharedAccess } from '../../../src/analysis/luisa.js';
import { quote, unparen } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

const BLOCKS = new Set(['compound_statement', 'translation_unit']);

function statementOf(n: SyntaxNode): SyntaxNode {
  let cur = n;
  while (cur.parent && !BLOCKS.has(cur.parent.type)) cur = cur.parent;
  return cur;
}

function op(n: SyntaxNode): string | undefined {
  return n.type === 'binary_expression' ? n.childForFieldName('operator')?.type : undefined;
}

/**
 * Whether the slots read at `r` by the threads of one step can include slots written at `w` by
 * other threads of that step. `bound` is the `w < bound` guard of the write, when there is one.
 */
function overlaps(m: LuisaModel, r: SyntaxNode, w: SyntaxNode, bound: SyntaxNode | null): boolean {
  const wk = m.indexKey(w);
  const isW = (n: SyntaxNode | null): boolean => !!n && m.indexKey(n) === wk;
  const uniform = (n: SyntaxNode | null): boolean => !!n && !m.laneDependent(n);
  // `tid * 2u`, `2u * tid`, `tid << 1u`, and those plus or minus a uniform offset: interleaved pairs.
  const scaled = (n: SyntaxNode | null): boolean => {
    const e = unparen(n);
    if (!e || e.type !== 'binary_expression') return false;
    const o = op(e);
    const l = e.childForFieldName('left');
    const rr = e.childForFieldName('right');
    if (o === '*') return (isW(l) && uniform(rr) && m.constValue(rr) !== 1) || (isW(rr) && uniform(l) && m.constValue(l) !== 1);
    if (o === '<<') return isW(l) && uniform(rr) && m.constValue(rr) !== 0;
    if (o === '+' || o === '-') return (scaled(l) && uniform(rr)) || (o === '+' && scaled(rr) && uniform(l));
    return false;
  };
  const e = unparen(r);
  if (!e) return false;
  if (scaled(e)) return true;
  const o = op(e);
  const l = e.childForFieldName('left');
  const rr = e.childForFieldName('right');
  if (o === '^') return (isW(l) && uniform(rr)) || (isW(rr) && uniform(l));
  if (o === '-') return isW(l) && uniform(rr);
  if (o === '+') {
    const off = isW(l) && uniform(rr) ? rr : isW(rr) && uniform(l) ? l : null;
    if (!off) return false;
    // `s[tid] += s[tid + half]` under `$if (tid < half)`: reads [half, 2·half), writes [0, half).
    if (!bound) return true;
    if (m.indexKey(bound) === m.indexKey(off)) return false;
    const b = m.constValue(bound);
    const k = m.constValue(off);
    return !(b !== null && k !== null && k >= b);
  }
  return false;
}

export default defineCheck({
  id: 'luisa/shared-tree-reduction-hazard',
  pass: 5,
  severity: 'high',
  kind: 'correctness',
  confidence: 'medium',
  languages: ['luisa-dsl'],
  citation: '000 §4.7 Correctness & Performance Rules, rule 4 ("Register-then-write"); 000 §4.4 Block-Wide Tree Reduction in Shared Memory ("Why two sync_block() per step")',
  summary: 'A reduction step reads and writes overlapping Shared<T> slots with no barrier between read and write.',
  why: 'When s[tid] is written in the same barrier interval in which other threads still read s[2*tid], s[2*tid+1], one thread overwrites a slot another is reading (a read-after-write / write-after-read race), which is why the guide computes into a register and uses two sync_block() per step (000 §4.4, §4.7 rule 4).',
  messages: {
    hazard: '`{{code}}` writes `{{name}}[{{w}}]` while other threads may still read `{{name}}[{{r}}]` in the same barrier interval: Tree-reduction step reads and writes overlapping shared slots in the same barrier interval (s[tid] = s[2*tid] + s[2*tid+1]); compute into a register, sync_block(), then write back.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(luisaModel);
        for (const s of m.shared) {
          if (!s.body || !s.name) continue;
          const body = s.body.body;
          const acc = m.sharedAccesses(s);
          const reads = acc.filter((a) => a.kind === 'read');
          if (!reads.length) continue;
          const syncs = m.callsIn(body, 'sync_block').map((c) => c.node.startIndex);
          const seen = new Set<number>();
          for (const w of acc) {
            if (w.kind !== 'write' || !w.index || !m.laneDependent(w.index)) continue;
            const assign = w.node.parent;
            if (assign?.type !== 'assignment_expression' || assign.childForFieldName('left')?.id !== w.node.id) continue;
            const rhs = assign.childForFieldName('right');
            if (!rhs || seen.has(assign.id)) continue;
            const wStmt = statementOf(w.node);
            const last = Math.max(-1, ...syncs.filter((p) => p < w.node.startIndex));
            // Locals the right-hand side uses: a read stored in one of them earlier in the interval
            // is still the same step (`Float a = s[2u * tid]; … s[tid] = a + b;`).
            const used = new Set(rhs.descendantsOfType('identifier').map((i) => i.text));
            const feeding = (r: SharedAccess): boolean => {
              if (r.node.startIndex >= rhs.startIndex && r.node.endIndex <= rhs.endIndex) return true;
              if (r.node.startIndex <= last || r.node.endIndex > wStmt.startIndex) return false;
              const st = statementOf(r.node);
              const target = st.type === 'declaration' ? st.descendantsOfType('init_declarator')[0]?.childForFieldName('declarator') : st.namedChildren[0]?.type === 'assignment_expression' ? st.namedChildren[0].childForFieldName('left') : null;
              return target?.type === 'identifier' && used.has(target.text);
            };
            const guard = m.deviceBranchesAround(w.node).map((b) => (b.inElse ? null : unparen(b.condition))).find((c) => {
              const o = c ? op(c) : undefined;
              return !!c && (o === '<' || o === '<=') && m.indexKey(c.childForFieldName('left')) === m.indexKey(w.index);
            });
            const bound = guard?.childForFieldName('right') ?? null;
            const hit = reads.find((r) => r.index && r.node.id !== w.node.id && feeding(r) && m.laneDependent(r.index) && m.indexKey(r.index) !== m.indexKey(w.index) && overlaps(m, r.index, w.index!, bound));
            if (!hit) continue;
            seen.add(assign.id);
            ctx.report({
              node: assign,
              messageId: 'hazard',
              data: { code: quote(assign), name: s.name, w: w.index.text, r: hit.index!.text },
              fix: { description: 'Compute into a register, then barrier, then write back: `$if (tid < half) { v = s[2u*tid] + s[2u*tid+1u]; }; sync_block(); $if (tid < half) { s[tid] = v; }; sync_block();` (000 §4.4).' },
            });
          }
        }
      },
    };
  },
});

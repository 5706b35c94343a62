import { luisaModel, type LuisaModel, type SharedDecl } from '../../../src/analysis/luisa.js';
import { quote, unparen } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

const LOOPS = new Set(['for_statement', 'while_statement', 'do_statement', 'for_range_loop']);

/** `half /= 2u`, `half >>= 1u`, `half = half / 2u`, `half = half >> 1u`. */
function isHalving(m: LuisaModel, n: SyntaxNode): boolean {
  if (n.type !== 'assignment_expression') return false;
  const o = n.childForFieldName('operator')?.text;
  const l = n.childForFieldName('left');
  const r = unparen(n.childForFieldName('right'));
  if (l?.type !== 'identifier' || !r) return false;
  if (o === '/=') return m.constValue(r) === 2;
  if (o === '>>=') return m.constValue(r) === 1;
  if (o === '=' && r.type === 'binary_expression') {
    const ro = r.childForFieldName('operator')?.type;
    const rl = r.childForFieldName('left');
    const k = m.constValue(r.childForFieldName('right'));
    return rl?.text === l.text && ((ro === '/' && k === 2) || (ro === '>>' && k === 1));
  }
  return false;
}

const isPow2 = (v: number): boolean => v > 0 && (v & (v - 1)) === 0;

export default defineCheck({
  id: 'luisa/shared-size-not-matching-block',
  pass: 5,
  severity: 'medium',
  kind: 'correctness',
  confidence: 'medium',
  languages: ['luisa-dsl'],
  citation: '000 §4.7 Correctness & Performance Rules, rule 3 ("Size to the block … power-of-two block for the halving tree reduction, and pad out-of-range lanes with the reduction identity"); 000 §4.1 ("Always set_block_size(...) and size the array to the block"); 000 §7 rule 9',
  summary: 'Shared<T> not sized to the block, block size unset, non-power-of-two halving tree, or unpadded out-of-range lanes.',
  why: 'A Shared<T> indexed by thread_x() needs one slot per thread of the set_block_size block, a halving tree needs a power-of-two block, and out-of-range lanes must stage the reduction identity, or threads index past the array or sum stale slots (000 §4.1, §4.7 rule 3, §7 rule 9).',
  messages: {
    small: '`{{code}}`: Shared<T> indexed by thread_x() has {{n}} slots but the block has {{b}} threads; threads {{n}}–{{last}} index past the array. Size it to the block: `Shared<{{type}}> {{name}}{ {{b}}u }`.',
    noBlock: '`{{code}}`: this kernel uses Shared<T> but never calls set_block_size(...), so the array cannot be sized to the block (the backend default applies). Call `set_block_size(…)` first and size the array to it.',
    nonPow2: '`{{code}}`: the halving tree over `{{name}}` runs on a {{b}}-thread block, which is not a power of two: Shared<T> indexed by thread_x() has {{n}} slots but the block has {{b}} threads (or the halving tree runs on a non-power-of-two block); halving skips slots. Use a power-of-two block (e.g. {{pow2}}) or pad to it.',
    unpadded: '`{{code}}` stages `{{name}}` only for in-range lanes (`{{cond}}`); out-of-range lanes leave stale slots in the reduction. Pad them with the identity: `$if ({{cond}}) { … } $else { {{name}}[thread_x()] = {{identity}}; };`.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(luisaModel);
        if (!m.shared.length) return;
        const reportedNoBlock = new Set<number>();
        for (const s of m.shared) {
          if (!s.body) continue;
          const kernel = m.kernelOf(s.node) ?? s.body;
          // A callable runs in its caller's block, which this body does not show.
          if (kernel.kind === 'Callable') continue;
          const bs = kernel.blockSize;
          const type = s.elemType;
          const name = s.name ?? 's';
          if (!bs) {
            if (m.callsIn(kernel.body, 'set_block_size').length || reportedNoBlock.has(kernel.node.id)) continue;
            reportedNoBlock.add(kernel.node.id);
            ctx.report({ node: s.node, messageId: 'noBlock', data: { code: quote(s.node) }, fix: { description: 'Call `set_block_size(N, 1u, 1u)` at the top of the kernel and declare `Shared<T> s{N}`.' } });
            continue;
          }
          const acc = m.sharedAccesses(s);
          const threadIndexed = acc.filter((a) => m.indexKey(a.index) === 'thread_x()');
          // (a) fewer slots than threads along x.
          const x = bs.dims[0];
          if (s.count !== null && x !== null && s.count < x) {
            const unguarded = threadIndexed.filter((a) => !guardedBelow(m, a.node, s.count!));
            if (unguarded.length) {
              ctx.report({ node: s.node, messageId: 'small', data: { code: quote(s.node), n: s.count, b: x, last: x - 1, type, name }, fix: { description: `Declare the array with one slot per thread (\`Shared<${type}> ${name}{${x}u}\`), or guard the accesses with \`$if (thread_x() < ${s.count}u)\`.` } });
              continue;
            }
          }
          // (c) a halving tree over the array on a non-power-of-two block.
          const b = bs.product;
          const halving = halvingLoopOver(m, s, kernel.body);
          if (halving && b !== null && !isPow2(b)) {
            let p = 1;
            while (p < b) p *= 2;
            ctx.report({ node: halving, messageId: 'nonPow2', data: { code: quote(halving), name, b, n: s.count ?? '?', pow2: `${p / 2} or ${p}` }, fix: { description: `Pick a power-of-two block for the tree (${p / 2} or ${p}), or pad the staging to ${p} slots with the identity.` } });
            continue;
          }
          // (d) a guarded staging write without identity padding for the out-of-range lanes.
          const reduced = !!halving || acc.some((a) => a.kind === 'read' && m.indexKey(a.index) !== 'thread_x()');
          if (!reduced) continue;
          for (const w of threadIndexed) {
            if (w.kind !== 'write') continue;
            const g = m.deviceBranchesAround(w.node).find((br) => !br.inElse && !!br.condition && /\bdispatch_(x|y|z|id)\(/.test(m.indexKey(br.condition)) && /[<>]/.test(br.condition.text));
            if (!g) continue;
            const alt = g.stmt.childForFieldName('alternative');
            if (alt && acc.some((a) => a.kind === 'write' && alt.startIndex <= a.node.startIndex && a.node.endIndex <= alt.endIndex)) continue;
            const stmt = w.node.parent ?? w.node;
            const identity = /float|half|double/.test(type) ? '0.f' : '0u';
            ctx.report({ node: stmt, messageId: 'unpadded', data: { code: quote(stmt), name, cond: g.condition!.text, identity }, fix: { description: `Add \`$else { ${name}[thread_x()] = ${identity}; }\` (the reduction's identity) so out-of-range lanes stage a neutral value.` } });
            break;
          }
        }
      },
    };
  },
});

/** The access runs only for `thread_x() < M` (or `<= M - 1`) with M ≤ the slot count. */
function guardedBelow(m: LuisaModel, n: SyntaxNode, count: number): boolean {
  return m.deviceBranchesAround(n).some((b) => {
    const c = unparen(b.condition);
    if (b.inElse || c?.type !== 'binary_expression') return false;
    const o = c.childForFieldName('operator')?.type;
    if (m.indexKey(c.childForFieldName('left')) !== 'thread_x()') return false;
    const v = m.constValue(c.childForFieldName('right'));
    if (v === null) return false;
    return (o === '<' && v <= count) || (o === '<=' && v < count);
  });
}

/** The halving update (`half /= 2u`) of a loop, device or record-time, that accesses `s`. */
function halvingLoopOver(m: LuisaModel, s: SharedDecl, body: SyntaxNode): SyntaxNode | null {
  const acc = m.sharedAccesses(s);
  for (const n of body.descendantsOfType('assignment_expression')) {
    if (!isHalving(m, n)) continue;
    let loop: SyntaxNode | null = n.parent;
    while (loop && loop.id !== body.id && !(LOOPS.has(loop.type) || m.isDeviceLoop(loop))) loop = loop.parent;
    if (!loop || loop.id === body.id) continue;
    if (acc.some((a) => loop!.startIndex <= a.node.startIndex && a.node.endIndex <= loop!.endIndex)) return n;
  }
  return null;
}

import { cudaModel } from '../../../src/analysis/cuda.js';
import { quoteCode, smemFacts } from '../../../src/analysis/smem.js';
import { calleePath, lastName, unparen, walk } from '../../../src/analysis/syntax.js';
import { constantBlockOf, uniformity } from '../../../src/analysis/uniformity.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

const FETCH = /^fetch_(add|sub|and|or|xor|min|max)$/;
const IDENT = /\b[A-Za-z_]\w*\b/g;

/** Names a loop writes: its induction variables and everything declared or assigned in its body. */
function variantNames(loop: SyntaxNode): Set<string> {
  const out = new Set<string>();
  for (const n of walk(loop)) {
    if (n.type === 'init_declarator') {
      const d = n.childForFieldName('declarator');
      if (d?.type === 'identifier') out.add(d.text);
    } else if (n.type === 'declaration') {
      for (const d of n.childrenForFieldName('declarator')) if (d.type === 'identifier') out.add(d.text);
    } else if (n.type === 'for_range_loop') {
      const d = n.childForFieldName('declarator');
      if (d) for (const id of d.text.match(IDENT) ?? []) out.add(id);
    } else if (n.type === 'assignment_expression') {
      const l = unparen(n.childForFieldName('left'));
      if (l?.type === 'identifier') out.add(l.text);
    } else if (n.type === 'update_expression') {
      const a = unparen(n.childForFieldName('argument'));
      if (a?.type === 'identifier') out.add(a.text);
    }
  }
  return out;
}

/** `if (lane == 0)`-style guard between the loop and the call: one atomic per warp (or block) per iteration. */
function singleLaneGuard(call: SyntaxNode, loop: SyntaxNode, level: (n: SyntaxNode) => string): boolean {
  for (let p = call.parent; p && p.id !== loop.id; p = p.parent) {
    if (p.type !== 'if_statement') continue;
    const cond = p.childForFieldName('condition');
    if (cond && /(==\s*0[uU]?\b|\b0[uU]?\s*==)/.test(cond.text) && level(cond) === 'thread') return true;
  }
  return false;
}

export default defineCheck({
  id: 'kernel/global-atomic-in-loop',
  pass: 3,
  severity: 'medium',
  kind: 'performance',
  confidence: 'high',
  languages: ['cuda', 'nvrtc-in-python'],
  citation: '003 §8.7 Global Memory Atomics',
  summary: 'Global atomic to a loop-invariant address issued on every iteration of a per-thread loop.',
  why: 'Atomics to the same global address serialize at the L2, so one atomic per loop iteration from every thread turns the loop into a queue; 003 §8.7 accumulates in a register (or reduces per warp/block) and issues one atomic per thread, warp or block instead.',
  messages: {
    inLoop: 'Global atomic `{{call}}` inside the per-thread loop `{{loop}}` targets the same address `{{addr}}` every iteration{{figure}}; it serializes on contended addresses: accumulate in a register (or warp/block reduce) and issue one atomic at the end.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(cudaModel);
        const u = ctx.get(uniformity);
        const smem = ctx.get(smemFacts);
        const vocab = new Set(ctx.config.vocab.device_atomic_calls);
        for (const c of ctx.source.root.descendantsOfType('call_expression')) {
          const f = m.functionOf(c);
          if (!f || !(f.isKernel || f.isDevice) || !f.body) continue;
          const fn = c.childForFieldName('function');
          const name = lastName(calleePath(fn)) ?? '';
          let addrText: string | null = null;
          let addrNode: SyntaxNode | null = null;
          if (vocab.has(name.replace(/_(block|system)$/, ''))) {
            addrNode = unparen(c.childForFieldName('arguments')?.namedChildren[0]);
            addrText = addrNode?.text ?? null;
          } else if (fn?.type === 'field_expression' && FETCH.test(fn.childForFieldName('field')?.text ?? '')) {
            // `cuda::atomic_ref<T> ref(count[bin]); ref.fetch_add(1);`: the address is the constructor argument.
            const obj = fn.childForFieldName('argument')?.text ?? '';
            const re = new RegExp(`atomic_ref\\s*<[^;]*>\\s+${obj.replace(/\W/g, '')}\\s*[({]\\s*([^;]*?)\\s*[)}]\\s*;`);
            addrText = re.exec(f.body.text)?.[1] ?? null;
          } else continue;
          if (!addrText) continue;
          // A result that is used (slot allocation, a CAS retry loop, a spin lock) cannot be accumulated in a register.
          let stmt = c.parent;
          while (stmt && (stmt.type === 'parenthesized_expression' || stmt.type === 'cast_expression')) stmt = stmt.parent;
          if (stmt?.type !== 'expression_statement') continue;
          const loop = m.loopOf(c);
          if (!loop || m.functionOf(loop)?.node.id !== f.node.id) continue;
          const base = addrText.replace(/^[&*\s(]+/, '').match(/^[A-Za-z_]\w*/)?.[0];
          if (!base) continue;
          // Shared-memory atomics are the block-level privatization the fix recommends.
          if (smem.declFor(base, c)) continue;
          // A loop-invariant address is one the loop writes no name of (`&count[bin]`, `bin` set outside).
          const variant = variantNames(loop);
          if ((addrText.match(IDENT) ?? []).some((id) => variant.has(id))) continue;
          if (singleLaneGuard(c, loop, (n) => u.level(n))) continue;
          const b = constantBlockOf(ctx.source, ctx.config, f);
          const threads = b ? b[0] * b[1] * b[2] : null;
          const blockWide = addrNode ? u.level(addrNode) === 'block' : false;
          const figure = blockWide
            ? threads ? ` for all ${threads} threads of each block it is launched with` : ' for every thread of the block'
            : '';
          const header = loop.text.split('\n')[0].replace(/\s*\{\s*$/, '');
          ctx.report({
            node: c,
            messageId: 'inLoop',
            data: { call: quoteCode(c.text, 50), loop: quoteCode(header, 60), addr: quoteCode(addrText, 40), figure },
          });
        }
      },
    };
  },
});

import { luisaModel, type LuisaModel } from '../../../src/analysis/luisa.js';
import { quote, unparen } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

/** DSL value types: `Var<T>`, `Expr<T>`, and the aliases `UInt`, `Float3`, `Bool`, `ULong`, `Float4x4`… */
const DSL_TYPE = /^(const\s+)?(luisa::compute::)?(Var|Expr)\s*<|^(const\s+)?(luisa::compute::)?(Bool|Short|UShort|Int|UInt|SLong|ULong|Half|Float|Double)([234](x[234])?)?\s*&?$/;
/** Builtins that return device values. */
const DEVICE_CALLS = /^(thread_x|thread_y|thread_z|thread_id|block_id|block_x|block_y|block_z|dispatch_id|dispatch_x|dispatch_y|dispatch_z|dispatch_size|warp_\w+|def|read|atomic|fetch_\w+)$/;

/** The first part of `e` that is a DSL device value, or null when `e` is host-only (a record-time constant). */
function deviceIn(m: LuisaModel, e: SyntaxNode | null, depth = 0): SyntaxNode | null {
  if (!e || depth > 4) return null;
  const stack: SyntaxNode[] = [e];
  while (stack.length) {
    const n = stack.pop()!;
    if (n.type === 'call_expression') {
      const fn = n.childForFieldName('function');
      const name = fn?.type === 'field_expression' ? fn.childForFieldName('field')?.text : fn?.type === 'template_function' ? fn.childForFieldName('name')?.text : fn?.text;
      const member = /^(read|atomic|fetch_\w+)$/.test(name ?? '');
      if (fn?.type === 'field_expression') {
        // `buf.read(i)` / `counter->atomic(0u).fetch_add(1u)` on a DSL resource; `v.size()` stays host.
        const recv = fn.childForFieldName('argument');
        if (member && (isDslParam(m, recv) || /\.atomic\s*\(/.test(recv?.text ?? '') || deviceIn(m, recv, depth + 1))) return n;
      } else if (name && !member && DEVICE_CALLS.test(name)) return n;
    }
    if (n.type === 'identifier') {
      const d = m.declOf(n.text, n);
      if (d) {
        if (DSL_TYPE.test(d.type.trim())) return n;
        if (/^(const\s+)?auto\b/.test(d.type.trim()) && d.value && deviceIn(m, d.value, depth + 1)) return n;
      }
      continue;
    }
    if (n.type === 'field_identifier' || n.type === 'lambda_expression') continue;
    for (const c of n.namedChildren) stack.push(c);
  }
  return null;
}

/** A kernel parameter of a DSL resource type (`BufferFloat b`, `Var<Buffer<float>>`, `ImageFloat`). */
function isDslParam(m: LuisaModel, n: SyntaxNode | null): boolean {
  const r = unparen(n);
  if (r?.type !== 'identifier') return false;
  const d = m.declOf(r.text, r);
  return !!d && /^(const\s+)?(Buffer|Image|Volume|BindlessVar|BufferVar|ImageVar|Var\s*<\s*(Buffer|Image))/.test(d.type.trim());
}

export default defineCheck({
  id: 'luisa/host-loop-over-device-value',
  pass: 3,
  severity: 'high',
  kind: 'correctness',
  confidence: 'high',
  languages: ['luisa-dsl'],
  citation: '000 §3.4 Sequential Lane Reads → warp_prefix_sum ("a host for over warp_lane_id() is invalid because the bound is a device value"; use dynamic_range)',
  summary: 'Native C++ loop in a kernel whose condition compares a DSL device value.',
  why: 'A plain C++ for inside a kernel runs once, at record time, so its condition must be a host value; comparing against a device value such as warp_lane_id() yields a DSL Bool that the host cannot branch on, which 000 §3.4 calls invalid (use dynamic_range).',
  messages: {
    hostLoop: 'Native C++ {{loop}} loop bounded by a device expression (`{{value}}`) inside a kernel; use a device loop (`for (auto {{var}} : dynamic_range({{bound}}))` or `$for`).',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(luisaModel);
        const loops = new Set<number>();
        const seen: SyntaxNode[] = [];
        for (const b of m.bodies) {
          for (const l of b.body.descendantsOfType(['for_statement', 'while_statement'])) {
            if (loops.has(l.id)) continue;
            loops.add(l.id);
            seen.push(l);
          }
        }
        for (const loop of seen) {
          if (!m.isRecordTimeLoop(loop) || m.dslKind(loop)) continue;
          const c = loop.childForFieldName('condition');
          const cond = unparen(c?.type === 'condition_clause' ? c.childForFieldName('value') ?? c.namedChildren[0] : c);
          if (!cond) continue;
          const dev = deviceIn(m, cond);
          if (!dev) continue;
          // `i < bound`: show the bound in the suggested dynamic_range.
          let variable = 'i';
          let bound = dev.text;
          if (cond.type === 'binary_expression' && /^(<|<=|!=)$/.test(cond.childForFieldName('operator')?.type ?? '')) {
            const l = cond.childForFieldName('left');
            const r = cond.childForFieldName('right');
            if (l?.type === 'identifier') variable = l.text;
            if (r) bound = cond.childForFieldName('operator')?.type === '<=' ? `${r.text} + 1u` : r.text;
          }
          ctx.report({
            node: cond,
            messageId: 'hostLoop',
            data: { loop: loop.type === 'while_statement' ? 'while' : 'for', value: quote(dev), var: variable, bound: bound.length > 40 ? bound.slice(0, 37) + '...' : bound },
            fix: { description: 'Turn it into a device loop: `for (auto i : dynamic_range(bound)) { … };` or `$for (i, 0u, bound) { … };`. Keep plain C++ loops only for record-time constant bounds (they unroll).' },
          });
        }
      },
    };
  },
});

import { luisaModel, type LuisaModel } from '../../../src/analysis/luisa.js';
import { quote, unparen } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

type Origin = 'collective' | 'argument' | 'block';
const ALL_REDUCE = /^(warp_active_(sum|product|min|max|bit_and|bit_or|bit_xor|count_bits|all|any|bit_mask)|warp_read_first_active_lane)$/;
const BLOCK = /^(block_id|block_x|block_y|block_z|block_size|dispatch_size)$/;
/** Pure functions of their arguments: uniform in, uniform out. */
const PURE = /^(max|min|abs|sqrt|rsqrt|exp|log|pow|floor|ceil|clamp|select|ite|cast|make_\w+|float|int|uint|Float|Int|UInt|fma|sin|cos)$/;
const RESOURCE = /Buffer|Image|Volume|Accel|Bindless|Texture/;
const esc = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * Where a warp-uniform operand comes from: another all-reduce, a kernel argument, or block_id().
 * Null when any part of it is unknown or per-lane (a buffer read, a callable parameter, shared memory).
 */
function origins(m: LuisaModel, e: SyntaxNode | null, kernelLambda: SyntaxNode | null, depth = 0): Set<Origin> | null {
  const n = unparen(e);
  if (!n || depth > 6) return null;
  switch (n.type) {
    case 'number_literal':
    case 'true':
    case 'false':
      return new Set();
    case 'identifier': {
      const d = m.declOf(n.text, n);
      if (!d) return null;
      if (d.param) {
        // Only the kernel's own scalar arguments are uniform; a callable's parameters are per-lane values.
        let f: SyntaxNode | null = d.node.parent;
        while (f && f.type !== 'lambda_expression' && f.type !== 'function_definition') f = f.parent;
        return !!kernelLambda && f?.id === kernelLambda.id && !RESOURCE.test(d.type) ? new Set<Origin>(['argument']) : null;
      }
      return d.value ? origins(m, d.value, kernelLambda, depth + 1) : null;
    }
    case 'call_expression': {
      const f = n.childForFieldName('function');
      const name = f?.type === 'identifier' ? f.text : f?.type === 'template_function' ? f.childForFieldName('name')?.text ?? '' : '';
      if (ALL_REDUCE.test(name)) return new Set<Origin>(['collective']);
      if (BLOCK.test(name)) return new Set<Origin>(['block']);
      if (!PURE.test(name)) return null;
      const out = new Set<Origin>();
      for (const a of n.childForFieldName('arguments')?.namedChildren ?? []) {
        const o = origins(m, a, kernelLambda, depth + 1);
        if (!o) return null;
        o.forEach((x) => out.add(x));
      }
      return out;
    }
    case 'field_expression':
      return origins(m, n.childForFieldName('argument'), kernelLambda, depth + 1);
    case 'binary_expression':
    case 'unary_expression':
    case 'conditional_expression': {
      const out = new Set<Origin>();
      for (const c of n.namedChildren) {
        const o = origins(m, c, kernelLambda, depth + 1);
        if (!o) return null;
        o.forEach((x) => out.add(x));
      }
      return out;
    }
    default:
      return null;
  }
}

export default defineCheck({
  id: 'luisa/collective-of-uniform-value',
  pass: 3,
  severity: 'medium',
  kind: 'correctness',
  confidence: 'low',
  status: 'preview',
  languages: ['luisa-dsl'],
  citation: '000 §5.7 Empirical Benchmark Results (trap 4: "warp_active_sum(v) of a warp-uniform v returns 32×v — chained collectives compound this (32^k)")',
  summary: 'warp_active_sum/product of a value that is already the same in every lane.',
  why: 'warp_active_sum(v) of a warp-uniform v returns 32×v on a full 32-lane warp (v^32 for warp_active_product), and chained collectives compound this to 32^k, a trap 000 §5.7 hit while building its benchmark harness.',
  messages: {
    uniform: '`{{call}}` reduces `{{arg}}`, which is {{what}} and the same in every lane, so {{effect}}{{chain}}; reduce the per-lane values instead, or divide by warp_lane_count().',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(luisaModel);
        for (const c of m.callsNamed(/^warp_active_(sum|product)$/)) {
          if (c.receiver || !c.args[0]) continue;
          const kernel = m.kernelOf(c.node);
          if (!kernel || m.laneDependent(c.args[0])) continue;
          const o = origins(m, c.args[0], kernel.kind === 'Callable' ? null : kernel.node);
          if (!o || !o.size) continue;
          // Scaled back by the lane count right away, or later through the variable holding the result.
          const p = c.node.parent;
          if (p?.type === 'binary_expression' && p.childForFieldName('operator')?.type === '/' && /warp_lane_count|warp_active_count_bits|lane/.test(p.childForFieldName('right')?.text ?? '')) continue;
          // Scaled back by a literal of the pinned width: `warp_active_sum(s) * 0.03125f` or `/ 32.0f` under set_warp_size(32u).
          const pinned = kernel.warpSize?.value;
          if (pinned && p?.type === 'binary_expression') {
            const op = p.childForFieldName('operator')?.type;
            const other = unparen(p.childForFieldName('left')?.id === c.node.id ? p.childForFieldName('right') : p.childForFieldName('left'));
            const k = other?.type === 'number_literal' ? Number.parseFloat(other.text.replace(/[fFuUlL]+$/, '')) : Number.NaN;
            if ((op === '*' && Math.abs(k * pinned - 1) < 1e-6) || (op === '/' && k === pinned && p.childForFieldName('right')?.id === other?.id)) continue;
          }
          const holder = p?.type === 'init_declarator' ? p.childForFieldName('declarator')?.text : p?.type === 'assignment_expression' ? p.childForFieldName('left')?.text : null;
          if (holder && /^\w+$/.test(holder)) {
            const rest = m.source.text.slice(c.node.endIndex, kernel.body.endIndex);
            if (new RegExp(`\\b${esc(holder)}\\s*(/|\\*\\s*\\(?\\s*1(\\.0*)?f?\\s*/)\\s*[^;]{0,40}(warp_lane_count|warp_active_count_bits|lane)`).test(rest)) continue;
          }
          const what = o.has('collective') ? 'the result of another warp collective' : o.has('argument') ? 'a kernel argument' : 'derived from block_id()';
          const width = kernel.warpSize?.value ?? 32;
          const sum = c.name === 'warp_active_sum';
          ctx.report({
            node: c.node,
            messageId: 'uniform',
            data: {
              call: quote(c.node),
              arg: quote(c.args[0]),
              what,
              effect: sum ? `the result is multiplied by the active lane count (${width}× on a full ${width}-lane warp)` : `the result is raised to the power of the active lane count (^${width} on a full ${width}-lane warp)`,
              chain: o.has('collective') ? '; chained collectives compound this (32^k)' : '',
            },
          });
        }
      },
    };
  },
});

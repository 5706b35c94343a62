import { luisaModel } from '../../../src/analysis/luisa.js';
import { calleePath, quote } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';

/** The 19 warp entry points of luisa/dsl/builtin.h plus the three FunctionBuilder builtins (seed 000 §1). */
const REAL = new Set([
  'warp_lane_count', 'warp_lane_id', 'set_warp_size', 'warp_is_first_active_lane', 'warp_first_active_lane',
  'warp_active_sum', 'warp_active_product', 'warp_active_min', 'warp_active_max', 'warp_active_all', 'warp_active_any',
  'warp_active_all_equal', 'warp_active_bit_and', 'warp_active_bit_or', 'warp_active_bit_xor', 'warp_active_count_bits',
  'warp_active_bit_mask', 'warp_prefix_sum', 'warp_prefix_product', 'warp_prefix_count_bits', 'warp_read_lane',
  'warp_read_first_active_lane',
]);

/**
 * HLSL/CUDA-flavoured spellings people carry over. `wave_` alone is not enough: DSL code for ocean and
 * acoustics simulations is full of `wave_height(...)`-style Callables, so only the names that mirror a
 * subgroup operation count.
 */
const FAKE = /^(wave_(active_\w+|prefix_\w+|read_lane\w*|lane_count|lane_id|get_lane_\w+|is_first_lane|ballot\w*|all_true|any_true|all_equal|broadcast\w*|shuffle\w*)|warp_write_lane|warp_reduce_\w+)$/;

const HLSL_RENAME: Record<string, string> = {
  wave_get_lane_count: 'warp_lane_count', wave_get_lane_index: 'warp_lane_id', wave_is_first_lane: 'warp_is_first_active_lane',
  wave_active_ballot: 'warp_active_bit_mask', wave_active_count_bits: 'warp_active_count_bits', wave_all_true: 'warp_active_all',
  wave_any_true: 'warp_active_any', wave_read_lane_at: 'warp_read_lane', wave_read_lane_first: 'warp_read_first_active_lane',
};

function replacement(name: string): string | null {
  if (HLSL_RENAME[name]) return HLSL_RENAME[name];
  if (name.startsWith('wave_')) {
    const w = 'warp_' + name.slice(5);
    return REAL.has(w) ? w : null;
  }
  const r = /^warp_reduce_(\w+)$/.exec(name);
  if (r) {
    const op = { add: 'sum', and: 'bit_and', or: 'bit_or', xor: 'bit_xor' }[r[1]] ?? r[1];
    const w = `warp_active_${op}`;
    return REAL.has(w) ? w : null;
  }
  return null;
}

export default defineCheck({
  id: 'luisa/nonexistent-warp-builtin',
  pass: 3,
  severity: 'low',
  kind: 'correctness',
  confidence: 'high',
  languages: ['luisa-dsl'],
  citation: '000 §1 Available Warp/Wave Primitives ("There is no wave_* alias, no warp_write_lane, and no warp_reduce_* in the DSL")',
  summary: 'Call to a warp builtin that LuisaCompute does not have (wave_*, warp_write_lane, warp_reduce_*).',
  why: 'luisa/dsl/builtin.h defines exactly 19 warp collective entry points plus warp_lane_count(), warp_lane_id() and set_warp_size(), and none is named wave_*, warp_write_lane or warp_reduce_*, so the kernel does not compile (000 §1).',
  messages: {
    fake: '`{{name}}` does not exist in the LuisaCompute DSL; see the 19 warp entry points in luisa/dsl/builtin.h{{hint}}.',
  },
  fix: 'safe',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(luisaModel);
        const found = m.callsNamed(FAKE).filter((c) => !c.receiver && m.inDeviceCode(c.node));
        if (!found.length) return;
        // A helper the file defines itself (a Callable, a generator function, a lambda) is legitimate.
        const defined = new Set<string>();
        for (const id of m.source.root.descendantsOfType(['identifier', 'field_identifier'])) {
          if (!FAKE.test(id.text)) continue;
          const p = id.parent;
          // A declarator, or a parameter (`const ReduceOp warp_reduce_op_binary`: a functor passed in).
          if (p && /(declarator|parameter_declaration)$/.test(p.type) && p.childForFieldName('declarator')?.id === id.id) defined.add(id.text);
          if (p?.type === 'preproc_def' || p?.type === 'preproc_function_def') defined.add(id.text);
        }
        const perLine = new Map<number, number>();
        for (const c of found) perLine.set(c.node.startPosition.row, (perLine.get(c.node.startPosition.row) ?? 0) + 1);
        for (const c of found) {
          if (defined.has(c.name)) continue;
          const path = calleePath(c.node.childForFieldName('function')) ?? c.name;
          // `my_lib::warp_reduce_sum(...)` is someone's helper, not a misspelt DSL builtin.
          if (path.includes('::') && !/^(luisa::)?(compute::)?\w+$/.test(path)) continue;
          const to = replacement(c.name);
          const fn = c.node.childForFieldName('function')!;
          let fix: { description: string; replace?: { from: typeof c.node; text: string } } = { description: to ? `Use \`${to}\`.` : 'Use the DSL builtins: warp_read_lane / warp_read_first_active_lane to read, warp_active_* to reduce.' };
          const single = c.node.startPosition.row === c.node.endPosition.row && perLine.get(c.node.startPosition.row) === 1;
          const line = single && to ? m.lineText(c.node) : null;
          if (to && line !== null) {
            const col = fn.startPosition.column;
            if (line.slice(col, col + c.name.length) === c.name) fix = { description: `Use \`${to}\`.`, replace: { from: c.node, text: line.slice(0, col) + to + line.slice(col + c.name.length) } };
          }
          ctx.report({
            node: c.node,
            messageId: 'fake',
            data: { name: c.name, hint: to ? ` (use \`${to}\`: \`${quote(c.node).replace(c.name, to)}\`)` : '' },
            fix,
          });
        }
      },
    };
  },
});

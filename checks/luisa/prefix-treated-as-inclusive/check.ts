import { luisaModel, type LuisaModel } from '../../../src/analysis/luisa.js';
import { quote, unparen } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

/** Names that say "one past my element": an end offset, the last index, a running inclusive total. */
const END_NAME = /(^|_)(end|ends|last|upper|hi|incl|inclusive|total|totals|stop)(_|$|s$)|End|Last|Total|Inclusive/;

/** `warp_lane_count() - 1u`, the pinned width − 1, or a local holding one of them. */
function isLastLane(m: LuisaModel, n: SyntaxNode | null | undefined, width: number, depth = 0): boolean {
  const e = unparen(n);
  if (!e || depth > 3) return false;
  if (/^warp_lane_count\s*\(\s*\)\s*-\s*1u?$/.test(e.text.trim())) return true;
  if (e.type === 'number_literal' || e.type === 'identifier') {
    if (m.constValue(e) === width - 1) return true;
  }
  if (e.type === 'identifier') {
    const d = m.declOf(e.text, e);
    return !!d && !d.param && isLastLane(m, d.value, width, depth + 1);
  }
  return false;
}

/** `warp_lane_id()` or a local initialised from it. */
function isLane(m: LuisaModel, n: SyntaxNode | null | undefined, depth = 0): boolean {
  const e = unparen(n);
  if (!e || depth > 3) return false;
  if (/^warp_lane_id\s*\(\s*\)$/.test(e.text)) return true;
  if (e.type === 'identifier') {
    const d = m.declOf(e.text, e);
    return !!d && !d.param && isLane(m, d.value, depth + 1);
  }
  return false;
}

export default defineCheck({
  id: 'luisa/prefix-treated-as-inclusive',
  pass: 3,
  severity: 'medium',
  kind: 'correctness',
  confidence: 'low',
  status: 'preview',
  languages: ['luisa-dsl'],
  citation: '000 §1.3 Prefix (Exclusive Scan); 000 §7 rule 6 ("warp_prefix_sum is exclusive (not inclusive)")',
  summary: 'An exclusive warp_prefix_sum result used as if it were inclusive.',
  why: 'warp_prefix_sum is exclusive: the first active lane receives the identity (0 for sum, 1 for product, 0u for count_bits) and each lane misses its own value, so reading the last of 32 lanes as the warp total or a lane\'s prefix as its end offset drops one contribution (000 §1.3, §7 rule 6).',
  messages: {
    total: '`{{use}}` reads the exclusive `{{call}}` from the last lane as the warp total, but the last lane\'s own value is missing; use `{{prefix}} {{op}} {{value}}` (or warp_active_sum) for the total.',
    lastLane: '`{{use}}` publishes the exclusive `{{call}}` from the last lane as a total, but the last lane\'s own value is missing; write `{{prefix}} {{op}} {{value}}`.',
    end: '`{{use}}` treats the exclusive `{{call}}` as an end offset; warp_prefix_sum excludes the lane\'s own value, so the end is `{{prefix}} {{op}} {{value}}`.',
    compare: '`{{use}}` compares the exclusive `{{call}}` with the lane\'s own value as if the prefix included it (the first active lane gets the identity); compare `{{prefix}} {{op}} {{value}}` instead.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(luisaModel);
        for (const c of m.callsNamed(/^warp_prefix_(sum|product|count_bits)$/)) {
          if (c.receiver || !c.args[0]) continue;
          const kernel = m.kernelOf(c.node);
          if (!kernel) continue;
          const width = kernel.warpSize?.value ?? 32;
          const value = c.args[0].text;
          const combine = c.name === 'warp_prefix_product' ? '*' : '+';
          const call = quote(c.node);
          const report = (node: SyntaxNode, messageId: string, prefix: string): void => {
            ctx.report({ node, messageId, data: { use: quote(node), call, prefix, op: combine, value: c.name === 'warp_prefix_count_bits' ? `ite(${value}, 1u, 0u)` : value } });
          };
          const p = c.node.parent;
          // `warp_read_lane(warp_prefix_sum(v), warp_lane_count() - 1u)`
          if (p?.type === 'argument_list' && p.parent?.type === 'call_expression' && p.parent.childForFieldName('function')?.text === 'warp_read_lane' && p.namedChildren[0]?.id === c.node.id) {
            if (isLastLane(m, p.namedChildren[1], width)) report(p.parent, 'total', call.replace(/;$/, ''));
            continue;
          }
          const name = p?.type === 'init_declarator' ? p.childForFieldName('declarator')?.text : p?.type === 'assignment_expression' && p.childForFieldName('right')?.id === c.node.id ? p.childForFieldName('left')?.text : null;
          if (!name || !/^\w+$/.test(name)) continue;
          // Uses until the prefix is made inclusive (`p += v;`, `p = p + v;`) or reassigned.
          let limit = kernel.body.endIndex;
          for (const a of kernel.body.descendantsOfType('assignment_expression')) {
            if (a.startIndex > c.node.endIndex && a.childForFieldName('left')?.text === name && a.startIndex < limit) limit = a.startIndex;
          }
          const uses = kernel.body.descendantsOfType('identifier').filter((id) => id.text === name && id.startIndex >= c.node.endIndex && id.endIndex <= limit && !(id.parent?.type === 'init_declarator' && id.parent.childForFieldName('declarator')?.id === id.id));
          for (const u of uses) {
            const up = u.parent;
            // (a) warp_read_lane(p, last lane) as the warp total.
            if (up?.type === 'argument_list' && up.namedChildren[0]?.id === u.id && up.parent?.childForFieldName('function')?.text === 'warp_read_lane') {
              if (isLastLane(m, up.namedChildren[1], width)) report(up.parent, 'total', name);
              continue;
            }
            // (b) p written as an end / total, or stored in a local named as one.
            if (up?.type === 'argument_list' && up.parent?.type === 'call_expression') {
              const f = up.parent.childForFieldName('function');
              const isWrite = f?.type === 'field_expression' && f.childForFieldName('field')?.text === 'write' && up.namedChildren[1]?.id === u.id;
              if (isWrite) {
                const target = f!.childForFieldName('argument')?.text ?? '';
                // From the last lane only: the lane publishes its prefix as the warp's total.
                const fromLast = m.deviceBranchesAround(up.parent).some((b) => {
                  const cond = unparen(b.condition);
                  if (b.inElse || cond?.type !== 'binary_expression' || cond.childForFieldName('operator')?.type !== '==') return false;
                  const [l, r] = [cond.childForFieldName('left'), cond.childForFieldName('right')];
                  return (isLane(m, l) && isLastLane(m, r, width)) || (isLane(m, r) && isLastLane(m, l, width));
                });
                if (fromLast) report(up.parent, 'lastLane', name);
                else if (END_NAME.test(target)) report(up.parent, 'end', name);
                continue;
              }
            }
            if (up?.type === 'init_declarator' && up.childForFieldName('value')?.id === u.id && END_NAME.test(up.childForFieldName('declarator')?.text ?? '')) {
              report(up.parent ?? up, 'end', name);
              continue;
            }
            // (c) p >= v / v <= p: true for an inclusive prefix of non-negative values, not for this one.
            if (up?.type === 'binary_expression' && /^(>=|>|<=|<)$/.test(up.childForFieldName('operator')?.type ?? '') && c.name !== 'warp_prefix_count_bits') {
              const other = up.childForFieldName('left')?.id === u.id ? up.childForFieldName('right') : up.childForFieldName('left');
              if (unparen(other)?.text === value) report(up, 'compare', name);
            }
          }
        }
      },
    };
  },
});

import { luisaModel, type LuisaModel } from '../../../src/analysis/luisa.js';
import { quote, unparen } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

/**
 * A Callable cannot see its call sites, so its lane-index parameters (`UInt lane`, `UInt lane_id`) are
 * taken at their name: the callers pass warp_lane_id() there.
 */
const LANE_PARAM = /^(lane|lane_id|lane_idx|laneid|lane_index|warp_lane|tid|thread_id)$/i;
function laneParamsOf(params: SyntaxNode[]): Set<string> {
  const out = new Set<string>();
  for (const p of params) {
    const d = p.childForFieldName('declarator');
    const name = d?.type === 'identifier' ? d.text : d?.descendantsOfType('identifier')[0]?.text;
    if (name && LANE_PARAM.test(name)) out.add(name);
  }
  return out;
}
function mentions(e: SyntaxNode, names: Set<string>): boolean {
  if (!names.size) return false;
  return e.descendantsOfType('identifier').some((i) => names.has(i.text));
}

export default defineCheck({
  id: 'luisa/shuffle-in-divergent-branch',
  pass: 3,
  severity: 'high',
  kind: 'correctness',
  confidence: 'medium',
  languages: ['luisa-dsl'],
  citation: '000 §3.7 step 3, rule 1 ("All lanes must participate in every shuffle"); 000 §7 rule 13',
  summary: 'warp_read_lane inside a lane-divergent $if: the source lane may not have executed the shuffle.',
  why: 'warp_read_lane reads from the source lane only if that lane executed the same call, so inside a $if that splits the 32 lanes of a warp the value read from a lane that skipped it is undefined (000 §3.7 step 3 rule 1, §7 rule 13).',
  messages: {
    divergent: '`{{call}}` is called inside a lane-divergent $if (`{{cond}}`); if the source lane skipped the call, the value read is undefined. Compute the shuffle unconditionally (`auto t = {{call}};` above the $if) and guard only the consumer.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(luisaModel);
        // warp_read_first_active_lane is not listed: its source is by definition a lane that executed
        // the call, so it is well defined in any branch (000 §1.4, §3.7 step 2 "broadcast").
        for (const c of m.callsNamed('warp_read_lane')) {
          if (c.receiver || !m.inDeviceCode(c.node)) continue;
          // Only a condition that differs between lanes of one warp splits the warp; a branch on the
          // warp index (`thread_x() / warp_lane_count() == 0u`) or on a kernel argument keeps it whole.
          const body = m.bodyOf(c.node);
          const laneParams = body?.kind === 'Callable' ? laneParamsOf(body.params) : null;
          const divergent = m.deviceBranchesAround(c.node).filter((b) => b.condition && (m.warpDivergent(b.condition) || (laneParams !== null && mentions(b.condition, laneParams))));
          if (!divergent.length) continue;
          // A source lane that provably takes the same branches is active: `$if (lane == 0u | lane == 6u)
          // { … warp_read_lane(v, 0u) … }` (the sparse-mask tests of LuisaCompute), or a lane reading itself.
          const isLane = (n: SyntaxNode | null): boolean => laneRef(m, n, laneParams);
          const srcNode = unparen(c.args[1] ?? null);
          const src = m.constValue(srcNode);
          const selfRead = isLane(srcNode);
          const sourceActive = selfRead || (src !== null && divergent.every((b) => {
            const v = evalCond(m, b.condition!, src, isLane);
            return v !== null && v !== b.inElse;
          }));
          if (sourceActive) continue;
          const div = divergent[0];
          ctx.report({
            node: c.node,
            messageId: 'divergent',
            data: { call: quote(c.node), cond: quote(div.condition!) },
            fix: { description: 'Hoist the shuffle above the $if into a local and keep only its use inside the branch.' },
          });
        }
      },
    };
  },
});

/** `warp_lane_id()`, a local initialized with it, or a Callable's lane parameter. */
function laneRef(m: LuisaModel, n: SyntaxNode | null, params: Set<string> | null): boolean {
  const u = unparen(n);
  if (!u) return false;
  if (u.type === 'call_expression') return u.childForFieldName('function')?.text === 'warp_lane_id';
  if (u.type !== 'identifier') return false;
  if (params?.has(u.text)) return true;
  const d = m.declOf(u.text, u);
  const v = unparen(d?.value ?? null);
  return !!v && !d!.param && v.type === 'call_expression' && v.childForFieldName('function')?.text === 'warp_lane_id';
}

/** Value of a lane condition for one lane, or null when it depends on anything else. */
function evalCond(m: LuisaModel, e: SyntaxNode, lane: number, isLane: (n: SyntaxNode) => boolean): number | boolean | null {
  const u = unparen(e);
  if (!u) return null;
  if (isLane(u)) return lane;
  const k = m.constValue(u);
  if (k !== null) return k;
  if (u.type === 'unary_expression' && u.childForFieldName('operator')?.type === '!') {
    const v = evalCond(m, u.childForFieldName('argument')!, lane, isLane);
    return v === null ? null : !v;
  }
  if (u.type !== 'binary_expression') return null;
  const op = u.childForFieldName('operator')?.type ?? '';
  const l = evalCond(m, u.childForFieldName('left')!, lane, isLane);
  const r = evalCond(m, u.childForFieldName('right')!, lane, isLane);
  if (l === null || r === null) return null;
  const a = Number(l);
  const b = Number(r);
  switch (op) {
    case '<': return a < b;
    case '<=': return a <= b;
    case '>': return a > b;
    case '>=': return a >= b;
    case '==': return a === b;
    case '!=': return a !== b;
    case '&&': return !!a && !!b;
    case '||': return !!a || !!b;
    // DSL booleans combine with `|` and `&` (Expr<bool> overloads).
    case '|': return typeof l === 'boolean' && typeof r === 'boolean' ? l || r : a | b;
    case '&': return typeof l === 'boolean' && typeof r === 'boolean' ? l && r : a & b;
    case '%': return b ? a % b : null;
    case '^': return a ^ b;
    case '+': return a + b;
    case '-': return a - b;
    default: return null;
  }
}

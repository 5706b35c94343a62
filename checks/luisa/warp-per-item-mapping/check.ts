import { luisaModel, type DslBody, type LuisaModel } from '../../../src/analysis/luisa.js';
import { quote, unparen } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';
import { escapeRe as esc } from '../../../src/core/regex.js';

/** `block_id().x` / `block_x()`: the block index alone. */
function isBlockIndex(n: SyntaxNode | null): boolean {
  const u = unparen(n);
  if (!u) return false;
  if (u.type === 'field_expression') return u.childForFieldName('field')?.text === 'x' && /^block_id\s*\(\s*\)$/.test(u.childForFieldName('argument')?.text ?? '');
  return u.type === 'call_expression' && u.childForFieldName('function')?.text === 'block_x';
}
const hasBlockIndex = (n: SyntaxNode): boolean => isBlockIndex(n) || n.descendantsOfType(['field_expression', 'call_expression']).some(isBlockIndex);
/** The warp-in-block term: `thread_x() / warp_lane_count()` (or `/ kWarp`, `>> 5u`), or a local holding it. */
function hasWarpIndex(m: LuisaModel, n: SyntaxNode, depth = 0): boolean {
  for (const x of [n, ...n.descendantsOfType(['binary_expression', 'identifier'])]) {
    if (x.type === 'binary_expression' && ['/', '>>'].includes(x.childForFieldName('operator')?.type ?? '') && /\bthread_(x\s*\(|id\s*\(\s*\)\s*\.\s*x)/.test(x.childForFieldName('left')?.text ?? '')) return true;
    if (x.type === 'identifier' && depth < 2) {
      const d = m.declOf(x.text, x);
      if (d?.value && !d.param && hasWarpIndex(m, d.value, depth + 1)) return true;
    }
  }
  return false;
}
const isLaneId = (m: LuisaModel, n: SyntaxNode): boolean => {
  if (n.type === 'call_expression') return n.childForFieldName('function')?.text === 'warp_lane_id';
  if (n.type === 'identifier') {
    const d = m.declOf(n.text, n);
    const v = unparen(d?.value ?? null);
    return !!v && !d!.param && v.type === 'call_expression' && v.childForFieldName('function')?.text === 'warp_lane_id';
  }
  return false;
};

export default defineCheck({
  id: 'luisa/warp-per-item-mapping',
  pass: 3,
  severity: 'high',
  kind: 'correctness',
  confidence: 'medium',
  languages: ['luisa-dsl'],
  citation: '000 §3.8 Block-Size Scaling: One Warp per Independent Work Item (item_idx mapping; "Keep the tail guard"); 000 §7 rule 14',
  summary: 'Warp-per-item kernel with several warps per block that maps items by block_id() alone, or has no tail guard.',
  why: 'With several warps per block, item = block_id().x gives every warp of the block the same item (duplicated work and racing writes, and 1 − 1/warps_per_block of the items never processed), and without $if (item < n) the idle warps of the last block read and write past the end (000 §3.8, §7 rule 14).',
  messages: {
    block: 'Warp-per-item kernel with {{warps}} warps per block ({{threads}} threads) maps items with block_id() alone (`{{code}}`); use item = block_id().x * {{warps}}u + thread_x() / warp_lane_count() and guard item < num_items.',
    guard: 'Warp-per-item kernel maps items per warp (`{{code}}`) but has no tail guard; wrap the item work in $if ({{item}} < num_items) {…}; so idle warps of the last block stay harmless.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(luisaModel);
        const laneCalls = m.callsNamed('warp_lane_id');
        if (!laneCalls.length) return;
        const kernels = new Map<number, DslBody>();
        for (const c of laneCalls) {
          const k = m.kernelOf(c.node);
          if (k && k.kind !== 'Callable' && (k.blockSize?.product ?? 0) > 32) kernels.set(k.node.id, k);
        }
        for (const k of kernels.values()) {
          const threads = k.blockSize!.product!;
          const warps = Math.floor(threads / 32);
          const decls = k.body.descendantsOfType('init_declarator');
          const idsByName = new Map<string, SyntaxNode[]>();
          for (const i of k.body.descendantsOfType('identifier')) {
            const l = idsByName.get(i.text);
            if (l) l.push(i);
            else idsByName.set(i.text, [i]);
          }
          for (const d of decls) {
            const name = d.childForFieldName('declarator');
            let value = d.childForFieldName('value');
            if (value?.type === 'initializer_list' || value?.type === 'argument_list') value = value.namedChildren[0] ?? null;
            if (name?.type !== 'identifier' || !value) continue;
            // Only an index built from the block index can be an item mapping.
            if (!/\bblock_(id|x)\s*\(/.test(m.source.text.slice(value.startIndex, value.endIndex))) continue;
            const item = name.text;
            const uses = (idsByName.get(item) ?? []).filter((i) => i.text === item && i.startIndex > d.endIndex && m.declOf(item, i)?.node.id === d.parent?.id);
            // The item is used to address data together with the lane: `row.read(item * K + lane)`.
            const laneAddressed = uses.some((u) => {
              let e: SyntaxNode = u;
              while (e.parent && ['binary_expression', 'parenthesized_expression'].includes(e.parent.type)) e = e.parent;
              return e.id !== u.id && [e, ...e.descendantsOfType(['call_expression', 'identifier'])].some((x) => isLaneId(m, x));
            });
            if (!laneAddressed) continue;
            if (isBlockIndex(value)) {
              ctx.report({ node: d, messageId: 'block', data: { warps, threads, code: quote(d) } });
              continue;
            }
            if (!hasBlockIndex(value) || !hasWarpIndex(m, value)) continue;
            // Correct mapping: every use of the item outside conditions sits under `$if (item < n)`,
            // or an early `$if (item >= n) { $return; };` precedes it.
            const guardRe = new RegExp(`\\b${esc(item)}\\b\\s*(<|<=)|(>|>=)\\s*\\b${esc(item)}\\b`);
            const exitRe = new RegExp(`\\b${esc(item)}\\b\\s*(>=|>)|(<|<=)\\s*\\b${esc(item)}\\b`);
            const earlyExit = k.body.descendantsOfType('if_statement').some((s) => m.isDeviceBranch(s) && s.startIndex > d.endIndex && exitRe.test(m.conditionOf(s)?.text ?? '') && /\$return\b|\breturn\b/.test(s.childForFieldName('consequence')?.text ?? ''));
            if (earlyExit) continue;
            const unguarded = uses.some((u) => {
              for (let p = u.parent; p && p.id !== k.body.id; p = p.parent) {
                if ((p.type === 'condition_clause' || p.type === 'parenthesized_expression') && p.parent?.type === 'if_statement' && m.isDeviceBranch(p.parent)) return false;
              }
              return !m.deviceBranchesAround(u).some((b) => b.condition && !b.inElse && guardRe.test(b.condition.text));
            });
            if (unguarded) ctx.report({ node: d, messageId: 'guard', data: { code: quote(d), item } });
          }
        }
      },
    };
  },
});

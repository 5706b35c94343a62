import { luisaModel, type LuisaModel } from '../../../src/analysis/luisa.js';
import { contains, unparen } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';
import { alternation } from '../../../src/core/regex.js';

const HALVES = /^([A-Za-z_]\w*)\s*(?:>>=\s*1u?|\/=\s*2u?|=\s*\1\s*(?:>>\s*1u?|\/\s*2u?))\s*;?$/;
const LOOPS = new Set(['while_statement', 'for_statement', 'do_statement', 'if_statement']);
/** Warp collectives that already do phase 1 (or a warp hand-off at the bottom of the tree). */
const WARP_STEP = /^(warp_active_(sum|min|max|product)|warp_read_lane)$/;
const BUILTIN: Record<string, string> = { '+': 'warp_active_sum', min: 'warp_active_min', max: 'warp_active_max' };

/** A name that denotes a `Shared<T>` at `at`: a declaration in the source, or a `Shared<T> &` parameter of a generator. */
function isShared(m: LuisaModel, name: string, at: SyntaxNode): boolean {
  if (m.shared.some((s) => s.name === name && (!s.body || contains(s.body.body, at)))) return true;
  return /\bShared\s*</.test(m.declOf(name, at)?.type ?? '');
}

/** The array of a shared read (`s[i]`, `s.read(i)`, `(*s)[i]`, `s->read(i)`), or null. */
function sharedRead(m: LuisaModel, n: SyntaxNode): string | null {
  let base: SyntaxNode | null = null;
  if (n.type === 'subscript_expression') base = n.childForFieldName('argument');
  else if (n.type === 'call_expression') {
    const f = n.childForFieldName('function');
    if (f?.type === 'field_expression' && f.childForFieldName('field')?.text === 'read') base = f.childForFieldName('argument');
  }
  base = unparen(base);
  while (base && base.type === 'pointer_expression') base = unparen(base.namedChildren[base.namedChildren.length - 1]);
  return base?.type === 'identifier' && isShared(m, base.text, n) ? base.text : null;
}

/** How a statement combines shared reads: `s[a] += s[b]`, `s[a] + s[b]`, `max(s[a], s[b])`; null for any other (custom) combine. */
function combineIn(m: LuisaModel, stmt: SyntaxNode): { op: string; array: string } | null {
  for (const n of stmt.descendantsOfType(['assignment_expression', 'binary_expression', 'call_expression'])) {
    if (n.type === 'assignment_expression' && n.childForFieldName('operator')?.type === '+=') {
      const l = n.childForFieldName('left');
      const r = unparen(n.childForFieldName('right'));
      const a = l ? sharedRead(m, l) : null;
      if (a && r && sharedRead(m, r) === a) return { op: '+', array: a };
    }
    if (n.type === 'binary_expression' && n.childForFieldName('operator')?.type === '+') {
      const l = unparen(n.childForFieldName('left'));
      const r = unparen(n.childForFieldName('right'));
      const a = (l && sharedRead(m, l)) || (r && sharedRead(m, r));
      if (a) return { op: '+', array: a };
    }
    if (n.type === 'call_expression') {
      const f = n.childForFieldName('function')?.text;
      if (f !== 'max' && f !== 'min') continue;
      const a = (n.childForFieldName('arguments')?.namedChildren ?? []).map((x) => unparen(x)).map((x) => (x ? sharedRead(m, x) : null)).find((x) => x);
      if (a) return { op: f, array: a };
    }
  }
  return null;
}

export default defineCheck({
  id: 'luisa/shared-reduction-to-warp',
  pass: 3,
  severity: 'medium',
  kind: 'performance',
  confidence: 'high',
  languages: ['luisa-dsl'],
  citation: '000 §3.2 Shared-Memory Reduction → Warp Reduction; 000 §4.4 Block-Wide Tree Reduction in Shared Memory ("Prefer this whole-block form only when block_size > warp_size"); 000 §4.5 Two-Level Reduction; 000 §7 rules 1 and 3; 000 §5.7 (block reduction: 1,024-thread blocks −46…51 %)',
  summary: 'Block reduction done as a full Shared<T> halving tree with a sync_block() per level.',
  why: 'A full shared halving tree pays a block-wide sync_block() per level (8 levels for 256 threads) and 000 §5.7 measured it losing 46–51 % of its throughput at 1,024-thread blocks as barrier stragglers grow, while a warp_active_* per warp needs no barrier and leaves one partial per warp to combine (000 §3.2, §4.5).',
  messages: {
    tree: 'Block reduction `{{loop}}` is a full Shared<T> halving tree on `{{array}}` with a sync_block() per level{{figure}}; reduce within each warp with {{builtin}} first, then combine one partial per warp (two-level reduction).',
    oneWarp: 'Block reduction `{{loop}}` is a Shared<T> halving tree on `{{array}}` with a sync_block() per level, but the block has only {{threads}} threads (one warp): a single {{builtin}} replaces the array, the tree and every barrier.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(luisaModel);
        const seen = new Set<number>();
        for (const sync of m.callsNamed('sync_block')) {
          if (sync.receiver || !m.inDeviceCode(sync.node)) continue;
          let loop: SyntaxNode | null = sync.node.parent;
          while (loop && !(LOOPS.has(loop.type) && (loop.type !== 'if_statement' || m.dslKind(loop) === 'dsl-for')) && loop.type !== 'lambda_expression' && loop.type !== 'function_definition') loop = loop.parent;
          if (!loop || !LOOPS.has(loop.type) || seen.has(loop.id)) continue;
          seen.add(loop.id);
          const body = loop.type === 'if_statement' ? loop.childForFieldName('consequence') : loop.childForFieldName('body');
          if (!body) continue;
          // The halving variable: the `for` update or a `half /= 2u;` statement in the body.
          const halving = new Set<string>();
          const upd = loop.type === 'for_statement' ? loop.childForFieldName('update')?.text.trim() : undefined;
          const hu = upd ? HALVES.exec(upd) : null;
          if (hu) halving.add(hu[1]);
          for (const s of body.namedChildren) {
            const h = HALVES.exec(s.text.trim());
            if (h) halving.add(h[1]);
          }
          if (!halving.size) continue;
          // `$if (tid < half)`: the active half of the block shrinks each level.
          const guard = body.descendantsOfType('if_statement').find((s) => {
            if (!m.isDeviceBranch(s)) return false;
            const c = unparen(m.conditionOf(s));
            if (c?.type !== 'binary_expression' || c.childForFieldName('operator')?.type !== '<') return false;
            const r = unparen(c.childForFieldName('right'));
            const l = c.childForFieldName('left');
            // In generator code the thread index arrives as a parameter the model cannot see into.
            return !!r && r.type === 'identifier' && halving.has(r.text) && (m.laneDependent(l) || (!m.bodyOf(loop!) && m.constValue(l) === null));
          });
          if (!guard) continue;
          let combine: { op: string; array: string } | null = null;
          for (const s of body.descendantsOfType(['expression_statement', 'declaration'])) {
            if ((combine = combineIn(m, s))) break;
          }
          if (!combine) continue;
          // A compare-exchange that also writes the upper slot (`s[tid + half] = max(a, b)`) is a sorting
          // network, not a reduction: a tree only ever writes the lower half.
          const arr = combine.array;
          const halfRe = new RegExp(`\\b(${alternation([...halving])})\\b`);
          const writesUpper = body.descendantsOfType('assignment_expression').some((a) => {
            const l = a.childForFieldName('left');
            return l?.type === 'subscript_expression' && l.childForFieldName('argument')?.text === arr && halfRe.test(l.childForFieldName('indices')?.text ?? '');
          }) || m.callsIn(body, 'write').some((w) => w.receiver?.text === arr && halfRe.test(w.args[0]?.text ?? ''));
          if (writesUpper) continue;
          // Already two-level (phase 1 with warp_active_*), or the tree hands its last 32 values to a warp step.
          const kernel = m.kernelOf(loop);
          const scope = kernel?.body ?? m.generatorOf(loop);
          if (scope && m.calls.some((c) => !c.receiver && WARP_STEP.test(c.name) && contains(scope, c.node))) continue;
          const threads = kernel?.blockSize?.product ?? null;
          const width = kernel?.warpSize?.value ?? 32;
          const v = [...halving][0];
          const head = loop.type === 'for_statement'
            ? `for (${loop.childForFieldName('initializer')?.text.replace(/;$/, '') ?? ''}; ${loop.childForFieldName('condition')?.text ?? ''}; ${upd ?? ''})`
            : loop.type === 'while_statement'
              ? `${m.dslKind(loop) ? '$while' : 'while'} ${loop.childForFieldName('condition')?.text ?? ''}`
              : `$for ${loop.childForFieldName('condition')?.text ?? ''}`;
          const builtin = BUILTIN[combine.op];
          if (threads !== null && threads <= width) {
            ctx.report({ node: loop, messageId: 'oneWarp', data: { loop: head, array: combine.array, threads, builtin } });
            continue;
          }
          const levels = threads ? Math.round(Math.log2(threads)) : null;
          const figure = levels && threads
            ? ` (${levels} levels and at least ${levels} block-wide barriers for the ${threads}-thread block, against one barrier after a warp_active_* over ${Math.ceil(threads / width)} warps)`
            : ` (one barrier per halving of \`${v}\`)`;
          ctx.report({ node: loop, messageId: 'tree', data: { loop: head, array: combine.array, figure, builtin } });
        }
      },
    };
  },
});


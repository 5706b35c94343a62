import { onceGuarded } from '../../../src/analysis/once.js';
import { pythonModel, type PyModel } from '../../../src/analysis/python.js';
import { lastName, matchesVocab, pyArgs, quote, unparen } from '../../../src/analysis/syntax.js';
import { defineCheck, type CheckContext } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';
import { MALLOC_RAW } from '../../../src/config/costs.js';

const PLAIN_FIX =
  'Size the output once: count per item on the device, offsets with `cp.cumsum` (exclusive: shift by one), read the total back once, allocate the output once, then one scatter launch that writes each item at its offset.';
const PROJECT_FIX =
  'Size the output once: count per item on the device, `d_off = exclusive_sum(d_counts, synchronize=False)`, `total = count_scatter_total(runtime, d_counts, d_off)`, one `runtime.allocate((total,), dtype)`, then one scatter launch that writes each item at its offset.';

const fixText = (ctx: { projectVocabulary: boolean }) => (ctx.projectVocabulary ? PROJECT_FIX : PLAIN_FIX);

// CuPy returns views for these (no allocation): collecting views and joining them once is a gather, not growth.
const VIEW_METHODS = /^(view|reshape|ravel|transpose|swapaxes|squeeze|T)$/;
const COMPREHENSIONS = ['list_comprehension', 'generator_expression'];

/**
 * The loop runs a fixed small number of times (≤ 4): `for d in (d_a, d_b)`, `for k in range(3)`.
 * The catalog allows joining a handful of arrays; that is what such a loop does.
 */
function smallFixedLoop(loop: SyntaxNode): boolean {
  const right = unparen(loop.type === 'for_statement' ? loop.childForFieldName('right') : loop.namedChildren.find((c) => c.type === 'for_in_clause')?.childForFieldName('right'));
  if (!right) return false;
  if (right.type === 'tuple' || right.type === 'list') return right.namedChildren.length <= 4;
  if (right.type === 'call' && right.childForFieldName('function')?.text === 'range') {
    const nums = pyArgs(right).positional.map((a) => (/^\d+$/.test(a.text) ? Number(a.text) : null));
    if (nums.length === 1 && nums[0] !== null) return nums[0] <= 4;
    if (nums.length === 2 && nums[0] !== null && nums[1] !== null) return nums[1] - nums[0] <= 4;
  }
  return false;
}

/** A device view of existing memory rather than a new allocation: `d_x[a:b]`, `d_x.reshape(...)`, or a name bound to one. */
function isView(m: PyModel, e: SyntaxNode, scope: SyntaxNode, depth = 0): boolean {
  const u = unparen(e);
  if (!u) return false;
  if (u.type === 'subscript') return m.isDevice(u.childForFieldName('value'));
  if (u.type === 'attribute') return u.childForFieldName('attribute')?.text === 'T' && m.isDevice(u.childForFieldName('object'));
  if (u.type === 'call') {
    const fn = u.childForFieldName('function');
    return fn?.type === 'attribute' && VIEW_METHODS.test(fn.childForFieldName('attribute')?.text ?? '') && m.isDevice(fn.childForFieldName('object'));
  }
  if (u.type === 'identifier' && depth < 3) {
    const binds = m.assignmentsIn(scope).get(u.text) ?? [];
    let last: SyntaxNode | null = null;
    for (const b of binds) if (b.node.startIndex < u.startIndex && b.value.type !== 'assignment') last = b.value;
    return !!last && isView(m, last, scope, depth + 1);
  }
  return false;
}

function skip(m: PyModel, n: SyntaxNode): boolean {
  return m.debugGated(n) || m.inCpuFallback(n);
}

/**
 * Growth behind a capacity test that the block raises (`if need > cap: ...; cap = 2 * need`) or on the
 * first iteration only: amortized O(log n) reallocations, the grow-only buffer pattern, not per-item growth.
 */
const amortized = (n: SyntaxNode) => onceGuarded(n);

/** `X = cp.concatenate([X, …])`, `X = cp.append(X, …)`, `X = cp.hstack((…, X))` inside a loop. */
function joinGrowth(ctx: CheckContext, m: PyModel, call: SyntaxNode): boolean {
  const name = lastName(m.callPath(call));
  if (!name || !ctx.config.vocab.array_join_calls.includes(name) || !m.isDevice(call)) return false;
  const assign = call.parent;
  if (assign?.type !== 'assignment' || assign.childForFieldName('right')?.id !== call.id) return false;
  const target = assign.childForFieldName('left');
  if (!target || (target.type !== 'identifier' && target.type !== 'attribute')) return false;
  const { positional } = pyArgs(call);
  const first = unparen(positional[0]);
  if (!first) return false;
  const parts = name === 'append' ? positional.slice(0, 1) : first.type === 'list' || first.type === 'tuple' ? first.namedChildren : [];
  if (!parts.some((p) => unparen(p)?.text === target.text)) return false;
  const loop = m.loopOf(call);
  if (!loop || smallFixedLoop(loop) || amortized(call)) return false;
  ctx.report({ node: call, messageId: 'grow', data: { name: target.text, code: quote(assign) }, fix: { description: fixText(ctx) } });
  return true;
}

/** `X.resize(n)`, `X = cp.resize(X, n)`, `runtime.resize(X, n)` with X on the device, inside a loop. */
function resizeGrowth(ctx: CheckContext, m: PyModel, call: SyntaxNode): void {
  const path = m.callPath(call);
  if (!matchesVocab(path, ctx.config.vocab.resize_calls)) return;
  const fn = call.childForFieldName('function');
  const recv = fn?.type === 'attribute' ? fn.childForFieldName('object') : null;
  let grown: SyntaxNode | null = null;
  if (recv && m.isDevice(recv)) grown = recv;
  else {
    const first = unparen(pyArgs(call).positional[0]);
    if (!first || !m.isDevice(first)) return;
    const assign = call.parent?.type === 'assignment' && call.parent.childForFieldName('right')?.id === call.id ? call.parent : null;
    // `d_small = cp.resize(d_src, n)` makes a new array from another one: not a buffer growing in place.
    if (assign && assign.childForFieldName('left')?.text !== first.text) return;
    grown = first;
  }
  const loop = m.loopOf(call);
  if (!loop || smallFixedLoop(loop) || amortized(call)) return;
  ctx.report({ node: call, messageId: 'grow', data: { name: grown.text, code: quote(call.parent?.type === 'assignment' ? call.parent : call) }, fix: { description: fixText(ctx) } });
}

interface Collect {
  call: SyntaxNode;
  list: string;
  loop: SyntaxNode;
}

/** `parts.append(<DEVICE>)` (or `extend([...])`, `parts += [...]`) inside a loop; the list must be fresh before that loop. */
function collectInLoop(m: PyModel, n: SyntaxNode): Collect | null {
  let list: SyntaxNode | null = null;
  let items: SyntaxNode[] = [];
  if (n.type === 'call') {
    const fn = n.childForFieldName('function');
    const meth = fn?.type === 'attribute' ? fn.childForFieldName('attribute')?.text : null;
    if (meth !== 'append' && meth !== 'extend') return null;
    list = fn!.childForFieldName('object');
    const arg = unparen(pyArgs(n).positional[0]);
    if (!arg) return null;
    items = meth === 'append' ? [arg] : arg.type === 'list' || arg.type === 'tuple' ? arg.namedChildren : [];
  } else if (n.type === 'augmented_assignment' && n.children.some((c) => c.type === '+=')) {
    list = n.childForFieldName('left');
    const right = unparen(n.childForFieldName('right'));
    items = right?.type === 'list' ? right.namedChildren : [];
  }
  if (list?.type !== 'identifier' || !items.length) return null;
  const scope = m.scopeOf(n);
  if (!items.some((e) => m.isDevice(e) && !isView(m, e, scope))) return null;
  // Innermost loop around the append that the list was created before: the loop that grows it.
  const binds = m.assignmentsIn(scope).get(list.text) ?? [];
  let init: SyntaxNode | null = null;
  for (const b of binds) if (b.node.startIndex < n.startIndex && !(b.node.startIndex <= n.startIndex && n.endIndex <= b.node.endIndex)) init = b.node.type === 'augmented_assignment' ? init : b.value;
  const fresh = !!init && ((init.type === 'list' && init.namedChildren.length === 0) || (init.type === 'call' && init.text.replace(/\s+/g, '') === 'list()'));
  if (!fresh) return null;
  for (let loop = m.loopOf(n); loop; loop = m.loopOf(loop)) {
    if (COMPREHENSIONS.includes(loop.type)) return null;
    if (init!.startIndex < loop.startIndex) return smallFixedLoop(loop) ? null : { call: n, list: list.text, loop };
    if (init!.startIndex >= loop.startIndex && init!.endIndex <= loop.endIndex) {
      // Created inside this loop: the next loop in (if any) is the one that grows it, already handled.
      return null;
    }
  }
  return null;
}

export default defineCheck({
  id: 'memory/incremental-output-growth',
  pass: 5,
  severity: 'medium',
  kind: 'performance',
  confidence: 'medium',
  languages: ['python'],
  citation: '003 §1.6 Fragmentation Avoidance ("Count-scatter pattern uses a single output allocation sized by the prefix sum total, not incremental resizing")',
  summary: 'Device output grown in a loop (concatenate/append/resize, or device pieces collected and joined after the loop) instead of one count-scatter allocation.',
  why: 'Each growth step allocates a new, larger block from the pool and copies everything so far (O(n²) bytes moved, one allocation per iteration at ~1 µs from a pool or ' + MALLOC_RAW + ' raw each), fragmenting the pool, where count-scatter makes one allocation sized by the prefix-sum total (003 §1.1, §1.6).',
  messages: {
    grow: 'Device output `{{name}}` is grown incrementally (`{{code}}` in a loop); size it once from the count-scatter prefix-sum total.',
    collect: 'Device output is grown incrementally (`{{code}}` in a loop, joined by `{{join}}` after it); size it once from the count-scatter prefix-sum total.',
    comprehension: 'Device output is grown incrementally (`{{code}}` joins one new device array per item); size it once from the count-scatter prefix-sum total.',
  },
  fix: 'judgment',
  create(ctx) {
    const calls: SyntaxNode[] = [];
    const augmented: SyntaxNode[] = [];
    return {
      call(n: SyntaxNode) {
        calls.push(n);
      },
      augmented_assignment(n: SyntaxNode) {
        augmented.push(n);
      },
      'source:exit'() {
        const m = ctx.get(pythonModel);
        if (m.testOrBench) return;
        const vocab = ctx.config.vocab;
        const collects: Collect[] = [];
        const joinsOf = new Map<string, SyntaxNode[]>();
        for (const call of calls) {
          const path = m.callPath(call);
          const name = lastName(path);
          const joinName = !!name && vocab.array_join_calls.includes(name);
          if (!joinName && name !== 'append' && name !== 'extend' && !matchesVocab(path, vocab.resize_calls)) continue;
          const joins = joinName && name !== 'append';
          if (joins) {
            const first = unparen(pyArgs(call).positional[0]);
            if (first?.type === 'identifier' && (m.isDevice(call) || m.isNumpyPath(m.callPath(call)))) {
              const list = joinsOf.get(first.text) ?? [];
              list.push(call);
              joinsOf.set(first.text, list);
            }
            // `cp.concatenate([make_piece(b) for b in blocks])`: the list-append pattern in one expression.
            if (first && COMPREHENSIONS.includes(first.type) && m.isDevice(call) && !skip(m, call)) {
              const body = first.namedChildren[0];
              if (body && body.type === 'call' && m.isDevice(body) && !isView(m, body, m.scopeOf(call)) && !smallFixedLoop(first)) {
                ctx.report({ node: call, messageId: 'comprehension', data: { code: quote(call) }, fix: { description: fixText(ctx) } });
              }
            }
          }
          if (skip(m, call)) continue;
          if (joinGrowth(ctx, m, call)) continue;
          resizeGrowth(ctx, m, call);
          const c = collectInLoop(m, call);
          if (c) collects.push(c);
        }
        for (const a of augmented) {
          if (skip(m, a)) continue;
          const c = collectInLoop(m, a);
          if (c) collects.push(c);
        }
        for (const c of collects) {
          const scope = m.scopeOf(c.call);
          const join = (joinsOf.get(c.list) ?? []).find((j) => j.startIndex >= c.loop.endIndex && m.scopeOf(j).id === scope.id && m.flowsTo(c.loop, j));
          if (!join) continue;
          ctx.report({ node: c.call, messageId: 'collect', data: { code: quote(c.call), join: quote(join) }, fix: { description: fixText(ctx) } });
        }
      },
    };
  },
});

import { cudaModel } from '../../../src/analysis/cuda.js';
import { onceGuarded } from '../../../src/analysis/once.js';
import { pythonModel, type PyModel } from '../../../src/analysis/python.js';
import { allocatingTypes, constructionsOf } from '../../../src/analysis/raii.js';
import { lastName, pyArgs, unparen, oneLine } from '../../../src/analysis/syntax.js';
import { defineCheck, type CheckContext } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';


const HOIST = 'Allocate the pinned staging buffer once (at setup, sized for the largest chunk) and reuse it; copy each chunk into a slice of it.';

function checkCuda(ctx: CheckContext): void {
  const m = ctx.get(cudaModel);
  const vocab = ctx.config.vocab.pinned_alloc_calls;
  const hot = (n: SyntaxNode) => m.hotPath(n) && !m.debugGated(n) && !onceGuarded(n);
  for (const c of m.callsMatching(vocab)) {
    if (hot(c.node)) ctx.report({ node: c.node, messageId: 'pinned', data: { call: oneLine(c.node.text) }, fix: { description: HOIST } });
  }
  const wrappers = allocatingTypes(m, vocab);
  for (const k of constructionsOf(m, new Set(wrappers.keys()))) {
    if (!hot(k.node)) continue;
    ctx.report({ node: k.node, messageId: 'wrapper', data: { code: oneLine(k.node.text), api: wrappers.get(k.type)!.name, type: k.type }, fix: { description: HOIST } });
  }
}

/** The argument that sizes a CuPy pinned helper: `shape` / `size` / the prototype array of `*_like_pinned`. */
function sizeArg(call: SyntaxNode, name: string): SyntaxNode | null {
  const { positional, keywords } = pyArgs(call);
  if (/_like_pinned$/.test(name)) return keywords.get('shape') ?? positional[0] ?? keywords.get('a') ?? null;
  return positional[0] ?? keywords.get('shape') ?? keywords.get('size') ?? null;
}

/** Names a size expression reads: identifiers and the attribute chains rooted at them (`chunk.shape`). */
function readsOf(expr: SyntaxNode): Array<{ text: string; root: string }> {
  const out: Array<{ text: string; root: string }> = [];
  for (const id of [expr, ...expr.descendantsOfType('identifier')]) {
    if (id.type !== 'identifier') continue;
    const par = id.parent;
    if (par?.type === 'attribute' && par.childForFieldName('attribute')?.id === id.id) continue;
    if (par?.type === 'call' && par.childForFieldName('function')?.id === id.id) continue;
    if (par?.type === 'keyword_argument' && par.childForFieldName('name')?.id === id.id) continue;
    let chain: SyntaxNode = id;
    while (chain.parent?.type === 'attribute' && chain.parent.childForFieldName('object')?.id === chain.id) chain = chain.parent;
    out.push({ text: chain.text, root: id.text });
  }
  return out;
}

/**
 * Does the size change from one pass of the hot path to the next? In a loop: it reads a loop
 * variable or a name assigned inside the (outermost) loop. In a hot function without a loop: it reads
 * a parameter or a local (not `self.<attr>` or a module-level name), so it can differ per call.
 */
function sizeVaries(m: PyModel, call: SyntaxNode, size: SyntaxNode): boolean {
  const reads = readsOf(size);
  if (!reads.length) return false;
  const scope = m.scopeOf(call);
  let outer: SyntaxNode | null = null;
  for (let l = m.loopOf(call); l; l = m.loopOf(l)) outer = l;
  const assigns = m.assignmentsIn(scope);
  if (outer) {
    const inside = (n: SyntaxNode) => outer!.startIndex <= n.startIndex && n.endIndex <= outer!.endIndex;
    const bound = new Set<string>();
    for (const clause of [outer, ...outer.descendantsOfType(['for_statement', 'for_in_clause'])]) {
      if (clause.type !== 'for_statement' && clause.type !== 'for_in_clause') continue;
      const left = clause.childForFieldName('left');
      for (const i of left ? [left, ...left.descendantsOfType('identifier')] : []) if (i.type === 'identifier') bound.add(i.text);
    }
    return reads.some((r) => bound.has(r.root) || [r.text, r.root].some((k) => (assigns.get(k) ?? []).some((a) => inside(a.node))));
  }
  if (scope.type !== 'function_definition') return false;
  const params = new Set((scope.childForFieldName('parameters')?.descendantsOfType('identifier') ?? []).map((i) => i.text));
  return reads.some((r) => r.root !== 'self' && r.root !== 'cls' && (params.has(r.root) || assigns.has(r.root)));
}

function checkPython(ctx: CheckContext): void {
  const m = ctx.get(pythonModel);
  const vocab = ctx.config.vocab;
  const calls = ctx.source.root.descendantsOfType('call');
  // `set_pinned_memory_allocator()` / `(None)` turns CuPy's pinned pool off: every helper call is a cudaHostAlloc.
  const poolOff = calls.some((c) => lastName(m.callPath(c)) === 'set_pinned_memory_allocator' && ((a) => a.length === 0 || a[0].text === 'None')(pyArgs(c).positional));
  for (const call of calls) {
    const raw = m.callMatches(call, vocab.pinned_alloc_calls);
    const pooled = !raw && m.callMatches(call, vocab.pooled_pinned_alloc_calls);
    if (!raw && !pooled) continue;
    if (!m.hotPath(call) || m.debugGated(call) || onceGuarded(call)) continue;
    if (pooled && !poolOff) {
      // CuPy's default PinnedMemoryPool serves a repeated size from its free list without a CUDA call.
      const size = unparen(sizeArg(call, lastName(m.callPath(call)) ?? ''));
      if (!size || !sizeVaries(m, call, size)) continue;
      ctx.report({ node: call, messageId: 'pooledVarying', data: { call: oneLine(call.text) }, fix: { description: HOIST } });
      continue;
    }
    ctx.report({ node: call, messageId: 'pinned', data: { call: oneLine(call.text) }, fix: { description: HOIST } });
  }
}

export default defineCheck({
  id: 'sync/pinned-alloc-in-hot-path',
  pass: 2,
  severity: 'high',
  kind: 'performance',
  confidence: 'high',
  languages: ['cuda', 'python'],
  citation: '003 §2.4 Operations That Cause Implicit Synchronization (row "Page-locked host memory allocation: Device-wide")',
  summary: 'Page-locked (pinned) host allocation, registration or free in a loop or hot function.',
  why: 'Page-locked host allocation (cudaMallocHost/cudaHostAlloc/cudaHostRegister and their frees) is a device-wide synchronization (003 §2.4), so allocating staging buffers per iteration drains the GPU pipeline every time.',
  messages: {
    pinned: 'Page-locked host allocation `{{call}}` inside a hot path causes a device-wide sync; allocate pinned staging buffers once and reuse them.',
    pooledVarying:
      'Page-locked host allocation `{{call}}` inside a hot path with a size that changes each time: CuPy\'s pinned pool reuses only same-size blocks, so new sizes call cudaHostAlloc, a device-wide sync; allocate pinned staging buffers once and reuse them.',
    wrapper: '`{{code}}` calls {{api}} (through the {{type}} constructor) inside a hot path, a device-wide sync; allocate pinned staging buffers once and reuse them.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        if (ctx.source.language === 'cuda') checkCuda(ctx);
        else if (ctx.source.language === 'python') checkPython(ctx);
      },
    };
  },
});

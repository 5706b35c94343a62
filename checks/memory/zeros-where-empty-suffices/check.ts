import { pyStatement, unconditionalWithin } from '../../../src/analysis/flow.js';
import { pythonModel, type PyModel } from '../../../src/analysis/python.js';
import { lastName, pyArgs, quote, unparen } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

/** Initialising creators: each runs a fill kernel (memset) that `empty` / `empty_like` skip. */
const FILLING = new Set(['zeros', 'ones', 'full', 'zeros_like', 'ones_like', 'full_like']);
const EMPTY_OF: Record<string, string> = { zeros: 'empty', ones: 'empty', full: 'empty', zeros_like: 'empty_like', ones_like: 'empty_like', full_like: 'empty_like' };

/** The CuPy function a call names, with the file's import alias expanded (`xp.zeros` → `cupy.zeros`), or null. */
function cupyFunction(m: PyModel, call: SyntaxNode): string | null {
  const p = m.callPath(call);
  if (!p || !p.includes('.') || call.childForFieldName('function')?.descendantsOfType('call').length) return null;
  const head = p.split('.')[0];
  const mod = m.moduleOf(head) ?? (head === 'cp' ? 'cupy' : head);
  const full = mod + p.slice(head.length);
  return /^cupy(x)?\./.test(full) && !/\.cuda\./.test(full) ? full : null;
}

/** `buf[:]`, `buf[...]`, `buf[:, :]`: a subscript that names every element. */
function wholeSlice(sub: SyntaxNode): boolean {
  const idx = sub.namedChildren.slice(1);
  if (!idx.length) return false;
  const parts = idx.length === 1 && idx[0].type === 'tuple' ? idx[0].namedChildren : idx;
  return parts.length > 0 && parts.every((p) => p.type === 'ellipsis' || (p.type === 'slice' && p.namedChildren.length === 0) || p.text === ':');
}

/** Nodes after `from` in `scope` whose text is the buffer's name (`buf`, `self.buf`, `bufs['data']`). */
function usesAfter(m: PyModel, scope: SyntaxNode, target: SyntaxNode, from: SyntaxNode): SyntaxNode[] {
  if (target.type === 'identifier') return m.usesOf(target.text, scope).filter((u) => u.startIndex >= from.endIndex);
  return scope.descendantsOfType(target.type).filter((u) => u.text === target.text && u.startIndex >= from.endIndex);
}

/** The first use overwrites every element of the buffer before anything reads it. */
function overwrite(m: PyModel, use: SyntaxNode): SyntaxNode | null {
  const p = use.parent;
  if (!p) return null;
  // `buf.set(host)`: the host array is copied over the whole buffer.
  if (p.type === 'attribute' && p.childForFieldName('object')?.id === use.id && p.childForFieldName('attribute')?.text === 'set') {
    const call = p.parent;
    if (call?.type === 'call' && pyArgs(call).positional.length === 1) return call;
  }
  // `buf[:] = v` / `buf[...] = v`.
  if (p.type === 'subscript' && p.childForFieldName('value')?.id === use.id && wholeSlice(p)) {
    const a = p.parent;
    if (a?.type === 'assignment' && a.childForFieldName('left')?.id === p.id) return a;
  }
  // `cp.copyto(buf, src)`, `cp.multiply(a, b, out=buf)`: CuPy writes every element of the destination.
  const holder = p.type === 'keyword_argument' && p.childForFieldName('name')?.text === 'out' && p.childForFieldName('value')?.id === use.id ? p.parent : p;
  if (holder?.type === 'argument_list' && holder.parent?.type === 'call') {
    const call = holder.parent;
    const path = cupyFunction(m, call);
    if (!path) return null;
    if (p.type === 'keyword_argument') return call;
    if (lastName(path) === 'copyto' && pyArgs(call).positional[0]?.id === use.id) return call;
  }
  return null;
}

export default defineCheck({
  id: 'memory/zeros-where-empty-suffices',
  pass: 5,
  severity: 'low',
  kind: 'performance',
  confidence: 'medium',
  languages: ['python'],
  citation: '(derived) 003 §1.6 (keep needless device work off the allocation path); development corpus rows thinc-04, tomo-17, cusig-05 (cp.zeros/cp.ones buffers then overwritten whole)',
  summary: 'A device buffer is created with `cp.zeros` / `cp.ones` / `cp.full` and then overwritten in full before anything reads it.',
  why: 'The initialising creator launches a fill kernel over the whole buffer (a full write of its bytes) that the following copy or `out=` write throws away; `cp.empty` / `cp.empty_like` allocate from the pool without touching the memory.',
  messages: {
    zeros: '`{{code}}` fills the buffer, but its first use `{{first}}` overwrites every element: allocate it with `cp.{{empty}}` and skip the fill kernel.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(pythonModel);
        if (m.testOrBench) return;
        for (const a of ctx.source.root.descendantsOfType('assignment')) {
          const left = a.childForFieldName('left');
          const right = unparen(a.childForFieldName('right'));
          if (!left || right?.type !== 'call' || !['identifier', 'attribute', 'subscript'].includes(left.type)) continue;
          const full = cupyFunction(m, right);
          if (!full || !/^cupy\.\w+$/.test(full)) continue;
          const name = lastName(full) ?? '';
          if (!FILLING.has(name)) continue;
          const scope = m.scopeOf(a);
          const first = usesAfter(m, scope, left, a).sort((x, y) => x.startIndex - y.startIndex)[0];
          if (!first || !m.flowsTo(a, first)) continue;
          const w = overwrite(m, first);
          if (!w) continue;
          // The overwrite must run whenever the allocation does (not only in one branch).
          const block = pyStatement(a).parent;
          if (!block || !unconditionalWithin(w, block)) continue;
          ctx.report({
            node: right,
            messageId: 'zeros',
            data: { code: quote(right), first: quote(w), empty: EMPTY_OF[name] },
            fix: { description: `Allocate with \`cp.${EMPTY_OF[name]}\` (same shape and dtype arguments, no fill value): the buffer is overwritten in full before it is read.` },
          });
        }
      },
    };
  },
});

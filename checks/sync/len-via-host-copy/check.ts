import { pythonModel, type PyModel } from '../../../src/analysis/python.js';
import { matchesVocab, pyArgs, quote, unparen } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';
import { LAUNCH } from '../../../src/config/costs.js';

// Builtins that keep one item per element, so the length of their result is the array's first extent.
// `set`, `dict`, `filter` and slicing change the count and are left alone.
const LENGTH_PRESERVING = new Set(['list', 'tuple', 'sorted', 'reversed']);
// Expressions that need no parentheses in front of `.shape[0]`.
const PRIMARY = new Set(['identifier', 'attribute', 'subscript', 'call', 'parenthesized_expression']);

/**
 * The device array whose whole contents `e` brings to the host (or iterates element by element),
 * keeping one item per element: `X.get()`, `X.tolist()`, `cp.asnumpy(X)`, `runtime.copy_device_to_host(X)`,
 * `list(X)`, `list(cp.asnumpy(X))`, `sorted(X.get())`.
 */
const METADATA = new Set(['shape', 'ndim', 'size', 'dtype', 'nbytes', 'itemsize', 'strides']);

function copiedArray(m: PyModel, e: SyntaxNode | null, d2hCalls: readonly string[]): SyntaxNode | null {
  const u = unparen(e);
  if (u?.type !== 'call') return null;
  const fn = u.childForFieldName('function');
  const { positional, keywords } = pyArgs(u);
  if (fn?.type === 'attribute') {
    const obj = unparen(fn.childForFieldName('object'));
    const meth = fn.childForFieldName('attribute')?.text;
    if (obj && m.isDevice(obj) && ((meth === 'get' && positional.length === 0) || (meth === 'tolist' && positional.length === 0))) return obj;
  }
  if (matchesVocab(m.callPath(u), d2hCalls) && positional[0] && m.isDevice(positional[0])) return unparen(positional[0]);
  if (fn?.type === 'identifier' && LENGTH_PRESERVING.has(fn.text) && positional.length === 1 && (fn.text === 'sorted' || keywords.size === 0)) {
    const inner = unparen(positional[0]);
    if (inner && m.isDevice(inner)) return inner;
    return copiedArray(m, inner, d2hCalls);
  }
  return null;
}

export default defineCheck({
  id: 'sync/len-via-host-copy',
  pass: 2,
  severity: 'high',
  kind: 'performance',
  confidence: 'high',
  languages: ['python'],
  citation: '003 §8.1 Implicit Synchronization (row "len(cupy_array) that requires .get()" → "Use .shape[0]")',
  summary: 'Length of a device array taken through a full host copy instead of .shape[0].',
  why: 'The copy waits for every queued kernel and moves the whole array over PCIe only to count it, leaving the next launch to pay its launch overhead (' + LAUNCH + ') on an idle GPU, while `.shape[0]` is host metadata that costs nothing (003 §8.1 HIGH, §8.4).',
  messages: {
    len: 'Length taken through a host copy in `{{code}}`; use `{{fix}}`, which is metadata and needs no sync.',
    metadata: 'Shape read through a host copy in `{{code}}`; use `{{fix}}`, which is metadata and needs no sync.',
    bound: '`{{code}}` copies the whole array to the host, but `{{name}}` is only used for its metadata ({{uses}}); read `{{array}}.shape` / `.ndim` / `.dtype` on the device array instead, with no transfer or sync.',
  },
  fix: 'safe',
  // The `.get()` inside `len(...)` is the copy this rule's fix removes; one finding with the fix is enough.
  supersedes: ['host-device/d2h-mid-pipeline'],
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(pythonModel);
        if (m.testOrBench) return;
        const vocab = ctx.config.vocab;
        const text = ctx.source.text;
        const shadowed = m.assignmentsIn(ctx.source.root).has('len');
        const arrayText = (x: SyntaxNode) => (PRIMARY.has(x.type) ? x.text : `(${x.text})`);
        const report = (node: SyntaxNode, messageId: string, replacement: string) => {
          if (m.debugGated(node) || m.inCpuFallback(node)) return;
          const start = text.lastIndexOf('\n', node.startIndex - 1) + 1;
          const lines = ctx.linesOf(node);
          const edited = lines.slice(0, node.startIndex - start) + replacement + lines.slice(node.endIndex - start);
          ctx.report({
            node,
            messageId,
            data: { code: quote(node), fix: replacement },
            fix: { description: `Use \`${replacement}\`: the extent is array metadata, read without a transfer or a sync.`, replace: { from: node, text: edited } },
          });
        };

        // Cheap line filter first: only lines that take a length or a shape of something copied can match.
        const lines = text.split('\n');
        const lenRows = new Set<number>();
        const shapeRows = new Set<number>();
        lines.forEach((l, i) => {
          if (/\blen\(/.test(l) && /\.get\(|asnumpy|tolist|copy_device_to_host|\b(list|tuple|sorted|reversed)\(/.test(l)) lenRows.add(i);
          if (/\)\s*\.(shape|size|ndim)\b/.test(l)) shapeRows.add(i);
        });
        const root = ctx.source.root;
        for (const call of lenRows.size && !shadowed ? root.descendantsOfType('call') : []) {
          if (!lenRows.has(call.startPosition.row)) continue;
          const fn = call.childForFieldName('function');
          if (fn?.type !== 'identifier' || fn.text !== 'len') continue;
          const { positional } = pyArgs(call);
          if (positional.length !== 1) continue;
          const x = copiedArray(m, positional[0], vocab.d2h_calls);
          if (x) report(call, 'len', `${arrayText(x)}.shape[0]`);
        }
        // `h = d_x.numpy()` (or `.get()`, `cp.asnumpy(d_x)`) bound to a name that is then only asked for
        // `.shape` / `.ndim` / `.size` / `.dtype` / `len(h)`: the whole copy serves metadata the device array has.
        for (const d of m.d2h) {
          if (!['get', 'asnumpy', 'copy-to-host'].includes(d.kind) || d.scalar || d.node.type !== 'call') continue;
          const a = d.node.parent;
          const name = a?.type === 'assignment' && unparen(a.childForFieldName('right'))?.id === d.node.id ? a.childForFieldName('left') : null;
          if (name?.type !== 'identifier' || m.debugGated(d.node) || m.inCpuFallback(d.node)) continue;
          const scope = m.scopeOf(d.node);
          const later = m.assignmentsIn(scope).get(name.text)?.filter((x) => x.node.startIndex > a!.endIndex) ?? [];
          const end = later.length ? later[0].node.startIndex : scope.endIndex;
          const uses = m.usesOf(name.text, scope).filter((u) => u.startIndex > a!.endIndex && u.startIndex < end);
          if (!uses.length) continue;
          const meta = uses.every((u) => {
            const p = u.parent;
            if (p?.type === 'attribute' && p.childForFieldName('object')?.id === u.id) return METADATA.has(p.childForFieldName('attribute')?.text ?? '');
            return p?.type === 'argument_list' && p.parent?.childForFieldName('function')?.text === 'len' && !shadowed;
          });
          if (!meta) continue;
          const kinds = [...new Set(uses.map((u) => (u.parent?.type === 'attribute' ? '.' + u.parent.childForFieldName('attribute')!.text : 'len()')))].join(', ');
          ctx.report({ node: d.node, messageId: 'bound', data: { code: quote(d.node), name: name.text, uses: kinds, array: quote(d.target) } });
        }
        // `d_x.get().shape[0]`, `cp.asnumpy(d_x).size`: the same copy, read for metadata only.
        for (const attr of shapeRows.size ? root.descendantsOfType('attribute') : []) {
          if (!shapeRows.has(attr.endPosition.row)) continue;
          const name = attr.childForFieldName('attribute')?.text ?? '';
          if (!['shape', 'size', 'ndim'].includes(name)) continue;
          const obj = unparen(attr.childForFieldName('object'));
          if (obj?.type !== 'call' || (obj.childForFieldName('function')?.type === 'identifier' && LENGTH_PRESERVING.has(obj.childForFieldName('function')!.text))) continue;
          const x = copiedArray(m, obj, vocab.d2h_calls);
          if (!x || /\.tolist\(\)$/.test(obj.text)) continue;
          const node = name === 'shape' && attr.parent?.type === 'subscript' && attr.parent.childForFieldName('value')?.id === attr.id ? attr.parent : attr;
          report(node, 'metadata', `${arrayText(x)}${node.text.slice(obj.endIndex - node.startIndex)}`);
        }
      },
    };
  },
});

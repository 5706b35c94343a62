import { pythonModel } from '../../../src/analysis/python.js';
import { commentsAround, contains, lastName, matchesVocab, pyArgs, quote, unparen } from '../../../src/analysis/syntax.js';
import { defineCheck, type CheckContext } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';
import { LAUNCH } from '../../../src/config/costs.js';
import { alternation } from '../../../src/core/regex.js';

// Names of scan/reduce/sort/compaction wrappers (`reduce_sum`, `segmented_sort_pairs`, `compact_indices`).
const CCCL_LIKE = /(^|_)(sum|scan|reduce|sort|select|partition|unique|histogram|compact)(_|$)/;
const PY_NULL_STREAM = /^(None|0|(cp|cupy)\.cuda\.Stream\.null)$/;

/** `synchronize=` default of each function defined in this file that takes one (null: required or not a literal). */
function localDefaults(root: SyntaxNode): Map<string, boolean | null> {
  const out = new Map<string, boolean | null>();
  for (const fn of root.descendantsOfType('function_definition')) {
    const name = fn.childForFieldName('name')?.text;
    if (!name) continue;
    for (const p of fn.childForFieldName('parameters')?.namedChildren ?? []) {
      const pname = p.type === 'identifier' ? p.text : (p.childForFieldName('name') ?? p.namedChildren.find((c) => c.type === 'identifier'))?.text;
      if (pname !== 'synchronize') continue;
      const v = p.childForFieldName('value')?.text;
      out.set(name, v === 'True' ? true : v === 'False' ? false : null);
    }
  }
  return out;
}

function lineStart(text: string, index: number): number {
  return text.lastIndexOf('\n', index - 1) + 1;
}

export default defineCheck({
  id: 'sync/cccl-implicit-synchronize',
  pass: 2,
  severity: 'high',
  kind: 'performance',
  confidence: 'medium',
  languages: ['python'],
  citation: '003 §2.3 Synchronization Pitfalls (GOOD example `exclusive_sum(counts, synchronize=False)`)',
  summary: 'CCCL wrapper left to synchronize while more GPU work on the same stream follows.',
  why: 'The wrapper blocks the host until the GPU drains, then the next launch starts on an idle GPU and pays its launch overhead (' + LAUNCH + '), although the same stream would have ordered the two anyway (003 §2.3, §8.4; 003 §9 Pass 2 rates this HIGH).',
  messages: {
    defaultSync:
      'CCCL helper `{{code}}` called with its default synchronize behaviour in the middle of a pipeline (`{{next}}` follows on the same stream); pass synchronize=False and sync once before the host read.',
    explicitSync:
      'CCCL helper `{{code}}` called with synchronize=True in the middle of a pipeline (`{{next}}` follows on the same stream); pass synchronize=False and sync once before the host read.',
  },
  fix: 'safe',
  create(ctx: CheckContext) {
    return {
      'source:exit'() {
        const m = ctx.get(pythonModel);
        if (m.testOrBench) return;
        const vocab = ctx.config.vocab;
        const root = ctx.source.root;
        const text = ctx.source.text;
        const wrappers = new Set(vocab.cccl_sync_wrappers.filter((w) => !vocab.cccl_async_wrappers.includes(w)));
        if (!/\bsynchronize\b/.test(text) && ![...wrappers].some((w) => text.includes(w + '('))) return;
        const defaults = localDefaults(root);
        // Cheap line filter first: a candidate call names a wrapper or passes `synchronize=` on its first line.
        const names = [...wrappers, ...defaults.keys()].map((w) => w.replace(/\W/g, ''));
        const hint = new RegExp(`\\b(${alternation(names)})\\s*\\(|\\bsynchronize\\s*=`);
        const rows = new Set<number>();
        text.split('\n').forEach((l, i) => hint.test(l) && rows.add(i));
        if (!rows.size) return;
        const norm = (s: SyntaxNode | undefined) => (!s || PY_NULL_STREAM.test(s.text) ? null : s.text);

        // Host buffers filled or drained by async copies, and pinned memory: a later host access to one may
        // rely on the wrapper's sync, so dropping it would be a race.
        const hostBuffers = new Map<string, number>();
        const addBuffer = (name: string, at: number) => hostBuffers.set(name, Math.min(at, hostBuffers.get(name) ?? at));
        for (const call of /async|pinned/i.test(text) ? root.descendantsOfType('call') : []) {
          const p = m.callPath(call);
          if (matchesVocab(p, vocab.d2h_async_calls) || (matchesVocab(p, vocab.h2d_calls) && /async/i.test(p ?? ''))) {
            const { positional, keywords } = pyArgs(call);
            for (const a of [...positional, ...keywords.values()]) {
              const u = unparen(a);
              if (u?.type === 'identifier' && !m.isDevice(u) && !/stream|^s\d*$/i.test(u.text)) addBuffer(u.text, call.startIndex);
            }
          }
          if (p && /pinned/i.test(p) && call.parent?.type === 'assignment') {
            const left = call.parent.childForFieldName('left');
            if (left?.type === 'identifier') addBuffer(left.text, call.startIndex);
          }
        }

        for (const call of root.descendantsOfType('call')) {
          if (!rows.has(call.startPosition.row) && !rows.has(call.endPosition.row)) continue;
          const fnNode = call.childForFieldName('function');
          const shortName = fnNode?.type === 'identifier' ? fnNode.text : fnNode?.type === 'attribute' ? fnNode.childForFieldName('attribute')?.text : undefined;
          if (!shortName || (!wrappers.has(shortName) && !defaults.has(shortName) && !/\bsynchronize\s*=/.test(call.text))) continue;
          const path = m.callPath(call);
          const name = lastName(path);
          if (!name || !path) continue;
          const head = path.split('.')[0];
          // CuPy ufunc `.reduce`, numpy, functools.reduce and the raw cuda.compute algorithms take no `synchronize`.
          if (path.includes('.') && (vocab.device_modules.includes(head) || m.isNumpyPath(path) || vocab.cccl_modules.some((mod) => path.startsWith(mod + '.')) || /^(functools|operator|itertools)\./.test(path))) continue;
          if (/^(functools|operator)\b/.test(m.moduleOf(name) ?? '')) continue;
          const args = call.childForFieldName('arguments');
          const { keywords } = pyArgs(call);
          const kw = keywords.get('synchronize');
          let explicit = false;
          if (kw) {
            // An explicit `synchronize=True` only matters on a CCCL-style primitive, not on any helper with that keyword.
            if (kw.text !== 'True' || !(wrappers.has(name) || defaults.has(name) || vocab.cccl_calls.includes(name) || CCCL_LIKE.test(name))) continue;
            explicit = true;
          } else {
            if (args?.namedChildren.some((a) => a.type === 'dictionary_splat')) continue;
            const local = defaults.get(name);
            if (local !== undefined ? local !== true : !wrappers.has(name)) continue;
          }
          if (m.debugGated(call) || m.inCpuFallback(call)) continue;
          let stmt = call;
          while (stmt.parent && stmt.parent.type !== 'block' && stmt.parent.type !== 'module') stmt = stmt.parent;
          const markers = vocab.sync_fence_markers.map((x) => x.toLowerCase());
          if (commentsAround(stmt).some((c) => markers.some((mk) => c.toLowerCase().includes(mk)))) continue;

          const scope = m.scopeOf(call);
          const stream = norm(keywords.get('stream'));
          const next = m.gpuOps
            .map((o) => o.node)
            .filter((o) => m.scopeOf(o).id === scope.id && !contains(call, o) && !contains(o, call) && m.flowsTo(call, o))
            .sort((a, b) => a.startIndex - b.startIndex)[0];
          if (!next) continue;
          const nextStream = next.type === 'call' ? norm(pyArgs(next).keywords.get('stream')) : null;
          // The wrapper's sync is the only thing ordering work on another stream after it.
          if (nextStream !== stream) continue;
          const between = (n: SyntaxNode) => n.startIndex >= call.endIndex && n.startIndex < next.endIndex && m.scopeOf(n).id === scope.id;
          if (m.d2h.some((d) => between(d.node))) continue;
          const hostRead = scope
            .descendantsOfType('call')
            .some((c) => between(c) && !contains(c, next) && (matchesVocab(m.callPath(c), vocab.count_scatter_calls) || matchesVocab(m.callPath(c), vocab.timing_calls) || matchesVocab(m.callPath(c), vocab.sync_calls)));
          if (hostRead) continue;
          if ([...hostBuffers].some(([b, at]) => at < call.startIndex && m.usesOf(b, scope).some((u) => u.startIndex >= call.endIndex))) continue;

          // Rewrite: flip `synchronize=True`, or append `synchronize=False` before the closing parenthesis.
          const start = lineStart(text, call.startIndex);
          const lines = ctx.linesOf(call);
          let edited: string | null = null;
          if (kw) {
            const at = kw.startIndex - start;
            edited = lines.slice(0, at) + 'False' + lines.slice(at + kw.text.length);
          } else if (args && args.type === 'argument_list') {
            const end = start + lines.length;
            const close = args.endIndex - 1;
            const last = args.namedChildren.filter((a) => a.type !== 'comment').pop();
            const inner = text.slice(args.startIndex + 1, close);
            if (!last || last.endPosition.row === args.endPosition.row) {
              const head = text.slice(start, close).replace(/[ \t]+$/, '');
              const sep = inner.trim() === '' ? '' : /,\s*$/.test(inner) ? ' ' : ', ';
              edited = head + sep + 'synchronize=False' + text.slice(close, end);
            } else {
              // One argument per line with the `)` on its own line: add the keyword as a line of its own.
              const closeLine = lineStart(text, close);
              const tail = text.slice(last.endIndex, closeLine);
              const indent = /^[ \t]*/.exec(text.slice(lineStart(text, last.startIndex)))![0];
              edited = text.slice(start, last.endIndex) + (/^\s*,/.test(tail) ? '' : ',') + tail + indent + 'synchronize=False,\n' + text.slice(closeLine, end);
            }
          }
          ctx.report({
            node: call,
            messageId: explicit ? 'explicitSync' : 'defaultSync',
            data: { code: quote(call), next: quote(next) },
            fix: {
              description: 'Pass `synchronize=False`: the next operation runs on the same stream, so stream order already sequences it; sync once right before the host reads the result.',
              ...(edited !== null ? { replace: { from: call, text: edited } } : {}),
            },
          });
        }
      },
    };
  },
});

import { pythonModel, type D2H, type PyModel } from '../../../src/analysis/python.js';
import { calleePath, lastName, pyArgs } from '../../../src/analysis/syntax.js';
import { defineCheck, type FixSpec } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

/** Device creators whose first argument (or `shape=`) is the element count. */
const SIZED_CREATORS = new Set(['empty', 'zeros', 'ones', 'full', 'ndarray']);
const within = (outer: SyntaxNode, n: SyntaxNode) => outer.startIndex <= n.startIndex && n.endIndex <= outer.endIndex;
const oneLine = (s: string) => {
  const t = s.replace(/\s*\n\s*/g, ' ');
  return t.length > 60 ? t.slice(0, 57) + '...' : t;
};

// The two spellings the catalog marks safe-one-line: the exclusive-scan total read by hand.
const TOTAL_FORMS = [/^int\((\w+)\[-1\]\+(\w+)\[-1\]\)$/, /^int\((\w+)\[-1\]\)\+int\((\w+)\[-1\]\)$/];

const FIX_TEXT =
  'Compute the offsets with `exclusive_sum(d_counts, synchronize=False)`, take the total with `total = count_scatter_total(runtime, d_counts, d_offsets)` (the single sanctioned sync), then `runtime.allocate((total,), dtype)`.';

const PLAIN_FIX_TEXT =
  'Read the total in one transfer: `total = int((d_offsets[-1:] + d_counts[-1:]).get()[0])` (one sync instead of one per scalar), or keep the size on the device and allocate an upper bound.';

/** Which of two arrays holds the exclusive-scan offsets: the one computed from the other by `exclusive_*`, else by name. */
function offsetsAndCounts(m: PyModel, scope: SyntaxNode, a: string, b: string, at: SyntaxNode): { offsets: string; counts: string } | null {
  const scannedFrom = (name: string): string | null => {
    const binds = (m.assignmentsIn(scope).get(name) ?? []).filter((x) => x.node.endIndex <= at.startIndex);
    const v = binds.pop()?.value;
    if (v?.type !== 'call') return null;
    if (!/^exclusive_/.test(lastName(calleePath(v.childForFieldName('function'))) ?? '')) return null;
    return pyArgs(v).positional[0]?.text ?? null;
  };
  if (scannedFrom(a) === b) return { offsets: a, counts: b };
  if (scannedFrom(b) === a) return { offsets: b, counts: a };
  const isOff = (n: string) => /off/i.test(n);
  const isCnt = (n: string) => /count|cnt|size|len/i.test(n) && !isOff(n);
  if (isOff(a) && isCnt(b)) return { offsets: a, counts: b };
  if (isOff(b) && isCnt(a)) return { offsets: b, counts: a };
  return null;
}

/** The name `count_scatter_total` is bound to by this file's imports, if any. */
function countScatterName(root: SyntaxNode, names: string[]): string | null {
  for (const imp of root.descendantsOfType('import_from_statement')) {
    for (const nm of imp.childrenForFieldName('name')) {
      if (nm.type === 'dotted_name' && names.includes(nm.text)) return nm.text;
      if (nm.type === 'aliased_import' && names.includes(nm.childForFieldName('name')?.text ?? '')) return nm.childForFieldName('alias')?.text ?? null;
    }
  }
  return null;
}

export default defineCheck({
  id: 'host-device/alloc-sized-from-device-value',
  pass: 1,
  severity: 'critical',
  kind: 'performance',
  confidence: 'medium',
  languages: ['python'],
  citation:
    '003 §8.2 Host-Device Ping-Pong (detection rule 3: "conditional allocation based on device-side values without count_scatter_total()"); 003 §9 Pass 1 bullet 5',
  summary: 'Device buffer sized (or allocated under a condition) from a device value read back by hand instead of count_scatter_total().',
  why: 'Every hand-written read drains the pipeline and crosses PCIe before the buffer can be allocated, and int(d_offsets[-1]) + int(d_counts[-1]) pays that twice where count_scatter_total() pays it once (003 §8.2 CRITICAL, §2.4).',
  messages: {
    sized: 'Output buffer `{{alloc}}` is sized from a device value fetched by hand (`{{code}}`); {{remedy}} so the pipeline syncs exactly once.',
    conditional:
      'Output buffer `{{alloc}}` is allocated under a condition on a device value fetched by hand (`{{code}}`); {{remedy}} so the pipeline syncs exactly once.',
  },
  fix: 'safe',
  supersedes: ['host-device/sequential-get-for-totals', 'sync/scalar-conversion-of-device-value'],
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(pythonModel);
        if (m.testOrBench) return;
        const vocab = ctx.config.vocab;
        const root = ctx.source.root;
        const skip = (n: SyntaxNode) => m.debugGated(n) || m.inCpuFallback(n);
        const found = new Map<number, { d: D2H; origin: SyntaxNode; alloc: SyntaxNode; messageId: 'sized' | 'conditional' }>();

        const consider = (d: D2H, alloc: SyntaxNode, messageId: 'sized' | 'conditional') => {
          // A read inside a loop that also allocates is `host-device/get-in-loop` (the 003 §8.2 BAD example).
          if (m.loopOf(d.node) || skip(d.node)) return;
          if (m.scopeOf(d.node).id !== m.scopeOf(alloc).id) return;
          if (!within(alloc, d.node) && !m.flowsTo(d.node, alloc)) return;
          const origin = m.hostValueOf(d);
          const prev = found.get(origin.id);
          if (prev && (prev.messageId === 'sized' || messageId === 'conditional')) return;
          found.set(origin.id, { d, origin, alloc, messageId });
        };

        const allocSet = new Set(m.allocs.map((a) => a.id));
        /**
         * A device allocation sized by its first argument or `shape=`: the vocabulary's, the model's device
         * creators of that form (`wp.empty(shape=(n,), device=d)`, `torch.empty(n, device="cuda")`), or any
         * array factory spelled `shape=..., device=...` (`store.borrow(shape=(n,), dtype=int, device=d)`).
         */
        const sizedAlloc = (call: SyntaxNode): boolean => {
          if (m.isCall(call, vocab.sized_alloc_calls) || m.callMatches(call, vocab.sized_alloc_calls)) return true;
          if (allocSet.has(call.id) && SIZED_CREATORS.has(lastName(m.callPath(call)) ?? '')) return true;
          const { keywords } = pyArgs(call);
          const dev = keywords.get('device');
          return !!keywords.get('shape') && !!dev && !/^[rbuf]?["']cpu/i.test(dev.text);
        };
        /** A same-file helper (summary) whose body allocates a sized device buffer: `work._allocate_stage_2(n)`. */
        const allocMemo = new Map<number, boolean>();
        const helperAllocates = (call: SyntaxNode): boolean => {
          const def = m.calleeDef(call);
          if (!def || def.id === m.scopeOf(call).id) return false;
          let r = allocMemo.get(def.id);
          if (r === undefined) allocMemo.set(def.id, (r = def.descendantsOfType('call').some((c) => m.scopeOf(c).id === def.id && sizedAlloc(c))));
          return r;
        };
        for (const call of root.descendantsOfType('call')) {
          if (skip(call)) continue;
          const { positional, keywords } = pyArgs(call);
          if (!sizedAlloc(call)) {
            // The helper's size comes from its arguments: a read that flows into one sizes the buffer.
            if (helperAllocates(call)) for (const a of [...positional, ...keywords.values()]) for (const d of m.d2hSourcesOf(a)) consider(d, call, 'sized');
            continue;
          }
          const size = keywords.get('shape') ?? positional[0];
          if (size) for (const d of m.d2hSourcesOf(size)) consider(d, call, 'sized');
          // `if n_hits > 0: d_out = runtime.allocate(...)`: allocating at all depends on the read.
          const scope = m.scopeOf(call);
          for (let p = call.parent; p && p.id !== scope.id; p = p.parent) {
            if (p.type !== 'if_statement' && p.type !== 'elif_clause' && p.type !== 'while_statement') continue;
            const cond = p.childForFieldName('condition');
            if (!cond || within(cond, call)) continue;
            for (const d of m.d2hSourcesOf(cond)) consider(d, call, 'conditional');
          }
        }

        const csName = countScatterName(root, vocab.count_scatter_calls.map((c) => lastName(c) ?? c));
        const project = ctx.projectVocabulary || csName !== null;
        for (const f of [...found.values()].sort((a, b) => a.origin.startIndex - b.origin.startIndex)) {
          ctx.report({
            node: f.origin,
            messageId: f.messageId,
            data: { alloc: oneLine(f.alloc.text), code: oneLine(f.origin.text), remedy: project ? 'use count_scatter_total()' : 'compute the total on the device and read it back in one transfer' },
            fix: safeFix(m, f.origin, f.alloc, csName) ?? { description: project ? FIX_TEXT : PLAIN_FIX_TEXT },
          });
        }
      },
    };
  },
});

/**
 * `n_out = int(d_offsets[-1]) + int(d_counts[-1])` → `n_out = count_scatter_total(runtime, d_counts, d_offsets)`,
 * only in exactly the catalog's situation: a one-line assignment of one of the two total spellings, the
 * offsets/counts roles known, and `count_scatter_total` plus a runtime object already in scope.
 */
function safeFix(m: PyModel, origin: SyntaxNode, alloc: SyntaxNode, csName: string | null): FixSpec | null {
  if (!csName) return null;
  const assign = origin.parent;
  const stmt = assign?.parent;
  if (assign?.type !== 'assignment' || stmt?.type !== 'expression_statement' || stmt.namedChildren.length !== 1) return null;
  const left = assign.childForFieldName('left');
  if (left?.type !== 'identifier' || stmt.startPosition.row !== stmt.endPosition.row) return null;
  const compact = origin.text.replace(/\s+/g, '');
  const match = TOTAL_FORMS.map((r) => r.exec(compact)).find((x) => x);
  if (!match) return null;
  const [, a, b] = match;
  const scope = m.scopeOf(origin);
  const idents = origin.descendantsOfType('identifier');
  const arr = (name: string) => idents.find((i) => i.text === name);
  if (a === b || !m.isDevice(arr(a)) || !m.isDevice(arr(b))) return null;
  const roles = offsetsAndCounts(m, scope, a, b, origin);
  if (!roles) return null;
  // count_scatter_total takes the runtime object the allocation already uses.
  const allocPath = calleePath(alloc.childForFieldName('function')) ?? '';
  const runtimeObj = /\.allocate$/.test(allocPath) ? allocPath.replace(/\.allocate$/, '') : m.moduleOf('runtime') !== undefined ? 'runtime' : null;
  if (!runtimeObj) return null;
  const line = stmt.startPosition.row;
  const indent = /^\s*/.exec(m.source.text.split('\n')[line] ?? '')?.[0] ?? '';
  return {
    description: `Take the total with one sync: \`${left.text} = ${csName}(${runtimeObj}, ${roles.counts}, ${roles.offsets})\`.`,
    replace: { from: stmt, text: `${indent}${left.text} = ${csName}(${runtimeObj}, ${roles.counts}, ${roles.offsets})` },
  };
}

import { cppTripCount, cppElementCount, loopHeaderText, pyTripCount } from '../../../src/analysis/counts.js';
import { cudaModel } from '../../../src/analysis/cuda.js';
import { hostFunctionOf } from '../../../src/analysis/flow.js';
import { onceGuarded } from '../../../src/analysis/once.js';
import { pythonModel } from '../../../src/analysis/python.js';
import { pyContextStream, storedInContainer, streamFacts, streamKey, type StreamCreation, type StreamFacts } from '../../../src/analysis/streams.js';
import { calleePath, contains, quote } from '../../../src/analysis/syntax.js';
import { defineCheck, type CheckContext } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

const LIMIT = 8;

// A loop over GPUs makes one stream per device: each device schedules its own streams.
const DEVICE_LOOP = /dev|gpu/i;
const DEVICE_SWITCH = /\b(cudaSetDevice|cuCtxSetCurrent|cuCtxPushCurrent|setDevice)\s*\(|cuda\.Device\s*\(/;
// `range(n_streams)`, `i < num_streams`, `len(self.pool)`: a pool sized by configuration.
const POOL_SIZE_NAME = /stream|strm|pool|lane|slot|worker|queue/i;

interface Lang {
  /** Innermost loop around `n` in its host function (comprehensions included). */
  loopOf(n: SyntaxNode): SyntaxNode | null;
  trip(loop: SyntaxNode): number | null;
  /** The function a node belongs to (module / translation unit: the root). */
  scopeOf(n: SyntaxNode): SyntaxNode;
  /** The new stream outlives the loop iteration (stored in a list, an array slot, a dict). */
  retained(c: StreamCreation, loop: SyntaxNode): boolean;
  /** Upper bound on the streams from the storage itself (`cudaStream_t s[16]` filled by index). */
  storageCount(c: StreamCreation): number | null;
  /** Host waits inside the iteration (besides stream/event syncs): a blocking read of device data. */
  extraWaits(c: StreamCreation, loop: SyntaxNode): boolean;
  /** GPU work is queued on the new stream later in the same iteration. */
  worksOn(c: StreamCreation, loop: SyntaxNode): boolean;
  /** The loop walks a collection of work items (`for part in parts`, `i < tiles.size()`), not a count. */
  itemLoop(loop: SyntaxNode): boolean;
}

type Finding = { node: SyntaxNode; messageId: string; data: Record<string, string | number> };

/** A sync (of the device, an event, or this stream) or a blocking read after `c` inside the loop body. */
function waitsInIteration(facts: StreamFacts, lang: Lang, c: StreamCreation, loop: SyntaxNode): boolean {
  const key = c.name === null ? null : streamKey(c.name);
  const inside = (n: SyntaxNode) => n.startIndex >= c.node.endIndex && n.endIndex <= loop.endIndex;
  for (const s of [...facts.syncs, ...facts.polls]) {
    if (!inside(s.node)) continue;
    if (s.scope !== 'stream' || s.target === null || streamKey(s.target) === key) return true;
  }
  return lang.extraWaits(c, loop);
}

function analyze(facts: StreamFacts, creations: StreamCreation[], lang: Lang): Finding[] {
  const out: Finding[] = [];
  const flagged = new Set<number>();
  // Streams alive together in one function: straight-line creations plus pools of known size.
  const perScope = new Map<number, Array<{ c: StreamCreation; count: number }>>();
  for (const c of creations) {
    if (onceGuarded(c.node)) continue;
    const scope = lang.scopeOf(c.node);
    let total = 1;
    let perItem: SyntaxNode | null = null;
    let configured = false;
    const inner = lang.loopOf(c.node);
    for (let loop = inner; loop; loop = lang.loopOf(loop)) {
      const header = loopHeaderText(loop);
      if (DEVICE_LOOP.test(header) || DEVICE_SWITCH.test(loop.text)) break;
      const keeps = lang.retained(c, loop);
      // Work on a stream dropped after a wait in the same iteration never overlaps the next one.
      if (!keeps && waitsInIteration(facts, lang, c, loop)) break;
      const trip = lang.trip(loop) ?? (loop === inner ? lang.storageCount(c) : null);
      if (trip === null) {
        // A pool filled up to a configured size (`for i in range(n_streams)`, `i < n`) is judged by
        // its default when one is visible; one stream per work item grows with the input instead.
        if (!POOL_SIZE_NAME.test(header) && (lang.worksOn(c, loop) || (keeps && lang.itemLoop(loop)))) perItem = loop;
        else configured = true;
        break;
      }
      total *= trip;
    }
    if (configured) continue;
    if (perItem) {
      out.push({ node: c.node, messageId: 'perItem', data: { code: quote(c.node), items: quote({ text: loopHeaderText(perItem) } as SyntaxNode) } });
      flagged.add(c.node.id);
      continue;
    }
    if (total > LIMIT) {
      out.push({ node: c.node, messageId: 'pool', data: { code: quote(c.node), count: total } });
      flagged.add(c.node.id);
      continue;
    }
    const list = perScope.get(scope.id) ?? [];
    list.push({ c, count: total });
    perScope.set(scope.id, list);
  }
  for (const [, list] of perScope) {
    let running = 0;
    for (const { c, count } of list) {
      running += count;
      if (running > LIMIT) {
        const fn = lang.scopeOf(c.node);
        const name = fn.type === 'function_definition' ? functionLabel(fn) : 'module scope';
        out.push({ node: c.node, messageId: 'many', data: { code: quote(c.node), count: list.reduce((a, x) => a + x.count, 0), fn: name } });
        break;
      }
    }
  }
  return out;
}

function functionLabel(fn: SyntaxNode): string {
  const py = fn.childForFieldName('name');
  if (py) return py.text;
  let d = fn.childForFieldName('declarator');
  while (d && d.type !== 'function_declarator') d = d.childForFieldName('declarator');
  return d?.childForFieldName('declarator')?.text ?? 'this function';
}

function checkPython(ctx: CheckContext): Finding[] {
  const m = ctx.get(pythonModel);
  if (m.testOrBench) return [];
  const facts = ctx.get(streamFacts);
  const names = new Set(facts.streams.map((d) => d.name));
  return analyze(facts, facts.creations, {
    loopOf: (n) => m.loopOf(n),
    trip: (loop) => pyTripCount(m, loop),
    scopeOf: (n) => m.scopeOf(n),
    retained(c, loop) {
      // The element of a list/dict/set comprehension is collected.
      if (/comprehension/.test(loop.type)) {
        const body = loop.childForFieldName('body') ?? loop.namedChildren[0];
        if (body && contains(body, c.node)) return true;
      }
      if (storedInContainer(c.node)) return true;
      if (!c.name || c.name.includes('.') || c.name.includes('[')) return !!c.name && c.name.includes('[');
      return m.usesOf(c.name, m.scopeOf(c.node)).some((u) => u.startIndex > c.node.endIndex && contains(loop, u) && storedInContainer(u));
    },
    storageCount: () => null,
    extraWaits: (c, loop) => m.d2h.some((d) => d.node.startIndex >= c.node.endIndex && d.node.endIndex <= loop.endIndex),
    worksOn(c, loop) {
      // `with cp.cuda.Stream():` has no name: the context stream is the call itself.
      const key = c.name ?? (c.node.parent?.type === 'with_item' ? c.node.text : null);
      if (!key) return false;
      const after = (n: SyntaxNode) => n.startIndex >= c.node.endIndex && n.endIndex <= loop.endIndex;
      if (facts.uses.some((u) => after(u.node) && u.stream !== null && streamKey(u.stream) === streamKey(key))) return true;
      return m.gpuOps.some((o) => after(o.node) && pyContextStream(o.node, names) === key);
    },
    itemLoop(loop) {
      const iters = loop.type === 'for_statement' ? [loop.childForFieldName('right')] : loop.namedChildren.filter((x) => x.type === 'for_in_clause').map((x) => x.childForFieldName('right'));
      return iters.some((r) => !!r && (!/^range\s*\(/.test(r.text) || /^range\s*\(\s*len\s*\(/.test(r.text)));
    },
  });
}

function checkCuda(ctx: CheckContext): Finding[] {
  const m = ctx.get(cudaModel);
  if (m.testOrBench) return [];
  const facts = ctx.get(streamFacts);
  const vocab = ctx.config.vocab;
  const creations = facts.creations.filter((c) => !m.inDeviceCode(c.node) && m.functionOf(c.node));
  const blocking = m.callsMatching(vocab.blocking_memcpy_calls);
  const target = (c: StreamCreation) => {
    const a = m.calls.find((x) => x.node.id === c.node.id)?.args[0];
    return a?.type === 'pointer_expression' ? a.childForFieldName('argument') : null;
  };
  return analyze(facts, creations, {
    loopOf: (n) => m.loopOf(n),
    trip: (loop) => cppTripCount(m, loop),
    scopeOf: (n) => m.functionOf(n)?.node ?? hostFunctionOf(n) ?? ctx.source.root,
    retained(c, loop) {
      const t = target(c);
      // `&streams[i]`, `&pool.back()`: the handle lands in a container slot.
      if (t && (t.type === 'subscript_expression' || (t.type === 'call_expression' && /\.(back|front)$/.test(calleePath(t.childForFieldName('function')) ?? '')))) return true;
      if (t?.type !== 'identifier') return false;
      return loop.descendantsOfType('identifier').some((u) => u.text === t.text && u.startIndex > c.node.endIndex && storedInContainer(u));
    },
    storageCount(c) {
      const t = target(c);
      const arr = t?.type === 'subscript_expression' ? t.childForFieldName('argument') : null;
      return arr ? cppElementCount(m, arr.text, c.node) : null;
    },
    // A blocking copy runs on the legacy stream, which waits for every blocking stream.
    extraWaits: (c, loop) => !c.nonBlocking && blocking.some((b) => b.node.startIndex >= c.node.endIndex && b.node.endIndex <= loop.endIndex),
    worksOn: (c, loop) =>
      c.name !== null && facts.uses.some((u) => u.node.startIndex >= c.node.endIndex && u.node.endIndex <= loop.endIndex && streamKey(u.stream) === streamKey(c.name)),
    itemLoop(loop) {
      if (loop.type === 'for_range_loop') return true;
      const cond = loop.childForFieldName('condition');
      return loop.type === 'for_statement' && !!cond && /\.(size|length)\s*\(\s*\)|\bstd::size\s*\(/.test(cond.text);
    },
  });
}

export default defineCheck({
  id: 'sync/too-many-streams',
  pass: 2,
  severity: 'low',
  kind: 'performance',
  confidence: 'medium',
  languages: ['cuda', 'python'],
  citation: '003 §2.1 When Streams Actually Help ("Do NOT use streams when … Excessive concurrent streams"); 003 §10 (row "Stream count (diminishing returns) > 8 concurrent streams")',
  summary: 'More than 8 streams created for concurrent use: a pool larger than 8, one stream per work item, or 9+ creations in one function.',
  why: 'Beyond ~8 concurrent streams the overlap gained is marginal on most workloads while scheduling overhead keeps growing, and each creation costs ~1–2 µs (003 §2.1, §10: "> 8 concurrent streams → consolidate work").',
  messages: {
    pool: 'More than 8 concurrent streams: `{{code}}` creates {{count}} streams; benefits are marginal and scheduling overhead grows; consolidate work onto at most 8.',
    perItem: 'More than 8 concurrent streams: `{{code}}` creates one stream per item of `{{items}}` with no wait in the loop, so the count grows with the input; benefits are marginal and scheduling overhead grows; consolidate work onto at most 8.',
    many: 'More than 8 concurrent streams: `{{fn}}` creates {{count}} streams (the 9th at `{{code}}`); benefits are marginal and scheduling overhead grows; consolidate work onto at most 8.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const findings = ctx.source.language === 'cuda' ? checkCuda(ctx) : ctx.source.language === 'python' ? checkPython(ctx) : [];
        for (const f of findings) {
          ctx.report({ ...f, fix: { description: 'Cap the pool at 8 streams, create it once at setup, and round-robin work onto it (`streams[i % len(streams)]`).' } });
        }
      },
    };
  },
});


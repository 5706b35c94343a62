import { pythonModel, type D2H, type PyModel } from '../../../src/analysis/python.js';
import { pyArgs, unparen } from '../../../src/analysis/syntax.js';
import type { Vocabularies } from '../../../src/config/vocabularies.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';
import { READ_STALL } from '../../../src/config/costs.js';

const SCALAR_READ_KINDS = new Set(['convert', 'get', 'item']);

const quote = (n: SyntaxNode) => (n.text.length > 40 ? n.text.slice(0, 37) + '...' : n.text).replace(/\s*\n\s*/g, ' ');

/** `int(d_off[-1])`, `d_off[-1].get()`, `d_off[i].item()`: one element of a device array. */
function isElementRead(m: PyModel, d: D2H): boolean {
  if (!SCALAR_READ_KINDS.has(d.kind) || !d.scalar) return false;
  const t = unparen(d.target);
  if (t?.type !== 'subscript') return false;
  const idx = t.childForFieldName('subscript');
  return !!idx && idx.type !== 'slice' && m.isDevice(t.childForFieldName('value'));
}

/** The straight-line block a node's statement sits in. */
function blockOf(n: SyntaxNode): SyntaxNode | null {
  let p = n.parent;
  while (p && p.type !== 'block' && p.type !== 'module') {
    if (p.type === 'lambda' || p.type.endsWith('comprehension') || p.type === 'generator_expression') return null;
    p = p.parent;
  }
  return p;
}

/** Device work a host value can size or offset: arguments of launches and allocations, indexes of device arrays. */
function sizingSites(m: PyModel, vocab: Vocabularies): SyntaxNode[] {
  const out: SyntaxNode[] = [];
  const calls = new Map<number, SyntaxNode>();
  for (const n of [...m.gpuOps.map((o) => o.node), ...m.allocs]) calls.set(n.id, n);
  for (const c of m.source.root.descendantsOfType('call')) {
    if (m.isCall(c, vocab.launch_calls) || m.isCall(c, vocab.pool_alloc_calls)) calls.set(c.id, c);
  }
  for (const c of calls.values()) {
    if (c.type !== 'call') continue;
    const { positional, keywords } = pyArgs(c);
    out.push(...positional, ...keywords.values());
  }
  for (const s of m.source.root.descendantsOfType('subscript')) {
    if (!m.isDevice(s.childForFieldName('value'))) continue;
    out.push(...s.childrenForFieldName('subscript'));
  }
  return out;
}

/** Operand pairs added into one total: `a + b`, `total += b`, `sum((a, b))`. */
function additions(m: PyModel): Array<[SyntaxNode, SyntaxNode]> {
  const out: Array<[SyntaxNode, SyntaxNode]> = [];
  for (const n of m.source.root.descendantsOfType(['binary_operator', 'augmented_assignment', 'call'])) {
    if (n.type === 'binary_operator' && n.childForFieldName('operator')?.text === '+') {
      const l = n.childForFieldName('left');
      const r = n.childForFieldName('right');
      if (l && r) out.push([l, r]);
    } else if (n.type === 'augmented_assignment' && n.childForFieldName('operator')?.text === '+=') {
      const l = n.childForFieldName('left');
      const r = n.childForFieldName('right');
      if (l && r) out.push([l, r]);
    } else if (n.type === 'call' && n.childForFieldName('function')?.text === 'sum') {
      const arg = unparen(pyArgs(n).positional[0]);
      const items = arg && (arg.type === 'tuple' || arg.type === 'list') ? arg.namedChildren : [];
      for (let i = 0; i < items.length; i++) for (let j = i + 1; j < items.length; j++) out.push([items[i], items[j]]);
    }
  }
  return out;
}

export default defineCheck({
  id: 'host-device/sequential-get-for-totals',
  pass: 1,
  severity: 'high',
  kind: 'performance',
  confidence: 'medium',
  languages: ['python'],
  citation:
    '003 §8.1 Implicit Synchronization; 003 §2.1 When Streams Actually Help (item 4: "batch async reads instead of sequential .get() syncs"); 003 §9 Pass 1 bullet 5',
  summary: 'Two or more scalar device reads in one block added into a total or sizing device work; count_scatter_total() syncs once.',
  why: 'Each scalar read is its own implicit sync plus D2H copy (003 §2.4), so N reads drain the GPU N times and every read stalls the pipeline again (' + READ_STALL + '; 003 §8.4), where count_scatter_total() batches the reads behind a single sync (003 §2.1 item 4, §8.1 HIGH).',
  messages: {
    total: 'Several sequential scalar reads from the device ({{code}}) to compute a total; count_scatter_total() does this with one sync.',
    sizing:
      'Several sequential scalar reads from the device ({{code}}) size or offset device work one sync at a time; batch them into one read (count_scatter_total() for count/offset totals).',
  },
  fix: 'judgment',
  supersedes: ['sync/scalar-conversion-of-device-value'],
  needsProjectVocabulary: true,
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(pythonModel);
        if (m.testOrBench) return;
        const vocab = ctx.config.vocab;
        const byBlock = new Map<number, D2H[]>();
        for (const d of m.d2h) {
          if (!isElementRead(m, d) || m.debugGated(d.node) || m.inCpuFallback(d.node)) continue;
          const block = blockOf(d.node);
          if (!block) continue;
          byBlock.set(block.id, [...(byBlock.get(block.id) ?? []), d]);
        }
        // Only a block with two or more reads can be reported: without one, the whole-file scans below are skipped.
        for (const [id, reads] of byBlock) if (reads.length < 2) byBlock.delete(id);
        if (!byBlock.size) return;
        const blockOfRead = new Map<D2H, number>();
        for (const [id, reads] of byBlock) for (const r of reads) blockOfRead.set(r, id);
        // Reads paired in one addition, per block.
        const totals = new Map<number, Set<D2H>>();
        for (const [l, r] of additions(m)) {
          const left = m.d2hSourcesOf(l).filter((d) => blockOfRead.has(d));
          const right = m.d2hSourcesOf(r).filter((d) => blockOfRead.has(d));
          for (const a of left) {
            for (const b of right) {
              if (a === b || blockOfRead.get(a) !== blockOfRead.get(b)) continue;
              const set = totals.get(blockOfRead.get(a)!) ?? new Set<D2H>();
              totals.set(blockOfRead.get(a)!, set.add(a).add(b));
            }
          }
        }
        const sizing = new Set<D2H>();
        for (const site of sizingSites(m, vocab)) for (const d of m.d2hSourcesOf(site)) if (blockOfRead.has(d)) sizing.add(d);

        for (const [id, reads] of byBlock) {
          if (reads.length < 2) continue;
          const inTotal = totals.get(id);
          const sized = reads.filter((r) => sizing.has(r));
          const group = (inTotal && inTotal.size >= 2 ? reads.filter((r) => inTotal.has(r)) : sized.length >= 2 ? sized : []).map((r) => reads.indexOf(r));
          if (!group.length) continue;
          const codes = group.map((i) => `\`${quote(reads[i].node)}\``);
          const code = codes.length > 3 ? `${codes.slice(0, 3).join(', ')}, …` : codes.join(', ');
          ctx.report({
            node: reads[group[0]].node,
            messageId: inTotal && inTotal.size >= 2 ? 'total' : 'sizing',
            data: { code },
            fix: {
              description:
                'Compute the offsets with `exclusive_sum(d_counts, synchronize=False)` and take the total with `total = count_scatter_total(runtime, d_counts, d_offsets)` (one sync); for other scalars, read them together (`d_off[i:i + 2].get()`) instead of one by one.',
            },
          });
        }
      },
    };
  },
});

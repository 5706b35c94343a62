import { cudaModel, type CudaModel } from '../../../src/analysis/cuda.js';
import { enclosingClass, hostFunctionOf } from '../../../src/analysis/flow.js';
import { mentionNodes } from '../../../src/analysis/mentions.js';
import { pythonModel, type PyModel } from '../../../src/analysis/python.js';
import { streamFacts, streamKey, type StreamCreation, type StreamFacts } from '../../../src/analysis/streams.js';
import { contains, quote, unparen } from '../../../src/analysis/syntax.js';
import { defineCheck, type CheckContext } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

/** A Python integer written in the source: `5`, `-1`, or a name bound once to one (`HIGH_PRIORITY = -1`). */
function pyLiteralInt(m: PyModel, e: SyntaxNode | null | undefined, depth = 0): number | null {
  const u = unparen(e);
  if (!u || depth > 4) return null;
  if (u.type === 'integer') return Number(u.text.replace(/_/g, ''));
  if (u.type === 'unary_operator' && /^[-+]$/.test(u.child(0)?.type ?? '')) {
    const v = pyLiteralInt(m, u.childForFieldName('argument'), depth + 1);
    return v === null ? null : u.child(0)?.type === '-' ? -v : v;
  }
  if (u.type !== 'identifier') return null;
  const scope = m.scopeOf(u);
  for (const s of scope.type === 'module' ? [scope] : [scope, u.tree.rootNode]) {
    const sets = m.assignmentsIn(s).get(u.text);
    if (!sets?.length) continue;
    return sets.length === 1 && sets[0].node.type === 'assignment' && sets[0].value.type !== 'assignment' ? pyLiteralInt(m, sets[0].value, depth + 1) : null;
  }
  return null;
}

/** A C++ integer written in the source: a literal, or a `#define` / `constexpr` / enumerator that folds to one. */
function cppLiteralInt(m: CudaModel, e: SyntaxNode): number | null {
  if (e.type !== 'number_literal' && e.type !== 'identifier' && e.type !== 'unary_expression' && e.type !== 'parenthesized_expression') return null;
  return m.constValue(e);
}

/** `5`, `priority=-1`, `HIGH_PRIORITY` = 2: the argument as written, with its value when it is a name. */
function literalText(p: SyntaxNode, v: number): string {
  const shown = p.parent?.type === 'keyword_argument' ? p.parent.text : p.text;
  return /^[-+\s\d]+$/.test(p.text) ? `\`${shown}\`` : `\`${shown}\` = ${v}`;
}

interface Lang {
  literal(p: SyntaxNode): number | null;
  /** The file queries the priority range (`cudaDeviceGetStreamPriorityRange`, CuPy `deviceGetStreamPriorityRange`). */
  queriesRange: boolean;
  /** The places that may refer to the stream `c` creates (its name within the function, class or file); null when unknown. */
  occurrences(c: StreamCreation): SyntaxNode[] | null;
  /** A host-to-device or device-to-host copy without a stream argument: an upload under `with s:`, `.get(stream=s)`. */
  isTransfer(n: SyntaxNode): boolean;
}

/**
 * The stream only ever carries copies and memsets: every mention of it is its creation, a sync,
 * an event record/wait, `cudaStreamDestroy`, a `with s:` item, or a transfer queued on it.
 */
function transferOnly(facts: StreamFacts, lang: Lang, c: StreamCreation): SyntaxNode | null {
  if (!c.name) return null;
  const key = streamKey(c.name);
  const uses = facts.uses.filter((u) => u.stream !== null && streamKey(u.stream) === key);
  const scope = hostFunctionOf(c.node) ?? c.node.tree.rootNode;
  const mine = uses.filter((u) => (c.name!.includes('.') || c.name!.includes('->') ? true : contains(scope, u.node)));
  if (!mine.length) return null;
  const isTransfer = (u: { node: SyntaxNode; kind: string }) => u.kind === 'copy' || u.kind === 'memset' || lang.isTransfer(u.node);
  if (!mine.every(isTransfer)) return null;
  const benign = [
    c.node,
    ...mine.map((u) => u.node),
    ...facts.syncs.map((s) => s.node),
    ...facts.eventRecords.map((r) => r.node),
    ...facts.eventWaits.map((w) => w.node),
  ];
  const occs = lang.occurrences(c);
  if (!occs) return null;
  for (const occ of occs) {
    if (benign.some((b) => contains(b, occ))) continue;
    const call = occ.parent?.parent;
    if (call && /StreamDestroy$|^(cudaStreamDestroy|cuStreamDestroy)/.test(call.childForFieldName('function')?.text ?? '')) continue;
    if (occ.parent?.type === 'with_item' || occ.parent?.parent?.type === 'with_item') continue;
    if (lang.isTransfer(occ.parent?.parent ?? occ)) continue;
    // Handed to other code (a helper, a container, a return): what else runs on it is not visible.
    return null;
  }
  return mine[0].node;
}

function analyze(ctx: CheckContext, facts: StreamFacts, lang: Lang): void {
  for (const c of facts.creations) {
    const p = c.priority;
    if (!p) continue;
    const v = lang.literal(p);
    // Priority 0 is the default (the least priority on current GPUs): nothing to query.
    if (v !== null && v !== 0) {
      const positive = v > 0;
      // Without the whole file, a range query elsewhere in it cannot be ruled out.
      if (positive || (!lang.queriesRange && ctx.source.wholeFile)) {
        ctx.report({
          node: p,
          messageId: positive ? 'positive' : 'literal',
          data: { code: literalText(p, v) },
          fix: { description: 'Query the range once (`cudaDeviceGetStreamPriorityRange(&least, &greatest)`, `cp.cuda.runtime.deviceGetStreamPriorityRange()`) and pass `greatest` for latency-sensitive streams, `least` for background work.' },
        });
        continue;
      }
    }
    if (v === 0 || !ctx.source.wholeFile) continue;
    const use = transferOnly(facts, lang, c);
    if (use) {
      ctx.report({
        node: p,
        messageId: 'transfersOnly',
        data: { code: quote(c.node), name: c.name ?? '', use: quote(use) },
        fix: { description: 'Drop the priority from the copy stream, or move the latency-sensitive kernels onto it; prioritize the stream that runs them.' },
      });
    }
  }
}

function checkCuda(ctx: CheckContext): void {
  const m = ctx.get(cudaModel);
  const facts = ctx.get(streamFacts);
  if (!facts.creations.some((c) => c.priority)) return;
  const vocab = ctx.config.vocab;
  analyze(ctx, facts, {
    literal: (p) => cppLiteralInt(m, p),
    queriesRange: m.callsMatching(vocab.stream_priority_range_calls).length > 0,
    occurrences(c) {
      const name = c.name!.replace(/^this->/, '');
      if (!/^\w+$/.test(name)) return null;
      const fn = hostFunctionOf(c.node);
      if (!fn) return null;
      const declName = (d: SyntaxNode) => (d.type === 'init_declarator' ? d.childForFieldName('declarator') : d)?.text;
      const local = fn.descendantsOfType('declaration').some((d) => d.childrenForFieldName('declarator').some((x) => declName(x) === name));
      // A parameter (`cudaStream_t* out`) belongs to the caller, whose uses are not visible here.
      if (!local && fn.descendantsOfType('parameter_declaration').some((d) => d.descendantsOfType('identifier').some((i) => i.text === name))) return null;
      const scope = local ? fn : enclosingClass(c.node) ?? ctx.source.root;
      return scope.descendantsOfType(['identifier', 'field_identifier']).filter((i) => i.text === name && !['declaration', 'field_declaration', 'init_declarator', 'pointer_declarator', 'array_declarator'].includes(i.parent?.type ?? ''));
    },
    isTransfer: () => false,
  });
}

function checkPython(ctx: CheckContext): void {
  const m = ctx.get(pythonModel);
  const facts = ctx.get(streamFacts);
  if (!facts.creations.some((c) => c.priority)) return;
  const vocab = ctx.config.vocab;
  const ranges = mentionNodes(ctx.source, vocab.stream_priority_range_calls).filter((n) => n.type === 'identifier');
  analyze(ctx, facts, {
    literal: (p) => pyLiteralInt(m, p),
    queriesRange: ranges.length > 0,
    occurrences(c) {
      const name = c.name!;
      if (name.startsWith('self.')) {
        const cls = enclosingClass(c.node);
        const assigned = (a: SyntaxNode) => a.parent?.type === 'assignment' && a.parent.childForFieldName('left')?.id === a.id;
        return (cls ?? ctx.source.root).descendantsOfType('attribute').filter((a) => a.text === name && !assigned(a));
      }
      if (!/^\w+$/.test(name)) return null;
      return m.usesOf(name, m.scopeOf(c.node));
    },
    isTransfer: (n) => n.type === 'call' && (m.isUpload(n) || !!m.d2hAt(n) || /(^|\.)(copy_\w+_async|cudaMemcpy\w*Async|cuMemcpy\w*Async|memcpyAsync|memsetAsync)$/.test(n.childForFieldName('function')?.text ?? '')),
  });
}

export default defineCheck({
  id: 'sync/stream-priority-literal',
  pass: 2,
  severity: 'low',
  kind: 'correctness',
  confidence: 'medium',
  languages: ['cuda', 'python'],
  citation: '003 §2.5 Stream Priorities ("Lower numbers = higher priority"; use cudaDeviceGetStreamPriorityRange; "Not respected for memory transfers")',
  summary: 'Stream priority written as a literal instead of taken from cudaDeviceGetStreamPriorityRange, or set on a stream that only carries copies.',
  why: 'Valid priorities are the device range from cudaDeviceGetStreamPriorityRange, where lower numbers mean higher priority and out-of-range values are clamped, and priorities are hints that are not respected for memory transfers (003 §2.5).',
  messages: {
    literal: 'Stream priority given as a literal ({{code}}): valid priorities come from cudaDeviceGetStreamPriorityRange and lower numbers mean higher priority; the range differs between GPUs and values outside it are clamped.',
    positive: 'Stream priority given as a literal ({{code}}): valid priorities come from cudaDeviceGetStreamPriorityRange and lower numbers mean higher priority, so a positive value is clamped to the least priority (the default), not a high one.',
    transfersOnly: 'Stream `{{name}}` gets a priority (`{{code}}`) but carries only copies/memsets (`{{use}}`): priorities are not respected for memory transfers, so it buys nothing.',
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

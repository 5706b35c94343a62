import { cudaModel, type CudaFunction } from '../../../src/analysis/cuda.js';
import { quoteCode } from '../../../src/analysis/smem.js';
import { calleePath, lastName, unparen } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

/** Loads that re-read memory another thread may have written since (volatile, atomic, cache-bypassing). */
const RELOAD = /^(load|load_relaxed|load_acquire|atomic_load|atomicLoad|__ldcg|__ldcv|__ldvolatile|__ldlu|ld_acquire|ld_volatile|volatile_load|ld_relaxed|load_volatile)$/;
const LOOPS = ['while_statement', 'do_statement', 'for_statement'];
/** Calls whose result is a dynamically assigned ticket. */
const TICKET = /^(atomicAdd|atomicInc|atomic_add|atomicAdd_system|fetch_add|atomicSub)$/;
/** Work-index sources fixed by the launch order: the block index, or a helper giving the global thread id. */
const STATIC_ID = /\bblockIdx\b|\b(get_thread_id\w*|thread_id\w*|global_thread_id\w*|get_global_id|global_id\w*|flat_thread_id\w*)\s*(<[^>]*>)?\s*\(/;

/** The base array of a load's address argument: `x` in `load(x, i)`, `&x[i]`, `x + i`. */
function baseOf(n: SyntaxNode | null | undefined): string | null {
  let u = unparen(n ?? null);
  while (u && (u.type === 'pointer_expression' || u.type === 'subscript_expression' || u.type === 'cast_expression' || u.type === 'parenthesized_expression' || (u.type === 'binary_expression' && u.childForFieldName('operator')?.type === '+'))) {
    u = u.type === 'cast_expression' ? u.childForFieldName('value') : u.type === 'binary_expression' ? u.childForFieldName('left') : (u.childForFieldName('argument') ?? u.namedChildren[0] ?? null);
  }
  return u?.type === 'identifier' ? u.text : null;
}

/** Arrays the kernel spins on: a loop whose condition re-reads them, or re-reads a value the body reloads from them. */
function spunOn(f: CudaFunction): Map<string, SyntaxNode> {
  const out = new Map<string, SyntaxNode>();
  for (const loop of f.body?.descendantsOfType(LOOPS) ?? []) {
    const cond = loop.childForFieldName('condition');
    if (!cond) continue;
    const reloads = (root: SyntaxNode) =>
      root.descendantsOfType('call_expression').filter((c) => RELOAD.test(lastName(calleePath(c.childForFieldName('function')) ?? '') ?? '') || (/^atomic(Add|Or)$/.test(lastName(calleePath(c.childForFieldName('function')) ?? '') ?? '') && c.childForFieldName('arguments')?.namedChildren[1]?.text === '0'));
    for (const c of reloads(cond)) {
      const b = baseOf(c.childForFieldName('arguments')?.namedChildren[0]);
      if (b) out.set(b, loop);
    }
    // `while (is_nan(v)) { v = load(p, 0); }`: the condition's value is reloaded in the body.
    const body = loop.childForFieldName('body');
    const condNames = new Set(cond.descendantsOfType('identifier').map((i) => i.text));
    for (const a of body?.descendantsOfType('assignment_expression') ?? []) {
      const l = unparen(a.childForFieldName('left'));
      if (l?.type !== 'identifier' || !condNames.has(l.text)) continue;
      const r = unparen(a.childForFieldName('right'));
      if (r?.type !== 'call_expression' || !reloads(a).length) continue;
      const b = baseOf(r.childForFieldName('arguments')?.namedChildren[0]);
      // Through a local pointer (`x_p = &x[dep]`): the array it was taken from.
      if (b) out.set(b, loop);
    }
  }
  return out;
}

/** Arrays the kernel writes: `store(x, ...)`, `x[i] = ...`, `*(x + i) = ...`. */
function written(f: CudaFunction): Set<string> {
  const out = new Set<string>();
  for (const c of f.body?.descendantsOfType('call_expression') ?? []) {
    const name = lastName(calleePath(c.childForFieldName('function')) ?? '') ?? '';
    if (/^(store|store_relaxed|store_release|atomic_store|__stcg|__stwt|atomicExch|st_release)$/.test(name)) {
      const b = baseOf(c.childForFieldName('arguments')?.namedChildren[0]);
      if (b) out.add(b);
    }
  }
  for (const a of f.body?.descendantsOfType('assignment_expression') ?? []) {
    const l = unparen(a.childForFieldName('left'));
    if (l && (l.type === 'subscript_expression' || l.type === 'pointer_expression')) {
      const b = baseOf(l);
      if (b) out.add(b);
    }
  }
  return out;
}

export default defineCheck({
  id: 'kernel/syncfree-busy-wait-deadlock',
  pass: 3,
  severity: 'high',
  kind: 'correctness',
  confidence: 'medium',
  languages: ['cuda', 'nvrtc-in-python'],
  citation: 'derived from real fixes (no seed section covers it)',
  summary: 'Threads busy-wait on results of other threads while their work item comes from the block index, so progress depends on block scheduling order.',
  why: 'CUDA guarantees nothing about the order in which blocks start or whether a waiting block yields: a block that spins on a row owned by a block that has not been scheduled (because the spinning blocks fill every SM) waits forever. Sync-free solvers therefore hand out work in start order with an atomic ticket, so every dependency belongs to a block that is already running.',
  messages: {
    staticOrder: 'Work index `{{decl}}` comes from the launch order (`{{src}}`), but threads of this kernel spin until other threads publish `{{array}}` (`{{loop}}`); blocks are not guaranteed to be scheduled in index order, so a resident block can wait on one that never starts. Take the block\'s work index from an atomic ticket (`if (threadIdx.x == 0) base = atomicAdd(counter, 1);` then a barrier).',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(cudaModel);
        for (const f of m.functions) {
          if (!f.isKernel || !f.body) continue;
          const spins = spunOn(f);
          if (!spins.size) continue;
          const w = written(f);
          // Spin targets are reached through local pointers too (`auto p = &x[dep]; while (...) v = load(p, 0);`).
          const aliases = new Map<string, string>();
          for (const d of f.body.descendantsOfType('init_declarator')) {
            const n = d.childForFieldName('declarator')?.text.replace(/^[*&\s]+/, '');
            const b = baseOf(d.childForFieldName('value'));
            if (n && b) aliases.set(n, b);
          }
          for (const a of f.body.descendantsOfType('assignment_expression')) {
            const l = unparen(a.childForFieldName('left'));
            const b = baseOf(a.childForFieldName('right'));
            if (l?.type === 'identifier' && b && !aliases.has(l.text)) aliases.set(l.text, b);
          }
          const hit = [...spins].find(([arr]) => w.has(arr) || w.has(aliases.get(arr) ?? '') || [...w].some((x) => aliases.get(x) === arr));
          if (!hit) continue;
          // A ticket: an atomic whose result is kept (assigned or declared) gives the start order.
          const ticket = f.body.descendantsOfType('call_expression').some((c) => {
            if (!TICKET.test(lastName(calleePath(c.childForFieldName('function')) ?? '') ?? '')) return false;
            let p = c.parent;
            while (p && (p.type === 'parenthesized_expression' || p.type === 'cast_expression' || p.type === 'binary_expression')) p = p.parent;
            return p?.type === 'init_declarator' || p?.type === 'assignment_expression';
          });
          if (ticket) continue;
          const decl = f.body.descendantsOfType('declaration').find((d) => d.startIndex < hit[1].startIndex && STATIC_ID.test(d.text.split('=').slice(1).join('=')));
          if (!decl) continue;
          const src = /\bblockIdx\.[xyz]\b/.exec(decl.text)?.[0] ?? STATIC_ID.exec(decl.text)?.[0]?.replace(/\s*\($/, '()') ?? 'blockIdx';
          ctx.report({
            node: decl,
            messageId: 'staticOrder',
            data: { decl: quoteCode(decl.text.replace(/;$/, ''), 50), src, array: hit[0], loop: quoteCode(hit[1].text.split('\n')[0].replace(/\s*\{\s*$/, ''), 50) },
          });
        }
      },
    };
  },
});

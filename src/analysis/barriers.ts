import type { SyntaxNode } from '../core/types.js';
import type { CudaFunction, CudaModel } from './cuda.js';
import type { SmemFacts } from './smem.js';
import { calleePath, lastName, walk } from './syntax.js';

/**
 * Block-barrier intervals of CUDA device code (kernel/redundant-block-barrier): for an unconditional
 * `__syncthreads()`, is there any memory access between it and the barrier before it (or the start of
 * the kernel), or between it and the barrier after it (or the end of the kernel)? A barrier with an
 * empty interval on either side orders no exchange between the threads of the block that its
 * neighbour barrier (or the kernel's start or end) does not order already.
 *
 * The answer is conservative in one direction only: "empty" is said only when it is proven on every
 * structured path. Every access that could touch memory another thread sees counts: subscripts and
 * dereferences of anything but a local per-thread array, `->`, `__shared__` and reference variables,
 * atomics, asm, calls to anything but pure arithmetic intrinsics (a same-file device function counts by
 * its body), warp collectives and fences. Code with `goto`, `switch`, or loops that `break`/`continue`
 * around the barrier is not analysed.
 */

/** Block barriers that end an interval (the value-returning ones too: they are full barriers). */
const BARRIER = /^(__syncthreads|__syncthreads_count|__syncthreads_and|__syncthreads_or|__barrier_sync)$/;
/** Calls that compute from their arguments only (no memory, no cross-lane traffic). */
const PURE_ALTS = [
      // arithmetic and math functions, float and double spellings
      '(f|__f)?(min|max)f?', 'abs', 'labs', 'llabs', 'fabsf?', 'sqrtf?', 'rsqrtf?', 'cbrtf?', 'rcbrtf?', '(__)?expf?', 'exp2f?', 'exp10f?', 'expm1f?',
      '(__)?logf?', 'log2f?', 'log10f?', 'log1pf?', '(__)?sinf?', '(__)?cosf?', '(__)?tanf?', 'sincosf?', 'asinf?', 'acosf?', 'atanf?', 'atan2f?',
      'sinhf?', 'coshf?', 'tanhf?', '(__)?powf?', 'floorf?', 'ceilf?', 'roundf?', 'truncf?', 'rintf?', 'lrintf?', 'llrintf?', 'fmaf?', 'fmodf?',
      'remainderf?', 'copysignf?', 'hypotf?', 'erff?', 'erfcf?', 'isnan', 'isinf', 'isfinite', 'signbit', 'saturatef?', '__saturatef',
      // intrinsics of one thread
      '__f(add|sub|mul|div|rcp|sqrt|ma)_r[nduz]', '__d(add|sub|mul|div|rcp|sqrt)_r[nduz]', '__fdividef', '__frcp_rn', '__fsqrt_rn',
      '__(u)?mul(hi|24)', '__(u)?mul64hi', '__popc(ll)?', '__clz(ll)?', '__ffs(ll)?', '__brev(ll)?', '__byte_perm', '__funnelshift_[lr]c?',
      '__(u)?sad', '__(u)?hadd', '__(u)?rhadd',
      // conversions
      '__(float|double|int|uint|ll|ull|half|half2|bfloat16|short|ushort)2(float|double|int|uint|ll|ull|half|half2|bfloat16|short|ushort|float2|bfloat162)(_r[nduz])?',
      '__(int|uint|float|double|longlong|ll|short|ushort)_as_(int|uint|float|double|longlong|ll|short|ushort)', '__(high|low)s?2(half|float|half2|bfloat16)',
      '__floats2(half2|bfloat162)_rn', '__halves2half2', '__h(add|sub|mul|fma|div|max|min|neg|abs)2?', 'make_(char|uchar|short|ushort|int|uint|long|ulong|longlong|ulonglong|float|double|half)[1-4]?',
      'static_cast', 'reinterpret_cast', 'const_cast', 'sizeof', 'alignof',
].join('|');
const PURE = new RegExp(`^(${PURE_ALTS})$`);
/** Non-local jumps that break the structured-path reasoning. */
const JUMPS = new Set(['goto_statement', 'labeled_statement', 'switch_statement', 'case_statement']);
const LOOPS = new Set(['for_statement', 'while_statement', 'do_statement', 'for_range_loop']);
const BUILTIN_VARS = new Set(['threadIdx', 'blockIdx', 'blockDim', 'gridDim', 'warpSize']);

export interface BarrierNeighbour {
  /** `before`: nothing since the previous barrier; `after`: nothing until the next barrier. */
  side: 'before' | 'after';
  /** The neighbouring barrier call, or null for the kernel's start / end. */
  other: SyntaxNode | null;
}

interface Ctx {
  model: CudaModel;
  smem: SmemFacts;
  fn: CudaFunction;
  /** Local non-shared array names of the function (per-thread storage). */
  localArrays: Set<string>;
  /** Locals and parameters declared as references (writes through them reach someone else's memory). */
  refs: Set<string>;
  memo: Map<number, boolean>;
  depth: number;
}

const isBarrierCall = (n: SyntaxNode): boolean => n.type === 'call_expression' && BARRIER.test(lastName(calleePath(n.childForFieldName('function'))) ?? '');

/** The barrier call of an expression statement (`__syncthreads();`), or null. */
function barrierOfStatement(s: SyntaxNode): SyntaxNode | null {
  if (s.type !== 'expression_statement') return null;
  const e = s.namedChildren[0];
  return e && isBarrierCall(e) ? e : null;
}

function declaredNames(fn: CudaFunction): { arrays: Set<string>; refs: Set<string> } {
  const arrays = new Set<string>();
  const refs = new Set<string>();
  for (const p of fn.params) {
    if (/&/.test(p.childForFieldName('declarator')?.text ?? '')) {
      const id = [...walk(p)].filter((x) => x.type === 'identifier').pop();
      if (id) refs.add(id.text);
    }
  }
  if (!fn.body) return { arrays, refs };
  for (const d of fn.body.descendantsOfType('declaration')) {
    if (/__shared__|\bstatic\b|\bextern\b/.test(d.text.split(/[=;{]/)[0])) continue;
    for (const decl of d.childrenForFieldName('declarator')) {
      const inner = decl.type === 'init_declarator' ? decl.childForFieldName('declarator') : decl;
      if (!inner) continue;
      if (inner.type === 'array_declarator') {
        let a: SyntaxNode | null = inner;
        while (a?.type === 'array_declarator') a = a.childForFieldName('declarator');
        if (a?.type === 'identifier') arrays.add(a.text);
      } else if (inner.type === 'reference_declarator') {
        const id = [...walk(inner)].find((x) => x.type === 'identifier');
        if (id) refs.add(id.text);
      }
    }
  }
  return { arrays, refs };
}

/** The identifier a subscript or field chain starts from (`a[i][j]` → `a`), or null. */
function baseName(n: SyntaxNode | null): string | null {
  while (n && (n.type === 'subscript_expression' || n.type === 'parenthesized_expression')) n = n.type === 'subscript_expression' ? n.childForFieldName('argument') : n.namedChildren[0];
  return n?.type === 'identifier' ? n.text : null;
}

/** Same-file device functions of that name (every overload), or null when one has no body here. */
function calleeBodies(c: Ctx, name: string): SyntaxNode[] | null {
  const defs = c.model.functions.filter((f) => f.name === name && f.isDevice && !f.isKernel);
  if (!defs.length || defs.some((f) => !f.body)) return null;
  return defs.map((f) => f.body!);
}

/** Does evaluating `n` possibly touch memory another thread can see, or talk to other threads? */
function hasEffect(n: SyntaxNode, c: Ctx): boolean {
  const hit = c.memo.get(n.id);
  if (hit !== undefined) return hit;
  const r = computeEffect(n, c);
  c.memo.set(n.id, r);
  return r;
}

function computeEffect(n: SyntaxNode, c: Ctx): boolean {
  switch (n.type) {
    case 'lambda_expression':
      return false; // defining it runs nothing; calling it is an unknown call
    case 'gnu_asm_expression':
    case 'asm_statement':
    case 'new_expression':
    case 'delete_expression':
    case 'throw_statement':
      return true;
    case 'declaration': {
      if (/__shared__/.test(n.text.split(/[=;{]/)[0])) return false; // declaring shared storage touches nothing
      break;
    }
    case 'call_expression': {
      if (isBarrierCall(n)) return false; // a nested barrier only shortens intervals
      const path = calleePath(n.childForFieldName('function'));
      const name = lastName(path) ?? '';
      const argsEffect = () => (n.childForFieldName('arguments')?.namedChildren ?? []).some((a) => hasEffect(a, c));
      if (path && PURE.test(name) && !/[.>]/.test(path)) return argsEffect();
      if (path && !/[.:]/.test(path) && c.depth < 4) {
        const bodies = calleeBodies(c, name);
        if (bodies) {
          c.depth++;
          const eff = bodies.some((b) => hasEffect(b, c));
          c.depth--;
          return eff || argsEffect();
        }
      }
      return true;
    }
    case 'subscript_expression': {
      const base = baseName(n);
      if (!base || !c.localArrays.has(base) || c.smem.declFor(base, n)) return true;
      break;
    }
    case 'pointer_expression': {
      if (n.child(0)?.type === '*') return true;
      // `&a[i]`, `&s.x`: taking an address reads nothing; only the index expressions are evaluated.
      let a = n.childForFieldName('argument');
      const idx: SyntaxNode[] = [];
      while (a && (a.type === 'subscript_expression' || a.type === 'parenthesized_expression')) {
        const ix = a.type === 'subscript_expression' ? a.childForFieldName('indices') ?? a.childForFieldName('index') : null;
        if (ix) idx.push(ix);
        a = a.type === 'subscript_expression' ? a.childForFieldName('argument') : a.namedChildren[0];
      }
      if (a?.type === 'identifier') return idx.some((x) => hasEffect(x, c));
      break;
    }
    case 'field_expression': {
      if (n.child(1)?.type === '->') return true;
      const arg = n.childForFieldName('argument');
      if (arg?.type === 'identifier' && BUILTIN_VARS.has(arg.text)) return false;
      break;
    }
    case 'identifier': {
      const p = n.parent;
      // The name being declared is no access.
      if (p && (p.type === 'init_declarator' || p.type === 'array_declarator' || p.type === 'reference_declarator' || p.type === 'pointer_declarator' || p.type === 'declaration') && p.childForFieldName('declarator')?.id === n.id) return false;
      if (c.refs.has(n.text)) return true;
      // A shared scalar is read or written by naming it; a shared array's bare name is only its address
      // (its elements are reached through a subscript or a dereference, counted above).
      const sh = c.smem.declFor(n.text, n);
      return !!sh && !sh.dims.length && !sh.dynamic;
    }
  }
  for (const ch of n.namedChildren) if (hasEffect(ch, c)) return true;
  return false;
}

const isCompound = (n: SyntaxNode | null): boolean => n?.type === 'compound_statement';

/** A callee whose body starts (walking `side`) with an unconditional barrier before any access acts as a barrier. */
function callActsAsBarrier(s: SyntaxNode, c: Ctx, side: 'before' | 'after'): SyntaxNode | null {
  if (s.type !== 'expression_statement') return null;
  const call = s.namedChildren[0];
  if (call?.type !== 'call_expression') return null;
  const path = calleePath(call.childForFieldName('function'));
  if (!path || /[.:]/.test(path) || (call.childForFieldName('arguments')?.namedChildren ?? []).some((a) => hasEffect(a, c))) return null;
  const bodies = calleeBodies(c, path);
  if (!bodies) return null;
  let first: SyntaxNode | null = null;
  for (const b of bodies) {
    const list = side === 'after' ? b.namedChildren : [...b.namedChildren].reverse();
    let got: SyntaxNode | null = null;
    for (const t of list) {
      if (t.type === 'comment') continue;
      const bar = barrierOfStatement(t);
      if (bar) {
        got = bar;
        break;
      }
      if (hasEffect(t, c) || containsJump(t)) break;
    }
    if (!got) return null;
    first ??= got;
  }
  return first;
}

const containsJump = (n: SyntaxNode): boolean => [...walk(n)].some((x) => JUMPS.has(x.type) || x.type === 'break_statement' || x.type === 'continue_statement' || x.type === 'return_statement');
/** `break` / `continue` that leave or restart `loop` itself (not one nested in an inner loop or switch). */
function loopJumps(loop: SyntaxNode): boolean {
  const body = loop.childForFieldName('body');
  if (!body) return false;
  const stack: SyntaxNode[] = [body];
  while (stack.length) {
    const x = stack.pop()!;
    if (x.type === 'break_statement' || x.type === 'continue_statement') return true;
    if (LOOPS.has(x.type) || x.type === 'switch_statement' || x.type === 'lambda_expression') continue;
    stack.push(...x.namedChildren);
  }
  return false;
}

type Walk = { empty: true; other: SyntaxNode | null } | { empty: false };
const FULL: Walk = { empty: false };

/** The loop's header parts other than its body (condition, update, range), all of which run on the back edge. */
function headerEffect(loop: SyntaxNode, c: Ctx, withInit: boolean): boolean {
  const body = loop.childForFieldName('body');
  for (const ch of loop.namedChildren) {
    if (ch.id === body?.id) continue;
    if (!withInit && loop.type === 'for_statement' && ch.id === loop.childForFieldName('initializer')?.id) continue;
    if (hasEffect(ch, c)) return true;
  }
  return false;
}

/**
 * Walks from statement `s` (exclusive) along its list in direction `side` to the next unconditional barrier
 * (empty interval), a statement with an access (full), or the list's end, where it continues in the parent.
 */
function walkFrom(s: SyntaxNode, c: Ctx, side: 'before' | 'after', seen: Set<number>): Walk {
  const parent = s.parent;
  if (!parent) return FULL;
  if (isCompound(parent)) {
    const list = parent.namedChildren.filter((x) => x.type !== 'comment');
    const i = list.findIndex((x) => x.id === s.id);
    const rest = side === 'after' ? list.slice(i + 1) : list.slice(0, i).reverse();
    for (const t of rest) {
      const bar = barrierOfStatement(t) ?? callActsAsBarrier(t, c, side);
      if (bar) return { empty: true, other: bar };
      if (hasEffect(t, c)) return FULL;
      // A `return` ends this thread's path inside a kernel (nothing follows); in a device function the
      // caller's code follows, which is not seen here.
      if (!c.fn.isKernel && [...walk(t)].some((x) => x.type === 'return_statement')) return FULL;
      if (side === 'after' && t.type === 'return_statement') return { empty: true, other: null };
    }
    return walkOut(parent, c, side, seen);
  }
  return walkOut(s, c, side, seen);
}

/** The walk reached the start (before) or end (after) of `inner`, a body or a statement of `parent`. */
function walkOut(inner: SyntaxNode, c: Ctx, side: 'before' | 'after', seen: Set<number>): Walk {
  const parent = inner.parent;
  if (!parent) return FULL;
  if (inner.id === c.fn.body?.id) return c.fn.isKernel ? { empty: true, other: null } : FULL;
  if (isCompound(parent)) return walkFrom(inner, c, side, seen); // a plain nested block
  if (parent.type === 'if_statement' || parent.type === 'else_clause') {
    const ifs = parent.type === 'else_clause' ? parent.parent : parent;
    if (!ifs || ifs.type !== 'if_statement') return FULL;
    if (side === 'before' && hasEffect(ifs.childForFieldName('condition')!, c)) return FULL;
    return walkFrom(ifs, c, side, seen);
  }
  if (LOOPS.has(parent.type) && parent.childForFieldName('body')?.id === inner.id) {
    if (seen.has(parent.id) || loopJumps(parent)) return FULL;
    seen.add(parent.id);
    // Around the back edge: the header, then the body from the other end up to a barrier.
    if (headerEffect(parent, c, false)) return FULL;
    const body = parent.childForFieldName('body')!;
    const list = (isCompound(body) ? body.namedChildren : [body]).filter((x) => x.type !== 'comment');
    const order = side === 'after' ? list : [...list].reverse();
    let around: Walk = { empty: true, other: null };
    for (const t of order) {
      const bar = barrierOfStatement(t) ?? callActsAsBarrier(t, c, side);
      if (bar) {
        around = { empty: true, other: bar };
        break;
      }
      if (hasEffect(t, c)) return FULL;
    }
    // And out of (after) or into (before) the loop for the last / first iteration.
    const init = parent.type === 'for_statement' ? parent.childForFieldName('initializer') : null;
    if (side === 'before' && init && hasEffect(init, c)) return FULL;
    const out = walkFrom(parent, c, side, seen);
    if (!out.empty) return FULL;
    return around.empty && around.other ? around : out;
  }
  return FULL;
}

/**
 * For an unconditional `__syncthreads();` statement of a kernel or device function: on each side, whether
 * no memory access separates it from its neighbour barrier (`other`: that barrier's call, possibly one inside
 * a called helper, or the barrier itself one loop pass away; null for the kernel's start or end). Null when
 * the function's paths are not structured enough to tell.
 */
export function barrierIntervals(model: CudaModel, smem: SmemFacts, fn: CudaFunction, barrier: SyntaxNode): { before: BarrierNeighbour | null; after: BarrierNeighbour | null } | null {
  const stmt = barrier.parent;
  if (!fn.body || stmt?.type !== 'expression_statement') return null;
  if ([...walk(fn.body)].some((x) => JUMPS.has(x.type))) return null;
  // Inside a lambda, or inside a loop that is left or restarted by `break` / `continue`, the structured
  // paths above are not all the paths.
  for (let p: SyntaxNode | null = stmt.parent; p && p.id !== fn.body.id; p = p.parent) {
    if (p.type === 'lambda_expression') return null;
    if (LOOPS.has(p.type) && loopJumps(p)) return null;
  }
  const { arrays, refs } = declaredNames(fn);
  const c: Ctx = { model, smem, fn, localArrays: arrays, refs, memo: new Map(), depth: 0 };
  const side = (s: 'before' | 'after'): BarrierNeighbour | null => {
    const w = walkFrom(stmt, c, s, new Set());
    return w.empty ? { side: s, other: w.other } : null;
  };
  return { before: side('before'), after: side('after') };
}

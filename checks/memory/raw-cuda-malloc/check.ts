import { cudaModel, type CudaModel } from '../../../src/analysis/cuda.js';
import { mentionNodes, mentions, pyCallOf, pyReferenceOf } from '../../../src/analysis/mentions.js';
import { onceGuarded, setupOnceCall } from '../../../src/analysis/once.js';
import { pythonModel, TEST_OR_BENCH_PATH, type PyModel } from '../../../src/analysis/python.js';
import { calleePath, lastName, matchesVocab, oneLine } from '../../../src/analysis/syntax.js';
import { defineCheck, type CheckContext } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';
import { MALLOC_SHORT, MALLOC_VS_POOL } from '../../../src/config/costs.js';


/** A module whose file name says it implements an allocator: `allocator.py`, `caching_allocator.cu`, `mempool.cu`, `arena.cu`. */
const ALLOCATOR_FILE = /(^|[_.-]|[a-z](?=[A-Z]))([Aa]llocators?|[Mm]em(ory)?[_-]?[Pp]ool|[Mm]emory[_-]?[Rr]esource|[Aa]rena)([_.-]|$)/;
/** Class names of allocator implementations (CachingAllocator, ScratchArena, BlockPool, pool_memory_resource). */
const ALLOCATOR_CLASS = /(Allocator|Pool|Arena|MemoryResource|MemoryManager|_allocator|_pool|_arena|memory_resource|_mr)$/;
/** Member names of an allocator interface (CuPy/RMM/Numba EMM/thrust/STL allocators). */
const ALLOC_MEMBER = /^(malloc|alloc|allocate|do_allocate|memalloc|DeviceAllocate)$/;

const PY_FIX =
  'Allocate from the pool: `runtime.allocate(shape, dtype)` / `cp.empty(...)`, or `cp.cuda.alloc(nbytes)` for a pool-backed pointer; with cuda-python, `cudart.cudaMallocAsync(nbytes, stream)` … `cudart.cudaFreeAsync(ptr, stream)`.';
const CU_FIX =
  'Allocate from a pool: `cudaMallocAsync(&p, n, stream)` … `cudaFreeAsync(p, stream)` on the stream that uses the buffer (raise the pool release threshold, 003 §1.4), or an RMM / CUB pool resource.';

/** The call frees rather than allocates: reported at its allocation, not twice. */
const isFree = (path: string) => /free/i.test(lastName(path) ?? path);

// ---------------------------------------------------------------- Python

/** Functions, methods and classes handed to an allocator hook (`set_allocator(pool.malloc)`, `PythonFunctionAllocator(f, g)`). */
function hookedNames(ctx: CheckContext, m: PyModel): Set<string> {
  const out = new Set<string>();
  for (const name of mentionNodes(ctx.source, ctx.config.vocab.allocator_hooks)) {
    const ref = pyReferenceOf(name);
    const call = ref && pyCallOf(ref);
    if (!call || !m.callMatches(call, ctx.config.vocab.allocator_hooks)) continue;
    for (const ref of call.childForFieldName('arguments')?.descendantsOfType(['identifier', 'attribute']) ?? []) {
      const p = calleePath(ref);
      if (!p) continue;
      out.add(lastName(p) ?? p);
      out.add(p.split('.')[0]);
    }
  }
  return out;
}

function pyInAllocator(ctx: CheckContext, m: PyModel, call: SyntaxNode, hooked: Set<string>): boolean {
  const vocab = ctx.config.vocab;
  for (let p = call.parent; p; p = p.parent) {
    if (p.type === 'function_definition' && hooked.has(p.childForFieldName('name')?.text ?? '')) return true;
    // `set_allocator(lambda n: cp.cuda.Memory(n))`.
    if (p.type === 'lambda' && p.parent?.type === 'argument_list' && p.parent.parent && m.callMatches(p.parent.parent, vocab.allocator_hooks)) return true;
    if (p.type === 'class_definition') {
      const name = p.childForFieldName('name')?.text ?? '';
      if (hooked.has(name) || ALLOCATOR_CLASS.test(name)) return true;
      const bases = p.childForFieldName('superclasses')?.namedChildren ?? [];
      if (bases.some((b) => m.pathMatches(b, vocab.allocator_bases))) return true;
      const methods = p.childForFieldName('body')?.descendantsOfType('function_definition').map((f) => f.childForFieldName('name')?.text ?? '') ?? [];
      if (methods.some((n) => ALLOC_MEMBER.test(n)) && methods.some((n) => /free|dealloc/i.test(n))) return true;
    }
  }
  return false;
}

function checkPython(ctx: CheckContext): void {
  const m = ctx.get(pythonModel);
  const vocab = ctx.config.vocab;
  let hooked: Set<string> | null = null;
  for (const name of mentionNodes(ctx.source, vocab.alloc_calls)) {
    const ref = pyReferenceOf(name);
    const call = ref && pyCallOf(ref);
    if (!call || !m.callMatches(call, vocab.alloc_calls) || m.callMatches(call, vocab.array_alloc_calls)) continue;
    const path = m.callPath(call) ?? '';
    if (isFree(path)) continue;
    // Hot-path calls are `sync/malloc-free-in-hot-path`'s (catalog §2.4); a lazy or grow-only
    // allocation inside a loop runs once, so it is a cold raw allocation like any other.
    if ((m.hotPath(call) && !onceGuarded(call)) || m.debugGated(call)) continue;
    hooked ??= hookedNames(ctx, m);
    if (pyInAllocator(ctx, m, call, hooked)) continue;
    ctx.report({ node: call, messageId: 'raw', data: { call: oneLine(call.text) }, fix: { description: PY_FIX } });
  }
}

// ---------------------------------------------------------------- CUDA C++

const CLASS_TYPES = ['class_specifier', 'struct_specifier'];

/** Class that owns a function: the enclosing class body, or `Owner::` of an out-of-line definition. */
function ownerClass(fn: SyntaxNode): string | null {
  let d = fn.childForFieldName('declarator');
  while (d && d.type !== 'function_declarator') d = d.childForFieldName('declarator') ?? d.namedChildren[0] ?? null;
  const name = d?.childForFieldName('declarator');
  if (name?.type === 'qualified_identifier') return name.childForFieldName('scope')?.text.split('::').pop()?.replace(/<.*$/s, '') ?? null;
  for (let p = fn.parent; p; p = p.parent) {
    if (CLASS_TYPES.includes(p.type)) return p.childForFieldName('name')?.text.replace(/<.*$/s, '') ?? null;
    if (p.type === 'function_definition') return null;
  }
  return null;
}

/** Classes of the source that implement an allocator: by name, base class, or an allocate/deallocate interface. */
function allocatorClasses(ctx: CheckContext, m: CudaModel): Set<string> {
  const out = new Set<string>();
  for (const cls of m.source.root.descendantsOfType(CLASS_TYPES)) {
    const name = cls.childForFieldName('name')?.text.replace(/<.*$/s, '');
    if (!name) continue;
    const bases = cls.namedChildren.find((c) => c.type === 'base_class_clause');
    const baseNames = bases?.descendantsOfType(['type_identifier', 'qualified_identifier', 'template_type']).map((b) => b.text.replace(/<.*$/s, '')) ?? [];
    if (ALLOCATOR_CLASS.test(name) || baseNames.some((b) => matchesVocab(b, ctx.config.vocab.allocator_bases))) out.add(name);
  }
  for (const f of m.functions) {
    const owner = ownerClass(f.node);
    if (owner && (ALLOC_MEMBER.test(f.name) || f.name === 'do_deallocate')) out.add(owner);
  }
  return out;
}

/**
 * `int mallocOrManaged(void** out, size_t bytes) { cudaError_t e = cudaMalloc(out, bytes); ... }`: a project's
 * allocation helper that allocates into its caller's pointer (the pointer-to-pointer parameter goes straight to
 * the call). Whether a pool belongs there is decided where the helper is called (setup or hot path), so the
 * raw call inside it is not the finding.
 */
function allocationHelper(name: string, params: readonly SyntaxNode[], call: SyntaxNode): boolean {
  if (!/alloc/i.test(name)) return false;
  let first: SyntaxNode | null = call.childForFieldName('arguments')?.namedChildren[0] ?? null;
  while (first && (first.type === 'cast_expression' || first.type === 'parenthesized_expression')) first = first.childForFieldName('value') ?? first.namedChildren[first.namedChildren.length - 1] ?? null;
  if (first?.type !== 'identifier') return false;
  return params.some((p) => {
    const decl = p.childForFieldName('declarator');
    return !!decl && decl.type === 'pointer_declarator' && /\*\s*\*/.test(decl.text) && decl.descendantsOfType('identifier').some((i) => i.text === first!.text);
  });
}

function checkCuda(ctx: CheckContext): void {
  const m = ctx.get(cudaModel);
  const vocab = ctx.config.vocab;
  let allocators: Set<string> | null = null;
  for (const c of m.callsMatching(vocab.alloc_calls)) {
    if (isFree(c.path) || matchesVocab(c.path, vocab.array_alloc_calls)) continue;
    // Device-side cudaMalloc (dynamic parallelism) draws from the device heap; host pools do not apply.
    if (m.inDeviceCode(c.node) || m.debugGated(c.node)) continue;
    // Hot-path calls are sync/malloc-free-in-hot-path's, except the once-per-buffer ones it leaves
    // here: a setup loop allocating one kept buffer per element, an allocation hoisted out of a driver loop.
    if (m.hotPath(c.node) && !onceGuarded(c.node) && !setupOnceCall(m, c, ctx.config)) continue;
    const fn = m.functionOf(c.node);
    if (fn && allocationHelper(fn.name, fn.params, c.node)) continue;
    if (fn) {
      allocators ??= allocatorClasses(ctx, m);
      const owner = ownerClass(fn.node);
      if (owner && allocators.has(owner)) continue;
    }
    ctx.report({ node: c.node, messageId: 'raw', data: { call: oneLine(c.node.text) }, fix: { description: CU_FIX } });
  }
}

export default defineCheck({
  id: 'memory/raw-cuda-malloc',
  pass: 5,
  severity: 'medium',
  kind: 'performance',
  confidence: 'high',
  languages: ['cuda', 'python'],
  citation: '003 §1.1 Pool Allocation vs Direct CUDA Allocation ("Always use a memory pool"); 003 §2.2 Stream-Ordered Memory Allocation',
  summary: 'Raw cudaMalloc (cuMemAlloc, cudart.cudaMalloc, cupy.cuda.runtime.malloc) outside the memory pool, off the hot path.',
  why: 'A raw cudaMalloc synchronizes the device and costs ' + MALLOC_VS_POOL + ' (the seed: ~100–1,000 µs against < 1 µs, ~1,000×; 2–5× end-to-end in the RAPIDS benchmarks) (003 §1.1).',
  messages: {
    raw: 'Raw `{{call}}` bypasses the memory pool (' + MALLOC_SHORT + '); allocate through the pool or cudaMallocAsync.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        if (ctx.source.language !== 'cuda' && ctx.source.language !== 'python') return;
        // One-off allocations in tests and benchmarks (catalog do-not-flag); loops there are the hot-path rule's.
        if (TEST_OR_BENCH_PATH.test(ctx.source.path)) return;
        if (ALLOCATOR_FILE.test((ctx.source.path.split('/').pop() ?? '').replace(/\.[^.]+$/, '') + '.')) return;
        if (!mentions(ctx.source, ctx.config.vocab.alloc_calls)) return;
        if (ctx.source.language === 'cuda') checkCuda(ctx);
        else checkPython(ctx);
      },
    };
  },
});

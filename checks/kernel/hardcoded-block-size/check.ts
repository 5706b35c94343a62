import type { ResolvedConfig } from '../../../src/config/schema.js';
import { cudaModel, type CudaModel } from '../../../src/analysis/cuda.js';
import { launchConfigs, prod, type LaunchConfig } from '../../../src/analysis/launch-config.js';
import { occupancy, pct } from '../../../src/analysis/occupancy.js';
import { kernelStaticBytes, smemFacts } from '../../../src/analysis/smem.js';
import type { GpuSpec } from '../../../src/config/gpus.js';
import { ancestor, quote } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';
import { escapeRe as esc, alternation } from '../../../src/core/regex.js';

/** A comment saying the size was measured: 003 §3.1 allows a profiled override ("Profile before overriding"). */
const PROFILED = /(#|\/\/|\/\*|\*).*\b(profil|tuned|benchmark|measured|sweep)/i;
/** Names the catalog treats as block-size variables on the Python side. */
const BLOCK_NAME = /^(block|block_size|threads|threads_per_block|tpb|BLOCK|BLOCK_SIZE|THREADS|THREADS_PER_BLOCK|TPB)$/;

function commentNear(text: string, row: number): boolean {
  const lines = text.split('\n');
  for (let r = Math.max(0, row - 3); r <= Math.min(lines.length - 1, row + 3); r++) if (PROFILED.test(lines[r]!)) return true;
  return false;
}

/** The block argument is written as a literal size, not computed: literals, `dim3(16, 16)`, `(256, 1, 1)`, or a name bound to one. */
function literalShaped(n: SyntaxNode | null, python: boolean): boolean {
  if (!n) return false;
  const t = n.text.replace(/\s+/g, '');
  if (/^\(?\d+(,\d+)*,?\)?$/.test(t) || /^dim3\((\d+|[A-Z_][A-Z0-9_]*|k[A-Z]\w*)(,(\d+|[A-Z_][A-Z0-9_]*|k[A-Z]\w*))*\)$/.test(t)) return true;
  // Python: a tuple naming a block-size variable (`(THREADS,)`, `(tpb, 1, 1)`), or the name itself.
  if (python) return /^\(?[A-Za-z_]\w*(,1)*,?\)?$/.test(t) && BLOCK_NAME.test(t.replace(/[(),1]+$|^\(/g, '').replace(/,.*$/, ''));
  // CUDA: a `#define`, `constexpr` or `dim3 blk(256)` name whose value folds (the caller checked it folds).
  return /^[A-Za-z_]\w*$/.test(t) || /^dim3\([A-Za-z_0-9]+(,[A-Za-z_0-9]+)*\)$/.test(t) || /^[A-Z_][A-Z0-9_]*(\*[A-Z_0-9]+)*$/.test(t);
}

/** The kernel's algorithm fixes the block size: `__launch_bounds__(N)` with N = the block, and `__shared__` arrays sized for it. */
function fixedByAlgorithm(l: LaunchConfig, B: number): boolean {
  const k = l.kernel;
  const lb = k?.fn.launchBounds?.maxThreads;
  if (!k || !lb || k.model.constValue(lb) !== B) return false;
  return /__shared__[^;{}]*\[[^\]]+\]/.test(k.fn.body?.text ?? '');
}

/**
 * Names that spell the block: the argument's own (`dim3(TILE, TILE)`, `kThreads`) and, for a `dim3 threads(...)` variable,
 * those of its declaration (`dim3 threads(ROWS_X, ROWS_Y)`; the nearest before the launch in the same function).
 */
function blockNames(l: LaunchConfig, m: CudaModel | null): string[] {
  const own = (l.blockNode?.text.match(/\b[A-Za-z_]\w*\b/g) ?? []).filter((n) => n !== 'dim3');
  const init = m && l.blockNode ? m.dim3Init(l.blockNode) : null;
  return [...own, ...(init?.text.match(/\b[A-Za-z_]\w*\b/g) ?? [])];
}

/** `dim3 block(TILE, TILE)` for a kernel with `__shared__ float tile[TILE][TILE + 1]`: the shared tile is sized by the same constant, so the block size is part of the algorithm. */
function sharedSizedByBlockName(l: LaunchConfig, names: string[]): boolean {
  const body = l.kernel?.fn.body?.text ?? '';
  if (!names.length) return false;
  const extents = [...body.matchAll(/(?:__shared__|\[\[shared\]\])[^;{}]*?((?:\[[^\]]+\])+)/g)].map((m) => m[1]!);
  // Also a shared buffer templated on it (`__shared__ uninitialized_array<T, kBlock> tmp;`, `BlockReduce<T, kBlock>::TempStorage`).
  const templated = [...body.matchAll(/(?:__shared__|\[\[shared\]\])[^;{}]*?<([^;{}]*)>[^;{}]*;/g)].map((m) => m[1]!);
  return names.some((n) => [...extents, ...templated].some((e) => new RegExp(`\\b${esc(n)}\\b`).test(e)));
}

/**
 * `__shared__ float cache[256]` indexed by `threadIdx.x` and launched with 256 threads: a `__shared__` extent equals the
 * block (or its x extent for a 2-D tile), so a larger block from the occupancy API would index past the array.
 */
function sharedSizedByBlockValue(l: LaunchConfig, B: number, config: ResolvedConfig): boolean {
  const k = l.kernel;
  if (!k || !l.block) return false;
  const facts = smemFacts.compute(k.model.source, config);
  const bx = l.block[0];
  return facts.decls.some((d) => {
    if (d.dynamic || !d.dims.length || d.fn?.node.id !== k.fn.node.id) return false;
    const ext = facts.size(d).extents;
    return ext.some((e) => e === B || (l.block![1] > 1 && bx >= 8 && e === bx));
  });
}

/**
 * The kernel body spells the block size itself: a CUB block primitive instantiated on it (`cub::BlockReduce<float, 256>`,
 * which needs exactly that many threads) or indices built from it instead of `blockDim.x` (`blockIdx.x * 256`,
 * `i += 256 * gridDim.x`). The launch cannot take another size without rewriting the kernel.
 */
function kernelSpellsBlock(l: LaunchConfig, B: number, names: string[]): boolean {
  const body = l.kernel?.fn.body?.text;
  if (!body) return false;
  const k = l.kernel!;
  // A literal only from a warp up: `blockIdx.x * 4` in a kernel launched with 4 threads is more likely a coincidence.
  const spellings = [...(B >= 32 ? [String(B)] : []), ...names.filter((n) => k.model.macros.has(n) || /^[A-Z_][A-Z0-9_]*$|^k[A-Z]/.test(n))];
  if (!spellings.length) return false;
  const ALT = alternation(spellings.map((x) => x.replace(/[^\w]/g, '')));
  const cub = new RegExp(`\\bBlock(Reduce|Scan|RadixSort|Load|Store|Exchange|Histogram|Discontinuity|AdjacentDifference|MergeSort|Shuffle|RunLengthDecode)\\s*<[^;>]*?,\\s*(${ALT})\\s*[,>]`);
  const index = new RegExp(`\\b(blockIdx|gridDim)\\.x\\s*\\*\\s*(${ALT})\\b|\\b(${ALT})\\s*\\*\\s*(blockIdx|gridDim)\\.x\\b`);
  return cub.test(body) || index.test(body);
}

/** The launching function (C++ or Python) around a launch. */
function hostFunction(l: LaunchConfig): SyntaxNode | null {
  return ancestor(l.node, ['function_definition']);
}

/**
 * An argument's text with the initialisers of the local names it uses spliced in (`nshared` → `threads.y * sizeof(U)`),
 * from the nearest assignment before the launch in the same function, three levels deep.
 */
function expandLocal(n: SyntaxNode | null, l: LaunchConfig): string {
  if (!n) return '';
  const fn = hostFunction(l);
  const before = fn ? fn.text.slice(0, l.node.startIndex - fn.startIndex) : '';
  let text = n.text;
  const seen = new Set<string>();
  for (let depth = 0; depth < 3; depth++) {
    const names = (text.match(/\b[A-Za-z_]\w*\b/g) ?? []).filter((x) => !seen.has(x));
    if (!names.length || !before) break;
    for (const name of names) {
      seen.add(name);
      const hits = [...before.matchAll(new RegExp(`\\b${esc(name)}\\s*(?:=(?!=)|\\()\\s*([^;\\n]+)`, 'g'))];
      if (hits.length) text += ' ' + hits[hits.length - 1]![1];
    }
  }
  return text;
}

const SM_COUNT = /multiProcessorCount|MultiProcessorCount|maxThreadsPerMultiProcessor|multi_processor_count|MULTIPROCESSOR_COUNT|\b(num_sms|n_sms|sm_count|num_sm|numSMs|nSMs)\b/;

/**
 * The host sizes the grid from the GPU's SM count (`blocks_per_sm * prop.multiProcessorCount`): a persistent grid whose
 * author already did the occupancy arithmetic for this block size.
 */
function gridFromSmCount(l: LaunchConfig): boolean {
  return SM_COUNT.test(expandLocal(l.gridNode, l));
}

/**
 * The block size also sizes the launch's dynamic shared memory (`nshared = threads.y * sizeof(U)`,
 * `(block_size - 32) * f128::size * sizeof(float)`): the kernel's shared-memory layout is built on it.
 */
function smemSizedByBlock(l: LaunchConfig, names: string[]): boolean {
  if (!l.smemNode || !names.length) return false;
  const t = expandLocal(l.smemNode, l);
  return names.some((n) => new RegExp(`\\b${esc(n)}\\b`).test(t));
}

/** The launching function asserts a divisibility or shape on the block size (`assert(N % (block_size * 8) == 0)`). */
function assertedByHost(l: LaunchConfig, names: string[]): boolean {
  const fn = hostFunction(l);
  if (!fn || !names.length) return false;
  const asserts = fn.text.match(/\b(?:assert|static_assert|AT_ASSERTM?|TORCH_CHECK|TORCH_INTERNAL_ASSERT)\s*\([^;]*/g) ?? [];
  return names.some((n) => asserts.some((a) => new RegExp(`\\b${esc(n)}\\b`).test(a)));
}

/**
 * The kernel is written against the launch's named block constant: its body or its `__launch_bounds__` spells the same
 * file-level constant (`__launch_bounds__(CTA_SIZE)`, `constexpr int per_thread = TILE / CTA_SIZE`).
 */
function kernelNamesBlock(l: LaunchConfig, names: string[]): boolean {
  const k = l.kernel;
  if (!k) return false;
  const text = (k.fn.body?.text ?? '') + ' ' + (k.fn.launchBounds?.node.text ?? '');
  const consts = names.filter((n) => n !== 'dim3' && (k.model.macros.has(n) || k.model.constValueOfText(n) !== null));
  return consts.some((n) => new RegExp(`\\b${esc(n)}\\b`).test(text));
}

const norm = (n: SyntaxNode | null) => n?.text.replace(/\s+/g, '') ?? '';

/**
 * A launch in lockstep with one whose block the algorithm fixes: same function, same grid and block expressions
 * (scan's `uniformUpdate` reads the per-block sums of `scanExclusiveShared` by `blockIdx.x`, so both must use one size).
 */
function lockstepWithFixed(l: LaunchConfig, fixed: ReadonlySet<LaunchConfig>): boolean {
  const fn = ancestor(l.node, ['function_definition']);
  if (!fn || !l.gridNode) return false;
  return [...fixed].some((f) => ancestor(f.node, ['function_definition'])?.id === fn.id && norm(f.gridNode) === norm(l.gridNode) && norm(f.blockNode) === norm(l.blockNode));
}

/**
 * CuTe DSL / FlyDSL launch proxy, `kernel(args).launch(grid=..., block=(128, 1, 1), smem=...)`: the block is the thread
 * layout the kernel's tiled copies and MMA atoms were built for, and these DSLs have no occupancy-API path to take.
 */
function dslLaunchProxy(l: LaunchConfig): boolean {
  const fn = l.node.childForFieldName('function');
  return fn?.type === 'attribute' && fn.childForFieldName('attribute')?.text === 'launch' && fn.childForFieldName('object')?.type === 'call';
}

/**
 * `<<<1, B>>>`: one block in all (a serial task, a deterministic single-block reduction): one SM runs it whatever the
 * block size, so the occupancy API, which maximises resident blocks per SM, has nothing to choose.
 */
function singleBlock(l: LaunchConfig): boolean {
  return !!l.grid && prod(l.grid) === 1;
}

/** One warp per item (`<<<n, 32>>>` with warp shuffles/votes): the block is the warp the algorithm reduces over. */
function warpPerItem(l: LaunchConfig, B: number): boolean {
  return B === 32 && /\b__(shfl\w*_sync|ballot_sync|any_sync|all_sync|reduce_\w+_sync|match_\w+_sync)\b|tiled_partition/.test(l.kernel?.fn.body?.text ?? '');
}

/**
 * Warp per item with several warps per block: the host sizes the grid in warps (`CEIL_DIV(N * WARP_SIZE, block)`)
 * and the kernel works per warp (`warp_id = threadIdx.x / WARP_SIZE`, `tiled_partition<32>`). The block only groups
 * independent warps (items per block); each warp's work and registers do not depend on it.
 */
function warpsPerBlock(l: LaunchConfig, B: number): boolean {
  const k = l.kernel;
  if (B % 32 !== 0 || !k?.fn.body) return false;
  // A warp-width name defined in another header (`WARP_SIZE`) counts unless this file defines it otherwise.
  const is32 = (t: string) => {
    const v = k.model.constValueOfText(t);
    return t === '32' || t === 'warpSize' || v === 32 || (v === null && /^(WARP_SIZE|kWarpSize|WARPSIZE|warp_size)$/.test(t));
  };
  const grid = expandLocal(l.gridNode, l).replace(/\s+/g, '');
  const factors = [...grid.matchAll(/\*(\w+)/g), ...grid.matchAll(/(\w+)(?=\*)/g)].map((m) => m[1]!);
  if (!factors.some(is32)) return false;
  const body = k.fn.body.text;
  const divisors = [...body.matchAll(/threadIdx\.x\s*\/\s*(\w+)/g)].map((m) => m[1]!);
  return divisors.some(is32) || /threadIdx\.x\s*>>\s*5\b|tiled_partition\s*<\s*\w+\s*>|meta_group_rank\s*\(/.test(body);
}

/** `k<256><<<g, 256>>>`: a template instantiated on the block size is a block-cooperative algorithm sized at compile time. */
function templatedOnBlock(l: LaunchConfig, B: number): boolean {
  const callee = l.node.childForFieldName('function');
  const targs = callee?.type === 'template_function' ? callee.childForFieldName('arguments') : null;
  return !!targs && targs.namedChildren.some((a) => Number(a.text) === B || (l.kernel?.model.constValue(a) ?? null) === B);
}


/** Per-thread arrays (not `__shared__`) of this many 32-bit words or more mark a register-heavy kernel. */
const HEAVY_LOCAL_WORDS = 16;

/**
 * 32-bit words of the kernel's per-thread arrays (`float acc[16]`, `double w[K][4]`), when their extents fold; the only
 * register evidence the source gives without the compiler. Null when the kernel is not in this file.
 */
function localArrayWords(l: LaunchConfig): number | null {
  const k = l.kernel;
  if (!k?.fn.body) return null;
  let words = 0;
  for (const d of k.fn.body.descendantsOfType('declaration')) {
    if (/__shared__|\[\[shared\]\]|\bextern\b|\bstatic\b/.test(d.text.slice(0, 80))) continue;
    const type = d.childForFieldName('type')?.text ?? '';
    const wide = /\b(double|long|int64_t|uint64_t|size_t|int2|float2|longlong\d?|double\d)\b/.test(type) ? 2 : /\b(float4|int4|uint4)\b/.test(type) ? 4 : 1;
    for (const a of d.descendantsOfType('array_declarator')) {
      if (a.parent?.type === 'array_declarator') continue; // counted from the outermost
      let n = 1;
      for (let cur: SyntaxNode | null = a; cur?.type === 'array_declarator'; cur = cur.childForFieldName('declarator')) {
        const v = k.model.constValue(cur.childForFieldName('size'));
        n *= v !== null && v > 0 ? v : 0;
      }
      words += n * wide;
    }
  }
  return words;
}

/**
 * Occupancy of this block on each target with what the source says about the kernel (static `__shared__` bytes,
 * constant dynamic shared memory; registers at the model's default: unknown, so not a limit) and the best occupancy
 * any block size could reach with the same shared memory (what cudaOccupancyMaxPotentialBlockSize would find).
 * `known` is false when the dynamic shared memory is not a constant.
 */
function residency(l: LaunchConfig, B: number, targets: readonly GpuSpec[], config: ResolvedConfig, m: CudaModel | null) {
  const k = l.kernel;
  const stat = k ? (kernelStaticBytes(smemFacts.compute(k.model.source, config), k.fn, l.node.childForFieldName('function'))?.bytes ?? 0) : 0;
  const dynText = l.smemNode?.text.trim() ?? '0';
  const dyn = /^0[uUlL]*$/.test(dynText) ? 0 : l.smemNode ? (m?.constValue(l.smemNode) ?? k?.model.constValue(l.smemNode) ?? null) : 0;
  const lb = k?.fn.launchBounds?.maxThreads ? k.model.constValue(k.fn.launchBounds.maxThreads) : null;
  const per = targets.map((g) => {
    const input = { staticSmemPerBlock: stat, dynamicSmemPerBlock: dyn ?? 0, kernelMaxThreadsPerBlock: lb };
    const o = occupancy(g, { threadsPerBlock: B, ...input });
    let best = 0;
    for (let t = g.warp; t <= g.maxThreadsPerBlock; t += g.warp) best = Math.max(best, occupancy(g, { threadsPerBlock: t, ...input }).occupancy);
    return { g, o, best };
  });
  return { per, known: dyn !== null, smem: stat + (dyn ?? 0) };
}

export default defineCheck({
  id: 'kernel/hardcoded-block-size',
  pass: 3,
  severity: 'high',
  kind: 'performance',
  confidence: 'high',
  languages: ['cuda', 'nvrtc-in-python', 'python'],
  citation:
    '003 §3.1 Occupancy-Based Block Sizing ("NEVER hardcode block=(256, 1, 1). Always use the occupancy API"); 004 §H2.2 Techniques for Occupancy Tuning (Adjust block size; Use the CUDA Occupancy API)',
  summary: 'Launch block size written as a literal (or a #define / constexpr / literal tuple) that leaves occupancy on the table on some target, or on a register-heavy kernel, instead of coming from the occupancy API.',
  why: 'The best block size depends on the kernel\'s registers and shared memory and on the GPU (2,048 threads/SM on A100/H100, 1,536 on RTX 3090/4090, 003 §3.1); a 1,024-thread block can limit an SM to one resident block (004 §H2.2), so 003 §3.1 says never hard-code it.',
  messages: {
    hardcoded:
      'Block size is hard-coded ({{b}} threads); derive it from the occupancy API ({{api}}), which accounts for registers and shared memory. Even before registers, {{b}}-thread blocks{{smem}} allow {{figures}}, less than another block size reaches on some target: `{{code}}`.',
    hardcodedFull:
      'Block size is hard-coded ({{b}} threads) in `{{code}}`: the best occupancy on every target before registers count ({{figures}}), but the kernel keeps {{words}} 32-bit words of per-thread arrays, so registers can limit residency at this size; the occupancy API ({{api}}) would account for them.',
  },
  fix: 'judgment',
  supersedes: ['kernel/missing-launch-bounds'],
  group: 'value',
  create(ctx) {
    const python = ctx.source.language === 'python';
    return {
      'source:exit'() {
        const launches = ctx.get(launchConfigs);
        const fixed = new Set<LaunchConfig>();
        const candidates: Array<{ l: LaunchConfig; B: number }> = [];
        for (const l of launches) {
          if (l.testOrBench || !l.block || !literalShaped(l.blockNode, python) || (python && dslLaunchProxy(l))) continue;
          const B = prod(l.block);
          if (B <= 0) continue;
          const names = blockNames(l, python ? null : ctx.get(cudaModel));
          if (
            fixedByAlgorithm(l, B) ||
            templatedOnBlock(l, B) ||
            sharedSizedByBlockName(l, names) ||
            sharedSizedByBlockValue(l, B, ctx.config) ||
            kernelSpellsBlock(l, B, names) ||
            kernelNamesBlock(l, names) ||
            smemSizedByBlock(l, names) ||
            assertedByHost(l, names) ||
            warpsPerBlock(l, B) ||
            warpPerItem(l, B)
          ) {
            fixed.add(l);
            continue;
          }
          if (singleBlock(l) || gridFromSmCount(l)) continue;
          candidates.push({ l, B });
        }
        for (const { l, B } of candidates) {
          if (lockstepWithFixed(l, fixed)) continue;
          const lb = l.kernel?.fn.launchBounds?.maxThreads;
          if (lb && l.kernel!.model.constValue(lb) === B && commentNear(ctx.source.text, l.node.startPosition.row)) continue;
          const { per: occ, known, smem } = residency(l, B, ctx.config.targets, ctx.config, python ? null : ctx.get(cudaModel));
          const figures = occ.map(({ g, o }) => `${o.blocks} block(s)/SM on ${g.name} (${pct(o.occupancy)} occupancy)`).join(', ');
          // The constant reaches the best occupancy any block size could on every target (with the kernel's shared memory,
          // registers at the model's default): the occupancy API would gain nothing unless registers limit the kernel.
          const atBest = known && occ.length > 0 && occ.every(({ o, best }) => o.occupancy > 0 && o.occupancy >= best - 1e-9);
          const words = localArrayWords(l);
          const heavy = words !== null && words >= HEAVY_LOCAL_WORDS;
          if (atBest && !heavy) continue;
          const full = atBest;
          const project = python && ctx.projectVocabulary;
          const api = project ? 'runtime.launch_config / cudaOccupancyMaxPotentialBlockSize' : python ? 'cudaOccupancyMaxPotentialBlockSize through cuda-python, bounded by the kernel\'s `max_threads_per_block`' : 'cudaOccupancyMaxPotentialBlockSize';
          ctx.report({
            node: l.node,
            messageId: full ? 'hardcodedFull' : 'hardcoded',
            data: { b: B, figures, code: quote(l.node), api, words: words ?? 0, smem: smem ? ` with ${smem} B of shared memory per block` : '' },
            groupKey: String(B),
            subject: l.kernel ? `kernel:${l.kernel.fn.name}` : undefined,
            ...(full ? { severity: 'low-medium' as const } : {}),
            fix: {
              description: project
                ? 'grid, block = runtime.launch_config(kernel, n_items) and pass both (the grid formula may change too).'
                : python
                  ? 'Size the block from the compiled kernel: `cuda.bindings.runtime.cudaOccupancyMaxPotentialBlockSize` (cuda-python) or at least `min(kernel.max_threads_per_block, ...)` of the CuPy `RawKernel`, and size the grid from it.'
                  : 'cudaOccupancyMaxPotentialBlockSize(&min_grid, &block, kernel, smem_bytes, 0) and size the grid from it.',
            },
          });
        }
      },
    };
  },
});

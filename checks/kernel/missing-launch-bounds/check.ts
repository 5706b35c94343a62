import type { CudaFunction, CudaModel } from '../../../src/analysis/cuda.js';
import { cudaModel } from '../../../src/analysis/cuda.js';
import { launchConfigs, lightKernel as light, prod } from '../../../src/analysis/launch-config.js';
import { lineRewritable } from '../../../src/analysis/precision-kernel.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';
import { escapeRe as esc } from '../../../src/core/regex.js';

/** Catalog (c): names projects give the block size (template parameters and #defines). */
const BLOCK_NAME = /^k?(BLOCK|BLOCK_SIZE|BLOCK_THREADS|BLOCK_DIM|BlockSize|BlockThreads|THREADS|THREADS_PER_BLOCK|NTHREADS|NUM_THREADS|TPB)$/;
/** A warp index: 32 lanes per warp on every CUDA GPU (`x / 32`, `x >> 5`, `x / warpSize`, `x / WARP_SIZE` when it is 32). */
const WARP_INDEX = /^(\w+(?:\.x)?)\s*(?:\/\s*(\w+)|>>\s*5)$/;
/** A 2-D or 3-D block: a `[BLOCK]` extent or a `threadIdx.x` bound then sizes one side of the block, not its thread count. */
const MULTI_DIM = /\bthreadIdx\.[yz]\b|\bblockDim\.[yz]\b/;
/** Bounds below one warp (`<<<1, 1>>>` control kernels) tell the compiler nothing useful. */
const MIN_USEFUL = 32;
const MAX_USEFUL = 1024;
/** Registers one thread can address: a bound only matters once regs/SM ÷ its threads falls below this. */
const MAX_REGS_PER_THREAD = 255;

/**
 * `__launch_bounds__(n)` alone caps registers at regs/SM ÷ n (rounded to the allocation unit); at n ≤ 256 that is
 * 256 or more, above the 255 a thread can use, so the bound changes no allocation (nvcc 13, sm_80: a 198-register
 * kernel keeps ~190 with `__launch_bounds__(256)` and drops to 168 with 384). The cap first bites above 256 threads.
 */
function boundCapsRegisters(n: number, gpus: ReadonlyArray<{ regsPerSm: number; warp: number; regAllocGranularityPerWarp: number }>): boolean {
  return gpus.some((g) => {
    const warps = Math.ceil(n / g.warp);
    const perWarp = Math.floor(g.regsPerSm / warps / g.regAllocGranularityPerWarp) * g.regAllocGranularityPerWarp;
    return Math.floor(perWarp / g.warp) < MAX_REGS_PER_THREAD;
  });
}

interface Known { n: number | string; how: string }

function templateParams(fn: CudaFunction): string[] {
  const t = fn.node.parent;
  if (t?.type !== 'template_declaration') return [];
  return (t.childForFieldName('parameters')?.namedChildren ?? []).map((p) => (p.childForFieldName('declarator') ?? p.childForFieldName('name'))?.text ?? '');
}

/** 32 spelled as a literal, `warpSize`, or a `#define`/constant of the file equal to 32. */
function isWarpWidth(m: CudaModel, w: string | undefined): boolean {
  if (w === undefined) return true; // `>> 5`
  if (w === '32' || w === 'warpSize') return true;
  return /^[A-Za-z_]\w*$/.test(w) && m.constValueOfText(w) === 32;
}

/** Thread (`threadIdx.x` or a local holding it) or warp (`that / 32`, `>> 5`) index of a block, or null. */
function indexKind(m: CudaModel, idx: string, alias: Map<string, 'thread' | 'warp'>): 'thread' | 'warp' | null {
  const t = idx.replace(/\s+/g, ' ').replace(/^\((?:unsigned|int|unsigned int)\)\s*/, '').trim();
  if (t === 'threadIdx.x') return 'thread';
  if (alias.has(t)) return alias.get(t)!;
  const w = WARP_INDEX.exec(t);
  if (w && (w[1] === 'threadIdx.x' || alias.get(w[1]) === 'thread') && isWarpWidth(m, w[2])) return 'warp';
  return null;
}

/** Local names that hold `threadIdx.x` (lane of block) or `threadIdx.x / 32` (warp of block), also through `tid = threadIdx.x; warp = tid >> 5`. */
function indexAliases(m: CudaModel, body: SyntaxNode): Map<string, 'thread' | 'warp'> {
  const out = new Map<string, 'thread' | 'warp'>();
  for (const d of body.descendantsOfType('init_declarator')) {
    const name = d.childForFieldName('declarator')?.text;
    const v = d.childForFieldName('value')?.text;
    if (!name || !v) continue;
    const k = indexKind(m, v, out);
    if (k) out.set(name, k);
  }
  return out;
}

/** `threadIdx.x - X` / `threadIdx.x >= X`: threads past X exist, so X is a split point of the block, not its size. */
function splitsBlockAt(text: string, x: string): boolean {
  const e = x.trim();
  return new RegExp(`threadIdx\\.x\\s*(?:-|>=)\\s*\\(?\\s*${esc(e)}(?![\\w.])`).test(text);
}

/** Catalog (b): a 1-D `__shared__` array of constant extent indexed by the thread or warp index bounds the block. */
function fromSharedArrays(m: CudaModel, body: SyntaxNode): Known[] {
  const out: Known[] = [];
  const alias = indexAliases(m, body);
  for (const decl of body.descendantsOfType('declaration')) {
    if (!/^\s*(static\s+)?(volatile\s+)?__shared__\b/.test(decl.text) || /\bextern\b/.test(decl.text)) continue;
    for (const ad of decl.descendantsOfType('array_declarator')) {
      if (ad.parent?.type === 'array_declarator' || ad.childForFieldName('declarator')?.type === 'array_declarator') continue;
      const name = ad.childForFieldName('declarator')?.text;
      const size = ad.childForFieldName('size');
      // A halo (`BLOCK + 2`) or padded extent is not the block size.
      if (!name || !size || /[+-]/.test(size.text)) continue;
      const E = m.constValue(size);
      if (E === null || E <= 0 || splitsBlockAt(body.text, size.text)) continue;
      for (const s of body.descendantsOfType('subscript_expression')) {
        if (s.childForFieldName('argument')?.text !== name) continue;
        const idx = (s.childForFieldName('indices') ?? s.childForFieldName('index'))?.text.replace(/^\[|\]$/g, '').replace(/\s+/g, ' ').trim() ?? '';
        const kind = indexKind(m, idx, alias);
        const n = kind === 'thread' ? E : kind === 'warp' ? E * 32 : null;
        // 32 warp slots (or 1,024 thread slots) fit any block: only a launch can say the block is 1,024.
        if (n !== null && n % 32 === 0 && n < 1024) {
          out.push({ n, how: `\`__shared__ ${name}[${size.text}]\` is indexed by the ${kind === 'warp' ? 'warp' : 'thread'} index, so blocks have at most ${n} threads` });
          break;
        }
      }
    }
  }
  return out;
}

/** Catalog (c): a block-size template parameter or #define used to index the grid. */
function fromNames(m: CudaModel, fn: CudaFunction, body: SyntaxNode): Known[] {
  const out: Known[] = [];
  const text = body.text;
  // `threadIdx.x < BLOCK` is a guard, not a bound: it selects part of a larger block (`else idx = threadIdx.x - BLOCK`).
  const usedAsBlock = (id: string) =>
    new RegExp(`blockIdx\\.x\\s*\\*\\s*\\(?${esc(id)}\\b|\\b${esc(id)}\\s*\\)?\\s*\\*\\s*blockIdx\\.x|\\+=\\s*${esc(id)}\\b|__shared__[^;]*\\[\\s*${esc(id)}\\s*\\](?!\\s*\\[)`).test(text) &&
    !splitsBlockAt(text, id);
  for (const p of templateParams(fn)) if (BLOCK_NAME.test(p) && usedAsBlock(p)) out.push({ n: p, how: `template parameter \`${p}\` is the block size` });
  for (const [k] of m.macros) {
    if (!BLOCK_NAME.test(k) || !usedAsBlock(k)) continue;
    const v = m.constValue(body.descendantsOfType('identifier').find((i) => i.text === k) ?? null);
    if (v !== null && v > 0 && v <= 1024) out.push({ n: v, how: `\`#define ${k} ${v}\` is the block size` });
  }
  return out;
}

/** The qualifier token (`__global__` or a RAFT_KERNEL-style macro) the bound goes after. */
function qualifierNode(fn: CudaFunction, m: CudaModel): SyntaxNode | null {
  const header = fn.node.children.filter((c) => c.type !== 'compound_statement');
  for (const c of header) {
    const hit = c.text === '__global__' ? c : c.descendantsOfType(['identifier', 'type_identifier', 'primitive_type']).find((i) => i.text === '__global__' || /\b__global__\b/.test(m.macros.get(i.text) ?? ''));
    if (hit) return hit;
    if (/^\s*__global__\s*$/.test(c.text) || /\b__global__\b/.test(m.macros.get(c.text) ?? '')) return c;
  }
  return null;
}

export default defineCheck({
  id: 'kernel/missing-launch-bounds',
  pass: 3,
  severity: 'high',
  kind: 'performance',
  confidence: 'medium',
  languages: ['cuda', 'nvrtc-in-python'],
  citation:
    '003 §9 Pass 3 ("__launch_bounds__ on kernels with known max block size (Section 3.1)"); 003 §10 (register warning row, action "__launch_bounds__"); 004 §H2.3 Compiler Hints to Optimize Occupancy; 004 §H2.2 (Use __launch_bounds__)',
  summary: 'A kernel whose maximum block size is fixed (constant launches, block-sized shared arrays, a BLOCK_SIZE parameter) but that has no __launch_bounds__.',
  why: 'Without `__launch_bounds__` nvcc does not budget registers for the block size (004 §H2.3): it may give a thread up to 255 registers, so a block of more than 256 threads can exceed the 64K-register file (a launch failure, "too many resources requested") or run at fewer resident blocks than planned (003 §10). The bound makes the compiler fit registers to regs/SM ÷ threads (128 at 512 threads, 64 at 1,024).',
  messages: {
    missing:
      'Kernel has a known maximum block size above 256 threads but no __launch_bounds__; the compiler does not fit registers to it: `{{kernel}}` — {{how}}; add `__launch_bounds__({{n}})`.',
  },
  fix: 'safe',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(cudaModel);
        const launches = ctx.source.language === 'python' ? [] : ctx.get(launchConfigs);
        for (const fn of m.kernels.values()) {
          const body = fn.body;
          if (!fn.isKernel || fn.launchBounds || !body) continue;
          const headerText = fn.node.text.slice(0, body.startIndex - fn.node.startIndex);
          // Computed bounds hidden in a macro (`LAUNCH_BOUNDS(256)`, `RAFT_KERNEL_BOUNDS`) are still bounds.
          if (/launch_bounds/i.test(headerText) || [...m.macros].some(([k, v]) => /__launch_bounds__/.test(v) && new RegExp(`\\b${esc(k)}\\b`).test(headerText))) continue;
          const known: Known[] = [];
          const mine = launches.filter((l) => l.kernel?.fn === fn);
          // In a 2-D/3-D block a shared extent or a BLOCK name sizes one side (`As[BLOCK][BLOCK]`, 16×16 threads): only launches give the product.
          const fromBody = MULTI_DIM.test(body.text) ? [] : [...fromSharedArrays(m, body), ...fromNames(m, fn, body)];
          if (mine.length > 0 && mine.every((l) => l.block)) {
            const sizes = new Set(mine.map((l) => prod(l.block!)));
            if (sizes.size === 1) {
              const n = [...sizes][0];
              known.push({ n, how: `all ${mine.length} launch(es) in this file use ${n} threads per block` });
            }
          } else if (mine.length > 0 && mine.some((l) => !l.block) && fromBody.length === 0) {
            continue;
          }
          known.push(...fromBody);
          if (known.length === 0) continue;
          const distinct = [...new Set(known.map((k) => String(k.n)))];
          const numeric = known.filter((k) => typeof k.n === 'number').map((k) => k.n as number);
          const n = distinct.length === 1 ? known[0].n : numeric.length ? Math.max(...numeric) : known[0].n;
          // `<<<1, 1>>>` control kernels and sub-warp blocks gain nothing; a bound of 1,024 is what the compiler assumes already.
          if (typeof n === 'number' && (n < MIN_USEFUL || n > MAX_USEFUL)) continue;
          // A bound that caps nothing (≤ 256 threads), or a kernel too light to reach any cap, gains nothing from it.
          const gpus = ctx.config.targets.length ? ctx.config.targets : [{ regsPerSm: 65536, warp: 32, regAllocGranularityPerWarp: 256 }];
          if (typeof n === 'number' && !boundCapsRegisters(n, gpus)) continue;
          if (light(body)) continue;
          const q = qualifierNode(fn, m);
          let fix: { description: string; replace?: { from: SyntaxNode; text: string } } = {
            description: `Declare the bound: \`__launch_bounds__(${n})\` after \`__global__\` (add a second argument only after checking T·minBlocks against the targets' threads/SM).`,
          };
          if (q && distinct.length === 1) {
            const line = ctx.linesOf(q);
            const col = q.startPosition.column;
            if (lineRewritable(ctx, q, line) && line.slice(col, col + q.text.length) === q.text) {
              const end = col + q.text.length;
              fix = { ...fix, replace: { from: q, text: `${line.slice(0, end)} __launch_bounds__(${n})${line.slice(end)}` } };
            }
          }
          const how = known.find((k) => String(k.n) === String(n)) ?? known[0];
          // Known only from literal launches: the same hazard a hard-coded-block-size finding names on those launches (precedence decides).
          const fromLaunches = how === known[0] && mine.length > 0 && how.how.startsWith('all ');
          ctx.report({ node: q ?? fn.node, messageId: 'missing', data: { kernel: fn.name, how: how.how, n }, fix, ...(fromLaunches ? { subject: `kernel:${fn.name}` } : {}) });
        }
      },
    };
  },
});

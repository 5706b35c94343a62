import { launchConfigs, prod, type LaunchConfig } from '../../../src/analysis/launch-config.js';
import { occupancy, pct } from '../../../src/analysis/occupancy.js';
import { quote } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/engine/types.js';

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

/** `dim3 block(TILE, TILE)` for a kernel with `__shared__ float tile[TILE][TILE + 1]`: the shared tile is sized by the same constant, so the block size is part of the algorithm. */
function sharedSizedByBlockName(l: LaunchConfig): boolean {
  const body = l.kernel?.fn.body?.text ?? '';
  const names = (l.blockNode?.text.match(/\b[A-Za-z_]\w*\b/g) ?? []).filter((n) => n !== 'dim3');
  if (!names.length) return false;
  const extents = [...body.matchAll(/__shared__[^;{}]*?((?:\[[^\]]+\])+)/g)].map((m) => m[1]!);
  return names.some((n) => extents.some((e) => new RegExp(`\\b${n}\\b`).test(e)));
}

/** One warp per item (`<<<n, 32>>>` with warp shuffles/votes): the block is the warp the algorithm reduces over. */
function warpPerItem(l: LaunchConfig, B: number): boolean {
  return B === 32 && /\b__(shfl\w*_sync|ballot_sync|any_sync|all_sync|reduce_\w+_sync|match_\w+_sync)\b|tiled_partition/.test(l.kernel?.fn.body?.text ?? '');
}

/** `k<256><<<g, 256>>>`: a template instantiated on the block size is a block-cooperative algorithm sized at compile time. */
function templatedOnBlock(l: LaunchConfig, B: number): boolean {
  const callee = l.node.childForFieldName('function');
  const targs = callee?.type === 'template_function' ? callee.childForFieldName('arguments') : null;
  return !!targs && targs.namedChildren.some((a) => Number(a.text) === B || (l.kernel?.model.constValue(a) ?? null) === B);
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
  summary: 'Launch block size written as a literal (or a #define / constexpr / literal tuple) instead of coming from the occupancy API.',
  why: 'The best block size depends on the kernel\'s registers and shared memory and on the GPU (2,048 threads/SM on A100/H100, 1,536 on RTX 3090/4090, 003 §3.1); a 1,024-thread block can limit an SM to one resident block (004 §H2.2), so 003 §3.1 says never hard-code it.',
  messages: {
    hardcoded:
      'Block size is hard-coded ({{b}} threads); derive it from the occupancy API (runtime.launch_config / cudaOccupancyMaxPotentialBlockSize), which accounts for registers and shared memory. Even before registers, {{b}}-thread blocks allow {{figures}}: `{{code}}`.',
  },
  fix: 'judgment',
  create(ctx) {
    const python = ctx.source.language === 'python';
    return {
      'source:exit'() {
        for (const l of ctx.get(launchConfigs)) {
          if (l.testOrBench || !l.block || !literalShaped(l.blockNode, python)) continue;
          const B = prod(l.block);
          if (B <= 0) continue;
          if (fixedByAlgorithm(l, B) || templatedOnBlock(l, B) || sharedSizedByBlockName(l) || warpPerItem(l, B)) continue;
          const lb = l.kernel?.fn.launchBounds?.maxThreads;
          if (lb && l.kernel!.model.constValue(lb) === B && commentNear(ctx.source.text, l.node.startPosition.row)) continue;
          const figures = ctx.config.targets
            .map((g) => {
              const o = occupancy(g, { threadsPerBlock: B });
              return `${o.blocks} block(s)/SM on ${g.name} (${pct(o.occupancy)} occupancy)`;
            })
            .join(', ');
          ctx.report({
            node: l.node,
            messageId: 'hardcoded',
            data: { b: B, figures, code: quote(l.node) },
            fix: {
              description: python
                ? 'grid, block = runtime.launch_config(kernel, n_items) and pass both (the grid formula may change too).'
                : 'cudaOccupancyMaxPotentialBlockSize(&min_grid, &block, kernel, smem_bytes, 0) and size the grid from it.',
            },
          });
        }
      },
    };
  },
});

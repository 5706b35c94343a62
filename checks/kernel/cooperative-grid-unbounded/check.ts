import { cudaModel } from '../../../src/analysis/cuda.js';
import { isCeilDivGrid, launchConfigs, prod } from '../../../src/analysis/launch-config.js';
import { occupancy, smallestSmTarget } from '../../../src/analysis/occupancy.js';
import { calleePath, pyArgs, quote } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

const COOP_ATTR = /\b(cudaLaunchAttributeCooperative|CU_LAUNCH_ATTRIBUTE_COOPERATIVE)\b/;
/** CuPy launches every kernel of a module built with this flag through cuLaunchCooperativeKernel. */
const CUPY_COOP = /\benable_cooperative_groups\s*=\s*True\b/;
const PY_COOP_KW = /\bcooperative(?:_launch)?\s*=\s*True\b/;
const FN_TYPES = ['function_definition', 'lambda'];

function enclosing(n: SyntaxNode): SyntaxNode | null {
  for (let p = n.parent; p; p = p.parent) if (FN_TYPES.includes(p.type)) return p;
  return null;
}

/** The expression a grid variable was last assigned before `use` in the same function (one level). */
function definitionOf(id: SyntaxNode, use: SyntaxNode): SyntaxNode | null {
  const scope = enclosing(use) ?? use.tree.rootNode;
  let best: SyntaxNode | null = null;
  for (const d of scope.descendantsOfType(['init_declarator', 'assignment_expression', 'assignment'])) {
    if (d.startIndex >= use.startIndex) continue;
    const lhs = d.childForFieldName(d.type === 'init_declarator' ? 'declarator' : 'left');
    if (lhs?.text !== id.text) continue;
    let v = d.childForFieldName(d.type === 'init_declarator' ? 'value' : 'right');
    // `dim3 grid((n + 255) / 256)`: the x extent is the first constructor argument.
    if (v?.type === 'argument_list' || v?.type === 'initializer_list') v = v.namedChildren[0] ?? null;
    if (v) best = v;
  }
  return best;
}

/** The grid expression with `dim3(...)` / 1-tuples / one variable hop peeled off. */
function gridSource(grid: SyntaxNode): SyntaxNode {
  let g = grid;
  for (let hop = 0; hop < 3; hop++) {
    while (g.type === 'parenthesized_expression' || g.type === 'tuple') {
      const c = g.namedChildren;
      if (c.length < 1) break;
      g = c[0];
    }
    if (g.type === 'call_expression' && /^dim3$/.test(g.childForFieldName('function')?.text ?? '')) {
      g = g.childForFieldName('arguments')?.namedChildren[0] ?? g;
      continue;
    }
    if (g.type !== 'identifier') break;
    const d = definitionOf(g, grid);
    if (!d) break;
    g = d;
  }
  return g;
}

export default defineCheck({
  id: 'kernel/cooperative-grid-unbounded',
  pass: 3,
  severity: 'high',
  kind: 'correctness',
  confidence: 'medium',
  languages: ['cuda', 'python'],
  citation: '003 §3.3 Cooperative Groups (Constraints: grid ≤ maxActiveBlocksPerMultiprocessor × SM_count; exceeding it gives CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE)',
  summary: 'Cooperative launch sized from the problem (ceil(n/block)) instead of the occupancy bound.',
  why: 'A cooperative launch fails with CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE once the grid exceeds maxActiveBlocksPerMultiprocessor × SM count (003 §3.3), e.g. 492 blocks of 256 threads on an 82-SM RTX 3090 at 6 blocks per SM.',
  messages: {
    unbounded:
      'Cooperative launch grid is not bounded by maxActiveBlocksPerMultiprocessor × SM count; large inputs will fail with COOPERATIVE_LAUNCH_TOO_LARGE (grid `{{grid}}`{{figure}}): `{{code}}`.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const isPy = ctx.source.language === 'python';
        const sites: { node: SyntaxNode; grid: SyntaxNode | null; block: [number, number, number] | null }[] = [];
        if (!isPy) {
          const m = ctx.get(cudaModel);
          for (const l of m.launches) {
            const coop = l.kind === 'cudaLaunchCooperativeKernel' || (/Ex$/.test(l.kind) && COOP_ATTR.test(enclosing(l.node)?.text ?? ''));
            if (!coop) continue;
            // Driver API: (f, gridX, gridY, gridZ, blockX, blockY, blockZ, ...), one extent per argument.
            const a = l.node.childForFieldName('arguments')?.namedChildren ?? [];
            const drv = /^cuLaunch/.test(l.node.text) ? [a[4], a[5], a[6]].map((x) => m.constValue(x)) : null;
            const block = drv ? (drv.every((x) => x !== null) ? (drv as [number, number, number]) : null) : m.dim3(l.block);
            sites.push({ node: l.node, grid: drv ? a[1] ?? null : l.grid, block });
          }
        } else {
          const text = ctx.source.text;
          for (const l of ctx.get(launchConfigs)) {
            const viaCall = /^[\w.]*\(/.test(l.node.text) && !/LaunchKernel\b/.test(calleePath(l.node.childForFieldName('function')) ?? '');
            if (PY_COOP_KW.test(l.node.text) || (viaCall && CUPY_COOP.test(text))) sites.push({ node: l.node, grid: l.gridNode, block: l.block });
          }
          // cuda-python: cuLaunchCooperativeKernel(f, gx, gy, gz, bx, by, bz, ...) and
          // cudaLaunchCooperativeKernel(func, gridDim, blockDim, args, smem, stream).
          for (const c of ctx.source.root.descendantsOfType('call')) {
            const p = calleePath(c.childForFieldName('function')) ?? '';
            const a = pyArgs(c).positional;
            if (/(^|\.)cuLaunchCooperativeKernel$/.test(p)) {
              const b = [a[4], a[5], a[6]].map((x) => (x && /^\d+$/.test(x.text) ? Number(x.text) : null));
              sites.push({ node: c, grid: a[1] ?? null, block: b.every((x) => x !== null) ? (b as [number, number, number]) : null });
            }
            else if (/(^|\.)cudaLaunchCooperativeKernel$/.test(p)) sites.push({ node: c, grid: a[1] ?? null, block: null });
          }
        }
        const gpu = smallestSmTarget(ctx.config.targets);
        for (const s of sites) {
          if (!s.grid) continue;
          const src = gridSource(s.grid);
          if (!isCeilDivGrid(src)) continue;
          let figure = '';
          if (gpu && s.block) {
            const b = prod(s.block);
            const o = occupancy(gpu, { threadsPerBlock: b });
            const cap = o.blocks * gpu.sms;
            figure = `: with ${b}-thread blocks, ${gpu.name} holds at most ${cap} co-resident blocks (${gpu.sms} SMs × ${o.blocks}), so any input above ${(cap * b).toLocaleString('en-US')} elements fails`;
          }
          ctx.report({
            node: s.node,
            messageId: 'unbounded',
            data: { grid: src.text.length > 40 ? `${src.text.slice(0, 37)}...` : src.text, figure, code: quote(s.node) },
            fix: { description: 'Size the grid as min(ceil(n / block), maxActiveBlocksPerMultiprocessor × multiProcessorCount) from cudaOccupancyMaxActiveBlocksPerMultiprocessor, and walk the input with a grid-stride loop.' },
          });
        }
      },
    };
  },
});

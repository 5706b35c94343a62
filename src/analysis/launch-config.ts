import type { ResolvedConfig } from '../config/schema.js';
import type { Analysis } from '../engine/check.js';
import type { SyntaxNode } from '../core/types.js';
import type { Source } from '../sources/types.js';
import { cudaModel, type CudaFunction, type CudaModel } from './cuda.js';
import { pythonLaunches } from './pylaunch.js';
import { memoized, pythonModel } from './python.js';
import { escapeRe as esc } from '../core/regex.js';

/**
 * Launch configurations of one source in one shape for CUDA host code, device-side launches in
 * kernel strings, and Python host launches (`runtime.launch`, RawKernel calls, cuLaunchKernel):
 * the constant grid and block when they fold, and the launched `__global__` function with the
 * model that holds it, so pass-3 rules can compute occupancy and wave figures (catalog §5.3).
 */
export interface LaunchConfig {
  node: SyntaxNode;
  /** Kernel name as the code spells it (`bbox_kernel`, `self._k`). */
  label: string;
  gridNode: SyntaxNode | null;
  blockNode: SyntaxNode | null;
  /** The dynamic shared-memory argument, when the launch passes one. */
  smemNode: SyntaxNode | null;
  grid: [number, number, number] | null;
  block: [number, number, number] | null;
  /** The launched kernel's definition, when its source is in this file (or the Python file's kernel strings). */
  kernel: { fn: CudaFunction; model: CudaModel } | null;
  testOrBench: boolean;
}

export const launchConfigs: Analysis<LaunchConfig[]> = {
  name: 'launch-configs',
  compute: (source, config) => memoized(memo, source, config, build),
};
const memo = new WeakMap<Source, { config: ResolvedConfig; value: LaunchConfig[] }>();

export const prod = (d: [number, number, number]) => d[0] * d[1] * d[2];

function build(source: Source, config: ResolvedConfig): LaunchConfig[] {
  if (source.language === 'python') {
    const pm = pythonModel.compute(source, config);
    const pl = pythonLaunches.compute(source, config);
    return pl.launches.map((l) => {
      let kernel: LaunchConfig['kernel'] = null;
      if (l.cudaName) {
        for (const s of pl.kernelSources(l.cudaName)) {
          const m = cudaModel.compute(s, config);
          const fn = m.kernels.get(l.cudaName);
          if (fn) kernel = { fn, model: m };
        }
      }
      return {
        node: l.node,
        label: l.cudaName ?? l.kernel?.text ?? '?',
        gridNode: l.grid,
        blockNode: l.block,
        smemNode: l.smem ?? null,
        grid: pl.dims(l.grid),
        block: pl.dims(l.block),
        kernel,
        testOrBench: pm.testOrBench,
      };
    });
  }
  const m = cudaModel.compute(source, config);
  return m.launches.map((l) => {
    const fn = l.kernel ? m.kernels.get(l.kernel) : undefined;
    return {
      node: l.node,
      label: l.kernel ?? '?',
      gridNode: l.grid,
      blockNode: l.block,
      smemNode: l.smem,
      grid: m.dim3(l.grid),
      block: m.dim3(l.block),
      kernel: fn ? { fn, model: m } : null,
      testOrBench: m.testOrBench,
    };
  });
}

const STRIDE = /\bblockDim\.x\s*\*\s*gridDim\.x\b|\bgridDim\.x\s*\*\s*blockDim\.x\b|\bthis_grid\(\)\.size\(\)|\bgrid\.size\(\)/;
const LOOP_TYPES = ['for_statement', 'while_statement', 'do_statement'];

/** The kernel strides its loop by the whole grid, so any grid size covers all elements (003 §3.2). */
export function hasGridStrideLoop(fn: CudaFunction): boolean {
  const body = fn.body;
  if (!body || !STRIDE.test(body.text)) return false;
  if (LOOP_TYPES.some((t) => body.descendantsOfType(t).some((l) => STRIDE.test(l.text)))) return true;
  // `const int stride = gridDim.x * blockDim.x; for (...; i += stride)` (catalog: "or a variable assigned from that product").
  const vars = body.descendantsOfType('init_declarator').filter((d) => STRIDE.test(d.childForFieldName('value')?.text ?? '')).map((d) => d.childForFieldName('declarator')?.text ?? '');
  return vars.some((v) => v && LOOP_TYPES.some((t) => body.descendantsOfType(t).some((l) => new RegExp(`[+]=\\s*${esc(v)}\\b|=\\s*\\w+\\s*\\+\\s*${esc(v)}\\b`).test(l.text))));
}

/** `(n + bs - 1) / bs`, `(n + 255) / 256`, `(n + 255) // 256`, `ceil_div(n, bs)`, `cdiv(n, bs)`, `-(-n // bs)`: one block per `bs` elements. */
export function isCeilDivGrid(n: SyntaxNode | null): boolean {
  if (!n) return false;
  const t = n.text.replace(/\s+/g, '');
  // A grid already capped (`std::min(ceil, sms * per_sm)`) is the recommended shape, not an uncapped one.
  if (/\bmin\(/.test(t)) return false;
  if (/^(\(|dim3\(|\()*\(?[\w.\[\]()]+\+([\w.]+)-1\)\/\/?\2\b/.test(t)) return true;
  const m = /\(?([\w.\[\]]+)\+(\d+)\)\/\/?(\d+)/.exec(t);
  if (m && Number(m[2]) + 1 === Number(m[3])) return true;
  return /\b(ceil_div|cdiv|div_up|divup|DIV_UP|CEIL_DIV|ceildiv|iDivUp)\(/.test(t) || /-\(-[\w.]+\/\/[\w.]+\)/.test(t);
}

const LIGHT_LOOPS = ['for_statement', 'while_statement', 'do_statement', 'for_range_loop'];
const LIGHT_STATEMENTS = ['expression_statement', 'declaration', 'if_statement', 'return_statement', 'switch_statement'];

/**
 * A kernel without the live state that reaches a register cap (128 registers at 512 threads, 64 at 1,024): no
 * per-thread array, no nested or unrolled loop, a modest body (block reductions, element-wise loops, a grid-stride
 * gather). It fits any block's register budget already (kernel/missing-launch-bounds: a bound changes nothing;
 * kernel/hardcoded-block-size: with full theoretical occupancy the occupancy API has nothing left to choose).
 */
export function lightKernel(body: SyntaxNode): boolean {
  if (body.descendantsOfType('declaration').some((d) => !/__shared__/.test(d.text) && d.descendantsOfType('array_declarator').length > 0)) return false;
  if (/#\s*pragma\s+unroll(?!\s*1\b)/.test(body.text)) return false;
  const loops = LIGHT_LOOPS.flatMap((t) => body.descendantsOfType(t));
  if (loops.some((l) => LIGHT_LOOPS.some((t) => l.descendantsOfType(t).some((x) => x.id !== l.id)))) return false;
  return LIGHT_STATEMENTS.reduce((a, t) => a + body.descendantsOfType(t).length, 0) <= 30;
}

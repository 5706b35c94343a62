import { describe, expect, it } from 'vitest';
import { cudaModel } from '../../src/analysis/cuda.js';
import { hasGridStrideLoop, isCeilDivGrid, launchConfigs } from '../../src/analysis/launch-config.js';
import { buildSources } from '../../src/sources/build.js';
import { config } from '../helpers.js';

function source(text: string, path: string, language: 'cuda' | 'python') {
  const [s] = buildSources(path, language, { text, firstLine: 1, label: 'file', wholeFile: true }, 5000);
  return s!;
}

describe('launch configurations', () => {
  const cfg = config();
  const cu = source(
    [
      'constexpr int kThreads = 512;',
      '__global__ void stride(float* a, int n) { for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) a[i] = 0; }',
      '__global__ void once(float* a, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) a[i] = 0; }',
      'void run(float* a, int n) {',
      '  dim3 blk(kThreads);',
      '  stride<<<(n + 511) / 512, blk>>>(a, n);',
      '  once<<<130, 1024>>>(a, n);',
      '}',
    ].join('\n'),
    'src/a.cu',
    'cuda',
  );
  it('folds dim3 declarations that C++ parses as function declarations', () => {
    const ls = launchConfigs.compute(cu, cfg);
    expect(ls.map((l) => l.block)).toEqual([[512, 1, 1], [1024, 1, 1]]);
    expect(ls[1]!.grid).toEqual([130, 1, 1]);
    expect(ls.map((l) => l.kernel?.fn.name)).toEqual(['stride', 'once']);
  });
  it('resolves a dim3 name to the nearest declaration before the launch in the same function', () => {
    const s = source(
      [
        '__global__ void k(float* a, int n) { }',
        'void f(float* a, int n) { dim3 const block(128); k<<<n, block>>>(a, n); }',
        'void g(float* a, int n) { dim3 block(256); k<<<n, block>>>(a, n); dim3 other(n); k<<<n, other>>>(a, n); }',
        'void h(float* a, int n) { dim3 block(64); k<<<n, block>>>(a, n); block = dim3(n); }',
        'void u(float* a, int n) { k<<<n, block>>>(a, n); }',
        'dim3 g_block(32, 4);',
        'void v(float* a, int n) { k<<<n, g_block>>>(a, n); }',
      ].join('\n'),
      'src/b.cu',
      'cuda',
    );
    // `u` declares no block: two other functions do, so the name is ambiguous there; the one global is not.
    expect(launchConfigs.compute(s, cfg).map((l) => l.block)).toEqual([[128, 1, 1], [256, 1, 1], null, [64, 1, 1], null, [32, 4, 1]]);
    // The declaration as written, for rules that read the names in it.
    const m = cudaModel.compute(s, cfg);
    expect(launchConfigs.compute(s, cfg).map((l) => (l.blockNode ? m.dim3Init(l.blockNode)?.text ?? null : null))).toEqual(['(128)', '(256)', '(n)', '(64)', null, '(32, 4)']);
  });
  it('grid-stride loops and ceil-div grids', () => {
    const m = cudaModel.compute(cu, cfg);
    expect(hasGridStrideLoop(m.kernels.get('stride')!)).toBe(true);
    expect(hasGridStrideLoop(m.kernels.get('once')!)).toBe(false);
    const ls = launchConfigs.compute(cu, cfg);
    expect(isCeilDivGrid(ls[0]!.gridNode)).toBe(true);
    expect(isCeilDivGrid(ls[1]!.gridNode)).toBe(false);
  });
  it('python launches resolve the kernel string', () => {
    const py = source(
      [
        'import cupy as cp',
        'SRC = r"""',
        'extern "C" __global__ __launch_bounds__(128) void relax(float* d, int n) { }',
        '"""',
        'relax = cp.RawModule(code=SRC).get_function("relax")',
        'relax(((n + 127) // 128,), (128,), (d, n))',
      ].join('\n'),
      'src/a.py',
      'python',
    );
    const [l] = launchConfigs.compute(py, cfg);
    expect(l!.block).toEqual([128, 1, 1]);
    expect(l!.kernel?.fn.name).toBe('relax');
    expect(isCeilDivGrid(l!.gridNode!.namedChildren[0]!)).toBe(true);
  });
});

describe('declarator text spliced into a pattern (issue 16)', () => {
  // C comments between parameters of a declarator used to become `/*x*/` quantifiers: 10 of them took
  // seconds, 14 hours. Escaped, the declarator matches only itself, at once.
  it('a declarator full of comments cannot make the grid-stride search backtrack', () => {
    const decl = `s(int ${'/*x*/'.repeat(16)}a)`;
    const text = `__global__ void k(float* p, int n) {\n  int ${decl} = gridDim.x * blockDim.x;\n  for (int i = 0; i < n; i += 1) { p[i] = 0; // += sint ${'/'.repeat(50)}\n  }\n}\n`;
    const s = source(text, 'src/k.cu', 'cuda');
    const fn = [...cudaModel.compute(s, config()).kernels.values()][0]!;
    expect(hasGridStrideLoop(fn)).toBe(false);
  });
  it('a function-pointer declarator is a name, not an invalid pattern that throws', () => {
    const text = `__global__ void k(float* p, int n) {\n  int (*s)(int) = gridDim.x * blockDim.x;\n  for (int i = 0; i < n; i += 1) p[i] = 0;\n}\n`;
    const fn = [...cudaModel.compute(source(text, 'src/k.cu', 'cuda'), config()).kernels.values()][0]!;
    expect(() => hasGridStrideLoop(fn)).not.toThrow();
  });
});

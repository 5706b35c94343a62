import { describe, expect, it } from 'vitest';
import { cudaModel } from '../../src/analysis/cuda.js';
import { laneEvaluator, threadIndex } from '../../src/analysis/lanes.js';
import { pythonLaunches } from '../../src/analysis/pylaunch.js';
import { smemLaunches } from '../../src/analysis/smem-launch.js';
import { bankConflictDegree, kernelStaticBytes, smemFacts, typeBytes } from '../../src/analysis/smem.js';
import type { SyntaxNode } from '../../src/core/types.js';
import { buildSources } from '../../src/sources/build.js';
import type { Source } from '../../src/sources/types.js';
import { config } from '../helpers.js';

const cfg = config();
const cu = (text: string): Source => buildSources('src/k.cu', 'cuda', { text, firstLine: 1, label: 'file', wholeFile: true }, 5000)[0];
const py = (text: string): Source[] => buildSources('pkg/k.py', 'python', { text, firstLine: 1, label: 'file', wholeFile: true }, 5000);

/** Byte address of lane l for `T s[R][W]` walked as s[a·l][c] (column) or s[r][a·l] (row). */
const column = (w: number, e: number, rowStep = 1) => Array.from({ length: 32 }, (_, l) => l * rowStep * w * e);

describe('bank conflicts (32 banks × 4 B, 003 §4.2)', () => {
  it('counts the classic cases, with 8-byte accesses served per half-warp (catalog §6 I-11)', () => {
    expect(bankConflictDegree(column(32, 4), 4)).toBe(32);
    expect(bankConflictDegree(column(33, 4), 4)).toBe(1);
    expect(bankConflictDegree(column(16, 4), 4)).toBe(16);
    expect(bankConflictDegree(column(32, 8), 8)).toBe(16);
    expect(bankConflictDegree(column(33, 8), 8)).toBe(1);
    // Stride-1 double: 16 lanes × 2 words cover the 32 banks once.
    expect(bankConflictDegree(Array.from({ length: 32 }, (_, l) => l * 8), 8)).toBe(1);
    // Broadcast: one word for every lane.
    expect(bankConflictDegree(Array.from({ length: 32 }, () => 128), 4)).toBe(1);
    // float4 rows of 8 elements (32 words): quarter-warps of 8 lanes hit banks 0–3.
    expect(bankConflictDegree(column(8, 16), 16)).toBe(8);
    expect(bankConflictDegree(column(9, 16), 16)).toBe(1);
  });

  it('sizes types as written', () => {
    expect(typeBytes('unsigned int')).toBe(4);
    expect(typeBytes('const double')).toBe(8);
    expect(typeBytes('float4')).toBe(16);
    expect(typeBytes('std::uint8_t')).toBe(1);
    expect(typeBytes('Node')).toBeNull();
  });
});

describe('shared-memory facts', () => {
  const SRC = `
#define TILE 32
constexpr int kRows = 64;
__shared__ float g_lut[256];
template <typename T, int BM = 64>
__global__ void gemm(const T* a, T* c) {
  __shared__ T As[BM][TILE + 1];
  extern __shared__ unsigned char dyn[];
  c[threadIdx.x] = As[threadIdx.y][threadIdx.x] + g_lut[threadIdx.x];
}
__device__ float helper(int i) { __shared__ float scratch[kRows][TILE]; return scratch[i % kRows][i % TILE]; }
__global__ void uses_helper(float* out) { out[threadIdx.x] = helper(threadIdx.x); }
void run(float* a, float* c, double* da, double* dc, cudaStream_t s) {
  gemm<float, 128><<<1, dim3(32, 8), 0, s>>>(a, c);
  gemm<double><<<1, dim3(32, 8), 96 * 1024, s>>>(da, dc);
  auto kfn = gemm<double>;
  cudaFuncSetAttribute(kfn, cudaFuncAttributeMaxDynamicSharedMemorySize, 96 * 1024);
  cudaLaunchConfig_t cfg = {};
  cfg.dynamicSmemBytes = 80 * 1024;
  cudaLaunchKernelEx(&cfg, uses_helper, c);
}
`;
  const s = cu(SRC);
  const m = cudaModel.compute(s, cfg);
  const f = smemFacts.compute(s, cfg);

  it('finds every __shared__ declaration, static and dynamic', () => {
    expect(f.decls.map((d) => [d.name, d.type, d.dynamic, d.fn?.name ?? null])).toEqual([
      ['g_lut', 'float', false, null],
      ['As', 'T', false, 'gemm'],
      ['dyn', 'unsigned char', true, 'gemm'],
      ['scratch', 'float', false, 'helper'],
    ]);
  });

  it('evaluates each template instantiation spelled in the file, defaults included', () => {
    const gemm = m.kernels.get('gemm')!;
    expect(f.instantiations(gemm).map((i) => [i.label, Object.fromEntries(i.bindings)])).toEqual([
      ['gemm<float, 128>', { T: 4, BM: 128 }],
      ['gemm<double, 64>', { T: 8, BM: 64 }],
    ]);
    // As: 128×33 floats + g_lut 1 KB; 64×33 doubles + 1 KB.
    expect(f.staticUsage(gemm).map((u) => u.bytes)).toEqual([128 * 33 * 4 + 1024, 64 * 33 * 8 + 1024]);
    const launch = m.launches[1];
    expect(kernelStaticBytes(f, gemm, launch.node.childForFieldName('function'))?.label).toBe('gemm<double, 64>');
  });

  it('counts shared arrays of called device functions', () => {
    expect(f.staticUsage(m.kernels.get('uses_helper')!)[0].bytes).toBe(64 * 32 * 4);
  });

  it('resolves opt-ins through aliases, per instantiation, and cudaLaunchKernelEx configurations', () => {
    expect(f.optIns.map((o) => [o.kernel, o.args, o.value])).toEqual([['gemm', 'double', 96 * 1024]]);
    expect(f.optInsFor('gemm', 'double')).toHaveLength(1);
    expect(f.optInsFor('gemm', 'float,128')).toHaveLength(0);
    const ex = m.launches.find((l) => l.kind === 'cudaLaunchKernelEx')!;
    expect(ex.kernel).toBe('uses_helper');
    expect(f.dynamicBytes(ex)).toBe(80 * 1024);
    expect(smemLaunches.compute(s, cfg).map((l) => [l.label, l.dynamic, l.optIns.length])).toEqual([
      ['gemm', 0, 0],
      ['gemm<double>', 96 * 1024, 1],
      ['uses_helper', 80 * 1024, 0],
    ]);
  });
});

describe('lane values (WARP_UNIFORM made quantitative)', () => {
  const SRC = `
__global__ void k(const int* idx, float* out, int n, int stride) {
  const int tid = threadIdx.x;
  const int lane = tid % 32;
  const int warp = tid / 32;
  const int bin = idx[tid];
  int c = 0;
  if (bin > 0) ++c;
  for (int j = 0; j < n; j += 8) {
    out[lane] = out[warp] + out[j] + out[bin] + out[tid * stride] + out[lane ^ 5] + out[c];
  }
}
`;
  const s = cu(SRC);
  const m = cudaModel.compute(s, cfg);
  const fn = m.kernels.get('k')!;
  const ev = laneEvaluator(m, fn, { bx: 256, by: null });
  const subs = (fn.body!.descendantsOfType('subscript_expression') as SyntaxNode[]).filter((x) => x.text.startsWith('out['));
  const at = (text: string) => ev.eval(subs.find((x) => x.text === text)!.childForFieldName('indices')!.namedChildren[0]);

  it('follows threadIdx through locals, % and / by the warp size, and xor', () => {
    expect(at('out[lane]')).toEqual({ vals: Array.from({ length: 32 }, (_, l) => l), mod: 0 });
    expect(at('out[warp]')!.vals.every((v) => v === 0)).toBe(true);
    expect(at('out[lane ^ 5]')!.vals.slice(0, 4)).toEqual([5, 4, 7, 6]);
  });

  it('treats uniform loop counters as uniform and data-dependent values as unknown', () => {
    expect(new Set(at('out[j]')!.vals).size).toBe(1);
    expect(at('out[bin]')).toBeNull();
    expect(at('out[tid * stride]')).toBeNull();
    // Incremented under a lane-dependent branch: thread-dependent, not "uniform plus a step".
    expect(at('out[c]')).toBeNull();
  });

  it('lays out 16-wide blocks two rows per warp', () => {
    expect(threadIndex({ bx: 16, by: 16 }, 'y')!.vals.slice(14, 18)).toEqual([0, 0, 1, 1]);
    expect(threadIndex({ bx: 32, by: 8 }, 'y')!.vals.every((v) => v === 0)).toBe(true);
  });
});

describe('Python launch sites', () => {
  const PY = `
import cupy as cp
from cuda.bindings import driver

_SRC = r"""
extern "C" __global__ void sort_tiles(const int* keys, int* out) {
    __shared__ int staging[1024];
    extern __shared__ int scratch[];
    out[threadIdx.x] = staging[threadIdx.x] + scratch[threadIdx.x];
}
"""
SMEM = 24 * 1024 + 2 * np.dtype(np.float64).itemsize
_sort = cp.RawKernel(_SRC, "sort_tiles")
_mod = cp.RawModule(code=_SRC)


def enable(kernel, nbytes):
    kernel.max_dynamic_shared_size_bytes = nbytes


enable(_sort, 64 * 1024)


def run(d_keys, d_out, n, fn, stream, params):
    _sort((n // 256,), (32, 8), (d_keys, d_out), shared_mem=SMEM)
    _mod.get_function("sort_tiles")((1,), (256,), (d_keys, d_out))
    driver.cuLaunchKernel(fn, 1, 1, 1, 256, 1, 1, 4096, stream, params, 0)
`;
  const [pySrc, kernelSrc] = py(PY);
  const pl = pythonLaunches.compute(pySrc, cfg);

  it('finds kernel calls, get_function calls and driver launches with their shared memory', () => {
    expect(pl.launches.map((l) => [l.via, l.cudaName, pl.smemBytes(l), pl.dims(l.block)])).toEqual([
      ['kernel-call', 'sort_tiles', 24 * 1024 + 16, [32, 8, 1]],
      ['kernel-call', 'sort_tiles', 0, [256, 1, 1]],
      ['cuLaunchKernel', null, 4096, null],
    ]);
  });

  it('turns an opt-in helper into one opt-in per call, for the kernel passed', () => {
    expect(pl.optIns.map((o) => [o.key, o.cudaName, o.value])).toEqual([['_sort', 'sort_tiles', 64 * 1024]]);
    expect(pl.optInsFor(pl.launches[0])).toHaveLength(1);
  });

  it('reads the static shared memory of the launched kernel from its kernel string', () => {
    expect(pySrc.kernels).toEqual([kernelSrc]);
    expect(smemLaunches.compute(pySrc, cfg)[0].static).toBe(4096);
  });
});

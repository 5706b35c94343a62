import { describe, expect, it } from 'vitest';
import { cudaModel, type CudaModel } from '../../src/analysis/cuda.js';
import { buildSources } from '../../src/sources/build.js';
import { config } from '../helpers.js';

function model(text: string, path = 'src/k.cu'): CudaModel {
  const [s] = buildSources(path, 'cuda', { text, firstLine: 1, label: 'file', wholeFile: true }, 5000);
  return cudaModel.compute(s, config());
}

const SRC = `
#include <cuda_runtime.h>
#define BLOCK 256
#define GRID_X (BLOCK * 4 + 1)
#define RAFT_KERNEL __global__ static
constexpr int kTile = 32;
static const int kWarps = BLOCK / 32;

template <int B>
__global__ void __launch_bounds__(BLOCK, 2) scale(float* x, int n) { x[threadIdx.x] *= 2.f; }
RAFT_KERNEL void raft_k(int* p) { p[0] = 1; }
__device__ float sq(float v) { return v * v; }
__host__ __device__ float both(float v) { return v; }

void run(float* d_x, int n, cudaStream_t s) {
  dim3 block(BLOCK, 1);
  scale<4><<<GRID_X, block, kTile * sizeof(float), s>>>(d_x, n);
  for (int i = 0; i < 8; ++i) {
    cudaMalloc(&d_x, n * sizeof(float));
    raft_k<<<dim3(133), dim3(kWarps * 32)>>>(nullptr);
  }
#ifdef DEBUG
  cudaDeviceSynchronize();
#endif
  if (verbose) { cudaDeviceSynchronize(); }
  cudaLaunchKernel((void*)scale<4>, dim3(64), dim3(128), args, 0, s);
}
`;

describe('CUDA model', () => {
  const m = model(SRC);
  it('finds kernels, including macro-qualified ones, and device/host functions', () => {
    expect([...m.kernels.keys()].sort()).toEqual(['raft_k', 'scale']);
    const byName = Object.fromEntries(m.functions.map((f) => [f.name, f]));
    expect(byName.sq.isDevice && !byName.sq.isHost && !byName.sq.isKernel).toBe(true);
    expect(byName.both.isHost && byName.both.isDevice).toBe(true);
    expect(byName.run.isHost).toBe(true);
    expect(m.constValue(byName.scale.launchBounds!.maxThreads)).toBe(256);
    expect(m.constValue(byName.scale.launchBounds!.minBlocks)).toBe(2);
  });
  it('records launches with constant grid, block and shared memory', () => {
    expect(m.launches.map((l) => [l.kind, l.kernel])).toEqual([
      ['chevron', 'scale'],
      ['chevron', 'raft_k'],
      ['cudaLaunchKernel', 'scale'],
    ]);
    const [a, b, c] = m.launches;
    expect(m.dim3(a.grid)).toEqual([1025, 1, 1]);
    expect(m.dim3(a.block)).toEqual([256, 1, 1]);
    expect(m.constValue(a.smem)).toBe(128);
    expect(a.stream?.text).toBe('s');
    expect(m.dim3(b.grid)).toEqual([133, 1, 1]);
    expect(m.dim3(b.block)).toEqual([256, 1, 1]);
    expect(m.dim3(c.grid)).toEqual([64, 1, 1]);
    expect(m.dim3(c.block)).toEqual([128, 1, 1]);
  });
  it('loops, hot paths and debug gating on the host', () => {
    const malloc = m.calls.find((c) => c.name === 'cudaMalloc')!;
    expect(m.loopOf(malloc.node)?.type).toBe('for_statement');
    expect(m.hotPath(malloc.node)).toBe(true);
    const syncs = m.calls.filter((c) => c.name === 'cudaDeviceSynchronize');
    expect(syncs.map((s) => m.debugGated(s.node))).toEqual([true, true]);
    expect(m.debugGated(malloc.node)).toBe(false);
  });
  it('knows device code from host code', () => {
    const tid = m.source.root.descendantsOfType('field_expression').find((f) => f.text === 'threadIdx.x')!;
    expect(m.inKernel(tid)).toBe(true);
    const malloc = m.calls.find((c) => c.name === 'cudaMalloc')!;
    expect(m.inKernel(malloc.node)).toBe(false);
  });
});

describe('CUDA model: launch helpers left at their default stream', () => {
  const m = model(`
__global__ void k(float* x, int n);
struct Cfg { unsigned g, b; size_t smem; cudaStream_t s; template <class K, class... A> void operator()(K, A...); };
template <class F> void for_n(size_t n, F f);
template <class F> void for_n(size_t n, cudaStream_t s, F f);
template <class F> auto map_it(int* p, F f);
void put(float* d, const float* h, size_t n, cudaStream_t s = nullptr);
void run(float* x, int* p, const float* h, size_t n, cudaStream_t s, Handle const& handle) {
  for_n(n, s, [=] __device__(size_t i) { x[i] = 0; });
  for_n(n, [=] __device__(size_t i) { x[i] = 1; });
  auto it = map_it(p, [=] __device__(int v) { return v + 1; });
  for_n(handle, n, [=] __device__(size_t i) { x[i] = 2; });
  Cfg{1, 32, 0}(k, x, 4);
  Cfg{1, 32, 0, s}(k, x, 4);
  put(x, h, n, s);
  put(x, h, n);
}`);
  const at = (line: number) => m.helperOps.filter((h) => h.node.startPosition.row + 1 === line).map((h) => [h.stream, !!h.omitted]);
  it('reads a launch-configuration object, a device lambda, and a helper called elsewhere with a stream', () => {
    expect(at(9)).toEqual([['s', false]]);
    expect(at(10)).toEqual([[null, true]]);
    // A functor built from a device lambda launches nothing; a handle argument carries the stream.
    expect(at(11)).toEqual([]);
    expect(at(12)).toEqual([[null, false]]);
    expect(at(13)).toEqual([[null, true]]);
    expect(at(14)).toEqual([['s', false]]);
    expect(at(15)).toEqual([['s', false]]);
    expect(at(16)).toEqual([[null, true]]);
  });
});

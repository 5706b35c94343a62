import Parser from 'tree-sitter';
import Cpp from 'tree-sitter-cpp';
import Cuda from 'tree-sitter-cuda';
import { describe, expect, it } from 'vitest';
import { codeView, maskCuda } from '../../src/sources/cuda-mask.js';

const parsers = {
  cuda: new Parser(),
  cpp: new Parser(),
};
parsers.cuda.setLanguage(Cuda as Parser.Language);
parsers.cpp.setLanguage(Cpp as Parser.Language);

function lineBreaks(s: string): number[] {
  return [...s.matchAll(/[\r\n]/g)].map((m) => m.index);
}

function problems(node: Parser.SyntaxNode, out: string[] = []): string[] {
  if (node.type === 'ERROR' || node.isMissing) out.push(`${node.type}@${node.startPosition.row}:${node.startPosition.column}`);
  for (const c of node.children) problems(c, out);
  return out;
}

/** Masks for `grammar`, checks length, line breaks and a clean parse with that grammar. */
function mask(src: string, grammar: 'cuda' | 'cpp') {
  const result = maskCuda(src, grammar);
  expect(result.text.length).toBe(src.length);
  expect(lineBreaks(result.text)).toEqual(lineBreaks(src));
  const tree = parsers[grammar].parse(result.text);
  expect(problems(tree.rootNode), `${grammar}:\n${result.text}`).toEqual([]);
  expect(tree.rootNode.hasError).toBe(false);
  return { ...result, tree };
}

function both(src: string) {
  return { cuda: mask(src, 'cuda'), cpp: mask(src, 'cpp') };
}

const launchTexts = (src: string, launches: Array<{ start: number; end: number }>) =>
  launches.map((l) => src.slice(l.start, l.end));

describe('maskCuda', () => {
  it('the raw snippets really fail in tree-sitter-cuda (what the masking is for)', () => {
    for (const src of [
      'struct __align__(16) F4 { float x, y, z, w; };',
      '__global__ void __cluster_dims__(2, 1, 1) k(float* a) { }',
      '__global__ void __maxnreg__(64) k(float* a) { }',
      'void f() { thrust::for_each(thrust::device, b, e, [=] __device__ (int i) { x[i] = 0; }); }',
      'void f() { auto l = [&] __host__ __device__ (int i) { return i; }; }',
    ]) {
      expect(parsers.cuda.parse(src).rootNode.hasError, src).toBe(true);
    }
    for (const src of [
      '__global__ void k(const __grid_constant__ Params p) { }',
      '__global__ void __launch_bounds__(256, 2) k(float* __restrict__ a) { __shared__ float s[256]; }',
      'void h() { k<<<g, b, smem, stream>>>(x); }',
    ]) {
      expect(parsers.cuda.parse(src).rootNode.hasError, src).toBe(false);
      expect(maskCuda(src, 'cuda').text).toBe(src);
    }
  });

  it('rewrites __align__ on structs and shared arrays to alignas', () => {
    const src = `struct __align__(16) Particle {
  float4 pos;
  float4 vel;
};

typedef struct __align__(8) {
  float x, y;
} Pair;

__global__ void integrate(Particle* __restrict__ p, int n, float dt) {
  __shared__ __align__(16) float tile[256];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    tile[threadIdx.x] = p[i].pos.x;
    p[i].pos.x += p[i].vel.x * dt;
  }
}
`;
    const { cuda, cpp } = both(src);
    expect(cuda.text).toContain('struct   alignas(16) Particle {');
    expect(cuda.text).toContain('typedef struct   alignas(8) {');
    expect(cuda.text).toContain('__shared__   alignas(16) float tile[256];');
    expect(cpp.text).toContain('[[shared]]   alignas(16) float tile[256];');
    expect(cpp.text).toContain('[[global]] void integrate(');
    expect(cuda.launches).toEqual([]);
  });

  it('turns __cluster_dims__ and __maxnreg__ into standard attributes', () => {
    const src = `#include <cooperative_groups.h>
namespace cg = cooperative_groups;

__global__ void __cluster_dims__(2, 1, 1) cluster_reduce(const float* in, float* out) {
  extern __shared__ float smem[];
  cg::cluster_group cluster = cg::this_cluster();
  unsigned rank = cluster.block_rank();
  smem[threadIdx.x] = in[blockIdx.x * blockDim.x + threadIdx.x];
  cluster.sync();
  float* peer = cluster.map_shared_rank(smem, rank ^ 1);
  out[blockIdx.x] = smem[0] + peer[0];
}

__global__ void __maxnreg__(64) heavy(float* x) { x[threadIdx.x] *= 2.0f; }
`;
    const { cuda, cpp } = both(src);
    expect(cuda.text).toContain('__global__ void [[cluster_dims(2, 1, 1)]] cluster_reduce(');
    expect(cuda.text).toContain('__global__ void [[maxnreg(64)]] heavy(');
    expect(cpp.text).toContain('[[global]] void [[cluster_dims(2, 1, 1)]] cluster_reduce(');
    expect(cpp.text).toContain('extern [[shared]] float smem[];');
  });

  it('blanks __host__/__device__ on thrust and cub extended lambdas only', () => {
    const src = `#include <thrust/transform.h>
#include <cub/cub.cuh>

[[nodiscard]] __host__ __device__ inline float lerp(float a, float b, float t) { return a + t * (b - a); }

void saxpy(thrust::device_vector<float>& x, thrust::device_vector<float>& y, float a, cudaStream_t s) {
  thrust::transform(thrust::cuda::par.on(s), x.begin(), x.end(), y.begin(), y.begin(),
                    [=] __device__ (float xi, float yi) { return a * xi + yi; });
  auto square = [] __host__ __device__ (float v) { return v * v; };
  auto count = thrust::count_if(thrust::device, x.begin(), x.end(),
                                [a] __device__ (float v) -> bool { return v > a; });
  auto host_only = [&](int i) { return x[i]; };
}
`;
    const { cuda, cpp } = both(src);
    expect(cuda.text).toContain('[=]            (float xi, float yi)');
    expect(cuda.text).toContain('[]                     (float v) { return v * v; }');
    expect(cuda.text).toContain('[a]            (float v) -> bool');
    expect(cuda.text).toContain('[[nodiscard]] __host__ __device__ inline float lerp(');
    expect(cpp.text).toContain('[[nodiscard]] [[host]] [[device]] inline float lerp(');
    expect(cpp.text).toContain('[=]            (float xi, float yi)');
  });

  it('leaves __grid_constant__ to tree-sitter-cuda and makes it an attribute for tree-sitter-cpp', () => {
    const src = `struct Params { const float* in; float* out; int n; };

__global__ void __launch_bounds__(256, 2) apply(const __grid_constant__ Params p) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < p.n) p.out[i] = __ldg(p.in + i) * 2.0f;
}
`;
    const { cuda, cpp } = both(src);
    expect(cuda.text).toBe(src);
    expect(cpp.text).toContain('[[global]] void [[launch_bounds(256, 2)]] apply(const [[grid_constant]] Params p) {');
  });

  it('pairs each <<< with its own >>> next to nested-template >>> closers', () => {
    const src = `#include <vector>

template <typename T, int VEC>
__global__ void scale(const T* __restrict__ a, T* __restrict__ b, int n) {
  int i = (blockIdx.x * blockDim.x + threadIdx.x) * VEC;
  for (int v = 0; v < VEC && i + v < n; ++v) b[i + v] = a[i + v] * T(2);
}

template <typename T>
int blocks_for(int n) { return (n + 255) / 256; }

template <typename T>
void launch_all(const T* a, T* b, int n, size_t smem, cudaStream_t stream) {
  std::vector<std::vector<std::vector<int>>> buckets;
  int g = blocks_for<T>(n);
  scale<T, 4><<<dim3(g), dim3(256), smem, stream>>>(a, b, n);
  scale<T, 1><<<blocks_for<int>(n), 256>>>(a, b, n);
  std::vector<std::pair<int, std::vector<int>>> pairs;
  scale<T, 2><<<n<4096 ? 1 : g, 256, 0, stream>>>(a, b, n);
}
`;
    const { cuda, cpp } = both(src);
    const expected = [
      '<<<dim3(g), dim3(256), smem, stream>>>',
      '<<<blocks_for<int>(n), 256>>>',
      '<<<n<4096 ? 1 : g, 256, 0, stream>>>',
    ];
    expect(launchTexts(src, cuda.launches)).toEqual(expected);
    expect(launchTexts(src, cpp.launches)).toEqual(expected);
    expect(cpp.text).toContain('scale<T, 4>(  dim3(g), dim3(256), smem, stream  )(a, b, n);');
    expect(cpp.text).toContain('scale<T, 1>(  blocks_for<int>(n), 256  )(a, b, n);');
    expect(cpp.text).toContain('std::vector<std::vector<std::vector<int>>> buckets;');
    const calls = cpp.tree.rootNode
      .descendantsOfType('call_expression')
      .filter((c) => cpp.launches.some((l) => c.childForFieldName('function')!.endIndex === l.end));
    expect(calls.map((c) => c.childForFieldName('function')!.type)).toEqual(['call_expression', 'call_expression', 'call_expression']);
  });

  it('finds a launch whose grid is a template call and whose config contains a template >>>', () => {
    const src = `template <typename T> struct Cfg { static constexpr int kBlock = 128; };
template <typename T> int grid_for(int n) { return (n + Cfg<T>::kBlock - 1) / Cfg<T>::kBlock; }
__global__ void fill(int* out, int v) { out[blockIdx.x * blockDim.x + threadIdx.x] = v; }

void run(int* out, int n) {
  fill<<<grid_for<int>(n), Cfg<Cfg<int>>::kBlock>>>(out, 7);
  fill<<<grid_for<float>(n), Cfg<int>::kBlock, 0>>>(out, 8);
}
`;
    const { cuda, cpp } = both(src);
    expect(launchTexts(src, cuda.launches)).toEqual([
      '<<<grid_for<int>(n), Cfg<Cfg<int>>::kBlock>>>',
      '<<<grid_for<float>(n), Cfg<int>::kBlock, 0>>>',
    ]);
    expect(cpp.text).toContain('fill(  grid_for<int>(n), Cfg<Cfg<int>>::kBlock  )(out, 7);');
  });

  it('handles a launch split over lines, with a device lambda argument, and dynamic parallelism', () => {
    const src = `template <typename F>
__global__ void for_each_kernel(int n, F f) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) f(i);
}

__global__ void parent(float* data, int n) {
  if (threadIdx.x == 0) child<<<(n + 127) / 128, 128>>>(data, n);
}

void axpy(float a, const float* x, float* y, int n, cudaStream_t stream) {
  for_each_kernel<<<(n + 255) / 256,
                    256,
                    0, stream>>>(n, [=] __device__ (int i) { y[i] = a * x[i] + y[i]; });
  cudaStreamSynchronize(stream);
}
`;
    const { cuda, cpp } = both(src);
    expect(launchTexts(src, cuda.launches)).toEqual([
      '<<<(n + 127) / 128, 128>>>',
      '<<<(n + 255) / 256,\n                    256,\n                    0, stream>>>',
    ]);
    expect(cpp.launches).toEqual(cuda.launches);
    expect(cpp.text).toContain('for_each_kernel(  (n + 255) / 256,');
    expect(cpp.text).toContain('0, stream  )(n, [=]            (int i) {');
  });

  it('never touches comments, string literals or char literals', () => {
    const src = `// launch: k<<<grid, block>>>(args) with struct __align__(16)
/* [=] __device__ (int i) { } and __cluster_dims__(1,1,1) */
__global__ void k(int* out) { out[0] = '<'; }
void host(int* out) {
  printf("k<<<%d, %d>>>(out)  __align__(4)\\n", 1, 32);
  const char* src = R"cu(__global__ void __cluster_dims__(2,1,1) g() { })cu";
  const long big = 1'000'000;
  k<<<1, 32>>>(out);  // k<<<1, 32>>>
}
`;
    const { cuda, cpp } = both(src);
    expect(launchTexts(src, cuda.launches)).toEqual(['<<<1, 32>>>']);
    expect(cpp.launches).toEqual(cuda.launches);
    const [c0, c1, , , p0, r0] = cuda.text.split('\n');
    const orig = src.split('\n');
    expect([c0, c1, p0, r0]).toEqual([orig[0], orig[1], orig[4], orig[5]]);
    const lines = cpp.text.split('\n');
    expect(lines[0]).toBe(orig[0]);
    expect(lines[4]).toBe(orig[4]);
    expect(lines[5]).toBe(orig[5]);
    expect(lines[7]).toBe('  k(  1, 32  )(out);  // k<<<1, 32>>>');
  });

  it('blanks a multi-line __launch_bounds__ for tree-sitter-cpp', () => {
    const src = `constexpr int kMaxThreads = 256;
constexpr int kMinBlocks = 4;

__global__ void
__launch_bounds__(kMaxThreads,
                  kMinBlocks)
reduce(const float* in, float* out) {
  __shared__ float s[kMaxThreads];
  s[threadIdx.x] = in[threadIdx.x];
  __syncthreads();
  if (threadIdx.x == 0) *out = s[0];
}
`;
    const { cuda, cpp } = both(src);
    expect(cuda.text).toBe(src);
    expect(cpp.text.split('\n').slice(3, 6)).toEqual(['[[global]] void', ' '.repeat(30), ' '.repeat(29)]);
  });

  it('codeView blanks literals and comments but keeps digit separators and line breaks', () => {
    const src = `int a = 1'000; char c = '"'; // "x\nauto s = u8"a\\"b"; /* y\n */ auto r = LR"d(")d";`;
    const view = codeView(src);
    expect(view.length).toBe(src.length);
    expect(lineBreaks(view)).toEqual(lineBreaks(src));
    expect(view.replace(/\0+/g, '_')).toBe("int a = 1'000; char c = _; _\nauto s = u8_; _\n_ auto r = LR_;");
  });
});

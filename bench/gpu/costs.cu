// Measured costs quoted by gpu-review's messages and rule READMEs. Our own program; one JSON line per
// figure on stdout. Times are medians over repeats (host clock around the region, with the device
// synchronized before the clock is read, or CUDA events for device time).
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -o costs bench/gpu/costs.cu -lnvrtc -lcuda && ./costs
#include <cuda.h>
#include <cuda_runtime.h>
#if __has_include(<nvrtc.h>)
#include <nvrtc.h>
#define HAVE_NVRTC 1
#endif
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); exit(1); } } while (0)
#ifdef HAVE_NVRTC
#define CKR(x) do { nvrtcResult e_ = (x); if (e_ != NVRTC_SUCCESS) { \
  fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, nvrtcGetErrorString(e_)); exit(1); } } while (0)
#endif
#define CKD(x) do { CUresult e_ = (x); if (e_ != CUDA_SUCCESS) { const char* m_; cuGetErrorString(e_, &m_); \
  fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, m_); exit(1); } } while (0)

static double now_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
static double median(std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; }
// Median over `reps` repeats of (time of `iters` calls of body) / iters, in microseconds, device synced at both ends.
static double per_iter_us(int reps, int iters, const std::function<void(int)>& body) {
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    CK(cudaDeviceSynchronize());
    double t0 = now_us();
    for (int i = 0; i < iters; ++i) body(i);
    CK(cudaDeviceSynchronize());
    t.push_back((now_us() - t0) / iters);
  }
  return median(t);
}
static void emit(const char* what, const char* variant, double value, const char* unit, const std::string& extra = "") {
  printf("{\"what\": \"%s\", \"variant\": \"%s\", \"value\": %.4g, \"unit\": \"%s\"%s%s}\n", what, variant, value, unit,
         extra.empty() ? "" : ", ", extra.c_str());
  fflush(stdout);
}

__global__ void k_empty() {}
__global__ void k_axpy(const float* __restrict__ x, float* __restrict__ y, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
template <typename T>
__global__ void k_fma(T* out, int iters, T seed) {
  T a0 = seed + threadIdx.x, a1 = a0 + 1, a2 = a0 + 2, a3 = a0 + 3, a4 = a0 + 4, a5 = a0 + 5, a6 = a0 + 6, a7 = a0 + 7;
  const T b = (T)0.999, c = (T)0.001;
  for (int i = 0; i < iters; ++i) {
    a0 = a0 * b + c; a1 = a1 * b + c; a2 = a2 * b + c; a3 = a3 * b + c;
    a4 = a4 * b + c; a5 = a5 * b + c; a6 = a6 * b + c; a7 = a7 * b + c;
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
}
template <int PAD>
__global__ void k_transpose(const float* __restrict__ in, float* __restrict__ out, int n) {
  __shared__ float tile[32][32 + PAD];
  int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
  for (int j = 0; j < 32; j += 8) tile[threadIdx.y + j][threadIdx.x] = in[(size_t)(y + j) * n + x];
  __syncthreads();
  x = blockIdx.y * 32 + threadIdx.x; y = blockIdx.x * 32 + threadIdx.y;
  for (int j = 0; j < 32; j += 8) out[(size_t)(y + j) * n + x] = tile[threadIdx.x][threadIdx.y + j];
}
// stride == 1: coalesced; stride == 32: each warp's 32 loads hit 32 different 128-byte lines.
__global__ void k_gather(const float* __restrict__ in, float* __restrict__ out, size_t n, size_t stride) {
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  size_t rows = n / stride;
  size_t j = (i % rows) * stride + i / rows;
  out[i] = in[j];
}

int main() {
  CK(cudaSetDevice(0));
  cudaDeviceProp p; CK(cudaGetDeviceProperties(&p, 0));
  int drv = 0, rt = 0; CK(cudaDriverGetVersion(&drv)); CK(cudaRuntimeGetVersion(&rt));
  char info[256];
  snprintf(info, sizeof info, "\"gpu\": \"%s\", \"driver\": %d, \"runtime\": %d", p.name, drv, rt);
  printf("{\"what\": \"device\", %s, \"sms\": %d}\n", info, p.multiProcessorCount);
  cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  k_empty<<<1, 32, 0, s>>>(); CK(cudaStreamSynchronize(s));

  // 1. Kernel launch: enqueue throughput (back to back, one sync at the end) and launch + sync round trip.
  emit("launch", "empty kernel, back to back (per launch)", per_iter_us(7, 20000, [&](int) { k_empty<<<1, 32, 0, s>>>(); }), "us");
  emit("launch", "empty kernel + cudaStreamSynchronize (round trip)", per_iter_us(7, 2000, [&](int) { k_empty<<<1, 32, 0, s>>>(); CK(cudaStreamSynchronize(s)); }), "us");

  // 2. A redundant sync between two launches on one stream (small kernels: 1 Mi floats).
  const int n = 1 << 20;
  float *x, *y; CK(cudaMalloc(&x, n * 4)); CK(cudaMalloc(&y, n * 4));
  CK(cudaMemset(x, 0, n * 4)); CK(cudaMemset(y, 0, n * 4));
  const int grid = (n + 255) / 256;
  double two = per_iter_us(7, 2000, [&](int) { k_axpy<<<grid, 256, 0, s>>>(x, y, 1.f, n); k_axpy<<<grid, 256, 0, s>>>(x, y, 1.f, n); });
  double two_dev = per_iter_us(7, 2000, [&](int) { k_axpy<<<grid, 256, 0, s>>>(x, y, 1.f, n); CK(cudaDeviceSynchronize()); k_axpy<<<grid, 256, 0, s>>>(x, y, 1.f, n); });
  double two_str = per_iter_us(7, 2000, [&](int) { k_axpy<<<grid, 256, 0, s>>>(x, y, 1.f, n); CK(cudaStreamSynchronize(s)); k_axpy<<<grid, 256, 0, s>>>(x, y, 1.f, n); });
  emit("redundant_sync", "two 1Mi-float axpy launches, no sync (per pair)", two, "us");
  emit("redundant_sync", "cudaDeviceSynchronize between them: added per sync", two_dev - two, "us");
  emit("redundant_sync", "cudaStreamSynchronize between them: added per sync", two_str - two, "us");
  emit("kernel", "1Mi-float axpy, one launch (device time by pairs/2)", two / 2, "us");

  // 3. Scalar device->host read (4 bytes): after a launch (includes the wait), and on an idle stream.
  float* hp; CK(cudaMallocHost(&hp, 4096 * 4));
  float hv = 0;
  emit("d2h_scalar", "cudaMemcpy 4 B pageable, idle device", per_iter_us(7, 2000, [&](int) { CK(cudaMemcpy(&hv, y, 4, cudaMemcpyDeviceToHost)); }), "us");
  emit("d2h_scalar", "cudaMemcpyAsync 4 B pinned + stream sync, idle", per_iter_us(7, 2000, [&](int) { CK(cudaMemcpyAsync(hp, y, 4, cudaMemcpyDeviceToHost, s)); CK(cudaStreamSynchronize(s)); }), "us");
  double with_read = per_iter_us(7, 2000, [&](int) { k_axpy<<<grid, 256, 0, s>>>(x, y, 1.f, n); CK(cudaMemcpyAsync(hp, y, 4, cudaMemcpyDeviceToHost, s)); CK(cudaStreamSynchronize(s)); });
  double without = per_iter_us(7, 2000, [&](int) { k_axpy<<<grid, 256, 0, s>>>(x, y, 1.f, n); });
  emit("d2h_scalar", "launch + 4 B read per iteration, minus launch alone (pipeline stall per read)", with_read - without, "us");

  // 4. One read per element in a loop against one batched read (1000 floats).
  const int m = 1000;
  emit("d2h_loop", "1000 x cudaMemcpy of 4 B (per loop)", per_iter_us(5, 20, [&](int) { for (int i = 0; i < m; ++i) CK(cudaMemcpy(&hv, y + i, 4, cudaMemcpyDeviceToHost)); }), "us");
  emit("d2h_loop", "one cudaMemcpy of 4000 B (pinned)", per_iter_us(7, 2000, [&](int) { CK(cudaMemcpy(hp, y, m * 4, cudaMemcpyDeviceToHost)); }), "us");

  // 5. cudaMalloc/cudaFree against a stream-ordered pool (release threshold: keep everything).
  cudaMemPool_t pool; CK(cudaDeviceGetDefaultMemPool(&pool, 0));
  uint64_t thr = UINT64_MAX; CK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &thr));
  for (size_t bytes : {(size_t)1 << 10, (size_t)64 << 10, (size_t)1 << 20, (size_t)16 << 20, (size_t)256 << 20}) {
    int iters = bytes >= (256u << 20) ? 50 : 300;
    void* q;
    double sync_pair = per_iter_us(5, iters, [&](int) { CK(cudaMalloc(&q, bytes)); CK(cudaFree(q)); });
    CK(cudaMallocAsync(&q, bytes, s)); CK(cudaFreeAsync(q, s)); CK(cudaStreamSynchronize(s));
    double pool_pair = per_iter_us(5, iters, [&](int) { CK(cudaMallocAsync(&q, bytes, s)); CK(cudaFreeAsync(q, s)); });
    char v[128];
    snprintf(v, sizeof v, "cudaMalloc+cudaFree %zu B", bytes); emit("alloc", v, sync_pair, "us", "\"bytes\": " + std::to_string(bytes));
    snprintf(v, sizeof v, "cudaMallocAsync+cudaFreeAsync (pool) %zu B", bytes); emit("alloc", v, pool_pair, "us", "\"bytes\": " + std::to_string(bytes));
  }
  // cudaFree while a kernel runs on another stream: the free waits for the device.
  {
    void* q; CK(cudaMalloc(&q, 1 << 20));
    double t = per_iter_us(5, 200, [&](int) { k_axpy<<<grid, 256, 0, s>>>(x, y, 1.f, n); CK(cudaMalloc(&q, 1 << 20)); CK(cudaFree(q)); });
    emit("alloc", "launch + cudaMalloc/cudaFree 1 MiB, minus launch alone (free waits for the device)", t - without, "us");
  }

  // 6. Blocking cudaMemset (legacy stream) against cudaMemsetAsync on the work stream, between launches.
  double ms_block = per_iter_us(7, 1000, [&](int) { k_axpy<<<grid, 256, 0, s>>>(x, y, 1.f, n); CK(cudaMemset(x, 0, 4096)); });
  double ms_async = per_iter_us(7, 1000, [&](int) { k_axpy<<<grid, 256, 0, s>>>(x, y, 1.f, n); CK(cudaMemsetAsync(x, 0, 4096, s)); });
  emit("memset", "launch + cudaMemset 4 KiB (per iteration)", ms_block, "us");
  emit("memset", "launch + cudaMemsetAsync 4 KiB on the stream (per iteration)", ms_async, "us");

  // 7. fp64 : fp32 FMA throughput.
  {
    int blocks = p.multiProcessorCount * 16, threads = 256, iters = 8192;
    float* of; double* od; CK(cudaMalloc(&of, blocks * threads * 4)); CK(cudaMalloc(&od, blocks * threads * 8));
    cudaEvent_t a, b; CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
    auto timeit = [&](auto launch) {
      launch(); CK(cudaDeviceSynchronize());
      std::vector<double> t;
      for (int r = 0; r < 7; ++r) { CK(cudaEventRecord(a, s)); launch(); CK(cudaEventRecord(b, s)); CK(cudaEventSynchronize(b)); float ms; CK(cudaEventElapsedTime(&ms, a, b)); t.push_back(ms); }
      return median(t);
    };
    double flops = 2.0 * 8 * iters * (double)blocks * threads;
    double tf = timeit([&] { k_fma<float><<<blocks, threads, 0, s>>>(of, iters, 1.f); });
    double td = timeit([&] { k_fma<double><<<blocks, threads, 0, s>>>(od, iters, 1.0); });
    emit("fma", "fp32 FMA throughput", flops / (tf * 1e-3) / 1e12, "TFLOP/s");
    emit("fma", "fp64 FMA throughput", flops / (td * 1e-3) / 1e12, "TFLOP/s");
    emit("fma", "fp64 time / fp32 time", td / tf, "ratio");
  }

  // 8. Shared-memory transpose: tile[32][32] (32-way bank conflicts on the column read) against tile[32][33].
  {
    int N = 8192; float *in, *out; CK(cudaMalloc(&in, (size_t)N * N * 4)); CK(cudaMalloc(&out, (size_t)N * N * 4));
    CK(cudaMemset(in, 1, (size_t)N * N * 4));
    dim3 g(N / 32, N / 32), b(32, 8);
    cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
    auto timeit = [&](auto launch) {
      launch(); CK(cudaDeviceSynchronize());
      std::vector<double> t;
      for (int r = 0; r < 9; ++r) { CK(cudaEventRecord(e0, s)); launch(); CK(cudaEventRecord(e1, s)); CK(cudaEventSynchronize(e1)); float ms; CK(cudaEventElapsedTime(&ms, e0, e1)); t.push_back(ms); }
      return median(t);
    };
    double tc = timeit([&] { k_transpose<0><<<g, b, 0, s>>>(in, out, N); });
    double tp = timeit([&] { k_transpose<1><<<g, b, 0, s>>>(in, out, N); });
    double bytes = 2.0 * N * N * 4;
    emit("bank_conflict", "transpose 8192^2 fp32, tile[32][32]", bytes / (tc * 1e-3) / 1e9, "GB/s");
    emit("bank_conflict", "transpose 8192^2 fp32, tile[32][33] (padded)", bytes / (tp * 1e-3) / 1e9, "GB/s");
    emit("bank_conflict", "conflicted time / padded time", tc / tp, "ratio");

    // 9. Coalesced against strided loads (256 MiB read + 256 MiB written).
    size_t cnt = (size_t)N * N;
    int tb = 256; unsigned blocks = (unsigned)((cnt + tb - 1) / tb);
    double t1 = timeit([&] { k_gather<<<blocks, tb, 0, s>>>(in, out, cnt, 1); });
    double t32 = timeit([&] { k_gather<<<blocks, tb, 0, s>>>(in, out, cnt, 32); });
    emit("coalescing", "copy 256 MiB, coalesced loads", bytes / (t1 * 1e-3) / 1e9, "GB/s");
    emit("coalescing", "copy 256 MiB, loads strided by 32 floats", bytes / (t32 * 1e-3) / 1e9, "GB/s");
    emit("coalescing", "strided time / coalesced time", t32 / t1, "ratio");
    CK(cudaMemcpy(out, in, cnt * 4, cudaMemcpyDeviceToDevice)); CK(cudaDeviceSynchronize());
    double tcopy = timeit([&] { CK(cudaMemcpyAsync(out, in, cnt * 4, cudaMemcpyDeviceToDevice, s)); });
    emit("bandwidth", "cudaMemcpyAsync D2D 256 MiB (read + write bytes)", bytes / (tcopy * 1e-3) / 1e9, "GB/s");
  }

#ifdef HAVE_NVRTC
  // 10. NVRTC: compile a small kernel (nvrtcCompileProgram) and load it (cuModuleLoadData), cold each time.
  {
    const char* src = "extern \"C\" __global__ void axpy(const float* __restrict__ x, float* __restrict__ y, float a, int n)"
                      " { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = a * x[i] + y[i]; }\n";
    std::vector<double> tc, tl;
    char arch[32]; snprintf(arch, sizeof arch, "--gpu-architecture=sm_%d%d", p.major, p.minor);
    for (int r = 0; r < 7; ++r) {
      std::string code = std::string(src) + "// " + std::to_string(r) + "\n";
      double t0 = now_us();
      nvrtcProgram prog; CKR(nvrtcCreateProgram(&prog, code.c_str(), "axpy.cu", 0, nullptr, nullptr));
      const char* opts[] = {arch};
      CKR(nvrtcCompileProgram(prog, 1, opts));
      size_t sz; CKR(nvrtcGetCUBINSize(prog, &sz)); std::vector<char> cubin(sz); CKR(nvrtcGetCUBIN(prog, cubin.data()));
      CKR(nvrtcDestroyProgram(&prog));
      double t1 = now_us();
      CUmodule mod; CKD(cuModuleLoadData(&mod, cubin.data())); CUfunction fn; CKD(cuModuleGetFunction(&fn, mod, "axpy"));
      double t2 = now_us();
      CKD(cuModuleUnload(mod));
      tc.push_back(t1 - t0); tl.push_back(t2 - t1);
    }
    emit("nvrtc", "nvrtcCompileProgram of a 1-line kernel to cubin (cold)", median(tc) / 1000, "ms");
    emit("nvrtc", "cuModuleLoadData + cuModuleGetFunction of that cubin", median(tl) / 1000, "ms");
  }
#endif
  printf("{\"what\": \"done\", %s}\n", info);
  return 0;
}

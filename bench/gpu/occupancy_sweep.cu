// Ground truth for the occupancy model (src/analysis/occupancy.ts): asks the CUDA runtime how many
// blocks of a kernel fit on one SM, over register counts, static and dynamic shared memory and block
// sizes, and how much dynamic shared memory is left for N resident blocks. Our own program.
//
//   nvcc -O2 -arch=sm_90 -o occupancy_sweep bench/gpu/occupancy_sweep.cu && ./occupancy_sweep OUTDIR
//
// Writes OUTDIR/occupancy.tsv, OUTDIR/avail-dynsmem.tsv, OUTDIR/carveout.tsv and OUTDIR/device.json.
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <string>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); exit(1); } } while (0)

// A kernel that wants many live registers (NACC accumulators updated in a data-dependent way), capped
// with __maxnreg__ so the compiler allocates (about) the cap; the runtime reports what it really got.
#define NACC 160
#define BODY(SMEM)                                                                 \
  float acc[NACC];                                                                 \
  _Pragma("unroll") for (int j = 0; j < NACC; ++j) acc[j] = in[(threadIdx.x + j) % n]; \
  for (int it = 0; it < iters; ++it) {                                             \
    _Pragma("unroll") for (int j = 0; j < NACC; ++j)                               \
      acc[j] = fmaf(acc[j], acc[(j + 1) % NACC], in[(it + j) % n]);                \
  }                                                                                \
  float s = 0.f;                                                                   \
  _Pragma("unroll") for (int j = 0; j < NACC; ++j) s += acc[j];                    \
  SMEM                                                                             \
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;

#define SMEM_NONE
#define SMEM_STATIC(BYTES)                                                         \
  __shared__ float tile[(BYTES) / 4];                                              \
  tile[threadIdx.x % ((BYTES) / 4)] = s; __syncthreads();                          \
  s += tile[(threadIdx.x + 1) % ((BYTES) / 4)];

#define KERN(R)                                                                    \
  extern "C" __global__ void __maxnreg__(R) k_r##R##_s0(const float* in, float* out, int n, int iters) { BODY(SMEM_NONE) } \
  extern "C" __global__ void __maxnreg__(R) k_r##R##_s4k(const float* in, float* out, int n, int iters) { BODY(SMEM_STATIC(4096)) } \
  extern "C" __global__ void __maxnreg__(R) k_r##R##_s12k(const float* in, float* out, int n, int iters) { BODY(SMEM_STATIC(12288)) }

KERN(24) KERN(32) KERN(33) KERN(40) KERN(48) KERN(56) KERN(64) KERN(65) KERN(72) KERN(80) KERN(96)
KERN(100) KERN(128) KERN(150) KERN(168) KERN(200) KERN(232) KERN(255)

// A tiny kernel (few registers, no cap).
extern "C" __global__ void k_tiny(const float* in, float* out, int n, int iters) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * 2.f + (float)iters;
}

typedef void (*KFn)(const float*, float*, int, int);
struct K { const char* name; KFn fn; };
#define ENT(R) {"k_r" #R "_s0", k_r##R##_s0}, {"k_r" #R "_s4k", k_r##R##_s4k}, {"k_r" #R "_s12k", k_r##R##_s12k},

int main(int argc, char** argv) {
  const char* outdir = argc > 1 ? argv[1] : ".";
  K ks[] = { ENT(24) ENT(32) ENT(33) ENT(40) ENT(48) ENT(56) ENT(64) ENT(65) ENT(72) ENT(80) ENT(96)
             ENT(100) ENT(128) ENT(150) ENT(168) ENT(200) ENT(232) ENT(255) {"k_tiny", k_tiny} };
  const int nk = sizeof(ks) / sizeof(ks[0]);
  int dev = 0; CK(cudaSetDevice(dev));
  cudaDeviceProp p; CK(cudaGetDeviceProperties(&p, dev));
  int drv = 0, rt = 0; CK(cudaDriverGetVersion(&drv)); CK(cudaRuntimeGetVersion(&rt));
  auto attr = [&](cudaDeviceAttr a) { int v = 0; CK(cudaDeviceGetAttribute(&v, a, dev)); return v; };

  std::string path = std::string(outdir) + "/device.json";
  FILE* f = fopen(path.c_str(), "w");
  fprintf(f, "{\n  \"name\": \"%s\", \"cc\": \"%d.%d\", \"driver\": %d, \"runtime\": %d,\n", p.name, p.major, p.minor, drv, rt);
  fprintf(f, "  \"multiProcessorCount\": %d, \"regsPerMultiprocessor\": %d, \"regsPerBlock\": %d,\n",
          attr(cudaDevAttrMultiProcessorCount), attr(cudaDevAttrMaxRegistersPerMultiprocessor), attr(cudaDevAttrMaxRegistersPerBlock));
  fprintf(f, "  \"maxThreadsPerMultiProcessor\": %d, \"maxThreadsPerBlock\": %d, \"maxBlocksPerMultiProcessor\": %d, \"warpSize\": %d,\n",
          attr(cudaDevAttrMaxThreadsPerMultiProcessor), attr(cudaDevAttrMaxThreadsPerBlock), attr(cudaDevAttrMaxBlocksPerMultiprocessor), attr(cudaDevAttrWarpSize));
  fprintf(f, "  \"sharedMemPerMultiprocessor\": %d, \"sharedMemPerBlock\": %d, \"sharedMemPerBlockOptin\": %d, \"reservedSharedMemoryPerBlock\": %d,\n",
          attr(cudaDevAttrMaxSharedMemoryPerMultiprocessor), attr(cudaDevAttrMaxSharedMemoryPerBlock), attr(cudaDevAttrMaxSharedMemoryPerBlockOptin), attr(cudaDevAttrReservedSharedMemoryPerBlock));
  fprintf(f, "  \"l2CacheSize\": %d, \"persistingL2CacheMaxSize\": %d, \"totalGlobalMem\": %zu, \"memoryBusWidth\": %d, \"clockRateKHz\": %d, \"memoryClockRateKHz\": %d\n}\n",
          attr(cudaDevAttrL2CacheSize), attr(cudaDevAttrMaxPersistingL2CacheSize), p.totalGlobalMem, attr(cudaDevAttrGlobalMemoryBusWidth), attr(cudaDevAttrClockRate), attr(cudaDevAttrMemoryClockRate));
  fclose(f);

  const int optin = attr(cudaDevAttrMaxSharedMemoryPerBlockOptin);
  std::vector<int> dyn = {0, 1, 127, 128, 129, 255, 256, 257, 512, 1000, 1024, 2048, 3000, 4096, 6144, 8192, 10240, 12288,
                          16384, 20480, 24576, 32768, 40960, 45000, 49152, 57344, 65536, 81920, 98304, 114688, 131072,
                          163840, 196608, 212992, 225280, 229376 - 1024, 232448};

  path = std::string(outdir) + "/occupancy.tsv";
  f = fopen(path.c_str(), "w");
  fprintf(f, "# cudaOccupancyMaxActiveBlocksPerMultiprocessor on %s (cc %d.%d, driver %d, runtime %d); MaxDynamicSharedMemorySize set to optin-static per kernel; carveout default\n",
          p.name, p.major, p.minor, drv, rt);
  fprintf(f, "kernel\tnum_regs\tstatic_smem\tlocal_bytes\tfunc_max_threads\tthreads\tdynamic_smem\tblocks_per_sm\terr\n");
  long rows = 0;
  for (int i = 0; i < nk; ++i) {
    cudaFuncAttributes fa; CK(cudaFuncGetAttributes(&fa, ks[i].fn));
    CK(cudaFuncSetAttribute(ks[i].fn, cudaFuncAttributeMaxDynamicSharedMemorySize, optin - (int)fa.sharedSizeBytes));
    for (int t = 32; t <= 1024; t += 32) {
      for (int d : dyn) {
        int blocks = -1;
        cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, ks[i].fn, t, (size_t)d);
        if (e != cudaSuccess) { cudaGetLastError(); blocks = -1; }
        fprintf(f, "%s\t%d\t%zu\t%zu\t%d\t%d\t%d\t%d\t%s\n", ks[i].name, fa.numRegs, fa.sharedSizeBytes, fa.localSizeBytes,
                fa.maxThreadsPerBlock, t, d, blocks, e == cudaSuccess ? "-" : cudaGetErrorName(e));
        ++rows;
      }
    }
    // Odd block sizes (not a multiple of the warp).
    for (int t : {1, 33, 100, 250, 500, 1000}) {
      for (int d : {0, 4096, 49152}) {
        int blocks = -1;
        cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, ks[i].fn, t, (size_t)d);
        if (e != cudaSuccess) { cudaGetLastError(); blocks = -1; }
        fprintf(f, "%s\t%d\t%zu\t%zu\t%d\t%d\t%d\t%d\t%s\n", ks[i].name, fa.numRegs, fa.sharedSizeBytes, fa.localSizeBytes,
                fa.maxThreadsPerBlock, t, d, blocks, e == cudaSuccess ? "-" : cudaGetErrorName(e));
        ++rows;
      }
    }
  }
  fclose(f);
  fprintf(stderr, "occupancy rows: %ld\n", rows);

  path = std::string(outdir) + "/avail-dynsmem.tsv";
  f = fopen(path.c_str(), "w");
  fprintf(f, "# cudaOccupancyAvailableDynamicSMemPerBlock on %s\n", p.name);
  fprintf(f, "kernel\tnum_regs\tstatic_smem\tthreads\tnum_blocks\tavail_dynamic_smem\terr\n");
  for (int i = 0; i < nk; ++i) {
    cudaFuncAttributes fa; CK(cudaFuncGetAttributes(&fa, ks[i].fn));
    for (int t : {32, 64, 128, 256, 512, 1024}) {
      for (int nb : {1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 24, 32}) {
        size_t avail = 0;
        cudaError_t e = cudaOccupancyAvailableDynamicSMemPerBlock(&avail, ks[i].fn, nb, t);
        if (e != cudaSuccess) { cudaGetLastError(); avail = 0; }
        fprintf(f, "%s\t%d\t%zu\t%d\t%d\t%zu\t%s\n", ks[i].name, fa.numRegs, fa.sharedSizeBytes, t, nb, avail,
                e == cudaSuccess ? "-" : cudaGetErrorName(e));
      }
    }
  }
  fclose(f);

  // Shared-memory carveout preference: the runtime honours it in the occupancy answer.
  path = std::string(outdir) + "/carveout.tsv";
  f = fopen(path.c_str(), "w");
  fprintf(f, "# cudaFuncAttributePreferredSharedMemoryCarveout (percent of max, -1 = default) on %s\n", p.name);
  fprintf(f, "kernel\tnum_regs\tstatic_smem\tcarveout\tthreads\tdynamic_smem\tblocks_per_sm\terr\n");
  for (int ki : {0, 2, 3 * 6, nk - 1}) {
    cudaFuncAttributes fa; CK(cudaFuncGetAttributes(&fa, ks[ki].fn));
    for (int c : {0, 10, 25, 50, 75, 100, -1}) {
      CK(cudaFuncSetAttribute(ks[ki].fn, cudaFuncAttributePreferredSharedMemoryCarveout, c));
      for (int t : {64, 128, 256, 512, 1024}) {
        for (int d : {0, 1024, 4096, 8192, 16384, 32768, 65536}) {
          int blocks = -1;
          cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, ks[ki].fn, t, (size_t)d);
          if (e != cudaSuccess) { cudaGetLastError(); blocks = -1; }
          fprintf(f, "%s\t%d\t%zu\t%d\t%d\t%d\t%d\t%s\n", ks[ki].name, fa.numRegs, fa.sharedSizeBytes, c, t, d, blocks,
                  e == cudaSuccess ? "-" : cudaGetErrorName(e));
        }
      }
    }
  }
  fclose(f);
  printf("ok %s\n", p.name);
  return 0;
}

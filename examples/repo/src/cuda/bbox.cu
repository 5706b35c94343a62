#include <cuda_runtime.h>
#include <cfloat>

__global__ void bbox_kernel(const double* __restrict__ x, const double* __restrict__ y,
                            const int* __restrict__ offsets, double4* __restrict__ out, int n)
{
    int g = blockIdx.x * blockDim.x + threadIdx.x;
    if (g >= n) return;
    double4 b = make_double4(DBL_MAX, DBL_MAX, -DBL_MAX, -DBL_MAX);
    for (int i = offsets[g]; i < offsets[g + 1]; ++i) {
        b.x = fmin(b.x, x[i]);
        b.y = fmin(b.y, y[i]);
        b.z = fmax(b.z, x[i]);
        b.w = fmax(b.w, y[i]);
    }
    out[g] = b;
}

void launch_bbox(const double* x, const double* y, const int* offsets, double4* out, int n, cudaStream_t s)
{
    int block = 256;
    int grid = (n + block - 1) / block;
    bbox_kernel<<<grid, block, 0, s>>>(x, y, offsets, out, n);
    cudaDeviceSynchronize();
}

void bbox_all(const double* x, const double* y, const int* offsets, double4* out, int n, cudaStream_t s)
{
    double4* tmp;
    cudaMalloc(&tmp, n * sizeof(double4));
    launch_bbox(x, y, offsets, tmp, n, s);
    cudaMemcpy(out, tmp, n * sizeof(double4), cudaMemcpyDeviceToDevice);
    cudaFree(tmp);
}

"""Segment lengths of linestrings, compiled with NVRTC through CuPy."""
import cupy as cp
import numpy as np

_SEGMENT_LENGTH_SRC = r'''
extern "C" __global__ void segment_length(const double* x, const double* y,
                                          double* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n - 1) return;
    double dx = x[i + 1] - x[i];
    double dy = y[i + 1] - y[i];
    out[i] = sqrt(dx * dx + dy * dy);
}
'''

_kernel = cp.RawKernel(_SEGMENT_LENGTH_SRC, "segment_length")


def total_length(d_x, d_y, d_part_offsets, n_parts):
    d_len = segment_lengths(d_x, d_y)
    totals = np.zeros(n_parts)
    for p in range(n_parts):
        lo, hi = int(d_part_offsets[p]), int(d_part_offsets[p + 1])
        totals[p] = d_len[lo:hi - 1].sum().get()
    return totals


def segment_lengths(d_x, d_y):
    n = int(d_x.shape[0])
    d_out = cp.empty((max(n - 1, 0),), dtype=cp.float64)
    threads = 256
    blocks = (n + threads - 1) // threads
    _kernel((blocks,), (threads,), (d_x, d_y, d_out, cp.int32(n)))
    return d_out

"""What a RawKernel built on every call costs, against one built once (CuPy).

Three ways of launching the same small kernel N times:
  once      -- one module-level cp.RawKernel object, launched N times
  per_call  -- a new cp.RawKernel(code, name) object per launch, same source text
  per_call_new_source -- a new object per launch whose source differs (a comment with the counter),
               so every launch is a real NVRTC compile (the worst case: a formatted kernel string)
Prints one JSON line per way: microseconds per launch (median of 5 repeats), with a device sync
at the end of each repeat so the queued launches are counted.
"""
import json
import statistics
import time

import cupy as cp

CODE = r'''
extern "C" __global__ void axpy(const float* __restrict__ x, float* __restrict__ y, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
'''
n = 1 << 16
x = cp.ones(n, dtype=cp.float32)
y = cp.zeros(n, dtype=cp.float32)
grid, block = ((n + 255) // 256,), (256,)
args = (x, y, cp.float32(2.0), cp.int32(n))
ONCE = cp.RawKernel(CODE, "axpy")
ONCE(grid, block, args)
cp.cuda.Device().synchronize()


def run(way, iters):
    t = []
    for rep in range(5):
        cp.cuda.Device().synchronize()
        t0 = time.perf_counter()
        for i in range(iters):
            if way == "once":
                ONCE(grid, block, args)
            elif way == "per_call":
                cp.RawKernel(CODE, "axpy")(grid, block, args)
            else:
                cp.RawKernel(CODE + f"// {rep}-{i}-{time.perf_counter_ns()}\n", "axpy")(grid, block, args)
        cp.cuda.Device().synchronize()
        t.append((time.perf_counter() - t0) / iters * 1e6)
    return statistics.median(t)


dev = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
for way, iters in (("once", 2000), ("per_call", 200), ("per_call_new_source", 10)):
    print(json.dumps({"way": way, "us_per_launch": round(run(way, iters), 2), "iters": iters, "gpu": dev,
                      "cupy": cp.__version__, "cuda_runtime": cp.cuda.runtime.runtimeGetVersion(),
                      "driver": cp.cuda.runtime.driverGetVersion()}))

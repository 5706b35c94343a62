"""Measured costs of CuPy host-code patterns that gpu-review's rules flag. Our own program.

One JSON line per figure: microseconds (median of repeats, device synchronized around the region).
    python3 bench/gpu/costs_cupy.py
"""
import json
import statistics
import time

import cupy as cp

dev = cp.cuda.Device()
INFO = {"gpu": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(), "cupy": cp.__version__,
        "cuda_runtime": cp.cuda.runtime.runtimeGetVersion(), "driver": cp.cuda.runtime.driverGetVersion()}


def per_iter_us(fn, iters, reps=7):
    t = []
    for _ in range(reps):
        dev.synchronize()
        t0 = time.perf_counter()
        for i in range(iters):
            fn(i)
        dev.synchronize()
        t.append((time.perf_counter() - t0) / iters * 1e6)
    return statistics.median(t)


def emit(what, variant, value, unit="us"):
    print(json.dumps({"what": what, "variant": variant, "value": round(value, 3), "unit": unit, **INFO}), flush=True)


x = cp.arange(1 << 20, dtype=cp.float32)
y = cp.zeros_like(x)
small = cp.zeros(1024, dtype=cp.float32)
y += 1  # warm the elementwise kernels
float(x[0])

# Launch overhead of a CuPy elementwise op, and the op followed by a scalar read.
emit("cupy_launch", "small += 1 (1 Ki floats), back to back, per op", per_iter_us(lambda i: small.__iadd__(1), 5000))
emit("cupy_launch", "small += 1 then float(small[0]) (launch + D2H round trip)",
     per_iter_us(lambda i: (small.__iadd__(1), float(small[0])), 2000))
emit("cupy_sync", "y += x twice with dev.synchronize() between, minus without (per sync)",
     per_iter_us(lambda i: (y.__iadd__(x), dev.synchronize(), y.__iadd__(x)), 2000)
     - per_iter_us(lambda i: (y.__iadd__(x), y.__iadd__(x)), 2000))

# A device read per loop iteration against one batched read, 1000 elements.
def per_element(_):
    s = 0.0
    for i in range(1000):
        s += float(x[i])
    return s


def batched(_):
    h = x[:1000].get()
    s = 0.0
    for i in range(1000):
        s += float(h[i])
    return s


def per_element_get(_):
    for i in range(1000):
        x[i].get()


emit("get_in_loop", "1000 x float(x[i]) (per loop)", per_iter_us(per_element, 10, reps=5))
emit("get_in_loop", "1000 x x[i].get() (per loop)", per_iter_us(per_element_get, 10, reps=5))
emit("get_in_loop", "x[:1000].get() once, then 1000 host reads (per loop)", per_iter_us(batched, 200))
emit("d2h_scalar", "int(cp.count_nonzero(mask)) on 1 Mi elements", per_iter_us(lambda i: int(cp.count_nonzero(x)), 2000))
emit("d2h_scalar", "cp.count_nonzero(mask) kept on device", per_iter_us(lambda i: cp.count_nonzero(x), 2000))

# zeros against empty (a buffer that is overwritten whole), 256 MiB; the pool already holds the memory.
big = 64 << 20
cp.zeros(big, dtype=cp.float32); cp.empty(big, dtype=cp.float32)
emit("alloc_fill", "cp.zeros 256 MiB (pool warm)", per_iter_us(lambda i: cp.zeros(big, dtype=cp.float32), 50))
emit("alloc_fill", "cp.empty 256 MiB (pool warm)", per_iter_us(lambda i: cp.empty(big, dtype=cp.float32), 50))

# fp64 against fp32: a compute-bound matmul (cuBLAS) and a memory-bound elementwise op.
for n in (4096,):
    a32 = cp.random.random((n, n), dtype=cp.float32); a64 = a32.astype(cp.float64)
    cp.matmul(a32, a32); cp.matmul(a64, a64)
    t32 = per_iter_us(lambda i: cp.matmul(a32, a32), 10, reps=5)
    t64 = per_iter_us(lambda i: cp.matmul(a64, a64), 10, reps=5)
    emit("fp64", f"matmul {n}^2 fp32", 2 * n ** 3 / (t32 * 1e-6) / 1e12, "TFLOP/s")
    emit("fp64", f"matmul {n}^2 fp64", 2 * n ** 3 / (t64 * 1e-6) / 1e12, "TFLOP/s")
    emit("fp64", "matmul fp64 time / fp32 time", t64 / t32, "ratio")
v32 = cp.random.random(64 << 20, dtype=cp.float32); v64 = v32.astype(cp.float64)
t32 = per_iter_us(lambda i: v32 * 2.0, 50); t64 = per_iter_us(lambda i: v64 * 2.0, 50)
emit("fp64", "elementwise v * 2 on 64 Mi elements, fp64 time / fp32 time (memory-bound)", t64 / t32, "ratio")

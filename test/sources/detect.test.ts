import { describe, expect, it } from 'vitest';
import { detectLanguage } from '../../src/sources/detect.js';

describe('detectLanguage for C++ sources', () => {
  it.each([
    // DSL code: kernels, callables, command lists, device control flow.
    ['#include <luisa/luisa-compute.h>\nKernel1D k = [](BufferFloat b) noexcept { b.write(dispatch_x(), 1.f); };', 'luisa-dsl'],
    ['#include <luisa/dsl/sugar.h>\nvoid f() { $if (x > 0) { y = 1; }; }', 'luisa-dsl'],
    ['using namespace luisa::compute;\nvoid f(Stream &s) { auto cl = CommandList::create(); }', 'luisa-dsl'],
    // DSL code that also calls CUDA for interop stays DSL.
    ['#include <luisa/luisa-compute.h>\n#include <cuda_runtime.h>\nvoid f(Device &device) { auto s = device.compile<1>([] { set_block_size(64u); }); cudaMalloc(&p, 4); }', 'luisa-dsl'],
    // The library's own CUDA backend: its headers and namespace, but driver calls and no DSL.
    ['#include <luisa/core/logging.h>\nnamespace luisa::compute::cuda {\nvoid Accel::build(CUstream s) { cuMemAllocAsync(&p, n, s); cuMemFree(q); }\n}', 'cuda'],
    // Library code without CUDA or DSL code is still read as LuisaCompute.
    ['#include <luisa/runtime/buffer.h>\nnamespace luisa::compute { void helper(); }', 'luisa-dsl'],
    ['#include <vector>\nint main() { return 0; }', null],
  ])('%s', (text, want) => {
    expect(detectLanguage('src/x.cpp', text).language).toBe(want);
  });
});

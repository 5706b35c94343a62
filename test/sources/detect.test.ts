import { describe, expect, it } from 'vitest';
import { detectLanguage } from '../../src/sources/detect.js';

describe('detectLanguage', () => {
  it('reads a LuisaCompute backend source that drives the CUDA driver API as CUDA host code', () => {
    const text = '#include <luisa/core/logging.h>\nvoid Accel::build(CUstream s) {\n  cuMemAllocAsync(&buf, n, s);\n  cuMemFree(old);\n}\n';
    expect(detectLanguage('src/backends/cuda/accel.cpp', text).language).toBe('cuda');
  });
  it('keeps DSL sources that also touch the CUDA API as LuisaCompute DSL', () => {
    const text = '#include <luisa/dsl/syntax.h>\nKernel1D k = [&] { auto i = dispatch_id().x; };\nvoid f() { cudaDeviceSynchronize(); }\n';
    expect(detectLanguage('src/tests/test_k.cpp', text).language).toBe('luisa-dsl');
  });
  it('keeps plain LuisaCompute sources as DSL', () => {
    expect(detectLanguage('src/tests/t.cpp', '#include <luisa/luisa-compute.h>\nint main() {}\n').language).toBe('luisa-dsl');
  });
});

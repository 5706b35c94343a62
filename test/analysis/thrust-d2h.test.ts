import { describe, expect, it } from 'vitest';
import { cppD2H } from '../../src/analysis/cpp-d2h.js';
import { deviceLambdaHead } from '../../src/analysis/cuda.js';
import { thrustModel } from '../../src/analysis/thrust.js';
import { buildSources } from '../../src/sources/build.js';
import { config } from '../helpers.js';

function source(text: string, path = 'src/k.cu') {
  const [s] = buildSources(path, 'cuda', { text, firstLine: 1, label: 'file', wholeFile: true }, 5000);
  return s;
}

const SRC = `
#include <thrust/execution_policy.h>
void stage(int* d, int n, cudaStream_t stream) {
  Alloc alloc;
  thrust::sort(thrust::device, d, d + n);
  thrust::sort(thrust::cuda::par(alloc).on(stream), d, d + n);
  thrust::sort(thrust::cuda::par_nosync(alloc).on(stream), d, d + n);
  auto p = thrust::cuda::par(alloc);
  thrust::fill(p, d, d + n, 0);
  thrust::sort(thrust::host, d, d + n);
  thrust::sort(handle.get_thrust_policy(), d, d + n);
  cub::DeviceReduce::Sum(nullptr, bytes, d, d, n);
  cub::DeviceReduce::Sum(tmp, bytes, d, d, n, stream);
  int count = 0;
  cudaMemcpy(&count, d, sizeof(int), cudaMemcpyDeviceToHost);
  auto f = [=] __device__(int i) { return d[i]; };
}
`;

describe('thrust model', () => {
  it('classifies the policies Thrust spells itself, through local variables, and CUB stream arguments', () => {
    const s = source(SRC);
    const t = thrustModel.compute(s, config());
    expect(t.calls.map((c) => `${c.algorithm}:${c.policy.kind}`)).toEqual(['sort:default-stream', 'sort:sync-on', 'sort:nosync-on', 'fill:default-stream', 'sort:host']);
    expect(t.cub.map((c) => [c.sizeQuery, c.stream?.text ?? null])).toEqual([[true, null], [false, 'stream']]);
  });
  it('finds the scalar readback', () => {
    const s = source(SRC);
    expect(cppD2H.compute(s, config()).readbacks.map((r) => [r.kind, r.value])).toEqual([['memcpy', 'count']]);
  });
  it('recognises device lambdas, also once masking blanked the qualifier', () => {
    expect(deviceLambdaHead('[=] __device__(int i) ')).toBe(true);
    expect(deviceLambdaHead('[=]           (int i) ')).toBe(true);
    expect(deviceLambdaHead('[=] XGBOOST_DEVICE(size_t i) ')).toBe(true);
    expect(deviceLambdaHead('[&](int i) ')).toBe(false);
  });
});

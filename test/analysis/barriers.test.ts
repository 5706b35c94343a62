import { describe, expect, it } from 'vitest';
import { barrierIntervals } from '../../src/analysis/barriers.js';
import { cudaModel } from '../../src/analysis/cuda.js';
import { smemFacts } from '../../src/analysis/smem.js';
import { resolveConfig } from '../../src/config/schema.js';
import { CHECKS } from '../../src/engine/registry.generated.js';
import { buildSources } from '../../src/sources/build.js';

const config = resolveConfig({}, CHECKS.map((c) => c.id));

/** For every `__syncthreads()` of the source: which sides are empty, with the line of the neighbour (0: kernel start/end). */
function sides(src: string): string[] {
  const [s] = buildSources('src/b.cu', 'cuda', { text: src, firstLine: 1, label: 'file', wholeFile: true }, 5000);
  const m = cudaModel.compute(s, config);
  const sm = smemFacts.compute(s, config);
  return s.root
    .descendantsOfType('call_expression')
    .filter((c) => c.childForFieldName('function')?.text === '__syncthreads')
    .map((c) => {
      const iv = barrierIntervals(m, sm, m.functionOf(c)!, c);
      if (!iv) return 'n/a';
      const show = (b: typeof iv.before) => (b ? String(b.other ? b.other.startPosition.row + 1 : 0) : '-');
      return `${show(iv.before)}/${show(iv.after)}`;
    });
}

describe('barrierIntervals', () => {
  it('sees accesses on both sides of a write-after-read barrier', () => {
    const src = ['__global__ void k(float* d) {', '  __shared__ float s[32];', '  float v = s[threadIdx.x + 1];', '  __syncthreads();', '  s[threadIdx.x] = v;', '}'].join('\n');
    expect(sides(src)).toEqual(['-/-']);
  });

  it('an empty side runs to the neighbour barrier, or to the kernel start and end', () => {
    const src = ['__global__ void k(float* d) {', '  int i = threadIdx.x * 2;', '  __syncthreads();', '  d[i] = 1.0f;', '  __syncthreads();', '  __syncthreads();', '}'].join('\n');
    expect(sides(src)).toEqual(['0/-', '-/6', '5/0']);
  });

  it('loops count around their back edge', () => {
    const loop = (work: string) =>
      ['__global__ void k(float* d, int n) {', '  __shared__ float s[64];', '  for (int t = 0; t < n; ++t) {', `    ${work}`, '    __syncthreads();', '  }', '  d[0] = s[0];', '}'].join('\n');
    // Nothing in the body but the barrier: the previous pass of the same barrier (line 5) is its neighbour.
    expect(sides(loop('float x = 2.0f * t;'))).toEqual(['5/-']);
    expect(sides(loop('s[threadIdx.x] = d[t];'))).toEqual(['-/-']);
  });

  it('a device helper does not know what its caller does before and after it', () => {
    expect(sides('__device__ void h(float* s) {\n  __syncthreads();\n}')).toEqual(['-/-']);
  });

  it('gives up on goto and on loops left by break', () => {
    expect(sides('__global__ void k(int* d) {\n  for (int i = 0; i < 4; ++i) {\n    __syncthreads();\n    if (d[i]) break;\n  }\n}')).toEqual(['n/a']);
    expect(sides('__global__ void k(int* d) {\n  again:\n  __syncthreads();\n  if (d[0]--) goto again;\n}')).toEqual(['n/a']);
  });
});

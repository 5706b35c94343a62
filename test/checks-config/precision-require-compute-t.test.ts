import { describe, expect, it } from 'vitest';
import { CHECKS } from '../../checks/registry.generated.js';
import { parseMarkers, reviewText, sites } from '../helpers.js';

/**
 * `precision/hardcoded-double` reviews `.cu` files only when `precision.require_compute_t` is set
 * (catalog §3 Pass 4: "nvrtc-in-python (and cuda when precision.require_compute_t = true)"); the
 * option also lifts the vocabulary gate of catalog §2.4, since a `.cu` file rarely names the
 * Python-side helpers.
 */
const rule = CHECKS.find((c) => c.id === 'precision/hardcoded-double')!;

const CU = `
__global__ void ring_perimeter(const double* x, const double* y, const int* offsets, double* out, int n) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= n) return;
  // ruleid: precision/hardcoded-double
  double acc = 0.0;
  for (int v = offsets[r]; v < offsets[r + 1] - 1; ++v) {
    // ruleid: precision/hardcoded-double
    double dx = x[v + 1] - x[v];
    // ruleid: precision/hardcoded-double
    double dy = y[v + 1] - y[v];
    acc += sqrtf((float)(dx * dx + dy * dy));
  }
  // ok: precision/hardcoded-double
  out[r] = (double)acc;
}

// ruleid: precision/hardcoded-double
__device__ double cross2(float ax, float ay, float bx, float by) { return ax * by - ay * bx; }

// ok: precision/hardcoded-double
__global__ void count_vertices(const int* offsets, int* counts, int n) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r < n) counts[r] = offsets[r + 1] - offsets[r];
}

__global__ void overlay_intersections(const double* ax, const double* bx, double* ix, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  // ok: precision/hardcoded-double
  double t = ax[i] * 0.5 + bx[i] * 0.5;
  ix[i] = t;
}

// ok: precision/hardcoded-double
__global__ void scale_bounds(const double* __restrict__ x, double* __restrict__ out, const double center_x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = (double)((float)(x[i] - center_x) * 2.0f);
}
`;

describe('precision.require_compute_t', () => {
  it('is off by default: .cu files are not reviewed by precision/hardcoded-double', async () => {
    const got = await reviewText('src/ring_metrics.cu', CU, { checks: [rule] });
    expect(got.filter((f) => f.ruleId === rule.id)).toEqual([]);
  });

  it('when set, flags double locals, casts and helper return types in .cu kernels', async () => {
    for (const repoMode of [true, false]) {
      const got = await reviewText('src/ring_metrics.cu', CU, { checks: [rule], repoMode, config: { enable_preview: true, precision: { require_compute_t: true } } });
      const expected = parseMarkers(CU).filter((m) => m.kind === 'ruleid').map((m) => m.target);
      // fp64 sites of one function are one grouped finding: each site counts.
      expect(sites(got.filter((f) => f.ruleId === rule.id)).map((f) => f.line).sort((a, b) => a - b)).toEqual(expected);
      expect(got.every((f) => f.messageId === 'noTypedef')).toBe(true);
    }
  });

  it('rejects an unknown precision option', async () => {
    await expect(reviewText('src/a.cu', CU, { config: { precision: { require_computet: true } } })).rejects.toThrow(/require_computet/);
  });
});

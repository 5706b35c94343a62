import { describe, expect, it } from 'vitest';
import { CHECKS } from '../../checks/registry.generated.js';
import { reviewText } from '../helpers.js';

/**
 * The shared-memory limits come from the configured targets (catalog §5.1): a 200 KB opt-in is
 * legal on H100 (227 KB per block) and illegal on A100 (163 KB) and RTX 3090/4090 (99 KB).
 */
const RULES = ['memory/smem-exceeds-device-limit', 'memory/dynamic-smem-over-default-without-opt-in'];
const checks = CHECKS.filter((c) => RULES.includes(c.id));

const CU = `
__global__ void join_tiles(const double* a, double* out) {
  extern __shared__ double tile[];
  tile[threadIdx.x] = a[threadIdx.x];
  __syncthreads();
  out[threadIdx.x] = tile[(threadIdx.x + 1) % blockDim.x];
}

void run(const double* d_a, double* d_out, int n, cudaStream_t s) {
  cudaFuncSetAttribute(join_tiles, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024);
  join_tiles<<<n / 256, 256, 200 * 1024, s>>>(d_a, d_out);
}
`;

const PY = `
import cupy as cp

_SRC = r"""
extern "C" __global__ void join_tiles(const double* a, double* out) {
    extern __shared__ double tile[];
    tile[threadIdx.x] = a[threadIdx.x];
    __syncthreads();
    out[threadIdx.x] = tile[(threadIdx.x + 1) % blockDim.x];
}
"""
_join = cp.RawKernel(_SRC, "join_tiles")
_join.max_dynamic_shared_size_bytes = 200 * 1024


def join(d_a, d_out, n):
    _join((n // 256,), (256,), (d_a, d_out), shared_mem=200 * 1024)
`;

const STATIC = `
__global__ void transpose_big(float* out, const float* in) {
  __shared__ float tile[128][129];
  tile[threadIdx.y][threadIdx.x] = in[threadIdx.x];
  __syncthreads();
  out[threadIdx.x] = tile[threadIdx.x][threadIdx.y];
}
`;

const ids = (fs: { ruleId: string }[]) => fs.map((f) => f.ruleId).sort();

describe('shared-memory limits follow config.targets', () => {
  it('a 200 KB opt-in is fine when H100 is the only target', async () => {
    expect(ids(await reviewText('src/join.cu', CU, { checks, config: { targets: ['H100'] } }))).toEqual([]);
    expect(ids(await reviewText('pkg/join.py', PY, { checks, config: { targets: ['H100'] } }))).toEqual([]);
  });

  it('the same launch exceeds A100 and the RTX cards by default, naming the tightest limit first', async () => {
    const cu = await reviewText('src/join.cu', CU, { checks });
    expect(ids(cu)).toEqual(['memory/smem-exceeds-device-limit']);
    expect(cu[0].message).toContain('200 KB');
    expect(cu[0].message).toContain('RTX 3090/RTX 4090 (99 KB opt-in maximum)');
    expect(cu[0].message).toContain('A100 (163 KB)');
    const py = await reviewText('pkg/join.py', PY, { checks });
    expect(ids(py)).toEqual(['memory/smem-exceeds-device-limit']);
  });

  it('names A100 when it is the only target', async () => {
    const f = await reviewText('src/join.cu', CU, { checks, config: { targets: ['A100'] } });
    expect(f).toHaveLength(1);
    expect(f[0].message).toContain('target A100 (163 KB opt-in maximum)');
    expect(f[0].message).not.toContain('RTX');
  });

  it('static __shared__ over 48 KB is an error on every target, H100 included', async () => {
    const f = await reviewText('src/t.cu', STATIC, { checks, config: { targets: ['H100'] } });
    expect(ids(f)).toEqual(['memory/smem-exceeds-device-limit']);
    expect(f[0].message).toContain('66,048 B');
    expect(f[0].message).toContain('48 KB for static');
    expect(f[0].message).not.toContain('opt-in maximum');
    const all = await reviewText('src/t.cu', STATIC, { checks });
    // 66,048 B is under every opt-in maximum (99 KB and up): only the static limit is crossed.
    expect(all[0].message).not.toContain('opt-in maximum');
  });

  it('without the opt-in, 200 KB is first a missing-attribute finding, whatever the targets', async () => {
    const noOptIn = CU.replace(/\s*cudaFuncSetAttribute\([^;]*;/, '');
    const f = await reviewText('src/join.cu', noOptIn, { checks, config: { targets: ['H100'] } });
    expect(ids(f)).toEqual(['memory/dynamic-smem-over-default-without-opt-in']);
  });
});

import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { CHECKS } from '../../checks/registry.generated.js';
import { reviewText } from '../helpers.js';

/**
 * What the compiler does with shared memory, checked against the claims of the memory rules:
 * ptxas rejects more than 48 KB (0xc000) of static `__shared__` per kernel on every architecture,
 * counting arrays in called device functions and at file scope, while a launch asking for any
 * amount of dynamic shared memory compiles (it fails, if at all, at run time, which is why the
 * launch-side rules exist). Skipped when nvcc is not installed.
 */
const hasNvcc = spawnSync('nvcc', ['--version'], { encoding: 'utf8' }).status === 0;
const dir = hasNvcc ? mkdtempSync(join(tmpdir(), 'gpu-review-nvcc-')) : '';
afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function nvcc(name: string, src: string, arch = 'sm_80'): { ok: boolean; stderr: string } {
  const file = join(dir, `${name}.cu`);
  writeFileSync(file, src);
  const r = spawnSync('nvcc', [`-arch=${arch}`, '-c', file, '-o', join(dir, `${name}.o`)], { encoding: 'utf8', timeout: 120_000 });
  return { ok: r.status === 0, stderr: `${r.stderr ?? ''}${r.stdout ?? ''}` };
}

const limit = CHECKS.find((c) => c.id === 'memory/smem-exceeds-device-limit')!;
const flagged = async (src: string) => (await reviewText('src/k.cu', src, { checks: [limit] })).some((f) => f.messageId === 'static');

const CASES: Record<string, { src: string; compiles: boolean }> = {
  padded_128_tile: {
    compiles: false,
    src: `__global__ void k(float* out) {
  __shared__ float tile[128][129];
  tile[threadIdx.x][threadIdx.y] = out[threadIdx.x];
  __syncthreads();
  out[threadIdx.x] = tile[threadIdx.y][threadIdx.x];
}
`,
  },
  exactly_48k: {
    compiles: true,
    src: `__global__ void k(float* out) {
  __shared__ float tile[96][128];
  tile[threadIdx.x % 96][threadIdx.y] = out[threadIdx.x];
  __syncthreads();
  out[threadIdx.x] = tile[threadIdx.y][threadIdx.x];
}
`,
  },
  two_32k_tiles: {
    compiles: false,
    src: `constexpr int kRows = 64;
__global__ void k(const float* a, const float* b, float* c) {
  __shared__ float As[kRows][128];
  __shared__ float Bs[kRows][128];
  As[threadIdx.y][threadIdx.x] = a[threadIdx.x];
  Bs[threadIdx.y][threadIdx.x] = b[threadIdx.x];
  __syncthreads();
  c[threadIdx.x] = As[threadIdx.y][threadIdx.x] * Bs[threadIdx.x % kRows][threadIdx.y];
}
`,
  },
  device_function_and_file_scope: {
    compiles: false,
    src: `__shared__ float g_centroids[64][128];
__device__ float accumulate(int i) {
  __shared__ float partial[64][128];
  partial[i % 64][i % 128] = g_centroids[i % 64][i % 128];
  return partial[0][i % 128];
}
__global__ void k(float* out) { out[threadIdx.x] = accumulate(threadIdx.x); }
`,
  },
  template_instantiated_large: {
    compiles: false,
    src: `template <int T>
__global__ void stencil_halo(const float* in, float* out) {
  __shared__ float halo[T + 2][T + 2];
  halo[threadIdx.y + 1][threadIdx.x + 1] = in[threadIdx.x];
  __syncthreads();
  out[threadIdx.x] = halo[threadIdx.y][threadIdx.x + 1];
}
void run(const float* in, float* out) { stencil_halo<128><<<1, dim3(32, 32)>>>(in, out); }
`,
  },
  template_instantiated_small: {
    compiles: true,
    src: `template <int T>
__global__ void stencil_halo(const float* in, float* out) {
  __shared__ float halo[T + 2][T + 2];
  halo[threadIdx.y + 1][threadIdx.x + 1] = in[threadIdx.x];
  __syncthreads();
  out[threadIdx.x] = halo[threadIdx.y][threadIdx.x + 1];
}
void run(const float* in, float* out) { stencil_halo<32><<<1, dim3(32, 32)>>>(in, out); }
`,
  },
};

describe.skipIf(!hasNvcc)('nvcc agrees with memory/smem-exceeds-device-limit on static shared memory', () => {
  for (const [name, c] of Object.entries(CASES)) {
    it(`${name}: nvcc ${c.compiles ? 'accepts' : 'rejects'} it and the rule ${c.compiles ? 'stays silent' : 'flags it'}`, async () => {
      const r = nvcc(name, c.src);
      expect(r.ok, r.stderr).toBe(c.compiles);
      if (!c.compiles) expect(r.stderr).toMatch(/uses too much shared data \(0x[0-9a-f]+ bytes, 0xc000 max\)/);
      expect(await flagged(c.src)).toBe(!c.compiles);
    });
  }

  it('the 48 KB static limit holds on sm_90 too (H100 allows 227 KB only through dynamic shared memory)', () => {
    const r = nvcc('two_32k_sm90', CASES.two_32k_tiles.src, 'sm_90');
    expect(r.ok).toBe(false);
    expect(r.stderr).toMatch(/too much shared data \(0x10000 bytes, 0xc000 max\)/);
  });

  it('on the rule fixture, ptxas rejects exactly the kernels the rule reports at their declarations', async () => {
    const fixture = join(dirname(fileURLToPath(import.meta.url)), '../../checks/memory/smem-exceeds-device-limit/fixtures/tiles.cu');
    const src = readFileSync(fixture, 'utf8');
    const r = nvcc('fixture_tiles', src);
    // Itanium mangling: `_Z<length><name>...`.
    const rejected = [...r.stderr.matchAll(/Entry function '_Z(\d+)(\w+)' uses too much shared data/g)].map((m) => m[2].slice(0, Number(m[1])));
    const reported = (await reviewText('src/tiles.cu', src, { checks: [limit] })).filter((f) => f.messageId === 'static').map((f) => /rejects kernel `(\w+)/.exec(f.message)![1]);
    expect(rejected.length).toBeGreaterThan(0);
    expect(new Set(rejected)).toEqual(new Set(reported));
  });

  it('a launch asking for 200 KB of dynamic shared memory compiles: only review (or run time) catches it', () => {
    const r = nvcc(
      'dynamic_200k',
      `__global__ void k(float* out) { extern __shared__ float buf[]; buf[threadIdx.x] = 1.f; __syncthreads(); out[threadIdx.x] = buf[threadIdx.x ^ 1]; }
void run(float* d, cudaStream_t s) { k<<<1, 256, 200 * 1024, s>>>(d); }
`,
    );
    expect(r.ok, r.stderr).toBe(true);
    expect(r.stderr).not.toMatch(/shared/);
  });
});

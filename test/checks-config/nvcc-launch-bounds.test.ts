import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

/**
 * The compiler facts behind kernel/missing-launch-bounds:
 * - without `__launch_bounds__` nvcc does not budget registers for 1,024 threads (a register-hungry kernel
 *   keeps more than 64 registers, so it could not launch 1,024-thread blocks);
 * - `__launch_bounds__(N)` alone caps registers at 65,536 / N, which for N <= 256 is above the 255 a thread
 *   can use: it changes nothing there, and starts to cap above 256 threads.
 * Skipped when nvcc is not installed.
 */
const hasNvcc = spawnSync('nvcc', ['--version'], { encoding: 'utf8' }).status === 0;
const dir = hasNvcc ? mkdtempSync(join(tmpdir(), 'gpu-review-nvcc-lb-')) : '';
afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** A kernel with a 96-float per-thread register tile, reused so the compiler keeps it in registers. */
const src = (bound: string) => `__global__ void ${bound} tile_mix(const float* __restrict__ in, float* __restrict__ out, int n) {
  float acc[96];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
#pragma unroll
  for (int k = 0; k < 96; ++k) acc[k] = in[i + k * n];
  float s = 0.f;
#pragma unroll
  for (int r = 0; r < 6; ++r) {
#pragma unroll
    for (int k = 0; k < 96; ++k) s += acc[k] * acc[(k * 5 + r) % 96];
#pragma unroll
    for (int k = 0; k < 96; ++k) acc[k] = acc[k] * s + 1.f;
  }
  out[i] = s + acc[7];
}`;

function registers(name: string, bound: string): number {
  const file = join(dir, `${name}.cu`);
  writeFileSync(file, src(bound));
  const r = spawnSync('nvcc', ['-arch=sm_80', '-c', file, '-o', join(dir, `${name}.o`), '-Xptxas', '-v'], { encoding: 'utf8', timeout: 120_000 });
  expect(r.status, r.stderr).toBe(0);
  const m = /Used (\d+) registers/.exec(r.stderr);
  expect(m, r.stderr).not.toBeNull();
  return Number(m![1]);
}

describe('nvcc: what __launch_bounds__ changes', () => {
  it.skipIf(!hasNvcc)('caps registers only above 256 threads', () => {
    const none = registers('none', '');
    // Not budgeted for 1,024 threads: more than 65,536 / 1,024 = 64 registers.
    expect(none).toBeGreaterThan(64);
    // 256 threads: a cap of 65,536 / 256 = 256, above what a thread can use, so no cap applies.
    expect(registers('b256', '__launch_bounds__(256)')).toBeGreaterThan(128);
    // 512 threads: at most 128; 1,024 threads: at most 64.
    expect(registers('b512', '__launch_bounds__(512)')).toBeLessThanOrEqual(128);
    expect(registers('b1024', '__launch_bounds__(1024)')).toBeLessThanOrEqual(64);
  });
});

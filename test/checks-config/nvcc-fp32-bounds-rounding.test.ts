import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

/**
 * The claim behind `precision/nonconservative-fp32-bounds`: `(float)d`, `static_cast<float>(d)` and an
 * implicit double→float store all compile to round-to-nearest (`cvt.rn.f32.f64`), while
 * `__double2float_rd` / `__double2float_ru` round toward −∞ / +∞ (`cvt.rm` / `cvt.rp`), which is
 * what keeps an fp32 box around its fp64 one (003 §6.3). Skipped when nvcc is not installed.
 */
const hasNvcc = spawnSync('nvcc', ['--version'], { encoding: 'utf8' }).status === 0;
const dir = hasNvcc ? mkdtempSync(join(tmpdir(), 'gpu-review-bounds-')) : '';
afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function ptx(body: string): string {
  const file = join(dir, 'k.cu');
  writeFileSync(file, `extern "C" __global__ void k(const double* x, float* out) { ${body} }\n`);
  const r = spawnSync('nvcc', ['-arch=sm_80', '-ptx', file, '-o', join(dir, 'k.ptx')], { encoding: 'utf8', timeout: 120_000 });
  expect(r.status, r.stderr).toBe(0);
  return readFileSync(join(dir, 'k.ptx'), 'utf8');
}

describe('fp64 → fp32 rounding of bounds (nvcc)', () => {
  it.skipIf(!hasNvcc)('C casts and implicit stores round to nearest', () => {
    for (const body of ['out[0] = (float)x[0];', 'out[0] = static_cast<float>(x[0]);', 'out[0] = x[0];', 'out[0] = __double2float_rn(x[0]);']) {
      expect(ptx(body)).toMatch(/cvt\.rn\.f32\.f64/);
    }
  });
  it.skipIf(!hasNvcc)('__double2float_rd / _ru round down / up', () => {
    expect(ptx('out[0] = __double2float_rd(x[0]);')).toMatch(/cvt\.rm\.f32\.f64/);
    expect(ptx('out[0] = __double2float_ru(x[0]);')).toMatch(/cvt\.rp\.f32\.f64/);
  });
});

import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

/**
 * The claim behind `precision/fast-math-in-precision-critical`: `--use_fast_math` changes fp32 results —
 * IEEE division and square root (`div.rn.f32`, `sqrt.rn.f32`) become approximate and flush denormals
 * (`div.approx.ftz.f32`, `sqrt.approx.ftz.f32`), and `--prec-div=false` / `--prec-sqrt=false` / `--ftz=true`
 * each change their part (003 §7.4). fp64 division and sqrt stay round-to-nearest. Skipped when nvcc is absent.
 */
const hasNvcc = spawnSync('nvcc', ['--version'], { encoding: 'utf8' }).status === 0;
const dir = hasNvcc ? mkdtempSync(join(tmpdir(), 'gpu-review-fastmath-')) : '';
afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function ptx(flags: string[]): string {
  const file = join(dir, 'k.cu');
  writeFileSync(
    file,
    'extern "C" __global__ void k(const float* x, const float* y, float* out, const double* dx, const double* dy, double* dout) {\n' +
      '  out[0] = x[0] / y[0]; out[1] = sqrtf(x[1]); dout[0] = dx[0] / dy[0]; dout[1] = sqrt(dx[1]);\n}\n',
  );
  const r = spawnSync('nvcc', ['-arch=sm_80', '-ptx', ...flags, file, '-o', join(dir, 'k.ptx')], { encoding: 'utf8', timeout: 120_000 });
  expect(r.status, r.stderr).toBe(0);
  return readFileSync(join(dir, 'k.ptx'), 'utf8');
}

describe('fast-math compile flags (nvcc)', () => {
  it.skipIf(!hasNvcc)('default build uses IEEE fp32 division and sqrt', () => {
    const p = ptx([]);
    expect(p).toMatch(/div\.rn\.f32/);
    expect(p).toMatch(/sqrt\.rn\.f32/);
  });
  it.skipIf(!hasNvcc)('--use_fast_math makes fp32 div/sqrt approximate and flushes denormals; fp64 unchanged', () => {
    const p = ptx(['--use_fast_math']);
    expect(p).toMatch(/div\.approx\.ftz\.f32/);
    expect(p).toMatch(/sqrt\.approx\.ftz\.f32/);
    expect(p).not.toMatch(/div\.rn\.f32/);
    expect(p).toMatch(/div\.rn\.f64/);
    expect(p).toMatch(/sqrt\.rn\.f64/);
  });
  it.skipIf(!hasNvcc)('--prec-div=false, --prec-sqrt=false and --ftz=true each change fp32 code', () => {
    expect(ptx(['--prec-div=false'])).not.toMatch(/div\.rn\.f32/);
    expect(ptx(['--prec-sqrt=false'])).toMatch(/sqrt\.approx\.f32/);
    expect(ptx(['--ftz=true'])).toMatch(/div\.rn\.ftz\.f32/);
  });
});

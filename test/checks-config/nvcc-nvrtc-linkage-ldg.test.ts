import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

/**
 * The compiler facts behind nvrtc/missing-const-restrict and nvrtc/missing-extern-c:
 * - loads go through the read-only data cache (`ld.global.nc`) when the pointer is `__restrict__` and
 *   never written (with or without `const`); `const` alone keeps plain `ld.global`;
 * - without `extern "C"` a kernel's entry symbol is C++-mangled (`_Z…`), so a lookup by plain name
 *   (`cuModuleGetFunction(mod, "simplify")`) cannot find it.
 * Skipped when nvcc is not installed.
 */
const hasNvcc = spawnSync('nvcc', ['--version'], { encoding: 'utf8' }).status === 0;
const dir = hasNvcc ? mkdtempSync(join(tmpdir(), 'gpu-review-nvcc-ldg-')) : '';
afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function ptx(name: string, src: string): string {
  const file = join(dir, `${name}.cu`);
  const out = join(dir, `${name}.ptx`);
  writeFileSync(file, src);
  const r = spawnSync('nvcc', ['-arch=sm_80', '-ptx', file, '-o', out], { encoding: 'utf8', timeout: 120_000 });
  expect(r.status, r.stderr).toBe(0);
  return readFileSync(out, 'utf8');
}

const kernel = (x: string, y: string) => `extern "C" __global__ void area(${x} x, ${y} y, double* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) out[i] = x[i] * y[i]; }`;

describe('nvcc: read-only path and linkage', () => {
  it.skipIf(!hasNvcc)('uses ld.global.nc for read-only __restrict__ pointers, not for const alone', () => {
    expect(ptx('plain', kernel('double*', 'double*'))).not.toMatch(/ld\.global\.nc/);
    expect(ptx('const_only', kernel('const double*', 'const double*'))).not.toMatch(/ld\.global\.nc/);
    // A never-written `T* __restrict__` is proven read-only: the rule does not ask for `const` there.
    expect(ptx('restrict_only', kernel('double* __restrict__', 'double* __restrict__'))).toMatch(/ld\.global\.nc\.f64/);
    expect(ptx('both', kernel('const double* __restrict__', 'const double* __restrict__'))).toMatch(/ld\.global\.nc\.f64/);
  });

  it.skipIf(!hasNvcc)('mangles kernel names without extern "C"', () => {
    const cxx = ptx('cxx', '__global__ void simplify(const double* x, int n) {}');
    expect(cxx).toMatch(/\.entry _Z8simplifyPKdi/);
    expect(cxx).not.toMatch(/\.entry simplify\(/);
    expect(ptx('c', 'extern "C" __global__ void simplify(const double* x, int n) {}')).toMatch(/\.entry simplify\(/);
  });
});

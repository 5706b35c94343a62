/**
 * Compiler evidence (src/compile/): the figures are ptxas' own, base against head, for the
 * configured targets, and a unit that cannot or must not be compiled is skipped with a reason that
 * quotes no compiler text. The nvcc tests run where nvcc is installed (CI) and are skipped elsewhere.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { occupancy } from '../../src/analysis/occupancy.js';
import { GPU_TABLE } from '../../src/config/gpus.js';
import { parseUnifiedDiff } from '../../src/diff/model.js';
import type { CompileReport } from '../../src/compile/evidence.js';
import { kernelStrings } from '../../src/compile/evidence.js';
import { runLimited } from '../../src/compile/nvcc.js';
import { baseName, parsePtxas, signature } from '../../src/compile/ptxas.js';
import { collectUnit, reversePatch, scanIncludes } from '../../src/compile/units.js';
import { review } from '../../src/review/pipeline.js';
import { cleanupTmp, TmpRepo } from '../diff/tmp-git.js';
import { config, hasNvcc } from '../helpers.js';

afterAll(() => cleanupTmp());

describe('ptxas output', () => {
  // Written for this test in the shape nvcc 12/13 print with --resource-usage.
  const sample = [
    "ptxas info    : 0 bytes gmem, 48 bytes cmem[3]",
    "ptxas info    : Compiling entry function '_ZN3img6detail9blur_rowsILi5EEEvPKfPfi' for 'sm_80'",
    'ptxas info    : Function properties for _ZN3img6detail9blur_rowsILi5EEEvPKfPfi',
    '    16 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads',
    'ptxas info    : Used 40 registers, used 1 barriers, 2048 bytes smem, 380 bytes cmem[0], 16 bytes cmem[2]',
    'ptxas info    : Function properties for _Z6helperf',
    '    64 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads',
    "ptxas info    : Compiling entry function 'plain_c' for 'sm_90'",
    'ptxas info    : Function properties for plain_c',
    '    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads',
    'ptxas info    : Used 9 registers, used 0 barriers',
  ].join('\n');

  it('reads registers, spills, stack, smem and constant banks per entry function and arch', () => {
    const r = parsePtxas(sample);
    expect(r.kernels).toEqual([
      { mangled: '_ZN3img6detail9blur_rowsILi5EEEvPKfPfi', arch: 'sm_80', registers: 40, barriers: 1, stackFrame: 16, spillStores: 8, spillLoads: 12, smem: 2048, cmem: 396 },
      { mangled: 'plain_c', arch: 'sm_90', registers: 9, barriers: 0, stackFrame: 0, spillStores: 0, spillLoads: 0, smem: 0, cmem: 0 },
    ]);
    expect(r.moduleCmem.get('sm_80')).toBe(48);
  });

  it('a device function\'s own properties do not overwrite the kernel\'s', () => {
    expect(parsePtxas(sample).kernels[0].stackFrame).toBe(16);
  });

  it('names kernels from mangled and demangled spellings', () => {
    expect(baseName('_ZN3img6detail9blur_rowsILi5EEEvPKfPfi')).toBe('blur_rows');
    expect(baseName('_Z13smooth_kernelPKfPfi')).toBe('smooth_kernel');
    expect(baseName('plain_c')).toBe('plain_c');
    expect(baseName('void img::detail::blur_rows<5>(float const*, float*, int)')).toBe('blur_rows');
    expect(signature('void img::detail::blur_rows<5>(float const*, float*, int)')).toBe('img::detail::blur_rows<5>(float const*, float*, int)');
  });
});

describe('units', () => {
  it('rebuilds the pre-change file from the post-change file and the diff', () => {
    const base = ['a', 'b', 'c', 'd', 'e', 'f'].join('\n') + '\n';
    const head = ['a', 'B', 'c', 'x', 'y', 'e', 'f'].join('\n') + '\n';
    const dir = mkdtempSync(join(tmpdir(), 'compile-rp-'));
    try {
      writeFileSync(join(dir, 'a'), base);
      writeFileSync(join(dir, 'b'), head);
      let diff = '';
      try {
        execFileSync('git', ['diff', '--no-index', '--no-color', 'a', 'b'], { cwd: dir, encoding: 'utf8' });
      } catch (e) {
        diff = String((e as { stdout: string }).stdout);
      }
      const file = parseUnifiedDiff(diff).files[0];
      expect(reversePatch(head, file)).toBe(base);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('finds quoted, angle and computed includes, not those in comments', () => {
    const inc = scanIncludes('#include "a.cuh"\n  # include <b/c.h>\n/* #include "no.h" */\n#include KERNEL_HEADER\n');
    expect(inc).toEqual([
      { quoted: true, name: 'a.cuh', line: 1 },
      { quoted: false, name: 'b/c.h', line: 2 },
      { computed: true, line: 4 },
    ]);
  });

  const files: Record<string, string> = {
    'src/k.cu': '#include "../include/p.cuh"\n#include <cuda_runtime.h>\n',
    'include/p.cuh': '#include "q.cuh"\n',
    'include/q.cuh': '#define Q 1\n',
  };
  const read = async (p: string) => files[p] ?? null;

  it('collects the included files of the repository, leaving toolkit headers to nvcc', async () => {
    const u = await collectUnit('src/k.cu', files['src/k.cu'], read, ['.']);
    expect(u.skipped).toBeUndefined();
    expect([...u.files.keys()].sort()).toEqual(['include/p.cuh', 'include/q.cuh', 'src/k.cu']);
  });

  it('skips a unit whose include escapes the repository, is absolute, or is computed', async () => {
    expect((await collectUnit('src/k.cu', '#include "../../secrets.h"\n', read, ['.'])).skipped).toMatch(/escapes the repository/);
    expect((await collectUnit('src/k.cu', '#include "/etc/hostname"\n', read, ['.'])).skipped).toMatch(/absolute path/);
    expect((await collectUnit('src/k.cu', '#include <../../../../etc/hostname>\n', read, ['.'])).skipped).toMatch(/escapes the repository/);
    expect((await collectUnit('src/k.cu', '#define H "x.h"\n#include H\n', read, ['.'])).skipped).toMatch(/computed #include/);
  });

  it('fills .format parameters of a kernel string when they are literals, and says which is not', () => {
    const py = 'src = """\n__global__ void k(float* x) {{ x[threadIdx.x] = {SCALE}; }}\n"""\nm = cp.RawModule(code=src.format(SCALE=2.5))\n';
    expect(kernelStrings(py)[0].text).toContain('x[threadIdx.x] = 2.5;');
    const dyn = py.replace('SCALE=2.5', 'SCALE=scale');
    expect(kernelStrings(dyn)[0].unresolved).toBe('SCALE');
  });
});

describe('process limits', () => {
  it('kills the whole process group at the time limit', async () => {
    const r = await runLimited('/bin/sh', ['-c', 'sleep 30 & sleep 30; wait'], { cwd: tmpdir(), timeoutMs: 300, memoryMb: 1024 });
    expect(r.timedOut).toBe(true);
    expect(r.pid).not.toBeNull();
    // The group is gone: signalling it fails once init has reaped the killed members.
    let alive = true;
    for (let i = 0; i < 100 && alive; i++) {
      try {
        process.kill(-r.pid!, 0);
        await new Promise((res) => setTimeout(res, 50));
      } catch {
        alive = false;
      }
    }
    expect(alive).toBe(false);
  });
});

/** ptxas figures read with the test's own pattern, from nvcc run by hand on one file for one arch. */
function byHand(dir: string, file: string, arch: string, extra: string[] = []): Map<string, { regs: number; spills: number; smem: number }> {
  const text = execFileSync('sh', ['-c', `nvcc -cubin -arch=${arch} -Xptxas -v ${extra.join(' ')} -o /dev/null ${file} 2>&1`], { cwd: dir, encoding: 'utf8' });
  const m = new Map<string, { regs: number; spills: number; smem: number }>();
  let name = '';
  let spills = 0;
  for (const line of text.split('\n')) {
    const e = /Compiling entry function '([^']+)'/.exec(line);
    if (e) name = e[1];
    const s = /(\d+) bytes spill stores, (\d+) bytes spill loads/.exec(line);
    if (s) spills = Number(s[1]) + Number(s[2]);
    const u = /Used (\d+) registers.*?(?:(\d+) bytes smem)?/.exec(line);
    if (u && name) m.set(name, { regs: Number(u[1]), spills, smem: Number(/(\d+) bytes smem/.exec(line)?.[1] ?? 0) });
  }
  return m;
}

const WINDOW = (taps: number, bound: string) => `#include "../include/taps.cuh"

__global__ void ${bound} window_kernel(const float* __restrict__ in, float* out, int n) {
  __shared__ float tile[256];
  float acc[${taps}];
#pragma unroll
  for (int i = 0; i < ${taps}; ++i) acc[i] = in[(threadIdx.x + i * STRIDE) % n];
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < ${taps}; ++i) s += acc[(i * 3) % ${taps}] * acc[i];
  tile[threadIdx.x] = s;
  __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = tile[255 - threadIdx.x];
}

__global__ void scale(float* x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a;
}

void run(const float* in, float* out, float* x, int n) {
  window_kernel<<<(n + 255) / 256, 256>>>(in, out, n);
  scale<<<(n + 127) / 128, 128>>>(x, 2.f, n);
}
`;

function gitReader(repo: TmpRepo, rev: string) {
  return async (p: string) => {
    try {
      return repo.gitRaw('show', `${rev}:${p}`);
    } catch {
      return null;
    }
  };
}

async function reviewRange(repo: TmpRepo, raw: Record<string, unknown> = {}) {
  const diff = repo.git('diff', '--no-color', 'HEAD~1', 'HEAD');
  const cfg = config({ targets: ['A100', 'RTX 3090'], ...raw });
  const out = await review({ diff, config: cfg, scope: 'file', readFile: gitReader(repo, 'HEAD'), compile: { settings: cfg.compile, listFiles: async () => repo.git('ls-tree', '-r', '--name-only', 'HEAD').split('\n').filter(Boolean) } });
  return { out, report: out.result.compile as CompileReport };
}

describe.skipIf(!hasNvcc)('nvcc evidence, base against head', () => {
  const repo = new TmpRepo();
  repo.write('include/taps.cuh', '#pragma once\n#define STRIDE 7\n').write('src/window.cu', WINDOW(8, '')).commit('base');
  repo.write('src/window.cu', WINDOW(128, '__launch_bounds__(256, 8)')).commit('head');

  it('reports the changed kernel with the figures nvcc -Xptxas -v gives by hand, and the spill rule fires', async () => {
    const { out, report } = await reviewRange(repo);
    expect(report.unavailable).toBeUndefined();
    expect(report.units.filter((u) => u.skipped)).toEqual([]);
    const ev = report.kernels.find((k) => k.name === 'window_kernel')!;
    expect(ev).toBeDefined();
    expect(ev).toMatchObject({ path: 'src/window.cu', line: 3, status: 'changed', touched: true });

    // By hand: the same unit at each side, in a directory of its own.
    const dir = mkdtempSync(join(tmpdir(), 'compile-hand-'));
    try {
      execFileSync('sh', ['-c', `mkdir -p src include && git -C ${repo.dir} show HEAD~1:src/window.cu > src/base.cu && git -C ${repo.dir} show HEAD:src/window.cu > src/head.cu && git -C ${repo.dir} show HEAD:include/taps.cuh > include/taps.cuh`], { cwd: dir });
      for (const arch of ['sm_80', 'sm_86']) {
        const b = byHand(dir, 'src/base.cu', arch).get('_Z13window_kernelPKfPfi')!;
        const h = byHand(dir, 'src/head.cu', arch).get('_Z13window_kernelPKfPfi')!;
        const a = ev.arches.find((x) => x.arch === arch)!;
        expect([a.base!.registers, a.head!.registers]).toEqual([b.regs, h.regs]);
        expect([a.base!.spillStores + a.base!.spillLoads, a.head!.spillStores + a.head!.spillLoads]).toEqual([b.spills, h.spills]);
        expect([a.base!.smem, a.head!.smem]).toEqual([b.smem, h.smem]);
        expect(h.smem).toBe(1024);
        // The comment quotes exactly these figures.
        const change = (x: number, y: number, unit = '') => (x === y ? `${y}${unit}` : `${x} → ${y}${unit}`);
        expect(ev.text).toContain(`registers ${change(b.regs, h.regs)}`);
        expect(ev.text).toContain(`spills ${change(b.spills, h.spills, ' B')}`);
      }
      const spilled = ev.arches.find((x) => x.arch === 'sm_80')!.head!;
      expect(spilled.registers).toBeLessThanOrEqual(32);
      expect(spilled.spillStores).toBeGreaterThan(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }

    // Occupancy at the launch's 256 threads, from the occupancy model with ptxas' registers and smem.
    for (const o of ev.occupancy) {
      const gpu = Object.values(GPU_TABLE).find((g) => g.name === o.gpu)!;
      const a = ev.arches.find((x) => x.arch === `sm_${gpu.cc.replace('.', '')}`)!;
      expect(o.threads).toBe(256);
      expect(o.head).toBe(occupancy(gpu, { threadsPerBlock: 256, regsPerThread: a.head!.registers, smemPerBlock: a.head!.smem }).occupancy);
    }
    // A100, 256 threads, ≤ 32 registers, 1 KiB smem: 8 blocks × 8 warps = all 64 warps.
    expect(ev.occupancy.find((o) => o.gpu === 'A100')!.head).toBe(1);
    expect(ev.text).toMatch(/occupancy on A100 at 256 threads/);

    // The kernel the change did not touch and that compiles the same is not reported.
    expect(report.kernels.some((k) => k.name === 'scale')).toBe(false);
    const spill = out.result.findings.filter((f) => f.ruleId === 'kernel/spill-introduced');
    expect(spill.map((f) => f.line)).toEqual([3]);
    expect(spill[0].message).toContain(ev.text);
  });

  it('a changed header brings in the units that include it', async () => {
    const r2 = new TmpRepo();
    r2.write('include/taps.cuh', '#pragma once\n#define STRIDE 7\n').write('src/window.cu', WINDOW(16, '')).commit('base');
    r2.write('include/taps.cuh', '#pragma once\n#define STRIDE (7 * n / 3)\n').commit('head');
    const { report } = await reviewRange(r2);
    expect(report.units.map((u) => `${u.unit} ${u.side}`)).toEqual(['src/window.cu base', 'src/window.cu head']);
    const ev = report.kernels.find((k) => k.name === 'window_kernel');
    expect(ev?.status).toBe('changed');
  });

  it('an include that escapes the repository: the unit is skipped with the reason', async () => {
    const r = new TmpRepo();
    r.write('src/a.cu', '__global__ void k(float* x) { x[0] = 1.f; }\n').commit('base');
    r.write('src/a.cu', '#include "../../outside.cuh"\n__global__ void k(float* x) { x[0] = 2.f; }\n').commit('head');
    const { report } = await reviewRange(r);
    const head = report.units.find((u) => u.side === 'head')!;
    expect(head.skipped).toMatch(/^#include "\.\.\/\.\.\/outside\.cuh" at src\/a\.cu:1 escapes the repository$/);
    expect(report.units.find((u) => u.side === 'base')!.skipped).toBeUndefined();
    expect(report.kernels).toEqual([]);
  });

  it('a unit that does not compile is skipped with the first error\'s location only', async () => {
    const r = new TmpRepo();
    r.write('src/a.cu', '__global__ void k(float* x) { x[0] = 1.f; }\n').commit('base');
    r.write('src/a.cu', '__global__ void k(float* x) {\n  x[0] = secret_token_value;\n}\n').commit('head');
    const { out, report } = await reviewRange(r);
    const head = report.units.find((u) => u.side === 'head')!;
    expect(head.skipped).toBe('does not compile: first error at src/a.cu:2');
    expect(JSON.stringify(out.result)).not.toContain('secret_token_value is undefined');
    expect(JSON.stringify(report)).not.toMatch(/identifier|undefined"/);
  });

  it('a unit past the time limit is skipped, the review goes on', async () => {
    const { report } = await reviewRange(repo, { compile: { timeout_ms: 1 } });
    expect(report.units.length).toBe(2);
    for (const u of report.units) expect(u.skipped).toBe('compile exceeded 1 ms');
    expect(report.kernels).toEqual([]);
  });

  it('a unit past the memory limit is skipped, the review goes on', async () => {
    const { report } = await reviewRange(repo, { compile: { memory_mb: 64 } });
    expect(report.units.length).toBe(2);
    for (const u of report.units) expect(u.skipped).toBe('compile exceeded the memory limit (64 MB)');
  });

  it('the review-wide budget stops further units', async () => {
    const { report } = await reviewRange(repo, { compile: { review_timeout_ms: 1 } });
    expect(report.units.some((u) => /compile time budget of the review/.test(u.skipped ?? '') || /exceeded 1 ms/.test(u.skipped ?? ''))).toBe(true);
  });

  it('a .format-ed kernel string is compiled with its parameters, base against head', async () => {
    const r = new TmpRepo();
    const py = (taps: number, bound: string) => `import cupy as cp

_SRC = r"""
extern "C" __global__ void ${bound} win(const float* __restrict__ in, float* out, int n) {{
  float acc[{TAPS}];
#pragma unroll
  for (int i = 0; i < {TAPS}; ++i) acc[i] = in[(threadIdx.x + i * 7) % n];
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < {TAPS}; ++i) s += acc[(i * 3) % {TAPS}] * acc[i];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}}
"""

_mod = cp.RawModule(code=_SRC.format(TAPS=${taps}))


def run(d_in, d_out, n):
    _mod.get_function("win")(((n + 255) // 256,), (256,), (d_in, d_out, cp.int32(n)))
`;
    r.write('pkg/win.py', py(8, '')).commit('base');
    r.write('pkg/win.py', py(128, '__launch_bounds__(256, 8)')).commit('head');
    const { out, report } = await reviewRange(r);
    const ev = report.kernels.find((k) => k.name === 'win')!;
    expect(ev).toMatchObject({ path: 'pkg/win.py', line: 4, unit: 'pkg/win.py#1', status: 'changed' });
    expect(ev.occupancy[0]).toMatchObject({ gpu: 'A100', threads: 256 });
    const a = ev.arches.find((x) => x.arch === 'sm_80')!;
    expect(a.head!.spillStores).toBeGreaterThan(a.base!.spillStores);
    expect(out.result.findings.some((f) => f.ruleId === 'kernel/spill-introduced' && f.path === 'pkg/win.py' && f.line === 4)).toBe(true);
  });

  it('withdraws a register-pressure finding the compiler contradicts, and lists it', async () => {
    const r = new TmpRepo();
    const doubles = Array.from({ length: 16 }, (_, i) => `  double d${i} = x[${i}];`).join('\n');
    r.write('src/p.cu', '__global__ void k(double* x) { x[0] = 1.0; }\n').commit('base');
    r.write('src/p.cu', `__global__ void k(double* x) {\n${doubles}\n  x[0] = d0 + d15;\n}\n`).commit('head');
    const without = await review({ diff: r.git('diff', 'HEAD~1', 'HEAD'), config: config({ targets: ['A100'] }), scope: 'file', readFile: gitReader(r, 'HEAD') });
    expect(without.result.findings.some((f) => f.ruleId === 'kernel/register-pressure')).toBe(true);
    const { out, report } = await reviewRange(r, { targets: ['A100'] });
    expect(out.result.findings.some((f) => f.ruleId === 'kernel/register-pressure')).toBe(false);
    expect(report.silenced).toEqual([expect.objectContaining({ ruleId: 'kernel/register-pressure', path: 'src/p.cu', line: 1 })]);
    expect(report.silenced[0].reason).toMatch(/registers\/thread with no spills/);
  });
});

describe('configuration and availability', () => {
  it('rejects include dirs outside the repository and bad defines, naming the key', async () => {
    const { resolveConfig, ConfigError } = await import('../../src/config/schema.js');
    expect(() => resolveConfig({ compile: { include_dirs: ['../sdk'] } }, [])).toThrow(/"compile.include_dirs" entry "\.\.\/sdk" is outside the repository/);
    expect(() => resolveConfig({ compile: { include_dirs: ['/usr/include'] } }, [])).toThrow(ConfigError);
    expect(() => resolveConfig({ compile: { defines: ['A B'] } }, [])).toThrow(/compile\.defines\.0/);
    expect(() => resolveConfig({ compile: { nvcc_path: 'x' } }, [])).toThrow(/unknown key "nvcc_path" in "compile"/);
    expect(resolveConfig({}, []).compile).toEqual({ enabled: false, nvcc: 'nvcc', includeDirs: ['.'], defines: [], std: 'c++17', timeoutMs: 120_000, memoryMb: 8192, reviewTimeoutMs: 600_000 });
  });

  it('without a runnable nvcc the review goes on and says compilation was unavailable', async () => {
    const cfg = config({ compile: { nvcc: '/nonexistent/nvcc' } });
    const text = '__global__ void k(float* x) { x[0] = 1.f; }\n';
    const diff = `diff --git a/src/a.cu b/src/a.cu\nnew file mode 100644\n--- /dev/null\n+++ b/src/a.cu\n@@ -0,0 +1 @@\n+${text}`;
    const out = await review({ diff, config: cfg, compile: { settings: cfg.compile } });
    expect(out.result.compile?.unavailable).toBe('nvcc not found or not runnable (/nonexistent/nvcc)');
    expect(out.result.compile?.kernels).toEqual([]);
    expect(out.result.files[0].skipped).toBeUndefined();
  });
});

describe.skipIf(!hasNvcc)('CLI --compile', () => {
  it('reviews a git range with --compile and puts the figures in json, text and markdown', async () => {
    const { spawnSync } = await import('node:child_process');
    const { GIT_ENV } = await import('../diff/tmp-git.js');
    const cli = join(import.meta.dirname, '..', '..', 'dist', 'src', 'cli.js');
    const r = new TmpRepo();
    r.write('include/taps.cuh', '#pragma once\n#define STRIDE 7\n').write('src/window.cu', WINDOW(8, '')).commit('base');
    r.write('src/window.cu', WINDOW(128, '__launch_bounds__(256, 8)')).commit('head');
    r.write('.github/gpu-review.yml', 'targets: [A100]\n');
    const run = (format: string) => spawnSync(process.execPath, [cli, 'review', '--git', 'HEAD~1..HEAD', '--repo', r.dir, '--compile', '--fail-on', 'none', '--format', format], { encoding: 'utf8', env: { ...GIT_ENV, NO_COLOR: '1' } });
    const json = run('json');
    expect(json.status).toBe(0);
    const doc = JSON.parse(json.stdout) as { compile: CompileReport; findings: Array<{ ruleId: string }> };
    expect(doc.compile.arches).toEqual(['sm_80']);
    expect(doc.compile.kernels.map((k) => k.name)).toEqual(['window_kernel']);
    expect(doc.findings.some((f) => f.ruleId === 'kernel/spill-introduced')).toBe(true);
    const md = run('markdown');
    expect(md.stdout).toContain('### Compiler evidence');
    expect(md.stdout).toContain(doc.compile.kernels[0].text);
    expect(run('text').stdout).toContain('compiler evidence:');
    // Without --compile nothing is compiled and the compiler rule stays silent.
    const plain = spawnSync(process.execPath, [cli, 'review', '--git', 'HEAD~1..HEAD', '--repo', r.dir, '--fail-on', 'none', '--format', 'json'], { encoding: 'utf8', env: GIT_ENV });
    const p = JSON.parse(plain.stdout) as { compile?: unknown; findings: Array<{ ruleId: string }> };
    expect(p.compile).toBeUndefined();
    expect(p.findings.some((f) => f.ruleId === 'kernel/spill-introduced')).toBe(false);
  });
});

describe('occupancy from compiler figures', () => {
  it('matches the occupancy calculator for register-limited blocks, base against head', async () => {
    const { occupancyFigures } = await import('../../src/compile/evidence.js');
    const fig = (registers: number) => ({ registers, barriers: 0, stackFrame: 0, spillStores: 0, spillLoads: 0, smem: 0, cmem: 0 });
    const site = { path: 'a.cu', line: 1, endLine: 2, touched: true, threads: 256, dynSmem: 0 };
    const occ = occupancyFigures([GPU_TABLE.A100, GPU_TABLE['RTX 3090']], [
      { arch: 'sm_80', base: fig(32), head: fig(72) },
      { arch: 'sm_86', base: fig(32), head: fig(48) },
    ], site, site);
    // A100: 72 registers → 2,304 per warp → 28 warps by registers → 3 blocks of 8 warps = 24 of 64.
    // RTX 3090: 48 registers → 1,536 per warp → 42 warps → 5 blocks = 40 of 48. 32 registers: full.
    expect(occ).toEqual([
      { gpu: 'A100', threads: 256, base: 1, head: 0.375, limiter: 'registers' },
      { gpu: 'RTX 3090', threads: 256, base: 1, head: 40 / 48, limiter: 'registers' },
    ]);
  });
});

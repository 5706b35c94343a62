/**
 * Hostile input through the built CLI (issue 16): every case an earlier probe found, each one
 * reviewed to an exit code of 0/1/2, a one-line error at most, and no file's findings lost.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { cleanupTmp, GIT_ENV, TmpRepo } from '../diff/tmp-git.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const CLI = join(ROOT, 'dist', 'src', 'cli.js');

function cli(args: string[], opts: { input?: string; cwd?: string } = {}) {
  const r = spawnSync(process.execPath, [CLI, ...args], { cwd: opts.cwd ?? ROOT, input: opts.input ?? '', timeout: 120_000, env: { ...GIT_ENV, NO_COLOR: '1' }, maxBuffer: 1 << 28 });
  return { status: r.status, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
}

afterAll(() => cleanupTmp());

/** A CUDA file with a high finding (sync/… per launch in a loop) and a low one. */
const KERNEL = [
  '__global__ void k(float* a, int n) {',
  '  int i = blockIdx.x * blockDim.x + threadIdx.x;',
  '  if (i < n) a[i] = a[i] * 2.0f;',
  '}',
  'void run(float* a, int n) { for (int r = 0; r < n; r++) { k<<<n, 32>>>(a, n); cudaDeviceSynchronize(); } }',
];
function added(path: string, lines: string[]): string {
  return [`diff --git a/${path} b/${path}`, 'new file mode 100644', '--- /dev/null', `+++ b/${path}`, `@@ -0,0 +1,${lines.length} @@`, ...lines.map((l) => '+' + l)].join('\n') + '\n';
}
const GOOD = added('b.cu', KERNEL);

function json(args: string[], input: string) {
  const r = cli(['review', '--format', 'json', ...args, '-'], { input });
  expect(r.stderr).not.toMatch(/\n\s+at /);
  return { ...r, out: r.stdout ? (JSON.parse(r.stdout) as { findings: Array<{ path: string; ruleId: string }>; files: Array<{ path: string; skipped?: string }> }) : null };
}

describe('diffs that used to lose findings', () => {
  const goodFindings = json([], GOOD).out!.findings.map((f) => f.ruleId);
  it('the reference file has findings', () => expect(goodFindings.length).toBeGreaterThan(0));

  it('"\\ No newline at end of file" right after "@@" costs no other file its findings', () => {
    const bad = 'diff --git a/a.cu b/a.cu\n--- a/a.cu\n+++ b/a.cu\n@@ -1 +1 @@\n\\ No newline at end of file\n-x\n+y\n';
    const r = json([], bad + GOOD);
    expect([0, 1]).toContain(r.status);
    expect(r.out!.findings.filter((f) => f.path === 'b.cu').map((f) => f.ruleId)).toEqual(goodFindings);
  });

  it('without "diff --git", a truncated hunk does not swallow the next file', () => {
    const trunc = '--- a/a.cu\n+++ b/a.cu\n@@ -1,5 +1,6 @@\n x\n+y\n' + GOOD.split('\n').slice(2).join('\n');
    const r = json(['--fail-on', 'high'], trunc);
    expect(r.status).toBe(1);
    expect(r.out!.files.find((f) => f.path === 'a.cu')?.skipped).toMatch(/truncated or malformed hunk/);
    expect(r.out!.findings.filter((f) => f.path === 'b.cu').map((f) => f.ruleId)).toEqual(goodFindings);
  });

  it('CR-only line endings are read as lines, not as "all files deleted"', () => {
    const r = json([], GOOD.replace(/\n/g, '\r'));
    expect(r.out!.findings.map((f) => f.ruleId)).toEqual(goodFindings);
  });

  it('a nine-line .cu file shaped for the old backtracking (50 characters) is reviewed within its file budget', () => {
    // A declarator full of comments next to a run of 50 slashes: spliced unescaped into a pattern it
    // took about 17 minutes; escaped, it is one more file.
    const bt = [
      '__global__ void k(float* p, int n) {',
      `  int s(int ${'/*x*/'.repeat(16)}a) = gridDim.x * blockDim.x;`,
      '  for (int i = 0; i < n; i += 1) {',
      `    p[i] = 0; // += sint ${'/'.repeat(50)}`,
      '  }',
      '}',
      'void go(float* p, int n) {',
      '  k<<<1, 32>>>(p, n);',
      '}',
    ];
    const r = json([], added('bt.cu', bt) + GOOD);
    expect([0, 1]).toContain(r.status);
    const f = r.out!.files.find((x) => x.path === 'bt.cu') as { skipped?: string; timedOut?: boolean; language?: string };
    expect(f.skipped).toBeUndefined();
    expect(f.timedOut).toBeUndefined();
    expect(f.language).toBe('cuda');
    expect(r.out!.findings.filter((x) => x.path === 'b.cu').map((x) => x.ruleId)).toEqual(goodFindings);
  });

  it('a diff that deletes everything says so', () => {
    const r = cli(['review', '-'], { input: 'diff --git a/a.cu b/a.cu\ndeleted file mode 100644\n--- a/a.cu\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-x\n-y\n' });
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('the diff only deletes files (1 file): nothing to review');
  });

  it('a Python concatenation of 2,500 string literals (generated NVRTC source) overflows no stack', () => {
    const lits = Array.from({ length: 2500 }, (_, i) => `    "x${i} " +`);
    const py = ['import cupy as cp', 'SRC = (', ...lits, "    '__global__ void k(float* a) { a[0] = 1.0; }'", ')', "k = cp.RawKernel(SRC, 'k')", 'for i in range(10):', '    k((1,), (256,), (x,))', '    cp.cuda.runtime.deviceSynchronize()'];
    const r = cli(['review', '--format', 'json', '-'], { input: added('gen.py', py) + GOOD });
    const out = JSON.parse(r.stdout) as { findings: Array<{ path: string; ruleId: string }>; errors: Array<{ message: string }>; files: Array<{ path: string; skipped?: string }> };
    expect(out.errors.filter((e) => /call stack/i.test(e.message))).toEqual([]);
    expect(out.files.find((f) => f.path === 'gen.py')?.skipped).toMatch(/nested over \d+ levels deep/);
    expect(out.findings.filter((f) => f.path === 'b.cu').map((f) => f.ruleId)).toEqual(goodFindings);
  });
});

describe('--git and repository files', () => {
  const repo = new TmpRepo();
  repo.write('a.cu', KERNEL.join('\n') + '\n').commit('one');
  repo.write('a.cu', KERNEL.join('\n').replace('2.0f', '3.0f') + '\n').commit('two');
  it('--git=--output=PATH is refused and writes nothing', () => {
    const victim = join(repo.dir, 'victim.txt');
    writeFileSync(victim, 'keep');
    const r = cli(['review', `--git=--output=${victim}`], { cwd: repo.dir });
    expect(r.status).toBe(2);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toContain('not a revision range');
    expect(readFileSync(victim, 'utf8')).toBe('keep');
    expect(cli(['review', `--git`, `HEAD~1..--output=${victim}`], { cwd: repo.dir }).status).toBe(2);
    expect(readFileSync(victim, 'utf8')).toBe('keep');
  });
  it('a plain range still works', () => {
    expect([0, 1]).toContain(cli(['review', '--git', 'HEAD~1..HEAD'], { cwd: repo.dir }).status);
  });
  it('a .github/gpu-review.yml symlink out of the repository is not followed', () => {
    mkdirSync(join(repo.dir, '.github'), { recursive: true });
    const outside = join(dirname(repo.dir), 'hostile-outside.yml');
    writeFileSync(outside, 'fail_on: none\n');
    symlinkSync(outside, join(repo.dir, '.github', 'gpu-review.yml'));
    const r = cli(['review', '--repo', repo.dir, '--git', 'HEAD~1..HEAD'], { cwd: repo.dir });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/symbolic link/);
  });
  it('a FIFO as the repository config is refused, not waited on', () => {
    const p = join(repo.dir, '.github', 'gpu-review.yml');
    spawnSync('rm', ['-f', p]);
    expect(spawnSync('mkfifo', [p]).status).toBe(0);
    expect(existsSync(p)).toBe(true);
    const r = cli(['review', '--repo', repo.dir, '--git', 'HEAD~1..HEAD'], { cwd: repo.dir });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/not a regular file/);
  });
});

/**
 * Adopting gpu-review on an existing codebase (issue #19), on the built CLI: config discovery from
 * the repository root, one-off rule flags, `scan` with .gitignore, baselines, --strict and the
 * one-line skip summary, `--format github`, rdjson byte columns, SARIF for code scanning.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { cleanupTmp, GIT_ENV, tmpDir, TmpRepo } from '../diff/tmp-git.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const CLI = join(ROOT, 'dist', 'src', 'cli.js');
const GET_IN_LOOP = 'host-device/get-in-loop';

/** Asynchronous, so a slow run never blocks the test worker's event loop. */
function run(args: string[], cwd: string, input = ''): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((res, rej) => {
    const child = spawn(process.execPath, [CLI, ...args], { cwd, env: { ...GIT_ENV, NO_COLOR: '1', FORCE_COLOR: undefined }, timeout: 120_000 });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));
    child.on('error', rej);
    child.on('close', (status) => res({ status, stdout, stderr }));
    child.stdin.end(input);
  });
}

/** CuPy code whose loop reads a device value each iteration (get-in-loop), written for these tests. */
function loopy(name: string, pad = 0): string {
  return ['import cupy as cp', '', ...Array(pad).fill('# padding'), '', `def ${name}(d_sizes, n):`, '    out = 0', '    for k in range(n):', '        out += int(d_sizes[k])', '        d_sizes = cp.cumsum(d_sizes)', '    return out', ''].join('\n');
}

function json(stdout: string): any {
  return JSON.parse(stdout);
}

afterAll(() => cleanupTmp());

describe('config discovery and one-off flags', () => {
  it('review --git inside a repository reads <root>/.github/gpu-review.yml; --config overrides it', async () => {
    const repo = new TmpRepo().write('README.md', 'x\n').commit('base');
    repo.write('pkg/a.py', loopy('a')).write('.github/gpu-review.yml', `rules:\n  ${GET_IN_LOOP}: off\n`).commit('change');
    mkdirSync(join(repo.dir, 'pkg', 'deep'), { recursive: true });
    // From a subdirectory, without --repo: the repository root's config still applies.
    const off = (await run(['review', '--git', 'HEAD~1...HEAD', '--format', 'json'], join(repo.dir, 'pkg', 'deep')));
    expect(off.stderr).toBe('');
    expect(json(off.stdout).findings).toEqual([]);
    const other = join(tmpDir('adopt-cfg-'), 'empty.yml');
    writeFileSync(other, '{}\n');
    const on = (await run(['review', '--git', 'HEAD~1...HEAD', '--format', 'json', '--config', other], repo.dir));
    expect(json(on.stdout).findings.map((f: any) => f.ruleId)).toEqual([GET_IN_LOOP]);
    // A diff file reviewed inside the repository reads the same config.
    const diff = repo.lastDiff();
    expect(json((await run(['review', '-', '--format', 'json'], repo.dir, diff)).stdout).findings).toEqual([]);
  });

  it('--select, --ignore, --min-severity, --enable-preview; unknown rules are one-line errors', async () => {
    const dir = tmpDir('adopt-flags-');
    writeFileSync(join(dir, 'a.py'), loopy('a'));
    const all = json((await run(['scan', '--format', 'json'], dir)).stdout).findings;
    expect(all.map((f: any) => f.ruleId)).toContain(GET_IN_LOOP);
    expect(json((await run(['scan', '--format', 'json', '--ignore', 'host-device'], dir)).stdout).findings.filter((f: any) => f.ruleId.startsWith('host-device/'))).toEqual([]);
    const only = json((await run(['scan', '--format', 'json', '--select', GET_IN_LOOP], dir)).stdout).findings;
    expect(new Set(only.map((f: any) => f.ruleId))).toEqual(new Set([GET_IN_LOOP]));
    // get-in-loop is critical: a minimum above it is impossible, "critical" keeps it.
    expect(json((await run(['scan', '--format', 'json', '--min-severity', 'critical'], dir)).stdout).findings.every((f: any) => f.severity === 'critical')).toBe(true);
    const bad = (await run(['scan', '--select', 'no-such/rule'], dir));
    expect(bad.status).toBe(2);
    expect(bad.stderr.trim().split('\n')).toHaveLength(1);
    expect(bad.stderr).toMatch(/^gpu-review: --select: unknown rule or family "no-such\/rule"/);
    const preview = (await run(['scan', '--format', 'json', '--enable-preview'], dir));
    expect(preview.status).not.toBe(2);
  });
});

describe('scan', () => {
  it('reviews the files as they are, leaves git-ignored files out, in a repository and outside one', async () => {
    for (const inGit of [true, false]) {
      const repo = inGit ? new TmpRepo() : null;
      const dir = repo ? repo.dir : tmpDir('adopt-scan-');
      const put = (p: string, t: string) => {
        mkdirSync(dirname(join(dir, p)), { recursive: true });
        writeFileSync(join(dir, p), t);
      };
      put('.gitignore', 'build/\n*.gen.py\n');
      put('src/a.py', loopy('a'));
      put('src/b.gen.py', loopy('b'));
      put('build/c.py', loopy('c'));
      put('third/d.py', loopy('d'));
      put('third/.gitignore', 'd.py\n');
      put('docs/notes.md', '# notes\n');
      put('.github/gpu-review.yml', 'exclude: ["vendor/**"]\n');
      put('vendor/e.py', loopy('e'));
      if (repo) repo.commit('tree');
      // Untracked but not ignored files are scanned too.
      put('src/new.py', loopy('n'));
      const r = (await run(['scan', '--format', 'json'], dir));
      const doc = json(r.stdout);
      const paths = [...new Set(doc.findings.map((f: any) => f.path))].sort();
      expect(paths, inGit ? 'git' : 'walk').toEqual(['src/a.py', 'src/new.py']);
      expect(doc.files.find((f: any) => f.path === 'vendor/e.py')?.skipped).toBe('matched by config "exclude"');
      expect(r.status).toBe(1); // critical findings, default fail_on high
      // A sub-path keeps paths relative to the root (so fingerprints match the App's).
      const sub = json((await run(['scan', 'src', '--format', 'json'], dir)).stdout);
      expect([...new Set(sub.findings.map((f: any) => f.path))].sort()).toEqual(['src/a.py', 'src/new.py']);
    }
  });

  it('a path that does not exist is a one-line error', async () => {
    const r = (await run(['scan', 'nope'], tmpDir('adopt-scan-')));
    expect(r.status).toBe(2);
    expect(r.stderr).toBe('gpu-review: nope: no such file or directory\n');
  });

  it('every format works on a scan', async () => {
    const dir = tmpDir('adopt-fmt-');
    writeFileSync(join(dir, 'a.py'), loopy('a'));
    for (const format of ['text', 'json', 'sarif', 'rdjson', 'markdown', 'github']) {
      const r = (await run(['scan', '--format', format], dir));
      expect(r.status, format).toBe(1);
      expect(r.stdout, format).toContain(format === 'json' || format === 'sarif' || format === 'rdjson' ? GET_IN_LOOP : 'get-in-loop');
    }
  });
});

describe('baseline', () => {
  it('--write-baseline writes a sorted, stable file; --baseline hides exactly those findings', async () => {
    const dir = tmpDir('adopt-base-');
    writeFileSync(join(dir, 'b.py'), loopy('second'));
    writeFileSync(join(dir, 'a.py'), loopy('first'));
    const file = join(dir, 'baseline.json');
    const w = (await run(['scan', '--write-baseline', file], dir));
    expect(w.status).toBe(0);
    expect(w.stdout).toMatch(/wrote \d+ fingerprints? to /);
    const text = readFileSync(file, 'utf8');
    const doc = JSON.parse(text);
    expect(doc.tool).toBe('gpu-review');
    const paths = doc.findings.map((e: any) => e.path);
    expect(paths).toEqual([...paths].sort());
    expect(text.split('\n').filter((l) => l.includes('"fingerprint"'))).toHaveLength(doc.findings.length);
    // Stable: writing again gives the same bytes.
    (await run(['scan', '--write-baseline', file], dir));
    expect(readFileSync(file, 'utf8')).toBe(text);
    // Nothing new: exit 0 and a note; a new finding elsewhere is reported.
    const clean = (await run(['scan', '--baseline', file], dir));
    expect(clean.status).toBe(0);
    expect(clean.stdout).toMatch(/\d+ findings? in the baseline .* not shown/);
    // Lines moved in a baselined file keep it baselined; a new function is new.
    writeFileSync(join(dir, 'a.py'), loopy('first', 7) + '\n' + loopy('third').replace('import cupy as cp\n', ''));
    const after = json((await run(['scan', '--baseline', file, '--format', 'json'], dir)).stdout);
    expect(after.findings.length).toBeGreaterThan(0);
    expect(after.findings.every((f: any) => f.path === 'a.py' && f.line > 12)).toBe(true);
  });

  it('config "baseline" is read relative to the repository root; a bad file is a one-line error', async () => {
    const dir = tmpDir('adopt-base-');
    writeFileSync(join(dir, 'a.py'), loopy('a'));
    (await run(['scan', '--write-baseline', join(dir, 'known.json')], dir));
    mkdirSync(join(dir, '.github'));
    writeFileSync(join(dir, '.github', 'gpu-review.yml'), 'baseline: known.json\n');
    expect((await run(['scan'], dir)).status).toBe(0);
    writeFileSync(join(dir, 'known.json'), '{"findings": 3}');
    const bad = (await run(['scan'], dir));
    expect(bad.status).toBe(2);
    expect(bad.stderr.trim().split('\n')).toHaveLength(1);
    expect(bad.stderr).toMatch(/^gpu-review: baseline .*known\.json is not a gpu-review baseline/);
  });
});

describe('skipped files', () => {
  it('one summary line by reason; --strict and config strict fail on files that could not be reviewed', async () => {
    const dir = tmpDir('adopt-skip-');
    writeFileSync(join(dir, 'ok.py'), 'import cupy as cp\n\n\ndef f(x):\n    return cp.sum(x)\n');
    for (let i = 0; i < 5; i++) writeFileSync(join(dir, `plain${i}.cpp`), `int f${i}() { return ${i}; }\n`);
    writeFileSync(join(dir, 'huge.cu'), `__global__ void k() {}\n// ${'x'.repeat(30_000)}\n`);
    const r = (await run(['scan'], dir));
    expect(r.status).toBe(0);
    const lines = r.stdout.split('\n').filter((l) => /skipped/.test(l));
    expect(lines[0]).toBe('6 files skipped: 5 not GPU code, 1 minified or generated (huge.cu)');
    expect(r.stdout).not.toMatch(/plain\d\.cpp/);
    const strict = (await run(['scan', '--strict'], dir));
    expect(strict.status).toBe(1);
    expect(strict.stdout).toMatch(/strict: 1 file could not be reviewed: huge\.cu \(a line of/);
    mkdirSync(join(dir, '.github'));
    writeFileSync(join(dir, '.github', 'gpu-review.yml'), 'strict: true\n');
    expect((await run(['scan'], dir)).status).toBe(1);
    // Non-GPU files alone never fail a strict gate.
    writeFileSync(join(dir, '.github', 'gpu-review.yml'), 'strict: true\nexclude: ["huge.cu"]\n');
    expect((await run(['scan'], dir)).status).toBe(0);
  });
});

describe('output formats for CI', () => {
  it('--format github: escaped workflow commands, most severe first', async () => {
    const dir = tmpDir('adopt-gh-');
    mkdirSync(join(dir, 'a,b:c'));
    writeFileSync(join(dir, 'a,b:c', 'x%.py'), loopy('a'));
    const r = (await run(['scan', '--format', 'github'], dir));
    const cmds = r.stdout.split('\n').filter((l) => l.startsWith('::'));
    expect(cmds.length).toBeGreaterThan(0);
    const m = /^::(error|warning|notice) file=([^,]*),line=(\d+),endLine=(\d+),col=(\d+),endColumn=(\d+),title=([^:]*)::(.*)$/.exec(cmds[0]);
    expect(m, cmds[0]).not.toBeNull();
    expect(m![2]).toBe('a%2Cb%3Ac/x%25.py');
    expect(m![7]).toBe(`gpu-review ${GET_IN_LOOP} (critical)`);
    expect(m![8]).not.toMatch(/[\r\n]/);
    expect(m![8]).toContain('%0ASource%3A'.replace('%3A', ':'));
  });

  it('rdjson columns count UTF-8 bytes; SARIF keeps UTF-16 code units', async () => {
    const dir = tmpDir('adopt-rd-');
    const text = loopy('a').replace('        out += int(d_sizes[k])', '        out += 0 if "é€😀" == "" else int(d_sizes[k])');
    writeFileSync(join(dir, 'a.py'), text);
    const sarif = json((await run(['scan', '--format', 'sarif'], dir)).stdout);
    const rd = json((await run(['scan', '--format', 'rdjson'], dir)).stdout);
    const line = text.split('\n').findIndex((l) => l.includes('é€😀')) + 1;
    const lineText = text.split('\n')[line - 1];
    const sarifCols = sarif.runs[0].results.filter((x: any) => x.locations[0].physicalLocation.region.startLine === line).map((x: any) => x.locations[0].physicalLocation.region.startColumn).sort((a: number, b: number) => a - b);
    const rdCols = rd.diagnostics.filter((d: any) => d.location.range.start.line === line).map((d: any) => d.location.range.start.column).sort((a: number, b: number) => a - b);
    // One finding (the reads of one loop are one finding), placed after the non-ASCII text.
    expect(sarifCols.length).toBe(1);
    const last = sarifCols[0];
    expect(lineText.slice(last - 1).startsWith('int(')).toBe(true);
    expect(rdCols).toHaveLength(1);
    expect(rdCols[0]).toBe(Buffer.byteLength(lineText.slice(0, last - 1)) + 1);
    expect(rdCols[0] - last).toBe(1 + 2 + 2); // é 2 bytes/1 unit, € 3/1, 😀 4/2
  });
});

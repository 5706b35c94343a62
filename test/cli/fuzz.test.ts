/**
 * Bounded fuzz of the CLI's review path (issue 16): seeds are the rule fixtures, mutations are the
 * shapes of broken diffs seen in the wild and in the earlier probe, the random seed is fixed. Each
 * case is a diff of one mutated file followed by one intact reference file; properties: exit code
 * 0, 1 or 2, no stack trace or internal error, and the reference file keeps exactly its findings.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, expect, test, vi } from 'vitest';
import { main } from '../../src/cli.js';
import { cleanupTmp, tmpDir } from '../diff/tmp-git.js';

const ROOT = join(import.meta.dirname, '..', '..');
const SEED = 16;
const MAX_CASES = 160;
/** Stop starting cases after this long (the bound of the test, not a timing assertion). */
const BUDGET_MS = 50_000;

function mulberry32(a: number): () => number {
  return () => {
    a |= 0;
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function fixtures(): string[] {
  const out: string[] = [];
  const checks = join(ROOT, 'checks');
  for (const pass of readdirSync(checks, { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name).sort()) {
    for (const rule of readdirSync(join(checks, pass)).sort()) {
      let files: string[] = [];
      try {
        files = readdirSync(join(checks, pass, rule, 'fixtures')).sort();
      } catch {
        continue;
      }
      for (const f of files) if (/\.(cu|cuh|py)$/.test(f)) out.push(join(checks, pass, rule, 'fixtures', f));
    }
  }
  return out;
}

function addedDiff(path: string, text: string): string {
  const lines = text.replace(/\n$/, '').split('\n');
  return [`diff --git a/${path} b/${path}`, 'new file mode 100644', '--- /dev/null', `+++ b/${path}`, `@@ -0,0 +1,${lines.length} @@`, ...lines.map((l) => '+' + l)].join('\n') + '\n';
}

type Mutation = (d: string, r: () => number) => string;
const pick = <T>(xs: readonly T[], r: () => number): T => xs[Math.floor(r() * xs.length)]!;
const lines = (d: string) => d.replace(/\n$/, '').split('\n');
const MUTATIONS: Record<string, Mutation> = {
  truncateHunk: (d, r) => {
    const ls = lines(d);
    return ls.slice(0, Math.max(6, Math.floor(ls.length * r()))).join('\n') + '\n';
  },
  noNewlineMarker: (d, r) => {
    const ls = lines(d);
    ls.splice(5 + Math.floor(r() * Math.max(1, ls.length - 5)), 0, '\\ No newline at end of file');
    if (r() < 0.5) ls.splice(5, 0, '\\ No newline at end of file');
    return ls.join('\n') + '\n';
  },
  noGitHeader: (d) => lines(d).filter((l) => !l.startsWith('diff --git') && !l.startsWith('new file mode')).join('\n') + '\n',
  crOnly: (d) => d.replace(/\n/g, '\r').replace(/\r$/, '\n'),
  crlf: (d) => d.replace(/\n/g, '\r\n'),
  badCounts: (d, r) => d.replace(/^@@ -0,0 \+1,\d+ @@/m, pick(['@@ -0,0 +1,999999 @@', '@@ -0,0 +1,0 @@', '@@ -5,2 +1,1 @@', '@@ -0,0 +1,-3 @@', '@@ garbage @@', '@@ -0,0 +99999999999999999999,1 @@'], r)),
  dropMarkers: (d, r) => lines(d).map((l, i) => (i > 4 && l.startsWith('+') && r() < 0.2 ? l.slice(1) : l)).join('\n') + '\n',
  strayHeaders: (d, r) => {
    const ls = lines(d);
    ls.splice(5 + Math.floor(r() * Math.max(1, ls.length - 5)), 0, pick(['--- a/x', '+++ b/y', '@@ -1 +1 @@', 'diff -u a b', 'Binary files a and b differ', 'index 000..111'], r));
    return ls.join('\n') + '\n';
  },
  deepConcat: (d) => d.replace(/\n$/, '') + '\n' + ['+SRC = (', ...Array.from({ length: 2200 }, (_, i) => `+    "p${i}" +`), '+    "")'].join('\n') + '\n',
  longLine: (d) => d.replace(/\n$/, '') + '\n+' + 'x'.repeat(30_000) + '\n',
  nesting: (d) => d.replace(/\n$/, '') + '\n+int z = ' + '('.repeat(3000) + '1' + ')'.repeat(3000) + ';\n',
  commentDeclarator: (d) => d.replace(/\n$/, '') + '\n+__global__ void q(float* p, int n) {\n+  int s(int ' + '/*x*/'.repeat(20) + 'a) = gridDim.x * blockDim.x;\n+  for (int i = 0; i < n; i += 1) { p[i] = 0; // += sint ' + '/'.repeat(60) + '\n+  }\n+}\n',
  byteNoise: (d, r) => {
    const cs = [...d];
    for (let k = 0; k < 1 + Math.floor(r() * 20); k++) cs[5 + Math.floor(r() * (cs.length - 5))] = pick(['(', ')', '{', '"', "'", '\\', '\u00ff', '\uFFFD', '\t', '@', '`'], r);
    return cs.join('');
  },
  emptyBody: (d) => lines(d).slice(0, 5).join('\n') + '\n',
};

afterAll(() => cleanupTmp());

test('fuzz: exit codes 0/1/2, no stack traces, no findings lost to another file', { timeout: 120_000 }, async () => {
  const seeds = fixtures();
  expect(seeds.length).toBeGreaterThan(50);
  const rand = mulberry32(SEED);
  const dir = tmpDir('gpu-review-fuzz-');
  const ref = join(ROOT, 'checks', 'sync', 'malloc-free-in-hot-path', 'fixtures');
  const refFile = readdirSync(ref).filter((f) => /\.(cu|py)$/.test(f)).sort()[0]!;
  const refText = readFileSync(join(ref, refFile), 'utf8');
  const refPath = `zz_reference/${refFile}`;
  const refDiff = addedDiff(refPath, refText);

  const out: string[] = [];
  const err: string[] = [];
  vi.spyOn(process.stdout, 'write').mockImplementation(((s: string | Uint8Array, cb?: unknown) => {
    out.push(String(s));
    if (typeof cb === 'function') (cb as () => void)();
    return true;
  }) as typeof process.stdout.write);
  vi.spyOn(process.stderr, 'write').mockImplementation(((s: string | Uint8Array) => {
    err.push(String(s));
    return true;
  }) as typeof process.stderr.write);

  const runCase = async (diff: string) => {
    out.length = 0;
    err.length = 0;
    const file = join(dir, 'case.diff');
    writeFileSync(file, diff);
    const code = await main(['review', '--format', 'json', '--fail-on', 'high', '--scope', 'file', file]);
    return { code, stdout: out.join(''), stderr: err.join('') };
  };
  const refFindings = (stdout: string) =>
    (JSON.parse(stdout) as { findings: Array<{ path: string; ruleId: string; line: number }> }).findings
      .filter((f) => f.path === refPath)
      .map((f) => `${f.ruleId}@${f.line}`)
      .sort();

  try {
    const base = await runCase(refDiff);
    const expected = refFindings(base.stdout);
    expect(expected.length).toBeGreaterThan(0);

    const tally: Record<string, { cases: number; exit: Record<number, number> }> = {};
    const failures: string[] = [];
    const t0 = performance.now();
    let n = 0;
    for (; n < MAX_CASES && performance.now() - t0 < BUDGET_MS; n++) {
      const seed = pick(seeds, rand);
      const path = `fuzz/${n}_${seed.split('/').pop()}`;
      const name = pick(Object.keys(MUTATIONS), rand);
      let mutated = MUTATIONS[name]!(addedDiff(path, readFileSync(seed, 'utf8')), rand);
      if (!mutated.endsWith('\n')) mutated += '\n';
      const r = await runCase(mutated + refDiff);
      const t = (tally[name] ??= { cases: 0, exit: {} });
      t.cases++;
      t.exit[r.code] = (t.exit[r.code] ?? 0) + 1;
      const where = `case ${n} (${name} of ${seed.slice(ROOT.length + 1)})`;
      if (![0, 1, 2].includes(r.code)) failures.push(`${where}: exit ${r.code}`);
      if (/\n\s+at |internal error/.test(r.stderr)) failures.push(`${where}: ${r.stderr.slice(0, 200)}`);
      if (r.code !== 2) {
        const got = refFindings(r.stdout);
        if (JSON.stringify(got) !== JSON.stringify(expected)) failures.push(`${where}: reference findings ${got.join(',')} != ${expected.join(',')}`);
      } else failures.push(`${where}: exit 2 (${r.stderr.trim().slice(0, 160)}) lost the reference file`);
    }
    // The figures for the report.
    console.log(`fuzz: ${n} cases (seed ${SEED}, ${seeds.length} fixtures)`, JSON.stringify(tally));
    expect(failures).toEqual([]);
    expect(n).toBeGreaterThan(20);
  } finally {
    vi.restoreAllMocks();
  }
});

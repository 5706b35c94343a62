/**
 * The CLI contract of the README, tested on the built CLI (`node dist/src/cli.js`; the test command
 * runs tsc first). Every error case must exit 2 with exactly one line on stderr that starts with
 * "gpu-review:" and carries no stack trace; every file that cannot be reviewed must be skipped with
 * its reason while the other files' findings are kept.
 */
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, writeFileSync, writeSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanupTmp, GIT_ENV, tmpDir, TmpRepo } from '../diff/tmp-git.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const CLI = join(ROOT, 'dist', 'src', 'cli.js');
const EXAMPLE_DIFF = join(ROOT, 'examples', 'ring-area.diff');
const EXAMPLE_REPO = join(ROOT, 'examples', 'repo');
const RING_AREA = 'vibespatial/overlay/ring_area.py';
const GET_IN_LOOP = 'host-device/get-in-loop';
const TIMEOUT_MS = 60_000;

interface Run {
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  ms: number;
  error?: Error;
}

function run(args: string[], opts: { input?: string | Buffer; cwd?: string; env?: NodeJS.ProcessEnv; timeout?: number } = {}): Run {
  const t0 = performance.now();
  const r = spawnSync(process.execPath, [CLI, ...args], {
    cwd: opts.cwd ?? ROOT,
    input: opts.input ?? '',
    timeout: opts.timeout ?? TIMEOUT_MS,
    maxBuffer: 1024 * 1024 * 1024,
    env: { ...GIT_ENV, NO_COLOR: '1', FORCE_COLOR: undefined, GPU_REVIEW_DEBUG: undefined, ...opts.env },
  });
  return {
    status: r.status,
    signal: r.signal,
    stdout: r.stdout?.toString('utf8') ?? '',
    stderr: r.stderr?.toString('utf8') ?? '',
    ms: performance.now() - t0,
    error: r.error,
  };
}

/**
 * `run` without blocking the test worker: a spawnSync of over a minute starves vitest's own RPC
 * with the worker ("Timeout calling onTaskUpdate").
 */
function runAsync(args: string[], opts: { cwd?: string; timeout?: number } = {}): Promise<Run> {
  const t0 = performance.now();
  return new Promise((resolvePromise) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      cwd: opts.cwd ?? ROOT,
      env: { ...GIT_ENV, NO_COLOR: '1', FORCE_COLOR: undefined, GPU_REVIEW_DEBUG: undefined },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    const timer = setTimeout(() => child.kill('SIGTERM'), opts.timeout ?? TIMEOUT_MS);
    child.on('close', (status, signal) => {
      clearTimeout(timer);
      resolvePromise({ status, signal, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8'), ms: performance.now() - t0 });
    });
  });
}

function describeRun(r: Run): string {
  return `status ${r.status} signal ${r.signal} after ${Math.round(r.ms)} ms${r.error ? ` (${r.error.message})` : ''}\nstderr: ${r.stderr.slice(0, 2000)}`;
}

/** Never a stack trace, never an internal error, on any run. */
function expectNoCrash(r: Run): void {
  expect(r.error, describeRun(r)).toBeUndefined();
  expect(r.signal, describeRun(r)).toBeNull();
  expect(r.stderr).not.toMatch(/^\s+at /m);
  expect(r.stderr).not.toMatch(/internal error/i);
}

/** Exit 2, nothing on stdout, exactly one stderr line "gpu-review: …". */
function expectUsageError(r: Run, message?: RegExp): void {
  expectNoCrash(r);
  expect(r.status, describeRun(r)).toBe(2);
  expect(r.stdout).toBe('');
  expect(r.stderr).toMatch(/^gpu-review: [^\n]+\n$/);
  if (message) expect(r.stderr).toMatch(message);
}

/** A review that worked: exit 0 or 1 and a clean stderr (stderr is no terminal: no progress). */
function expectReviewed(r: Run): void {
  expectNoCrash(r);
  expect([0, 1], describeRun(r)).toContain(r.status);
  expect(r.stderr).toBe('');
}

interface JsonFinding {
  ruleId: string;
  pass: number;
  severity: string;
  confidence: string;
  path: string;
  line: number;
  endLine: number;
  column: number;
  message: string;
  citation: string;
  fingerprint: string;
  [k: string]: unknown;
}
interface JsonFile {
  path: string;
  language: string | null;
  parseCoverage: number;
  skipped?: string;
  findings: number;
}
interface JsonReport {
  version: number;
  findings: JsonFinding[];
  files: JsonFile[];
  errors: Array<{ path?: string; message: string }>;
}

function reviewJson(args: string[], opts: Parameters<typeof run>[1] = {}): { r: Run; report: JsonReport } {
  const r = run(['review', ...args, '--format', 'json'], opts);
  expectReviewed(r);
  return { r, report: JSON.parse(r.stdout) as JsonReport };
}

function fileEntry(report: JsonReport, path: string): JsonFile {
  const f = report.files.find((x) => x.path === path);
  expect(f, `no files[] entry for ${path}: ${JSON.stringify(report.files.map((x) => x.path))}`).toBeDefined();
  return f!;
}

/** A `git diff` of one added file, as bytes (the text may hold bytes that are not UTF-8). */
function addedDiff(path: string, content: string | Buffer): Buffer {
  const body = Buffer.isBuffer(content) ? content : Buffer.from(content, 'utf8');
  const text = body.toString('latin1');
  const lines = text.split('\n');
  const noEol = !text.endsWith('\n');
  if (!noEol) lines.pop();
  const out = [
    `diff --git a/${path} b/${path}`,
    'new file mode 100644',
    'index 0000000..1111111',
    '--- /dev/null',
    `+++ b/${path}`,
    `@@ -0,0 +1,${lines.length} @@`,
    ...lines.map((l) => '+' + l),
    ...(noEol ? ['\\ No newline at end of file'] : []),
    '',
  ].join('\n');
  return Buffer.from(out, 'latin1');
}

/** The file every bad-input diff carries too: its finding must survive whatever happens to the others. */
const GOOD_PATH = 'pkg/good.py';
const GOOD = `import cupy as cp
from vibespatial import runtime


def fill(d_counts, n):
    out = []
    for i in range(n):
        total = d_counts[i].get()
        runtime.launch(k, grid=1, block=1, args=(total,))
        out.append(total)
    return out
`;
const GOOD_LINE = 8;

function expectGoodFinding(report: JsonReport): void {
  const f = report.findings.filter((x) => x.path === GOOD_PATH && x.ruleId === GET_IN_LOOP);
  expect(f, `findings: ${JSON.stringify(report.findings.map((x) => `${x.path}:${x.line} ${x.ruleId}`))}`).toHaveLength(1);
  expect(f[0]).toMatchObject({ line: GOOD_LINE, severity: 'critical' });
  expect(fileEntry(report, GOOD_PATH).skipped).toBeUndefined();
}

let work: string;
/** Write `content` to a file in the work directory; returns its path. */
function put(name: string, content: string | Buffer): string {
  const p = join(work, name);
  mkdirSync(dirname(p), { recursive: true });
  writeFileSync(p, content);
  return p;
}

beforeAll(() => {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: build first (npx tsc -p tsconfig.json)`);
  work = tmpDir('gpu-review-cli-');
});
afterAll(() => cleanupTmp());

describe('review of the bundled example', () => {
  it('exits 1 on the critical findings (default fail-on high), 0 with --fail-on none', () => {
    const r = run(['review', EXAMPLE_DIFF, '--repo', 'examples/repo']);
    expectNoCrash(r);
    expect(r.status, describeRun(r)).toBe(1);
    expect(r.stderr).toBe('');
    expect(r.stdout).toContain(GET_IN_LOOP);
    expect(r.stdout).toContain('critical');
    expect(r.stdout).not.toMatch(/\x1b\[/); // no colour when stdout is not a terminal
    const none = run(['review', EXAMPLE_DIFF, '--repo', 'examples/repo', '--fail-on', 'none']);
    expectReviewed(none);
    expect(none.status).toBe(0);
    expect(none.stdout).toBe(r.stdout);
  });

  it('--fail-on critical still fails, a config fail_on: none passes, the flag wins over the config', () => {
    expect(run(['review', EXAMPLE_DIFF, '--repo', 'examples/repo', '--fail-on', 'critical']).status).toBe(1);
    const cfg = put('fail-none.yml', 'fail_on: none\n');
    expect(run(['review', EXAMPLE_DIFF, '--repo', 'examples/repo', '--config', cfg]).status).toBe(0);
    expect(run(['review', EXAMPLE_DIFF, '--repo', 'examples/repo', '--config', cfg, '--fail-on', 'high']).status).toBe(1);
  });

  it('the default gate fails only for severe and high-confidence findings (fail_on_confidence)', () => {
    // The example's high-confidence critical reads fail the default gate; only medium-confidence findings do not.
    const mediumOnly = put('medium-only.yml', 'rules: { host-device/get-in-loop: "off", sync/malloc-free-in-hot-path: "off", sync/blocking-memset-memcpy: "off" }\n');
    const { report } = reviewJson([EXAMPLE_DIFF, '--repo', 'examples/repo', '--config', mediumOnly, '--fail-on', 'none']);
    expect(report.findings.length).toBeGreaterThan(0);
    expect(report.findings.every((f: { confidence: string }) => f.confidence !== 'high')).toBe(true);
    expect(run(['review', EXAMPLE_DIFF, '--repo', 'examples/repo', '--config', mediumOnly]).status).toBe(0);
    const anyConfidence = put('medium-fails.yml', 'fail_on_confidence: medium\nrules: { host-device/get-in-loop: "off", sync/malloc-free-in-hot-path: "off", sync/blocking-memset-memcpy: "off" }\n');
    expect(run(['review', EXAMPLE_DIFF, '--repo', 'examples/repo', '--config', anyConfidence]).status).toBe(1);
  });

  it('--report-unused-suppressions lists ignore comments that silenced nothing and exits 1', () => {
    const dir = join(work, 'unused-sup');
    mkdirSync(dir, { recursive: true });
    const text = 'import cupy as cp\n\n\ndef f(x):\n    return cp.asarray(x)  # gpu-review: ignore[host-device/get-in-loop] not a loop\n';
    writeFileSync(join(dir, 'a.py'), text);
    const diff = `diff --git a/a.py b/a.py\nnew file mode 100644\n--- /dev/null\n+++ b/a.py\n@@ -0,0 +1,5 @@\n${text.split('\n').slice(0, 5).map((l) => `+${l}`).join('\n')}\n`;
    const quiet = run(['review', '-', '--repo', dir], { input: diff });
    expect(quiet.status).toBe(0);
    expect(quiet.stdout).not.toContain('unused suppressions');
    const r = run(['review', '-', '--repo', dir, '--report-unused-suppressions'], { input: diff });
    expect(r.status, describeRun(r)).toBe(1);
    expect(r.stdout).toContain('unused suppressions:\n  a.py:5:27: gpu-review: ignore[host-device/get-in-loop] silenced nothing');
    const j = run(['review', '-', '--repo', dir, '--report-unused-suppressions', '--format', 'json'], { input: diff });
    expect(JSON.parse(j.stdout).unusedSuppressions).toEqual([{ path: 'a.py', line: 5, column: 27, ruleId: 'host-device/get-in-loop' }]);
  });

  it('--color forces colour', () => {
    const r = run(['review', EXAMPLE_DIFF, '--repo', 'examples/repo', '--color']);
    expect(r.stdout).toMatch(/\x1b\[/);
  });

  it('--format json: version 1, findings and files with the documented fields', () => {
    const { r, report } = reviewJson([EXAMPLE_DIFF, '--repo', 'examples/repo']);
    expect(r.status).toBe(1);
    expect(report.version).toBe(1);
    expect(Array.isArray(report.errors)).toBe(true);
    expect(report.findings.length).toBeGreaterThan(0);
    for (const f of report.findings) {
      expect(typeof f.ruleId).toBe('string');
      expect([1, 2, 3, 4, 5, 6, 7]).toContain(f.pass);
      expect(['critical', 'high', 'medium-high', 'medium', 'low-medium', 'low']).toContain(f.severity);
      expect(['high', 'medium', 'low']).toContain(f.confidence);
      expect(typeof f.path).toBe('string');
      expect(Number.isInteger(f.line) && f.line >= 1).toBe(true);
      expect(Number.isInteger(f.endLine) && f.endLine >= f.line).toBe(true);
      expect(Number.isInteger(f.column) && f.column >= 1).toBe(true);
      expect(f.message.length).toBeGreaterThan(0);
      expect(f.citation).toMatch(/^00\d §/);
      expect(f.fingerprint).toMatch(/^[0-9a-f]+(-\d+)?$/);
    }
    const ring = report.findings.filter((f) => f.path === RING_AREA && f.ruleId === GET_IN_LOOP);
    expect(ring.length).toBeGreaterThan(0);
    expect(ring.every((f) => f.pass === 1 && f.severity === 'critical')).toBe(true);
    // The flagged code is on the line the finding names.
    const lines = readFileSync(join(EXAMPLE_REPO, RING_AREA), 'utf8').split('\n');
    for (const f of ring) expect(lines[f.line - 1]).toMatch(/int\(|float\(|\.get\(\)/);
    expect(report.files.map((f) => f.path).sort()).toEqual(['src/cuda/bbox.cu', 'vibespatial/kernels/segment_length.py', RING_AREA]);
    for (const f of report.files) {
      expect(typeof f.path).toBe('string');
      expect(['python', 'cuda', 'nvrtc-in-python', 'luisa-dsl', null]).toContain(f.language);
      expect(f.parseCoverage).toBeGreaterThanOrEqual(0);
      expect(f.parseCoverage).toBeLessThanOrEqual(1);
    }
    expect(fileEntry(report, RING_AREA).language).toBe('python');
    expect(fileEntry(report, 'src/cuda/bbox.cu').language).toBe('cuda');
  });

  it('--format sarif, rdjson and markdown run and carry the same findings', () => {
    const { report } = reviewJson([EXAMPLE_DIFF, '--repo', 'examples/repo']);
    const sarif = run(['review', EXAMPLE_DIFF, '--repo', 'examples/repo', '--format', 'sarif']);
    expectNoCrash(sarif);
    expect(sarif.status).toBe(1);
    const s = JSON.parse(sarif.stdout);
    expect(s.version).toBe('2.1.0');
    expect(s.runs[0].results).toHaveLength(report.findings.length);
    expect(s.runs[0].results.map((x: { ruleId: string }) => x.ruleId).sort()).toEqual(report.findings.map((f) => f.ruleId).sort());

    const rd = run(['review', EXAMPLE_DIFF, '--repo', 'examples/repo', '--format', 'rdjson']);
    expectNoCrash(rd);
    expect(rd.status).toBe(1);
    const d = JSON.parse(rd.stdout);
    expect(d.diagnostics).toHaveLength(report.findings.length);
    expect(d.diagnostics[0].location.path).toBeTruthy();

    const md = run(['review', EXAMPLE_DIFF, '--repo', 'examples/repo', '--format', 'markdown']);
    expectNoCrash(md);
    expect(md.status).toBe(1);
    expect(md.stdout).toContain(GET_IN_LOOP);
  });

  it('reads the diff from stdin with "-" and when DIFF is omitted', () => {
    const file = run(['review', EXAMPLE_DIFF, '--format', 'json']);
    const diff = readFileSync(EXAMPLE_DIFF);
    const dash = run(['review', '-', '--format', 'json'], { input: diff });
    expectReviewed(dash);
    expect(dash.status).toBe(file.status);
    expect(dash.stdout).toBe(file.stdout);
    const omitted = run(['review', '--format', 'json'], { input: diff });
    expectReviewed(omitted);
    expect(omitted.stdout).toBe(file.stdout);
  });

  it('an empty diff on stdin is an empty review (exit 0)', () => {
    const { r, report } = reviewJson(['-'], { input: '' });
    expect(r.status).toBe(0);
    expect(report.findings).toEqual([]);
    expect(report.files).toEqual([]);
  });

  it('a config in <repo>/.github/gpu-review.yml is used when --repo is given', () => {
    const repo = join(work, 'cfg-repo');
    mkdirSync(join(repo, '.github'), { recursive: true });
    writeFileSync(join(repo, '.github', 'gpu-review.yml'), `rules:\n  ${GET_IN_LOOP}: "off"\n`);
    const { report } = reviewJson([EXAMPLE_DIFF, '--repo', repo]);
    expect(report.findings.filter((f) => f.ruleId === GET_IN_LOOP)).toEqual([]);
  });

  it('a JSON --config is accepted', () => {
    const cfg = put('cfg.json', JSON.stringify({ rules: { [GET_IN_LOOP]: 'medium' } }));
    const { report } = reviewJson([EXAMPLE_DIFF, '--config', cfg]);
    const hits = report.findings.filter((f) => f.ruleId === GET_IN_LOOP);
    expect(hits.length).toBeGreaterThan(0);
    expect(hits.every((f) => f.severity === 'medium')).toBe(true);
  });
});

describe('--repo mode', () => {
  it('an added file gives identical findings with --repo and in diff-only mode', () => {
    const r = new TmpRepo().write('README.md', 'x\n').commit('init');
    r.write(RING_AREA, readFileSync(join(EXAMPLE_REPO, RING_AREA))).commit('add ring_area');
    const diff = put('ring-area-added.diff', r.lastDiff());
    expect(readFileSync(diff, 'utf8')).toContain('new file mode');
    const withRepo = reviewJson([diff, '--repo', EXAMPLE_REPO]);
    const diffOnly = reviewJson([diff]);
    expect(withRepo.report.findings.length).toBeGreaterThan(0);
    expect(withRepo.report.findings.some((f) => f.ruleId === GET_IN_LOOP)).toBe(true);
    expect(diffOnly.report.findings).toEqual(withRepo.report.findings);
    expect(diffOnly.report.errors).toEqual([]);
    expect(withRepo.report.errors).toEqual([]);
    expect(diffOnly.r.status).toBe(withRepo.r.status);
  });

  it('a repo file that does not match the diff is ignored with an error entry; its hunks are reviewed instead', () => {
    const repo = join(work, 'mismatch-repo');
    const original = readFileSync(join(EXAMPLE_REPO, RING_AREA), 'utf8');
    mkdirSync(join(repo, dirname(RING_AREA)), { recursive: true });
    // Two lines more at the top: every hunk line is two lines off.
    writeFileSync(join(repo, RING_AREA), `# moved\n# down\n${original}`);
    const mismatched = reviewJson([EXAMPLE_DIFF, '--repo', repo]);
    const diffOnly = reviewJson([EXAMPLE_DIFF]);
    expect(mismatched.report.errors).toEqual([{ path: RING_AREA, message: expect.stringMatching(/does not match the diff/) }]);
    const ring = (rep: JsonReport) => rep.findings.filter((f) => f.path === RING_AREA);
    expect(ring(diffOnly.report).length).toBeGreaterThan(0);
    expect(ring(mismatched.report)).toEqual(ring(diffOnly.report));
    expect(mismatched.report.findings).toEqual(diffOnly.report.findings);
    expect(mismatched.r.status).toBe(1);
  });

  it('--repo that does not exist, or is a file, is an error', () => {
    expectUsageError(run(['review', EXAMPLE_DIFF, '--repo', join(work, 'no-such-dir')]), /--repo/);
    expectUsageError(run(['review', EXAMPLE_DIFF, '--repo', EXAMPLE_DIFF]), /--repo/);
  });
});

describe('--git and git diff | review -', () => {
  const OPS_BASE = `"""Batch operations."""
import cupy as cp
from vibespatial import runtime


def scale(d_x, factor):
    return d_x * factor
`;
  const OPS_ADDED = `

def fill_all(d_counts, n):
    out = []
    for i in range(n):
        total = d_counts[i].get()
        runtime.launch(fill_kernel, grid=1, block=1, args=(total,))
        out.append(total)
    return out
`;
  const FLAGGED_LINE = OPS_BASE.split('\n').length - 1 + OPS_ADDED.split('\n').findIndex((l) => l.includes('.get()')) + 1;
  let repo: TmpRepo;

  beforeAll(() => {
    repo = new TmpRepo().write('pkg/__init__.py', '').write('pkg/ops.py', OPS_BASE).commit('base');
    repo.git('checkout', '-q', '-b', 'feature');
    repo.write('pkg/ops.py', OPS_BASE + OPS_ADDED).write('notes.txt', 'not code\n').commit('add fill_all');
  });

  function expectFlagged(report: JsonReport): void {
    const hits = report.findings.filter((f) => f.ruleId === GET_IN_LOOP && f.path === 'pkg/ops.py');
    expect(hits, JSON.stringify(report.findings.map((f) => `${f.path}:${f.line} ${f.ruleId}`))).toHaveLength(1);
    expect(hits[0].line).toBe(FLAGGED_LINE);
    expect(fileEntry(report, 'notes.txt').skipped).toMatch(/not a GPU source type/);
  }

  it('--git A...B in the current directory reads files at B', () => {
    const { r, report } = reviewJson(['--git', 'main...feature'], { cwd: repo.dir });
    expect(r.status).toBe(1);
    expectFlagged(report);
    expect(report.errors).toEqual([]);
  });

  it('--git A..B with --repo from another directory', () => {
    const { r, report } = reviewJson(['--git', 'HEAD~1..HEAD', '--repo', repo.dir], { cwd: ROOT });
    expect(r.status).toBe(1);
    expectFlagged(report);
  });

  it('--git REV compares with the working tree', () => {
    const wt = new TmpRepo().write('pkg/ops.py', OPS_BASE).commit('base');
    wt.write('pkg/ops.py', OPS_BASE + OPS_ADDED).write('notes.txt', 'x\n');
    wt.git('add', 'notes.txt');
    const { report } = reviewJson(['--git', 'HEAD'], { cwd: wt.dir });
    expectFlagged(report);
  });

  it('git diff | gpu-review review - (diff-only and with --repo .), run inside the repository', () => {
    const diff = repo.gitRaw('diff', 'main', 'feature');
    const diffOnly = reviewJson(['-'], { input: diff, cwd: repo.dir });
    expect(diffOnly.r.status).toBe(1);
    expectFlagged(diffOnly.report);
    const withRepo = reviewJson(['-', '--repo', '.'], { input: diff, cwd: repo.dir });
    expectFlagged(withRepo.report);
    expect(withRepo.report.errors).toEqual([]);
  });

  it('a git format-patch mail on stdin gives the same findings as the diff', () => {
    const mail = repo.gitRaw('format-patch', '-1', '--stdout', 'feature');
    const { report } = reviewJson(['-'], { input: mail, cwd: repo.dir });
    expectFlagged(report);
  });

  it('a bad range is a one-line error', () => {
    expectUsageError(run(['review', '--git', 'no-such-branch..HEAD'], { cwd: repo.dir }), /git diff no-such-branch\.\.HEAD failed/);
  });

  it('--git outside a git repository is a one-line error', () => {
    expectUsageError(run(['review', '--git', 'HEAD~1..HEAD'], { cwd: tmpDir() }), /git diff/);
  });

  it('DIFF and --git together are a usage error', () => {
    expectUsageError(run(['review', EXAMPLE_DIFF, '--git', 'HEAD'], { cwd: repo.dir }), /either/);
  });
});

describe('rules and explain', () => {
  it('rules lists host-device/get-in-loop with pass, severity and citation', () => {
    const r = run(['rules']);
    expectReviewed(r);
    expect(r.status).toBe(0);
    const line = r.stdout.split('\n').find((l) => l.startsWith(GET_IN_LOOP + ' '));
    expect(line, r.stdout).toBeDefined();
    expect(line).toMatch(/\s1\s+critical\s+003 §8\.2/);
    expect(line).not.toMatch(/\[(preview|retired)\]/);
    // Rules that do not run by default say so.
    expect(r.stdout.split('\n').find((l) => l.startsWith('kernel/single-accumulator-dependency-chain '))).toMatch(/\[retired\]$/);
    expect(r.stdout.split('\n').find((l) => l.startsWith('kernel/wave-quantization '))).toMatch(/\[preview\]$/);
  });

  it('rules --format json', () => {
    const r = run(['rules', '--format', 'json']);
    expectReviewed(r);
    const rules = JSON.parse(r.stdout) as Array<{ id: string; pass: number; severity: string; citation: string }>;
    expect(rules.find((x) => x.id === GET_IN_LOOP)).toMatchObject({ pass: 1, severity: 'critical' });
    expect(new Set(rules.map((x) => x.id)).size).toBe(rules.length);
  });

  it('explain prints the rule README', () => {
    const r = run(['explain', GET_IN_LOOP]);
    expectReviewed(r);
    expect(r.status).toBe(0);
    expect(r.stdout).toBe(readFileSync(join(ROOT, 'checks', GET_IN_LOOP, 'README.md'), 'utf8'));
  });

  it('explain of an unknown rule exits 2', () => {
    expectUsageError(run(['explain', 'nope']), /unknown rule "nope"/);
  });

  it('explain without a rule exits 2', () => {
    expectUsageError(run(['explain']));
  });
});

describe('usage errors: exit 2, one line, no stack trace', () => {
  it('not a diff', () => {
    expectUsageError(run(['review', '-'], { input: 'This is a letter, not a diff.\nRegards\n' }), /not a unified diff/);
    expectUsageError(run(['review', put('yaml.diff', '---\nfoo: bar\n')]), /not a unified diff/);
    expectUsageError(run(['review', put('yaml2.diff', '--- \nfoo: bar\n')]), /not a unified diff/);
  });

  it('binary garbage on stdin', () => {
    const garbage = Buffer.concat([randomBytes(32 * 1024), Buffer.from([0]), randomBytes(32 * 1024)]);
    expectUsageError(run(['review', '-'], { input: garbage }), /binary/);
    // A binary file given as DIFF.
    const png = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]), randomBytes(4096)]);
    expectUsageError(run(['review', put('image.png', png)]), /binary/);
  });

  it('an unknown option', () => {
    expectUsageError(run(['review', EXAMPLE_DIFF, '--bogus']), /unknown option '--bogus'/);
  });

  it('an unknown command, and no command at all', () => {
    expectUsageError(run(['frobnicate']), /frobnicate/);
    expectUsageError(run([]));
  });

  it('a missing diff file, and a directory given as the diff', () => {
    expectUsageError(run(['review', join(work, 'missing.diff')]), /cannot read diff file .*missing\.diff/);
    expectUsageError(run(['review', work]), /cannot read diff file/);
  });

  it('--config with an unknown key names the key', () => {
    const cfg = put('unknown-key.yml', 'fail_on: high\nseverity_floor: low\n');
    expectUsageError(run(['review', EXAMPLE_DIFF, '--config', cfg]), /"severity_floor"/);
    const nested = put('unknown-nested.yml', 'limits:\n  max_bytes: 10\n');
    expectUsageError(run(['review', EXAMPLE_DIFF, '--config', nested]), /"max_bytes"/);
    const rule = put('unknown-rule.yml', 'rules:\n  host-device/nope: "off"\n');
    expectUsageError(run(['review', EXAMPLE_DIFF, '--config', rule]), /"host-device\/nope"/);
  });

  it('--config that is missing or not YAML', () => {
    expectUsageError(run(['review', EXAMPLE_DIFF, '--config', join(work, 'nope.yml')]), /cannot read config file/);
    const bad = put('bad.yml', 'rules: [\n  a: b\n');
    expectUsageError(run(['review', EXAMPLE_DIFF, '--config', bad]), /not valid YAML/);
  });

  it('--format bogus, --scope bogus, --fail-on bogus', () => {
    expectUsageError(run(['review', EXAMPLE_DIFF, '--format', 'bogus']), /bogus/);
    expectUsageError(run(['review', EXAMPLE_DIFF, '--scope', 'bogus']), /bogus/);
    expectUsageError(run(['review', EXAMPLE_DIFF, '--fail-on', 'bogus']), /bogus/);
  });
});

describe('files that cannot be reviewed are skipped with a reason; the others are still reviewed', () => {
  function reviewWithGood(name: string, parts: Buffer[], extra: string[] = []): { r: Run; report: JsonReport } {
    const diff = put(name, Buffer.concat(parts));
    const out = reviewJson([diff, ...extra]);
    expect(out.r.status, describeRun(out.r)).toBe(1);
    expectGoodFinding(out.report);
    return out;
  }

  it('a truncated hunk: that file skipped (reason in files[].skipped), the file after it reviewed', () => {
    const bad = addedDiff('pkg/cut.py', 'a = 1\nb = 2\nc = 3\n').toString('latin1').replace('@@ -0,0 +1,3 @@', '@@ -0,0 +1,30 @@');
    const { report } = reviewWithGood('truncated.diff', [Buffer.from(bad, 'latin1'), addedDiff(GOOD_PATH, GOOD)]);
    expect(fileEntry(report, 'pkg/cut.py').skipped).toMatch(/truncated or malformed hunk/);
    expect(report.files.map((f) => f.path).sort()).toEqual(['pkg/cut.py', GOOD_PATH]);
  });

  it('invalid UTF-8 in the diff: skipped "not valid UTF-8"', () => {
    const latin = Buffer.concat([Buffer.from('name = "caf'), Buffer.from([0xe9]), Buffer.from('"\nx = 1\n')]);
    const { report } = reviewWithGood('latin.diff', [addedDiff('pkg/latin.py', latin), addedDiff(GOOD_PATH, GOOD)]);
    expect(fileEntry(report, 'pkg/latin.py').skipped).toBe('not valid UTF-8');
  });

  it('invalid UTF-8 in the --repo file: skipped "not valid UTF-8"', () => {
    const repo = join(work, 'latin-repo');
    mkdirSync(join(repo, 'pkg'), { recursive: true });
    const latin = Buffer.concat([Buffer.from('name = "caf'), Buffer.from([0xe9]), Buffer.from('"\nx = 1\n')]);
    writeFileSync(join(repo, 'pkg', 'latin.py'), latin);
    writeFileSync(join(repo, GOOD_PATH), GOOD);
    // The same bytes in the diff, and a diff whose text is valid UTF-8 while the file is not.
    const { report } = reviewWithGood('latin-repo.diff', [addedDiff('pkg/latin.py', latin), addedDiff(GOOD_PATH, GOOD)], ['--repo', repo]);
    expect(fileEntry(report, 'pkg/latin.py').skipped).toBe('not valid UTF-8');
    const valid = reviewWithGood('latin-repo-2.diff', [addedDiff('pkg/latin.py', 'name = "café"\nx = 1\n'), addedDiff(GOOD_PATH, GOOD)], ['--repo', repo]);
    expect(fileEntry(valid.report, 'pkg/latin.py').skipped).toBe('not valid UTF-8');
  });

  it('a 10 MB single-line file: skipped (over the line length limit), in bounded time', () => {
    const line = 'blob = "' + 'A'.repeat(10 * 1024 * 1024) + '"\n';
    const parts = [addedDiff('pkg/minified.py', line), addedDiff(GOOD_PATH, GOOD)];
    const t0 = performance.now();
    const { report } = reviewWithGood('long-line.diff', parts);
    const ms = performance.now() - t0;
    console.log(`[timing] 10 MB single-line file: ${Math.round(ms)} ms`);
    // 10 MB is also over the default 2 MB size limit: either bound may be the one reported.
    expect(fileEntry(report, 'pkg/minified.py').skipped).toMatch(/^(a line of 10485\d\d\d characters \(over 20000\)|file too large \(10\.5 MB)/);
    // With the size limit raised, the line length limit is what stops it.
    const cfg = put('big-files.yml', 'limits: { max_file_bytes: 50000000 }\n');
    const raised = reviewWithGood('long-line-2.diff', parts, ['--config', cfg]);
    expect(fileEntry(raised.report, 'pkg/minified.py').skipped).toMatch(/^a line of 1048\d{4} characters \(over 20000\): minified or generated$/);
  });

  it('an unknown file type (.txt, .rs, plain C++) is skipped with the reason', () => {
    const { report } = reviewWithGood('types.diff', [
      addedDiff('docs/notes.txt', 'cudaMalloc is mentioned here\n'),
      addedDiff('src/lib.rs', 'fn main() { println!("hi"); }\n'),
      addedDiff('src/plain.cpp', 'int add(int a, int b) { return a + b; }\n'),
      addedDiff(GOOD_PATH, GOOD),
    ]);
    expect(fileEntry(report, 'docs/notes.txt').skipped).toMatch(/not a GPU source type/);
    expect(fileEntry(report, 'src/lib.rs').skipped).toMatch(/not a GPU source type/);
    expect(fileEntry(report, 'src/plain.cpp').skipped).toMatch(/C\+\+ without CUDA/);
  });

  it('binary, deleted and mode-only files in a real git diff are skipped with their reasons', () => {
    const r = new TmpRepo().write('pkg/old.py', 'x = 1\n').write('run.sh', 'echo\n', 0o644).write('img.bin', Buffer.from([0, 1, 2])).commit('init');
    r.rm('pkg/old.py');
    r.write('run.sh', 'echo\n', 0o755).write('img.bin', Buffer.from([0, 3, 4])).write(GOOD_PATH, GOOD).commit('change');
    const { report } = reviewWithGood('git-kinds.diff', [Buffer.from(r.lastDiff('--binary'))]);
    expect(fileEntry(report, 'pkg/old.py').skipped).toBe('deleted');
    expect(fileEntry(report, 'run.sh').skipped).toBe('mode change only');
    expect(fileEntry(report, 'img.bin').skipped).toBe('binary file');
  });

  const DEPTH = 500;
  const deepCases: Array<[string, string, string]> = [
    ['Python: 500 nested if blocks', 'pkg/deep_if.py', 'def f(x):\n' + Array.from({ length: DEPTH }, (_, i) => '    '.repeat(i + 1) + 'if x:\n').join('') + '    '.repeat(DEPTH + 1) + 'x = 1\n'],
    ['Python: 500 nested parentheses', 'pkg/deep_paren.py', 'x = ' + '('.repeat(DEPTH) + '1' + ')'.repeat(DEPTH) + '\n'],
    ['Python: 500 nested brackets', 'pkg/deep_bracket.py', 'x = ' + '['.repeat(DEPTH) + '1' + ']'.repeat(DEPTH) + '\n'],
    ['CUDA: 500 nested braces', 'src/deep_brace.cu', '__global__ void k(int* a)\n{\n' + '{\n'.repeat(DEPTH) + 'a[0] = 1;\n' + '}\n'.repeat(DEPTH) + '}\n'],
    ['CUDA: 500 nested parentheses', 'src/deep_paren.cu', '__global__ void k(int* a)\n{\n    a[0] = ' + '('.repeat(DEPTH) + '1' + ')'.repeat(DEPTH) + ';\n}\n'],
  ];
  it.each(deepCases)('%s: no crash (time printed)', (name, path, text) => {
    const t0 = performance.now();
    const { report } = reviewWithGood(`deep-${path.replace(/\W/g, '_')}.diff`, [addedDiff(path, text), addedDiff(GOOD_PATH, GOOD)]);
    const ms = performance.now() - t0;
    console.log(`[timing] ${name}: ${Math.round(ms)} ms`);
    const entry = fileEntry(report, path);
    // Reviewed, or skipped for its parse budget; never an internal error.
    if (entry.skipped !== undefined) expect(entry.skipped).toMatch(/^parse exceeded \d+ ms$/);
    else expect(entry.language).toBe(path.endsWith('.cu') ? 'cuda' : 'python');
    expect(report.errors).toEqual([]);
  });

  it('a 50 MB diff of many added files finishes within the timeout', { timeout: 330_000 }, async () => {
    const path = join(work, 'fifty-mb.diff');
    const fd = openSync(path, 'w');
    let total = 0;
    let files = 0;
    const emit = (b: Buffer) => {
      writeSync(fd, b);
      total += b.length;
    };
    emit(addedDiff(GOOD_PATH, GOOD));
    while (total < 50 * 1024 * 1024) {
      const k = files++;
      if (k % 5 === 4) emit(addedDiff(`docs/gen_${k}.md`, generatedDoc(k)));
      else if (k % 2 === 0) emit(addedDiff(`pkg/gen/mod_${k}.py`, generatedPython(k)));
      else emit(addedDiff(`src/gen/kern_${k}.cu`, generatedCuda(k)));
    }
    closeSync(fd);
    const r = await runAsync(['review', path, '--format', 'json'], { timeout: 300_000 });
    console.log(`[timing] 50 MB diff (${(total / 1048576).toFixed(1)} MiB, ${files + 1} files): ${Math.round(r.ms)} ms wall, status ${r.status}${r.signal ? `, killed by ${r.signal}` : ''}`);
    expectReviewed(r);
    const report = JSON.parse(r.stdout) as JsonReport;
    expect(report.files).toHaveLength(files + 1);
    expectGoodFinding(report);
    expect(report.errors).toEqual([]);
    expect(report.files.filter((f) => f.path.endsWith('.md')).every((f) => /not a GPU source type/.test(f.skipped ?? ''))).toBe(true);
    expect(report.files.filter((f) => !f.path.endsWith('.md') && f.skipped !== undefined)).toEqual([]);

    // The whole-review budget bounds it: files not reached in time are skipped with the reason,
    // and what was reviewed before stands.
    const cfg = join(work, 'budget.yml');
    writeFileSync(cfg, 'limits: { review_timeout_ms: 3000 }\n');
    const b = await runAsync(['review', path, '--format', 'json', '--config', cfg], { timeout: 120_000 });
    console.log(`[timing] 50 MB diff with a 3 s review budget: ${Math.round(b.ms)} ms wall, status ${b.status}`);
    expectReviewed(b);
    const budget = JSON.parse(b.stdout) as JsonReport;
    expectGoodFinding(budget);
    expect(budget.files.some((f) => /review time budget/.test(f.skipped ?? ''))).toBe(true);
    // Its wall time is the [timing] line above, not an assertion (a busy machine makes any bound flaky);
    // runAsync's own timeout still fails a run that does not end.
  });
});

/** Lines appended until the text reaches about `bytes` characters. */
function grow(head: string[], bytes: number, block: (i: number) => string[]): string {
  const out = [...head];
  let size = head.join('\n').length;
  for (let i = 0; size < bytes; i++) {
    for (const l of block(i)) {
      out.push(l);
      size += l.length + 1;
    }
  }
  return out.join('\n') + '\n';
}

/** About 128 KB of host Python in the style of the example repository. */
function generatedPython(seed: number): string {
  return grow([`"""Generated module ${seed}."""`, 'import cupy as cp', 'import numpy as np', '', 'from vibespatial import runtime', '', ''], 128 * 1024, (i) => [
    `def scale_${seed}_${i}(d_x, factor):`,
    `    """Scale a device array by ${i}."""`,
    '    d_y = cp.empty_like(d_x)',
    `    grid, block = runtime.launch_config(scale_kernel_${i}, d_x.shape[0])`,
    `    runtime.launch(scale_kernel_${i}, grid=grid, block=block, args=(d_x, d_y, factor))`,
    '    return d_y',
    '',
    '',
    `def host_sum_${seed}_${i}(values):`,
    '    total = 0',
    '    for v in values:',
    `        total += v * ${i}`,
    '    return np.float64(total)',
    '',
    '',
  ]);
}

/** About 128 KB of CUDA C++. */
function generatedCuda(seed: number): string {
  return grow(['#include <cuda_runtime.h>', ''], 128 * 1024, (i) => [
    `__global__ void axpy_${seed}_${i}(const double* x, double* y, double a, int n)`,
    '{',
    '    int i = blockIdx.x * blockDim.x + threadIdx.x;',
    '    if (i < n) {',
    `        y[i] = a * x[i] + y[i] + ${i}.0;`,
    '    }',
    '}',
    '',
    `void launch_axpy_${seed}_${i}(const double* x, double* y, double a, int n, cudaStream_t s)`,
    '{',
    `    axpy_${seed}_${i}<<<(n + 255) / 256, 256, 0, s>>>(x, y, a, n);`,
    '}',
    '',
  ]);
}

/** About 128 KB of Markdown: not a GPU source type. */
function generatedDoc(seed: number): string {
  return grow([`# Generated notes ${seed}`, ''], 128 * 1024, (i) => [`- item ${i}: the kernel processes ${i * 7} elements per block`, '']);
}

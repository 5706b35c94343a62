import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { main } from '../../src/cli.js';
import { review } from '../../src/review/pipeline.js';
import { runPass7 } from '../../src/rewrite/index.js';
import { isRewrite } from '../../src/rewrite/apply.js';
import type { Template } from '../../src/rewrite/types.js';
import { findToolchain } from '../../src/rewrite/verify.js';
import { addedFileDiff, config } from '../helpers.js';

const tools = findToolchain();
const fixtures = join(import.meta.dirname, 'fixtures');

async function pass7(path: string, text: string, opts: { templates?: Template[]; compile?: boolean } = {}) {
  const cfg = config({ enable_preview: true });
  const out = await review({ diff: addedFileDiff(path, text), config: cfg, scope: 'file', readFile: async (p) => (p === path ? text : null) });
  const summary = await runPass7(out, { config: cfg, compile: opts.compile ?? true, templates: opts.templates });
  return { out, summary };
}

describe('verification', () => {
  it.skipIf(!tools.nvcc)('compiles CUDA rewrites with nvcc', async () => {
    const text = readFileSync(join(fixtures, 'stream-ordered-alloc', 'scratch.cu'), 'utf8');
    const { out } = await pass7('src/scratch.cu', text);
    const rw = out.result.findings.map((f) => f.rewrite).find(isRewrite);
    expect(rw?.verification.steps.map((s) => `${s.step}:${s.status}`)).toEqual(['reparse:pass', 'nvcc:pass', 're-review:pass']);
    expect(rw?.verification.status).toBe('verified');
  }, 120_000);

  it.skipIf(!tools.python)('byte-compiles Python rewrites', async () => {
    const text = readFileSync(join(fixtures, 'hoist-loop-reads', 'parts.py'), 'utf8');
    const { out } = await pass7('pkg/parts.py', text);
    const rw = out.result.findings.map((f) => f.rewrite).find(isRewrite);
    expect(rw?.verification.steps.find((s) => s.step === 'py_compile')?.status).toBe('pass');
  }, 60_000);

  it('says so when it cannot compile, and never shows what failed', async () => {
    const text = readFileSync(join(fixtures, 'launch-on-stream', 'library.cu'), 'utf8');
    const { out } = await pass7('src/library.cu', text, { compile: false });
    const rw = out.result.findings.map((f) => f.rewrite).find(isRewrite);
    expect(rw?.verification.status).toBe('unverified');
    expect(rw?.verification.steps.find((s) => s.step === 'nvcc')).toMatchObject({ status: 'skipped' });
    // A template whose output does not parse is rejected by the re-parse step.
    const broken: Template = { id: 'broken', rules: ['sync/default-stream-launch-in-library', 'sync/null-stream-in-multistream-code'], languages: ['cuda'], build: (ctx) => ({ description: 'x', behaviourPreserving: true, edits: [{ startLine: ctx.finding.line, endLine: ctx.finding.line, text: '  add_one<<<grid, 128>>>(v, count;' }] }) };
    const again = await pass7('src/library.cu', text, { templates: [broken], compile: false });
    const f = again.out.result.findings.find((x) => broken.rules.includes(x.ruleId))!;
    expect(isRewrite(f.rewrite)).toBe(false);
    expect(f.rewrite && 'declined' in f.rewrite && f.rewrite.declined).toMatch(/broken: verification failed \(\d+ new parse error/);
    expect(again.summary.failed).toBe(1);
  });

  it('rejects a rewrite after which the rule still fires', async () => {
    const text = readFileSync(join(fixtures, 'launch-on-stream', 'library.cu'), 'utf8');
    const noop: Template = { id: 'noop', rules: ['sync/default-stream-launch-in-library', 'sync/null-stream-in-multistream-code'], languages: ['cuda'], build: (ctx) => ({ description: 'x', behaviourPreserving: true, edits: [{ startLine: ctx.finding.line, endLine: ctx.finding.line, text: ctx.lines[ctx.finding.line - 1] + ' // touched' }] }) };
    const { out } = await pass7('src/library.cu', text, { templates: [noop], compile: false });
    const f = out.result.findings.find((x) => noop.rules.includes(x.ruleId))!;
    expect(f.rewrite && 'declined' in f.rewrite && f.rewrite.declined).toMatch(/still fires/);
  });
});

describe('--fix', () => {
  function repo(): { dir: string; diff: string } {
    const dir = mkdtempSync(join(tmpdir(), 'rewrite-fix-'));
    execFileSync('git', ['init', '-q'], { cwd: dir });
    const text = readFileSync(join(fixtures, 'int64-index', 'gather.cu'), 'utf8');
    writeFileSync(join(dir, 'gather.cu'), text);
    writeFileSync(join(dir, 'change.diff'), addedFileDiff('gather.cu', text));
    return { dir, diff: join(dir, 'change.diff') };
  }
  const capture = async (argv: string[]) => {
    let out = '';
    let err = '';
    const w = process.stdout.write.bind(process.stdout);
    const e = process.stderr.write.bind(process.stderr);
    process.stdout.write = ((c: string, cb?: () => void) => ((out += c), cb?.(), true)) as typeof process.stdout.write;
    process.stderr.write = ((c: string) => ((err += c), true)) as typeof process.stderr.write;
    try {
      return { code: await main(argv), out, err };
    } finally {
      process.stdout.write = w;
      process.stderr.write = e;
    }
  };

  it('--dry-run prints the safe fixes as a unified diff and changes nothing', async () => {
    const { dir, diff } = repo();
    const before = readFileSync(join(dir, 'gather.cu'), 'utf8');
    const r = await capture(['review', diff, '--repo', dir, '--fix', '--dry-run', '--no-compile']);
    expect(r.code).toBe(0);
    // Only the behaviour-preserving rewrite (the widened product inside an index) is safe.
    expect(r.out).toContain('+  m[static_cast<int64_t>(r) * cols + c] = 0.0f;');
    expect(r.out).not.toContain('int64_t at');
    expect(readFileSync(join(dir, 'gather.cu'), 'utf8')).toBe(before);
    expect(r.err).toMatch(/would apply 1 fix/);
  }, 60_000);

  it('--fix --unsafe-fixes writes every verified rewrite to the file', async () => {
    const { dir, diff } = repo();
    const r = await capture(['review', diff, '--repo', dir, '--fix', '--unsafe-fixes', '--no-compile', '--format', 'json', '--fail-on', 'none']);
    expect(r.code).toBe(0);
    expect(readFileSync(join(dir, 'gather.cu'), 'utf8')).toBe(readFileSync(join(fixtures, 'int64-index', 'gather.cu.fixed'), 'utf8'));
    const doc = JSON.parse(r.out) as { findings: Array<{ rewrite?: { edits?: unknown[]; verification?: { status: string } } }> };
    const rws = doc.findings.map((f) => f.rewrite).filter((x) => x?.edits);
    expect(rws.length).toBeGreaterThan(0);
    expect(rws[0]).toMatchObject({ verification: { status: 'unverified' } });
  }, 60_000);

  it('--dry-run without --fix is a usage error', async () => {
    const { dir, diff } = repo();
    const r = await capture(['review', diff, '--repo', dir, '--dry-run']);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/--dry-run goes with --fix/);
  });
});

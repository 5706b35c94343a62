import { existsSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { CHECKS } from '../../src/engine/registry.generated.js';
import { review } from '../../src/review/pipeline.js';
import { cStructure, maskUntouched, pythonStructure } from '../../src/sources/diff-scope.js';
import { detectLanguage } from '../../src/sources/detect.js';
import { findingKeys, oneLineDiff } from '../../src/sources/diff-scope-verify.js';
import { addedFileDiff, config, fixturePath, listFiles, parseMarkers, read } from '../helpers.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

describe('diff-scope structure', () => {
  it('finds C++ functions, methods, lambdas at namespace scope, and skips initializers', () => {
    const text = [
      '#include <cstdio>',
      'namespace a {',
      'struct S { int x; __device__ int get() const { return x; } };',
      'static const int table[] = { 1, 2, 3 };',
      'auto helper = [](int v) { return v + 1; };',
      '__global__ void __launch_bounds__(256) k(float* p) { p[threadIdx.x] = 1; }',
      'int S2::run(int n) noexcept { if (n) { return 1; } return 0; }',
      '}',
      'extern "C" { void c_api(void) { puts("}"); } }',
    ].join('\n');
    const s = cStructure(text)!;
    expect(s.functions.map((f) => `${f.owner ?? ''}:${f.name}`)).toEqual(['S:get', ':helper', ':k', 'S2:run', ':c_api']);
  });

  it('keeps a body split by #if/#else, and gives up on unbalanced braces', () => {
    const split = '#if A\nvoid f(int a) {\n#else\nvoid f(int a, int b) {\n#endif\n  g(a);\n}\n';
    expect(cStructure(split)).toBeNull();
    const inside = 'void f() {\n#if A\n  g(1);\n#else\n  g(2);\n#endif\n}\nvoid g(int) {}\n';
    expect(cStructure(inside)!.functions.map((f) => f.maskable)).toEqual([true, true]);
  });

  it('finds Python functions and methods, not nested defs, across strings and brackets', () => {
    const text = [
      'import cupy as cp',
      'K = cp.RawKernel(r"""',
      'def not_python(): pass',
      '""", "k")',
      'class A:',
      '    def m(self, x = (1,',
      '            2)):',
      '        def inner():',
      '            return 1',
      '        return inner()',
      '',
      'def f():',
      '    # a comment',
      '    return K',
    ].join('\n');
    const s = pythonStructure(text)!;
    expect(s.functions.map((f) => `${f.owner ?? ''}:${f.name}`)).toEqual(['A:m', ':f']);
  });

  it('blanks untouched bodies with same-length text and keeps callees and callers', () => {
    const text = [
      '__device__ float sq(float v) { return v * v; }', // 1: callee of k
      '__global__ void k(float* p) { p[0] = sq(p[0]); }', // 2: touched
      'void launch(float* p) { k<<<1, 32>>>(p); }', // 3: caller of k
      'void unrelated(int n) { for (int i = 0; i < n; ++i) printf("%d", i); }', // 4
    ].join('\n');
    const r = maskUntouched(text, 'cuda', new Set([2]))!;
    expect(r.text.length).toBe(text.length);
    const out = r.text.split('\n');
    expect(out.slice(0, 3)).toEqual(text.split('\n').slice(0, 3));
    expect(out[3]).toBe('void unrelated(int n) {' + ' '.repeat(text.split('\n')[3].length - 'void unrelated(int n) {'.length - 1) + '}');
    // Python files are parsed whole for now (see PYTHON_SCOPE in diff-scope.ts).
    const py = 'def a():\n    return b()\n\ndef b():\n    return 1\n\ndef c():\n    x = 1\n    return x\n';
    expect(maskUntouched(py, 'python', new Set([2]))).toBeNull();
  });
});

/**
 * Identity on every fixture: for a sample of each fixture's lines (the lines its markers point at,
 * and two more), the review of a one-line change with the diff-scope masking must report exactly
 * what the review of the same change reports on the whole file.
 */
const sharedDir = join(root, 'test', 'fixtures', 'shared');
const fixtureFiles = [
  ...CHECKS.filter((c) => c.requires !== 'compiler').flatMap((c) => {
    const dir = join(root, 'checks', c.id, 'fixtures');
    return existsSync(dir) ? listFiles(dir) : [];
  }),
  ...(existsSync(sharedDir) ? listFiles(sharedDir) : []),
].filter((f) => !f.endsWith('.fixed') && !f.endsWith('.md') && !f.endsWith('.snap'));

const cfg = config({ enable_preview: true });
const compares = new Map<string, number>();
const byRule = new Map<string, string[]>();
for (const f of fixtureFiles) {
  const key = relative(root, f).split('/').slice(0, 3).join('/');
  byRule.set(key, [...(byRule.get(key) ?? []), f]);
}

describe('diff-scope identity on the fixtures', () => {
  for (const [key, files] of byRule) {
    it(key, async () => {
      let compared = 0;
      for (const file of files) {
        const text = read(file);
        const path = fixturePath(file, text, `src/${relative(root, file)}`);
        const n = text.split('\n').length;
        const targets = [...new Set(parseMarkers(text).map((m) => m.target))].slice(0, 4);
        const lines = [...new Set([...targets, Math.ceil(n / 3), Math.ceil((2 * n) / 3)])].filter((l) => l >= 1 && l <= n);
        const readFile = async (p: string) => (p === path ? text : null);
        const language = detectLanguage(path, text, cfg.vocab.kernel_macros).language;
        for (const line of lines) {
          // Where nothing would be blanked both reviews parse the same text: nothing to compare.
          if (!language || !maskUntouched(text.replace(/\r\n/g, '\n'), language, new Set([line]))) continue;
          const diff = oneLineDiff(path, text, line);
          const on = await review({ diff, config: cfg, scope: 'added', readFile, workers: 0, diffScope: true });
          const off = await review({ diff, config: cfg, scope: 'added', readFile, workers: 0, diffScope: false });
          expect(findingKeys(on.result.findings), `${relative(root, file)} line ${line}`).toEqual(findingKeys(off.result.findings));
          expect(on.result.errors).toEqual(off.result.errors);
          compared++;
        }
      }
      compares.set(key, compared);
    }, 120_000);
  }

  it('compares on many fixtures (the masking is exercised, not skipped)', () => {
    expect([...compares.values()].filter((n) => n > 0).length).toBeGreaterThan(byRule.size / 4);
  });

  it('the whole-file review is unchanged (scope file never masks)', async () => {
    const file = fixtureFiles.find((f) => f.endsWith('.cu'))!;
    const text = read(file);
    const a = await review({ diff: addedFileDiff('src/a.cu', text), config: cfg, scope: 'file', workers: 0, diffScope: true });
    const b = await review({ diff: addedFileDiff('src/a.cu', text), config: cfg, scope: 'file', workers: 0, diffScope: false });
    expect(findingKeys(a.result.findings)).toEqual(findingKeys(b.result.findings));
  });
});

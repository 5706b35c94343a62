import Parser from 'tree-sitter';
import Cpp from 'tree-sitter-cpp';
import Cuda from 'tree-sitter-cuda';
import Python from 'tree-sitter-python';
import { describe, expect, it } from 'vitest';
import { BINDING_VERSION, installTreeSitterPatches, mirrorInstalled } from '../../src/sources/tree-sitter/patches.js';
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { errorRegions } from '../../src/sources/parsers.js';
import { getNativeWalker, mirrorOf, nativeWalkerInUse, setNativeWalker, verifyTree, type Mirror } from '../../src/sources/tree-sitter/mirror.js';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

function parser(lang: unknown): Parser {
  const p = new Parser();
  p.setLanguage(lang as Parser.Language);
  return p;
}
const py = parser(Python);
const cuda = parser(Cuda);
const cpp = parser(Cpp);

const PY = 'é = "ü😀"\nimport cupy as cp\n@dec\ndef f(x, *a, k=1, **kw) -> int:\n    """doc"""\n    for i in range(3):\n        y = cp.asnumpy(x[i]) if i else None  # c\n    return [z for z in x if z]\nclass C(B):\n    async def g(self): await h(lambda q: q + 1)\n';
const CU = '// 😀 comment\ntemplate <typename T>\n__global__ void __launch_bounds__(256) k(const T* __restrict__ x, T* y, int n) {\n  __shared__ float s[256];\n  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) { y[i] = x[i] * 2; }\n  if (threadIdx.x == 0) atomicAdd(&y[0], s[0]);\n}\nvoid host(float* d, cudaStream_t st) { k<float><<<1, 256, 0, st>>>(d, d, 4); cudaMemcpyAsync(d, d, 4, cudaMemcpyDeviceToHost, st); }\n';
const BROKEN = 'int f( {\n  return x +;\n}\nstruct S { int a\n};\n';

describe('tree mirror', () => {
  it('is installed (the load-time self-check passed)', () => {
    expect(mirrorInstalled).toBe(true);
  });

  it('is installed once, against the binding version package.json pins', () => {
    const pkg = JSON.parse(readFileSync(join(import.meta.dirname, '..', '..', 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    expect(pkg.dependencies['tree-sitter']).toBe(BINDING_VERSION);
    expect((createRequire(import.meta.url)('tree-sitter/package.json') as { version: string }).version).toBe(BINDING_VERSION);
    const first = installTreeSitterPatches();
    expect(first).toEqual({ binding: BINDING_VERSION, mirror: true, fastNodeFields: false });
    expect(installTreeSitterPatches()).toBe(first);
  });

  it('answers like the native binding on every node: ids, types, ranges, positions, parents, children, fields', () => {
    for (const [p, src] of [
      [py, PY],
      [cuda, CU],
      [cpp, CU],
      [cpp, BROKEN],
      [cuda, BROKEN],
      [py, 'def f(:\n  x = (1,\n'],
    ] as const) {
      expect(verifyTree(p.parse(src)), src).toBeNull();
    }
  });

  it('hands out one object per node, whichever way it is reached', () => {
    const tree = py.parse(PY);
    const root = tree.rootNode;
    expect(tree.rootNode).toBe(root);
    const call = root.descendantsOfType('call')[0];
    expect(call.parent?.children).toContain(call);
    expect(call.childForFieldName('function')?.parent).toBe(call);
    const cursor = root.walk();
    cursor.gotoFirstChild();
    expect(cursor.currentNode).toBe(root.firstChild);
    expect(root.descendantForIndex(call.startIndex, call.endIndex)).toBe(call);
    expect(call.descendantsOfType('identifier')).toEqual(call.descendantsOfType(['identifier', 'identifier']));
    expect(new Set(root.descendantsOfType(['identifier', 'call']).map((n) => n.id)).size).toBe(root.descendantsOfType(['identifier', 'call']).length);
  });

  it('finds ERROR and MISSING regions', () => {
    const text = BROKEN;
    const tree = cpp.parse(text);
    const { ranges, coverage } = errorRegions(tree.rootNode, text.length);
    expect(ranges.length).toBeGreaterThan(0);
    expect(coverage).toBeLessThan(1);
    expect(tree.rootNode.hasError).toBe(true);
    expect(errorRegions(cpp.parse('int f() { return 1; }\n').rootNode, 22)).toEqual({ ranges: [], coverage: 1 });
  });
});

describe('native walker (native/mirror.c)', () => {
  const walker = getNativeWalker();
  const built = existsSync(join(import.meta.dirname, '..', '..', 'native', 'build', 'Release', 'gpu_review_native.node'));

  it('is in use wherever `npm ci` built it', () => {
    expect(nativeWalkerInUse()).toBe(built && process.env.GPU_REVIEW_NATIVE !== '0');
  });

  it.skipIf(!walker)('fills the same arrays as the JS cursor walk, node for node', () => {
    const arrays = (m: Mirror) => ({ n: m.n, type: [...m.type.subarray(0, m.n)], start: [...m.start.subarray(0, m.n)], end: [...m.end.subarray(0, m.n)], field: [...m.field.subarray(0, m.n)], parent: [...m.parent.subarray(0, m.n)], last: [...m.last.subarray(0, m.n)], missing: [...m.missing.subarray(0, m.n)] });
    const deep = 'void f() {' + '{'.repeat(300) + 'x();' + '}'.repeat(300) + '}\n';
    const cases: Array<[Parser, string]> = [[py, PY], [cuda, CU], [cpp, CU], [cpp, BROKEN], [cuda, BROKEN], [py, 'def f(:\n  x = (1,\n'], [cpp, deep], [py, ''], [cpp, 'int a = "ü😀" [0];\n']];
    for (const [p, src] of cases) {
      const fromNative = arrays(mirrorOf(p.parse(src) as never));
      setNativeWalker(null);
      try {
        const fromJs = arrays(mirrorOf(p.parse(src) as never));
        expect(fromNative, src.slice(0, 40)).toEqual(fromJs);
      } finally {
        setNativeWalker(walker);
      }
      expect(verifyTree(p.parse(src)), src.slice(0, 40)).toBeNull();
    }
  });

  it.skipIf(!walker || !existsSync(join(import.meta.dirname, '..', '..', 'dist', 'src', 'cli.js')))('gives the same review with GPU_REVIEW_NATIVE=0 (the JS walk)', () => {
    const root = join(import.meta.dirname, '..', '..');
    const run = (env: Record<string, string>) =>
      spawnSync(process.execPath, ['dist/src/cli.js', 'review', 'examples/ring-area.diff', '--repo', 'examples/repo', '--format', 'json', '--fail-on', 'none'], { cwd: root, encoding: 'utf8', env: { ...process.env, ...env } });
    const a = run({});
    const b = run({ GPU_REVIEW_NATIVE: '0' });
    expect(a.status).toBe(0);
    expect(b.status).toBe(0);
    expect(JSON.parse(a.stdout).findings.length).toBeGreaterThan(0);
    expect(b.stdout).toBe(a.stdout);
  }, 60_000);
});

import { describe, expect, it } from 'vitest';
import { cppElementCount, cppTripCount, pyConstNumber, pyTripCount } from '../../src/analysis/counts.js';
import { cudaModel } from '../../src/analysis/cuda.js';
import { pythonModel } from '../../src/analysis/python.js';
import { streamFacts } from '../../src/analysis/streams.js';
import { buildSources } from '../../src/sources/build.js';
import { config } from '../helpers.js';

function source(text: string, path: string, language: 'cuda' | 'python') {
  const [s] = buildSources(path, language, { text, firstLine: 1, label: 'file', wholeFile: true }, 5000);
  return s;
}

describe('counts: Python', () => {
  const s = source(
    [
      'import os',
      'import cupy as cp',
      'N = 4 * 4',
      'class Pool:',
      '    def __init__(self, n_streams=32):',
      '        self.n = n_streams',
      '    def make(self):',
      '        return [cp.cuda.Stream() for _ in range(self.n)]',
      'def env():',
      '    n = int(os.environ.get("N_STREAMS", "12"))',
      '    a = [cp.cuda.Stream() for _ in range(n)]',
      '    b = [cp.cuda.Stream() for _ in range(N)]',
      '    for name in ("h2d", "compute", "d2h"):',
      '        pass',
      '    for i in range(2, 10, 2):',
      '        pass',
      '    c = [cp.cuda.Stream(priority=-1) for _ in range(min(8, N))]',
      '    err, d = cudart.cudaStreamCreateWithPriority(0, 3)',
    ].join('\n'),
    'src/p.py',
    'python',
  );
  const m = pythonModel.compute(s, config());
  const loops = s.root.descendantsOfType(['list_comprehension', 'for_statement']).sort((a, b) => a.startIndex - b.startIndex);
  it('folds constants, parameter defaults and configuration defaults into trip counts', () => {
    expect(loops.map((l) => pyTripCount(m, l))).toEqual([32, 12, 16, 3, 4, 8]);
  });
  it('evaluates arithmetic', () => {
    const n = s.root.descendantsOfType('assignment').find((a) => a.childForFieldName('left')?.text === 'N')!;
    expect(pyConstNumber(m, n.childForFieldName('right'))).toBe(16);
  });
  it('lists every stream creation with its priority', () => {
    const f = streamFacts.compute(s, config());
    expect(f.creations.map((c) => [c.name, c.priority?.text ?? null])).toEqual([
      [null, null],
      [null, null],
      [null, null],
      [null, '-1'],
      ['d', '3'],
    ]);
  });
});

describe('counts: C++', () => {
  const s = source(
    [
      'constexpr int kN = 16;',
      'struct P { cudaStream_t lanes_[kN]; };',
      'void f(std::array<cudaStream_t, 12>& a, std::vector<int>& v, int n = 6) {',
      '  std::vector<cudaStream_t> w(10);',
      '  for (int i = 0; i < kN; ++i) {}',
      '  for (int i = 1; i <= 4; i += 1) {}',
      '  for (int i = kN - 1; i >= 0; --i) {}',
      '  for (auto& s : a) {}',
      '  for (int i = 0; i < n; ++i) {}',
      '  for (size_t i = 0; i < v.size(); ++i) {}',
      '}',
    ].join('\n'),
    'src/c.cu',
    'cuda',
  );
  const m = cudaModel.compute(s, config());
  it('computes trip counts of counted and range loops', () => {
    const loops = s.root.descendantsOfType(['for_statement', 'for_range_loop']).sort((a, b) => a.startIndex - b.startIndex);
    expect(loops.map((l) => cppTripCount(m, l))).toEqual([16, 4, 16, 12, 6, null]);
  });
  it('finds array sizes of members, locals and parameters', () => {
    expect(cppElementCount(m, 'lanes_')).toBe(16);
    expect(cppElementCount(m, 'this->lanes_')).toBe(16);
    expect(cppElementCount(m, 'w')).toBe(10);
    expect(cppElementCount(m, 'a')).toBe(12);
  });
});

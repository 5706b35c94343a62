import { describe, expect, it } from 'vitest';
import { cudaModel, type CudaModel } from '../../src/analysis/cuda.js';
import { onceGuarded, pySetupOnceCall, setupOnceCall } from '../../src/analysis/once.js';
import { pythonModel, type PyModel } from '../../src/analysis/python.js';
import { allocatingTypes, constructionsOf } from '../../src/analysis/raii.js';
import { buildSources } from '../../src/sources/build.js';
import { config } from '../helpers.js';

function py(text: string, path = 'pkg/mod.py'): PyModel {
  const [s] = buildSources(path, 'python', { text, firstLine: 1, label: 'file', wholeFile: true }, 5000);
  return pythonModel.compute(s, config());
}
function cu(text: string, path = 'src/k.cu'): CudaModel {
  const [s] = buildSources(path, 'cuda', { text, firstLine: 1, label: 'file', wholeFile: true }, 5000);
  return cudaModel.compute(s, config());
}
const pyCall = (m: PyModel, line: number) => m.source.root.descendantsOfType('call').find((c) => c.startPosition.row + 1 === line && /malloc|Malloc/.test(c.text))!;
const cuCall = (m: CudaModel, line: number) => m.calls.find((c) => c.node.startPosition.row + 1 === line && /Malloc|SetCache/.test(c.name))!.node;

describe('HOT_PATH excludes one-time setup (setup_functions, constructors)', () => {
  it('Python: __init__ and setup functions are not hot, even with a loop', () => {
    const m = py(
      [
        'class R:',
        '    def __init__(self, n):',
        '        for _ in range(n):',
        '            p = cudart.cudaMalloc(8)',
        'def setup_buffers(n):',
        '    for _ in range(n):',
        '        p = cudart.cudaMalloc(8)',
        'def process(n):',
        '    for _ in range(n):',
        '        p = cudart.cudaMalloc(8)',
      ].join('\n') + '\n',
    );
    expect([4, 7, 10].map((l) => m.hotPath(pyCall(m, l)))).toEqual([false, false, true]);
  });
  it('CUDA: constructors, destructors and init functions are not hot', () => {
    const m = cu(
      [
        'struct B {',
        '  B(int n) { for (int i = 0; i < n; ++i) cudaMalloc(&p[i], 8); }',
        '  void* p[4];',
        '};',
        'void InitPools(int n) { for (int i = 0; i < n; ++i) cudaMalloc(&q[i], 8); }',
        'void step(int n) { for (int i = 0; i < n; ++i) cudaMalloc(&q[i], 8); }',
      ].join('\n') + '\n',
    );
    expect([2, 5, 6].map((l) => m.hotPath(cuCall(m, l)))).toEqual([false, false, true]);
  });
  it('the setup pattern is configurable', () => {
    expect(config({ setup_functions: '^prime_' }).setupFunctions.test('prime_cache')).toBe(true);
    expect(config().setupFunctions.test('initial_guess')).toBe(false);
    expect(config().setupFunctions.test('initialize_pools')).toBe(true);
  });
});

describe('onceGuarded', () => {
  it('Python: lazy init, grow-only capacity, first iteration; not an unrelated flag', () => {
    const m = py(
      [
        'def f(self, batches, use_pool):',
        '    for i, b in enumerate(batches):',
        '        if self._ws is None:',
        '            err, self._ws = cudart.cudaMalloc(8)',
        '        if b.nbytes > self._cap:',
        '            err, self._ws = cudart.cudaMalloc(b.nbytes)',
        '            self._cap = b.nbytes',
        '        if i == 0:',
        '            p = cudart.cudaMalloc(8)',
        '        if not use_pool:',
        '            p = cudart.cudaMalloc(8)',
        '        if key not in cache:',
        '            cache[key] = cudart.cudaMalloc(8)',
      ].join('\n') + '\n',
    );
    expect([4, 6, 9, 11, 13].map((l) => onceGuarded(pyCall(m, l)))).toEqual([true, true, true, false, true]);
  });
  it('CUDA: null test, configured flag, call_once, static init, while counter', () => {
    const m = cu(
      [
        'void f(int n, bool verbose) {',
        '  static std::once_flag once;',
        '  static bool done = (cudaFuncSetCacheConfig(k, cudaFuncCachePreferL1), true);',
        '  int rounds = 0;',
        '  while (rounds < n) {',
        '    if (!d_buf) cudaMalloc(&d_buf, 8);',
        '    if (!configured) { cudaFuncSetCacheConfig(k, cudaFuncCachePreferShared); configured = true; }',
        '    std::call_once(once, [] { cudaFuncSetCacheConfig(k, cudaFuncCachePreferShared); });',
        '    if (rounds == 0) cudaMalloc(&d_first, 8);',
        '    if (verbose) cudaMalloc(&d_dbg, 8);',
        '    ++rounds;',
        '  }',
        '}',
      ].join('\n') + '\n',
    );
    expect([3, 6, 7, 8, 9, 10].map((l) => onceGuarded(cuCall(m, l)))).toEqual([true, true, true, true, true, false]);
  });
});

describe('Python callMatches resolves import aliases', () => {
  it('matches `from cupy.cuda import runtime as rt; rt.malloc` but not the vibeSpatial runtime', () => {
    const m = py('from cupy.cuda import runtime as rt\nfrom vibespatial import runtime\np = rt.malloc(8)\nq = runtime.malloc(8)\n');
    const calls = m.source.root.descendantsOfType('call');
    expect(calls.map((c) => m.callMatches(c, ['cupy.cuda.runtime.malloc']))).toEqual([true, false]);
  });
});

describe('RAII wrappers', () => {
  it('finds classes whose constructor allocates and their constructions', () => {
    const m = cu(
      [
        'struct Buf {',
        '  explicit Buf(size_t n) { reserve(n); }',
        '  void reserve(size_t n) { cudaMalloc(&p, n); }',
        '  void* p;',
        '};',
        'struct View { View(void* q) : p(q) {} void* p; };',
        'void run(int n) {',
        '  Buf a(n);',
        '  Buf b{n};',
        '  auto c = Buf(n);',
        '  auto d = std::make_unique<Buf>(n);',
        '  View v(nullptr);',
        '  static Buf once(n);',
        '  thrust::device_vector<int> t(n);',
        '}',
      ].join('\n') + '\n',
    );
    const types = allocatingTypes(m, ['cudaMalloc']);
    expect([...types.keys()]).toEqual(['Buf']);
    const k = constructionsOf(m, new Set([...types.keys(), 'thrust::device_vector']));
    expect(k.map((x) => [x.node.startPosition.row + 1, x.type])).toEqual([
      [8, 'Buf'],
      [9, 'Buf'],
      [10, 'Buf'],
      [11, 'Buf'],
      [14, 'thrust::device_vector'],
    ]);
  });
});

describe('setupOnceCall: hot by HOT_PATH, but once per buffer', () => {
  const src = [
    'struct Plan { float* d; int n; };',
    'void build_plans(Plan* plan, int n_dev) {',
    '  for (int i = 0; i < n_dev; ++i) cudaMalloc(&plan[i].d, plan[i].n * 4);',
    '}',
    'void release_plans(Plan* plan, int n_dev) {',
    '  for (int i = 0; i < n_dev; ++i) cudaFree(plan[i].d);',
    '}',
    'void churn(float** f, int n) {',
    '  for (int i = 0; i < n; ++i) { cudaMalloc(&f[i], 64); k<<<1, 32>>>(f[i]); cudaFree(f[i]); }',
    '}',
    'void launch_plans(Plan* plan, int n_dev) {',
    '  for (int i = 0; i < n_dev; ++i) cudaMalloc(&plan[i].d, plan[i].n * 4);',
    '}',
    'void run_frames(float* out, int n) {',
    '  float* d; cudaMalloc(&d, n * 4);',
    '  for (int f = 0; f < n; ++f) k<<<1, 32>>>(d);',
    '  cudaFree(d);',
    '}',
    'void run_two(float* out, int n) {',
    '  k<<<1, 32>>>(out);',
    '  float* d; cudaMalloc(&d, n * 4);',
    '  for (int f = 0; f < n; ++f) k<<<1, 32>>>(d);',
    '}',
  ].join('\n') + '\n';
  it('CUDA: setup/teardown loops and hoisted allocations, not churn, hot names or calls between GPU ops', () => {
    const m = cu(src);
    const cfg = config();
    const at = (line: number, name: string) => m.calls.find((c) => c.node.startPosition.row + 1 === line && c.name === name)!;
    const cases: Array<[number, string]> = [[3, 'cudaMalloc'], [6, 'cudaFree'], [9, 'cudaMalloc'], [9, 'cudaFree'], [12, 'cudaMalloc'], [15, 'cudaMalloc'], [17, 'cudaFree'], [21, 'cudaMalloc']];
    expect(cases.map(([l, n]) => m.hotPath(at(l, n).node))).toEqual(cases.map(() => true));
    expect(cases.map(([l, n]) => setupOnceCall(m, at(l, n), cfg))).toEqual([true, true, false, false, false, true, true, false]);
  });
  it('Python: a loop freeing its own target and allocating nothing', () => {
    const m = py(
      [
        'from cupy.cuda import runtime as cprt',
        'def release(bufs):',
        '    for label, ptr in bufs:',
        '        cprt.free(ptr)',
        'def churn(batches):',
        '    for b in batches:',
        '        p = cprt.malloc(b.nbytes)',
        '        cprt.free(p)',
      ].join('\n') + '\n',
    );
    const frees = m.source.root.descendantsOfType('call').filter((c) => /free/.test(c.text));
    expect(frees.map((c) => pySetupOnceCall(m, c, config()))).toEqual([true, false]);
  });
});

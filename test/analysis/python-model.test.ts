import { describe, expect, it } from 'vitest';
import { pythonModel, type PyModel } from '../../src/analysis/python.js';
import { buildSources } from '../../src/sources/build.js';
import { config } from '../helpers.js';

function model(text: string, path = 'pkg/mod.py'): PyModel {
  const [s] = buildSources(path, 'python', { text, firstLine: 1, label: 'file', wholeFile: true }, 5000);
  return pythonModel.compute(s, config());
}

/** Device-ness of the expression assigned to `probe` on the last line. */
function deviceOf(prelude: string, expr: string): boolean {
  const m = model(`import cupy as cp\nimport numpy as np\ndef f(a, n, d_in, host_list):\n${prelude.split('\n').map((l) => '    ' + l).join('\n')}\n    probe = ${expr}\n`);
  const a = m.source.root.descendantsOfType('assignment').find((x) => x.childForFieldName('left')?.text === 'probe')!;
  return m.isDevice(a.childForFieldName('right'));
}

describe('DEVICE taint (catalog §1.4)', () => {
  it.each([
    ['', 'cp.zeros((n,), dtype=cp.float64)', true],
    ['', 'cp.asarray(host_list)', true],
    ['x = cp.arange(n)', 'x[1:5]', true],
    ['x = cp.arange(n)', 'x * 2 + 1', true],
    ['x = cp.arange(n)', 'x.astype(cp.float32)', true],
    ['x = cp.arange(n)', 'x.shape', false],
    ['x = cp.arange(n)', 'x.shape[0]', false],
    ['x = cp.arange(n)', 'x.size', false],
    ['x = cp.arange(n)', 'x.dtype', false],
    ['x = cp.arange(n)', 'x.get()', false],
    ['x = cp.arange(n)', 'x.data.ptr', false],
    ['x = cp.arange(n)', 'int(x[0])', false],
    ['', 'd_in', true],
    ['', 'd_in[-1] + d_in[0]', true],
    ['', 'runtime.allocate((n,), np.float64)', true],
    ['', 'exclusive_sum(d_in, synchronize=False)', true],
    ['', 'count_scatter_total(runtime, d_in, d_in)', false],
    ['', 'runtime.pointer(d_in)', false],
    ['', 'np.arange(n)', false],
    ['', 'host_list', false],
    ['', 'cp.cuda.runtime.getDeviceCount()', false],
    ['', 'cp.float32(3.0)', false],
    ['d_tmp = helper(a)', 'd_tmp', true],
    ['d_tmp = len(a)', 'd_tmp', false],
    ['x = cp.arange(n)\nx = x.get()', 'x', false],
    ['', 'cp.sum(d_in) > 0', true],
    ['', 'config.get("key")', false],
    ['', 'd_in is None', false],
    ['', 'd_in is not None and cp.any(d_in)', true],
    ['', '"%d hits" % d_in.sum()', false],
  ])('%s → %s is device: %s', (prelude, expr, want) => {
    expect(deviceOf(prelude, expr)).toBe(want);
  });

  it('parameters annotated cp.ndarray are device values', () => {
    const m = model('import cupy as cp\ndef f(xs: cp.ndarray, n: int):\n    return float(xs[0])\n');
    expect(m.d2h.map((d) => d.kind)).toEqual(['convert']);
  });
});

describe('D2H (catalog §1.4)', () => {
  it('finds every transfer form and none of the metadata reads', () => {
    const m = model(
      [
        'import cupy as cp',
        'def f(d_x, cfg, log):',
        '    a = d_x.get()',
        '    b = cp.asnumpy(d_x)',
        '    c = d_x[0].item()',
        '    d = d_x.tolist()',
        '    e = int(d_x[-1])',
        '    print(d_x)',
        '    s = f"value {d_x[0]}"',
        '    if cp.any(d_x > 0):',
        '        pass',
        '    m = max(d_x[0], d_x[1])',
        '    l = list(d_x)',
        '    ok1 = int(d_x.shape[0])',
        '    ok2 = len(d_x)',
        '    ok3 = cfg.get("k")',
        '    ok4 = d_x.nbytes',
        '    log.info("n=%d", d_x.size)',
      ].join('\n') + '\n',
    );
    expect(m.d2h.map((d) => d.kind)).toEqual(['get', 'asnumpy', 'item', 'tolist', 'convert', 'print', 'str', 'condition', 'builtin', 'builtin']);
    expect(m.d2h.find((d) => d.kind === 'convert')?.scalar).toBe(true);
    expect(m.d2h.find((d) => d.kind === 'get')?.scalar).toBe(false);
  });
});

describe('GPU_OP and context predicates', () => {
  const text = [
    'import cupy as cp',
    'import logging',
    'log = logging.getLogger(__name__)',
    'k = cp.RawKernel(SRC, "k")',
    'def dispatch(d_x, n, use_gpu):',
    '    runtime.launch(kern, grid=(1,), block=(32,), args=(d_x,))',
    '    k((1,), (32,), (d_x,))',
    '    y = cp.sum(d_x)',
    '    z = d_x * 2',
    '    for i in range(n):',
    '        w = d_x[i].get()',
    '    if log.isEnabledFor(logging.DEBUG):',
    '        dbg = d_x.get()',
    '    if not use_gpu:',
    '        h = d_x.get()',
    '    return [v.get() for v in parts]',
  ].join('\n') + '\n';
  const m = model(text);
  it('classifies launches, kernel calls, CuPy calls and operators', () => {
    expect(m.gpuOps.map((o) => o.kind)).toEqual(['launch', 'kernel-call', 'cupy', 'operator']);
  });
  it('IN_LOOP, DEBUG_GATED, CPU fallback, HOT_PATH', () => {
    const byLine = (line: number) => m.d2h.find((d) => d.node.startPosition.row + 1 === line)!;
    expect(m.inLoop(byLine(11).node)).toBe(true);
    expect(m.debugGated(byLine(13).node)).toBe(true);
    expect(m.debugGated(byLine(11).node)).toBe(false);
    expect(m.inCpuFallback(byLine(15).node)).toBe(true);
    expect(m.hotPath(byLine(15).node)).toBe(true);
  });
  it('the iterable of a for loop is evaluated once', () => {
    const mm = model('def f(d_t, g):\n    for row in d_t.get():\n        print(row)\n');
    expect(mm.inLoop(mm.d2h[0].node)).toBe(false);
  });
  it('TEST_OR_BENCH paths', () => {
    expect(model('x = 1\n', 'tests/test_a.py').testOrBench).toBe(true);
    expect(model('x = 1\n', 'benchmarks/run.py').testOrBench).toBe(true);
    expect(model('x = 1\n', 'pkg/core.py').testOrBench).toBe(false);
  });
});

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

/** Device-ness of the expression assigned to `probe` (last such assignment) in a whole module. */
function probeIn(text: string): boolean {
  const m = model(text);
  const all = m.source.root.descendantsOfType('assignment').filter((x) => x.childForFieldName('left')?.text === 'probe');
  return m.isDevice(all[all.length - 1].childForFieldName('right'));
}

describe('DEVICE by imports, helpers, members, names and tensor libraries', () => {
  it.each([
    ['import cupy as _xp\ndef f(n):\n    probe = _xp.zeros(n)\n', true],
    ['from cupy import asarray as upload\ndef f(h):\n    probe = upload(h)\n', true],
    ['import cupyx.scipy.ndimage as ndi\ndef f(a):\n    probe = ndi.gaussian_filter(a, 2)\n', true],
    ['import numpy as np\ndef f(h):\n    probe = np.asarray(h)\n', false],
    // Same-file helpers that return device data, also element-wise from a tuple.
    ['import cupy as cp\ndef _norms(a):\n    return cp.linalg.norm(a, axis=1)\ndef f(a):\n    probe = _norms(a)\n', true],
    ['import cupy as cp\ndef _pair(a):\n    s = cp.sort(a)\n    return s, len(a)\ndef f(a):\n    probe, k = _pair(a)\n    probe = probe\n', true],
    ['import cupy as cp\ndef _pair(a):\n    s = cp.sort(a)\n    return s, len(a)\ndef f(a):\n    s, probe = _pair(a)\n    probe = probe\n', false],
    ['import cupy as cp\ndef f(a):\n    vals, probe = cp.unique(a, return_inverse=True)\n    probe = probe\n', true],
    // Members of a device-state object, assigned in another method.
    ['import cupy as cp\nclass Buf:\n    def __init__(self, n):\n        self.acc = None\n        self.acc = cp.zeros(n)\n    def read(self):\n        probe = self.acc\n', true],
    ['import cupy as cp\nclass Buf:\n    def __init__(self, n):\n        self.count = 0\n    def read(self):\n        probe = self.count\n', false],
    // Naming conventions of parameters.
    ['def f(out_gpu, rows_device, target_device):\n    probe = out_gpu\n', true],
    ['def f(out_gpu, rows_device, target_device):\n    probe = rows_device\n', true],
    ['def f(out_gpu, rows_device, target_device):\n    probe = target_device\n', false],
    // torch and warp.
    ['import torch\ndef f(h):\n    t = h.cuda()\n    probe = torch.linalg.norm(t)\n', true],
    ['import torch\ndef f(h):\n    probe = h.to("cuda:0")\n', true],
    ['import torch\ndef f(h):\n    probe = torch.zeros(4, device="cuda")\n', true],
    ['import torch\ndef f(h):\n    probe = torch.zeros(4)\n', false],
    ['import warp as wp\ndef f(n):\n    probe = wp.zeros(n, dtype=float)\n', true],
    ['import warp as wp\ndef f(n):\n    probe = wp.zeros(n, dtype=float, device="cpu")\n', false],
    // A binding in the other branch of the same `if` does not reach the use.
    ['import cupy as cp\ndef f(c, colors):\n    if c is None:\n        colors = cp.ones(3)\n    else:\n        probe = colors\n', false],
  ])('%s', (text, expected) => {
    expect(probeIn(text)).toBe(expected);
  });
});

describe('D2H and GPU work of the wider host model', () => {
  it('torch .item()/.cpu(), warp .numpy(), a device value stored into a NumPy array', () => {
    const m = model(
      'import numpy as np\nimport torch\nimport warp as wp\ndef f(h, offsets, n):\n    t = h.cuda()\n    a = t.sum().item()\n    b = t.cpu()\n    c = offsets.numpy()\n    res = np.zeros(n)\n    res[0] = t.max()\n',
    );
    expect(m.d2h.map((d) => [d.node.startPosition.row + 1, d.kind])).toEqual([
      [6, 'item'],
      [7, 'get'],
      [8, 'get'],
      [10, 'convert'],
    ]);
  });
  it('a CuPy array function is GPU work even when its arguments are not known to be device arrays', () => {
    const m = model('import cupy as cp\ndef f(a, b):\n    cp.minimum(a, b, out=a)\n    x = cp.empty(4)\n    cp.random.seed(1)\n');
    expect(m.gpuOps.map((o) => o.node.text)).toEqual(['cp.minimum(a, b, out=a)']);
  });
  it('a call to a same-file helper that does GPU work is GPU work (summaries)', () => {
    const m = model('import cupy as cp\ndef _step(a):\n    return cp.exp(a)\ndef _host(a):\n    return len(a)\ndef f(a):\n    _step(a)\n    _host(a)\n');
    expect(m.gpuOps.filter((o) => o.kind === 'helper').map((o) => o.node.text)).toEqual(['_step(a)']);
  });
  it('module-level aliases of imports name the same module or function; rebound or conditional ones do not', () => {
    const m = model(
      'import cupy\nimport numpy as np\n_xp = cupy\nto_dev = cupy.asarray\nxp2 = cupy if np else np\nswap = cupy\nswap = np\ndef f(h):\n    a = to_dev(h)\n    b = _xp.zeros(3)\n    c = xp2.zeros(3)\n    d = swap.zeros(3)\n',
    );
    const rhs = (name: string) => m.source.root.descendantsOfType('assignment').find((x) => x.childForFieldName('left')?.text === name)!.childForFieldName('right');
    expect(['a', 'b', 'c', 'd'].map((n) => m.isDevice(rhs(n)))).toEqual([true, true, false, false]);
  });
  it('a private method of the one class that defines it is summarised at `obj._m()` calls', () => {
    const m = model('import cupy as cp\nclass W:\n    def _fill(self, n):\n        return cp.zeros(n)\ndef f(w, n):\n    x = w._fill(n)\n    y = w.fill(n)\n');
    const rhs = (name: string) => m.source.root.descendantsOfType('assignment').find((x) => x.childForFieldName('left')?.text === name)!.childForFieldName('right');
    expect([m.isDevice(rhs('x')), m.isDevice(rhs('y'))]).toEqual([true, false]);
    expect(m.calleeDef(rhs('x')!)?.childForFieldName('name')?.text).toBe('_fill');
  });
  it('a parameter the function hands over as a CuPy array (`x.data.ptr`) is a device value; `q.get()` is no evidence', () => {
    const m = model('import cupy as cp\ndef f(x, q, n):\n    k((1,), (1,), (x.data.ptr, n))\n    item = q.get()\n    a = float(x[0])\n    b = float(q[0])\n');
    expect(m.d2h.map((d) => d.node.text)).toEqual(['float(x[0])']);
  });
  it('a `test_*` function is debug-gated only in a test module', () => {
    const src = 'import cupy as cp\ndef test_err(d):\n    return float(cp.sum(d))\n';
    const lib = model(src, 'pkg/measure.py');
    const tst = model(src, 'tests/test_measure.py');
    expect(lib.debugGated(lib.d2h[0].node)).toBe(false);
    expect(tst.debugGated(tst.d2h[0].node)).toBe(true);
  });
});

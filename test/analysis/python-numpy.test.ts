import { describe, expect, it } from 'vitest';
import { pythonModel, type PyModel } from '../../src/analysis/python.js';
import { buildSources } from '../../src/sources/build.js';
import { config } from '../helpers.js';

function model(text: string, path = 'pkg/mod.py'): PyModel {
  const [s] = buildSources(path, 'python', { text, firstLine: 1, label: 'file', wholeFile: true }, 5000);
  return pythonModel.compute(s, config());
}
const rhs = (m: PyModel, name: string) =>
  m.source.root.descendantsOfType('assignment').find((a) => a.childForFieldName('left')?.text === name)!.childForFieldName('right');
const calls = (m: PyModel) => m.source.root.descendantsOfType('call');

describe('numpy on device values (NEP 13/18 dispatch)', () => {
  const m = model(
    [
      'import cupy as cp',
      'import numpy as np',
      'def f(d_x, h, n, dx, dy):',
      '    a = np.argsort(d_x)',
      '    b = np.concatenate([d_x, d_x])',
      '    c = np.asarray(d_x)',
      '    e = np.dtype(d_x.dtype)',
      '    g = np.arange(n)',
      '    p = np.partition(d_x, 3)',
      '    d_sq = dx * dx + dy * dy',
      '    d_y = h',
      '    probe_sq = d_sq',
      '    probe_y = d_y',
    ].join('\n') + '\n',
  );
  it('np.<fn>(DEVICE) is DEVICE; conversions, metadata helpers and host arguments are not', () => {
    expect(['a', 'b', 'c', 'e', 'g'].map((n) => m.isDevice(rhs(m, n)))).toEqual([true, true, false, false, false]);
  });
  it('np.partition is not a CCCL primitive', () => {
    expect(m.gpuOps.some((o) => o.node.text.startsWith('np.partition'))).toBe(false);
  });
  it('arithmetic on untainted host names is host even under a d_ name; a bare d_ alias keeps the convention', () => {
    expect(m.isDevice(rhs(m, 'probe_sq'))).toBe(false);
    expect(m.isDevice(rhs(m, 'probe_y'))).toBe(true);
  });
});

describe('imports and uploads', () => {
  it('resolves module aliases', () => {
    const m = model('import cupy as np\nimport numpy\nfrom jax import numpy as jnp\n');
    expect(m.moduleOf('np')).toBe('cupy');
    expect(m.aliasFor('numpy')).toBe('numpy');
    expect(m.isNumpyPath('np.sort')).toBe(false);
    expect(m.isNumpyPath('numpy.sort')).toBe(true);
    expect(m.isNumpyPath('jnp.sort')).toBe(false);
  });
  it('falls back to the np/numpy convention without imports', () => {
    expect(model('x = 1\n').isNumpyPath('np.add.at')).toBe(true);
  });
  it('recognizes uploads', () => {
    const m = model(
      [
        'import cupy as cp',
        'def f(h, d_buf, d_ptr):',
        '    cp.asarray(h)',
        '    runtime.from_host(h)',
        '    d_buf.set(h)',
        '    cudart.cudaMemcpy(d_ptr, h.ctypes.data, h.nbytes, cudart.cudaMemcpyKind.cudaMemcpyHostToDevice)',
        '    cudart.cudaMemcpy(h.ctypes.data, d_ptr, h.nbytes, cudart.cudaMemcpyKind.cudaMemcpyDeviceToHost)',
        '    cache.set(h)',
      ].join('\n') + '\n',
    );
    const top = calls(m).filter((c) => c.parent?.type === 'expression_statement');
    expect(top.map((c) => m.isUpload(c))).toEqual([true, true, true, true, false, false]);
  });
  it('dual-backend branches are CPU fallbacks; *_to_host helpers are not', () => {
    const m = model(
      [
        'import cupy as cp',
        'import numpy as np',
        'def f(d_x):',
        '    if isinstance(d_x, np.ndarray):',
        '        a = d_x.get()',
        'def ring_lengths_to_host(d_x):',
        '    return d_x.get()',
      ].join('\n') + '\n',
    );
    expect(m.d2h.map((d) => m.inCpuFallback(d.node))).toEqual([true, false]);
  });
});

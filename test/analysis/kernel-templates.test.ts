import { describe, expect, it } from 'vitest';
import { kernelTemplates, placeholdersOf, type KernelTemplateFacts } from '../../src/analysis/kernel-templates.js';
import { buildSources } from '../../src/sources/build.js';
import { config } from '../helpers.js';

function facts(text: string): KernelTemplateFacts {
  const [s] = buildSources('pkg/kernels.py', 'python', { text, firstLine: 1, label: 'file', wholeFile: true }, 5000);
  return kernelTemplates.compute(s, config());
}

const TPL = `_TPL = """typedef {compute_type} compute_t;
#define TILE {tile}
extern "C" __global__ void join(const double* a, double* out, int n) {{
  int i = blockIdx.x * TILE + threadIdx.x; if (i < n) out[i] = (double)(compute_t)a[i]; }}"""
`;

function site(body: string) {
  const f = facts(`${TPL}\ndef build(plan, ct, tile, fast):\n${body.split('\n').map((l) => '    ' + l).join('\n')}\n`);
  expect(f.keySites.length).toBe(1);
  const s = f.keySites[0];
  return { ...s, missingNames: s.missing.map((p) => p.name), precisionMissing: s.missing.some((p) => p.precision) };
}

describe('kernel templates → format → cache key (003 §7.1, §7.2)', () => {
  it('reads placeholders, ignoring doubled braces', () => {
    expect(placeholdersOf('typedef {compute_type} compute_t; void k() {{ a[{tile}]; }}')).toEqual(['compute_type', 'tile']);
  });

  it('a key from the fully formatted source covers every format value', () => {
    const s = site('src = _TPL.format(compute_type=ct, tile=tile)\nkey = make_kernel_cache_key("join", src)\nreturn runtime.compile_kernels(cache_key=key, source=src)');
    expect(s.sourceKind).toBe('formatted');
    expect(s.template).toBe('_TPL');
    expect(s.params.map((p) => p.name).sort()).toEqual(['compute_type', 'tile']);
    expect(s.missing).toEqual([]);
    expect(s.compiles.length).toBe(1);
  });

  it('a key from the unformatted template misses what its name does not interpolate', () => {
    const s = site('src = _TPL.format(compute_type=ct, tile=tile)\nkey = make_kernel_cache_key(f"join-{ct}", _TPL)\nreturn runtime.compile_kernels(cache_key=key, source=src)');
    expect(s.sourceKind).toBe('template');
    expect(s.nameKind).toBe('fstring');
    expect(s.missingNames).toEqual(['tile']);
    expect(s.precisionMissing).toBe(false);
  });

  it('marks the precision parameter, also through plan.compute_precision in the name', () => {
    const miss = site('src = _TPL.format(compute_type=ct, tile=8)\nreturn runtime.compile_kernels(cache_key="join", source=src)');
    expect(miss.nameKind).toBe('literal');
    expect(miss.sourceKind).toBe('none');
    expect(miss.missingNames).toEqual(['compute_type']);
    expect(miss.precisionMissing).toBe(true);
    const ok = site('src = _TPL.format(compute_type=ct, tile=8)\nreturn runtime.compile_kernels(cache_key=f"join-{plan.compute_precision.name}", source=src)');
    expect(ok.missing).toEqual([]);
  });

  it('literal format values and module constants are not parameters', () => {
    const s = site('src = _TPL.format(compute_type="double", tile=128)\nkey = make_kernel_cache_key("join", _TPL)\nreturn runtime.compile_kernels(cache_key=key, source=src)');
    expect(s.params).toEqual([]);
  });

  it('run-time compile options are parameters unless hashed or constant', () => {
    const varying = site('src = _TPL.format(compute_type=ct, tile=tile)\nopts = ("--std=c++17",) + (("--use_fast_math",) if fast else ())\nkey = make_kernel_cache_key("join", src)\nreturn runtime.compile_kernels(cache_key=key, source=src, options=opts)');
    expect(varying.missingNames).toEqual(['options']);
    expect(varying.missing[0].value).toBe('fast');
    const hashed = site('src = _TPL.format(compute_type=ct, tile=tile)\nopts = (f"-DB={tile}",)\nkey = make_kernel_cache_key("join", src + repr(opts))\nreturn runtime.compile_kernels(cache_key=key, source=src, options=opts)');
    expect(hashed.missing).toEqual([]);
  });

  it('f-string kernels: interpolations are parameters, the hashed f-string covers them', () => {
    const bare = site('src = f"""typedef {ct} compute_t; extern "C" __global__ void k(float* x) {{ x[0] = {tile}; }}"""\nreturn runtime.compile_kernels(cache_key=f"k-{ct}", source=src)');
    expect(bare.missingNames).toEqual(['tile']);
    const hashed = site('src = f"""typedef {ct} compute_t; extern "C" __global__ void k(float* x) {{ x[0] = {tile}; }}"""\nkey = make_kernel_cache_key("k", src)\nreturn runtime.compile_kernels(cache_key=key, source=src)');
    expect(hashed.missing).toEqual([]);
  });

  it('a module-level key from the template is paired with the compile call that uses it', () => {
    const f = facts(`${TPL}\n_KEY = make_kernel_cache_key("join", _TPL)\n\ndef build(ct, tile):\n    return runtime.compile_kernels(cache_key=_KEY, source=_TPL.format(compute_type=ct, tile=tile))\n`);
    expect(f.keySites.length).toBe(1);
    expect(f.keySites[0].compiles.length).toBe(1);
    expect(f.keySites[0].missing.map((p) => p.name).sort()).toEqual(['compute_type', 'tile']);
  });

  it('names from helpers or parameters are unknown and cover everything', () => {
    const s = site('src = _TPL.format(compute_type=ct, tile=tile)\nkey = make_kernel_cache_key(_name(plan), _TPL)\nreturn runtime.compile_kernels(cache_key=key, source=src)');
    expect(s.nameKind).toBe('unknown');
    expect(s.missing).toEqual([]);
  });
});

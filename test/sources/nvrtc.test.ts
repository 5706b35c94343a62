import { describe, expect, it } from 'vitest';
import { defineCheck } from '../../src/engine/check.js';
import { buildSources } from '../../src/sources/build.js';
import type { Source } from '../../src/sources/types.js';
import { reviewText } from '../helpers.js';

function sources(text: string): Source[] {
  return buildSources('pkg/kernels.py', 'python', { text, firstLine: 1, label: 'file', wholeFile: true }, 5000);
}

/** A probe check that reports every `threadIdx` in kernel strings, to test position mapping end to end. */
const probe = defineCheck({
  id: 'kernel/probe',
  pass: 3,
  severity: 'low',
  kind: 'performance',
  confidence: 'high',
  languages: ['nvrtc-in-python'],
  citation: '003 §0',
  summary: 'test probe',
  why: 'Reports every threadIdx so the test can check where it lands.',
  messages: { hit: 'threadIdx here' },
  fix: 'none',
  create: (ctx) => ({
    field_expression(n) {
      if (n.childForFieldName('argument')?.text === 'threadIdx') ctx.report({ node: n, messageId: 'hit' });
    },
  }),
});

async function probeHits(text: string): Promise<Array<[number, number]>> {
  const f = await reviewText('pkg/kernels.py', text, { checks: [probe], repoMode: true });
  return f.map((x) => [x.line, x.column]);
}

function where(text: string, needle: string, nth = 0): [number, number] {
  const lines = text.split('\n');
  let seen = 0;
  for (let i = 0; i < lines.length; i++) {
    let from = 0;
    for (;;) {
      const c = lines[i].indexOf(needle, from);
      if (c < 0) break;
      if (seen++ === nth) return [i + 1, c + 1];
      from = c + 1;
    }
  }
  throw new Error(`${needle} not found`);
}

describe('CUDA in Python strings (catalog §1.2)', () => {
  it('extracts a RawKernel raw string and maps positions to the Python lines', async () => {
    const py = [
      'import cupy as cp',
      '',
      "_SRC = r'''",
      'extern "C" __global__ void scale(float* x, float a, int n) {',
      '    int i = blockIdx.x * blockDim.x + threadIdx.x;',
      '    if (i < n) x[i] *= a;',
      '}',
      "'''",
      "_k = cp.RawKernel(_SRC, 'scale')",
      '',
    ].join('\n');
    const s = sources(py);
    expect(s.map((x) => x.language)).toEqual(['python', 'nvrtc-in-python']);
    expect(s[1].parseCoverage).toBe(1);
    expect(s[1].label).toContain('_SRC');
    expect(await probeHits(py)).toEqual([where(py, 'threadIdx.x')]);
  });

  it('turns a str.format template into CUDA: doubled braces, placeholders traced to .format(...)', async () => {
    const py = [
      '_TEMPLATE = """',
      'typedef {compute_type} compute_t;',
      'extern "C" __global__ void {name}(const compute_t* x, compute_t* out, int n) {{',
      '    int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) {{ out[i] = x[i] * {scale}; }}',
      '}}',
      '"""',
      'def build(runtime, precision):',
      '    src = _TEMPLATE.format(compute_type="double" if precision else "float", name="scale_k", scale=2)',
      '    return runtime.compile_kernels(src)',
      '',
    ].join('\n');
    const s = sources(py);
    expect(s).toHaveLength(2);
    const k = s[1];
    expect(k.parseCoverage).toBe(1);
    expect(k.text).toContain('typedef __FMT_compute_type__ compute_t;');
    expect(k.text).toContain('void __FMT_name__(const compute_t* x');
    expect(k.text).not.toContain('{{');
    expect(k.placeholders?.get('__FMT_compute_type__')).toBe('"double" if precision else "float"');
    expect(k.placeholders?.get('__FMT_scale__')).toBe('2');
    // A token after a placeholder on the same line still maps to its exact Python column.
    expect(await probeHits(py)).toEqual([where(py, 'threadIdx.x')]);
  });

  it('handles f-strings, escapes and implicit concatenation', async () => {
    const py = [
      'BLOCK = 256',
      'src = (',
      '    f"extern \\"C\\" __global__ void fill(float* x, int n) {{\\n"',
      '    f"  __shared__ float tile[{BLOCK}];\\n"',
      '    "  int i = threadIdx.x + blockIdx.x * blockDim.x;\\n"',
      '    "  if (i < n) x[i] = 0.f;\\n"',
      '    "}\\n"',
      ')',
      'mod = cupy.RawModule(code=src)',
      '',
    ].join('\n');
    const s = sources(py);
    expect(s).toHaveLength(2);
    expect(s[1].text).toContain('__shared__ float tile[__FSTR_0__];');
    expect(s[1].text.split('\n').length).toBeGreaterThanOrEqual(5);
    expect(s[1].parseCoverage).toBe(1);
    expect(await probeHits(py)).toEqual([where(py, 'threadIdx.x')]);
  });

  it('follows a name assigned once through concatenation with a device-function snippet', async () => {
    const py = [
      'HELPERS = """',
      '__device__ float sq(float v) { return v * v; }',
      '"""',
      'KERNEL = HELPERS + """',
      'extern "C" __global__ void norm(const float* x, float* out, int n) {',
      '    int i = threadIdx.x;',
      '    out[i] = sq(x[i]);',
      '}',
      '"""',
      'k = cp.RawKernel(KERNEL, "norm")',
      '',
    ].join('\n');
    const s = sources(py);
    const kernels = s.filter((x) => x.language === 'nvrtc-in-python');
    expect(kernels.length).toBeGreaterThanOrEqual(1);
    expect(kernels.some((k) => k.text.includes('sq(float v)') && k.text.includes('void norm'))).toBe(true);
    expect(await probeHits(py)).toEqual([where(py, 'threadIdx.x')]);
  });

  it('ignores strings that are not CUDA', () => {
    const py = 'msg = "launch {n} blocks"\nprint(msg.format(n=3))\nquery = """SELECT * FROM t WHERE x = {x}"""\n';
    expect(sources(py)).toHaveLength(1);
  });

  it('maps findings in a diff-only hunk of a Python file back to file lines', async () => {
    const body = [
      "K = r'''",
      'extern "C" __global__ void k(float* x) { x[threadIdx.x] = 1.f; }',
      "'''",
      "kern = cp.RawKernel(K, 'k')",
    ];
    const py = ['import cupy as cp', '', ...body, ''].join('\n');
    expect(await probeHits(py)).toEqual([where(py, 'threadIdx.x')]);
  });
});

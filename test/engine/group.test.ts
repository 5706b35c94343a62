import { describe, expect, it } from 'vitest';
import { CHECKS } from '../../checks/registry.generated.js';
import { renderJson } from '../../src/reporters/json.js';
import { review } from '../../src/review/pipeline.js';
import { addedFileDiff, config, reviewText } from '../helpers.js';

const rule = (id: string) => CHECKS.find((c) => c.id === id)!;
const getInLoop = rule('host-device/get-in-loop');
const constRestrict = rule('nvrtc/missing-const-restrict');
const blockSize = rule('kernel/hardcoded-block-size');

const loop = (reads: string[]) =>
  [
    'from vibespatial import runtime',
    '',
    'def lengths(d_off, d_len, n, g, b):',
    '    out = []',
    '    for p in range(n):',
    ...reads.map((r, i) => `        v${i} = ${r}`),
    '        runtime.launch(fill_kernel, grid=g, block=b, args=(d_len, p))',
    '        out.append(v0)',
    '    return out',
    '',
  ].join('\n');

describe('one finding per root cause', () => {
  it('groups the device reads of one loop, with every site as a member', async () => {
    const f = await reviewText('a.py', loop(['int(d_off[p])', 'int(d_off[p + 1])', 'float(d_len[p].get())']), { checks: [getInLoop] });
    expect(f).toHaveLength(1);
    expect(f[0].members?.map((m) => [m.line, m.column])).toEqual([[6, 14], [7, 14], [8, 20]]);
    expect(f[0].message).toMatch(/Also at lines 7, 8 \(3 sites\)\.$/);
  });

  it('keeps the fingerprint when sites are added to the group or removed from it', async () => {
    const one = await reviewText('a.py', loop(['int(d_off[p])']), { checks: [getInLoop] });
    const three = await reviewText('a.py', loop(['int(d_off[p])', 'int(d_off[p + 1])', 'float(d_len[p].get())']), { checks: [getInLoop] });
    const other = await reviewText('a.py', loop(['float(d_len[p].get())', 'int(d_off[p + 1])']), { checks: [getInLoop] });
    expect(one).toHaveLength(1);
    expect(one[0].members).toBeUndefined();
    expect(three[0].fingerprint).toBe(one[0].fingerprint);
    expect(other[0].fingerprint).toBe(one[0].fingerprint);
  });

  it('keeps reads of two loops apart', async () => {
    const two = loop(['int(d_off[p])']) + loop(['int(d_off[p])']).replace('def lengths', 'def lengths_again').replace('from vibespatial import runtime\n', '');
    const f = await reviewText('a.py', two, { checks: [getInLoop] });
    expect(f).toHaveLength(2);
    expect(f[0].fingerprint).not.toBe(f[1].fingerprint);
  });

  it('reports a kernel\'s read-only pointers once per kernel', async () => {
    const src = [
      '__global__ void axpy(',
      '    float* out,',
      '    float* x,',
      '    float* y,',
      '    float a, int n) {',
      '  int i = blockIdx.x * blockDim.x + threadIdx.x;',
      '  if (i > 0 && i + 1 < n) out[i] = a * (x[i + 1] - x[i - 1]) + (y[i + 1] - y[i - 1]);',
      '}',
      '__global__ void copy(float* __restrict__ out, float* x, int n) {',
      '  int i = blockIdx.x * blockDim.x + threadIdx.x;',
      '  if (i > 0 && i < n) out[i] = x[i] - x[i - 1];',
      '}',
      '',
    ].join('\n');
    const f = (await reviewText('k.cu', src, { checks: [constRestrict] })).filter((x) => x.ruleId === constRestrict.id);
    expect(f.map((x) => x.line)).toEqual([3, 9]);
    expect(f[0].members?.length).toBe(2);
    expect(f[1].members).toBeUndefined();
  });

  it('reports one block-size constant used by several launches once, with "also at"', async () => {
    const src = [
      '__global__ void k1(float* a, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) a[i] += 1.f; }',
      '__global__ void k2(float* a, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) a[i] *= 2.f; }',
      'void run(float* a, int n, cudaStream_t s) {',
      // 1024 and 64 threads both leave the RTX 3090 / 4090 at 66.7 % (light kernels at 128 or 256 would not be reported).
      '  k1<<<(n + 1023) / 1024, 1024, 0, s>>>(a, n);',
      '  k2<<<(n + 1023) / 1024, 1024, 0, s>>>(a, n);',
      '  k1<<<(n + 63) / 64, 64, 0, s>>>(a, n);',
      '}',
      '',
    ].join('\n');
    const f = await reviewText('k.cu', src, { checks: [blockSize] });
    expect(f.map((x) => [x.line, x.members?.map((m) => m.line)])).toEqual([[4, [4, 5]], [6, undefined]]);
    expect(f[0].message).toContain('Also at line 5 (2 sites).');
  });

  it('one comment where hardcoded-block-size and missing-launch-bounds meet on one kernel; severity follows the occupancy figures', async () => {
    const src = [
      '__global__ void smooth(float* out, const float* in, int n) {',
      '  int i = blockIdx.x * blockDim.x + threadIdx.x;',
      '  float acc[16];',
      '  for (int k = 0; k < 16; ++k) acc[k] = in[(i + k) % n];',
      '  for (int r = 0; r < 4; ++r)',
      '    for (int k = 1; k < 16; ++k) acc[k] += acc[k - 1] * 0.5f;',
      '  if (i < n) out[i] = acc[15];',
      '}',
      'void run(float* out, const float* in, int n, cudaStream_t s) {',
      '  smooth<<<(n + BLOCK - 1) / BLOCK, BLOCK, 0, s>>>(out, in, n);',
      '}',
      '',
    ];
    const launchBounds = rule('kernel/missing-launch-bounds');
    // 512 threads: full occupancy on every default target before registers, so not `high`; reported at all only
    // because the 16-float per-thread array makes registers the likely limit (a light kernel would not be).
    const full = await reviewText('k.cu', ['#define BLOCK 512', ...src].join('\n'), { checks: [blockSize, launchBounds] });
    expect(full.map((f) => [f.ruleId, f.messageId, f.severity, f.also])).toEqual([['kernel/hardcoded-block-size', 'hardcodedFull', 'low-medium', ['kernel/missing-launch-bounds']]]);
    // Alone, the launch-bounds rule still reports the kernel.
    expect((await reviewText('k.cu', ['#define BLOCK 512', ...src].join('\n'), { checks: [launchBounds] })).map((f) => f.ruleId)).toEqual(['kernel/missing-launch-bounds']);
    // 768 threads leave the A100/H100 at 75 %: the figures show a cost, the rule keeps its severity.
    const partial = await reviewText('k.cu', ['#define BLOCK 768', ...src].join('\n'), { checks: [blockSize] });
    expect(partial.map((f) => [f.messageId, f.severity])).toEqual([['hardcoded', 'high']]);
  });

  it('puts the members into the JSON report and anchors the group at its first added site', async () => {
    const text = loop(['int(d_off[p])', 'int(d_off[p + 1])']);
    const lines = text.split('\n');
    // Only line 7 is added: the group is reported there, still listing both sites.
    const diff = ['--- a/a.py', '+++ b/a.py', `@@ -1,${lines.length - 2} +1,${lines.length - 1} @@`, ...lines.slice(0, -1).map((l, i) => (i === 6 ? `+${l}` : ` ${l}`))].join('\n') + '\n';
    const out = await review({ diff, config: config({}), checks: [getInLoop], readFile: async () => text });
    const [f] = out.result.findings;
    expect(f.line).toBe(7);
    expect(f.message).toMatch(/^Device→host read `int\(d_off\[p \+ 1\]\)`.*Also at line 6 \(2 sites\)\.$/);
    const json = JSON.parse(renderJson({ result: out.result, diff: out.diff, fileLines: () => undefined, inlineCommentCap: 30, failOn: 'none', toolVersion: 't' }));
    expect(json.findings[0].members.map((m: { path: string; line: number; column: number }) => [m.path, m.line, m.column])).toEqual([['a.py', 6, 14], ['a.py', 7, 14]]);
  });

  it('leaves the output of a one-site rule alone', async () => {
    const d = addedFileDiff('a.py', loop(['int(d_off[p])']));
    const out = await review({ diff: d, config: config({}), checks: [getInLoop] });
    expect(out.result.findings[0].members).toBeUndefined();
  });
});

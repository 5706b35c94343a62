import { describe, expect, it } from 'vitest';
import { renderText } from '../../src/reporters/text.js';
import { COPY_IN_LOOP, DIVERGENT_SYNC, GET_IN_LOOP, OUTSIDE, SYNC_IN_LOOP, finding, makeInput } from './fixtures.js';

const ANSI = /\u001b\[\d+m/;

describe('renderText', () => {
  it('prints no ANSI escapes when colour is off', () => {
    const out = renderText(makeInput({ errors: [{ message: 'x' }] }), { color: false });
    expect(out).not.toMatch(ANSI);
    expect(out.endsWith('\n')).toBe(true);
  });

  it('colours severities when colour is on', () => {
    const out = renderText(makeInput(), { color: true });
    expect(out).toMatch(ANSI);
    expect(out).toContain('\u001b[35m\u001b[1mcritical\u001b[22m\u001b[39m');
    expect(out).toContain('\u001b[31m\u001b[1mhigh\u001b[22m\u001b[39m');
  });

  it('prints the header line, a code frame with a caret under the columns, the fix, then the rule once', () => {
    const out = renderText(makeInput({ findings: [DIVERGENT_SYNC] }), { color: false });
    expect(out.split('\n').slice(0, 13)).toEqual([
      'src/kernels/reduce.cu:13:7  critical  sync/syncthreads-in-branch  `__syncthreads()` inside `if (tid < s)` is reached by only some threads of the block',
      '    11 │     if (tid < s) {',
      '    12 │       buf[tid] += buf[tid + s];',
      '  > 13 │       __syncthreads();',
      '       │       ^^^^^^^^^^^^^^^^',
      '    14 │     }',
      '    15 │   }',
      '  fix: Move the barrier after the `if`, where every thread reaches it.',
      '',
      'rules:',
      '  sync/syncthreads-in-branch (1 finding)',
      '    Threads that skip the branch never arrive at the barrier, so the block hangs or reads stale shared memory.',
      '    source: CUDA C++ Programming Guide §7.6  (https://github.com/gpu-review/gpu-review/blob/main/checks/sync/syncthreads-in-branch/README.md)',
    ]);
  });

  it('prints a rule\'s explanation and shared fix once per run, not under every finding', () => {
    const a = finding({ ruleId: 'sync/x', line: 11, column: 5, endColumn: 9, why: 'Because of the barrier.', citation: '003 §1', fix: { kind: 'judgment', description: 'Do the one thing.' } });
    const b = finding({ ruleId: 'sync/x', line: 13, column: 5, endColumn: 9, why: 'Because of the barrier.', citation: '003 §1', fix: { kind: 'judgment', description: 'Do the one thing.' }, fingerprint: 'f2' });
    const out = renderText(makeInput({ findings: [a, b] }), { color: false });
    expect(out.match(/Because of the barrier\./g)).toHaveLength(1);
    expect(out.match(/Do the one thing\./g)).toHaveLength(1);
    expect(out.match(/source: 003 §1/g)).toHaveLength(1);
    expect(out.match(/fix: see sync\/x under "rules" below/g)).toHaveLength(2);
    expect(out).toContain('  sync/x (2 findings)\n    Because of the barrier.\n    source: 003 §1');
  });

  it('shows a safe fix as a small unified diff', () => {
    const out = renderText(makeInput({ findings: [COPY_IN_LOOP] }), { color: false });
    expect(out).toContain(
      [
        '  suggested change: Copy asynchronously on the stream so the copy overlaps the previous kernel.',
        '    @@ -24,1 +24,1 @@',
        '    -    cudaMemcpy(d_in, h_in, n * sizeof(float), cudaMemcpyHostToDevice);',
        '    +    cudaMemcpyAsync(d_in, h_in, n * sizeof(float), cudaMemcpyHostToDevice, 0);',
        '  also matched: host-device/sync-copy-in-loop',
      ].join('\n'),
    );
    const multi = renderText(makeInput({ findings: [GET_IN_LOOP] }), { color: false });
    expect(multi).toContain('    @@ -6,2 +6,2 @@\n    -    for x in xs:\n    -        acc += float(x.get())\n    +    for x in xs:\n    +        acc += float(cp.sum(x))');
  });

  it('marks the start and end of a multi-line span', () => {
    const out = renderText(makeInput({ findings: [SYNC_IN_LOOP] }), { color: false });
    expect(out).toContain('  > 23 │   for (int k = 0; k < 100; ++k) {\n       │   ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n  > 24 │');
    expect(out).toContain('  > 26 │     cudaDeviceSynchronize();\n  > 27 │   }\n       │   ^\n    28 │');
  });

  it('skips lines unknown in diff-only mode', () => {
    const out = renderText(makeInput({ findings: [SYNC_IN_LOOP, OUTSIDE], diffOnly: true }), { color: false });
    // Line 29 lies outside the hunk: the frame stops at 28.
    expect(out).toContain('    28 │   cudaMemcpy(h_out');
    expect(out).not.toContain('29 │');
    // Line 8 and its context are unknown: no frame at all, the finding ends with its header.
    expect(out).toContain('src/kernels/reduce.cu:8:22  medium  kernel/uncoalesced-load  `in[i]` is loaded once per thread without bounds-friendly padding\n\n');
  });

  it('marks a gap between known lines', () => {
    const f = finding({ ruleId: 'sync/x', line: 19, column: 1, endColumn: 5 });
    const input = makeInput({ findings: [f] });
    const lines = input.fileLines('src/kernels/reduce.cu')!.map((t, i) => (i + 1 === 18 ? undefined : t));
    const out = renderText({ ...input, fileLines: () => lines }, { color: false });
    expect(out).toContain('    17 │ }\n       ⋮\n  > 19 │ void run');
  });

  it('ends with skipped files, errors and the summary line', () => {
    const out = renderText(makeInput({ errors: [{ path: 'src/bad.cu', message: 'cannot read' }, { message: 'config: unknown key' }] }), { color: false });
    expect(out).toContain('1 file skipped: 1 binary file');
    expect(out).toContain('errors:\n  src/bad.cu: cannot read\n  config: unknown key');
    const lines = out.trimEnd().split('\n');
    expect(lines[lines.length - 1]).toBe('5 findings (1 critical, 2 high, 1 medium-high, 1 medium) in 2 files; 1 file skipped');
  });

  it('sorts findings by file and line', () => {
    const out = renderText(makeInput(), { color: false });
    const heads = out.split('\n').filter((l) => /^\S+:\d+:\d+ /.test(l)).map((l) => l.split(' ')[0]);
    expect(heads).toEqual(['python/ops.py:7:22', 'src/kernels/reduce.cu:8:22', 'src/kernels/reduce.cu:13:7', 'src/kernels/reduce.cu:23:3', 'src/kernels/reduce.cu:24:5']);
  });

  it('summarises an empty review', () => {
    expect(renderText(makeInput({ findings: [], files: [] }), { color: false })).toBe('0 findings in 0 files; 0 files skipped\n');
  });

  it('keeps tabs in the underline so it lines up', () => {
    const f = finding({ ruleId: 'x/y', line: 2, column: 3, endColumn: 6 });
    const input = { ...makeInput({ findings: [f] }), fileLines: () => ['a', '\t\tfoo();', 'b'] };
    expect(renderText(input, { color: false })).toContain('  > 2 │ \t\tfoo();\n      │ \t\t^^^');
  });
});

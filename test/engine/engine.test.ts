import { describe, expect, it } from 'vitest';
import { CHECKS } from '../../checks/registry.generated.js';
import { review } from '../../src/review/pipeline.js';
import { buildSources } from '../../src/sources/build.js';
import { addedFileDiff, config, reviewText } from '../helpers.js';

const getInLoop = CHECKS.find((c) => c.id === 'host-device/get-in-loop')!;

const PING_PONG = [
  'from vibespatial import runtime',
  '',
  'def fill(d_sizes, n, g, b):',
  '    for k in range(n):',
  '        m = int(d_sizes[k])',
  '        runtime.launch(fill_kernel, grid=g, block=b, args=(k, m))',
  '',
].join('\n');

describe('suppression comments', () => {
  it('ignore[rule] on the same line or the line before silences that rule only', async () => {
    const same = PING_PONG.replace('m = int(d_sizes[k])', 'm = int(d_sizes[k])  # gpu-review: ignore[host-device/get-in-loop] measured: 3 parts');
    expect(await reviewText('a.py', same, { checks: [getInLoop] })).toHaveLength(0);
    const before = PING_PONG.replace('        m = int', '        # gpu-review: ignore[host-device/get-in-loop] one part in practice\n        m = int');
    expect(await reviewText('a.py', before, { checks: [getInLoop] })).toHaveLength(0);
    const other = PING_PONG.replace('m = int(d_sizes[k])', 'm = int(d_sizes[k])  # gpu-review: ignore[sync/too-many-streams]');
    expect(await reviewText('a.py', other, { checks: [getInLoop] })).toHaveLength(1);
  });
  it('a trailing ignore silences its own line only; one on its own line silences the next line of code', async () => {
    // Two reads on consecutive lines of one loop.
    const two = PING_PONG.replace('        m = int(d_sizes[k])\n', '        m = int(d_sizes[k])\n        q = int(d_sizes[k + 1])\n');
    const trailing = two.replace('m = int(d_sizes[k])', 'm = int(d_sizes[k])  # gpu-review: ignore[host-device/get-in-loop]');
    const t = await reviewText('a.py', trailing, { checks: [getInLoop] });
    expect(t.map((f) => f.line)).toEqual([6]);
    // On its own line, above a second explanatory comment: the next line of code, not the one after it.
    const own = two.replace('        m = int', '        # gpu-review: ignore[host-device/get-in-loop]\n        # (one part in practice)\n        m = int');
    const o = await reviewText('a.py', own, { checks: [getInLoop] });
    expect(o.map((f) => f.line)).toEqual([8]);
  });
  it('reports unknown rule ids and suppressions that silenced nothing', async () => {
    const text = PING_PONG.replace('m = int(d_sizes[k])', 'm = int(d_sizes[k])  # gpu-review: ignore[host-device/get-in-loop, host-device/no-such-rule]')
      .replace('    return', '    return') + 'x = 1  # gpu-review: ignore[sync/blocking-memset-memcpy]\n';
    const out = await review({ diff: addedFileDiff('a.py', text), config: config({}), checks: [getInLoop], readFile: async () => text });
    expect(out.result.findings).toHaveLength(0);
    expect(out.result.errors).toEqual([{ path: 'a.py', message: 'line 5: unknown rule id "host-device/no-such-rule" in a gpu-review: ignore[…] comment' }]);
    expect(out.result.unusedSuppressions).toEqual([{ path: 'a.py', line: 7, column: 8, ruleId: 'sync/blocking-memset-memcpy' }]);
  });
  it('ignore-file[rule] silences the file; * silences every rule', async () => {
    expect(await reviewText('a.py', '# gpu-review: ignore-file[host-device/get-in-loop]\n' + PING_PONG, { checks: [getInLoop] })).toHaveLength(0);
    expect(await reviewText('a.py', PING_PONG.replace('m = int(d_sizes[k])', 'm = int(d_sizes[k])  # gpu-review: ignore[*]'), { checks: [getInLoop] })).toHaveLength(0);
  });
});

describe('fingerprints', () => {
  it('do not change when the code moves', async () => {
    const a = await reviewText('a.py', PING_PONG, { checks: [getInLoop] });
    const b = await reviewText('a.py', '"""Module docstring."""\nimport os\n\n\n' + PING_PONG, { checks: [getInLoop] });
    expect(a).toHaveLength(1);
    expect(b[0].line).toBe(a[0].line + 4);
    expect(b[0].fingerprint).toBe(a[0].fingerprint);
  });
  it('differ for the same code in another function, and stay distinct for repeats in one function', async () => {
    const two = PING_PONG + PING_PONG.replace('def fill', 'def fill_again').replace('from vibespatial import runtime\n', '');
    const f = await reviewText('a.py', two, { checks: [getInLoop] });
    expect(f).toHaveLength(2);
    expect(f[0].fingerprint).not.toBe(f[1].fingerprint);
    const rep = PING_PONG.replace('        m = int(d_sizes[k])\n', '        m = int(d_sizes[k])\n        m = int(d_sizes[k])\n');
    // Two reads in one loop are one root cause: one finding with both sites.
    const g = await reviewText('a.py', rep, { checks: [getInLoop] });
    expect(g).toHaveLength(1);
    expect(g[0].members?.map((m) => m.line)).toEqual([5, 6]);
  });
});

describe('config applied by the pipeline', () => {
  it('per-rule severity override, off, min_severity and passes', async () => {
    expect((await reviewText('a.py', PING_PONG, { config: { rules: { 'host-device/get-in-loop': 'medium' } } })).find((f) => f.ruleId === 'host-device/get-in-loop')?.severity).toBe('medium');
    expect((await reviewText('a.py', PING_PONG, { config: { rules: { 'host-device/get-in-loop': 'off' } } })).some((f) => f.ruleId === 'host-device/get-in-loop')).toBe(false);
    expect((await reviewText('a.py', PING_PONG, { config: { passes: { '1': false } } })).some((f) => f.pass === 1)).toBe(false);
    expect((await reviewText('a.py', PING_PONG, { config: { rules: { 'host-device/get-in-loop': 'low' }, min_severity: 'medium' } })).some((f) => f.ruleId === 'host-device/get-in-loop')).toBe(false);
  });
  it('include / exclude globs skip files with a reason', async () => {
    const out = await review({ diff: addedFileDiff('third_party/x.py', PING_PONG), config: config({ exclude: ['third_party/**'] }) });
    expect(out.result.files[0].skipped).toMatch(/exclude/);
    expect(out.result.findings).toHaveLength(0);
  });
});

describe('diff-only sources', () => {
  it('a Python hunk that starts inside an indented block parses cleanly and maps to file lines', () => {
    const hunk = ['        m = int(d_sizes[k])', '        runtime.launch(fill_kernel, args=(k, m))', '    return out', ''].join('\n');
    const [s] = buildSources('a.py', 'python', { text: hunk, firstLine: 40, label: 'hunk', wholeFile: false }, 5000);
    expect(s.parseCoverage).toBe(1);
    const call = s.root.descendantsOfType('call')[0];
    expect(s.toFile(call.startPosition.row, call.startPosition.column)).toEqual({ line: 40, column: 13 });
  });
  it('a Python hunk starting at an else/except clause parses', () => {
    const hunk = ['    else:', '        x = d_x.get()', '    except ValueError:', '        pass', ''].join('\n');
    const [s] = buildSources('a.py', 'python', { text: hunk.split('\n').slice(0, 2).join('\n') + '\n', firstLine: 10, label: 'hunk', wholeFile: false }, 5000);
    expect(s.parseCoverage).toBe(1);
  });
  it('a C++ hunk that closes braces it did not open is wrapped and maps back', () => {
    const hunk = ['    kernel<<<grid, block, 0, stream>>>(d_x, n);', '    cudaDeviceSynchronize();', '  }', '}', '', 'void next() {}', ''].join('\n');
    const [s] = buildSources('a.cu', 'cuda', { text: hunk, firstLine: 100, label: 'hunk', wholeFile: false }, 5000);
    expect(s.parseCoverage).toBe(1);
    const launch = s.root.descendantsOfType('call_expression')[0];
    expect(s.toFile(launch.startPosition.row, launch.startPosition.column)?.line).toBe(100);
  });
});

describe('parse errors', () => {
  it('drops findings whose evidence lies in an ERROR region and records coverage', async () => {
    const broken = PING_PONG.replace('        m = int(d_sizes[k])', '        m = int(d_sizes[k]) ) ) ((');
    const out = await review({ diff: addedFileDiff('a.py', broken), config: config(), scope: 'file', checks: [getInLoop] });
    expect(out.result.files[0].parseCoverage).toBeLessThan(1);
    expect(out.result.findings.filter((f) => f.line === 5)).toHaveLength(0);
  });
});

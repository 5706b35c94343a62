import { describe, expect, it } from 'vitest';
import { renderJson } from '../../src/reporters/json.js';
import { COPY_IN_LOOP, OUTSIDE, makeInput } from './fixtures.js';

describe('renderJson', () => {
  it('writes one object with version, findings, files and errors, 2-space indented', () => {
    const out = renderJson(makeInput({ errors: [{ path: 'src/bad.cu', message: 'cannot read' }, { message: 'late' }] }));
    expect(out.endsWith('}\n')).toBe(true);
    expect(out.startsWith('{\n  "version": 1,\n  "findings": [\n    {\n      "ruleId"')).toBe(true);
    const doc = JSON.parse(out);
    expect(Object.keys(doc)).toEqual(['version', 'findings', 'files', 'errors']);
    expect(doc.findings).toHaveLength(5);
    expect(doc.errors).toEqual([{ path: 'src/bad.cu', message: 'cannot read' }, { message: 'late' }]);
  });

  it('gives each finding the contract fields, in a stable order, with the fix when there is one', () => {
    const doc = JSON.parse(renderJson(makeInput({ findings: [COPY_IN_LOOP, OUTSIDE] })));
    const [outside, copy] = doc.findings;
    expect(Object.keys(copy)).toEqual([
      'ruleId', 'pass', 'severity', 'confidence', 'kind', 'path', 'language', 'line', 'endLine', 'column', 'endColumn',
      'messageId', 'message', 'citation', 'why', 'docUrl', 'fingerprint', 'fix', 'also', 'onAddedLine', 'inHunk', 'suggestionFits',
    ]);
    expect(copy).toMatchObject({
      ruleId: 'host-device/memcpy-in-loop',
      pass: 1,
      severity: 'high',
      confidence: 'high',
      path: 'src/kernels/reduce.cu',
      line: 24,
      endLine: 24,
      column: 5,
      endColumn: 72,
      citation: '003 §8.2',
      fingerprint: 'b1b2c3d4e5f6a7b8c9d0',
      fix: {
        kind: 'safe',
        description: 'Copy asynchronously on the stream so the copy overlaps the previous kernel.',
        replace: { startLine: 24, endLine: 24, text: '    cudaMemcpyAsync(d_in, h_in, n * sizeof(float), cudaMemcpyHostToDevice, 0);\n' },
      },
    });
    expect(Object.keys(copy.fix)).toEqual(['kind', 'description', 'replace']);
    expect(outside).not.toHaveProperty('fix');
    expect(outside).not.toHaveProperty('suggestionFits');
    expect(outside.inHunk).toBe(false);
  });

  it('lists files with path, language, coverage and skipped reason', () => {
    const doc = JSON.parse(renderJson(makeInput()));
    expect(doc.files.map((f: { path: string }) => f.path)).toEqual(['assets/logo.png', 'python/ops.py', 'src/kernels/reduce.cu']);
    expect(doc.files[0]).toEqual({ path: 'assets/logo.png', language: null, parseCoverage: 1, sources: [], findings: 0, skipped: 'binary file' });
    expect(Object.keys(doc.files[2])).toEqual(['path', 'language', 'parseCoverage', 'sources', 'findings']);
    expect(doc.files[2].parseCoverage).toBe(0.9731);
  });

  it('does not depend on the order findings arrive in', () => {
    const a = makeInput();
    const b = makeInput({ findings: [...a.result.findings].reverse() });
    expect(renderJson(b)).toBe(renderJson(a));
  });

  it('keeps fields added to Finding later, after the known ones', () => {
    const extra = { ...OUTSIDE, zeta: 1, alpha: 'x' } as typeof OUTSIDE;
    const [f] = JSON.parse(renderJson(makeInput({ findings: [extra] }))).findings;
    expect(Object.keys(f).slice(-2)).toEqual(['alpha', 'zeta']);
  });
});

import { describe, expect, it } from 'vitest';
import { applyPrecedence } from '../../src/engine/precedence.js';
import { CHECKS } from '../../checks/registry.generated.js';
import type { Finding } from '../../src/core/types.js';
import { reviewText } from '../helpers.js';

const rule = (id: string) => CHECKS.find((c) => c.id === id)!;
const blockSize = rule('kernel/hardcoded-block-size');
const smemLimit = rule('memory/smem-exceeds-device-limit');
const launchBounds = rule('kernel/missing-launch-bounds');

// A 1024-thread launch (hard-coded, reported "high" by kernel/hardcoded-block-size) asking for 240 KB of
// dynamic shared memory: more than any target's opt-in maximum, so the launch fails on every GPU.
const kernel = (smemBytes: string) =>
  [
    '__global__ void halve(const float* in, float* out, int n) {',
    '  extern __shared__ float stage[];',
    '  int i = blockIdx.x * blockDim.x + threadIdx.x;',
    '  if (i < n) stage[threadIdx.x] = in[i];',
    '  __syncthreads();',
    '  if (i < n) out[i] = stage[threadIdx.x] * 0.5f;',
    '}',
    '',
    'void halve_all(const float* in, float* out, int n, cudaStream_t s) {',
    `  halve<<<(n + 1023) / 1024, 1024, ${smemBytes}, s>>>(in, out, n);`,
    '}',
    '',
  ].join('\n');

describe('precedence of findings on one node', () => {
  it('posts the launch that exceeds the shared-memory limit, not the block-size advice on the same line', async () => {
    const f = await reviewText('halve.cu', kernel('240 * 1024'), { checks: [blockSize, smemLimit] });
    expect(f).toHaveLength(1);
    expect(f[0].ruleId).toBe('memory/smem-exceeds-device-limit');
    expect(f[0].line).toBe(10);
    expect(f[0].also).toEqual(['kernel/hardcoded-block-size']);
  });

  it('still posts the block-size advice when the shared memory fits', async () => {
    const f = await reviewText('halve.cu', kernel('4 * 1024'), { checks: [blockSize, smemLimit] });
    expect(f.map((x) => x.ruleId)).toEqual(['kernel/hardcoded-block-size']);
  });

  const at = (ruleId: string, kind: Finding['kind'], severity: Finding['severity'], line: number): Finding =>
    ({ ruleId, kind, severity, pass: 3, line, endLine: line, column: 1, endColumn: 9, path: 'a.cu' }) as Finding;

  it('ranks a correctness finding above more severe advice; severity still decides within a kind', () => {
    const checks = new Map(CHECKS.map((c) => [c.id, c]));
    const mixed = applyPrecedence([at('p/perf', 'performance', 'critical', 3), at('c/wrong', 'correctness', 'low', 3)], checks);
    expect(mixed.map((x) => [x.ruleId, x.also])).toEqual([['c/wrong', ['p/perf']]]);
    const same = applyPrecedence([at('p/minor', 'performance', 'low', 3), at('p/major', 'performance', 'high', 3)], checks);
    expect(same.map((x) => x.ruleId)).toEqual(['p/major']);
  });

  it('a fixed pair never drops a correctness finding', () => {
    // hardcoded-block-size supersedes missing-launch-bounds; pretend the superseded one were a correctness finding.
    const checks = new Map(CHECKS.map((c) => [c.id, c]));
    const perf = at(blockSize.id, 'performance', 'high', 3);
    const kept = applyPrecedence([perf, { ...at(launchBounds.id, 'correctness', 'medium', 2), endLine: 4 }], checks);
    expect(kept.map((x) => x.ruleId).sort()).toEqual([blockSize.id, launchBounds.id].sort());
    const normal = applyPrecedence([at(blockSize.id, 'performance', 'high', 3), { ...at(launchBounds.id, 'performance', 'medium', 2), endLine: 4 }], checks);
    expect(normal.map((x) => x.ruleId)).toEqual([blockSize.id]);
  });
});

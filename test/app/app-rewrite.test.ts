/**
 * Pass 7 in the App (issue #18): the posted inline comments carry the verified rewrite, as a
 * one-click suggestion when it stays inside the changed lines and preserves behaviour, else as a
 * collapsed "Proposed rewrite"; `rewrite: { enabled: false }` in the config turns it off.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, test } from 'vitest';
import { CHECKS } from '../../checks/registry.generated.js';
import { examplePayload, setup, teardown, type Harness } from './harness.js';

const FIXTURES = join(resolve(dirname(fileURLToPath(import.meta.url)), '..'), 'rewrite', 'fixtures');
const fixture = (p: string) => readFileSync(join(FIXTURES, p), 'utf8');

let h: Harness | undefined;
afterEach(() => {
  const violations = h?.github.violations ?? [];
  teardown(h);
  h = undefined;
  expect(violations).toEqual([]);
});

async function reviewOf(path: string, content: string, config?: string) {
  // Every default rule, as an installation runs them (the harness's default is one rule).
  h = await setup({ checks: CHECKS });
  if (config !== undefined) h.github.config = config;
  h.github.files = [{ filename: path, status: 'added', content }];
  await h.deliver(examplePayload('opened'));
  expect(h.outcomes[0]).toMatchObject({ kind: "reviewed" });
  return h.github.botComments().map((c) => c.body);
}

describe('GitHub App: pass 7 rewrites in the inline comments', () => {
  test('a rewrite that changes behaviour is a collapsed "Proposed rewrite" with the code of the fix', async () => {
    const bodies = await reviewOf('src/reset.cu', fixture('async-memset-memcpy/reset.cu'));
    const memset = bodies.find((b) => b.includes('sync/blocking-memset-memcpy'));
    expect(memset, bodies.join('\n---\n')).toBeDefined();
    expect(memset).toMatch(/<details><summary>Proposed rewrite of [^<]*re-parsed and re-reviewed/);
    expect(memset).toContain('+  cudaMemsetAsync(d_hits, 0, sizeof(int), s);');
    // Not a one-click suggestion: putting the memset on the stream changes what it waits for.
    expect(memset).not.toMatch(/```suggestion/);
  });

  test('a behaviour-preserving rewrite inside the changed lines is a one-click suggestion', async () => {
    const bodies = await reviewOf('src/gather.cu', fixture('int64-index/gather.cu'));
    const idx = bodies.filter((b) => b.includes('kernel/int32-index-overflow'));
    expect(idx, bodies.join('\n---\n')).toHaveLength(2);
    // The subscript is widened in place: same behaviour below 2^31, one click.
    const subscript = idx.find((b) => b.includes('m[r * cols + c]'));
    expect(subscript).toMatch(/```suggestion\n {2}m\[static_cast<int64_t>\(r\) \* cols \+ c\] = 0\.0f;\n```/);
    // Widening the declared variable changes its type: shown, not one click.
    const decl = idx.find((b) => b.includes('int at = row * n_cols + col;'));
    expect(decl).not.toMatch(/```suggestion/);
    expect(decl).toContain('+  int64_t at = static_cast<int64_t>(row) * n_cols + col;');
  });

  test('rewrite: { enabled: false } posts the same findings without rewrites', async () => {
    const on = await reviewOf('src/reset.cu', fixture('async-memset-memcpy/reset.cu'));
    teardown(h);
    const off = await reviewOf('src/reset.cu', fixture('async-memset-memcpy/reset.cu'), 'rewrite:\n  enabled: false\n');
    const rules = (bs: string[]) => bs.map((b) => /gpu-review:fingerprint=([^\s>]+)/.exec(b)?.[1]).sort();
    expect(rules(off)).toEqual(rules(on));
    expect(off.join('\n')).not.toContain('Proposed rewrite');
  });

  test('in the review pool (the compiled worker) the comments are the same as on the main thread', async () => {
    const script = join(import.meta.dirname, '..', '..', 'dist', 'src', 'review', 'review-worker.js');
    expect(existsSync(script)).toBe(true);
    const here = await reviewOf('src/reset.cu', fixture('async-memset-memcpy/reset.cu'));
    teardown(h);
    const saved = process.env.GPU_REVIEW_WORKER_SCRIPT;
    process.env.GPU_REVIEW_WORKER_SCRIPT = script;
    try {
      const pooled = await reviewOf('src/reset.cu', fixture('async-memset-memcpy/reset.cu'));
      expect(pooled).toEqual(here);
      expect(pooled.join('\n')).toContain('Proposed rewrite');
    } finally {
      if (saved === undefined) delete process.env.GPU_REVIEW_WORKER_SCRIPT;
      else process.env.GPU_REVIEW_WORKER_SCRIPT = saved;
    }
  });

  test('a spent time budget posts the findings without rewrites', async () => {
    const bodies = await reviewOf('src/reset.cu', fixture('async-memset-memcpy/reset.cu'), 'rewrite: { time_budget_ms: 1 }\n');
    expect(bodies.some((b) => b.includes('sync/blocking-memset-memcpy'))).toBe(true);
    expect(bodies.join('\n')).not.toContain('Proposed rewrite');
  });
});

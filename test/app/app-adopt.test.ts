/**
 * The App with a baseline and strict mode in `.github/gpu-review.yml` (issue #19): the baseline is
 * read from the default branch like the config, so a pull request cannot baseline its own findings.
 */
import { afterEach, describe, expect, test } from 'vitest';
import { BOT } from './fake-github.js';
import { examplePayload, setup, teardown, type Harness } from './harness.js';

let h: Harness | undefined;

afterEach(() => {
  const violations = h?.github.violations ?? [];
  teardown(h);
  h = undefined;
  expect(violations).toEqual([]);
});

const CODE = ['import cupy as cp', '', '', 'def sizes(d_sizes, n):', '    out = 0', '    for k in range(n):', '        out += int(d_sizes[k])', '        d_sizes = cp.cumsum(d_sizes)', '    return out', ''].join('\n');

async function firstFingerprint(): Promise<string> {
  const probe = await setup();
  probe.github.files = [{ filename: 'pkg/sizes.py', status: 'added', content: CODE }];
  await probe.deliver(examplePayload('opened'));
  const body = probe.github.botComments()[0].body;
  teardown(probe);
  return /gpu-review:fingerprint=([^\s>]+)/.exec(body)![1];
}

describe('GitHub App: baseline and strict from the config', () => {
  test('findings in the default branch baseline are not posted; the check run says how many', async () => {
    const fp = await firstFingerprint();
    h = await setup();
    h.github.config = 'baseline: .github/gpu-review-baseline.json\n';
    h.github.defaultBranchFiles['.github/gpu-review-baseline.json'] = JSON.stringify({ tool: 'gpu-review', version: 1, findings: [{ rule: 'host-device/get-in-loop', path: 'pkg/sizes.py', fingerprint: fp }] });
    // The same file in the pull request itself (at the head) would not count.
    h.github.files = [{ filename: 'pkg/sizes.py', status: 'added', content: CODE }];
    await h.deliver(examplePayload('opened'));
    expect(h.outcomes[0]).toMatchObject({ kind: 'reviewed', findings: 0, conclusion: 'success' });
    expect(h.github.comments.filter((c) => c.user.login === BOT.login)).toHaveLength(0);
    expect(h.github.checkRuns[0].output.summary).toContain('1 finding listed in the baseline `.github/gpu-review-baseline.json` is not reported');
  });

  test('a baseline that is not one fails the check run with the reason; a missing one is reviewed without', async () => {
    h = await setup();
    h.github.config = 'baseline: ci/base.json\n';
    h.github.defaultBranchFiles['ci/base.json'] = '[1, 2]';
    h.github.files = [{ filename: 'pkg/sizes.py', status: 'added', content: CODE }];
    await h.deliver(examplePayload('opened'));
    expect(h.outcomes[0]).toMatchObject({ kind: 'config-error' });
    expect(h.github.checkRuns[0].conclusion).toBe('failure');
    expect(h.github.checkRuns[0].output.title).toBe('Invalid baseline: ci/base.json');
    teardown(h);

    h = await setup();
    h.github.config = 'baseline: ci/none.json\n';
    h.github.files = [{ filename: 'pkg/sizes.py', status: 'added', content: CODE }];
    await h.deliver(examplePayload('opened'));
    expect(h.outcomes[0]).toMatchObject({ kind: 'reviewed', findings: 1 });
  });

  test('strict: a GPU file too large to review fails the check run; without strict it passes', async () => {
    for (const strict of [true, false]) {
      h = await setup();
      h.github.config = `strict: ${strict}\nfail_on: none\nlimits: { max_file_bytes: 1000 }\n`;
      h.github.files = [{ filename: 'pkg/big.py', status: 'added', content: `import cupy as cp\n${'# pad\n'.repeat(400)}` }];
      await h.deliver(examplePayload('opened'));
      const run = h.github.checkRuns[0];
      expect(run.conclusion, String(strict)).toBe(strict ? 'failure' : 'success');
      if (strict) expect(run.output.title).toMatch(/1 file could not be reviewed \(strict\)/);
      expect(h.github.violations).toEqual([]);
      teardown(h);
      h = undefined;
    }
  });
});

import { describe, expect, it } from 'vitest';
import { hunkOfLine } from '../../src/diff/model.js';
import { buildReview, REVIEW_MARKER, VISIBLE_BUDGET, visibleText } from '../../src/reporters/github-review.js';
import { renderMarkdown } from '../../src/reporters/markdown.js';
import {
  ALL,
  COPY_IN_LOOP,
  DIVERGENT_SYNC,
  GET_IN_LOOP,
  OUTSIDE,
  SYNC_IN_LOOP,
  finding,
  makeInput,
} from './fixtures.js';

function commentFor(review: ReturnType<typeof buildReview>, fingerprint: string) {
  return review.comments.find((c) => c.body.includes(`<!-- gpu-review:fingerprint=${fingerprint} -->`));
}

describe('buildReview', () => {
  it('anchors every comment on lines GitHub accepts, within one hunk, and never uses position', () => {
    const input = makeInput();
    const review = buildReview(input);
    expect(review.event).toBe('COMMENT');
    expect(review.comments.length).toBe(4);
    for (const c of review.comments) {
      expect(c).not.toHaveProperty('position');
      expect(c.side).toBe('RIGHT');
      const file = input.diff.files.find((f) => f.path === c.path)!;
      const start = c.start_line ?? c.line;
      if (c.start_line !== undefined) {
        expect(c.start_line).toBeLessThan(c.line);
        expect(c.start_side).toBe('RIGHT');
      } else {
        expect(c).not.toHaveProperty('start_side');
      }
      for (let l = start; l <= c.line; l++) {
        expect(file.commentable.has(l)).toBe(true);
        expect(hunkOfLine(file, l)).toBe(hunkOfLine(file, c.line));
      }
    }
  });

  it('puts a finding on an unchanged line outside the hunks in the body, not inline', () => {
    const review = buildReview(makeInput());
    expect(commentFor(review, OUTSIDE.fingerprint)).toBeUndefined();
    expect(review.body).toContain('### Not posted inline');
    expect(review.body).toContain('`kernel/uncoalesced-load` at `src/kernels/reduce.cu:8`');
    expect(review.body).toContain('_(not on a changed line)_');
  });

  it('puts a finding on a commentable line in the body when the diff filter says it is not in a hunk', () => {
    const f = finding({ ruleId: 'precision/double-literal', line: 12, inHunk: false });
    const review = buildReview(makeInput({ findings: [f] }));
    expect(review.comments).toEqual([]);
    expect(review.body).toContain('`precision/double-literal` at `src/kernels/reduce.cu:12`');
  });

  it('puts findings in files absent from the diff in the body', () => {
    const f = finding({ ruleId: 'memory/leak', path: 'src/other.cu', line: 3, inHunk: true });
    const review = buildReview(makeInput({ findings: [f] }));
    expect(review.comments).toEqual([]);
    expect(review.body).toContain('`src/other.cu:3`');
  });

  it('caps inline comments, most severe first, and lists the rest in the body', () => {
    const review = buildReview(makeInput({ cap: 2 }));
    expect(review.comments.length).toBe(2);
    expect(commentFor(review, DIVERGENT_SYNC.fingerprint)).toBeDefined();
    // Two high findings tie on severity; python/ops.py sorts before src/kernels/reduce.cu.
    expect(commentFor(review, GET_IN_LOOP.fingerprint)).toBeDefined();
    expect(commentFor(review, COPY_IN_LOOP.fingerprint)).toBeUndefined();
    expect(review.body).toContain('`host-device/memcpy-in-loop` at `src/kernels/reduce.cu:24`');
    expect(review.body).toContain('`sync/device-sync-in-loop` at `src/kernels/reduce.cu:23-27`');
    expect(review.body).toContain('_(over the inline limit)_');
    expect(review.body).toContain('2 findings went over the limit of 2 inline comments');
    expect(review.body).toContain('1 finding could not be anchored on a line of the diff');
    // The body lists them most severe first.
    const body = review.body;
    expect(body.indexOf('memcpy-in-loop')).toBeLessThan(body.indexOf('device-sync-in-loop'));
    expect(body.indexOf('device-sync-in-loop')).toBeLessThan(body.indexOf('uncoalesced-load` at'));
  });

  it('posts nothing inline with a cap of 0', () => {
    const review = buildReview(makeInput({ cap: 0 }));
    expect(review.comments).toEqual([]);
    for (const f of ALL) expect(review.body).toContain(`\`${f.ruleId}\``);
  });

  it('formats a comment as in catalog §2.1, with the fingerprint marker last', () => {
    const c = commentFor(buildReview(makeInput()), DIVERGENT_SYNC.fingerprint)!;
    expect(c.line).toBe(13);
    expect(c.start_line).toBeUndefined();
    expect(c.body.split('\n')).toEqual([
      '**[critical] sync/syncthreads-in-branch** — `__syncthreads()` inside `if (tid < s)` is reached by only some threads of the block',
      '',
      '**Fix:** Move the barrier after the `if`, where every thread reaches it.',
      '',
      '<details><summary>Why, figures and source</summary>',
      '',
      'Threads that skip the branch never arrive at the barrier, so the block hangs or reads stale shared memory.',
      '',
      'Source: CUDA C++ Programming Guide §7.6 · [rule docs](https://github.com/gpu-review/gpu-review/blob/main/checks/sync/syncthreads-in-branch/README.md)',
      '',
      '</details>',
      '<!-- gpu-review:fingerprint=a1b2c3d4e5f6a7b8c9d0 -->',
    ]);
    expect(c.body).not.toContain('```');
  });

  it('adds a suggestion block for a safe fix that fits, and an "Also matched" line', () => {
    const c = commentFor(buildReview(makeInput()), COPY_IN_LOOP.fingerprint)!;
    expect(c.line).toBe(24);
    expect(c.start_line).toBeUndefined();
    expect(c.body.split('\n')).toEqual([
      '**[high] host-device/memcpy-in-loop** — `cudaMemcpy(d_in, h_in, …)` copies the same input on every iteration of the loop',
      '',
      '**Fix:** Copy asynchronously on the stream so the copy overlaps the previous kernel.',
      '',
      '```suggestion',
      '    cudaMemcpyAsync(d_in, h_in, n * sizeof(float), cudaMemcpyHostToDevice, 0);',
      '```',
      '',
      '<details><summary>Why, figures and source</summary>',
      '',
      'Each transfer waits for the device and crosses PCIe.',
      '',
      'Source: 003 §8.2 · [rule docs](https://github.com/gpu-review/gpu-review/blob/main/checks/host-device/memcpy-in-loop/README.md)',
      '',
      'Also matched: host-device/sync-copy-in-loop',
      '',
      '</details>',
      '<!-- gpu-review:fingerprint=b1b2c3d4e5f6a7b8c9d0 -->',
    ]);
  });

  it('keeps the visible part within its budget: long messages and fixes move into <details>, whole', () => {
    const message = Array.from({ length: 8 }, (_, i) => `Sentence ${i} about \`kernel_${i}(x)\` and its occupancy on every target GPU in the table.`).join(' ');
    const fix = { kind: 'judgment' as const, description: Array.from({ length: 14 }, (_, i) => `Step ${i}: do the thing to \`buffer_${i}\` once per launch.`).join(' ') };
    const f = { ...DIVERGENT_SYNC, message, fix };
    const body = buildReview(makeInput({ findings: [f] })).comments[0].body;
    expect(visibleText(body).length).toBeLessThanOrEqual(VISIBLE_BUDGET);
    expect(visibleText(body)).toContain('Sentence 0 about `kernel_0(x)`');
    const details = body.slice(body.indexOf('<details>'));
    expect(details).toContain('Sentence 7 about');
    expect(details).toContain(`Fix, in full: ${fix.description}`);
    // Inline code is never cut in half.
    expect((visibleText(body).match(/`/g) ?? []).length % 2).toBe(0);
  });

  it('lists the sites of a grouped finding in <details> and keeps "Also at" visible', () => {
    const members = [13, 15, 18].map((line) => ({ path: DIVERGENT_SYNC.path, line, endLine: line, column: 5, endColumn: 20, message: `read at ${line}` }));
    const f = { ...DIVERGENT_SYNC, message: 'Device read `x` inside a loop. Also at lines 15, 18 (3 sites).', members };
    const body = buildReview(makeInput({ findings: [f] })).comments[0].body;
    expect(visibleText(body)).toContain('Also at lines 15, 18 (3 sites).');
    expect(body).toContain('Sites (3):\n- line 13:5: read at 13\n- line 15:5: read at 15\n- line 18:5: read at 18');
  });

  it.each([
    ['it does not fit', { suggestionFits: false }],
    ['fit is unknown', { suggestionFits: undefined }],
    ['confidence is low', { confidence: 'low' as const }],
    ['the fix is judgment', { fix: { ...COPY_IN_LOOP.fix!, kind: 'judgment' as const } }],
    ['the fix has no replacement', { fix: { kind: 'safe' as const, description: 'Hoist the copy.' } }],
  ])('adds no suggestion block when %s', (_why, over) => {
    const f = { ...COPY_IN_LOOP, ...over };
    const c = buildReview(makeInput({ findings: [f] })).comments[0];
    expect(c.line).toBe(24);
    expect(c.body).not.toContain('suggestion');
    expect(c.body).toContain('**Fix:** ');
  });

  it('makes the fence longer than any backtick run in the suggested text', () => {
    const text = '    # see ```cuda``` and ````x````\n        acc += float(cp.sum(x))\n';
    const f = { ...GET_IN_LOOP, fix: { ...GET_IN_LOOP.fix!, replace: { startLine: 6, endLine: 7, text } } };
    const body = buildReview(makeInput({ findings: [f] })).comments[0].body;
    expect(body).toContain('`````suggestion\n    # see ```cuda``` and ````x````\n        acc += float(cp.sum(x))\n`````\n');
  });

  it('spans a multi-line fix with start_line/line, moving the comment onto the fix lines', () => {
    const c = commentFor(buildReview(makeInput()), GET_IN_LOOP.fingerprint)!;
    expect(c).toMatchObject({ path: 'python/ops.py', start_line: 6, start_side: 'RIGHT', line: 7, side: 'RIGHT' });
    expect(c.body).toContain('```suggestion\n    for x in xs:\n        acc += float(cp.sum(x))\n```');
  });

  it('keeps a one-line comment and drops the block when the fix lines leave the hunk', () => {
    const f = { ...COPY_IN_LOOP, fix: { ...COPY_IN_LOOP.fix!, replace: { startLine: 18, endLine: 24, text: 'x\n' } } };
    const c = buildReview(makeInput({ findings: [f] })).comments[0];
    expect(c.line).toBe(24);
    expect(c.start_line).toBeUndefined();
    expect(c.body).not.toContain('suggestion');
  });

  it('uses start_line for a multi-line finding inside one hunk', () => {
    const c = commentFor(buildReview(makeInput()), SYNC_IN_LOOP.fingerprint)!;
    expect(c).toMatchObject({ path: 'src/kernels/reduce.cu', start_line: 23, start_side: 'RIGHT', line: 27, side: 'RIGHT' });
  });

  it('anchors a multi-line finding that crosses hunks at its first line only', () => {
    const f = finding({ ruleId: 'sync/x', line: 13, endLine: 24, inHunk: true });
    const [c] = buildReview(makeInput({ findings: [f] })).comments;
    expect(c.line).toBe(13);
    expect(c).not.toHaveProperty('start_line');
  });

  it('writes a review body with totals, a table per pass, coverage, skipped files and the marker', () => {
    const body = buildReview(makeInput({ errors: [{ path: 'src/bad.cu', message: 'could not read file' }] })).body;
    expect(body.startsWith('## gpu-review: 5 findings in 2 files')).toBe(true);
    expect(body).toContain('**1 critical, 2 high, 1 medium-high, 1 medium** · 4 posted inline, 1 listed below');
    expect(body).toContain('| Pass | critical | high | medium-high | medium | Total |');
    expect(body).toContain('| 1 · host-device boundary | · | 2 | · | · | 2 |');
    expect(body).toContain('| 2 · synchronization | 1 | · | 1 | · | 2 |');
    expect(body).toContain('| 3 · kernel efficiency | · | · | · | 1 | 1 |');
    expect(body).toContain('| **Total** | **1** | **2** | **1** | **1** | **5** |');
    expect(body).toContain('### Parse coverage');
    expect(body).toContain('| `src/kernels/reduce.cu` | cuda | 97.3% |');
    expect(body).not.toContain('python/ops.py` | python');
    expect(body).toContain('### Skipped files\n\n- `assets/logo.png` — binary file');
    expect(body).toContain('### Errors\n\n- `src/bad.cu`: could not read file');
    expect(body.endsWith(REVIEW_MARKER)).toBe(true);
  });

  it('says so briefly when there are no findings', () => {
    const review = buildReview(makeInput({ findings: [], files: [] }));
    expect(review.comments).toEqual([]);
    expect(review.body).toBe(`## gpu-review\n\nNo GPU issues found in the changed lines.\n\n${REVIEW_MARKER}`);
  });

  it('labels partial NVRTC sources inside a Python file', () => {
    const files = [
      {
        path: 'python/ops.py',
        language: 'python' as const,
        parseCoverage: 0.5,
        sources: [
          { language: 'python' as const, label: 'python/ops.py', parseCoverage: 1, bytes: 100 },
          { language: 'nvrtc-in-python' as const, label: 'kernel `add` (line 12)', parseCoverage: 0.99996, bytes: 100 },
        ],
        findings: 0,
      },
    ];
    const body = buildReview(makeInput({ findings: [], files })).body;
    expect(body).toContain('| `python/ops.py` (kernel `add` (line 12)) | nvrtc-in-python | 99.9% |');
  });

  it('keeps the body under GitHub’s size limit however many findings stay out of the diff', () => {
    const many = Array.from({ length: 3000 }, (_, i) =>
      finding({ ruleId: 'kernel/uncoalesced-load', line: 8, inHunk: false, message: `long message ${'x'.repeat(60)} ${i}`, fingerprint: `f${i}` }),
    );
    const body = buildReview(makeInput({ findings: many })).body;
    expect(body.length).toBeLessThan(65_536);
    expect(body).toMatch(/- …and \d+ more findings \(see the JSON or SARIF report\)/);
    expect(body.endsWith(REVIEW_MARKER)).toBe(true);
  });
});

describe('renderMarkdown', () => {
  it('prints the review body then every inline comment exactly as posted', () => {
    const input = makeInput();
    const review = buildReview(input);
    const md = renderMarkdown(input);
    expect(md.startsWith(review.body)).toBe(true);
    expect(md).toContain('## Inline comments (4)');
    expect(md).toContain(`### src/kernels/reduce.cu:13\n\n${commentFor(review, DIVERGENT_SYNC.fingerprint)!.body}`);
    expect(md).toContain(`### src/kernels/reduce.cu:23-27\n\n${commentFor(review, SYNC_IN_LOOP.fingerprint)!.body}`);
    expect(md).toContain(`### python/ops.py:6-7\n\n${commentFor(review, GET_IN_LOOP.fingerprint)!.body}`);
    expect(md.endsWith('-->\n')).toBe(true);
  });

  it('prints only the body when nothing is inline', () => {
    const input = makeInput({ findings: [OUTSIDE] });
    expect(renderMarkdown(input)).toBe(`${buildReview(input).body}\n`);
  });
});

import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, test, vi } from 'vitest';
import { main } from '../../src/cli.js';
import { CHECKS } from '../../checks/registry.generated.js';
import { REVIEW_MARKER } from '../../src/reporters/github-review.js';
import { markerFingerprint } from '../../src/github/threads.js';
import { isContentWrite } from '../../src/github/octokit.js';
import { addedPatch as addedPatchOf, BOT, HUMAN, modifiedPatch, type FakeFile } from './fake-github.js';
import { examplePayload, GET_IN_LOOP, setup, teardown, type Harness } from './harness.js';
import { cleanFn, legacyCopy, lineOf, loopFn, pythonFile } from './python.js';

let h: Harness | undefined;

afterEach(() => {
  // Every request any test made must be one GitHub's API description allows.
  const violations = h?.github.violations ?? [];
  teardown(h);
  h = undefined;
  expect(violations).toEqual([]);
});

function opened(): any {
  return examplePayload('opened');
}

function pushed(payload: any, before: string, after: string): any {
  const p = examplePayload('synchronize');
  p.before = before;
  p.after = after;
  p.pull_request.head.sha = after;
  void payload;
  return p;
}

function added(filename: string, content: string): FakeFile {
  return { filename, status: 'added', content };
}

const check = (hh: Harness) => {
  expect(hh.github.checkRuns).toHaveLength(1);
  return hh.github.checkRuns[0];
};

describe('GitHub App: one review per push', () => {
  test('clean PR: no review comments, a successful check run', async () => {
    h = await setup();
    h.github.files = [added('pkg/clean.py', pythonFile(cleanFn('total')))];
    await h.deliver(opened());
    expect(h.github.calls('pulls/create-review')).toHaveLength(0);
    expect(h.github.comments).toHaveLength(0);
    const run = check(h);
    expect(run.create).toMatchObject({ name: 'gpu-review', head_sha: h.github.headSha, status: 'in_progress' });
    expect(run.conclusion).toBe('success');
    expect(run.output.title).toBe('No GPU issues found');
    expect(h.outcomes[0]).toMatchObject({ kind: 'reviewed', findings: 0, posted: 0 });
  });

  test('findings inside and outside the hunks: inline where anchorable, the rest in the body', async () => {
    h = await setup();
    const before = pythonFile(
      ['def spread(d_sizes, off, n, g, b):', '    for k in range(n):', '        m = int(', '            d_sizes[', '                k', '                + off', '            ]', '        )', '        runtime.launch(fill_kernel, grid=g, block=b, args=(k, m))', '', ''],
    );
    const after = before.replace('                + off\n', '                + off\n                + 1\n') + ['', '', ...loopFn('fill_parts')].join('\n');
    const { patch, additions, deletions } = modifiedPatch(before, after);
    h.github.files = [{ filename: 'pkg/spread.py', status: 'modified', content: after, patch, additions, deletions }];
    h.github.config = 'docs_url: "https://docs.example.com/gpu-review/{rule}.html"\n';
    await h.deliver(opened());
    const [post] = h.github.calls('pulls/create-review');
    expect(post.status).toBe(200);
    // The read spanning into the change starts 5 lines above it, outside the hunk: body only.
    const outside = lineOf(after, 'm = int(');
    const inside = lineOf(after, 'm = int(d_sizes[k])');
    expect(post.body.comments.map((c: any) => c.line)).toEqual([inside]);
    expect(post.body.comments[0]).toMatchObject({ path: 'pkg/spread.py', side: 'RIGHT' });
    expect(post.body.comments[0]).not.toHaveProperty('position');
    expect(post.body.body).toContain('### Not posted inline');
    expect(post.body.body).toContain(`pkg/spread.py:${outside}`);
    expect(post.body.body).toContain('not on a changed line');
    // Severity, rule id, citation and a link to the rule's documentation in every comment.
    const c = post.body.comments[0].body;
    expect(c).toMatch(/^\*\*\[critical\] host-device\/get-in-loop\*\* — /);
    expect(c).toContain('Source: 003 §8.2');
    expect(c).toContain('[rule docs](https://docs.example.com/gpu-review/host-device/get-in-loop.html)');
    expect(markerFingerprint(c)).toBeTruthy();
    expect(post.body.body).toContain('| 1 · host-device boundary |');
    expect(post.body.body).toContain(REVIEW_MARKER);
    expect(post.body.event).toBe('COMMENT');
    expect(post.body.commit_id).toBe(h.github.headSha);
    const run = check(h);
    expect(run.conclusion).toBe('failure');
    expect(run.annotations).toHaveLength(2);
    expect(run.annotations[0]).toMatchObject({ path: 'pkg/spread.py', annotation_level: 'failure', title: '[critical] host-device/get-in-loop' });
    expect(run.annotations[0].message).toContain('Rule docs: https://docs.example.com/gpu-review/host-device/get-in-loop.html');
  });

  test('what the App posts is what the CLI prints with --format markdown', async () => {
    h = await setup({ checks: CHECKS });
    const before = pythonFile(loopFn('old_one'), cleanFn('tail'));
    const after = pythonFile(loopFn('old_one'), loopFn('new_one'), cleanFn('tail'));
    const mod = modifiedPatch(before, after);
    const fresh = pythonFile(loopFn('other'));
    h.github.files = [
      { filename: 'pkg/mod.py', status: 'modified', content: after, patch: mod.patch, additions: mod.additions, deletions: mod.deletions },
      added('pkg/new.py', fresh),
    ];
    await h.deliver(opened());
    const [post] = h.github.calls('pulls/create-review');

    const dir = mkdtempSync(join(tmpdir(), 'gpu-review-app-'));
    for (const [p, t] of [['pkg/mod.py', after], ['pkg/new.py', fresh]]) {
      mkdirSync(dirname(join(dir, p)), { recursive: true });
      writeFileSync(join(dir, p), t);
    }
    const diff = [
      'diff --git a/pkg/mod.py b/pkg/mod.py', '--- a/pkg/mod.py', '+++ b/pkg/mod.py', mod.patch,
      'diff --git a/pkg/new.py b/pkg/new.py', 'new file mode 100644', '--- /dev/null', '+++ b/pkg/new.py', addedPatchOf(fresh), '',
    ].join('\n');
    writeFileSync(join(dir, 'pr.diff'), diff);
    let out = '';
    const spy = vi.spyOn(process.stdout, 'write').mockImplementation(((chunk: string, cb?: () => void) => {
      out += chunk;
      cb?.();
      return true;
    }) as any);
    try {
      await main(['review', join(dir, 'pr.diff'), '--repo', dir, '--format', 'markdown']);
    } finally {
      spy.mockRestore();
    }
    const comments = post.body.comments.map((c: any) => `### ${c.start_line ? `${c.path}:${c.start_line}-${c.line}` : `${c.path}:${c.line}`}\n\n${c.body}`);
    expect(post.body.comments.length).toBeGreaterThanOrEqual(2);
    expect(out).toBe(`${[post.body.body, '---', `## Inline comments (${comments.length})`, ...comments].join('\n\n')}\n`);
  });

  test('a multi-line suggestion: safe fix inside one hunk, fence longer than the backticks in it', async () => {
    h = await setup({ checks: [...GET_IN_LOOP, legacyCopy] });
    const text = ['import numpy as np', '', '', 'def move(src, dst):', '    legacy_copy(', '        src,', '        dst,', '    )', '    return dst', ''].join('\n');
    h.github.files = [added('pkg/move.py', text)];
    await h.deliver(opened());
    const [post] = h.github.calls('pulls/create-review');
    expect(post.body.comments).toHaveLength(1);
    const c = post.body.comments[0];
    expect(c).toMatchObject({ path: 'pkg/move.py', start_line: 5, start_side: 'RIGHT', line: 8, side: 'RIGHT' });
    expect(c.body).toContain('````suggestion\n    fast_copy(\n        src,  # see ```docs```\n        dst,\n    )\n````');
    expect(check(h).conclusion).toBe('success'); // medium is below the default fail_on: high
  });

  test('200 findings: 30 inline (the cap), the rest listed in the body; annotations in batches of 50', async () => {
    h = await setup();
    const fns = Array.from({ length: 200 }, (_, i) => loopFn(`fill_${i}`));
    h.github.files = [added('pkg/many.py', pythonFile(...fns))];
    await h.deliver(opened());
    const [post] = h.github.calls('pulls/create-review');
    expect(post.body.comments).toHaveLength(30);
    expect(post.body.body).toContain('## gpu-review: 200 findings in 1 file');
    expect(post.body.body).toContain('170 findings went over the limit of 30 inline comments');
    expect(post.body.body.match(/_\(over the inline limit\)_/g)).toHaveLength(170);
    const run = check(h);
    expect(run.annotations).toHaveLength(200);
    expect(run.updates).toHaveLength(4);
    expect(run.updates.every((u: any) => u.output.annotations.length === 50)).toBe(true);
    expect(run.updates.slice(0, 3).every((u: any) => u.conclusion === undefined)).toBe(true);
    expect(run.updates[3]).toMatchObject({ status: 'completed', conclusion: 'failure' });
  });

  test('the inline cap comes from the config', async () => {
    h = await setup();
    h.github.config = 'inline_comment_cap: 2\n';
    h.github.files = [added('pkg/few.py', pythonFile(loopFn('a'), loopFn('b'), loopFn('c')))];
    await h.deliver(opened());
    const [post] = h.github.calls('pulls/create-review');
    expect(post.body.comments).toHaveLength(2);
    expect(post.body.body).toContain('1 finding went over the limit of 2 inline comments');
  });

  test('second push: moved findings are not reposted, fixed ones resolved (unless a human replied), new ones posted', async () => {
    h = await setup();
    const v1 = pythonFile(loopFn('moves'), loopFn('fixed'), loopFn('discussed'));
    h.github.files = [added('pkg/flow.py', v1)];
    const first = opened();
    await h.deliver(first);
    expect(h.github.botComments()).toHaveLength(3);
    const discussed = h.github.botComments().find((c) => c.line === lineOf(v1, 'def discussed') + 2)!;
    h.github.reply(discussed, HUMAN, 'We measured this: the loop runs twice.');

    // Push 2: two lines inserted above everything, `fixed` and `discussed` repaired, `fresh` added.
    const v2 = pythonFile(['X = 1', 'Y = 2', ''], loopFn('moves'), cleanFn('fixed'), cleanFn('discussed'), loopFn('fresh'));
    const head2 = 'b'.repeat(40);
    h.github.headSha = head2;
    h.github.files = [added('pkg/flow.py', v2)];
    await h.deliver(pushed(first, first.pull_request.head.sha, head2));

    const posts = h.github.calls('pulls/create-review');
    expect(posts).toHaveLength(2);
    const second = posts[1].body;
    expect(second.commit_id).toBe(head2);
    expect(second.comments).toHaveLength(1);
    expect(second.comments[0].line).toBe(lineOf(v2, 'def fresh') + 2);
    expect(second.body).toContain('1 of the inline comments was already posted on an earlier push');
    // `fixed` is resolved through GraphQL; `discussed` has a human reply and is left alone.
    const fixed = h.github.botComments().find((c) => c.body.includes('d_sizes') && c.line === lineOf(v1, 'def fixed') + 2)!;
    expect([...h.github.resolved]).toEqual([fixed.id]);
    expect(h.github.resolved.has(discussed.id)).toBe(false);
    const resolves = h.github.calls('graphql').filter((r) => r.body.query.includes('resolveReviewThread'));
    expect(resolves).toHaveLength(1);
    expect(h.outcomes[1]).toMatchObject({ kind: 'reviewed', findings: 2, posted: 1, repeated: 1, resolved: 1 });
  });

  test('without GraphQL review threads the stale comment is deleted instead', async () => {
    h = await setup();
    const v1 = pythonFile(loopFn('fixed'), loopFn('kept'));
    h.github.files = [added('pkg/flow.py', v1)];
    const first = opened();
    await h.deliver(first);
    h.github.threadsUnavailable = true;
    const head2 = 'c'.repeat(40);
    h.github.headSha = head2;
    h.github.files = [added('pkg/flow.py', pythonFile(cleanFn('fixed'), loopFn('kept')))];
    await h.deliver(pushed(first, first.pull_request.head.sha, head2));
    expect(h.github.calls('pulls/delete-review-comment')).toHaveLength(1);
    expect(h.github.botComments()).toHaveLength(1);
    // Nothing new on this push: no second review.
    expect(h.github.calls('pulls/create-review')).toHaveLength(1);
  });

  test('quiet on re-push: one review on the first push, none on a push with nothing new, the check-run summary updated', async () => {
    h = await setup();
    const v1 = pythonFile(loopFn('kept'));
    h.github.files = [added('pkg/flow.py', v1)];
    const first = opened();
    await h.deliver(first);
    expect(h.github.calls('pulls/create-review')).toHaveLength(1);
    expect(h.github.submittedReviews()).toHaveLength(1);

    // Push 2: the same finding, moved down by a new clean function: nothing new to say.
    const v2 = pythonFile(cleanFn('helper'), loopFn('kept'));
    const head2 = 'd'.repeat(40);
    h.github.headSha = head2;
    h.github.files = [added('pkg/flow.py', v2)];
    await h.deliver(pushed(first, first.pull_request.head.sha, head2));
    expect(h.github.calls('pulls/create-review')).toHaveLength(1);
    expect(h.github.submittedReviews()).toHaveLength(1);
    expect(h.github.botComments()).toHaveLength(1);
    expect(h.outcomes[1]).toMatchObject({ kind: 'reviewed', findings: 1, posted: 0, repeated: 1, reviewId: null });
    // This push's check run carries the summary of the findings that still stand.
    expect(h.github.checkRuns).toHaveLength(2);
    const run2 = h.github.checkRuns[1];
    expect(run2.create).toMatchObject({ head_sha: head2 });
    expect(run2.conclusion).toBe('failure');
    expect(run2.output.summary).toContain('## gpu-review: 1 finding in 1 file');
    expect(run2.annotations.map((a: any) => a.start_line)).toEqual([lineOf(v2, 'def kept') + 2]);

    // Push 3: a new finding: a review again, with only the new comment.
    const v3 = pythonFile(cleanFn('helper'), loopFn('kept'), loopFn('fresh'));
    const head3 = 'e'.repeat(40);
    h.github.headSha = head3;
    h.github.files = [added('pkg/flow.py', v3)];
    await h.deliver(pushed(first, head2, head3));
    const posts = h.github.calls('pulls/create-review');
    expect(posts).toHaveLength(2);
    expect(posts[1].body.comments.map((c: any) => c.line)).toEqual([lineOf(v3, 'def fresh') + 2]);
    expect(h.github.checkRuns).toHaveLength(3);
  });

  test('a 422 from GitHub: one retry with the refused comments moved to the body', async () => {
    h = await setup();
    h.github.refuseAnchor = (c) => c.path === 'pkg/a.py';
    h.github.files = [added('pkg/a.py', pythonFile(loopFn('a'))), added('pkg/b.py', pythonFile(loopFn('b')))];
    await h.deliver(opened());
    const posts = h.github.calls('pulls/create-review');
    expect(posts.map((p) => p.status)).toEqual([422, 200]);
    expect(posts[0].body.comments).toHaveLength(2);
    // GitHub's error does not say which comment it refused: all move, none is lost.
    expect(posts[1].body.comments).toHaveLength(0);
    expect(posts[1].body.body).toContain('### Refused inline by GitHub');
    expect(posts[1].body.body).toContain('`pkg/a.py:7` — **[critical] host-device/get-in-loop**');
    expect(posts[1].body.body).toContain('`pkg/b.py:7` — **[critical] host-device/get-in-loop**');
    expect(h.github.submittedReviews()).toHaveLength(1);
    expect(check(h).conclusion).toBe('failure');
  });

  test('a 422 that names the path: only that file\'s comments move', async () => {
    h = await setup();
    h.github.files = [added('pkg/a.py', pythonFile(loopFn('a'))), added('pkg/b.py', pythonFile(loopFn('b')))];
    h.github.fault({ method: 'POST', path: /\/reviews$/, status: 422, body: { message: 'Unprocessable Entity', errors: [{ resource: 'PullRequestReviewComment', field: 'path', code: 'invalid', message: 'pkg/a.py could not be resolved' }] } });
    await h.deliver(opened());
    const posts = h.github.calls('pulls/create-review');
    expect(posts.map((p) => p.status)).toEqual([422, 200]);
    expect(posts[1].body.comments.map((c: any) => c.path)).toEqual(['pkg/b.py']);
    expect(posts[1].body.body).toContain('`pkg/a.py:7`');
  });

  test('a 422 after which GitHub kept the review anyway: completed in place, never posted twice', async () => {
    h = await setup();
    h.github.files = [added('pkg/a.py', pythonFile(loopFn('a')))];
    h.github.fault({ method: 'POST', path: /\/reviews$/, status: 422, perform: true, body: { message: 'Unprocessable Entity', errors: ['Line could not be resolved'] } });
    await h.deliver(opened());
    expect(h.github.calls('pulls/create-review')).toHaveLength(1);
    expect(h.github.calls('pulls/update-review')).toHaveLength(1);
    expect(h.github.submittedReviews()).toHaveLength(1);
    expect(h.github.submittedReviews()[0].body).toContain('### Refused inline by GitHub');
  });

  test('a secondary rate limit: retried after retry-after, posted once', async () => {
    h = await setup();
    h.github.files = [added('pkg/a.py', pythonFile(loopFn('a')))];
    h.github.fault({
      method: 'POST',
      path: /\/reviews$/,
      status: 403,
      headers: { 'retry-after': '3', 'content-type': 'application/json; charset=utf-8' },
      body: { message: 'You have exceeded a secondary rate limit. Please wait a few minutes before you try again.', documentation_url: 'https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits' },
    });
    await h.deliver(opened());
    const posts = h.github.calls('pulls/create-review');
    expect(posts.map((p) => p.status)).toEqual([403, 200]);
    // retry-after 3 s at the test's 2 ms per second: the retry waited for GitHub's number.
    expect(posts[1].at - posts[0].at).toBeGreaterThanOrEqual(5);
    expect(h.logs.some((l) => l.msg.includes('secondary rate limit: retrying after 3 s'))).toBe(true);
    expect(h.github.submittedReviews()).toHaveLength(1);
  });

  test('a 502 then success: the bot checks GitHub did not store it, then posts once', async () => {
    h = await setup();
    h.github.files = [added('pkg/a.py', pythonFile(loopFn('a')))];
    h.github.fault({ method: 'POST', path: /\/reviews$/, status: 502, body: { message: 'Server Error' } });
    await h.deliver(opened());
    expect(h.github.calls('pulls/create-review').map((p) => p.status)).toEqual([502, 200]);
    expect(h.github.submittedReviews()).toHaveLength(1);
    expect(h.github.botComments()).toHaveLength(1);
  });

  test('a 502 although GitHub stored the review: found by its marker on the head commit, not posted twice', async () => {
    h = await setup();
    h.github.files = [added('pkg/a.py', pythonFile(loopFn('a')))];
    h.github.fault({ method: 'POST', path: /\/reviews$/, status: 502, perform: true, body: { message: 'Server Error' } });
    await h.deliver(opened());
    expect(h.github.calls('pulls/create-review').map((p) => p.status)).toEqual([502]);
    expect(h.github.submittedReviews()).toHaveLength(1);
    expect(h.outcomes[0]).toMatchObject({ kind: 'reviewed' });
    expect(h.logs.some((l) => l.msg.includes('GitHub stored the review despite the error'))).toBe(true);
  });

  test('transient 5xx on reads are retried by the retry plugin', async () => {
    h = await setup();
    h.github.files = [added('pkg/a.py', pythonFile(loopFn('a')))];
    h.github.fault({ method: 'GET', path: /\/files$/, status: 503, body: { message: 'unavailable' }, times: 2 });
    await h.deliver(opened());
    expect(h.github.calls('pulls/list-files').map((r) => r.status)).toEqual([503, 503, 200]);
    expect(h.github.submittedReviews()).toHaveLength(1);
  });

  test('a request that hangs times out and is retried', async () => {
    h = await setup({ octokit: { requestTimeoutMs: 150 } });
    h.github.files = [added('pkg/a.py', pythonFile(loopFn('a')))];
    h.github.slow.push({ method: 'GET', path: /\/files$/, ms: 1000, times: 1 });
    await h.deliver(opened());
    expect(h.github.calls('pulls/list-files').length).toBeGreaterThanOrEqual(2);
    expect(h.github.submittedReviews()).toHaveLength(1);
    expect(h.outcomes[0]).toMatchObject({ kind: 'reviewed' });
  });

  test('a permanent failure is logged with the delivery id and fails the check run', async () => {
    h = await setup();
    h.github.files = [added('pkg/a.py', pythonFile(loopFn('a')))];
    h.github.fault({ method: 'GET', path: /\/files$/, status: 500, body: { message: 'boom' }, times: 10 });
    await h.deliver(opened(), 'delivery-permanent-1');
    const run = check(h);
    expect(run.conclusion).toBe('failure');
    expect(run.output.title).toBe('gpu-review could not complete the review');
    expect(run.output.summary).toContain('delivery-permanent-1');
    const err = h.logs.find((l) => l.level >= 50 && l.msg === 'review failed');
    expect(err).toMatchObject({ deliveryId: 'delivery-permanent-1' });
    expect(h.github.calls('pulls/create-review')).toHaveLength(0);
  });

  test('a leftover PENDING review of the bot is deleted before posting', async () => {
    h = await setup();
    h.github.files = [added('pkg/a.py', pythonFile(loopFn('a')))];
    const pending = h.github.seedReview(BOT, 'PENDING', h.github.headSha, 'half-done', [{ path: 'pkg/a.py', line: 7, body: 'draft' }]);
    await h.deliver(opened());
    expect(h.github.calls('pulls/delete-pending-review')).toHaveLength(1);
    expect(h.github.calls('pulls/delete-pending-review')[0].path).toContain(`/reviews/${pending.id}`);
    expect(h.github.calls('pulls/create-review').map((p) => p.status)).toEqual([200]);
    expect(h.github.reviews.filter((r) => r.state === 'PENDING')).toHaveLength(0);
  });

  test('an invalid config: a failed check run that quotes the bad key, no review, no crash', async () => {
    h = await setup();
    h.github.config = 'fial_on: high\ninline_comment_cap: 10\n';
    h.github.files = [added('pkg/a.py', pythonFile(loopFn('a')))];
    await h.deliver(opened());
    const run = check(h);
    expect(run.conclusion).toBe('failure');
    expect(run.output.title).toBe('Invalid configuration: .github/gpu-review.yml');
    expect(run.output.summary).toContain('unknown key "fial_on"');
    expect(run.output.summary).toContain('default branch `master`');
    expect(h.github.calls('pulls/create-review')).toHaveLength(0);
    expect(h.github.calls('pulls/list-files')).toHaveLength(0);
    expect(h.outcomes[0]).toMatchObject({ kind: 'config-error' });
  });

  test('config that is not YAML fails the same way', async () => {
    h = await setup();
    h.github.config = 'fail_on: [high\n';
    h.github.files = [added('pkg/a.py', pythonFile(loopFn('a')))];
    await h.deliver(opened());
    const run = check(h);
    expect(run.conclusion).toBe('failure');
    expect(run.output.summary).toContain('invalid YAML');
  });

  test("the org's .github repository is the fallback config", async () => {
    h = await setup();
    h.github.orgConfig = 'fail_on: none\n';
    h.github.files = [added('pkg/a.py', pythonFile(loopFn('a')))];
    await h.deliver(opened());
    expect(h.github.calls('repos/get-content').map((r) => r.path)).toEqual([
      '/repos/Codertocat/Hello-World/contents/.github%2Fgpu-review.yml',
      '/repos/Codertocat/.github/contents/.github%2Fgpu-review.yml',
    ]);
    expect(check(h).conclusion).toBe('success');
  });

  test('a draft PR is skipped (configurable)', async () => {
    h = await setup();
    const p = opened();
    p.pull_request.draft = true;
    h.github.files = [added('pkg/a.py', pythonFile(loopFn('a')))];
    await h.deliver(p);
    expect(h.github.calls('pulls/list-files')).toHaveLength(0);
    expect(check(h)).toMatchObject({ conclusion: 'skipped' });
    expect(check(h).output.title).toContain('draft');

    h.github.config = 'skip_drafts: false\n';
    h.github.checkRuns = [];
    await h.deliver(p);
    expect(h.github.calls('pulls/create-review')).toHaveLength(1);
  });

  test('ready_for_review reviews the former draft', async () => {
    h = await setup();
    h.github.files = [added('pkg/a.py', pythonFile(loopFn('a')))];
    await h.deliver(examplePayload('ready_for_review'));
    expect(h.github.calls('pulls/create-review')).toHaveLength(1);
  });

  test('a PR by a bot is skipped (configurable)', async () => {
    h = await setup();
    const p = opened();
    p.pull_request.user = { ...p.pull_request.user, login: 'dependabot[bot]', type: 'Bot' };
    h.github.files = [added('pkg/a.py', pythonFile(loopFn('a')))];
    await h.deliver(p);
    expect(check(h)).toMatchObject({ conclusion: 'skipped' });
    expect(h.github.calls('pulls/create-review')).toHaveLength(0);

    h.github.config = 'skip_bot_authors: false\n';
    await h.deliver(p);
    expect(h.github.calls('pulls/create-review')).toHaveLength(1);
  });

  test('closed PRs and synchronize without a new head are not reviewed, without any API call', async () => {
    h = await setup();
    const closed = examplePayload('reopened');
    closed.pull_request.state = 'closed';
    await h.deliver(closed);
    const same = examplePayload('synchronize');
    same.after = same.before = same.pull_request.head.sha;
    await h.deliver(same);
    expect(h.github.requests).toHaveLength(0);
    expect(h.outcomes.map((o) => o.kind)).toEqual(['skipped', 'skipped']);
  });

  test('an event whose head was superseded by a newer push (or a closed PR) is dropped before any write', async () => {
    h = await setup();
    h.github.files = [added('pkg/a.py', pythonFile(loopFn('a')))];
    h.github.headSha = 'd'.repeat(40);
    await h.deliver(opened());
    h.github.headSha = opened().pull_request.head.sha;
    h.github.state = 'closed';
    await h.deliver(opened());
    // Reads only (REST GETs, read-only GraphQL queries; the token exchange is no content write either).
    expect(h.github.requests.filter((r) => isContentWrite({ method: r.method, url: r.path, query: r.body?.query }))).toHaveLength(0);
    expect(h.github.requests.filter((r) => r.method !== 'GET' && r.operation !== 'graphql' && !r.path.includes('access_tokens'))).toHaveLength(0);
    expect(h.outcomes.map((o) => (o.kind === 'skipped' ? o.reason : o.kind))).toEqual([
      'superseded by a newer push (head is now ddddddd)',
      'pull request was closed before the review ran',
    ]);
  });

  test('reopened at a head already reviewed: no second review', async () => {
    h = await setup();
    h.github.files = [added('pkg/a.py', pythonFile(loopFn('a')))];
    await h.deliver(opened());
    await h.deliver(examplePayload('reopened'));
    expect(h.github.calls('pulls/create-review')).toHaveLength(1);
    expect(h.github.checkRuns).toHaveLength(2);
    expect(h.github.checkRuns[1].conclusion).toBe('failure');
  });

  test('a file without a patch and a binary file are listed as skipped, not dropped', async () => {
    h = await setup();
    h.github.files = [
      added('pkg/a.py', pythonFile(loopFn('a'))),
      { filename: 'pkg/huge.py', status: 'modified', content: 'x = 1\n', additions: 40000, deletions: 12000 },
      { filename: 'assets/logo.png', status: 'added', binary: true },
    ];
    await h.deliver(opened());
    const [post] = h.github.calls('pulls/create-review');
    expect(post.body.body).toContain('### Skipped files');
    expect(post.body.body).toContain('`pkg/huge.py` — GitHub sent no patch for this file (its diff is too large for the API: 40000 additions, 12000 deletions)');
    expect(post.body.body).toContain('`assets/logo.png` — binary file');
  });

  test('files over the size limit are skipped with the reason (a small PR: sizes and texts in one query)', async () => {
    h = await setup();
    h.github.config = 'limits: { max_file_bytes: 1000 }\n';
    const big = pythonFile(...Array.from({ length: 10 }, (_, i) => loopFn(`f${i}`)));
    h.github.files = [added('pkg/big.py', big), added('pkg/a.py', pythonFile(loopFn('a')))];
    await h.deliver(opened());
    const [post] = h.github.calls('pulls/create-review');
    expect(post.body.body).toMatch(/`pkg\/big\.py` — file too large \(0\.0 MB, limit 0\.0 MB\)/);
    // The contents query (the project index's own blob queries ask for the `oid`: not counted here).
    expect(h.github.calls('graphql').filter((r) => r.body.query.includes('object(expression') && !/\boid\b/.test(r.body.query))).toHaveLength(1);
    expect(post.body.comments.map((c: any) => c.path)).toEqual(['pkg/a.py']);
  });

  test('files over the size limit are skipped with the reason, without downloading them (over 20 files: sizes first)', async () => {
    h = await setup();
    h.github.config = 'limits: { max_file_bytes: 1000 }\n';
    const big = pythonFile(...Array.from({ length: 10 }, (_, i) => loopFn(`f${i}`)));
    const small = Array.from({ length: 20 }, (_, i) => added(`pkg/s${i}.py`, `X_${i} = ${i}\n`));
    h.github.files = [added('pkg/big.py', big), added('pkg/a.py', pythonFile(loopFn('a'))), ...small];
    await h.deliver(opened());
    const [post] = h.github.calls('pulls/create-review');
    expect(post.body.body).toMatch(/`pkg\/big\.py` — file too large \(0\.0 MB, limit 0\.0 MB\)/);
    const textQueries = h.github.calls('graphql').filter((r) => r.body.query.includes('text') && !/\boid\b/.test(r.body.query));
    expect(textQueries).toHaveLength(1);
    expect(Object.values(textQueries[0].body.variables)).not.toContain(`${h.github.headSha}:pkg/big.py`);
    expect(post.body.comments.map((c: any) => c.path)).toEqual(['pkg/a.py']);
  });

  test('contents fall back to REST when GraphQL cannot read them', async () => {
    h = await setup();
    h.github.files = [added('pkg/a.py', pythonFile(loopFn('a')))];
    h.github.fault({ method: 'POST', path: /^\/graphql$/, status: 400, body: { message: 'Problems parsing JSON' }, when: (b) => b.query.includes('object(expression'), times: 10 });
    await h.deliver(opened());
    expect(h.github.calls('repos/get-content').some((r) => r.path.includes('pkg%2Fa.py') && r.path.includes(`ref=${h!.github.headSha}`))).toBe(true);
    expect(h.github.calls('pulls/create-review')[0].body.comments).toHaveLength(1);
  });

  test('a PR with 3,000 files: every page listed, contents in a handful of GraphQL queries', async () => {
    h = await setup();
    const files: FakeFile[] = [];
    for (let i = 0; i < 3000; i++) files.push(added(`pkg/m${String(i).padStart(4, '0')}.py`, i === 1234 ? pythonFile(loopFn('hot')) : `X_${i} = ${i}\n`));
    h.github.files = files;
    await h.deliver(opened());
    expect(h.github.calls('pulls/list-files')).toHaveLength(30);
    const graphql = h.github.calls('graphql').filter((r) => r.body.query.includes('object(expression') && !/\boid\b/.test(r.body.query));
    expect(graphql.length).toBeLessThanOrEqual(12 + 15);
    // The project index: at most 2 queries of its own, and it says where it stopped.
    expect(h.github.calls('graphql').filter((r) => /\boid\b/.test(r.body.query) && r.body.query.includes('object(expression')).length).toBeLessThanOrEqual(2);
    const [post] = h.github.calls('pulls/create-review');
    expect(post.body.comments).toHaveLength(1);
    expect(post.body.comments[0].path).toBe('pkg/m1234.py');
    expect(post.body.body).toContain('GitHub lists at most 3,000 files of a pull request');
  }, 60_000);

  test('GitHub Enterprise Server: the same requests under /api/v3 and /api/graphql', async () => {
    const { FakeGitHub } = await import('./fake-github.js');
    const { Probot } = await import('probot');
    const { PRIVATE_KEY, SECRET, fastThrottle } = await import('./harness.js');
    const { createApp } = await import('../../src/app.js');
    const { createOctokitClass } = await import('../../src/github/octokit.js');
    const { ReviewQueue } = await import('../../src/github/queue.js');
    const { pino } = await import('pino');
    const gh = new FakeGitHub().start('https://ghe.example.com');
    try {
      gh.files = [added('pkg/a.py', pythonFile(loopFn('a')))];
      const queue = new ReviewQueue(1);
      const probot = new Probot({ appId: 1, privateKey: PRIVATE_KEY, secret: SECRET, baseUrl: 'https://ghe.example.com/api/v3', log: pino({ level: 'silent' }) as any, Octokit: createOctokitClass({ retryAfterBaseValue: 1, throttle: fastThrottle() }) });
      await probot.load(createApp({ queue }));
      await probot.receive({ id: 'ghes-1', name: 'pull_request', payload: opened() } as any);
      await queue.idle();
      expect(gh.calls('pulls/create-review')).toHaveLength(1);
      expect(gh.requests.some((r) => r.path === '/api/graphql')).toBe(true);
      expect(gh.requests.every((r) => r.path.startsWith('/api/'))).toBe(true);
      expect(gh.violations).toEqual([]);
    } finally {
      gh.stop();
    }
  });
});

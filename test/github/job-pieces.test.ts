/**
 * The pieces of the App's job that #22 made data: the path gate shared by the pipeline and the
 * App, buildReview's options (what is already posted, what GitHub refused), the skip reasons,
 * the config read without a webhook context, and the embedded queue's handling of a refusal.
 */
import { describe, expect, it } from 'vitest';
import { resolveConfig } from '../../src/config/schema.js';
import { pathGate } from '../../src/diff/gate.js';
import { parseUnifiedDiff } from '../../src/diff/model.js';
import { readRepoConfig } from '../../src/github/config.js';
import { DeliveryLog, EmbeddedQueue, QueueRejected, ReviewQueue, type ReviewRequest } from '../../src/github/queue.js';
import { skippedCompletion, skipText } from '../../src/reporters/check-run.js';
import { buildReview, markerKey } from '../../src/reporters/github-review.js';
import { makeInput } from '../reporters/fixtures.js';

const diff = parseUnifiedDiff(
  [
    ['src/a.cu', '__global__ void k() {}'],
    ['src/host.cpp', 'int main() { return 0; }'],
    ['docs/readme.md', 'words'],
    ['vendor/b.cu', '__global__ void v() {}'],
    ['tools/gen.py', 'import cupy'],
  ]
    .map(([p, line]) => `diff --git a/${p} b/${p}\nnew file mode 100644\n--- /dev/null\n+++ b/${p}\n@@ -0,0 +1 @@\n+${line}\n`)
    .join(''),
);
const file = (p: string) => diff.files.find((f) => f.path === p)!;

describe('pathGate', () => {
  const gate = pathGate(resolveConfig({ exclude: ['vendor/**'] }, []));
  it('skips by config with the pipeline\'s reasons and reads only files a GPU review can use', () => {
    expect(gate.skip(file('vendor/b.cu'))).toBe('matched by config "exclude"');
    expect(gate.skip(file('docs/readme.md'))).toBeNull(); // its type is the pipeline's call, on its text
    expect(diff.files.filter((f) => gate.wantsContent(f)).map((f) => f.path)).toEqual(['src/a.cu', 'src/host.cpp', 'tools/gen.py']);
  });
  it('include narrows, and a deleted or unreadable section is skipped', () => {
    const only = pathGate(resolveConfig({ include: ['tools/**'] }, []));
    expect(only.skip(file('src/a.cu'))).toBe('not matched by config "include"');
    expect(only.wantsContent(file('tools/gen.py'))).toBe(true);
    expect(gate.skip({ ...file('src/a.cu'), problem: 'truncated hunk' })).toBe('truncated hunk');
    expect(gate.skip({ ...file('src/a.cu'), status: 'deleted' })).toBe('deleted');
  });
});

describe('buildReview options', () => {
  const input = makeInput();
  const full = buildReview(input);
  it('places each comment with its finding; alreadyPosted leaves those out and says how many', () => {
    expect(full.placements.map((p) => p.comment)).toEqual(full.comments);
    expect(full.repeated).toBe(0);
    const first = full.placements[0];
    const again = buildReview(input, { alreadyPosted: new Set([first.marker]) });
    expect(again.comments).toHaveLength(full.comments.length - 1);
    expect(again.comments).not.toContainEqual(first.comment);
    expect(again.repeated).toBe(1);
    expect(again.body).toContain('1 of the inline comments was already posted on an earlier push');
    expect(first.marker).toBe(markerKey(first.fingerprint));
  });
  it('refused moves those comments into the body, one section per refusal, in order', () => {
    const [a, b] = full.placements;
    const out = buildReview(input, {
      refused: [
        { markers: new Set([a.marker]), why: 'first reason' },
        { markers: new Set([b.marker]), why: 'second reason' },
      ],
    });
    expect(out.movedToBody).toBe(2);
    expect(out.comments).toHaveLength(full.comments.length - 2);
    expect(out.placements.map((p) => p.comment)).toEqual(out.comments);
    const i = out.body.indexOf('first reason');
    expect(i).toBeGreaterThan(0);
    expect(out.body.indexOf('second reason')).toBeGreaterThan(i);
    expect(out.body).toContain(`\`${a.comment.path}:${a.comment.start_line !== undefined ? `${a.comment.start_line}-` : ''}${a.comment.line}\``);
  });
});

describe('skip reasons', () => {
  it('are data; the words are the check run reporter\'s', () => {
    expect(skipText({ kind: 'superseded', head: 'abcdef0123456789' })).toBe('superseded by a newer push (head is now abcdef0)');
    expect(skippedCompletion({ kind: 'bot-author', login: 'dependabot[bot]' })).toEqual({
      conclusion: 'skipped',
      title: 'Skipped: author dependabot[bot] is a bot (config skip_bot_authors)',
      summary: 'gpu-review skipped this pull request: author dependabot[bot] is a bot (config skip_bot_authors).',
    });
  });
});

describe('readRepoConfig', () => {
  const plugin = (files: Array<{ config: unknown }>) => ({
    config: {
      async get(o: { path: string; defaults?: (c: object[]) => object }) {
        expect(o.path).toBe('.github/gpu-review.yml');
        const configs = files.map((f) => f.config).reverse().filter(Boolean) as object[];
        return { files, config: o.defaults!(configs) };
      },
    },
  });
  it('null without a file; an _extends chain merged like Probot (objects by key, lists concatenated)', async () => {
    expect(await readRepoConfig(plugin([{ config: null }]), 'o', 'r')).toBeNull();
    const merged = await readRepoConfig(plugin([{ config: { exclude: ['b/**'], limits: { max_file_bytes: 10 } } }, { config: { exclude: ['a/**'], limits: { review_timeout_ms: 5 }, fail_on: 'high' } }]), 'o', 'r');
    expect(merged).toEqual({ exclude: ['a/**', 'b/**'], limits: { review_timeout_ms: 5, max_file_bytes: 10 }, fail_on: 'high' });
  });
});

describe('EmbeddedQueue', () => {
  const req = (id: string, n = 1): ReviewRequest => ({ event: { deliveryId: id, action: 'opened', owner: 'o', repo: 'r', number: n, headSha: 'a'.repeat(40), state: 'open', draft: false, author: { login: 'x', type: 'User' }, defaultBranch: 'main' }, at: 0 });
  const via = { octokit: {} as never, log: { info() {}, warn() {}, error() {} } };
  it('runs the bound job once per delivery id; a refused delivery can be taken on redelivery', async () => {
    const ran: string[] = [];
    const q = new ReviewQueue(1, () => {}, { maxBacklog: 0 });
    const jobs = new EmbeddedQueue(q, new DeliveryLog());
    jobs.bind(async (r) => {
      ran.push(r.event.deliveryId);
      return { kind: 'failed', error: 'test' };
    });
    // No room at all: refused with 503, and the id is forgotten.
    await expect(jobs.submit(req('d1'), via)).rejects.toBeInstanceOf(QueueRejected);
    const roomy = new EmbeddedQueue(new ReviewQueue(1), (jobs as unknown as { deliveries: DeliveryLog }).deliveries);
    roomy.bind(async (r) => {
      ran.push(r.event.deliveryId);
      return { kind: 'failed', error: 'test' };
    });
    expect(await roomy.submit(req('d1'), via)).toBe('queued');
    expect(await roomy.submit(req('d1'), via)).toBe('duplicate');
    await roomy.queue.idle();
    expect(ran).toEqual(['d1']);
  });
});

describe('filesPerPage', () => {
  it('100 files a page for an ordinary change, fewer when a page of its files would be a large answer', async () => {
    const { filesPerPage, FILES_PAGE_BYTES } = await import('../../src/github/pr-diff.js');
    expect(filesPerPage(undefined)).toBe(100);
    expect(filesPerPage({ files: 30, lines: 2000 })).toBe(100);
    // 55 files of 25,000 changed lines each (the 50 MB pull request of the healthz test): one file a page.
    expect(filesPerPage({ files: 55, lines: 55 * 25_000 })).toBe(1);
    const per = filesPerPage({ files: 400, lines: 400 * 500 });
    expect(per).toBeLessThan(100);
    expect(per * 500 * 80).toBeLessThanOrEqual(FILES_PAGE_BYTES);
  });
});

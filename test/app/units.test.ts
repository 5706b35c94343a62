import { describe, expect, test } from 'vitest';
import { botIdentity } from '../../src/github/identity.js';
import { rateLimitHandlers } from '../../src/github/octokit.js';
import { addToBody, moveToBody } from '../../src/github/post.js';
import { diffModelFromFiles, diffModelFromFilesAsync, type PullFile } from '../../src/github/pr-diff.js';
import { DeliveryLog, ReviewQueue } from '../../src/github/queue.js';
import { markerFingerprint, markerKey } from '../../src/github/threads.js';
import { fingerprintMarker, REVIEW_MARKER, withoutAlreadyPosted } from '../../src/reporters/github-review.js';
import { commentableHunks, modifiedPatch } from './fake-github.js';

function file(f: Partial<PullFile> & { filename: string }): PullFile {
  return { status: 'modified', additions: 0, deletions: 0, changes: 0, ...f };
}

describe('PR files → diff model', () => {
  test('anchors match what GitHub accepts for a listFiles patch', () => {
    const before = Array.from({ length: 40 }, (_, i) => `line ${i + 1}`).join('\n') + '\n';
    const after = before.replace('line 5\n', 'line 5\nnew a\n').replace('line 30\n', 'changed 30\n');
    const { patch, additions, deletions } = modifiedPatch(before, after);
    const [f] = diffModelFromFiles([file({ filename: 'src/x.py', patch, additions, deletions, changes: additions + deletions })]).files;
    const github = new Set(commentableHunks(patch).flatMap((h) => [...h]));
    expect([...f.commentable].sort((a, b) => a - b)).toEqual([...github].sort((a, b) => a - b));
    expect([...f.added]).toEqual([6, 31]);
    expect(f.hunks).toHaveLength(2);
  });

  test('names, renames and statuses come from GitHub; files without a patch keep a reason', () => {
    const model = diffModelFromFiles([
      file({ filename: 'dir with space/a b.py', status: 'renamed', previous_filename: 'old/a.py', patch: '@@ -1,1 +1,1 @@\n-x = 1\n+x = 2', additions: 1, deletions: 1, changes: 2 }),
      file({ filename: 'moved.py', status: 'renamed', previous_filename: 'was.py' }),
      file({ filename: 'big.py', additions: 9000, deletions: 10, changes: 9010 }),
      file({ filename: 'img.png', status: 'added' }),
      file({ filename: 'run.sh', status: 'changed' }),
      file({ filename: 'gone.py', status: 'removed', patch: '@@ -1,1 +0,0 @@\n-x = 1', deletions: 1, changes: 1 }),
    ]);
    const [renamed, pure, big, img, mode, gone] = model.files;
    expect(renamed).toMatchObject({ path: 'dir with space/a b.py', oldPath: 'old/a.py', status: 'renamed' });
    expect([...renamed.added]).toEqual([1]);
    expect(pure.problem).toBe('renamed without content changes');
    expect(big.problem).toMatch(/^GitHub sent no patch for this file/);
    expect(img.binary).toBe(true);
    expect(mode.modeOnly).toBe(true);
    expect(gone).toMatchObject({ status: 'deleted', path: 'gone.py' });
  });

  test('the service\'s variant, which lets the event loop turn between patches, builds the same model', async () => {
    const big = Array.from({ length: 30_000 }, (_, i) => `+x${i} = ${i}`).join('\n');
    const files = [
      file({ filename: 'a.py', status: 'added', patch: `@@ -0,0 +1,30000 @@\n${big}`, additions: 30_000, changes: 30_000 }),
      file({ filename: 'b.py', patch: '@@ -1,1 +1,1 @@\n-x = 1\n+x = 2', additions: 1, deletions: 1, changes: 2 }),
      file({ filename: 'c.py', additions: 9000, changes: 9000 }),
      file({ filename: 'd.py', status: 'added', patch: `@@ -0,0 +1,30000 @@\n${big}`, additions: 30_000, changes: 30_000 }),
    ];
    let turns = 0;
    const tick = setInterval(() => turns++, 0);
    const got = await diffModelFromFilesAsync(files);
    clearInterval(tick);
    expect(got).toEqual(diffModelFromFiles(files));
    expect(got.files.map((f) => f.path)).toEqual(['a.py', 'b.py', 'c.py', 'd.py']);
    // Over 256 K characters of patch: the loop was given a turn in between.
    expect(turns).toBeGreaterThan(0);
  });
});

describe('queue and deliveries', () => {
  test('jobs of one PR run in order, other PRs alongside', async () => {
    const q = new ReviewQueue(4);
    const order: string[] = [];
    const job = (name: string, ms: number) => async () => {
      order.push(`start ${name}`);
      await new Promise((r) => setTimeout(r, ms));
      order.push(`end ${name}`);
    };
    q.add('pr1', job('a1', 30));
    q.add('pr1', job('a2', 1));
    q.add('pr2', job('b1', 1));
    await q.idle();
    expect(order.indexOf('end a1')).toBeLessThan(order.indexOf('start a2'));
    expect(order.indexOf('end b1')).toBeLessThan(order.indexOf('end a1'));
  });

  test('a failing job is reported and does not stop the queue', async () => {
    const errors: unknown[] = [];
    const q = new ReviewQueue(1, (e) => errors.push(e));
    let ran = false;
    q.add('k', async () => {
      throw new Error('boom');
    });
    q.add('k', async () => {
      ran = true;
    });
    await q.idle();
    expect(errors).toHaveLength(1);
    expect(ran).toBe(true);
  });

  test('delivery ids are remembered, the oldest forgotten past capacity', () => {
    const d = new DeliveryLog(2);
    expect(d.accept('a')).toBe(true);
    expect(d.accept('a')).toBe(false);
    d.accept('b');
    d.accept('c');
    expect(d.accept('a')).toBe(true);
  });
});

describe('rate limits', () => {
  const octokit = { log: { warn: () => {} } };
  test('secondary limits are retried (unlike Probot\'s log-only default), a few times, within reason', () => {
    const { onSecondaryRateLimit, onRateLimit } = rateLimitHandlers({ maxRateLimitRetries: 2 });
    expect(onSecondaryRateLimit(60, { request: { retryCount: 0 } }, octokit)).toBe(true);
    expect(onSecondaryRateLimit(60, { request: { retryCount: 1 } }, octokit)).toBe(true);
    expect(onSecondaryRateLimit(60, { request: { retryCount: 2 } }, octokit)).toBe(false);
    expect(onRateLimit(3600, { request: { retryCount: 0 } }, octokit)).toBe(false);
  });
});

describe('identity, markers, body edits', () => {
  test("the bot's REST and GraphQL spellings match; humans and other bots do not", () => {
    const bot = botIdentity('gpu-review');
    expect(bot.isBot('gpu-review[bot]', 'Bot')).toBe(true);
    expect(bot.isBot('gpu-review', 'Bot')).toBe(true);
    expect(bot.isBot('gpu-review', 'User')).toBe(false);
    expect(bot.isBot('dependabot[bot]', 'Bot')).toBe(false);
  });

  test('fingerprint markers round-trip, also for fingerprints the marker has to respell', () => {
    for (const fp of ['5896e0e61af698c76fb8', '5896e0e61af698c76fb8-2', 'a--b>c']) {
      expect(markerFingerprint(`text\n${fingerprintMarker(fp)}`)).toBe(markerKey(fp));
    }
    const comments = [{ path: 'a', line: 1, side: 'RIGHT' as const, body: `x\n${fingerprintMarker('f1')}` }, { path: 'a', line: 2, side: 'RIGHT' as const, body: `y\n${fingerprintMarker('f2')}` }];
    const planned = { payload: { body: 'b', event: 'COMMENT' as const, comments }, placements: comments.map((comment, i) => ({ fingerprint: `f${i + 1}`, marker: markerKey(`f${i + 1}`), comment })) };
    const { payload: out, repeated } = withoutAlreadyPosted(planned, new Set([markerKey('f1')]));
    expect(repeated).toBe(1);
    expect(out.comments.map((c) => c.line)).toEqual([2]);
  });

  test('sections go in before the review marker; a huge body stays under GitHub\'s limit', () => {
    const body = `## gpu-review\n\ntext\n\n${REVIEW_MARKER}`;
    expect(addToBody(body, 'NOTE')).toBe(`## gpu-review\n\ntext\n\nNOTE\n\n${REVIEW_MARKER}`);
    const payload = { body, event: 'COMMENT' as const, comments: Array.from({ length: 3000 }, (_, i) => ({ path: 'p.py', line: i + 1, side: 'RIGHT' as const, body: `**[low] r/x** — ${'m'.repeat(40)}` })) };
    const moved = moveToBody(payload, payload.comments, 'Line could not be resolved');
    expect(moved.comments).toHaveLength(0);
    expect(moved.body.length).toBeLessThanOrEqual(65_536);
    expect(moved.body.endsWith(REVIEW_MARKER)).toBe(true);
  });
});

describe('app.yml', () => {
  test('asks for exactly the permissions and events the App uses', async () => {
    const { readFileSync } = await import('node:fs');
    const YAML = (await import('yaml')).default;
    const manifest = YAML.parse(readFileSync(new URL('../../app.yml', import.meta.url), 'utf8'));
    expect(manifest.default_permissions).toEqual({ pull_requests: 'write', checks: 'write', contents: 'read', metadata: 'read' });
    expect(manifest.default_events).toEqual(['pull_request']);
    const { EVENTS } = await import('../../src/app.js');
    expect(EVENTS.map((e) => e.split('.')[0])).toEqual(['pull_request', 'pull_request', 'pull_request', 'pull_request']);
    expect(EVENTS.map((e) => e.split('.')[1])).toEqual(['opened', 'synchronize', 'reopened', 'ready_for_review']);
  });
});

import { afterEach, expect, test } from 'vitest';
import { isContentWrite } from '../../src/github/octokit.js';
import type { LoggedRequest } from './fake-github.js';
import { examplePayload, setup, teardown, type Harness } from './harness.js';
import { cleanFn, loopFn, pythonFile } from './python.js';

/**
 * How many API requests one review of a typical PR costs (issue #20: at most 8): the requests of
 * the review itself, without the installation-token exchange and `GET /app` (both once per
 * process and hour, not per review). Printed as the list of operations, asserted as a bound.
 */

let h: Harness | undefined;

afterEach(() => {
  const violations = h?.github.violations ?? [];
  teardown(h);
  h = undefined;
  expect(violations).toEqual([]);
});

function ofReview(all: readonly LoggedRequest[]): LoggedRequest[] {
  return all.filter((r) => !r.path.includes('/access_tokens') && r.path !== '/app');
}

/** The project index's blob queries (src/github/index-reader.ts: they ask for the `oid`), bounded on their own (issue #15: at most 2). */
const isIndex = (r: LoggedRequest) => r.operation === 'graphql' && /object\(expression/.test(r.body?.query ?? '') && /\boid\b/.test(r.body?.query ?? '');
/** The review's own requests, without the index's. */
const notIndex = (rs: readonly LoggedRequest[]) => rs.filter((r) => !isIndex(r));

function describeRequests(rs: readonly LoggedRequest[]): string {
  return rs.map((r) => (r.operation === 'graphql' ? `graphql(${/headRefOid/.test(r.body?.query) ? 'live' : /reviewThreads/.test(r.body?.query) ? 'threads' : isIndex(r) ? 'index' : /object\(expression/.test(r.body?.query) ? 'contents' : '?'})` : r.operation)).join(', ');
}

const writes = (rs: readonly LoggedRequest[]) => rs.filter((r) => isContentWrite({ method: r.method, url: r.path, query: r.body?.query }));

/** A long in-progress delay: the review never takes that long here, so the count cannot depend on the machine's speed. */
const QUICK = { inProgressAfterMs: 60_000 };

/** Three added files: one with a finding per name in `loops`, a clean one, one that is not GPU code. */
function typicalPr(hh: Harness, head: string, ...loops: string[]): void {
  hh.github.headSha = head;
  hh.github.files = [
    { filename: 'pkg/ring.py', status: 'added', content: pythonFile(...loops.map((n) => loopFn(n))) },
    { filename: 'pkg/util.py', status: 'added', content: pythonFile(cleanFn('total')) },
    { filename: 'docs/notes.md', status: 'added', content: 'Notes on the ring kernels.\n' },
  ];
}

test('a typical PR review (3 files, findings, a config): at most 8 API requests, the config read once per change of the file', async () => {
  h = await setup({ app: QUICK });
  h.github.config = 'fail_on: critical\n';
  const first = examplePayload('opened');
  typicalPr(h, first.pull_request.head.sha, 'ring_area', 'spread');
  await h.deliver(first);
  const r1 = ofReview(h.github.requests);
  console.log(`[requests] first review (config read): ${r1.length}: ${describeRequests(r1)}; ${writes(r1).length} writes`);

  // A push that adds a finding (the earlier ones stand): the config is the same blob, so it is not read again.
  const n1 = h.github.requests.length;
  const push = examplePayload('synchronize');
  push.before = first.pull_request.head.sha;
  push.after = push.pull_request.head.sha = 'b'.repeat(40);
  typicalPr(h, push.after, 'ring_area', 'spread', 'gather');
  await h.deliver(push);
  const r2 = ofReview(h.github.requests.slice(n1));
  console.log(`[requests] next push (config cached): ${r2.length}: ${describeRequests(r2)}; ${writes(r2).length} writes`);

  // The config changes on the default branch: the next review reads it (a new blob id), once.
  const n2 = h.github.requests.length;
  h.github.config = 'fail_on: none\n';
  const push3 = structuredClone(push);
  push3.before = push.after;
  push3.after = push3.pull_request.head.sha = 'c'.repeat(40);
  typicalPr(h, push3.after, 'ring_area', 'spread', 'gather', 'scatter');
  await h.deliver(push3);
  const r3 = ofReview(h.github.requests.slice(n2));

  expect(h.outcomes.map((o) => o.kind)).toEqual(['reviewed', 'reviewed', 'reviewed']);
  expect(h.outcomes.map((o) => (o.kind === 'reviewed' ? o.posted : -1))).toEqual([2, 1, 1]);
  expect(notIndex(r1).length).toBeLessThanOrEqual(8);
  expect(notIndex(r2).length).toBeLessThanOrEqual(8);
  // The index (the files import `vibespatial`, which the repository does not have): one query, then one oid-only query.
  expect(r1.filter(isIndex).length).toBeLessThanOrEqual(2);
  expect(r2.filter(isIndex).length).toBeLessThanOrEqual(1);
  expect(r1.filter((r) => r.operation === 'repos/get-content')).toHaveLength(1);
  expect(r2.filter((r) => r.operation === 'repos/get-content')).toHaveLength(0);
  expect(r3.filter((r) => r.operation === 'repos/get-content')).toHaveLength(1);
  // The changed config applies at once: fail_on none passes the check.
  expect(h.github.checkRuns.map((c) => c.conclusion)).toEqual(['failure', 'failure', 'success']);
  // One check-run write per quick review; the review post is the other write.
  expect(writes(r1).map((r) => r.operation)).toEqual(['pulls/create-review', 'checks/create']);
  expect(h.github.checkRuns.every((c) => c.create.status === 'completed' && c.updates.length === 0)).toBe(true);
});

test('a repository without a config (nor an owner .github repository): no config read at all, push after push', async () => {
  h = await setup({ app: QUICK });
  const first = examplePayload('opened');
  typicalPr(h, first.pull_request.head.sha, 'ring_area', 'spread');
  await h.deliver(first);
  const push = examplePayload('synchronize');
  push.before = first.pull_request.head.sha;
  push.after = push.pull_request.head.sha = 'b'.repeat(40);
  typicalPr(h, push.after, 'ring_area', 'spread', 'gather');
  await h.deliver(push);
  const all = ofReview(h.github.requests);
  console.log(`[requests] two reviews without a config: ${all.length}: ${describeRequests(all)}`);
  expect(h.github.calls('repos/get-content')).toHaveLength(0);
  expect(h.outcomes.map((o) => o.kind)).toEqual(['reviewed', 'reviewed']);
  expect(notIndex(all).length).toBeLessThanOrEqual(2 * 7);
  expect(all.filter(isIndex).length).toBeLessThanOrEqual(2 * 2);
});

test('a config only in the owner\'s .github repository: read once (repository 404, then the fallback), then cached', async () => {
  h = await setup({ app: QUICK });
  h.github.orgConfig = 'fail_on: none\n';
  const first = examplePayload('opened');
  typicalPr(h, first.pull_request.head.sha, 'ring_area', 'spread');
  await h.deliver(first);
  const push = examplePayload('synchronize');
  push.before = first.pull_request.head.sha;
  push.after = push.pull_request.head.sha = 'b'.repeat(40);
  typicalPr(h, push.after, 'ring_area', 'spread', 'gather');
  await h.deliver(push);
  expect(h.github.calls('repos/get-content').map((r) => r.path)).toEqual([
    '/repos/Codertocat/Hello-World/contents/.github%2Fgpu-review.yml',
    '/repos/Codertocat/.github/contents/.github%2Fgpu-review.yml',
  ]);
  expect(h.github.checkRuns.map((c) => c.conclusion)).toEqual(['success', 'success']);
});

test('an invalid config is remembered too: the failed check run again, without reading the file again', async () => {
  h = await setup({ app: QUICK });
  h.github.config = 'fail_on: [high\n';
  const first = examplePayload('opened');
  typicalPr(h, first.pull_request.head.sha, 'ring_area', 'spread');
  await h.deliver(first);
  const push = examplePayload('synchronize');
  push.before = first.pull_request.head.sha;
  push.after = push.pull_request.head.sha = 'b'.repeat(40);
  typicalPr(h, push.after, 'ring_area', 'spread', 'gather');
  await h.deliver(push);
  expect(h.outcomes.map((o) => o.kind)).toEqual(['config-error', 'config-error']);
  expect(h.github.checkRuns.map((c) => c.output.summary.includes('invalid YAML'))).toEqual([true, true]);
  expect(h.github.calls('repos/get-content')).toHaveLength(1);
});

test('a review still reading after the delay opens its check run in progress, then completes that same run', async () => {
  h = await setup({ app: { inProgressAfterMs: 20 } });
  const first = examplePayload('opened');
  typicalPr(h, first.pull_request.head.sha, 'ring_area', 'spread');
  // Listing the files waits until the in-progress check run exists.
  let opened!: () => void;
  const created = new Promise<void>((r) => (opened = r));
  h.github.holds.push({ method: 'GET', path: /\/files$/, until: created });
  const poll = setInterval(() => {
    if (h!.github.checkRuns.length > 0) opened();
  }, 5);
  try {
    await h.deliver(first);
  } finally {
    clearInterval(poll);
  }
  expect(h.github.checkRuns).toHaveLength(1);
  const [run] = h.github.checkRuns;
  expect(run.create.status).toBe('in_progress');
  expect(run.updates.at(-1)).toMatchObject({ status: 'completed', conclusion: 'failure' });
});

test('GraphQL unavailable for the live query: REST reads the PR and Probot the config, as before', async () => {
  h = await setup({ app: QUICK });
  h.github.config = 'fail_on: critical\n';
  h.github.fault({ method: 'POST', path: /^\/graphql$/, status: 502, body: { message: 'Bad gateway' }, when: (b) => /headRefOid/.test(b.query), times: 10 });
  const first = examplePayload('opened');
  typicalPr(h, first.pull_request.head.sha, 'ring_area', 'spread');
  await h.deliver(first);
  expect(h.github.calls('pulls/get')).toHaveLength(1);
  expect(h.github.calls('repos/get-content')).toHaveLength(1);
  expect(h.outcomes[0]).toMatchObject({ kind: 'reviewed', posted: 2 });
});

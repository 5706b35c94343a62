import Bottleneck from 'bottleneck';
import nock from 'nock';
import { afterEach, describe, expect, test } from 'vitest';
import { createOctokitClass, isContentWrite, isReadOnlyGraphQL, writePacing } from '../../src/github/octokit.js';

describe('what counts as a content write', () => {
  test('read-only GraphQL documents', () => {
    expect(isReadOnlyGraphQL('query($o: String!) { repository(owner: $o) { id } }')).toBe(true);
    expect(isReadOnlyGraphQL('{ viewer { login } }')).toBe(true);
    expect(isReadOnlyGraphQL('fragment F on Blob { text } query { a: node(id: "x") { ...F } }')).toBe(true);
    // Field names and strings that spell a keyword are not operations.
    expect(isReadOnlyGraphQL('query { mutationCount subscriptionState }')).toBe(true);
    expect(isReadOnlyGraphQL('query { a(s: "mutation { x }") } # mutation')).toBe(true);
  });
  test('mutations, subscriptions and unreadable documents are writes', () => {
    expect(isReadOnlyGraphQL('mutation($id: ID!) { resolveReviewThread(input: { threadId: $id }) { thread { id } } }')).toBe(false);
    expect(isReadOnlyGraphQL('query { a } mutation { b }')).toBe(false);
    expect(isReadOnlyGraphQL('subscription { x }')).toBe(false);
    expect(isReadOnlyGraphQL('query { a')).toBe(false);
    expect(isReadOnlyGraphQL(undefined)).toBe(false);
  });
  test('REST methods, GraphQL by document, token exchanges exempt', () => {
    expect(isContentWrite({ method: 'GET', url: '/repos/{owner}/{repo}/pulls/{pull_number}/files' })).toBe(false);
    expect(isContentWrite({ method: 'POST', url: '/repos/{owner}/{repo}/pulls/{pull_number}/reviews' })).toBe(true);
    expect(isContentWrite({ method: 'PATCH', url: '/repos/{owner}/{repo}/check-runs/{check_run_id}' })).toBe(true);
    expect(isContentWrite({ method: 'POST', url: '/graphql', query: '{ viewer { login } }' })).toBe(false);
    expect(isContentWrite({ method: 'POST', url: 'https://ghe.example.com/api/graphql', query: 'mutation { x }' })).toBe(true);
    expect(isContentWrite({ method: 'POST', url: '/app/installations/7/access_tokens' })).toBe(false);
  });
});

/** A loopback GitHub that holds each answer a while and records how many requests overlap, per kind. */
function overlapServer(base: string) {
  const inFlight = new Map<string, number>();
  const most = new Map<string, number>();
  const order: string[] = [];
  const hold = (kind: string) => async () => {
    inFlight.set(kind, (inFlight.get(kind) ?? 0) + 1);
    most.set(kind, Math.max(most.get(kind) ?? 0, inFlight.get(kind)!));
    await new Promise((r) => setTimeout(r, 40));
    inFlight.set(kind, inFlight.get(kind)! - 1);
    order.push(kind);
    return [200, kind === 'graphql' ? { data: { viewer: { login: 'x' } } } : {}] as [number, object];
  };
  nock(base).persist().get(/\/repos\/o\/r\/pulls\/\d+$/).reply(hold('read'));
  nock(base).persist().post('/graphql').reply(hold('graphql'));
  nock(base).persist().post(/\/repos\/o\/r\/issues\/\d+\/labels$/).reply(async function () {
    const inst = String(this.req.headers['x-inst']);
    return hold(`write-${inst}`)();
  });
  return { most, order };
}

afterEach(() => {
  nock.cleanAll();
  nock.enableNetConnect();
});

describe('pacing (the real pacer, not the tests\' spacing-free groups)', () => {
  const base = 'https://api.github.test';
  const client = (Cls: ReturnType<typeof createOctokitClass>, inst: string) =>
    new Cls({ baseUrl: base, auth: { token: 't' }, throttle: { id: inst } } as never) as any;

  test('reads and read-only GraphQL queries overlap; one installation\'s writes go one at a time; two installations write side by side', async () => {
    nock.disableNetConnect();
    const srv = overlapServer(base);
    const Cls = createOctokitClass({ retryAfterBaseValue: 1 });
    const a = client(Cls, 'A');
    const b = client(Cls, 'B');
    await Promise.all([
      ...[1, 2, 3, 4].map((n) => a.request('GET /repos/{owner}/{repo}/pulls/{pull_number}', { owner: 'o', repo: 'r', pull_number: n })),
      ...[1, 2, 3, 4].map(() => a.graphql('query { viewer { login } }')),
      ...[1, 2, 3].map(() => a.request('POST /repos/{owner}/{repo}/issues/{issue_number}/labels', { owner: 'o', repo: 'r', issue_number: 1, labels: ['x'], headers: { 'x-inst': 'A' } })),
      ...[1, 2, 3].map(() => b.request('POST /repos/{owner}/{repo}/issues/{issue_number}/labels', { owner: 'o', repo: 'r', issue_number: 1, labels: ['x'], headers: { 'x-inst': 'B' } })),
    ]);
    expect(srv.most.get('read')).toBeGreaterThan(1);
    expect(srv.most.get('graphql')).toBeGreaterThan(1);
    expect(srv.most.get('write-A')).toBe(1);
    expect(srv.most.get('write-B')).toBe(1);
    expect(srv.order.filter((k) => k.startsWith('write'))).toHaveLength(6);
  });

  test('a spent per-minute budget holds the next write until it refills', async () => {
    nock.disableNetConnect();
    const srv = overlapServer(base);
    const pacer = writePacing({ reservoir: 2, reservoirRefreshAmount: 2, reservoirRefreshInterval: 400 } as Bottleneck.ConstructorOptions, 'pace-test');
    const a = client(createOctokitClass({ retryAfterBaseValue: 1, throttle: { write: pacer } }), 'A');
    const write = () => a.request('POST /repos/{owner}/{repo}/issues/{issue_number}/labels', { owner: 'o', repo: 'r', issue_number: 1, labels: ['x'], headers: { 'x-inst': 'A' } });
    let third = false;
    const first = Promise.all([write(), write()]);
    const last = write().then(() => (third = true));
    await first;
    // Two answered; the third waits for the refill (the server took 40 ms per write, the refill comes at 400 ms).
    expect(srv.order.filter((k) => k === 'write-A')).toHaveLength(2);
    expect(third).toBe(false);
    await last;
    expect(srv.order.filter((k) => k === 'write-A')).toHaveLength(3);
  });
});

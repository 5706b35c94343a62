import { createHash } from 'node:crypto';
import nock from 'nock';
import { checkRequest, operationOf } from './openapi.js';

/**
 * A small stateful GitHub behind nock: enough of the REST and GraphQL API for one repository and
 * one pull request, with GitHub's rules where the app depends on them (review comments must
 * anchor on a line of the diff, start_line in the same hunk, one pending review per user, a
 * deleted comment is gone). Every request is checked against GitHub's API description first;
 * `violations` collects what it does not allow.
 */

export interface FakeFile {
  filename: string;
  status: 'added' | 'modified' | 'removed' | 'renamed';
  /** Post-change text; absent for removed or binary files. */
  content?: string;
  patch?: string;
  previous_filename?: string;
  additions?: number;
  deletions?: number;
  /** A binary blob at the head (GitHub sends no patch). */
  binary?: boolean;
  /** Size GraphQL reports; defaults to the content's byte length. */
  byteSize?: number;
}

export interface Fault {
  method: string;
  /** Matched against the path (without query). */
  path: RegExp;
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
  /** How many requests it answers (default 1). */
  times?: number;
  /** Perform the request anyway, then answer with the fault (GitHub's "stored it and said 502"). */
  perform?: boolean;
  /** Only fires when this returns true for the request body. */
  when?: (body: any) => boolean;
}

interface User {
  login: string;
  type: 'Bot' | 'User';
}

interface Review {
  id: number;
  node_id: string;
  user: User;
  body: string;
  state: 'PENDING' | 'COMMENTED';
  commit_id: string;
}

interface Comment {
  id: number;
  pull_request_review_id: number;
  user: User;
  body: string;
  path: string;
  line: number;
  start_line: number | null;
  side: string;
  in_reply_to_id?: number;
  commit_id: string;
}

export interface CheckRun {
  id: number;
  create: any;
  updates: any[];
  annotations: any[];
  status: string;
  conclusion: string | null;
  output: any;
}

export interface LoggedRequest {
  method: string;
  path: string;
  operation: string;
  body: any;
  status: number;
  at: number;
}

export const API = 'https://api.github.com';

export const BOT: User = { login: 'gpu-review[bot]', type: 'Bot' };
export const HUMAN: User = { login: 'octocat', type: 'User' };

/** New-side lines GitHub accepts a comment on, by hunk, from a listFiles patch. */
export function commentableHunks(patch: string): Array<Set<number>> {
  const hunks: Array<Set<number>> = [];
  let line = 0;
  let cur: Set<number> | null = null;
  for (const l of patch.split('\n')) {
    const m = /^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@/.exec(l);
    if (m) {
      line = Number(m[1]);
      cur = new Set();
      hunks.push(cur);
      continue;
    }
    if (!cur || l.startsWith('\\')) continue;
    if (l.startsWith('-')) continue;
    if (l.startsWith('+') || l.startsWith(' ') || l === '') {
      cur.add(line);
      line++;
    }
  }
  return hunks;
}

/** The listFiles patch of an added file. */
export function addedPatch(text: string): string {
  const lines = text.endsWith('\n') ? text.slice(0, -1).split('\n') : text.split('\n');
  return [`@@ -0,0 +1,${lines.length} @@`, ...lines.map((l) => `+${l}`)].join('\n') + (text.endsWith('\n') ? '' : '\n\\ No newline at end of file');
}

/** A minimal line diff (LCS) rendered as a listFiles patch with 3 lines of context. */
export function modifiedPatch(before: string, after: string): { patch: string; additions: number; deletions: number } {
  const a = before.replace(/\n$/, '').split('\n');
  const b = after.replace(/\n$/, '').split('\n');
  const n = a.length;
  const m = b.length;
  const dp = Array.from({ length: n + 1 }, () => new Int32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) for (let j = m - 1; j >= 0; j--) dp[i][j] = a[i] === b[j] ? dp[i + 1][j + 1] + 1 : Math.max(dp[i + 1][j], dp[i][j + 1]);
  const ops: Array<{ k: ' ' | '-' | '+'; t: string; ai: number; bi: number }> = [];
  let i = 0;
  let j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[i] === b[j]) ops.push({ k: ' ', t: a[i], ai: i++, bi: j++ });
    else if (j < m && (i >= n || dp[i][j + 1] >= dp[i + 1][j])) ops.push({ k: '+', t: b[j], ai: i, bi: j++ });
    else ops.push({ k: '-', t: a[i], ai: i++, bi: j });
  }
  const changed = ops.map((o, x) => (o.k !== ' ' ? x : -1)).filter((x) => x >= 0);
  const out: string[] = [];
  let x = 0;
  let additions = 0;
  let deletions = 0;
  while (x < changed.length) {
    let start = Math.max(0, changed[x] - 3);
    let end = Math.min(ops.length - 1, changed[x] + 3);
    while (x + 1 < changed.length && changed[x + 1] - 3 <= end + 1) {
      x++;
      end = Math.min(ops.length - 1, changed[x] + 3);
    }
    x++;
    const slice = ops.slice(start, end + 1);
    const oldStart = slice[0].ai + 1;
    const newStart = slice[0].bi + 1;
    const oldLines = slice.filter((o) => o.k !== '+').length;
    const newLines = slice.filter((o) => o.k !== '-').length;
    out.push(`@@ -${oldLines ? oldStart : oldStart - 1},${oldLines} +${newLines ? newStart : newStart - 1},${newLines} @@`);
    for (const o of slice) {
      out.push(`${o.k}${o.t}`);
      if (o.k === '+') additions++;
      if (o.k === '-') deletions++;
    }
    start = 0;
  }
  return { patch: out.join('\n'), additions, deletions };
}

export class FakeGitHub {
  owner = 'Codertocat';
  repo = 'Hello-World';
  number = 2;
  headSha = 'ec26c3e57ca3a959ca5aad62de7213c562f8c821';
  slug = 'gpu-review';
  state: 'open' | 'closed' = 'open';
  /** `.github/gpu-review.yml` on the default branch; null = none. */
  config: string | null = null;
  /** The same file in the org's `.github` repository. */
  orgConfig: string | null = null;
  /** Other files on the default branch (read without a ref), e.g. the config's baseline. */
  defaultBranchFiles: Record<string, string> = {};
  files: FakeFile[] = [];
  /** Other files of the head commit, which the pull request does not change (path → text): GraphQL blobs only. */
  headFiles: Record<string, string> = {};
  /** Listed files GitHub would send (overrides `files` for listFiles, e.g. 3,000 generated entries). */
  listed: any[] | null = null;
  reviews: Review[] = [];
  comments: Comment[] = [];
  resolved = new Set<number>();
  checkRuns: CheckRun[] = [];
  faults: Fault[] = [];
  /** Requests answered only after a delay (a slow GitHub; a hung one for timeouts). */
  slow: Array<{ method: string; path: RegExp; ms: number; times?: number }> = [];
  /** Requests answered only once `until` resolves (a GitHub that is slow for as long as a test needs). */
  holds: Array<{ method: string; path: RegExp; until: Promise<unknown> }> = [];
  requests: LoggedRequest[] = [];
  violations: string[] = [];
  /** Reject GraphQL review-thread queries, as a GHES without them would. */
  threadsUnavailable = false;
  /** An extra anchor GitHub refuses although it is in the diff (the 422 scenario). */
  refuseAnchor: ((c: any) => boolean) | null = null;
  private nextId = 1000;
  private scope: nock.Scope | null = null;

  start(base = API): this {
    const self = this;
    const handler = (method: string) =>
      async function (this: any, uri: string, body: any) {
        return self.handle(method, uri, body, this.req?.headers ?? {});
      };
    this.scope = nock(base)
      .persist()
      .get(/.*/)
      .reply(handler('GET'))
      .post(/.*/)
      .reply(handler('POST'))
      .put(/.*/)
      .reply(handler('PUT'))
      .patch(/.*/)
      .reply(handler('PATCH'))
      .delete(/.*/)
      .reply(handler('DELETE'));
    return this;
  }

  stop(): void {
    this.scope?.persist(false);
    nock.cleanAll();
  }

  /** Requests by operation id (`pulls/create-review`, `graphql`, ...). */
  calls(operation: string): LoggedRequest[] {
    return this.requests.filter((r) => r.operation === operation);
  }

  fault(f: Fault): void {
    this.faults.push({ times: 1, ...f });
  }

  /** A review the bot (or someone) posted earlier, with its comments. */
  seedReview(user: User, state: Review['state'], commitId: string, body: string, comments: Array<Partial<Comment> & { path: string; line: number; body: string }> = []): Review {
    const review: Review = { id: this.nextId++, node_id: `PRR_${this.nextId}`, user, body, state, commit_id: commitId };
    this.reviews.push(review);
    for (const c of comments) this.comments.push({ id: this.nextId++, pull_request_review_id: review.id, user, start_line: null, side: 'RIGHT', commit_id: commitId, ...c });
    return review;
  }

  reply(to: Comment, user: User, body: string): void {
    this.comments.push({ ...to, id: this.nextId++, user, body, in_reply_to_id: to.id });
  }

  botComments(): Comment[] {
    return this.comments.filter((c) => c.user.type === 'Bot' && !c.in_reply_to_id);
  }

  submittedReviews(): Review[] {
    return this.reviews.filter((r) => r.state !== 'PENDING');
  }

  private listedFiles(): any[] {
    if (this.listed) return this.listed;
    return this.files.map((f) => {
      const patch = f.patch ?? (f.binary ? undefined : f.status === 'added' && f.content !== undefined ? addedPatch(f.content) : undefined);
      const additions = f.additions ?? (patch ? patch.split('\n').filter((l) => l.startsWith('+')).length : 0);
      const deletions = f.deletions ?? (patch ? patch.split('\n').filter((l) => l.startsWith('-')).length : 0);
      return {
        sha: '0000000000000000000000000000000000000000',
        filename: f.filename,
        status: f.status,
        additions,
        deletions,
        changes: additions + deletions,
        blob_url: '',
        raw_url: '',
        contents_url: '',
        ...(patch !== undefined ? { patch } : {}),
        ...(f.previous_filename ? { previous_filename: f.previous_filename } : {}),
      };
    });
  }

  private file(path: string): FakeFile | undefined {
    return this.files.find((f) => f.filename === path);
  }

  private async handle(method: string, uri: string, rawBody: any, headers: Record<string, string>): Promise<[number, any, Record<string, string>?]> {
    const u = new URL(uri, API);
    const path = decodeURIComponent(u.pathname).replace(/^\/api\/v3/, '').replace(/^\/api\/graphql$/, '/graphql');
    const body = typeof rawBody === 'string' && rawBody !== '' ? safeJson(rawBody) : rawBody === '' ? undefined : rawBody;
    const operation = operationOf(method, uri);
    for (const p of checkRequest(method, uri, body)) this.violations.push(p);
    if (body && typeof body === 'object' && Array.isArray(body.comments) && body.comments.some((c: any) => 'position' in c)) {
      this.violations.push(`${method} ${path}: uses the deprecated "position"`);
    }
    const log: LoggedRequest = { method, path: u.pathname + u.search, operation, body, status: 0, at: Date.now() };
    this.requests.push(log);
    void headers;

    const slow = this.slow.find((x) => x.method === method && x.path.test(path) && (x.times ?? Infinity) > 0);
    if (slow) {
      if (slow.times !== undefined) slow.times--;
      await new Promise((r) => setTimeout(r, slow.ms));
    }
    const held = this.holds.find((x) => x.method === method && x.path.test(path));
    if (held) await held.until;
    const fault = this.faults.find((f) => f.method === method && f.path.test(path) && (f.times ?? 1) > 0 && (!f.when || f.when(body)));
    if (fault) {
      fault.times = (fault.times ?? 1) - 1;
      if (fault.perform) this.route(method, path, u, body);
      log.status = fault.status;
      return [fault.status, fault.body ?? { message: 'fault' }, fault.headers];
    }
    const [status, data, h] = this.route(method, path, u, body);
    log.status = status;
    return [status, data, h];
  }

  private route(method: string, path: string, u: URL, body: any): [number, any, Record<string, string>?] {
    const repoBase = `/repos/${this.owner}/${this.repo}`;
    const prBase = `${repoBase}/pulls/${this.number}`;
    let m: RegExpExecArray | null;

    if (method === 'GET' && path === '/app') return [200, { id: 1, slug: this.slug, name: 'gpu-review', node_id: 'A_1', owner: { login: this.owner }, permissions: {}, events: [] }];
    if (method === 'POST' && /^\/app\/installations\/\d+\/access_tokens$/.test(path)) {
      return [201, { token: 'ghs_test', expires_at: new Date(Date.now() + 3600_000).toISOString(), permissions: {}, repository_selection: 'all' }];
    }
    if (method === 'POST' && path === '/graphql') return this.graphql(body);

    if (method === 'GET' && (m = /^\/repos\/([^/]+)\/([^/]+)\/contents\/(.+)$/.exec(path))) {
      const [, owner, repo, file] = m;
      if (file === '.github/gpu-review.yml') {
        const text = owner === this.owner && repo === this.repo ? this.config : repo === '.github' ? this.orgConfig : null;
        if (u.searchParams.get('ref')) this.violations.push('config read from a ref instead of the default branch');
        return text === null ? [404, { message: 'Not Found' }] : [200, text, { 'content-type': 'application/vnd.github.raw; charset=utf-8' }];
      }
      if (!u.searchParams.get('ref') && owner === this.owner && repo === this.repo && file in this.defaultBranchFiles) {
        return [200, this.defaultBranchFiles[file], { 'content-type': 'application/vnd.github.raw; charset=utf-8' }];
      }
      const f = this.file(file);
      if (u.searchParams.get('ref') !== this.headSha) return [404, { message: 'No commit found for the ref' }];
      if (!f || f.content === undefined) return [404, { message: 'Not Found' }];
      return [200, f.content, { 'content-type': 'application/vnd.github.raw; charset=utf-8' }];
    }
    if (method === 'GET' && path === prBase) {
      return [200, { id: 1, number: this.number, state: this.state, draft: false, head: { sha: this.headSha, ref: 'changes' }, base: { sha: 'f95f852bd8fca8fcc58a9a2d6c842781e32a215e', ref: 'master' }, user: HUMAN }];
    }
    if (method === 'GET' && path === `${prBase}/files`) {
      const all = this.listedFiles().slice(0, 3000);
      return this.page(all, u, `${prBase}/files`);
    }
    if (method === 'GET' && path === `${prBase}/reviews`) {
      // Like GitHub: a pending review is visible to its author only (here: the bot asks).
      return this.page(this.reviews.map((r) => this.reviewJson(r)), u, `${prBase}/reviews`);
    }
    if (method === 'POST' && path === `${prBase}/reviews`) return this.createReview(body);
    if (method === 'PUT' && (m = new RegExp(`^${prBase}/reviews/(\\d+)$`).exec(path))) {
      const r = this.reviews.find((x) => x.id === Number(m![1]));
      if (!r) return [404, { message: 'Not Found' }];
      r.body = body.body;
      return [200, this.reviewJson(r)];
    }
    if (method === 'DELETE' && (m = new RegExp(`^${prBase}/reviews/(\\d+)$`).exec(path))) {
      const r = this.reviews.find((x) => x.id === Number(m![1]));
      if (!r) return [404, { message: 'Not Found' }];
      if (r.state !== 'PENDING') return [422, { message: 'Unprocessable Entity', errors: ['Can not delete a non-pending pull request review'] }];
      this.reviews = this.reviews.filter((x) => x !== r);
      this.comments = this.comments.filter((c) => c.pull_request_review_id !== r.id);
      return [200, this.reviewJson(r)];
    }
    if (method === 'GET' && path === `${prBase}/comments`) {
      const visible = this.comments.filter((c) => this.reviews.find((r) => r.id === c.pull_request_review_id)?.state !== 'PENDING');
      return this.page(visible.map((c) => ({ ...c, pull_request_url: '', diff_hunk: '', url: '', html_url: '' })), u, `${prBase}/comments`);
    }
    if (method === 'DELETE' && (m = new RegExp(`^${repoBase}/pulls/comments/(\\d+)$`).exec(path))) {
      const id = Number(m[1]);
      if (!this.comments.some((c) => c.id === id)) return [404, { message: 'Not Found' }];
      this.comments = this.comments.filter((c) => c.id !== id);
      return [204, ''];
    }
    if (method === 'POST' && path === `${repoBase}/check-runs`) {
      const run: CheckRun = { id: this.nextId++, create: body, updates: [], annotations: [...(body.output?.annotations ?? [])], status: body.status ?? 'queued', conclusion: body.conclusion ?? null, output: body.output ?? null };
      if (body.conclusion) run.status = 'completed';
      this.checkRuns.push(run);
      return this.annotationLimit(body) ?? [201, { id: run.id, head_sha: body.head_sha, name: body.name, status: run.status }];
    }
    if (method === 'PATCH' && (m = new RegExp(`^${repoBase}/check-runs/(\\d+)$`).exec(path))) {
      const run = this.checkRuns.find((r) => r.id === Number(m![1]));
      if (!run) return [404, { message: 'Not Found' }];
      const limited = this.annotationLimit(body);
      if (limited) return limited;
      run.updates.push(body);
      run.annotations.push(...(body.output?.annotations ?? []));
      if (body.status) run.status = body.status;
      if (body.conclusion) {
        run.conclusion = body.conclusion;
        run.status = 'completed';
      }
      if (body.output) run.output = body.output;
      return [200, { id: run.id, status: run.status, conclusion: run.conclusion }];
    }
    this.violations.push(`unhandled request ${method} ${path}`);
    return [404, { message: 'Not Found' }];
  }

  private annotationLimit(body: any): [number, any] | null {
    if ((body?.output?.annotations?.length ?? 0) > 50) return [422, { message: 'Only 50 annotations are allowed per request' }];
    return null;
  }

  private page(all: any[], u: URL, path: string): [number, any, Record<string, string>?] {
    const per = Number(u.searchParams.get('per_page') ?? 30);
    const page = Number(u.searchParams.get('page') ?? 1);
    const items = all.slice((page - 1) * per, page * per);
    const headers: Record<string, string> = { 'content-type': 'application/json; charset=utf-8' };
    if (page * per < all.length) headers.link = `<${API}${path}?per_page=${per}&page=${page + 1}>; rel="next", <${API}${path}?per_page=${per}&page=${Math.ceil(all.length / per)}>; rel="last"`;
    return [200, items, headers];
  }

  private reviewJson(r: Review) {
    return { id: r.id, node_id: r.node_id, user: { ...r.user, id: 1 }, body: r.body, state: r.state, commit_id: r.commit_id, html_url: '', pull_request_url: '', author_association: 'NONE', _links: {} };
  }

  /** GitHub's anchor rules for review comments, applied independently of the app's diff model. */
  private anchorProblem(c: any): string | null {
    const f = this.listedFiles().find((x) => x.filename === c.path);
    if (!f || !f.patch) return 'Path could not be resolved';
    const hunks = commentableHunks(f.patch);
    const hunk = hunks.findIndex((h) => h.has(c.line));
    if (hunk < 0) return 'Line could not be resolved';
    if (c.start_line !== undefined) {
      if (c.start_line >= c.line) return 'start_line must precede line';
      if (!hunks[hunk].has(c.start_line)) return 'Pull request review thread start line must be part of the same hunk as the line.';
    }
    if (this.refuseAnchor?.(c)) return 'Line could not be resolved';
    return null;
  }

  private createReview(body: any): [number, any] {
    if (this.reviews.some((r) => r.state === 'PENDING' && r.user.login === BOT.login)) {
      return [422, { message: 'Unprocessable Entity', errors: ['User can only have one pending review per pull request'] }];
    }
    for (const c of body.comments ?? []) {
      const problem = this.anchorProblem(c);
      if (problem) return [422, { message: 'Unprocessable Entity', errors: [problem], documentation_url: 'https://docs.github.com/rest/pulls/reviews#create-a-review-for-a-pull-request' }];
    }
    if ((body.body ?? '').length > 65536) return [422, { message: 'Unprocessable Entity', errors: ['Body is too long (maximum is 65536 characters)'] }];
    const review = this.seedReview(BOT, body.event ? 'COMMENTED' : 'PENDING', body.commit_id ?? this.headSha, body.body ?? '', (body.comments ?? []).map((c: any) => ({ path: c.path, line: c.line, start_line: c.start_line ?? null, body: c.body })));
    return [200, this.reviewJson(review)];
  }

  private threadNodes() {
    const roots = this.comments.filter((c) => !c.in_reply_to_id && this.reviews.find((r) => r.id === c.pull_request_review_id)?.state !== 'PENDING');
    return roots.map((root) => {
      const all = [root, ...this.comments.filter((c) => c.in_reply_to_id === root.id)];
      return {
        id: `PRRT_${root.id}`,
        isResolved: this.resolved.has(root.id),
        path: root.path,
        comments: {
          totalCount: all.length,
          nodes: all.map((c) => ({ databaseId: c.id, body: c.body, author: { __typename: c.user.type, login: c.user.login.replace(/\[bot\]$/, '') } })),
        },
      };
    });
  }

  private graphql(body: any): [number, any] {
    const q: string = body?.query ?? '';
    const vars = body?.variables ?? {};
    if (q.includes('resolveReviewThread')) {
      const id = Number(String(vars.threadId).replace('PRRT_', ''));
      const root = this.comments.find((c) => c.id === id);
      if (!root) return [200, { data: null, errors: [{ type: 'NOT_FOUND', message: 'Could not resolve to a node' }] }];
      this.resolved.add(id);
      return [200, { data: { resolveReviewThread: { thread: { id: vars.threadId, isResolved: true } } } }];
    }
    if (q.includes('reviewThreads')) {
      if (this.threadsUnavailable) return [200, { data: null, errors: [{ message: "Field 'reviewThreads' doesn't exist on type 'PullRequest'" }] }];
      const all = this.threadNodes();
      const start = vars.cursor ? Number(vars.cursor) : 0;
      const nodes = all.slice(start, start + 100);
      const more = start + 100 < all.length;
      return [200, { data: { repository: { pullRequest: { reviewThreads: { pageInfo: { hasNextPage: more, endCursor: more ? String(start + 100) : null }, nodes } } } } }];
    }
    if (q.includes('headRefOid')) {
      // The PR's live state, and the config file's blob on each default branch (the cache's key).
      const fileAt = (text: string | null) => ({ defaultBranchRef: { target: { file: text === null ? null : { oid: blobId(text) } } } });
      const repository: Record<string, unknown> = { pullRequest: { state: this.state.toUpperCase(), headRefOid: this.headSha } };
      if (q.includes('defaultBranchRef')) Object.assign(repository, fileAt(this.config));
      if (!/\borg:\s*repository/.test(q)) return [200, { data: { repository } }];
      // Like GitHub: an owner without a `.github` repository is a NOT_FOUND error beside the data.
      if (this.orgConfig === null) return [200, { data: { repository, org: null }, errors: [{ type: 'NOT_FOUND', path: ['org'], message: `Could not resolve to a Repository with the name '${this.owner}/.github'.` }] }];
      return [200, { data: { repository, org: fileAt(this.orgConfig) } }];
    }
    if (q.includes('object(expression')) {
      const repository: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(vars)) {
        const m = /^e(\d+)$/.exec(k);
        if (!m) continue;
        const [sha, ...rest] = String(v).split(':');
        const at = rest.join(':');
        const f = sha !== this.headSha ? undefined : (this.file(at) ?? (Object.hasOwn(this.headFiles, at) ? { filename: at, status: 'modified' as const, content: this.headFiles[at] } : undefined));
        const alias = `f${m[1]}`;
        if (!f || (f.content === undefined && !f.binary)) {
          repository[alias] = null;
          continue;
        }
        const size = f.byteSize ?? Buffer.byteLength(f.content ?? '');
        const blob: Record<string, unknown> = { __typename: 'Blob' };
        // The fields this alias selects (a query may select differently per alias).
        const sel = new RegExp(`\\b${alias}: object\\(expression: \\$e${m[1]}\\) \\{ __typename \\.\\.\\. on Blob \\{ ([^}]*) \\}`).exec(q)?.[1] ?? q;
        const has = (field: string) => new RegExp(`\\b${field}\\b`).test(sel);
        if (has('oid')) blob.oid = blobId(f.binary ? `binary:${f.filename}` : (f.content ?? ''));
        if (has('byteSize')) blob.byteSize = size;
        if (has('isBinary')) blob.isBinary = Boolean(f.binary);
        if (has('isTruncated')) blob.isTruncated = false;
        if (has('text')) blob.text = f.binary ? null : f.content;
        repository[alias] = blob;
      }
      return [200, { data: { repository } }];
    }
    this.violations.push(`unhandled GraphQL query: ${q.slice(0, 80)}`);
    return [200, { data: null, errors: [{ message: 'unhandled' }] }];
  }
}

/** Git's object id of a blob with this text. */
export function blobId(text: string): string {
  const body = Buffer.from(text);
  return createHash('sha1').update(`blob ${body.length}\0`).update(body).digest('hex');
}

function safeJson(s: string): any {
  try {
    return JSON.parse(s);
  } catch {
    return s;
  }
}

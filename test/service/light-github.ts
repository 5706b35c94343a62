import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHash } from 'node:crypto';
import nock from 'nock';

/** Git's object id of a blob with this text (kept here: fake-github.ts loads GitHub's whole API description). */
function blobId(text: string): string {
  const body = Buffer.from(text);
  return createHash('sha1').update(`blob ${body.length}\0`).update(body).digest('hex');
}

/**
 * Just enough of GitHub for many pull requests at once (the load and queue tests): each PR's live
 * head is the last SHA pushed, it changes no files, the repository has no config. The detailed
 * GitHub behaviour is test/app/fake-github.ts's job; this one counts what was asked. `start()`
 * answers in this process (nock); `serve()` answers on loopback as a GitHub Enterprise host, for
 * services running in child processes.
 */
export class LightGitHub {
  /** Live head per PR number (set by the test as it "pushes"). */
  heads = new Map<number, string>();
  /** Until resolved, reading a PR's files waits (holds review jobs in flight). */
  gate: Promise<void> | null = null;
  reviews: Array<{ number: number; sha: string }> = [];
  /** Head SHAs of the check runs completed (one per review that ran to the end). */
  completed: string[] = [];
  private checkRuns = new Map<number, string>();
  /** Every read of a PR's files waits this long (reviews that take a while). */
  filesDelayMs = 0;
  /** Requests for a PR's files, by PR number (a review got that far). */
  filesRead = new Map<number, number>();
  /** PRs whose files were being read by two reviews at once (must stay empty: one review per PR at a time). */
  overlaps: number[] = [];
  private filesInFlight = new Map<number, number>();
  calls = 0;
  /** `.github/gpu-review.yml` on the default branch (null: none, the default). */
  configText: string | null = null;
  /** Reads of that file. */
  configReads = 0;
  /** Content writes answered (check runs created or updated, reviews posted). */
  writes = 0;
  private scope: nock.Scope | null = null;
  private server: Server | null = null;
  private nextId = 1;

  start(base = 'https://api.github.com'): this {
    const self = this;
    const reply = (method: string) =>
      async function (uri: string, body: any): Promise<[number, any]> {
        self.calls++;
        return self.route(method, new URL(uri, base).pathname, typeof body === 'string' && body ? JSON.parse(body) : body);
      };
    this.scope = nock(base).persist().get(/.*/).reply(reply('GET')).post(/.*/).reply(reply('POST')).patch(/.*/).reply(reply('PATCH')).put(/.*/).reply(reply('PUT'));
    return this;
  }

  stop(): void {
    this.scope?.persist(false);
    nock.cleanAll();
  }

  /** Serves on 127.0.0.1 as a GitHub Enterprise host; returns `host:port` for `GHE_HOST`. */
  async serve(): Promise<string> {
    this.server = createServer((req, res) => {
      let body = '';
      req.on('data', (d) => (body += d));
      req.on('end', () => {
        this.calls++;
        const path = new URL(req.url ?? '/', 'http://x').pathname.replace(/^\/api\/v3(?=\/)/, '').replace(/^\/api\/graphql$/, '/graphql');
        this.route(req.method ?? 'GET', path, body ? JSON.parse(body) : undefined).then(
          ([status, json]) => {
            res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(json));
          },
          () => res.writeHead(500).end('{}'),
        );
      });
    });
    // Connections of a killed replica must not keep the fake from closing.
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', () => r()));
    return `127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    const s = this.server;
    if (!s) return;
    this.server = null;
    await new Promise<void>((r) => {
      s.close(() => r());
      s.closeAllConnections();
    });
  }

  private async route(method: string, path: string, body: any): Promise<[number, any]> {
    let m: RegExpExecArray | null;
    if (method === 'GET' && path === '/app') return [200, { id: 1, slug: 'gpu-review', name: 'gpu-review', owner: { login: 'o' } }];
    if (method === 'POST' && /^\/app\/installations\/\d+\/access_tokens$/.test(path)) return [201, { token: 'ghs_' + 'x'.repeat(36), expires_at: new Date(Date.now() + 3600_000).toISOString(), permissions: {} }];
    if (method === 'GET' && (m = /^\/repos\/[^/]+\/[^/]+\/pulls\/(\d+)$/.exec(path))) {
      const n = Number(m[1]);
      return [200, { number: n, state: 'open', draft: false, head: { sha: this.heads.get(n), ref: 'b' }, base: { sha: 'f'.repeat(40), ref: 'main' }, user: { login: 'dev', type: 'User' } }];
    }
    if (method === 'GET' && (m = /\/pulls\/(\d+)\/files$/.exec(path))) {
      const n = Number(m[1]);
      this.filesRead.set(n, (this.filesRead.get(n) ?? 0) + 1);
      const now = (this.filesInFlight.get(n) ?? 0) + 1;
      this.filesInFlight.set(n, now);
      if (now > 1) this.overlaps.push(n);
      try {
        if (this.gate) await this.gate;
        if (this.filesDelayMs) await new Promise((r) => setTimeout(r, this.filesDelayMs));
      } finally {
        this.filesInFlight.set(n, (this.filesInFlight.get(n) ?? 1) - 1);
      }
      return [200, []];
    }
    if (method === 'GET' && this.configText !== null && /^\/repos\/[^/]+\/[^/.][^/]*\/contents\/\.github(%2F|\/)gpu-review\.yml$/.test(path)) {
      this.configReads++;
      return [200, this.configText];
    }
    if (method === 'GET' && /\/contents\//.test(path)) return [404, { message: 'Not Found' }];
    if (method === 'GET') return [200, []];
    if ((method === 'POST' || method === 'PATCH') && /\/(check-runs|reviews)(\/\d+)?$/.test(path)) this.writes++;
    if (method === 'POST' && /\/check-runs$/.test(path)) {
      const id = this.nextId++;
      this.checkRuns.set(id, body?.head_sha);
      if (body?.status === 'completed') this.completed.push(body?.head_sha);
      return [201, { id, head_sha: body?.head_sha, status: body?.status ?? 'queued' }];
    }
    if (method === 'PATCH' && (m = /\/check-runs\/(\d+)$/.exec(path))) {
      if (body?.status === 'completed' || body?.conclusion) this.completed.push(this.checkRuns.get(Number(m[1])) ?? '?');
      return [200, { id: Number(m[1]) }];
    }
    if (method === 'POST' && (m = /\/pulls\/(\d+)\/reviews$/.exec(path))) {
      this.reviews.push({ number: Number(m[1]), sha: body?.commit_id });
      return [200, { id: this.nextId++, state: 'COMMENTED', body: body?.body ?? '', commit_id: body?.commit_id, user: { login: 'gpu-review[bot]', type: 'Bot' } }];
    }
    if (method === 'POST' && path === '/graphql' && /headRefOid/.test(body?.query ?? '')) {
      // The live state of the PR; no config file in the repository or its owner's `.github` repository.
      const n = Number(body.variables?.number);
      const noFile = { defaultBranchRef: { target: { file: null } } };
      const repoFile = this.configText === null ? noFile : { defaultBranchRef: { target: { file: { oid: blobId(this.configText) } } } };
      return [200, { data: { repository: { pullRequest: { state: 'OPEN', headRefOid: this.heads.get(n) ?? null }, ...repoFile }, ...(/\borg:/.test(body.query) ? { org: noFile } : {}) } }];
    }
    if (method === 'POST' && path === '/graphql') return [200, { data: { repository: null } }];
    return [404, { message: `LightGitHub: no route for ${method} ${path}` }];
  }
}

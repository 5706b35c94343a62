/**
 * The project index in the GitHub App (src/github/index-reader.ts): each cross-file fixture of
 * test/fixtures/xfile/ is a pull request that adds its changed file, the other files being at the
 * head commit (GraphQL blobs of the fake GitHub). The App must give the findings the built CLI gives in
 * --repo mode, spend at most 2 GraphQL queries on the index, and on a later push whose imported
 * files did not change, read none of their texts again (oid-only look-ups, one query at most).
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeEach, describe, expect, it, test } from 'vitest';
import { CHECKS } from '../../checks/registry.generated.js';
import { resolveConfig } from '../../src/config/schema.js';
import { buildProjectIndex } from '../../src/index/build.js';
import { githubIndexReader, indexBlobCache } from '../../src/github/index-reader.js';
import type { GitHubClient } from '../../src/github/octokit.js';
import type { LoggedRequest } from '../app/fake-github.js';
import { examplePayload, setup, teardown, type Harness } from '../app/harness.js';
import { cleanupTmp, tmpDir } from '../diff/tmp-git.js';
import { parseMarkers } from '../helpers.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const CLI = join(ROOT, 'dist', 'src', 'cli.js');
const CASES = join(ROOT, 'test', 'fixtures', 'xfile');

function filesOf(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => (statSync(join(dir, n)).isDirectory() ? filesOf(join(dir, n)) : [join(dir, n)]));
}

function addedFileDiff(path: string, text: string): string {
  const lines = text.replace(/\n$/, '').split('\n');
  return `diff --git a/${path} b/${path}\nnew file mode 100644\n--- /dev/null\n+++ b/${path}\n@@ -0,0 +1,${lines.length} @@\n${lines.map((l) => `+${l}`).join('\n')}\n`;
}

/** The index's queries: blob look-ups that ask for the `oid` (contents.ts's never do). */
const indexQueries = (rs: readonly LoggedRequest[]) => rs.filter((r) => r.operation === 'graphql' && /object\(expression/.test(r.body?.query ?? '') && /\boid\b/.test(r.body?.query ?? ''));

/** Paths whose text an index query asked for. */
function textsAsked(rs: readonly LoggedRequest[]): string[] {
  const out: string[] = [];
  for (const r of indexQueries(rs)) {
    for (const [k, v] of Object.entries(r.body.variables as Record<string, string>)) {
      const m = /^e(\d+)$/.exec(k);
      if (m && new RegExp(`\\bf${m[1]}: object\\(expression: \\$e${m[1]}\\) \\{ __typename \\.\\.\\. on Blob \\{ [^}]*\\btext\\b`).test(r.body.query)) out.push(v.slice(v.indexOf(':') + 1));
    }
  }
  return out;
}

type Found = Array<{ ruleId: string; line: number; message: string }>;

function appFindings(h: Harness): Found {
  const run = h.github.checkRuns.at(-1)!;
  const annotations = [...(run.create.output?.annotations ?? []), ...run.updates.flatMap((u: any) => u.output?.annotations ?? [])];
  return annotations
    .map((a: any) => ({ ruleId: String(a.title).replace(/^\[[^\]]+\] /, ''), line: a.start_line as number, message: String(a.message).split('\n\nSource: ')[0] }))
    .sort((a, b) => a.line - b.line || a.ruleId.localeCompare(b.ruleId));
}

const cases = readdirSync(CASES).filter((c) => statSync(join(CASES, c)).isDirectory());

let h: Harness | undefined;
afterEach(() => {
  const violations = h?.github.violations ?? [];
  teardown(h);
  h = undefined;
  expect(violations).toEqual([]);
});
beforeEach(() => indexBlobCache.clear());
afterAll(() => cleanupTmp());

describe('project index in the App: cases spanning files', () => {
  for (const name of cases) {
    it(`${name}: the CLI's --repo findings, at most 2 index queries, unchanged helpers not read again on the next push`, async () => {
      const dir = join(CASES, name);
      const all = filesOf(dir).map((f) => relative(dir, f));
      const path = all.find((p) => parseMarkers(readFileSync(join(dir, p), 'utf8')).length)!;
      const text = readFileSync(join(dir, path), 'utf8');
      const others = all.filter((p) => p !== path);

      const tmp = tmpDir('gpu-review-xfile-app-');
      writeFileSync(join(tmp, 'change.diff'), addedFileDiff(path, text));
      const cli = spawnSync(process.execPath, [CLI, 'review', '--repo', dir, '--format', 'json', '--fail-on', 'none', join(tmp, 'change.diff')], { encoding: 'utf8', env: { ...process.env, NO_COLOR: '1' } });
      expect(cli.status, cli.stderr).toBe(0);
      const expected = (JSON.parse(cli.stdout).findings as Found).map((f) => ({ ruleId: f.ruleId, line: f.line, message: f.message })).sort((a, b) => a.line - b.line || a.ruleId.localeCompare(b.ruleId));
      expect(expected.length, 'the CLI finds something').toBeGreaterThan(0);

      h = await setup({ checks: CHECKS, app: { inProgressAfterMs: 60_000 } });
      const first = examplePayload('opened');
      h.github.headSha = first.pull_request.head.sha;
      h.github.files = [{ filename: path, status: 'added', content: text }];
      h.github.headFiles = Object.fromEntries(others.map((p) => [p, readFileSync(join(dir, p), 'utf8')]));
      await h.deliver(first);
      expect(h.outcomes.map((o) => o.kind)).toEqual(['reviewed']);
      expect(appFindings(h)).toEqual(expected);
      const q1 = indexQueries(h.github.requests);
      expect(q1.length).toBeGreaterThan(0);
      expect(q1.length).toBeLessThanOrEqual(2);
      const read1 = textsAsked(h.github.requests);
      expect(read1.some((p) => others.includes(p)), 'the helpers were read').toBe(true);

      // A push that changes only the reviewed file: the helpers' blobs are the same, their texts are cached.
      const n1 = h.github.requests.length;
      const push = examplePayload('synchronize');
      push.before = first.pull_request.head.sha;
      push.after = push.pull_request.head.sha = 'b'.repeat(40);
      h.github.headSha = push.after;
      h.github.files = [{ filename: path, status: 'added', content: `${text}\n` }];
      await h.deliver(push);
      const r2 = h.github.requests.slice(n1);
      expect(h.outcomes.map((o) => o.kind)).toEqual(['reviewed', 'reviewed']);
      expect(appFindings(h)).toEqual(expected);
      expect(indexQueries(r2).length).toBeLessThanOrEqual(1);
      expect(textsAsked(r2)).toEqual([]);

      // A push that changes a helper: that one is read again (a new blob), the others are not.
      const helper = read1.find((p) => others.includes(p))!;
      const n2 = h.github.requests.length;
      const push3 = structuredClone(push);
      push3.before = push.after;
      push3.after = push3.pull_request.head.sha = 'c'.repeat(40);
      h.github.headSha = push3.after;
      h.github.headFiles = { ...h.github.headFiles, [helper]: `${h.github.headFiles[helper]}\n` };
      await h.deliver(push3);
      const r3 = h.github.requests.slice(n2);
      expect(indexQueries(r3).length).toBeLessThanOrEqual(2);
      expect(textsAsked(r3)).toEqual([helper]);
      expect(appFindings(h)).toEqual(expected);
    }, 120_000);
  }
});

/** A GitHub client whose GraphQL answers blob look-ups from a map of head files, counting queries. */
function fakeClient(files: Record<string, string>, oid: (text: string) => string) {
  const queries: Array<{ query: string; variables: Record<string, string> }> = [];
  const client = {
    graphql: async (query: string, variables: Record<string, string>) => {
      queries.push({ query, variables });
      const repository: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(variables)) {
        const m = /^e(\d+)$/.exec(k);
        if (!m) continue;
        const p = v.slice(v.indexOf(':') + 1);
        const fields = new RegExp(`f${m[1]}: object\\(expression: \\$e${m[1]}\\) \\{ __typename \\.\\.\\. on Blob \\{ ([^}]*) \\}`).exec(query)![1];
        repository[`f${m[1]}`] = p in files ? { __typename: 'Blob', oid: oid(files[p]), ...(/\btext\b/.test(fields) ? { text: files[p], isTruncated: false, isBinary: false, byteSize: files[p].length } : {}) } : null;
      }
      return { repository };
    },
  } as unknown as GitHubClient;
  return { client, queries };
}

describe('the App index reader', () => {
  const config = resolveConfig({}, CHECKS.map((c) => c.id));
  const files: Record<string, string> = {
    'src/a.cu': '#include "b.cuh"\nvoid run() { helper(); }\n',
    'src/b.cuh': '#include "c.cuh"\n#define BLOCK 128\nvoid helper() { sync_all(); }\n',
    'src/c.cuh': '#include <cuda_runtime.h>\nvoid sync_all() { cudaDeviceSynchronize(); }\n',
  };
  const target = { owner: 'o', repo: 'r', sha: 'a'.repeat(40), number: 7, maxFileBytes: 1_000_000 };
  const oid = (t: string) => `oid-${t.length}-${t.charCodeAt(t.length - 2)}`;

  test('past its query bound it leaves the paths out, and the index says why it stopped', async () => {
    const { client, queries } = fakeClient(files, oid);
    const read = githubIndexReader(client, target, { maxRequests: 1 });
    const ix = await buildProjectIndex([{ path: 'src/a.cu', text: files['src/a.cu'] }], read, config);
    expect(queries).toHaveLength(1);
    expect(Object.keys(ix.files)).toEqual(['src/b.cuh']);
    expect(ix.stats.stopped).toMatch(/GitHub request bound of the index \(1 queries per review\)/);
    // Only the first step's look-ups that found nothing (`b.cuh`, `include/b.cuh`); the unread step counts as none.
    expect(ix.stats.missing).toBe(2);
  });

  test('two steps, two queries; the next review of the pull request: one query, oid only; a cache over its bound reads again', async () => {
    const { client, queries } = fakeClient(files, oid);
    const ix = await buildProjectIndex([{ path: 'src/a.cu', text: files['src/a.cu'] }], githubIndexReader(client, target), config);
    expect(queries).toHaveLength(2);
    expect(Object.keys(ix.files).sort()).toEqual(['src/b.cuh', 'src/c.cuh']);
    expect(ix.files['src/c.cuh'].functions.sync_all.syncs).toEqual({ path: 'src/c.cuh', line: 2 });
    expect(ix.files['src/b.cuh'].constants.BLOCK.num).toBe(128);

    const again = githubIndexReader(client, { ...target, sha: 'b'.repeat(40) });
    const ix2 = await buildProjectIndex([{ path: 'src/a.cu', text: files['src/a.cu'] }], again, config);
    expect(queries).toHaveLength(3);
    expect(queries[2].query).not.toMatch(/\btext\b/);
    expect(again.cached()).toBe(2);
    expect(ix2.files).toEqual(ix.files);

    // A bound smaller than the texts: nothing stays cached, so the next review downloads them again.
    indexBlobCache.setMaxChars(10);
    expect(indexBlobCache.chars()).toBe(0);
    const cold = githubIndexReader(client, { ...target, sha: 'c'.repeat(40) });
    await buildProjectIndex([{ path: 'src/a.cu', text: files['src/a.cu'] }], cold, config);
    expect(cold.cached()).toBe(0);
    expect(queries.slice(3).every((q) => /\btext\b/.test(q.query))).toBe(true);
    indexBlobCache.setMaxChars(64 * 1024 * 1024);
  });

  test('a failed query costs the unread facts, never the review', async () => {
    const client = { graphql: async () => Promise.reject(new Error('Bad gateway\nmore')) } as unknown as GitHubClient;
    const ix = await buildProjectIndex([{ path: 'src/a.cu', text: files['src/a.cu'] }], githubIndexReader(client, target), config);
    expect(ix.files).toEqual({});
    expect(ix.stats.stopped).toBe('reading the imported files from GitHub failed (Bad gateway)');
  });
});

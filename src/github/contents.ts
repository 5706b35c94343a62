import type { ReviewError } from '../core/types.js';
import type { GitHubClient } from './octokit.js';

export interface ContentRequest {
  owner: string;
  repo: string;
  /** Head commit of the PR: the post-change tree the comments anchor in. */
  sha: string;
  paths: readonly string[];
  /** Files larger than this are not downloaded (the config's `limits.max_file_bytes`). */
  maxBytes: number;
  /** About how many bytes the change holds (from the live query), when known: a large one skips the one-query read. */
  expectBytes?: number;
}

export interface Contents {
  texts: Map<string, string>;
  /** Files not to review, with the reason (too large, binary). */
  skipped: Map<string, { reason: string; binary?: boolean }>;
  /** Files that could not be read; the pipeline reviews their diff hunks instead. */
  errors: ReviewError[];
  /** API calls spent (GraphQL queries + REST reads). */
  calls: number;
}

/** Aliased `object(expression:)` lookups per metadata query. */
const META_BATCH = 250;
/** Blobs per text query, and the byte budget of one answer. */
const TEXT_BATCH = 200;
/**
 * Each answer is parsed in one piece on the thread that serves the webhooks and /healthz, at
 * about 15 ms per MB on a loaded 2-core machine (52 MB of JSON: 0.8 s): 2 MB keeps one parse near 30 ms.
 */
const TEXT_BATCH_BYTES = 2_000_000;
/**
 * Up to this many paths, sizes and texts come in one query (a typical PR: one request instead of
 * two). GitHub truncates a large blob's `text` (`isTruncated`), which bounds the answer; a file
 * over `maxBytes` is then dropped as it would have been by its size.
 */
const ONE_QUERY_PATHS = 20;

interface BlobMeta {
  __typename?: string;
  byteSize?: number;
  isBinary?: boolean | null;
}

interface BlobText extends BlobMeta {
  isTruncated?: boolean;
  text?: string | null;
}

type Aliased<T> = { repository: Record<string, T | null> | null };

/**
 * `f0: object(expression: $e0) { ... }` for each path; expressions travel as variables, never spliced
 * into the query. `fields` is the Blob selection of every path, or of path i (the project index asks
 * only the `oid` of a blob it holds, the text of the others: src/github/index-reader.ts).
 */
function blobQuery(count: number, fields: string | ((i: number) => string)): string {
  const vars = Array.from({ length: count }, (_, i) => `$e${i}: String!`).join(', ');
  const objects = Array.from({ length: count }, (_, i) => `f${i}: object(expression: $e${i}) { __typename ... on Blob { ${typeof fields === 'string' ? fields : fields(i)} } }`).join('\n    ');
  return `query ($owner: String!, $repo: String!, ${vars}) {\n  repository(owner: $owner, name: $repo) {\n    ${objects}\n  }\n}`;
}

/** One GraphQL query for the blobs of `paths` at `req.sha` (aliased `object(expression:)` lookups); null where no object. */
export async function graphqlBatch<T>(octokit: GitHubClient, req: Pick<ContentRequest, 'owner' | 'repo' | 'sha'>, paths: readonly string[], fields: string | ((i: number) => string)): Promise<Array<T | null>> {
  const variables: Record<string, string> = { owner: req.owner, repo: req.repo };
  paths.forEach((p, i) => {
    variables[`e${i}`] = `${req.sha}:${p}`;
  });
  let data: Aliased<T>;
  try {
    data = await octokit.graphql<Aliased<T>>(blobQuery(paths.length, fields), variables);
  } catch (e) {
    // A GraphQL error next to partial data (one odd path) keeps the blobs that did resolve.
    const partial = (e as { data?: Aliased<T> }).data;
    if (!partial?.repository) throw e;
    data = partial;
  }
  return paths.map((_, i) => data.repository?.[`f${i}`] ?? null);
}

async function restText(octokit: GitHubClient, req: ContentRequest, path: string): Promise<string | null> {
  const res = await octokit.rest.repos.getContent({ owner: req.owner, repo: req.repo, path, ref: req.sha, mediaType: { format: 'raw' } });
  const data = res.data as unknown;
  if (typeof data === 'string') return data;
  if (data instanceof ArrayBuffer) return new TextDecoder().decode(data);
  return null;
}

/**
 * The post-change text of each path at the head SHA, in as few calls as GitHub allows: up to 20
 * paths, one GraphQL query for sizes and texts; more, one query learns the size of up to 250
 * blobs, one more downloads up to 200 of the ones within the size limit. Anything GraphQL cannot give (truncated text, a failed query) is read
 * through the REST contents API instead.
 */
export async function fetchContents(octokit: GitHubClient, req: ContentRequest): Promise<Contents> {
  const out: Contents = { texts: new Map(), skipped: new Map(), errors: [], calls: 0 };
  const wanted: Array<{ path: string; size: number }> = [];
  const viaRest: string[] = [];

  const sized = (path: string, m: BlobMeta | null): boolean => {
    if (!m || m.__typename !== 'Blob') {
      // A submodule or a path missing at the head: the diff hunks are all there is.
      out.errors.push({ path, message: `not a file at ${req.sha.slice(0, 7)}; reviewed the diff hunks only` });
    } else if (m.isBinary) {
      out.skipped.set(path, { reason: 'binary file', binary: true });
    } else if ((m.byteSize ?? 0) > req.maxBytes) {
      out.skipped.set(path, { reason: `file too large (${((m.byteSize ?? 0) / 1e6).toFixed(1)} MB, limit ${(req.maxBytes / 1e6).toFixed(1)} MB)` });
    } else {
      return true;
    }
    return false;
  };

  if (req.paths.length > 0 && req.paths.length <= ONE_QUERY_PATHS && (req.expectBytes ?? 0) <= TEXT_BATCH_BYTES) {
    let blobs: Array<BlobText | null> | null = null;
    try {
      out.calls++;
      blobs = await graphqlBatch<BlobText>(octokit, req, req.paths, 'byteSize isBinary isTruncated text');
    } catch {
      viaRest.push(...req.paths);
    }
    req.paths.forEach((path, j) => {
      if (!blobs) return;
      const b = blobs[j];
      if (!sized(path, b)) return;
      if (b && typeof b.text === 'string' && !b.isTruncated) out.texts.set(path, b.text);
      else viaRest.push(path);
    });
    return readViaRest(octokit, req, viaRest, out);
  }

  for (let i = 0; i < req.paths.length; i += META_BATCH) {
    const batch = req.paths.slice(i, i + META_BATCH);
    let metas: Array<BlobMeta | null>;
    try {
      out.calls++;
      metas = await graphqlBatch<BlobMeta>(octokit, req, batch, 'byteSize isBinary');
    } catch {
      viaRest.push(...batch);
      continue;
    }
    batch.forEach((path, j) => {
      const m = metas[j];
      if (sized(path, m)) wanted.push({ path, size: m?.byteSize ?? 0 });
    });
  }

  let start = 0;
  while (start < wanted.length) {
    let end = start;
    let bytes = 0;
    while (end < wanted.length && end - start < TEXT_BATCH && (end === start || bytes + wanted[end].size <= TEXT_BATCH_BYTES)) {
      bytes += wanted[end].size;
      end++;
    }
    const batch = wanted.slice(start, end).map((w) => w.path);
    start = end;
    let blobs: Array<BlobText | null>;
    try {
      out.calls++;
      blobs = await graphqlBatch<BlobText>(octokit, req, batch, 'isTruncated text');
    } catch {
      viaRest.push(...batch);
      continue;
    }
    batch.forEach((path, j) => {
      const b = blobs[j];
      if (b && typeof b.text === 'string' && !b.isTruncated) out.texts.set(path, b.text);
      else viaRest.push(path);
    });
  }

  return readViaRest(octokit, req, viaRest, out);
}

/** What GraphQL could not give, one REST read per file. */
async function readViaRest(octokit: GitHubClient, req: ContentRequest, viaRest: readonly string[], out: Contents): Promise<Contents> {
  for (const path of viaRest) {
    try {
      out.calls++;
      const text = await restText(octokit, req, path);
      if (text === null) out.errors.push({ path, message: 'GitHub returned no file content; reviewed the diff hunks only' });
      else if (Buffer.byteLength(text) > req.maxBytes) out.skipped.set(path, { reason: `file too large (${(Buffer.byteLength(text) / 1e6).toFixed(1)} MB, limit ${(req.maxBytes / 1e6).toFixed(1)} MB)` });
      else out.texts.set(path, text);
    } catch (e) {
      out.errors.push({ path, message: `could not read the file at the head commit (${(e as Error).message.split('\n')[0]}); reviewed the diff hunks only` });
    }
  }
  return out;
}

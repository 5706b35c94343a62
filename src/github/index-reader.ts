/**
 * The App's reader for the project index (issue #15, src/index/): the files the changed files import
 * or include, read at the head commit through the batched GraphQL blob query of contents.ts.
 *
 * - **Requests**: at most `maxRequests` (2) GraphQL queries per review, whatever the index asks; one
 *   query per index step (a path that does not exist costs an alias, not a request). Past the bound
 *   the reader leaves the paths out and the index says it stopped there.
 * - **Blob cache across pushes**: texts by blob SHA in a process-wide LRU bounded in bytes. For a
 *   path whose blob this pull request's last review saw, and whose text the cache still holds, the
 *   query asks only the blob's `oid`: the same oid is the cached text, never downloaded again; a
 *   new oid is read in the next query.
 * - **One query for an unchanged push**: the first query of a review also asks (oid only) for the
 *   paths the last review of the same pull request read, so when none of them changed the index's
 *   later steps are answered without a request.
 */
import type { BatchReader } from '../index/types.js';
import { graphqlBatch } from './contents.js';
import type { GitHubClient } from './octokit.js';

export interface IndexReadTarget {
  owner: string;
  repo: string;
  /** The head commit. */
  sha: string;
  /** The pull request: the last-seen blob of each path is remembered per pull request. */
  number: number;
  /** Blobs larger than this are not read (the config's `limits.max_file_bytes`). */
  maxFileBytes: number;
}

export interface IndexReaderOptions {
  /** GraphQL queries one review may spend on the index (default 2). */
  maxRequests?: number;
  /** Aliased blob look-ups in one query (default 300). */
  maxPaths?: number;
}

export type GitHubIndexReader = BatchReader & {
  /** Queries spent so far by this review's reader. */
  requests: () => number;
  /** Blob texts this review took from the cache instead of downloading them. */
  cached: () => number;
};

interface BlobAnswer {
  __typename?: string;
  oid?: string;
  byteSize?: number;
  isBinary?: boolean | null;
  isTruncated?: boolean;
  text?: string | null;
}

const FULL = 'oid byteSize isBinary isTruncated text';
const PROBE = 'oid';

/** Blob texts by oid, least recently used first; bounded by the UTF-16 length of the texts held. */
class BlobCache {
  private readonly map = new Map<string, string>();
  private held = 0;
  constructor(public maxChars: number) {}
  get(oid: string): string | undefined {
    const t = this.map.get(oid);
    if (t !== undefined) {
      this.map.delete(oid);
      this.map.set(oid, t);
    }
    return t;
  }
  has(oid: string): boolean {
    return this.map.has(oid);
  }
  set(oid: string, text: string): void {
    if (text.length > this.maxChars || this.map.has(oid)) return;
    this.map.set(oid, text);
    this.held += text.length;
    this.evict();
  }
  evict(): void {
    while (this.held > this.maxChars && this.map.size) {
      const [k, v] = this.map.entries().next().value!;
      this.map.delete(k);
      this.held -= v.length;
    }
  }
  get size(): number {
    return this.held;
  }
  clear(): void {
    this.map.clear();
    this.held = 0;
  }
}

/** A Map used as an LRU of at most `max` entries. */
function remember<K, V>(m: Map<K, V>, k: K, v: V, max: number): void {
  m.delete(k);
  m.set(k, v);
  if (m.size > max) m.delete(m.keys().next().value!);
}

/** 64 MiB of text by default: the facts of a busy installation's hot headers and helpers. */
const blobs = new BlobCache(64 * 1024 * 1024);
/** `owner/repo#number` → path → the oid its last review saw (null: no such file). */
const lastSeen = new Map<string, Map<string, string | null>>();
const MAX_PULLS = 2000;
const MAX_PATHS_PER_PULL = 2000;

/** Process-wide cache state, for tests and the service's metrics. */
export const indexBlobCache = {
  chars: () => blobs.size,
  /** Sets the byte bound (tests); evicts at once. */
  setMaxChars(n: number): void {
    blobs.maxChars = n;
    blobs.evict();
  },
  clear(): void {
    blobs.clear();
    lastSeen.clear();
  },
};

export function githubIndexReader(octokit: GitHubClient, t: IndexReadTarget, opts: IndexReaderOptions = {}): GitHubIndexReader {
  const maxRequests = opts.maxRequests ?? 2;
  const maxPaths = opts.maxPaths ?? 300;
  const pull = `${t.owner}/${t.repo}#${t.number}`;
  const before = lastSeen.get(pull) ?? new Map<string, string | null>();
  const now = new Map<string, string | null>();
  /** This review's answers: path → text, or null (absent, binary, too large, truncated). */
  const seen = new Map<string, string | null>();
  let requests = 0;
  let fromCache = 0;
  let prefetched = false;
  let stopped: string | undefined;

  const probe = (p: string) => {
    const oid = before.get(p);
    return oid === null || (oid !== undefined && blobs.has(oid));
  };

  const query = async (paths: string[]): Promise<void> => {
    requests++;
    const probed = paths.map(probe);
    const answers = await graphqlBatch<BlobAnswer>(octokit, t, paths, (i) => (probed[i] ? PROBE : FULL));
    paths.forEach((p, i) => {
      const b = answers[i];
      if (!b || b.__typename !== 'Blob' || !b.oid) {
        now.set(p, null);
        seen.set(p, null);
        return;
      }
      now.set(p, b.oid);
      if (probed[i]) {
        const text = blobs.get(b.oid);
        if (text !== undefined) {
          fromCache++;
          seen.set(p, text);
        }
        // A new blob at this path: read in the next query (no longer a probe: its oid is not cached).
        else before.set(p, b.oid);
        return;
      }
      const ok = typeof b.text === 'string' && !b.isTruncated && !b.isBinary && (b.byteSize ?? 0) <= t.maxFileBytes;
      seen.set(p, ok ? b.text! : null);
      if (ok) blobs.set(b.oid, b.text!);
    });
  };

  const read = async (paths: string[]): Promise<Map<string, string | null>> => {
    let need = [...new Set(paths)].filter((p) => !seen.has(p));
    try {
      while (need.length) {
        if (requests >= maxRequests) {
          stopped ??= `GitHub request bound of the index (${maxRequests} queries per review) reached`;
          break;
        }
        let batch = need.slice(0, maxPaths);
        if (!prefetched) {
          // What the last review of this pull request read, asked along (oid only, text cached).
          const asked = new Set(batch);
          const extra = [...before.keys()].filter((p) => !asked.has(p) && !seen.has(p) && probe(p));
          batch = [...batch, ...extra.slice(0, Math.max(0, maxPaths - batch.length))];
          prefetched = true;
        }
        await query(batch);
        need = need.filter((p) => !seen.has(p));
      }
    } catch (e) {
      // A failed query costs the facts still unread, never the review.
      stopped ??= `reading the imported files from GitHub failed (${(e as Error).message.split('\n')[0]})`;
    } finally {
      const keep = new Map([...before].filter(([p]) => !now.has(p)).slice(-Math.max(0, MAX_PATHS_PER_PULL - now.size)));
      for (const [p, o] of now) keep.set(p, o);
      remember(lastSeen, pull, keep, MAX_PULLS);
    }
    const out = new Map<string, string | null>();
    for (const p of paths) if (seen.has(p)) out.set(p, seen.get(p)!);
    return out;
  };

  return Object.assign(read, { stopped: () => stopped, requests: () => requests, cached: () => fromCache });
}

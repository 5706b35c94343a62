/**
 * Batched readers for the project index over the per-file readers the CLI already has (a checkout
 * for `--repo`, `git show --end-of-options REV:PATH` for `--git`): the same path checks, a few reads
 * at a time. The App's reader (batched GraphQL by blob SHA) lives with the GitHub code.
 */
import type { FileReader } from '../pipeline.js';
import type { BatchReader } from './types.js';

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Text of a read, or null when absent or not UTF-8 (such a file holds no facts the models can read). */
export function asText(got: string | Uint8Array | null): string | null {
  if (got === null || typeof got === 'string') return got;
  try {
    return utf8.decode(got);
  } catch {
    return null;
  }
}

export function batchReaderOf(read: FileReader, concurrency = 8): BatchReader {
  return async (paths) => {
    const out = new Map<string, string | null>();
    let next = 0;
    const lane = async () => {
      while (next < paths.length) {
        const p = paths[next++];
        try {
          out.set(p, asText(await read(p)));
        } catch {
          out.set(p, null);
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, paths.length) }, lane));
    return out;
  };
}

/**
 * The review's per-file reader, reading each file once when the index read it first: the second read
 * (the review's) takes the kept result and drops it, so nothing stays held after its file was reviewed.
 */
export function readOnce(read: FileReader): FileReader {
  const kept = new Map<string, Promise<string | Uint8Array | null>>();
  return (p) => {
    const hit = kept.get(p);
    if (hit) {
      kept.delete(p);
      return hit;
    }
    const got = read(p);
    kept.set(p, got);
    return got;
  };
}

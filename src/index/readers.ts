/**
 * Batched readers for the project index over the per-file readers the CLI already has (a checkout
 * for `--repo`, `git show --end-of-options REV:PATH` for `--git`): the same path checks, a few reads
 * at a time. The App's reader (batched GraphQL by blob SHA) lives with the GitHub code.
 */
import { spawn } from 'node:child_process';
import type { FileReader } from '../core/types.js';
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

/**
 * `--git`: files of revision `rev` through one `git cat-file --batch` per batch instead of a `git show`
 * per path. Object names travel on stdin (`REV:PATH` lines), never as arguments, so no path can be read
 * as an option; a path with a newline is not asked for.
 */
export function gitBatchReader(repo: string, rev: string): BatchReader {
  return (paths) =>
    new Promise((resolve) => {
      const out = new Map<string, string | null>(paths.map((p) => [p, null]));
      const ask = paths.filter((p) => !/[\n\0]/.test(p));
      if (!ask.length) return resolve(out);
      const child = spawn('git', ['cat-file', '--batch'], { cwd: repo, stdio: ['pipe', 'pipe', 'ignore'] });
      const chunks: Buffer[] = [];
      child.stdout.on('data', (d: Buffer) => chunks.push(d));
      child.on('error', () => resolve(out));
      child.on('close', () => {
        const buf = Buffer.concat(chunks);
        let at = 0;
        for (const p of ask) {
          const nl = buf.indexOf(10, at);
          if (nl < 0) break;
          const m = /^[0-9a-f]+ (\w+) (\d+)$/.exec(buf.subarray(at, nl).toString('utf8'));
          at = nl + 1;
          if (!m) continue; // "<name> missing"
          const size = Number(m[2]);
          if (m[1] === 'blob') out.set(p, asText(buf.subarray(at, at + size)));
          at += size + 1;
        }
        resolve(out);
      });
      child.stdin.on('error', () => undefined);
      child.stdin.end(ask.map((p) => `${rev}:${p}`).join('\n') + '\n');
    });
}

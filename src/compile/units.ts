import { posix } from 'node:path';
import type { DiffFile, DiffModel } from '../diff/model.js';
import { hunkNewText } from '../diff/model.js';
import type { FileReader } from '../core/types.js';

/**
 * The two trees a compile reads: the post-change files (the review's own reader: `--repo`, `git show`
 * at the head revision, the GitHub contents at the head SHA) and the pre-change files, rebuilt from
 * the post-change text and the diff (each hunk's context and deleted lines replace its new side).
 * Rebuilding needs no second checkout and no base revision, so every diff source the review accepts
 * has a base: unchanged files are the same on both sides.
 */
export interface Trees {
  head(path: string): Promise<string | null>;
  base(path: string): Promise<string | null>;
  /** Changed files by post-change path and by pre-change path. */
  byNew: Map<string, DiffFile>;
  byOld: Map<string, DiffFile>;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

function decode(b: string | Uint8Array | null): string | null {
  if (b === null) return null;
  if (typeof b === 'string') return b;
  try {
    return utf8.decode(b);
  } catch {
    return null;
  }
}

/** The pre-change text of a modified file from its post-change text and its hunks. */
export function reversePatch(head: string, file: DiffFile): string {
  const crlf = head.includes('\r\n');
  const lines = head.replace(/\r\n/g, '\n').split('\n');
  const out: string[] = [];
  let cursor = 0;
  for (const h of file.hunks) {
    // A hunk with an empty new side sits after line newStart, otherwise it starts at newStart.
    const start = h.newLines === 0 ? h.newStart : h.newStart - 1;
    while (cursor < start && cursor < lines.length) out.push(lines[cursor++]);
    for (const l of h.lines) if (l.kind !== 'add') out.push(l.text);
    cursor = start + h.newLines;
  }
  while (cursor < lines.length) out.push(lines[cursor++]);
  const text = out.join('\n');
  return crlf ? text.replace(/\n/g, '\r\n') : text;
}

export function makeTrees(diff: DiffModel, readFile: FileReader | undefined): Trees {
  const byNew = new Map<string, DiffFile>();
  const byOld = new Map<string, DiffFile>();
  for (const f of diff.files) {
    if (f.newPath && f.status !== 'deleted') byNew.set(f.newPath, f);
    if (f.oldPath && f.status !== 'added') byOld.set(f.oldPath, f);
  }
  const headCache = new Map<string, Promise<string | null>>();
  const head = (path: string): Promise<string | null> => {
    let p = headCache.get(path);
    if (!p) {
      p = (async () => {
        const f = byNew.get(path);
        const got = readFile ? decode(await readFile(path)) : null;
        if (got !== null) return got;
        // An added file is its own whole hunk: the diff holds all of it.
        if (f && f.status === 'added' && f.hunks.length === 1 && f.hunks[0].newStart <= 1) return hunkNewText(f.hunks[0]).text;
        return null;
      })();
      headCache.set(path, p);
    }
    return p;
  };
  const base = async (path: string): Promise<string | null> => {
    const changed = byOld.get(path);
    if (changed) {
      if (changed.status === 'deleted') return changed.hunks.flatMap((h) => h.lines.filter((l) => l.kind !== 'add').map((l) => l.text)).join('\n');
      const h = await head(changed.newPath ?? path);
      return h === null ? null : reversePatch(h, changed);
    }
    const added = byNew.get(path);
    if (added && (added.status === 'added' || added.status === 'renamed')) return null;
    return head(path);
  };
  return { head, base, byNew, byOld };
}

export interface IncludeRef {
  quoted: boolean;
  name: string;
  line: number;
}

const INCLUDE = /^[ \t]*#[ \t]*include[ \t]*(.*)$/gm;

/** `#include` lines of a file; a computed include (`#include MACRO`) comes back with `name: null`. */
export function scanIncludes(text: string): Array<IncludeRef | { computed: true; line: number }> {
  const out: Array<IncludeRef | { computed: true; line: number }> = [];
  const stripped = text.replace(/\/\*[\s\S]*?\*\//g, (m) => m.replace(/[^\n]/g, ' '));
  for (const m of stripped.matchAll(INCLUDE)) {
    const line = stripped.slice(0, m.index).split('\n').length;
    const arg = m[1].replace(/\/\/.*$/, '').trim();
    const q = /^"([^"]+)"/.exec(arg);
    const a = /^<([^>]+)>/.exec(arg);
    if (q) out.push({ quoted: true, name: q[1], line });
    else if (a) out.push({ quoted: false, name: a[1], line });
    else out.push({ computed: true, line });
  }
  return out;
}

export interface CollectedUnit {
  /** Repo-relative path → text, the unit first. */
  files: Map<string, string>;
  skipped?: string;
}

export const MAX_UNIT_FILES = 2000;
export const MAX_UNIT_BYTES = 64 * 1024 * 1024;

/**
 * The files a translation unit reads from the repository, for one side: the unit and its includes,
 * transitively, resolved as nvcc does (quoted: the including file's directory, then the include
 * dirs; angle: the include dirs), with the include dirs relative to the repository root. An include
 * found in neither is left to the toolkit's and the host compiler's own directories. Absolute
 * includes, includes that climb out of the repository, and computed includes make the unit
 * unfit to compile: the compiler would read outside the copy.
 */
export async function collectUnit(unitPath: string, unitText: string, read: (p: string) => Promise<string | null>, includeDirs: readonly string[]): Promise<CollectedUnit> {
  const files = new Map<string, string>([[unitPath, unitText]]);
  const queue: string[] = [unitPath];
  let bytes = unitText.length;
  while (queue.length) {
    const from = queue.shift()!;
    const text = files.get(from)!;
    for (const inc of scanIncludes(text)) {
      const at = `${from}:${inc.line}`;
      if ('computed' in inc) return { files, skipped: `computed #include at ${at} (the compiler could read outside the repository)` };
      if (posix.isAbsolute(inc.name) || /^[A-Za-z]:[\\/]/.test(inc.name)) return { files, skipped: `#include of an absolute path at ${at}` };
      const candidates = [...(inc.quoted ? [posix.join(posix.dirname(from), inc.name)] : []), ...includeDirs.map((d) => posix.join(d, inc.name))];
      let found: string | null = null;
      for (const c of candidates) {
        const norm = posix.normalize(c);
        if (norm === '..' || norm.startsWith('../')) return { files, skipped: `#include "${inc.name}" at ${at} escapes the repository` };
        if (files.has(norm)) {
          found = norm;
          break;
        }
        const t = await read(norm);
        if (t !== null) {
          found = norm;
          files.set(norm, t);
          bytes += t.length;
          queue.push(norm);
          break;
        }
      }
      if (!found && inc.name.split('/').includes('..')) return { files, skipped: `#include "${inc.name}" at ${at} climbs out of its directory and is not in the repository` };
      if (files.size > MAX_UNIT_FILES || bytes > MAX_UNIT_BYTES) return { files, skipped: `more than ${MAX_UNIT_FILES} included files or ${MAX_UNIT_BYTES / 1024 / 1024} MB` };
    }
  }
  return { files };
}

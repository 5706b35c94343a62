import parseDiff from 'parse-diff';

export type FileStatus = 'added' | 'deleted' | 'modified' | 'renamed';

export interface DiffLine {
  kind: 'add' | 'del' | 'context';
  /** Text without the leading marker and without a trailing CR. */
  text: string;
  oldLine?: number;
  newLine?: number;
}

export interface Hunk {
  header: string;
  oldStart: number;
  oldLines: number;
  newStart: number;
  newLines: number;
  lines: DiffLine[];
}

export interface DiffFile {
  /** Path on the new side (the old path for deleted files). */
  path: string;
  oldPath: string | null;
  newPath: string | null;
  status: FileStatus;
  binary: boolean;
  modeOnly: boolean;
  hunks: Hunk[];
  /** New-side lines that were added. */
  added: Set<number>;
  /** New-side lines GitHub accepts a review comment on (added and context lines of every hunk). */
  commentable: Set<number>;
  /** Why the diff of this file cannot be used, if it cannot. */
  problem?: string;
  crlf: boolean;
}

export interface DiffModel {
  files: DiffFile[];
}

export class DiffError extends Error {}

const DEV_NULL = '/dev/null';

interface GitHeaderFacts {
  binary: boolean;
  modeChange: boolean;
}

/**
 * parse-diff knows nothing of binary or mode-only changes; git says so in the extended header of
 * each `diff --git` section, in the same order parse-diff yields its files.
 */
function scanGitHeaders(text: string): GitHeaderFacts[] {
  const facts: GitHeaderFacts[] = [];
  let cur: GitHeaderFacts | null = null;
  let inHeader = false;
  for (const line of text.split('\n')) {
    if (line.startsWith('diff --git ')) {
      cur = { binary: false, modeChange: false };
      facts.push(cur);
      inHeader = true;
      continue;
    }
    if (!cur || !inHeader) continue;
    if (line.startsWith('@@') || line.startsWith('--- ')) {
      inHeader = false;
    } else if (line.startsWith('Binary files ') || line.startsWith('GIT binary patch')) {
      cur.binary = true;
      inHeader = false;
    } else if (line.startsWith('old mode ') || line.startsWith('new mode ')) {
      cur.modeChange = true;
    }
  }
  return facts;
}

function stripCR(s: string): [string, boolean] {
  return s.endsWith('\r') ? [s.slice(0, -1), true] : [s, false];
}

/**
 * Parse a unified diff (`git diff`, `git format-patch` mail, GitHub's `.diff`, or plain `diff -u`).
 * An empty input is an empty diff; input that is not a diff at all throws DiffError.
 */
export function parseUnifiedDiff(input: string): DiffModel {
  if (input.includes('\u0000')) {
    throw new DiffError('input is binary data, not a unified diff');
  }
  if (input.trim() === '') return { files: [] };
  const parsed = parseDiff(input);
  const looksLikeDiff = /^(diff --git |--- |\+\+\+ |@@ )/m.test(input);
  if (parsed.length === 0 || !looksLikeDiff) {
    throw new DiffError('input is not a unified diff (no "diff --git", "---/+++" or "@@" lines found)');
  }
  const gitFacts = /^diff --git /m.test(input) ? scanGitHeaders(input) : [];
  const files: DiffFile[] = [];
  parsed.forEach((f, i) => {
    const oldPath = f.from && f.from !== DEV_NULL ? f.from : null;
    const newPath = f.to && f.to !== DEV_NULL ? f.to : null;
    const facts = gitFacts[i] ?? { binary: false, modeChange: false };
    const deleted = Boolean(f.deleted) || newPath === null;
    const added = Boolean(f.new) || (oldPath === null && newPath !== null);
    const status: FileStatus = deleted
      ? 'deleted'
      : added
        ? 'added'
        : oldPath !== null && newPath !== null && oldPath !== newPath
          ? 'renamed'
          : 'modified';
    const file: DiffFile = {
      path: (newPath ?? oldPath ?? '').replace(/\t.*$/, ''),
      oldPath,
      newPath,
      status,
      binary: facts.binary,
      modeOnly: facts.modeChange && f.chunks.length === 0,
      hunks: [],
      added: new Set(),
      commentable: new Set(),
      crlf: false,
    };
    for (const c of f.chunks) {
      const hunk: Hunk = {
        header: c.content,
        oldStart: c.oldStart,
        oldLines: c.oldLines,
        newStart: c.newStart,
        newLines: c.newLines,
        lines: [],
      };
      let oldNo = c.oldStart;
      let newNo = c.newStart;
      let seenOld = 0;
      let seenNew = 0;
      for (const ch of c.changes) {
        // "\ No newline at end of file" is metadata about the previous line, not a line.
        if (ch.content.startsWith('\\')) continue;
        // A format-patch mail ends with "-- \n<git version>"; the hunk's declared counts tell
        // where the hunk really ends.
        if (seenOld >= c.oldLines && seenNew >= c.newLines) break;
        const [text, cr] = stripCR(ch.content.slice(1));
        if (cr) file.crlf = true;
        if (ch.type === 'add') {
          hunk.lines.push({ kind: 'add', text, newLine: newNo });
          file.added.add(newNo);
          file.commentable.add(newNo);
          newNo++;
          seenNew++;
        } else if (ch.type === 'del') {
          hunk.lines.push({ kind: 'del', text, oldLine: oldNo });
          oldNo++;
          seenOld++;
        } else {
          hunk.lines.push({ kind: 'context', text, oldLine: oldNo, newLine: newNo });
          file.commentable.add(newNo);
          oldNo++;
          newNo++;
          seenOld++;
          seenNew++;
        }
      }
      if (seenOld !== c.oldLines || seenNew !== c.newLines) {
        file.problem = `truncated or malformed hunk ${c.content.trim()} (expected ${c.oldLines}/${c.newLines} old/new lines, found ${seenOld}/${seenNew})`;
      }
      file.hunks.push(hunk);
    }
    files.push(file);
  });
  return { files };
}

/** The new-side text of a hunk: context and added lines, in order. */
export function hunkNewText(h: Hunk): { text: string; firstLine: number } {
  const lines = h.lines.filter((l) => l.kind !== 'del').map((l) => l.text);
  return { text: lines.join('\n') + (lines.length ? '\n' : ''), firstLine: h.newStart };
}

/** Which hunk (index) holds new-side line `line`, or -1. */
export function hunkOfLine(f: DiffFile, line: number): number {
  return f.hunks.findIndex((h) => line >= h.newStart && line < h.newStart + h.newLines);
}

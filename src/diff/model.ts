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
  /** Index into the sections that parse-diff could not read. */
  broken?: number;
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

/**
 * The input cut before every line that starts with "diff " (`diff --git`, `diff -ru`). No hunk body
 * line starts with "d", so parsing the sections apart keeps a truncated hunk, whose declared counts
 * run past its real end, from swallowing the files after it.
 */
function splitSections(text: string): string[] {
  const out: string[] = [];
  const lines = text.split('\n');
  let offset = 0;
  let last = 0;
  let hasFileHeader = false;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    let cut = false;
    if (line.startsWith('diff ')) {
      cut = true;
      hasFileHeader = false;
    } else if (line.startsWith('--- ') && lines[i + 1]?.startsWith('+++ ') && lines[i + 2]?.startsWith('@@ ')) {
      // Without `diff --git` lines, a `---`/`+++`/`@@` triple starts the next file: a hunk body line
      // never starts with "@@", so only a file header is followed by one two lines down.
      if (hasFileHeader) cut = true;
      hasFileHeader = true;
    }
    if (cut && offset > last) {
      out.push(text.slice(last, offset));
      last = offset;
    }
    offset += line.length + 1;
  }
  out.push(text.slice(last));
  return out.filter((x) => x !== '');
}

/** The paths a section names (for reporting a section that cannot be parsed). */
function sectionPath(section: string): string {
  const plus = /^\+\+\+ (?:b\/)?(.+)$/m.exec(section)?.[1];
  if (plus && plus !== DEV_NULL) return plus.replace(/\t.*$/, '');
  const minus = /^--- (?:a\/)?(.+)$/m.exec(section)?.[1];
  if (minus && minus !== DEV_NULL) return minus.replace(/\t.*$/, '');
  return /^diff --git a\/(\S+)/m.exec(section)?.[1] ?? '(unnamed file)';
}

/** `\ No newline at end of file` right after a hunk header refers to no line; parse-diff throws on it. */
function dropOrphanNoNewline(section: string): string {
  return section.replace(/^(@@ [^\n]*\n)(?:\\[^\n]*\n)+/gm, '$1');
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
  // Each section's git header facts go with the first file parse-diff yields for that section.
  const parsed: Array<{ f: parseDiff.File; facts?: GitHeaderFacts }> = [];
  // Old Mac line endings: a diff with CRs and no LF is one line to every parser; read it as lines.
  if (!input.includes('\n') && input.includes('\r')) input = input.replace(/\r/g, '\n');
  const broken: DiffFile[] = [];
  for (const raw of splitSections(input)) {
    const section = dropOrphanNoNewline(raw);
    const facts = section.startsWith('diff --git ') ? scanGitHeaders(section)[0] : undefined;
    // Without its final newline, so the empty string after it is not taken for a line of a hunk.
    try {
      parseDiff(section.endsWith('\n') ? section.slice(0, -1) : section).forEach((f, i) => parsed.push({ f, facts: i === 0 ? facts : undefined }));
    } catch (e) {
      // One unreadable section costs only its own file: it is reported, the others are reviewed.
      const path = sectionPath(section);
      broken.push({ path, oldPath: path, newPath: path, status: 'modified', binary: false, modeOnly: false, hunks: [], added: new Set(), commentable: new Set(), problem: `unreadable diff section (${String((e as Error).message ?? e).slice(0, 120)})`, crlf: false });
      parsed.push({ f: { chunks: [], deletions: 0, additions: 0, from: path, to: path } as parseDiff.File, facts: { binary: false, modeChange: false, broken: broken.length - 1 } as GitHeaderFacts });
    }
  }
  const looksLikeDiff = /^(diff --git |--- |\+\+\+ |@@ )/m.test(input);
  // A stray "--- " or "+++ " line (a YAML document start, a Markdown rule) does not make a diff:
  // without a git header, some file must have a hunk.
  const anyHunkOrGitHeader = parsed.some(({ f, facts }) => facts !== undefined || f.chunks.length > 0);
  if (parsed.length === 0 || !looksLikeDiff || !anyHunkOrGitHeader) {
    throw new DiffError('input is not a unified diff (no "diff --git", "---/+++" or "@@" lines found)');
  }
  const files: DiffFile[] = [];
  parsed.forEach(({ f, facts: gitFacts }) => {
    if (gitFacts?.broken !== undefined) {
      files.push(broken[gitFacts.broken]!);
      return;
    }
    // Outside git, `diff -N` marks the absent side of an added or deleted file by an empty range
    // ("@@ -0,0 +1,3 @@", and the epoch as its time stamp), not by /dev/null.
    const only = gitFacts === undefined && f.chunks.length === 1 ? f.chunks[0] : undefined;
    const oldAbsent = only !== undefined && only.oldStart === 0 && only.oldLines === 0;
    const newAbsent = only !== undefined && only.newStart === 0 && only.newLines === 0;
    const oldPath = f.from && f.from !== DEV_NULL && !oldAbsent ? f.from : null;
    const newPath = f.to && f.to !== DEV_NULL && !newAbsent ? f.to : null;
    const facts = gitFacts ?? { binary: false, modeChange: false };
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
      let malformed = false;
      for (const ch of c.changes) {
        // "\ No newline at end of file" is metadata about the previous line, not a line.
        if (ch.content.startsWith('\\')) continue;
        // A format-patch mail ends with "-- \n<git version>"; the hunk's declared counts tell
        // where the hunk really ends.
        if (seenOld >= c.oldLines && seenNew >= c.newLines) break;
        // parse-diff takes any line inside a hunk's declared extent as context; a line without a
        // " " marker (the next "@@" header of a truncated hunk) means the counts are wrong.
        if (ch.type === 'normal' && ch.content !== '' && !ch.content.startsWith(' ')) malformed = true;
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
      if (seenOld !== c.oldLines || seenNew !== c.newLines || malformed) {
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

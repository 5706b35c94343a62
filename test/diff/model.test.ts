import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DiffError, hunkNewText, hunkOfLine, parseUnifiedDiff, type DiffFile, type DiffModel } from '../../src/diff/model.js';
import { cleanupTmp, plainDiff, tmpDir, TmpRepo } from './tmp-git.js';

afterAll(() => cleanupTmp());

/** `n` numbered lines ("line 1" …), each ending in "\n". */
function numbered(n: number, prefix = 'line'): string[] {
  return Array.from({ length: n }, (_, i) => `${prefix} ${i + 1}`);
}

function text(lines: string[], eol = '\n'): string {
  return lines.map((l) => l + eol).join('');
}

function only(model: DiffModel, path?: string): DiffFile {
  if (path === undefined) {
    expect(model.files).toHaveLength(1);
    return model.files[0];
  }
  const f = model.files.find((x) => x.path === path);
  expect(f, `no file ${path} in ${model.files.map((x) => x.path).join(', ')}`).toBeDefined();
  return f!;
}

/** Random bytes git takes for binary (a NUL among the first 8000 bytes). */
function binary(n: number): Buffer {
  return Buffer.concat([Buffer.from([0]), randomBytes(n)]);
}

function sorted(s: Set<number>): number[] {
  return [...s].sort((a, b) => a - b);
}

/**
 * Every line of every hunk sits where the diff says: context and deleted lines at their old line
 * in the old text, context and added lines at their new line in the new text; the hunk's declared
 * counts match its lines; `added` and `commentable` are exactly what the hunks imply.
 */
function expectConsistent(f: DiffFile, oldText: string | null, newText: string | null): void {
  const oldLines = oldText === null ? [] : oldText.replace(/\r\n/g, '\n').split('\n');
  const newLines = newText === null ? [] : newText.replace(/\r\n/g, '\n').split('\n');
  const added = new Set<number>();
  const commentable = new Set<number>();
  for (const h of f.hunks) {
    let o = 0;
    let n = 0;
    for (const l of h.lines) {
      expect(l.text.endsWith('\r'), `line text keeps a CR: ${JSON.stringify(l.text)}`).toBe(false);
      expect(l.text.startsWith('\\ No newline'), 'the "\\ No newline" marker became a line').toBe(false);
      if (l.kind !== 'add') {
        expect(l.oldLine, `old line of ${JSON.stringify(l.text)}`).toBe(h.oldStart + o);
        expect(oldLines[l.oldLine! - 1], `old line ${l.oldLine}`).toBe(l.text);
        o++;
      } else {
        expect(l.oldLine).toBeUndefined();
      }
      if (l.kind !== 'del') {
        expect(l.newLine, `new line of ${JSON.stringify(l.text)}`).toBe(h.newStart + n);
        expect(newLines[l.newLine! - 1], `new line ${l.newLine}`).toBe(l.text);
        commentable.add(l.newLine!);
        if (l.kind === 'add') added.add(l.newLine!);
        n++;
      } else {
        expect(l.newLine).toBeUndefined();
      }
    }
    expect(o, `hunk ${h.header}: old count`).toBe(h.oldLines);
    expect(n, `hunk ${h.header}: new count`).toBe(h.newLines);
  }
  expect(sorted(f.added)).toEqual(sorted(added));
  expect(sorted(f.commentable)).toEqual(sorted(commentable));
  expect(f.problem).toBeUndefined();
}

describe('parseUnifiedDiff: empty input', () => {
  it.each([
    ['empty string', ''],
    ['only newlines', '\n\n'],
    ['only whitespace', '  \n\t\n'],
  ])('%s is a diff with no files', (_name, input) => {
    expect(parseUnifiedDiff(input)).toEqual({ files: [] });
  });

  it('git diff of a commit that changes nothing is an empty diff', () => {
    const r = new TmpRepo().write('a.py', 'x = 1\n').commit('one').commit('empty');
    const d = r.lastDiff();
    expect(d).toBe('');
    expect(parseUnifiedDiff(d).files).toEqual([]);
  });
});

describe('parseUnifiedDiff: real git diffs', () => {
  it('new file: status added, no old path, every line added and commentable', () => {
    const r = new TmpRepo().write('README', 'x\n').commit('init');
    const body = text(numbered(7));
    r.write('pkg/new_mod.py', body).commit('add');
    const f = only(parseUnifiedDiff(r.lastDiff()));
    expect(f).toMatchObject({ path: 'pkg/new_mod.py', oldPath: null, newPath: 'pkg/new_mod.py', status: 'added', binary: false, modeOnly: false, crlf: false });
    expect(f.hunks).toHaveLength(1);
    expect(f.hunks[0]).toMatchObject({ oldStart: 0, oldLines: 0, newStart: 1, newLines: 7 });
    expect(f.hunks[0].lines.every((l) => l.kind === 'add')).toBe(true);
    expect(sorted(f.added)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(sorted(f.commentable)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expectConsistent(f, null, body);
    expect(hunkNewText(f.hunks[0])).toEqual({ text: body, firstLine: 1 });
  });

  it('empty new file: status added, no hunks', () => {
    const r = new TmpRepo().write('README', 'x\n').commit('init');
    r.write('empty.py', '').commit('add empty');
    const f = only(parseUnifiedDiff(r.lastDiff()));
    expect(f).toMatchObject({ path: 'empty.py', status: 'added', binary: false, modeOnly: false, hunks: [] });
    expect(f.added.size).toBe(0);
  });

  it('deleted file: status deleted, path is the old path, nothing added or commentable', () => {
    const body = text(numbered(5));
    const r = new TmpRepo().write('keep.py', 'k\n').write('gone/old.py', body).commit('init');
    r.rm('gone/old.py').commit('delete');
    const f = only(parseUnifiedDiff(r.lastDiff()));
    expect(f).toMatchObject({ path: 'gone/old.py', oldPath: 'gone/old.py', newPath: null, status: 'deleted', binary: false });
    expect(f.hunks).toHaveLength(1);
    expect(f.hunks[0]).toMatchObject({ oldStart: 1, oldLines: 5, newStart: 0, newLines: 0 });
    expect(f.hunks[0].lines.map((l) => l.kind)).toEqual(['del', 'del', 'del', 'del', 'del']);
    expect(f.added.size).toBe(0);
    expect(f.commentable.size).toBe(0);
    expectConsistent(f, body, null);
  });

  it('renamed file without edits: status renamed, old and new paths, no hunks', () => {
    const r = new TmpRepo().write('src/old_name.py', text(numbered(20))).commit('init');
    r.mv('src/old_name.py', 'lib/new_name.py').commit('rename');
    const d = r.lastDiff('-M');
    expect(d).toContain('rename from src/old_name.py');
    const f = only(parseUnifiedDiff(d));
    expect(f).toMatchObject({ path: 'lib/new_name.py', oldPath: 'src/old_name.py', newPath: 'lib/new_name.py', status: 'renamed', binary: false, modeOnly: false, hunks: [] });
    expect(f.added.size).toBe(0);
    expect(f.commentable.size).toBe(0);
  });

  it('renamed file with edits: status renamed, hunks numbered on the new file', () => {
    const oldBody = numbered(20);
    const r = new TmpRepo().write('src/a.py', text(oldBody)).commit('init');
    r.mv('src/a.py', 'src/b.py');
    const newBody = [...oldBody];
    newBody.splice(10, 1, 'changed 11', 'inserted');
    r.write('src/b.py', text(newBody)).commit('rename and edit');
    const d = r.lastDiff('-M');
    expect(d).toMatch(/^similarity index \d+%$/m);
    const f = only(parseUnifiedDiff(d));
    expect(f).toMatchObject({ path: 'src/b.py', oldPath: 'src/a.py', newPath: 'src/b.py', status: 'renamed' });
    expect(f.hunks).toHaveLength(1);
    expect(sorted(f.added)).toEqual([11, 12]);
    expectConsistent(f, text(oldBody), text(newBody));
  });

  it('binary file, "Binary files … differ" form: binary, no hunks, later files still parsed', () => {
    const r = new TmpRepo().write('img.bin', Buffer.from([0, 1, 2, 3, 255])).write('z.py', 'a\n').commit('init');
    r.write('img.bin', Buffer.from([0, 9, 9, 9])).write('z.py', 'a\nb\n').commit('change');
    const d = r.lastDiff();
    expect(d).toContain('Binary files a/img.bin and b/img.bin differ');
    const m = parseUnifiedDiff(d);
    expect(m.files.map((f) => f.path)).toEqual(['img.bin', 'z.py']);
    expect(only(m, 'img.bin')).toMatchObject({ status: 'modified', binary: true, hunks: [] });
    const z = only(m, 'z.py');
    expect(z).toMatchObject({ binary: false, status: 'modified' });
    expect(sorted(z.added)).toEqual([2]);
  });

  it('binary file, "GIT binary patch" form (git diff --binary): binary, no hunks, no base85 lines leak', () => {
    const r = new TmpRepo().write('a.py', 'a\n').write('data/blob.bin', binary(600)).commit('init');
    r.write('data/blob.bin', binary(700)).write('data/new.bin', binary(300)).write('a.py', 'a\nb\n').commit('change');
    const d = r.lastDiff('--binary');
    expect(d).toContain('GIT binary patch');
    const m = parseUnifiedDiff(d);
    expect(m.files.map((f) => f.path).sort()).toEqual(['a.py', 'data/blob.bin', 'data/new.bin']);
    expect(only(m, 'data/blob.bin')).toMatchObject({ binary: true, hunks: [], status: 'modified' });
    expect(only(m, 'data/new.bin')).toMatchObject({ binary: true, hunks: [], status: 'added' });
    const a = only(m, 'a.py');
    expect(a.binary).toBe(false);
    expect(a.hunks).toHaveLength(1);
    expectConsistent(a, 'a\n', 'a\nb\n');
  });

  it('binary file added (Binary files /dev/null and b/… differ)', () => {
    const r = new TmpRepo().write('README', 'x\n').commit('init');
    r.write('logo.png', Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 0, 0, 13])).commit('add');
    const f = only(parseUnifiedDiff(r.lastDiff()));
    expect(f).toMatchObject({ path: 'logo.png', status: 'added', binary: true, hunks: [] });
  });

  it('mode-only change: modeOnly, no hunks, not binary', () => {
    const r = new TmpRepo().write('run.py', 'print(1)\n', 0o644).write('b.py', 'b\n').commit('init');
    r.write('run.py', 'print(1)\n', 0o755).write('b.py', 'b\nc\n').commit('chmod');
    const m = parseUnifiedDiff(r.lastDiff());
    const f = only(m, 'run.py');
    expect(f).toMatchObject({ status: 'modified', modeOnly: true, binary: false, hunks: [] });
    const b = only(m, 'b.py');
    expect(b.modeOnly).toBe(false);
    expectConsistent(b, 'b\n', 'b\nc\n');
  });

  it('mode change with a content change is not mode-only', () => {
    const r = new TmpRepo().write('run.py', 'print(1)\n', 0o644).commit('init');
    r.write('run.py', 'print(2)\n', 0o755).commit('chmod and edit');
    const d = r.lastDiff();
    expect(d).toContain('new mode 100755');
    const f = only(parseUnifiedDiff(d));
    expect(f.modeOnly).toBe(false);
    expect(f.hunks).toHaveLength(1);
    expectConsistent(f, 'print(1)\n', 'print(2)\n');
  });

  it('"\\ No newline at end of file" is not a line and does not break the counts', () => {
    const r = new TmpRepo().write('a.py', 'one\ntwo\nthree').write('b.py', 'x\ny').commit('init');
    r.write('a.py', 'one\ntwo\nTHREE').write('b.py', 'x\ny\n').commit('edit');
    const d = r.lastDiff();
    expect(d.match(/^\\ No newline at end of file$/gm)?.length).toBe(3);
    const m = parseUnifiedDiff(d);
    const a = only(m, 'a.py');
    expect(a.hunks[0].lines.map((l) => [l.kind, l.text])).toEqual([
      ['context', 'one'],
      ['context', 'two'],
      ['del', 'three'],
      ['add', 'THREE'],
    ]);
    expectConsistent(a, 'one\ntwo\nthree', 'one\ntwo\nTHREE');
    expect(sorted(a.added)).toEqual([3]);
    const b = only(m, 'b.py');
    // Adding the final newline rewrites the last line: same text, deleted and added.
    expect(b.hunks[0].lines.map((l) => [l.kind, l.text])).toEqual([
      ['context', 'x'],
      ['del', 'y'],
      ['add', 'y'],
    ]);
    expectConsistent(b, 'x\ny', 'x\ny\n');
  });

  it('added file without a final newline', () => {
    const r = new TmpRepo().write('README', 'x\n').commit('init');
    r.write('n.py', 'a = 1\nb = 2').commit('add');
    const f = only(parseUnifiedDiff(r.lastDiff()));
    expect(f.hunks[0].lines.map((l) => l.text)).toEqual(['a = 1', 'b = 2']);
    expect(sorted(f.added)).toEqual([1, 2]);
    expect(f.problem).toBeUndefined();
  });

  it('CRLF file: text without \\r, crlf flag set; an LF file in the same diff is not crlf', () => {
    const oldBody = numbered(6);
    const r = new TmpRepo().write('win.py', text(oldBody, '\r\n')).write('unix.py', text(oldBody)).commit('init');
    const newBody = [...oldBody];
    newBody[2] = 'changed 3';
    r.write('win.py', text(newBody, '\r\n')).write('unix.py', text(newBody)).commit('edit');
    const d = r.lastDiff();
    expect(d).toContain('+changed 3\r\n');
    const m = parseUnifiedDiff(d);
    const w = only(m, 'win.py');
    expect(w.crlf).toBe(true);
    expectConsistent(w, text(oldBody, '\r\n'), text(newBody, '\r\n'));
    expect(sorted(w.added)).toEqual([3]);
    expect(hunkNewText(w.hunks[0]).text).not.toContain('\r');
    const u = only(m, 'unix.py');
    expect(u.crlf).toBe(false);
    expectConsistent(u, text(oldBody), text(newBody));
  });

  it('several hunks per file with correct old/new line numbers', () => {
    const oldBody = numbered(60);
    const newBody = [...oldBody];
    // Hunk 1: two lines inserted after line 5. Hunk 2: line 30 deleted. Hunk 3: line 55 replaced by three lines.
    newBody.splice(54, 1, 'new 55a', 'new 55b', 'new 55c');
    newBody.splice(29, 1);
    newBody.splice(5, 0, 'ins A', 'ins B');
    const r = new TmpRepo().write('m.py', text(oldBody)).commit('init');
    r.write('m.py', text(newBody)).commit('edit');
    const f = only(parseUnifiedDiff(r.lastDiff()));
    expect(f.hunks).toHaveLength(3);
    expect(f.hunks.map((h) => [h.oldStart, h.oldLines, h.newStart, h.newLines])).toEqual([
      [3, 6, 3, 8],
      [27, 7, 29, 6],
      [52, 7, 53, 9],
    ]);
    expectConsistent(f, text(oldBody), text(newBody));
    expect(sorted(f.added)).toEqual([6, 7, 56, 57, 58]);
    // Context lines of every hunk are commentable, deleted lines are not, lines between hunks are not.
    expect(sorted(f.commentable)).toEqual([3, 4, 5, 6, 7, 8, 9, 10, 29, 30, 31, 32, 33, 34, 53, 54, 55, 56, 57, 58, 59, 60, 61]);
    expect(f.commentable.has(20)).toBe(false);
    expect(hunkOfLine(f, 6)).toBe(0);
    expect(hunkOfLine(f, 34)).toBe(1);
    expect(hunkOfLine(f, 61)).toBe(2);
    expect(hunkOfLine(f, 20)).toBe(-1);
    expect(hunkNewText(f.hunks[1])).toEqual({ text: text(newBody.slice(28, 34)), firstLine: 29 });
  });

  it('several files, including a deletion-only and an addition-only hunk, all consistent', () => {
    const a = numbered(30, 'a');
    const b = numbered(30, 'b');
    const r = new TmpRepo().write('a.py', text(a)).write('dir/b.py', text(b)).commit('init');
    const a2 = a.filter((_, i) => i < 10 || i > 14);
    const b2 = [...b.slice(0, 20), 'x1', 'x2', ...b.slice(20)];
    r.write('a.py', text(a2)).write('dir/b.py', text(b2)).commit('edit');
    const m = parseUnifiedDiff(r.lastDiff('-U2'));
    expect(m.files.map((f) => f.path)).toEqual(['a.py', 'dir/b.py']);
    expectConsistent(only(m, 'a.py'), text(a), text(a2));
    expect(only(m, 'a.py').added.size).toBe(0);
    expect(sorted(only(m, 'a.py').commentable)).toEqual([9, 10, 11, 12]);
    expectConsistent(only(m, 'dir/b.py'), text(b), text(b2));
    expect(sorted(only(m, 'dir/b.py').added)).toEqual([21, 22]);
    expect(sorted(only(m, 'dir/b.py').commentable)).toEqual([19, 20, 21, 22, 23, 24]);
  });

  it('deleted lines that look like diff headers ("--- x", "++ y") stay lines of their hunk', () => {
    const oldBody = ['a', '-- not a header', '++ neither', 'diff is a word', 'z'];
    const newBody = ['a', '--- also not', '+++ nor this', 'diff is a word', 'z'];
    const r = new TmpRepo().write('t.py', text(oldBody)).commit('init');
    r.write('t.py', text(newBody)).commit('edit');
    const f = only(parseUnifiedDiff(r.lastDiff()));
    expectConsistent(f, text(oldBody), text(newBody));
    expect(sorted(f.added)).toEqual([2, 3]);
  });

  it('paths with spaces: added, modified and renamed', () => {
    const r = new TmpRepo().write('my dir/old name.py', text(numbered(10))).write('has space.py', 'a\n').commit('init');
    r.mv('my dir/old name.py', 'my dir/new name.py');
    r.write('my dir/new name.py', text([...numbered(10), 'line 11']));
    r.write('has space.py', 'a\nb\n').write('brand new file.py', 'x = 1\n').commit('edit');
    const m = parseUnifiedDiff(r.lastDiff('-M'));
    expect(m.files.map((f) => f.path).sort()).toEqual(['brand new file.py', 'has space.py', 'my dir/new name.py']);
    expect(only(m, 'brand new file.py')).toMatchObject({ status: 'added', newPath: 'brand new file.py', oldPath: null });
    expect(only(m, 'has space.py')).toMatchObject({ status: 'modified', oldPath: 'has space.py', newPath: 'has space.py' });
    expect(only(m, 'my dir/new name.py')).toMatchObject({ status: 'renamed', oldPath: 'my dir/old name.py', newPath: 'my dir/new name.py' });
    expect(sorted(only(m, 'my dir/new name.py').added)).toEqual([11]);
    expectConsistent(only(m, 'has space.py'), 'a\n', 'a\nb\n');
  });

  it('renamed file with spaces and no edits', () => {
    const r = new TmpRepo().write('a b/c d.py', text(numbered(5))).commit('init');
    r.mv('a b/c d.py', 'e f/g h.py').commit('rename');
    const f = only(parseUnifiedDiff(r.lastDiff('-M')));
    expect(f).toMatchObject({ status: 'renamed', oldPath: 'a b/c d.py', newPath: 'e f/g h.py', path: 'e f/g h.py', hunks: [] });
  });
});

describe('parseUnifiedDiff: git format-patch mails', () => {
  it('a format-patch mail parses like the git diff of the same commit; its signature is not a line', () => {
    const oldBody = numbered(12);
    const r = new TmpRepo().write('a.py', text(oldBody)).write('z_last.py', text(numbered(4, 'z'))).commit('init');
    const newBody = [...oldBody];
    newBody[3] = 'four';
    // The mail's last hunk ends with deleted lines, right before the "-- " signature.
    r.write('a.py', text(newBody)).write('z_last.py', text(numbered(2, 'z'))).write('added.py', 'n = 1\n');
    r.commit('Fix things\n\nA body line.\n---\nnot the diffstat separator\n');
    const mail = r.git('format-patch', '-1', '--stdout');
    expect(mail).toMatch(/^From [0-9a-f]{40} /);
    expect(mail).toMatch(/\n-- \n\d+\.\d+/);
    const fromMail = parseUnifiedDiff(mail);
    const fromDiff = parseUnifiedDiff(r.lastDiff());
    expect(fromMail.files.map((f) => f.path).sort()).toEqual(['a.py', 'added.py', 'z_last.py']);
    expect(fromMail).toEqual(fromDiff);
    const z = only(fromMail, 'z_last.py');
    expect(z.hunks.at(-1)!.lines.map((l) => [l.kind, l.text])).toEqual([
      ['context', 'z 1'],
      ['context', 'z 2'],
      ['del', 'z 3'],
      ['del', 'z 4'],
    ]);
    for (const f of fromMail.files) {
      expect(f.problem).toBeUndefined();
      for (const h of f.hunks) for (const l of h.lines) expect(l.text).not.toMatch(/^(- |-- |\d+\.\d+(\.\d+)?$)/);
    }
  });

  it('a mail with two patches yields the files of both', () => {
    const r = new TmpRepo().write('a.py', 'a\n').commit('init');
    r.write('a.py', 'a\nb\n').commit('one');
    r.write('c.py', 'c\n').commit('two');
    const mail = r.git('format-patch', '-2', '--stdout');
    const m = parseUnifiedDiff(mail);
    expect(m.files.map((f) => [f.path, f.status])).toEqual([
      ['a.py', 'modified'],
      ['c.py', 'added'],
    ]);
    for (const f of m.files) expect(f.problem).toBeUndefined();
    expect(sorted(only(m, 'a.py').added)).toEqual([2]);
  });
});

describe("parseUnifiedDiff: GitHub's .diff and plain diff -u", () => {
  it("GitHub's .diff format (git diff with full index hashes) parses like git diff", () => {
    const r = new TmpRepo().write('a.py', text(numbered(8))).commit('init');
    r.write('a.py', text([...numbered(8), 'line 9'])).write('b/new.py', 'q = 2\n').commit('pr');
    const gh = r.lastDiff('--full-index');
    expect(gh).toMatch(/^index [0-9a-f]{40}\.\.[0-9a-f]{40} 100644$/m);
    const m = parseUnifiedDiff(gh);
    expect(m).toEqual(parseUnifiedDiff(r.lastDiff()));
    expect(m.files.map((f) => [f.path, f.status])).toEqual([
      ['a.py', 'modified'],
      ['b/new.py', 'added'],
    ]);
  });

  it('plain `diff -u old new` (no diff --git header)', () => {
    const dir = tmpDir();
    const oldBody = numbered(40);
    const newBody = [...oldBody];
    newBody.splice(30, 1, 'replaced 31');
    newBody.splice(2, 0, 'inserted');
    writeFileSync(join(dir, 'old.py'), text(oldBody));
    writeFileSync(join(dir, 'new.py'), text(newBody));
    const d = plainDiff(dir, ['-u', 'old.py', 'new.py']);
    expect(d).not.toContain('diff --git');
    expect(d).toMatch(/^--- old\.py\t/m);
    const f = only(parseUnifiedDiff(d));
    expect(f.path).toBe('new.py');
    expect(f.newPath).toBe('new.py');
    expect(f.hunks).toHaveLength(2);
    expectConsistent(f, text(oldBody), text(newBody));
    expect(sorted(f.added)).toEqual([3, 32]);
  });

  it('plain `diff -ruN a b` over directories: modified, added and deleted files', () => {
    const dir = tmpDir();
    for (const side of ['a', 'b']) mkdirSync(join(dir, side, 'pkg'), { recursive: true });
    writeFileSync(join(dir, 'a', 'pkg', 'm.py'), text(numbered(10)));
    writeFileSync(join(dir, 'b', 'pkg', 'm.py'), text([...numbered(10), 'line 11']));
    writeFileSync(join(dir, 'b', 'pkg', 'n.py'), 'n = 1\nm = 2\n');
    writeFileSync(join(dir, 'a', 'pkg', 'gone.py'), 'g = 1\n');
    const d = plainDiff(dir, ['-ruN', 'a', 'b']);
    expect(d).not.toContain('diff --git');
    const m = parseUnifiedDiff(d);
    expect(m.files.map((f) => f.path).sort()).toEqual(['pkg/gone.py', 'pkg/m.py', 'pkg/n.py']);
    const mod = only(m, 'pkg/m.py');
    expect(mod.status).toBe('modified');
    expectConsistent(mod, text(numbered(10)), text([...numbered(10), 'line 11']));
    const n = only(m, 'pkg/n.py');
    // `diff -N` writes the epoch time stamp and an empty old range, not /dev/null.
    expect(n).toMatchObject({ status: 'added', oldPath: null, newPath: 'pkg/n.py' });
    expect(sorted(n.added)).toEqual([1, 2]);
    expect(only(m, 'pkg/gone.py')).toMatchObject({ status: 'deleted', newPath: null, oldPath: 'pkg/gone.py' });
  });
});

describe('parseUnifiedDiff: truncated and malformed hunks', () => {
  function threeFileDiff(): { diff: string; repo: TmpRepo } {
    const r = new TmpRepo().write('a.py', text(numbered(20, 'a'))).write('b.py', text(numbered(20, 'b'))).write('c.py', text(numbered(20, 'c'))).commit('init');
    const edit = (p: string) => {
      const l = numbered(20, p);
      l[9] = `${p} changed`;
      return text(l);
    };
    r.write('a.py', edit('a')).write('b.py', edit('b')).write('c.py', edit('c')).commit('edit');
    return { diff: r.lastDiff(), repo: r };
  }

  /** Drop `n` lines from the end of the hunk of `path`, leaving its header's counts as they were. */
  function truncate(diff: string, path: string, n: number): string {
    const lines = diff.split('\n');
    const start = lines.indexOf(`diff --git a/${path} b/${path}`);
    let end = lines.findIndex((l, i) => i > start && l.startsWith('diff --git '));
    if (end < 0) end = lines.length - 1; // the empty string after the final newline
    lines.splice(end - n, n);
    return lines.join('\n');
  }

  it('a truncated hunk in the first file sets its problem; the files after it are unaffected', () => {
    const { diff } = threeFileDiff();
    const full = parseUnifiedDiff(diff);
    const cut = parseUnifiedDiff(truncate(diff, 'a.py', 3));
    expect(cut.files.map((f) => f.path)).toEqual(['a.py', 'b.py', 'c.py']);
    expect(only(cut, 'a.py').problem).toMatch(/truncated or malformed hunk/);
    expect(only(cut, 'b.py')).toEqual(only(full, 'b.py'));
    expect(only(cut, 'c.py')).toEqual(only(full, 'c.py'));
  });

  it('a truncated hunk in a middle file', () => {
    const { diff } = threeFileDiff();
    const full = parseUnifiedDiff(diff);
    const cut = parseUnifiedDiff(truncate(diff, 'b.py', 2));
    expect(cut.files.map((f) => f.path)).toEqual(['a.py', 'b.py', 'c.py']);
    expect(only(cut, 'a.py')).toEqual(only(full, 'a.py'));
    expect(only(cut, 'b.py').problem).toMatch(/expected 7\/7 old\/new lines, found 5\/5/);
    expect(only(cut, 'c.py')).toEqual(only(full, 'c.py'));
  });

  it('a truncated hunk at the end of the input (download cut short)', () => {
    const { diff } = threeFileDiff();
    const cut = parseUnifiedDiff(truncate(diff, 'c.py', 4));
    expect(cut.files.map((f) => f.path)).toEqual(['a.py', 'b.py', 'c.py']);
    expect(only(cut, 'a.py').problem).toBeUndefined();
    expect(only(cut, 'b.py').problem).toBeUndefined();
    expect(only(cut, 'c.py').problem).toMatch(/truncated/);
  });

  it('a hunk cut short before the next hunk of the same file is malformed, not absorbed', () => {
    const oldBody = numbered(40);
    const newBody = [...oldBody];
    newBody[4] = 'five';
    newBody[30] = 'thirty-one';
    const r = new TmpRepo().write('m.py', text(oldBody)).commit('init');
    r.write('m.py', text(newBody)).commit('edit');
    const d = r.lastDiff();
    // Remove the last context line of the first hunk: the second "@@" header falls inside the first hunk's extent.
    const lines = d.split('\n');
    const second = lines.findIndex((l, i) => l.startsWith('@@') && i > lines.findIndex((x) => x.startsWith('@@')));
    lines.splice(second - 1, 1);
    const f = only(parseUnifiedDiff(lines.join('\n')));
    expect(f.problem).toMatch(/truncated or malformed hunk/);
  });

  it('a truncated hunk in a plain diff -u', () => {
    const dir = tmpDir();
    writeFileSync(join(dir, 'old.py'), text(numbered(10)));
    writeFileSync(join(dir, 'new.py'), text([...numbered(10), 'eleven']));
    const d = plainDiff(dir, ['-u', 'old.py', 'new.py']);
    const cut = d.split('\n').slice(0, -3).join('\n') + '\n';
    expect(only(parseUnifiedDiff(cut)).problem).toMatch(/truncated/);
  });
});

describe('parseUnifiedDiff: input that is not a diff', () => {
  it.each([
    ['plain prose', 'This is not a diff.\nIt is a letter.\n'],
    ['one word', 'hello'],
    ['a Python file', 'import cupy as cp\n\nx = cp.zeros(3)\nprint(x.get())\n'],
    ['a YAML document', '---\nfoo: bar\nlist:\n  - 1\n'],
    ['a YAML document with a space after ---', '--- \nfoo: bar\n'],
    ['Markdown with a rule', '# Title\n\nSome text\n\n--- \n\n+++ more\n'],
    ['JSON', '{"files": [], "version": 1}\n'],
  ])('%s throws DiffError', (_name, input) => {
    expect(() => parseUnifiedDiff(input)).toThrow(DiffError);
  });

  it('binary garbage with NUL bytes throws DiffError', () => {
    const garbage = Buffer.concat([randomBytes(2000), Buffer.from([0]), randomBytes(2000)]).toString('latin1');
    expect(() => parseUnifiedDiff(garbage)).toThrow(DiffError);
    expect(() => parseUnifiedDiff(garbage)).toThrow(/binary/);
  });

  it('a real diff with a NUL byte spliced in throws DiffError', () => {
    const r = new TmpRepo().write('a.py', 'a\n').commit('init');
    r.write('a.py', 'a\nb\n').commit('edit');
    const d = r.lastDiff();
    expect(() => parseUnifiedDiff(d.replace('+b', '+\u0000b'))).toThrow(DiffError);
  });

  it('binary garbage without NUL bytes throws DiffError', () => {
    const bytes = randomBytes(5000).map((b) => (b === 0 ? 1 : b));
    // Make sure no line happens to begin like a diff header.
    const s = Buffer.from(bytes).toString('latin1').replace(/^(diff|---|\+\+\+|@@)/gm, 'xx');
    expect(() => parseUnifiedDiff(s)).toThrow(DiffError);
  });
});

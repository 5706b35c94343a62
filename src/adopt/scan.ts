import { execFile } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { readFile, readdir, realpath } from 'node:fs/promises';
import { isAbsolute, join, relative, resolve, sep } from 'node:path';
import { promisify } from 'node:util';
import ignore, { type Ignore } from 'ignore';
import type { DiffFile, DiffModel } from '../diff/model.js';
import { detectLanguage } from '../sources/detect.js';

const exec = promisify(execFile);

export class ScanError extends Error {}

/** The top of the git work tree that holds `dir`, or null outside one (or without git). */
export async function gitToplevel(dir: string): Promise<string | null> {
  try {
    const { stdout } = await exec('git', ['rev-parse', '--show-toplevel'], { cwd: dir, encoding: 'utf8' });
    const top = stdout.trim();
    return top ? await realpath(top) : null;
  } catch {
    return null;
  }
}

function toPosix(p: string): string {
  return sep === '/' ? p : p.split(sep).join('/');
}

/** Tracked and untracked-but-not-ignored files under the pathspecs (git's own .gitignore rules). */
async function gitFiles(root: string, specs: string[]): Promise<string[]> {
  try {
    const { stdout } = await exec('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard', '--deduplicate', '--', ...specs], {
      cwd: root,
      encoding: 'utf8',
      maxBuffer: 256 * 1024 * 1024,
    });
    return stdout.split('\0').filter(Boolean);
  } catch (e) {
    const msg = String((e as { stderr?: string }).stderr ?? (e as Error).message).trim().split('\n')[0];
    throw new ScanError(`git ls-files failed in ${root}: ${msg}`);
  }
}

/** Outside git: walk the directories, honouring every .gitignore on the way down (the `ignore` package implements git's rules). */
async function walkFiles(root: string, starts: string[]): Promise<string[]> {
  const out: string[] = [];
  const rulesOf = new Map<string, Ignore | null>();
  const loadRules = async (dirRel: string): Promise<Ignore | null> => {
    if (rulesOf.has(dirRel)) return rulesOf.get(dirRel)!;
    let ig: Ignore | null = null;
    try {
      ig = ignore().add(await readFile(join(root, dirRel, '.gitignore'), 'utf8'));
    } catch {
      ig = null;
    }
    rulesOf.set(dirRel, ig);
    return ig;
  };
  const ancestors = (rel: string): string[] => {
    const parts = rel.split('/');
    const dirs = [''];
    for (let i = 1; i < parts.length; i++) dirs.push(parts.slice(0, i).join('/'));
    return dirs;
  };
  const ignored = async (rel: string, isDir: boolean): Promise<boolean> => {
    for (const d of ancestors(rel)) {
      const ig = await loadRules(d);
      const sub = d ? rel.slice(d.length + 1) : rel;
      if (ig && sub && ig.ignores(isDir ? `${sub}/` : sub)) return true;
    }
    return false;
  };
  const visit = async (rel: string): Promise<void> => {
    const abs = join(root, rel);
    let entries;
    try {
      entries = await readdir(abs, { withFileTypes: true });
    } catch {
      return;
    }
    entries.sort((a, b) => (a.name < b.name ? -1 : 1));
    for (const e of entries) {
      const child = rel ? `${rel}/${e.name}` : e.name;
      if (e.name === '.git') continue;
      if (e.isDirectory()) {
        if (!(await ignored(child, true))) await visit(child);
      } else if (e.isFile() && !(await ignored(child, false))) {
        out.push(child);
      }
    }
  };
  for (const s of starts) {
    const st = statSync(join(root, s));
    if (st.isDirectory()) await visit(s === '.' ? '' : s);
    else if (!(await ignored(s, false))) out.push(s);
  }
  return out;
}

export interface ScanTarget {
  /** Repository root (git top level) or the directory the scan is relative to; paths are relative to it. */
  root: string;
  inGit: boolean;
  files: string[];
}

/** The files `gpu-review scan PATH…` reviews, relative to the tree's root, sorted. */
export async function listScanFiles(paths: string[], cwd: string, rootOverride?: string): Promise<ScanTarget> {
  const absPaths = (paths.length ? paths : ['.']).map((p) => resolve(cwd, p));
  for (const [i, p] of absPaths.entries()) {
    if (!existsSync(p)) throw new ScanError(`${(paths.length ? paths : ['.'])[i]}: no such file or directory`);
  }
  const real = await Promise.all(absPaths.map((p) => realpath(p)));
  const firstDir = statSync(real[0]).isDirectory() ? real[0] : resolve(real[0], '..');
  const top = rootOverride ? await realpath(rootOverride) : await gitToplevel(firstDir);
  const root = top ?? (await realpath(cwd));
  const rels = real.map((p) => {
    const r = toPosix(relative(root, p));
    if (r.startsWith('..') || isAbsolute(r)) throw new ScanError(`${p} is outside the tree being scanned (${root})`);
    return r || '.';
  });
  const inGit = top !== null && (await gitToplevel(root)) === root;
  const files = inGit ? await gitFiles(root, rels) : await walkFiles(root, rels);
  const unique = [...new Set(files)].filter((f) => {
    try {
      return statSync(join(root, f)).isFile();
    } catch {
      return false; // listed by git but deleted in the work tree
    }
  });
  unique.sort();
  return { root, inGit, files: unique };
}

/** Could this path hold GPU code at all (judged from its name; C++ files are decided by content later)? */
export function mayBeGpuSource(path: string): boolean {
  return detectLanguage(path, '__global__').language !== null;
}

/**
 * The files as they are, as a diff that adds each of them whole: every line counts as added, so
 * every scope reports the whole file. No hunks: a whole-file review needs none, and no suggestion
 * is anchored to a diff that does not exist.
 */
export function wholeFileDiff(files: Array<{ path: string; lines: number }>): DiffModel {
  return {
    files: files.map(({ path, lines }): DiffFile => {
      const all = new Set<number>();
      for (let l = 1; l <= lines; l++) all.add(l);
      return { path, oldPath: null, newPath: path, status: 'added', binary: false, modeOnly: false, hunks: [], added: all, commentable: all, crlf: false };
    }),
  } as DiffModel;
}

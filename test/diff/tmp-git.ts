/**
 * Temporary git repositories for tests that need real `git diff` / `git format-patch` output.
 * Every repository lives under os.tmpdir() and ignores the user's and the system's git config, so
 * the diffs do not depend on the machine (no colour, no external diff, no autocrlf, default rename
 * detection).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

export const GIT_ENV: NodeJS.ProcessEnv = {
  ...process.env,
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_AUTHOR_NAME: 'Test',
  GIT_AUTHOR_EMAIL: 'test@example.com',
  GIT_COMMITTER_NAME: 'Test',
  GIT_COMMITTER_EMAIL: 'test@example.com',
  GIT_AUTHOR_DATE: '2024-01-01T00:00:00Z',
  GIT_COMMITTER_DATE: '2024-01-01T00:00:00Z',
  LC_ALL: 'C',
};

const created: string[] = [];

/** A fresh directory under os.tmpdir(); removed by cleanupTmp(). */
export function tmpDir(prefix = 'gpu-review-test-'): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  created.push(d);
  return d;
}

export function cleanupTmp(): void {
  while (created.length) rmSync(created.pop()!, { recursive: true, force: true });
}

export class TmpRepo {
  readonly dir: string;

  constructor() {
    this.dir = tmpDir('gpu-review-git-');
    this.git('init', '-q', '-b', 'main');
    this.git('config', 'core.autocrlf', 'false');
    this.git('config', 'commit.gpgsign', 'false');
    this.git('config', 'diff.renames', 'true');
  }

  /** Run git; returns stdout as text (or bytes with `raw`). Throws on a non-zero exit. */
  git(...args: string[]): string {
    return execFileSync('git', args, { cwd: this.dir, env: GIT_ENV, encoding: 'utf8', maxBuffer: 512 * 1024 * 1024 });
  }

  gitRaw(...args: string[]): Buffer {
    return execFileSync('git', args, { cwd: this.dir, env: GIT_ENV, maxBuffer: 512 * 1024 * 1024 });
  }

  write(path: string, content: string | Uint8Array, mode?: number): this {
    const abs = join(this.dir, path);
    mkdirSync(dirname(abs), { recursive: true });
    writeFileSync(abs, content);
    if (mode !== undefined) chmodSync(abs, mode);
    return this;
  }

  rm(path: string): this {
    this.git('rm', '-q', '--', path);
    return this;
  }

  mv(from: string, to: string): this {
    mkdirSync(dirname(join(this.dir, to)), { recursive: true });
    this.git('mv', '--', from, to);
    return this;
  }

  commit(message = 'change'): this {
    this.git('add', '-A');
    this.git('commit', '-q', '--allow-empty', '-m', message);
    return this;
  }

  /** `git diff HEAD~1 HEAD` plus extra options. */
  lastDiff(...opts: string[]): string {
    return this.git('diff', '--no-color', '--no-ext-diff', ...opts, 'HEAD~1', 'HEAD');
  }
}

/** `diff -u`/`diff -ruN` output (exit status 1 means "differences found"). */
export function plainDiff(cwd: string, args: string[]): string {
  const r = spawnSync('diff', args, { cwd, encoding: 'utf8', env: { ...process.env, LC_ALL: 'C', TZ: 'UTC' } });
  if (r.status !== 0 && r.status !== 1) throw new Error(`diff ${args.join(' ')} failed: ${r.stderr}`);
  return r.stdout;
}

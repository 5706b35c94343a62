import { DiffError, parseUnifiedDiff, type DiffFile, type DiffModel, type FileStatus } from '../diff/model.js';
import type { GitHubClient } from './octokit.js';

/** One entry of `pulls.listFiles`. */
export interface PullFile {
  filename: string;
  status: string;
  patch?: string;
  previous_filename?: string;
  additions: number;
  deletions: number;
  changes: number;
}

/** `pulls.listFiles` stops at 3,000 files; GitHub says nothing about the rest. */
export const MAX_PR_FILES = 3000;

export interface PullFiles {
  files: PullFile[];
  /** True when GitHub's 3,000-file limit was reached, so later files were never listed. */
  truncated: boolean;
}

/**
 * What one page of the file list may weigh: each page is one JSON answer, parsed in one piece on
 * the thread that serves the webhooks and /healthz (50 MB took 0.8 s here), so a large PR is read
 * in many small pages instead of a few huge ones.
 */
export const FILES_PAGE_BYTES = 2_000_000;
/** Bytes per changed line assumed when sizing pages (a patch line with its JSON escaping, on the safe side). */
const BYTES_PER_LINE = 80;

/** Files per page of `pulls.listFiles` for a change of this size: 100 (GitHub's most) unless that page would weigh over FILES_PAGE_BYTES. */
export function filesPerPage(size: { files: number; lines: number } | undefined): number {
  if (!size || size.files <= 0) return 100;
  const perFile = (size.lines * BYTES_PER_LINE) / size.files;
  return Math.max(1, Math.min(100, Math.floor(FILES_PAGE_BYTES / Math.max(1, perFile))));
}

/** Every page of the PR's files (`perPage` per page, default 100; at most 3,000 files). */
export async function listPullFiles(octokit: GitHubClient, params: { owner: string; repo: string; pull_number: number }, perPage = 100): Promise<PullFiles> {
  const files: PullFile[] = [];
  for await (const page of octokit.paginate.iterator(octokit.rest.pulls.listFiles, { ...params, per_page: perPage })) {
    files.push(...(page.data as PullFile[]));
    if (files.length >= MAX_PR_FILES) break;
  }
  return { files: files.slice(0, MAX_PR_FILES), truncated: files.length >= MAX_PR_FILES };
}

function statusOf(f: PullFile): FileStatus {
  switch (f.status) {
    case 'added':
      return 'added';
    case 'removed':
      return 'deleted';
    case 'renamed':
    case 'copied':
      return f.previous_filename && f.previous_filename !== f.filename ? 'renamed' : 'modified';
    default:
      return 'modified';
  }
}

function emptyFile(f: PullFile, status: FileStatus): DiffFile {
  return {
    path: f.filename,
    oldPath: status === 'added' ? null : (f.previous_filename ?? f.filename),
    newPath: status === 'deleted' ? null : f.filename,
    status,
    binary: false,
    modeOnly: false,
    hunks: [],
    added: new Set(),
    commentable: new Set(),
    crlf: false,
  };
}

/**
 * The listFiles patch is the file's part of the PR diff without its `diff --git`/`---`/`+++`
 * header; putting a header back lets the one diff parser read it, so the App anchors comments on
 * exactly the lines the CLI would.
 */
function withHeader(f: PullFile, status: FileStatus): string {
  const oldPath = f.previous_filename ?? f.filename;
  const minus = status === 'added' ? '/dev/null' : `a/${oldPath}`;
  const plus = status === 'deleted' ? '/dev/null' : `b/${f.filename}`;
  const patch = f.patch ?? '';
  return [`diff --git a/${oldPath} b/${f.filename}`, `--- ${minus}`, `+++ ${plus}`, patch.endsWith('\n') ? patch : `${patch}\n`].join('\n');
}

/**
 * The diff model of a PR from its listFiles entries. A file GitHub sent without a patch keeps its
 * place with the reason as its `problem`, so the review lists it as skipped instead of losing it.
 */
export function diffModelFromFiles(files: readonly PullFile[]): DiffModel {
  return { files: files.map(fileModel) };
}

/** Patch characters parsed between two turns of the event loop in `diffModelFromFilesAsync`. */
const YIELD_EVERY_CHARS = 256 * 1024;

/**
 * diffModelFromFiles, giving the event loop a turn after every 256 K characters of patch: the
 * service parses a 50 MB pull request on its main thread, and /healthz and webhooks must still be
 * answered meanwhile (issue 16). The longest stretch is one file's patch.
 */
export async function diffModelFromFilesAsync(files: readonly PullFile[]): Promise<DiffModel> {
  const out: DiffFile[] = [];
  let since = 0;
  for (const f of files) {
    out.push(fileModel(f));
    since += f.patch?.length ?? 0;
    if (since >= YIELD_EVERY_CHARS) {
      since = 0;
      await new Promise<void>((r) => setImmediate(r));
    }
  }
  return { files: out };
}

/** One listFiles entry's part of the model. */
function fileModel(f: PullFile): DiffFile {
  const status = statusOf(f);
  if (f.patch === undefined || f.patch === '') {
    const file = emptyFile(f, status);
    if (status === 'deleted') {
      // Nothing to review; the pipeline reports it as deleted.
    } else if (f.changes > 0) {
      file.problem = `GitHub sent no patch for this file (its diff is too large for the API: ${f.additions} additions, ${f.deletions} deletions)`;
    } else if (status === 'renamed') {
      file.problem = 'renamed without content changes';
    } else if (f.status === 'changed') {
      file.modeOnly = true;
    } else {
      // Added or modified with no countable lines and no patch: GitHub's mark of a binary file.
      file.binary = true;
    }
    return file;
  }
  let parsed: DiffFile | undefined;
  let problem: string | undefined;
  try {
    parsed = parseUnifiedDiff(withHeader(f, status)).files[0];
  } catch (e) {
    problem = `could not parse the patch GitHub sent: ${e instanceof DiffError ? e.message : (e as Error).message}`;
  }
  if (!parsed) {
    const file = emptyFile(f, status);
    file.problem = problem ?? 'could not parse the patch GitHub sent';
    return file;
  }
  // GitHub's own fields are authoritative for names (paths with spaces or tabs survive).
  const empty = emptyFile(f, status);
  return { ...parsed, path: empty.path, oldPath: empty.oldPath, newPath: empty.newPath, status };
}

#!/usr/bin/env node
import { Command, CommanderError, Option } from 'commander';
import { execFile } from 'node:child_process';
import { constants as fsConstants, existsSync, lstatSync, readFileSync, statSync } from 'node:fs';
import { open, readFile, realpath } from 'node:fs/promises';
import { dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import { ruleDocUrl } from './config/docs-url.js';
import { ConfigError, resolveConfig, type ResolvedConfig } from './config/schema.js';
import { failsGate } from './engine/gate.js';
import { DiffError, parseUnifiedDiff } from './diff/model.js';
import { RETIRED_IDS, RULE_IDS } from '../checks/rule-ids.generated.js';
import { SEVERITIES, type Severity } from './core/types.js';
import type { FileReader, Scope } from './review/pipeline.js';
import { batchReaderOf, gitBatchReader } from './index/readers.js';
import type { BatchReader } from './index/types.js';
import { renderJson } from './reporters/json.js';
import { renderMarkdown } from './reporters/markdown.js';
import { renderRdjson } from './reporters/rdjson.js';
import { renderSarif } from './reporters/sarif.js';
import { renderText } from './reporters/text.js';
import { reportInput } from './reporters/types.js';
import { renderGithubAnnotations } from './reporters/github-annotations.js';
import { applyBaseline, BaselineError, readBaseline, writeBaseline } from './adopt/baseline.js';
import { sarifRules } from './reporters/rule-docs.js';
import { applyOneOff, SelectError, type OneOff } from './adopt/select.js';
import { gitToplevel, listScanFiles, mayBeGpuSource, ScanError, wholeFileDiff } from './adopt/scan.js';
import { unreviewable } from './adopt/skips.js';
import type { DiffModel } from './diff/model.js';
import picomatch from 'picomatch';

const exec = promisify(execFile);
const here = dirname(fileURLToPath(import.meta.url));
/** Project root, from src/ (vitest, tsx) or dist/src/ (built). */
const projectRoot = existsSync(join(here, '..', 'package.json')) ? join(here, '..') : join(here, '..', '..');
const VERSION = (JSON.parse(readFileSync(join(projectRoot, 'package.json'), 'utf8')) as { version: string }).version;

/** A usage or input problem: one line on stderr, exit 2. */
export class UsageError extends Error {}

const MAX_DIFF_BYTES = 512 * 1024 * 1024;

async function readStdin(): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of process.stdin) {
    const b = c as Buffer;
    size += b.length;
    if (size > MAX_DIFF_BYTES) throw new UsageError('diff on stdin is larger than 512 MB');
    chunks.push(b);
  }
  return Buffer.concat(chunks);
}

function decodeDiff(buf: Buffer): string {
  if (buf.includes(0)) throw new UsageError('input is binary data, not a unified diff');
  // Invalid UTF-8 inside one file's lines must not sink the whole review: decode leniently and let
  // the pipeline skip the affected files.
  return buf.toString('utf8');
}

async function loadConfig(path: string | undefined, repo: string | undefined): Promise<ResolvedConfig> {
  const ids = [...RULE_IDS];
  let raw: unknown = {};
  let file = path;
  let inRepo = false;
  if (!file && repo) {
    const candidate = join(repo, '.github', 'gpu-review.yml');
    if (existsSync(candidate) || isSymlink(candidate)) {
      file = candidate;
      inRepo = true;
    }
  }
  if (file) {
    let text: string;
    try {
      text = await readConfigFile(file, inRepo ? repo : undefined);
    } catch (e) {
      throw new UsageError(`cannot read config file ${file}${e instanceof UsageError ? `: ${e.message}` : ''}`);
    }
    try {
      raw = (await import('yaml')).default.parse(text) ?? {};
    } catch (e) {
      throw new UsageError(`config file ${file} is not valid YAML: ${(e as Error).message.split('\n')[0]}`);
    }
  }
  try {
    return resolveConfig(raw, ids);
  } catch (e) {
    if (e instanceof ConfigError) throw new UsageError(`${file ?? 'config'}: ${e.message}`);
    throw e;
  }
}

const MAX_CONFIG_BYTES = 1024 * 1024;

function isSymlink(p: string): boolean {
  try {
    return lstatSync(p).isSymbolicLink();
  } catch {
    return false;
  }
}

/**
 * A config file is read only when it is a regular file (a FIFO would block the read for ever) of
 * at most 1 MiB; the repository's own `.github/gpu-review.yml` must also be no symlink and lie inside
 * the repository, so a checked-out tree cannot point the reader at another file of the machine.
 */
async function readConfigFile(file: string, repo: string | undefined): Promise<string> {
  const st = repo ? lstatSync(file) : statSync(file);
  if (repo) {
    if (st.isSymbolicLink()) throw new UsageError('a symbolic link (the repository config must be a regular file)');
    const rel = relative(await realpath(repo), await realpath(file));
    if (rel.startsWith('..') || isAbsolute(rel)) throw new UsageError('outside the repository');
  }
  if (!st.isFile()) throw new UsageError('not a regular file');
  if (st.size > MAX_CONFIG_BYTES) throw new UsageError(`larger than ${MAX_CONFIG_BYTES} bytes`);
  // Opened without blocking and checked again: the path may have been swapped for a FIFO meanwhile.
  const fh = await open(file, fsConstants.O_RDONLY | fsConstants.O_NONBLOCK | (repo ? fsConstants.O_NOFOLLOW : 0));
  try {
    const st2 = await fh.stat();
    if (!st2.isFile() || st2.size > MAX_CONFIG_BYTES) throw new UsageError('not a regular file of at most 1 MiB');
    return await fh.readFile('utf8');
  } finally {
    await fh.close();
  }
}

/** `--git` takes a revision range only: nothing git could read as an option (`--output=FILE`). */
export function checkGitRange(range: string): void {
  if (range === '' || range.split(/\.\.\.?/).some((side) => side.startsWith('-')) || /[\s\0]/.test(range)) {
    throw new UsageError(`--git ${JSON.stringify(range)}: not a revision range (e.g. main...HEAD, HEAD~3..HEAD)`);
  }
}

/** Read post-change files from a directory, never outside it. */
function dirReader(root: string): FileReader {
  return async (p) => {
    const abs = resolve(root, p);
    const rel = relative(root, abs);
    if (rel.startsWith('..') || isAbsolute(rel)) return null;
    try {
      const real = await realpath(abs);
      const relReal = relative(await realpath(root), real);
      if (relReal.startsWith('..') || isAbsolute(relReal)) return null;
      return await readFile(real);
    } catch {
      return null;
    }
  };
}

/** Batched readers for the project index, by the per-file reader they read like. */
const batchOf = new WeakMap<FileReader, BatchReader>();

/** Read post-change files of a git revision (`git show REV:path`). */
function gitReader(repo: string, rev: string): FileReader {
  return async (p) => {
    try {
      const { stdout } = await exec('git', ['show', '--end-of-options', `${rev}:${p}`], { cwd: repo, encoding: 'buffer', maxBuffer: 64 * 1024 * 1024 });
      return stdout as Buffer;
    } catch {
      return null;
    }
  };
}

/** Files of a revision (`git ls-tree`), to find the units that include a changed header. */
function gitLister(repo: string, rev: string): () => Promise<string[]> {
  return async () => (await exec('git', ['ls-tree', '-r', '--name-only', '-z', rev], { cwd: repo, maxBuffer: 256 * 1024 * 1024 })).stdout.split('\0').filter(Boolean);
}

/** Files of a directory tree (no symlinks followed, dot-directories and node_modules left out). */
function dirLister(root: string): () => Promise<string[]> {
  return async () => {
    const { readdir } = await import('node:fs/promises');
    const entries = await readdir(root, { recursive: true, withFileTypes: true });
    return entries
      .filter((e) => e.isFile())
      .map((e) => relative(root, join(e.parentPath, e.name)).split('\\').join('/'))
      .filter((p) => !p.split('/').some((s) => s.startsWith('.') || s === 'node_modules'));
  };
}

type Format = 'text' | 'json' | 'sarif' | 'rdjson' | 'markdown' | 'github';
const FORMATS: Format[] = ['text', 'json', 'sarif', 'rdjson', 'markdown', 'github'];

/** Flags `review` and `scan` share. */
interface CommonFlags {
  repo?: string;
  format: Format;
  scope: Scope;
  failOn?: Severity | 'none';
  config?: string;
  color?: boolean;
  reportUnusedSuppressions?: boolean;
  compile?: boolean;
  select?: string;
  ignore?: string;
  minSeverity?: Severity;
  enablePreview?: boolean;
  baseline?: string;
  writeBaseline?: string;
  strict?: boolean;
  rewrite?: boolean;
  fix?: boolean;
  unsafeFixes?: boolean;
  dryRun?: boolean;
}

interface ReviewFlags extends CommonFlags {
  git?: string;
}

/** The config of one run: the file (--config, else <root>/.github/gpu-review.yml), then the one-off flags. */
async function runConfig(flags: CommonFlags, root: string | undefined): Promise<ResolvedConfig> {
  const config = await loadConfig(flags.config, root);
  const o: OneOff = { select: flags.select, ignore: flags.ignore, minSeverity: flags.minSeverity, enablePreview: flags.enablePreview };
  try {
    return applyOneOff(config, [...RULE_IDS], o, new Set(RETIRED_IDS));
  } catch (e) {
    if (e instanceof SelectError) throw new UsageError(e.message);
    throw e;
  }
}

/** On a terminal only: one redrawn line with a bar, the count and the file. */
function progress(total: number, min: number): ((i: number, n: number, path: string) => void) | undefined {
  if (!process.stderr.isTTY || total <= min) return undefined;
  const width = 24;
  return (i, n, path) => {
    const filled = Math.round((i / n) * width);
    const cols = process.stderr.columns || 100;
    const line = `gpu-review [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${i}/${n} ${path}`;
    process.stderr.write(`\r\x1b[2K${line.length > cols - 1 ? line.slice(0, cols - 2) + '…' : line}${i === n ? '\r\x1b[2K' : ''}`);
  };
}

async function runReview(diffArg: string | undefined, flags: ReviewFlags): Promise<number> {
  let diffText: string;
  let reader: FileReader | undefined;
  let listFiles: (() => Promise<string[]>) | undefined;
  const repo = flags.repo ? resolve(flags.repo) : undefined;
  if (repo && !(existsSync(repo) && statSync(repo).isDirectory())) throw new UsageError(`--repo ${flags.repo}: no such directory`);
  if (flags.git !== undefined) {
    if (diffArg) throw new UsageError('give either a DIFF file or --git RANGE, not both');
    checkGitRange(flags.git);
    const cwd = repo ?? process.cwd();
    try {
      const { stdout } = await exec('git', ['diff', '--no-color', '--no-ext-diff', '--end-of-options', flags.git, '--'], { cwd, maxBuffer: MAX_DIFF_BYTES, encoding: 'buffer' });
      diffText = decodeDiff(stdout as Buffer);
    } catch (e) {
      const msg = String((e as { stderr?: Buffer }).stderr ?? (e as Error).message).trim().split('\n')[0];
      throw new UsageError(`git diff ${flags.git} failed: ${msg}`);
    }
    const m = /\.\.\.?(.*)$/.exec(flags.git);
    reader = m ? gitReader(cwd, m[1] || 'HEAD') : dirReader(cwd);
    // Project index: the revision's other files in one `git cat-file --batch` per step (src/index/readers.ts).
    if (m) batchOf.set(reader, gitBatchReader(cwd, m[1] || 'HEAD'));
    listFiles = m ? gitLister(cwd, m[1] || 'HEAD') : dirLister(cwd);
  } else {
    if (!diffArg || diffArg === '-') {
      if (!diffArg && process.stdin.isTTY) throw new UsageError('no diff given: pass a DIFF file, "-" for stdin, or --git RANGE');
      diffText = decodeDiff(await readStdin());
    } else {
      let buf: Buffer;
      try {
        buf = await readFile(diffArg);
      } catch {
        throw new UsageError(`cannot read diff file ${diffArg}`);
      }
      diffText = decodeDiff(buf);
    }
    if (repo) {
      reader = dirReader(repo);
      listFiles = dirLister(repo);
    }
  }
  // One config everywhere: a review inside a repository reads that repository's config.
  const root = repo ?? (await gitToplevel(process.cwd())) ?? undefined;
  const config = await runConfig(flags, root);
  return reviewAndReport(diffText, reader, config, flags, root, undefined, listFiles);
}

/** `scan PATH…`: the files as they are, each reviewed whole. */
async function runScan(paths: string[], flags: CommonFlags): Promise<number> {
  if (flags.repo && !(existsSync(flags.repo) && statSync(flags.repo).isDirectory())) throw new UsageError(`--repo ${flags.repo}: no such directory`);
  let target;
  try {
    target = await listScanFiles(paths, process.cwd(), flags.repo);
  } catch (e) {
    if (e instanceof ScanError) throw new UsageError(e.message);
    throw e;
  }
  const config = await runConfig(flags, target.root);
  const include = config.include.length ? picomatch(config.include, { dot: true }) : null;
  const exclude = config.exclude.length ? picomatch(config.exclude, { dot: true }) : null;
  const candidates = target.files.filter(mayBeGpuSource);
  const contents = new Map<string, Buffer>();
  const entries: Array<{ path: string; lines: number; problem?: string }> = [];
  for (const path of candidates) {
    const entry: { path: string; lines: number; problem?: string } = { path, lines: 0 };
    entries.push(entry);
    if ((include && !include(path)) || (exclude && exclude(path))) continue; // the pipeline says why
    const abs = join(target.root, path);
    const size = statSync(abs).size;
    if (size > config.limits.maxFileBytes) {
      entry.problem = `file too large (${(size / 1e6).toFixed(1)} MB, limit ${(config.limits.maxFileBytes / 1e6).toFixed(1)} MB)`;
      continue;
    }
    try {
      const buf = await readFile(abs);
      contents.set(path, buf);
      let n = 1;
      for (let k = buf.indexOf(10); k >= 0; k = buf.indexOf(10, k + 1)) n++;
      entry.lines = n;
    } catch (e) {
      entry.problem = `cannot read the file (${(e as NodeJS.ErrnoException).code ?? 'error'})`;
    }
  }
  const diff = wholeFileDiff(entries);
  entries.forEach((e, i) => {
    if (e.problem) diff.files[i].problem = e.problem;
  });
  const other = target.files.length - candidates.length;
  const note = other > 0 ? `${plural(other, 'other file')} in the tree ${other === 1 ? 'is' : 'are'} not a GPU source type (.cu, .cuh, .py, C++) and ${other === 1 ? 'was' : 'were'} not read` : undefined;
  return reviewAndReport(diff, async (p) => contents.get(p) ?? null, config, { ...flags, scope: 'file' }, target.root, note);
}

function plural(n: number, w: string): string {
  return `${n.toLocaleString('en-US')} ${w}${n === 1 ? '' : 's'}`;
}

/**
 * The review engine and its native parsers, loaded on first use: --version, --help, rules and
 * explain work without them, and a parser that cannot load (a prebuilt binary for another libc)
 * is one line that says what to do, not a stack trace.
 */
async function loadPipeline(): Promise<typeof import('./review/pipeline.js')> {
  try {
    // Probe the binding first with require: a failed ESM import of it also surfaces as an uncaught
    // error from the module graph, after the one-line message.
    createRequire(import.meta.url)('tree-sitter');
    return await import('./review/pipeline.js');
  } catch (e) {
    const msg = (e as Error).message.split('\n')[0];
    if ((e as NodeJS.ErrnoException).code === 'ERR_DLOPEN_FAILED' || /\.node\b|dlopen/.test(msg)) {
      throw new UsageError(`cannot load the tree-sitter parser (${msg}); rebuild it for this system with \`npm rebuild tree-sitter tree-sitter-cpp tree-sitter-cuda tree-sitter-python --build-from-source\``);
    }
    throw e;
  }
}

/** Review, baseline, report in the chosen format, and the exit status of the gate. */
async function reviewAndReport(
  diff: string | DiffModel,
  reader: FileReader | undefined,
  config: ResolvedConfig,
  flags: CommonFlags,
  root: string | undefined,
  note?: string,
  listFiles?: () => Promise<string[]>,
): Promise<number> {
  const failOn = flags.failOn ?? config.failOn;
  let out;
  try {
    const model = typeof diff === 'string' ? parseUnifiedDiff(diff) : diff;
    const total = model.files.length;
    const compile = flags.compile || config.compile.enabled;
    // Nothing to review: the engine (every check, the parsers) is not loaded at all.
    if (total === 0 && !compile) out = { result: { findings: [], files: [], errors: [] }, diff: model, fileLines: new Map<string, Array<string | undefined>>() };
    else out = await (await loadPipeline()).review({
      diff: model,
      config,
      scope: flags.scope,
      readFile: reader,
      // Project index (src/index/): the same reader, batched, for the files the changes import or include.
      readFiles: reader ? (batchOf.get(reader) ?? batchReaderOf(reader)) : undefined,
      compile: flags.compile || config.compile.enabled ? { settings: config.compile, listFiles } : undefined,
      onProgress: progress(total, 20),
    });
  } catch (e) {
    if (e instanceof DiffError) throw new UsageError(e.message);
    throw e;
  }
  if (!flags.reportUnusedSuppressions) delete out.result.unusedSuppressions;
  const notes: string[] = [];
  if (note) notes.push(note);
  try {
    if (flags.writeBaseline) {
      const n = await writeBaseline(flags.writeBaseline, out.result.findings);
      notes.push(`wrote ${plural(n, 'fingerprint')} to ${flags.writeBaseline}`);
    }
    const baselinePath = flags.baseline ?? (config.baseline && root ? join(root, config.baseline) : config.baseline ?? undefined);
    if (baselinePath && !flags.writeBaseline) {
      const known = await readBaseline(baselinePath);
      const kept = applyBaseline(out.result.findings, known);
      out.result.findings = kept.findings;
      if (kept.baselined > 0) notes.push(`${plural(kept.baselined, 'finding')} in the baseline ${baselinePath} not shown`);
    }
  } catch (e) {
    if (e instanceof BaselineError) throw new UsageError(e.message);
    throw e;
  }
  const strict = flags.strict ?? config.strict;
  const notReviewed = unreviewable(out.result.files);
  if (strict && notReviewed.length > 0) {
    const shown = notReviewed.slice(0, 5).map((f) => `${f.path} (${f.skipped})`).join(', ');
    notes.push(`strict: ${plural(notReviewed.length, 'file')} could not be reviewed: ${shown}${notReviewed.length > 5 ? ', …' : ''}`);
  }
  if (flags.dryRun && !flags.fix) throw new UsageError('--dry-run goes with --fix');
  if (flags.rewrite || flags.fix) {
    // Pass 7 parses and compiles: loaded only when asked for (like the pipeline, see loadPipeline).
    const [{ runPass7 }, { llmDrafter, llmSettingsFromEnv }] = await Promise.all([import('./rewrite/index.js'), import('./rewrite/llm.js')]);
    const llm = llmSettingsFromEnv();
    await runPass7(out, { config, repo: root, compile: flags.compile !== false, draft: llm ? llmDrafter(llm, config) : undefined });
  }
  if (flags.fix) {
    const { applyFixes, planFixes } = await import('./rewrite/apply.js');
    if (!root) throw new UsageError('--fix needs the files: give --repo DIR or --git RANGE');
    const res = await applyFixes(planFixes(out.result.findings, flags.unsafeFixes === true), (p) => out.fileLines.get(p), root, flags.dryRun === true);
    if (flags.dryRun) await new Promise<void>((r) => process.stdout.write(res.patch, () => r()));
    for (const e of res.errors) process.stderr.write(`gpu-review: ${e.path}: ${e.message}\n`);
    const n = res.applied.reduce((a, x) => a + x.rewrites, 0);
    process.stderr.write(`gpu-review: ${flags.dryRun ? 'would apply' : 'applied'} ${n} fix(es) in ${res.applied.length} file(s)${res.conflicts ? `, ${res.conflicts} left out (overlapping)` : ''}\n`);
    if (flags.dryRun) return res.errors.length ? 2 : 0;
  }
  const input = reportInput(out, { inlineCommentCap: config.inlineCommentCap, failOn, toolVersion: VERSION });
  const color = flags.color ?? Boolean(process.stdout.isTTY && !process.env.NO_COLOR);
  let text: string;
  // Notes go with the text formats; machine-readable output stays parseable and they go to stderr.
  let notesInline = false;
  switch (flags.format) {
    case 'json':
      text = renderJson(input);
      break;
    case 'sarif':
      text = renderSarif(input, sarifRules(await loadChecks(), projectRoot, (id) => ruleDocUrl(config.docsUrl, id)));
      break;
    case 'rdjson':
      text = renderRdjson(input);
      break;
    case 'markdown':
      text = renderMarkdown(input);
      break;
    case 'github':
      text = renderGithubAnnotations(input, notes.map((n) => `gpu-review: ${n}`));
      notesInline = true;
      break;
    default:
      text = renderText(input, { color });
      if (notes.length) text = `${text.replace(/\n$/, '')}\n${notes.join('\n')}\n`;
      notesInline = true;
  }
  await new Promise<void>((res) => process.stdout.write(text.endsWith('\n') ? text : text + '\n', () => res()));
  if (!notesInline) for (const n of notes) process.stderr.write(`gpu-review: ${n}\n`);
  if (flags.writeBaseline) return 0;
  // As ESLint's --report-unused-disable-directives: a suppression that silences nothing fails too.
  const failing = out.result.findings.some((f) => failsGate(f, failOn, config.failOnConfidence)) || (out.result.unusedSuppressions?.length ?? 0) > 0;
  return failing || (strict && notReviewed.length > 0) ? 1 : 0;
}

function commonOptions(cmd: Command): Command {
  return cmd
    .addOption(new Option('--format <format>', 'output format').choices(FORMATS).default('text'))
    .addOption(new Option('--fail-on <severity>', 'exit 1 when a finding reaches this severity (default from config, else high)').choices([...SEVERITIES, 'none']))
    .option('--config <file>', 'config file (YAML or JSON; default: <repository root>/.github/gpu-review.yml)')
    .option('--select <rules>', 'run only these rules or families (comma-separated, e.g. host-device,sync/stream-sync-in-loop)')
    .option('--ignore <rules>', 'do not run these rules or families (comma-separated)')
    .addOption(new Option('--min-severity <severity>', 'do not report findings below this severity').choices([...SEVERITIES]))
    .option('--enable-preview', 'also run rules marked preview')
    .option('--baseline <file>', 'report only findings whose fingerprint is not in this baseline (default: config "baseline")')
    .option('--write-baseline <file>', 'write the fingerprints of all findings to this file (exit 0)')
    .option('--report-unused-suppressions', 'list gpu-review: ignore[…] comments that silenced nothing (and exit 1 when there are any)')
    .option('--strict', 'fail when a file that should be reviewed could not be (default: config "strict")')
    .option('--color', 'force colour output')
    .option('--no-color', 'disable colour output');
}

/**
 * Every check module, loaded on first use: a review of a diff with nothing to review, --version and
 * --help start without them (checks/rule-ids.generated.ts has the ids).
 */
async function loadChecks(): Promise<readonly import('./engine/check.js').CheckDef[]> {
  return (await import('../checks/registry.generated.js')).CHECKS;
}

function listRules(CHECKS: readonly import('./engine/check.js').CheckDef[], format: string): string {
  const rows = [...CHECKS].sort((a, b) => a.pass - b.pass || a.id.localeCompare(b.id));
  if (format === 'json') {
    return JSON.stringify(rows.map((c) => ({ id: c.id, pass: c.pass, severity: c.severity, confidence: c.confidence, languages: c.languages, citation: c.citation, summary: c.summary, status: c.status ?? 'stable' })), null, 2);
  }
  const w = Math.max(...rows.map((r) => r.id.length), 4);
  const lines = [`${'rule'.padEnd(w)}  pass  severity     citation`];
  // Preview rules run only when enabled, retired ones only when named: the listing says which.
  for (const c of rows) lines.push(`${c.id.padEnd(w)}  ${String(c.pass).padEnd(4)}  ${c.severity.padEnd(11)}  ${c.citation.split(';')[0]}${c.status && c.status !== 'stable' ? `  [${c.status}]` : ''}`);
  return lines.join('\n');
}

function explain(CHECKS: readonly import('./engine/check.js').CheckDef[], id: string): string {
  const check = CHECKS.find((c) => c.id === id);
  if (!check) {
    const near = CHECKS.filter((c) => c.id.includes(id)).map((c) => c.id);
    throw new UsageError(`unknown rule "${id}"${near.length ? ` (did you mean ${near.slice(0, 3).join(', ')}?)` : ''}; \`gpu-review rules\` lists them`);
  }
  const readme = join(projectRoot, 'checks', id, 'README.md');
  if (existsSync(readme)) return readFileSync(readme, 'utf8');
  return `# ${check.id}\n\n${check.summary}\n\nSource: ${check.citation}\n\n${check.why}\n`;
}

export async function main(argv: string[]): Promise<number> {
  const program = new Command();
  let code = 0;
  program
    .name('gpu-review')
    .description('Review the GPU code in a unified diff, pass by pass, and print what the GitHub App would post.')
    .version(VERSION)
    .exitOverride()
    .configureOutput({ outputError: () => {} })
    .showSuggestionAfterError(true);

  const reviewCmd = program
    .command('review')
    .description('review a unified diff (file, "-" for stdin, or --git RANGE)')
    .argument('[diff]', 'unified diff file; "-" or omitted reads stdin')
    .option('--git <range>', 'run `git diff RANGE` in --repo (default: the current directory)')
    .option('--repo <dir>', 'read full post-change files from this tree');
  commonOptions(reviewCmd)
    .addOption(new Option('--scope <scope>', 'which findings to report: on added lines, anywhere in the hunks, or anywhere in the changed files').choices(['added', 'hunk', 'file']).default('added'))
    .option('--compile', 'compile the changed kernels with nvcc at base and head and report registers, spills and occupancy (config "compile")')
    .option('--rewrite', 'pass 7: attach a verified before/after rewrite to each finding that needs one')
    .option('--fix', 'apply the safe (behaviour-preserving, verified) rewrites to the files in --repo')
    .option('--unsafe-fixes', 'with --fix: also apply rewrites that change behaviour (streams, block sizes, dtypes)')
    .option('--dry-run', 'with --fix: print the fixes as a unified diff, change nothing')
    .option('--no-compile', 'pass 7: do not compile rewrites (python3 -m py_compile, nvcc)')
    .action(async (diff: string | undefined, opts: ReviewFlags) => {
      code = await runReview(diff, opts);
    });

  const scanCmd = program
    .command('scan')
    .description('review files as they are, whole (default: the current directory); git-ignored files are left out')
    .argument('[paths...]', 'files or directories')
    .option('--repo <dir>', 'the tree the paths are in (default: their git work tree, else the current directory)');
  commonOptions(scanCmd).action(async (paths: string[], opts: CommonFlags) => {
    code = await runScan(paths, { ...opts, scope: 'file' });
  });

  program
    .command('rules')
    .description('list the rules (id, pass, severity, citation)')
    .addOption(new Option('--format <format>', 'output format').choices(['text', 'json']).default('text'))
    .action(async (opts: { format: string }) => {
      process.stdout.write(listRules(await loadChecks(), opts.format) + '\n');
    });

  program
    .command('explain')
    .description("print a rule's documentation")
    .argument('<rule>', 'rule id, e.g. host-device/get-in-loop')
    .action(async (id: string) => {
      process.stdout.write(explain(await loadChecks(), id));
    });

  if (argv.length === 0) {
    process.stderr.write('gpu-review: no command given: review, scan, rules or explain (`gpu-review --help` describes them)\n');
    return 2;
  }
  try {
    await program.parseAsync(argv, { from: 'user' });
    return code;
  } catch (e) {
    if (e instanceof CommanderError) {
      // No command at all: commander prints the help on stderr and asks for a failing exit.
      if (e.code === 'commander.help' && e.exitCode !== 0) return 2;
      if (e.code === 'commander.helpDisplayed' || e.code === 'commander.version' || e.code === 'commander.help') return 0;
      process.stderr.write(`gpu-review: ${e.message.replace(/^error: /, '')}\n`);
      return 2;
    }
    if (e instanceof UsageError) {
      process.stderr.write(`gpu-review: ${e.message}\n`);
      return 2;
    }
    const msg = (e as Error)?.message ?? String(e);
    process.stderr.write(`gpu-review: internal error: ${msg.split('\n')[0]}\n`);
    if (process.env.GPU_REVIEW_DEBUG) process.stderr.write(String((e as Error)?.stack) + '\n');
    return 2;
  }
}

const invokedDirectly = process.argv[1] && fileURLToPath(import.meta.url) === (await realpath(process.argv[1]).catch(() => process.argv[1]));
if (invokedDirectly) {
  process.on('SIGPIPE', () => process.exit(0));
  process.stdout.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code === 'EPIPE') process.exit(0);
  });
  main(process.argv.slice(2)).then((c) => {
    process.exitCode = c;
  });
}

#!/usr/bin/env node
import { Command, CommanderError, Option } from 'commander';
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { readFile, realpath } from 'node:fs/promises';
import { dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import YAML from 'yaml';
import { ruleDocUrl } from './config/docs-url.js';
import { ConfigError, resolveConfig, type ResolvedConfig } from './config/schema.js';
import { failsGate } from './engine/gate.js';
import { DiffError } from './diff/model.js';
import { CHECKS } from './engine/registry.generated.js';
import { SEVERITIES, type Severity } from './engine/types.js';
import { review, type FileReader, type Scope } from './pipeline.js';
import { renderJson } from './reporters/json.js';
import { renderMarkdown } from './reporters/markdown.js';
import { renderRdjson } from './reporters/rdjson.js';
import { renderSarif } from './reporters/sarif.js';
import { renderText } from './reporters/text.js';
import type { ReportInput } from './reporters/types.js';

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
  const ids = CHECKS.map((c) => c.id);
  let raw: unknown = {};
  let file = path;
  if (!file && repo) {
    const candidate = join(repo, '.github', 'gpu-review.yml');
    if (existsSync(candidate)) file = candidate;
  }
  if (file) {
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch {
      throw new UsageError(`cannot read config file ${file}`);
    }
    try {
      raw = YAML.parse(text) ?? {};
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

/** Read post-change files of a git revision (`git show REV:path`). */
function gitReader(repo: string, rev: string): FileReader {
  return async (p) => {
    try {
      const { stdout } = await exec('git', ['show', `${rev}:${p}`], { cwd: repo, encoding: 'buffer', maxBuffer: 64 * 1024 * 1024 });
      return stdout as Buffer;
    } catch {
      return null;
    }
  };
}

interface ReviewFlags {
  git?: string;
  repo?: string;
  format: 'text' | 'json' | 'sarif' | 'rdjson' | 'markdown';
  scope: Scope;
  failOn?: Severity | 'none';
  config?: string;
  color?: boolean;
  reportUnusedSuppressions?: boolean;
}

async function runReview(diffArg: string | undefined, flags: ReviewFlags): Promise<number> {
  let diffText: string;
  let reader: FileReader | undefined;
  const repo = flags.repo ? resolve(flags.repo) : undefined;
  if (repo && !(existsSync(repo) && statSync(repo).isDirectory())) throw new UsageError(`--repo ${flags.repo}: no such directory`);
  if (flags.git !== undefined) {
    if (diffArg) throw new UsageError('give either a DIFF file or --git RANGE, not both');
    const cwd = repo ?? process.cwd();
    try {
      const { stdout } = await exec('git', ['diff', '--no-color', '--no-ext-diff', flags.git], { cwd, maxBuffer: MAX_DIFF_BYTES, encoding: 'buffer' });
      diffText = decodeDiff(stdout as Buffer);
    } catch (e) {
      const msg = String((e as { stderr?: Buffer }).stderr ?? (e as Error).message).trim().split('\n')[0];
      throw new UsageError(`git diff ${flags.git} failed: ${msg}`);
    }
    const m = /\.\.\.?(.*)$/.exec(flags.git);
    reader = m ? gitReader(cwd, m[1] || 'HEAD') : dirReader(cwd);
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
    if (repo) reader = dirReader(repo);
  }
  const config = await loadConfig(flags.config, repo);
  const failOn = flags.failOn ?? config.failOn;
  const tty = Boolean(process.stderr.isTTY);
  let out;
  try {
    out = await review({
      diff: diffText,
      config,
      scope: flags.scope,
      readFile: reader,
      onProgress: (i, n, path) => {
        if (tty && n > 20) process.stderr.write(`\r\x1b[2Kgpu-review: ${i}/${n} ${path.slice(-60)}${i === n ? '\n' : ''}`);
      },
    });
  } catch (e) {
    if (e instanceof DiffError) throw new UsageError(e.message);
    throw e;
  }
  if (!flags.reportUnusedSuppressions) delete out.result.unusedSuppressions;
  const input: ReportInput = {
    result: out.result,
    diff: out.diff,
    fileLines: (p) => out.fileLines.get(p),
    inlineCommentCap: config.inlineCommentCap,
    failOn,
    toolVersion: VERSION,
  };
  const color = flags.color ?? Boolean(process.stdout.isTTY && !process.env.NO_COLOR);
  let text: string;
  switch (flags.format) {
    case 'json':
      text = renderJson(input);
      break;
    case 'sarif':
      text = renderSarif(input, CHECKS.map((c) => ({ id: c.id, summary: c.summary, citation: c.citation, docUrl: ruleDocUrl(config.docsUrl, c.id), severity: c.severity })));
      break;
    case 'rdjson':
      text = renderRdjson(input);
      break;
    case 'markdown':
      text = renderMarkdown(input);
      break;
    default:
      text = renderText(input, { color });
  }
  await new Promise<void>((res) => process.stdout.write(text.endsWith('\n') ? text : text + '\n', () => res()));
  // As ESLint's --report-unused-disable-directives: a suppression that silences nothing fails too.
  const failing = out.result.findings.some((f) => failsGate(f, failOn, config.failOnConfidence)) || (out.result.unusedSuppressions?.length ?? 0) > 0;
  return failing ? 1 : 0;
}

function listRules(format: string): string {
  const rows = [...CHECKS].sort((a, b) => a.pass - b.pass || a.id.localeCompare(b.id));
  if (format === 'json') {
    return JSON.stringify(rows.map((c) => ({ id: c.id, pass: c.pass, severity: c.severity, confidence: c.confidence, languages: c.languages, citation: c.citation, summary: c.summary, status: c.status ?? 'stable' })), null, 2);
  }
  const w = Math.max(...rows.map((r) => r.id.length), 4);
  const lines = [`${'rule'.padEnd(w)}  pass  severity     citation`];
  for (const c of rows) lines.push(`${c.id.padEnd(w)}  ${String(c.pass).padEnd(4)}  ${c.severity.padEnd(11)}  ${c.citation.split(';')[0]}`);
  return lines.join('\n');
}

function explain(id: string): string {
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

  program
    .command('review')
    .description('review a unified diff (file, "-" for stdin, or --git RANGE)')
    .argument('[diff]', 'unified diff file; "-" or omitted reads stdin')
    .option('--git <range>', 'run `git diff RANGE` in --repo (default: the current directory)')
    .option('--repo <dir>', 'read full post-change files from this tree')
    .addOption(new Option('--format <format>', 'output format').choices(['text', 'json', 'sarif', 'rdjson', 'markdown']).default('text'))
    .addOption(new Option('--scope <scope>', 'which findings to report: on added lines, anywhere in the hunks, or anywhere in the changed files').choices(['added', 'hunk', 'file']).default('added'))
    .addOption(new Option('--fail-on <severity>', 'exit 1 when a finding reaches this severity (default from config, else high)').choices([...SEVERITIES, 'none']))
    .option('--config <file>', 'config file (YAML or JSON; default: <repo>/.github/gpu-review.yml)')
    .option('--report-unused-suppressions', 'list gpu-review: ignore[…] comments that silenced nothing (and exit 1 when there are any)')
    .option('--color', 'force colour output')
    .option('--no-color', 'disable colour output')
    .action(async (diff: string | undefined, opts: ReviewFlags) => {
      code = await runReview(diff, opts);
    });

  program
    .command('rules')
    .description('list the rules (id, pass, severity, citation)')
    .addOption(new Option('--format <format>', 'output format').choices(['text', 'json']).default('text'))
    .action((opts: { format: string }) => {
      process.stdout.write(listRules(opts.format) + '\n');
    });

  program
    .command('explain')
    .description("print a rule's documentation")
    .argument('<rule>', 'rule id, e.g. host-device/get-in-loop')
    .action((id: string) => {
      process.stdout.write(explain(id));
    });

  if (argv.length === 0) {
    process.stderr.write('gpu-review: no command given: review, rules or explain (`gpu-review --help` describes them)\n');
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

#!/usr/bin/env node
/**
 * The GitHub Action (action.yml): on `pull_request`, the App's review of the PR, posted with the
 * workflow's GITHUB_TOKEN through the same code (src/github/review-pr.ts): inline comments, a
 * check run with annotations, threads of fixed findings resolved. Or, with `mode: sarif`, a scan
 * of the checked-out tree written as SARIF for code scanning; or `mode: annotations`, the PR's
 * diff as workflow-command annotations. Inputs arrive as INPUT_* variables (GitHub's convention).
 */
import { execFile, spawn } from 'node:child_process';
import { appendFileSync, createWriteStream, existsSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import YAML from 'yaml';
import type { ResolvedConfig } from './config/schema.js';
import { SEVERITIES, type Severity } from './core/types.js';
import type { CheckDef } from './engine/check.js';
import { CONFIG_PATH } from './github/config.js';
import { botIdentity } from './github/identity.js';
import type { GitHubClient } from './github/octokit.js';
import type { Logger } from './github/post.js';
import { reviewPullRequest, type Outcome, type PullRequestEvent } from './github/review-pr.js';

const exec = promisify(execFile);
const here = dirname(fileURLToPath(import.meta.url));
const root = existsSync(join(here, '..', 'package.json')) ? join(here, '..') : join(here, '..', '..');
const VERSION = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version;
const CLI = join(here, 'cli.js');

export class ActionError extends Error {}

export type Mode = 'review' | 'sarif' | 'annotations';

export interface ActionInputs {
  mode: Mode;
  config: string;
  failOn?: Severity | 'none';
  baseline?: string;
  sarifFile: string;
  token: string;
}

/** `INPUT_<NAME>` as the runner sets it (name upper-cased, spaces to underscores). */
function input(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const v = env[`INPUT_${name.replace(/ /g, '_').toUpperCase()}`];
  return v === undefined || v.trim() === '' ? undefined : v.trim();
}

export function readInputs(env: NodeJS.ProcessEnv): ActionInputs {
  const mode = (input(env, 'mode') ?? 'review') as Mode;
  if (!['review', 'sarif', 'annotations'].includes(mode)) throw new ActionError(`input "mode" must be review, sarif or annotations, not "${mode}"`);
  const failOn = input(env, 'fail_on');
  if (failOn !== undefined && ![...SEVERITIES, 'none'].includes(failOn)) throw new ActionError(`input "fail_on" must be one of ${[...SEVERITIES, 'none'].join(', ')}, not "${failOn}"`);
  const token = input(env, 'github_token') ?? env.GITHUB_TOKEN ?? '';
  if (mode === 'review' && !token) throw new ActionError('mode "review" needs a token: pass `github_token: ${{ github.token }}` (the default)');
  return { mode, config: input(env, 'config') ?? CONFIG_PATH, failOn: failOn as ActionInputs['failOn'], baseline: input(env, 'baseline'), sarifFile: input(env, 'sarif_file') ?? 'gpu-review.sarif', token };
}

/** What the runner says about the run: the event payload and the checkout. */
export interface RunContext {
  eventName: string;
  payload: any;
  workspace: string;
  apiUrl: string;
  output?: string;
}

export function readContext(env: NodeJS.ProcessEnv): RunContext {
  const path = env.GITHUB_EVENT_PATH;
  if (!path) throw new ActionError('GITHUB_EVENT_PATH is not set: run this inside a GitHub Actions workflow');
  let payload: unknown;
  try {
    payload = JSON.parse(readFileSync(path, 'utf8'));
  } catch (e) {
    throw new ActionError(`cannot read the event payload ${path}: ${(e as Error).message.split('\n')[0]}`);
  }
  return { eventName: env.GITHUB_EVENT_NAME ?? '', payload, workspace: env.GITHUB_WORKSPACE ?? process.cwd(), apiUrl: env.GITHUB_API_URL ?? 'https://api.github.com', output: env.GITHUB_OUTPUT };
}

export function eventOf(payload: any, runId: string): PullRequestEvent {
  const pr = payload?.pull_request;
  if (!pr?.head?.sha || !payload?.repository) throw new ActionError('the event payload has no pull_request: run the review mode on `pull_request` events');
  return {
    deliveryId: runId,
    action: payload.action ?? 'opened',
    owner: payload.repository.owner.login,
    repo: payload.repository.name,
    number: pr.number,
    headSha: pr.head.sha,
    before: payload.before,
    after: payload.after,
    state: pr.state ?? 'open',
    draft: Boolean(pr.draft),
    author: { login: pr.user?.login ?? '', type: pr.user?.type ?? 'User' },
    defaultBranch: payload.repository.default_branch,
  };
}

/** Inside the checkout, or an error: an input must not read files elsewhere on the runner. */
function inWorkspace(workspace: string, p: string, what: string): string {
  const abs = resolve(workspace, p);
  const rel = relative(workspace, abs);
  if (rel.startsWith('..') || isAbsolute(rel)) throw new ActionError(`input "${what}" (${p}) is outside the workspace`);
  return abs;
}

async function checkedOutHead(workspace: string): Promise<string | null> {
  try {
    return (await exec('git', ['rev-parse', 'HEAD'], { cwd: workspace, encoding: 'utf8' })).stdout.trim();
  } catch {
    return null;
  }
}

function consoleLogger(): Logger {
  const line = (level: string) => (obj: unknown, msg?: string) => {
    const text = typeof obj === 'string' ? obj : msg ?? '';
    const err = (obj as { err?: Error })?.err;
    process.stdout.write(`${level === 'error' ? '::error::' : level === 'warn' ? '::warning::' : ''}gpu-review: ${text}${err ? `: ${err.message}` : ''}\n`);
  };
  const log: any = { info: line('info'), warn: line('warn'), error: line('error'), debug: () => {} };
  log.child = () => log;
  return log as Logger;
}

export interface ReviewModeOptions {
  octokit: GitHubClient;
  checks?: readonly CheckDef[];
  retryDelayMs?: number;
  log?: Logger;
  runId?: string;
}

/** `mode: review`: the App's review of this pull request, with the config and files of the checkout. */
export async function runReviewMode(inputs: ActionInputs, ctx: RunContext, opts: ReviewModeOptions): Promise<Outcome> {
  if (!ctx.payload?.pull_request) throw new ActionError(`mode "review" runs on pull_request events (this is "${ctx.eventName}"); use mode "sarif" on push`);
  const event = eventOf(ctx.payload, opts.runId ?? 'action');
  const configPath = inWorkspace(ctx.workspace, inputs.config, 'config');
  // Files come from the checkout only when it is the PR's head commit (actions/checkout of a pull
  // request checks out the merge commit unless `ref` says otherwise); else from GitHub at the head.
  const head = await checkedOutHead(ctx.workspace);
  const local = head === event.headSha;
  return reviewPullRequest({
    octokit: opts.octokit,
    log: opts.log ?? consoleLogger(),
    event,
    readConfig: async () => {
      if (!existsSync(configPath)) return null;
      try {
        return YAML.parse(await readFile(configPath, 'utf8')) ?? null;
      } catch (e) {
        throw new Error(`${inputs.config} is not valid YAML: ${(e as Error).message.split('\n')[0]}`);
      }
    },
    bot: async () => botIdentity('github-actions'),
    toolVersion: VERSION,
    checks: opts.checks,
    retryDelayMs: opts.retryDelayMs,
    readFile: local
      ? async (p) => {
          try {
            return await readFile(inWorkspace(ctx.workspace, p, 'path'));
          } catch {
            return null;
          }
        }
      : undefined,
    adjustConfig: (c: ResolvedConfig) => ({ ...c, failOn: inputs.failOn ?? c.failOn, baseline: inputs.baseline ?? c.baseline }),
    readBaseline: async (p) => {
      try {
        return await readFile(inWorkspace(ctx.workspace, p, 'baseline'), 'utf8');
      } catch {
        return null;
      }
    },
  });
}

/** The CLI's own arguments for the sarif and annotations modes. */
export function cliArgs(inputs: ActionInputs, ctx: RunContext): string[] {
  const common = ['--config', inWorkspace(ctx.workspace, inputs.config, 'config')];
  if (inputs.failOn) common.push('--fail-on', inputs.failOn);
  if (inputs.baseline) common.push('--baseline', inWorkspace(ctx.workspace, inputs.baseline, 'baseline'));
  if (inputs.mode === 'sarif') return ['scan', '--repo', ctx.workspace, '--format', 'sarif', ...common];
  const pr = ctx.payload?.pull_request;
  if (!pr?.base?.sha || !pr?.head?.sha) throw new ActionError('mode "annotations" runs on pull_request events');
  return ['review', '--repo', ctx.workspace, '--git', `${pr.base.sha}...${pr.head.sha}`, '--format', 'github', ...common];
}

function runCli(args: string[], cwd: string, stdoutFile?: string): Promise<number> {
  return new Promise((res, rej) => {
    const child = spawn(process.execPath, [CLI, ...args], { cwd, stdio: ['ignore', stdoutFile ? 'pipe' : 'inherit', 'inherit'] });
    if (stdoutFile && child.stdout) child.stdout.pipe(createWriteStream(stdoutFile));
    child.on('error', rej);
    child.on('close', (code) => res(code ?? 2));
  });
}

export async function runAction(env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const inputs = readInputs(env);
  const ctx = readContext(env);
  if (inputs.mode === 'review') {
    const { GpuReviewOctokit } = await import('./github/octokit.js');
    const octokit = new GpuReviewOctokit({ auth: inputs.token, baseUrl: ctx.apiUrl }) as unknown as GitHubClient;
    const outcome = await runReviewMode(inputs, ctx, { octokit, runId: env.GITHUB_RUN_ID });
    if (ctx.output) appendFileSync(ctx.output, `outcome=${outcome.kind}\n${outcome.kind === 'reviewed' ? `findings=${outcome.findings}\nconclusion=${outcome.conclusion}\n` : ''}`);
    if (outcome.kind === 'failed' || outcome.kind === 'config-error') return 1;
    return outcome.kind === 'reviewed' && outcome.conclusion === 'failure' ? 1 : 0;
  }
  const file = inputs.mode === 'sarif' ? inWorkspace(ctx.workspace, inputs.sarifFile, 'sarif_file') : undefined;
  const code = await runCli(cliArgs(inputs, ctx), ctx.workspace, file);
  if (file && ctx.output) appendFileSync(ctx.output, `sarif_file=${file}\n`);
  // Code scanning decides what fails in sarif mode; the upload step needs the file, so no failure here.
  return inputs.mode === 'sarif' && code === 1 ? 0 : code;
}

const invokedDirectly = process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url);
if (invokedDirectly) {
  runAction().then(
    (c) => {
      process.exitCode = c;
    },
    (e) => {
      process.stdout.write(`::error::gpu-review: ${(e as Error).message.split('\n')[0]}\n`);
      process.exitCode = 2;
    },
  );
}

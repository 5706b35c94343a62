import type { ResolvedConfig } from '../../config/schema.js';
import type { FileReader, ReviewError } from '../../core/types.js';
import type { DiffModel } from '../../diff/model.js';
import { pathGate } from '../../diff/gate.js';
import type { CheckDef } from '../../engine/check.js';
import { parseBaseline } from '../../adopt/baseline.js';
import { skippedCompletion, type Completion, type SkipReason } from '../../reporters/check-run.js';
import { CONFIG_PATH, configKey, loadConfig, type ConfigOutcome } from '../config.js';
import { fetchContents } from '../contents.js';
import { githubIndexReader, type GitHubIndexReader } from '../index-reader.js';
import { batchReaderOf } from '../../index/readers.js';
import type { BatchReader } from '../../index/types.js';
import type { LiveState } from '../live.js';
import type { GitHubClient } from '../octokit.js';
import type { Logger } from '../post.js';
import { diffModelFromFilesAsync, filesPerPage, listPullFiles } from '../pr-diff.js';
import type { PullRequestEvent, ReviewJob } from '../job.js';

/** What the review of one push works from, all read before any analysis. */
export interface Inputs {
  config: ResolvedConfig;
  /** Fingerprints the config's baseline file lists (null: no baseline). */
  baseline: Set<string> | null;
  diff: DiffModel;
  /** GitHub's file list stopped at its limit: later files were never listed. */
  truncated: boolean;
  /** The post-change files (fetched up front, or the Action's checkout). */
  readFile: FileReader;
  /**
   * The project index's reader (#15): the files the changed ones import or include, from the
   * Action's checkout, or the head commit in at most 2 GraphQL queries with blobs cached by SHA
   * across pushes (src/github/index-reader.ts).
   */
  readFiles: BatchReader;
  /** The App's index reader, for its request and cache figures in the log (null: the Action). */
  indexReader: GitHubIndexReader | null;
  /** Files the review cannot use, with the reason (too large, binary): data beside the diff, not written into it. */
  skipped: ReadonlyMap<string, string>;
  /** Files that could not be read (reviewed from their hunks instead). */
  errors: ReviewError[];
}

export type Loaded =
  | { kind: 'inputs'; inputs: Inputs }
  /** The config says to skip this pull request. */
  | { kind: 'skip'; skip: SkipReason; completion: Completion }
  | { kind: 'config-error'; message: string; completion: Completion };

async function defaultBranchFile(octokit: GitHubClient, owner: string, repo: string, path: string): Promise<string | null> {
  try {
    const { data } = await octokit.rest.repos.getContent({ owner, repo, path, mediaType: { format: 'raw' } });
    return typeof data === 'string' ? data : null;
  } catch (e) {
    if ((e as { status?: number }).status === 404) return null;
    throw e;
  }
}

/** One file at the head SHA (an include of a compiled unit that the diff does not touch); null when absent, binary or too large. */
async function readAtHead(octokit: GitHubClient, e: PullRequestEvent, path: string, maxBytes: number): Promise<Uint8Array | null> {
  try {
    const { data } = await octokit.rest.repos.getContent({ owner: e.owner, repo: e.repo, path, ref: e.headSha });
    if (Array.isArray(data) || data.type !== 'file' || !('content' in data) || data.size > maxBytes) return null;
    return Buffer.from(data.content, 'base64');
  } catch {
    return null;
  }
}

/** The config of this review: from the cache when its blob was read before, not read at all when there is no file. */
async function loadJobConfig(job: ReviewJob, live: LiveState | null, ruleIds: readonly string[], log: Logger): Promise<ConfigOutcome> {
  const blobs = live?.config;
  if (!job.configCache || !blobs) return loadConfig(job.readConfig, ruleIds);
  const key = configKey(job.event.owner, job.event.repo, blobs);
  if (key === null) {
    log.info('no config file in the repository or its owner\'s .github repository; defaults apply');
    return loadConfig(async () => null, ruleIds);
  }
  let hit = false;
  const out = await loadConfig(job.readConfig, ruleIds, { store: job.configCache, key, onHit: () => (hit = true) });
  log.info({ config: key, cached: hit }, hit ? 'config unchanged since it was read; using the cached one' : 'read the config');
  return out;
}

/** Why the config says to skip this PR, or null. */
function skipByConfig(e: PullRequestEvent, config: ResolvedConfig): SkipReason | null {
  if (config.skipDrafts && e.draft) return { kind: 'draft' };
  if (config.skipBotAuthors && (e.author.type === 'Bot' || /\[bot\]$/.test(e.author.login))) return { kind: 'bot-author', login: e.author.login };
  return null;
}

function invalidConfig(e: PullRequestEvent, message: string): Completion {
  return {
    conclusion: 'failure',
    title: `Invalid configuration: ${CONFIG_PATH}`,
    summary: [
      `gpu-review did not review this pull request: its configuration \`${CONFIG_PATH}\` (read from the default branch \`${e.defaultBranch}\`, or the organization's \`.github\` repository) is invalid.`,
      '',
      '```text',
      message,
      '```',
      '',
      `Fix the file on \`${e.defaultBranch}\`; a pull request cannot change the rules it is reviewed by. The keys are described in the README ("Configuration").`,
    ].join('\n'),
  };
}

/**
 * Step 2, load inputs: the config (default branch, cached by blob), its baseline, the PR's diff
 * from its file list, and the post-change contents of the files the path gate says are worth
 * reading. Everything the review needs from GitHub is read here; the repository files a project
 * index needs belong here too.
 */
export async function loadInputs(job: ReviewJob, live: LiveState | null, checks: readonly CheckDef[]): Promise<Loaded> {
  const { octokit, log, event: e } = job;
  const loaded = await loadJobConfig(job, live, checks.map((c) => c.id), log);
  if (!loaded.ok) {
    log.warn({ error: loaded.message }, 'invalid configuration');
    return { kind: 'config-error', message: loaded.message, completion: invalidConfig(e, loaded.message) };
  }
  const config = job.adjustConfig ? job.adjustConfig(loaded.config) : loaded.config;
  let baseline: Set<string> | null = null;
  if (config.baseline) {
    const text = await (job.readBaseline ?? ((p: string) => defaultBranchFile(octokit, e.owner, e.repo, p)))(config.baseline);
    try {
      baseline = text === null ? null : parseBaseline(text, config.baseline);
    } catch (err) {
      const message = (err as Error).message;
      return { kind: 'config-error', message, completion: { conclusion: 'failure', title: `Invalid baseline: ${config.baseline}`, summary: `gpu-review did not review this pull request: ${message}` } };
    }
    if (text === null) log.warn({ baseline: config.baseline }, 'the config names a baseline file that does not exist; reviewing without one');
  }
  const skip = skipByConfig(e, config);
  if (skip) return { kind: 'skip', skip, completion: skippedCompletion(skip) };

  // Pages sized by the change (live query): no one answer of the list is a 50 MB parse on the server's thread.
  const listed = await listPullFiles(octokit, { owner: e.owner, repo: e.repo, pull_number: e.number }, filesPerPage(live?.size));
  const diff = await diffModelFromFilesAsync(listed.files);
  const gate = pathGate(config);
  const paths = diff.files.filter((f) => gate.wantsContent(f)).map((f) => f.path);
  const withCompile = job.compile === true && config.compile.enabled;
  if (job.readFile) {
    log.info({ files: listed.files.length, fetched: 0, calls: 0 }, 'read the pull request');
    return { kind: 'inputs', inputs: { config, baseline, diff, truncated: listed.truncated, readFile: job.readFile, readFiles: batchReaderOf(job.readFile), indexReader: null, skipped: new Map(), errors: [] } };
  }
  const contents = await fetchContents(octokit, { owner: e.owner, repo: e.repo, sha: e.headSha, paths, maxBytes: config.limits.maxFileBytes, expectBytes: live?.size ? live.size.lines * 80 : undefined });
  const skipped = new Map([...contents.skipped].map(([p, s]) => [p, s.reason]));
  log.info({ files: listed.files.length, fetched: contents.texts.size, calls: contents.calls }, 'read the pull request');
  const readFile: FileReader = async (p) => contents.texts.get(p) ?? (withCompile && !skipped.has(p) ? await readAtHead(octokit, e, p, config.limits.maxFileBytes) : null);
  const indexReader = githubIndexReader(octokit, { owner: e.owner, repo: e.repo, sha: e.headSha, number: e.number, maxFileBytes: config.limits.maxFileBytes });
  return { kind: 'inputs', inputs: { config, baseline, diff, truncated: listed.truncated, readFile, readFiles: indexReader, indexReader, skipped, errors: contents.errors } };
}

import { failsGate } from '../engine/gate.js';
import { atLeast, type Confidence, type Finding, type Severity } from '../core/types.js';
import { REVIEW_MARKER } from './github-review.js';
import type { ProbotOctokit } from 'probot';

/** The REST client the check run is written with (src/github/octokit.ts names the same type). */
type GitHubClient = InstanceType<typeof ProbotOctokit>;

export const CHECK_NAME = 'gpu-review';

/** GitHub takes at most 50 annotations per create/update request. */
export const ANNOTATIONS_PER_REQUEST = 50;
/** Beyond this the check run lists the rest only in its summary (the review body). */
export const MAX_ANNOTATIONS = 1000;
/** `output.summary` and `output.text` are capped at 65,535 characters. */
const SUMMARY_LIMIT = 65_000;

export type Conclusion = 'success' | 'failure' | 'neutral' | 'skipped' | 'action_required';

export interface Annotation {
  path: string;
  start_line: number;
  end_line: number;
  start_column?: number;
  end_column?: number;
  annotation_level: 'notice' | 'warning' | 'failure';
  title: string;
  message: string;
  raw_details?: string;
}

export interface CheckRef {
  owner: string;
  repo: string;
  headSha: string;
}

function level(f: Finding, failOn: Severity | 'none', failOnConfidence: Confidence): Annotation['annotation_level'] {
  if (failsGate(f, failOn, failOnConfidence)) return 'failure';
  return atLeast(f.severity, 'medium') ? 'warning' : 'notice';
}

/** One annotation per finding: severity, rule id, citation and the rule's documentation. */
export function annotationsFor(findings: readonly Finding[], failOn: Severity | 'none', failOnConfidence: Confidence = 'high'): Annotation[] {
  return findings.map((f) => {
    const a: Annotation = {
      path: f.path,
      start_line: f.line,
      end_line: Math.max(f.line, f.endLine),
      annotation_level: level(f, failOn, failOnConfidence),
      title: `[${f.severity}] ${f.ruleId}`,
      message: `${f.message}\n\nSource: ${f.citation}${f.docUrl ? `\nRule docs: ${f.docUrl}` : ''}`,
    };
    if (f.why) a.raw_details = f.why;
    // GitHub accepts columns only on a one-line annotation.
    if (a.start_line === a.end_line && f.endColumn > f.column) {
      a.start_column = f.column;
      a.end_column = f.endColumn;
    }
    return a;
  });
}

export function conclusionFor(findings: readonly Finding[], failOn: Severity | 'none', failOnConfidence: Confidence = 'high'): Conclusion {
  return findings.some((f) => failsGate(f, failOn, failOnConfidence)) ? 'failure' : 'success';
}

export function fitSummary(summary: string): string {
  const s = summary.replace(REVIEW_MARKER, '').replace(/\s+$/, '');
  return s.length > SUMMARY_LIMIT ? `${s.slice(0, SUMMARY_LIMIT)}\n…(cut to fit GitHub's limit)` : s;
}

/** Opens the check run as in progress, so branch protection waits for the review. */
export async function startCheckRun(octokit: GitHubClient, ref: CheckRef): Promise<number> {
  const res = await octokit.rest.checks.create({
    owner: ref.owner,
    repo: ref.repo,
    name: CHECK_NAME,
    head_sha: ref.headSha,
    status: 'in_progress',
    started_at: new Date().toISOString(),
  });
  return res.data.id;
}

/**
 * The check run of one review, opened as in progress only if the review is still reading and
 * analysing after a while: a quick review creates its check run once, completed (one content
 * write instead of two, which is what GitHub's 80-writes-a-minute budget per installation runs
 * out of in a burst). Branch protection waits for a required check either way ("expected").
 */
export class PendingCheckRun {
  private id: number | null = null;
  private creating: Promise<void> | null = null;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly octokit: GitHubClient,
    private readonly ref: CheckRef,
    private readonly log: { warn(o: unknown, m?: string): void },
  ) {}

  /** Opens the run in progress now (once); a failure is logged and the run is created at the end. */
  start(): Promise<void> {
    this.creating ??= startCheckRun(this.octokit, this.ref).then(
      (id) => {
        this.id = id;
      },
      (err) => this.log.warn({ err }, 'could not start the check run; will create it at the end'),
    );
    return this.creating;
  }

  /** Opens it in progress after `ms`, unless `settle` came first. */
  startAfter(ms: number): void {
    this.timer = setTimeout(() => void this.start(), ms);
    this.timer.unref?.();
  }

  /** No more opening from now on: the id of the run if one was created (after a create in flight). */
  async settle(): Promise<number | null> {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.creating) await this.creating;
    return this.id;
  }
}

export interface Completion {
  conclusion: Conclusion;
  title: string;
  summary: string;
  annotations?: readonly Annotation[];
}

/**
 * Completes the check run (creating it when starting it had failed). Annotations go 50 per
 * request: every batch but the last is an update of the running check; the last one carries the
 * conclusion. Returns the number of requests made.
 */
export async function completeCheckRun(octokit: GitHubClient, ref: CheckRef, id: number | null, done: Completion): Promise<{ id: number; requests: number }> {
  const all = done.annotations ?? [];
  const kept = all.slice(0, MAX_ANNOTATIONS);
  const note = all.length > kept.length ? `\n\n_${all.length - kept.length} more findings are not annotated (GitHub shows at most ${MAX_ANNOTATIONS} here); the list above has them all._` : '';
  const output = (annotations: Annotation[]) => ({
    title: done.title.slice(0, 255),
    summary: fitSummary(done.summary) + note,
    ...(annotations.length ? { annotations } : {}),
  });
  const batches: Annotation[][] = [];
  for (let i = 0; i < kept.length; i += ANNOTATIONS_PER_REQUEST) batches.push(kept.slice(i, i + ANNOTATIONS_PER_REQUEST));
  if (batches.length === 0) batches.push([]);
  let requests = 0;
  let checkId = id;
  for (const [i, batch] of batches.entries()) {
    const last = i === batches.length - 1;
    const final = last ? { status: 'completed' as const, conclusion: done.conclusion, completed_at: new Date().toISOString() } : {};
    if (checkId === null) {
      requests++;
      const res = await octokit.rest.checks.create({
        owner: ref.owner,
        repo: ref.repo,
        name: CHECK_NAME,
        head_sha: ref.headSha,
        ...(last ? final : { status: 'in_progress' as const }),
        output: output(batch),
      });
      checkId = res.data.id;
    } else {
      requests++;
      await octokit.rest.checks.update({ owner: ref.owner, repo: ref.repo, check_run_id: checkId, ...final, output: output(batch) });
    }
  }
  return { id: checkId!, requests };
}

/**
 * Why a pull request gets no review, as data: the job's gate decides it, the check run (and the
 * log, and the job's outcome) say it in words through `skipText`.
 */
export type SkipReason =
  | { kind: 'closed' }
  | { kind: 'same-head' }
  | { kind: 'closed-since' }
  | { kind: 'superseded'; head: string }
  | { kind: 'draft' }
  | { kind: 'bot-author'; login: string };

export function skipText(s: SkipReason): string {
  switch (s.kind) {
    case 'closed':
      return 'pull request is closed';
    case 'same-head':
      return 'synchronize without a new head commit';
    case 'closed-since':
      return 'pull request was closed before the review ran';
    case 'superseded':
      return `superseded by a newer push (head is now ${s.head.slice(0, 7)})`;
    case 'draft':
      return 'draft pull request (config skip_drafts)';
    case 'bot-author':
      return `author ${s.login} is a bot (config skip_bot_authors)`;
  }
}

/** The check run of a pull request the config says to skip (the earlier skips write no check run). */
export function skippedCompletion(s: SkipReason): Completion {
  const text = skipText(s);
  return { conclusion: 'skipped', title: `Skipped: ${text}`, summary: `gpu-review skipped this pull request: ${text}.` };
}

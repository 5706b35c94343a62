import { rewriteDetails, shownRewrite } from '../rewrite/present.js';
import type { DiffFile, DiffModel } from '../diff/model.js';
import { hunkOfLine } from '../diff/model.js';
import { PASS_NAMES, SEVERITIES } from '../engine/types.js';
import type { Finding, Pass, ReviewResult } from '../engine/types.js';
import {
  compareByLocation,
  compareBySeverity,
  countBySeverity,
  fenceFor,
  formatPercent,
  isApplicableFix,
  oneLine,
  plural,
  replacementLines,
  severityBreakdown,
} from './common.js';
import type { ReportInput } from './types.js';

/** One entry of `comments` in `pulls.createReview`. */
export interface ReviewComment {
  path: string;
  line: number;
  side: 'RIGHT';
  start_line?: number;
  start_side?: 'RIGHT';
  body: string;
}

/** The payload of `pulls.createReview`, minus owner/repo/pull_number/commit_id. */
export interface ReviewPayload {
  body: string;
  comments: ReviewComment[];
  event: 'COMMENT';
}

export const REVIEW_MARKER = '<!-- gpu-review:review -->';

export function fingerprintMarker(fingerprint: string): string {
  // "--" would end the HTML comment early and leak the rest of the marker into the rendered text.
  return `<!-- gpu-review:fingerprint=${fingerprint.replace(/-{2,}/g, '-').replace(/>/g, '')} -->`;
}

/**
 * GitHub rejects a review body over 65,536 characters with a 422 and the whole review is lost;
 * the list of findings left out of the inline comments is what gets cut, with room to spare.
 */
const BODY_BUDGET = 60_000;

type NotInlineReason = 'outside-diff' | 'over-cap';

interface Placement {
  finding: Finding;
  /** Inclusive new-side line range of the comment. */
  anchor?: { start: number; end: number };
  suggestion: boolean;
}

interface Planned {
  comments: Array<{ finding: Finding; comment: ReviewComment }>;
  notInline: Array<{ finding: Finding; reason: NotInlineReason }>;
}

function diffFileFor(diff: DiffModel, path: string): DiffFile | undefined {
  return diff.files.find(
    (f) =>
      (f.path === path || f.newPath === path) &&
      f.status !== 'deleted' &&
      !f.binary &&
      // A hunk we could not parse whole may not match GitHub's idea of the diff, and one bad
      // anchor makes GitHub reject the whole review with a 422.
      f.problem === undefined,
  );
}

/** Every line commentable and all in one hunk: GitHub refuses a range that crosses hunks. */
function rangeAnchorable(file: DiffFile, start: number, end: number): boolean {
  if (end < start) return false;
  const hunk = hunkOfLine(file, start);
  if (hunk < 0) return false;
  for (let l = start; l <= end; l++) {
    if (!file.commentable.has(l) || hunkOfLine(file, l) !== hunk) return false;
  }
  return true;
}

function place(diff: DiffModel, f: Finding): Placement {
  const file = diffFileFor(diff, f.path);
  if (!file) return { finding: f, suggestion: false };
  if (isApplicableFix(f) && f.suggestionFits === true) {
    const { startLine, endLine } = f.fix.replace;
    // A suggestion replaces exactly the lines the comment spans, so the comment moves onto the
    // fix's lines even when the finding itself points elsewhere.
    if (rangeAnchorable(file, startLine, endLine)) {
      return { finding: f, anchor: { start: startLine, end: endLine }, suggestion: true };
    }
  }
  if (f.inHunk === false || !file.commentable.has(f.line)) return { finding: f, suggestion: false };
  const end = f.endLine > f.line && rangeAnchorable(file, f.line, f.endLine) ? f.endLine : f.line;
  return { finding: f, anchor: { start: f.line, end }, suggestion: false };
}

/** The body of one inline comment (catalog §2.1), ending with its fingerprint marker. */
export function commentBody(f: Finding, withSuggestion: boolean): string {
  const lines = [`**[${f.severity}] ${f.ruleId}** — ${f.message}`];
  lines.push(f.docUrl ? `Source: ${f.citation} · [rule docs](${f.docUrl})` : `Source: ${f.citation}`);
  if (f.why) lines.push(f.why);
  if (f.fix) lines.push(`Suggested change: ${f.fix.description}`);
  if (withSuggestion && f.fix?.replace) {
    const newLines = replacementLines(f.fix);
    const fence = fenceFor(newLines.join('\n'));
    lines.push(`${fence}suggestion`, ...newLines, fence);
  }
  const rw = shownRewrite(f);
  if (rw && !(withSuggestion && rw.suggestion)) lines.push(rewriteDetails(rw));
  if (f.also && f.also.length > 0) lines.push(`Also matched: ${f.also.join(', ')}`);
  lines.push(fingerprintMarker(f.fingerprint));
  return lines.join('\n');
}

function plan(input: ReportInput): Planned {
  const placements = input.result.findings.map((f) => place(input.diff, f));
  const anchorable = placements.filter((p) => p.anchor).sort((a, b) => compareBySeverity(a.finding, b.finding));
  const cap = Math.max(0, Math.floor(input.inlineCommentCap));
  const inline = anchorable.slice(0, cap);
  const notInline: Planned['notInline'] = [
    ...placements.filter((p) => !p.anchor).map((p) => ({ finding: p.finding, reason: 'outside-diff' as const })),
    ...anchorable.slice(cap).map((p) => ({ finding: p.finding, reason: 'over-cap' as const })),
  ].sort((a, b) => compareBySeverity(a.finding, b.finding));
  const comments = inline
    .map((p) => {
      const { start, end } = p.anchor!;
      const comment: ReviewComment = { path: p.finding.path, line: end, side: 'RIGHT', body: '' };
      // GitHub wants start_line strictly before line; a one-line range must omit it.
      if (start < end) {
        comment.start_line = start;
        comment.start_side = 'RIGHT';
      }
      comment.body = commentBody(p.finding, p.suggestion);
      return { finding: p.finding, comment };
    })
    .sort(
      (a, b) =>
        (a.comment.path < b.comment.path ? -1 : a.comment.path > b.comment.path ? 1 : 0) ||
        a.comment.line - b.comment.line ||
        compareByLocation(a.finding, b.finding),
    );
  return { comments, notInline };
}

function cell(s: string): string {
  return oneLine(s).replace(/\|/g, '\\|');
}

function countsTable(findings: readonly Finding[]): string[] {
  const totals = countBySeverity(findings);
  const columns = SEVERITIES.filter((s) => totals[s] > 0);
  const passes = [...new Set(findings.map((f) => f.pass))].sort((a, b) => a - b);
  const out = [
    `| Pass | ${columns.join(' | ')} | Total |`,
    `| :--- | ${columns.map(() => '---:').join(' | ')} | ---: |`,
  ];
  for (const pass of passes) {
    const ofPass = findings.filter((f) => f.pass === pass);
    const counts = countBySeverity(ofPass);
    const name = PASS_NAMES[pass as Pass] ?? '';
    out.push(`| ${pass} · ${name} | ${columns.map((s) => (counts[s] ? String(counts[s]) : '·')).join(' | ')} | ${ofPass.length} |`);
  }
  out.push(`| **Total** | ${columns.map((s) => `**${totals[s]}**`).join(' | ')} | **${findings.length}** |`);
  return out;
}

function coverageSection(result: ReviewResult): string[] {
  const rows: string[] = [];
  for (const file of [...result.files].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))) {
    const partial = file.sources.filter((s) => s.parseCoverage < 1);
    if (partial.length > 0) {
      for (const s of partial) {
        const where = s.label && s.label !== file.path ? `\`${cell(file.path)}\` (${cell(s.label)})` : `\`${cell(file.path)}\``;
        rows.push(`| ${where} | ${s.language} | ${formatPercent(s.parseCoverage)} |`);
      }
    } else if (file.sources.length === 0 && file.parseCoverage < 1) {
      rows.push(`| \`${cell(file.path)}\` | ${file.language ?? '—'} | ${formatPercent(file.parseCoverage)} |`);
    }
  }
  if (rows.length === 0) return [];
  return [
    '### Parse coverage',
    '',
    'Parts of these sources did not parse, so checks could not see the code in them.',
    '',
    '| Source | Language | Parsed |',
    '| :--- | :--- | ---: |',
    ...rows,
  ];
}

function skippedSection(result: ReviewResult): string[] {
  const skipped = result.files.filter((f) => f.skipped !== undefined);
  if (skipped.length === 0) return [];
  return ['### Skipped files', '', ...skipped.map((f) => `- \`${f.path}\` — ${oneLine(f.skipped ?? '')}`)];
}

function errorsSection(result: ReviewResult): string[] {
  if (result.errors.length === 0) return [];
  return [
    '### Errors',
    '',
    ...result.errors.map((e) => (e.path ? `- \`${e.path}\`: ${oneLine(e.message)}` : `- ${oneLine(e.message)}`)),
  ];
}

function notInlineItem(f: Finding, reason: NotInlineReason): string {
  const where = f.endLine > f.line ? `${f.path}:${f.line}-${f.endLine}` : `${f.path}:${f.line}`;
  const why = reason === 'outside-diff' ? 'not on a changed line' : 'over the inline limit';
  return `- **[${f.severity}]** \`${f.ruleId}\` at \`${where}\` — ${oneLine(f.message)} _(${why})_`;
}

function notInlineSection(planned: Planned, cap: number, budget: number): string[] {
  if (planned.notInline.length === 0) return [];
  const outside = planned.notInline.filter((n) => n.reason === 'outside-diff').length;
  const over = planned.notInline.length - outside;
  const why: string[] = [];
  if (outside) why.push(`${plural(outside, 'finding')} could not be anchored on a line of the diff`);
  if (over) why.push(`${plural(over, 'finding')} went over the limit of ${plural(cap, 'inline comment')}`);
  const head = ['### Not posted inline', '', `${why.join('; ')}.`, ''];
  let used = head.join('\n').length;
  const items: string[] = [];
  for (const [i, n] of planned.notInline.entries()) {
    const item = notInlineItem(n.finding, n.reason);
    if (used + item.length + 1 > budget) {
      items.push(`- …and ${plural(planned.notInline.length - i, 'more finding')} (see the JSON or SARIF report)`);
      break;
    }
    items.push(item);
    used += item.length + 1;
  }
  return [...head, ...items];
}

function renderBody(input: ReportInput, planned: Planned): string {
  const { result } = input;
  const findings = result.findings;
  const paths = new Set(findings.map((f) => f.path));
  const before: string[] = [];
  if (findings.length === 0) {
    before.push('## gpu-review', '', 'No GPU issues found in the changed lines.');
  } else {
    before.push(
      `## gpu-review: ${plural(findings.length, 'finding')} in ${plural(paths.size, 'file')}`,
      '',
      `**${severityBreakdown(findings)}** · ${planned.comments.length} posted inline` +
        (planned.notInline.length ? `, ${planned.notInline.length} listed below` : ''),
      '',
      ...countsTable(findings),
    );
  }
  const sections = [coverageSection(result), skippedSection(result), errorsSection(result)].filter((s) => s.length);
  const fixedParts = [before.join('\n'), ...sections.map((s) => s.join('\n')), REVIEW_MARKER];
  const fixedLength = fixedParts.join('\n\n').length;
  const notInline = notInlineSection(planned, Math.max(0, Math.floor(input.inlineCommentCap)), BODY_BUDGET - fixedLength);
  const parts = [fixedParts[0]];
  if (notInline.length) parts.push(notInline.join('\n'));
  parts.push(...fixedParts.slice(1));
  return parts.join('\n\n');
}

/**
 * The exact payload for `pulls.createReview`: every comment anchored by line/side (never
 * `position`) on a line the diff lets GitHub comment on; everything else goes to the body.
 */
export function buildReview(input: ReportInput): ReviewPayload {
  const planned = plan(input);
  return {
    body: renderBody(input, planned),
    comments: planned.comments.map((c) => c.comment),
    event: 'COMMENT',
  };
}

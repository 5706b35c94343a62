import { compileLines } from '../compile/render.js';
import { rewriteDetails, shownRewrite } from '../rewrite/present.js';
import type { DiffFile, DiffModel } from '../diff/model.js';
import { hunkOfLine } from '../diff/model.js';
import { PASS_NAMES, SEVERITIES } from '../core/types.js';
import type { Finding, Pass, ReviewResult } from '../core/types.js';
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

const MARKER_RE = /<!-- gpu-review:fingerprint=([^\s>]+) -->/;

/** The fingerprint a comment body carries in its hidden marker, as the marker spells it (for comments read back from GitHub). */
export function markerFingerprint(body: string | null | undefined): string | null {
  return MARKER_RE.exec(body ?? '')?.[1] ?? null;
}

/** The marker spelling of a finding's fingerprint (what markerFingerprint reads back). */
export function markerKey(fingerprint: string): string {
  return markerFingerprint(fingerprintMarker(fingerprint)) ?? fingerprint;
}

/** One inline comment of the review and the finding it speaks for. */
export interface ReviewPlacement {
  fingerprint: string;
  /** The fingerprint as the comment's marker spells it: what a thread read back from GitHub carries. */
  marker: string;
  comment: ReviewComment;
}

/** The review payload and, for each of its comments in the same order, where it came from. */
export interface PlannedReview {
  payload: ReviewPayload;
  placements: ReviewPlacement[];
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

/** Most visible characters of an inline comment outside its `<details>` block (suggestion code not counted). */
export const VISIBLE_BUDGET = 600;
const MAX_SITES_LISTED = 20;

/**
 * The body of one inline comment (catalog §2.1): the problem in one or two sentences with the
 * code's names, the fix, any one-click suggestion; then the why, the figures, every site of a
 * grouped finding and the citation inside a collapsed `<details>` block, and the fingerprint marker.
 */
export function commentBody(f: Finding, withSuggestion: boolean): string {
  const head = `**[${f.severity}] ${f.ruleId}** — `;
  const said = sentences(f.message);
  // A grouped finding's "Also at lines …" sentence stays visible: it is where the other sites are.
  const alsoAt = f.members && said.length > 1 && /^Also at line/.test(said[said.length - 1]) ? said.pop()! : null;
  const fixSaid = f.fix ? sentences(f.fix.description) : [];
  const fixHead = '**Fix:** ';
  const room = (parts: string[]) => VISIBLE_BUDGET - head.length - parts.join(' ').length - (alsoAt ? alsoAt.length + 1 : 0);
  // First sentence of each always; then more of the message, then more of the fix, while they fit.
  const problem = [said[0] ?? f.message];
  const fix = fixSaid.length ? [fixSaid[0]] : [];
  const fixLen = () => (fix.length ? fixHead.length + 1 + fix.join(' ').length : 0);
  let i = 1;
  while (i < Math.min(said.length, 2) && room([...problem, said[i]]) - fixLen() >= 0) problem.push(said[i++]);
  let j = 1;
  while (j < fixSaid.length && room(problem) - fixHead.length - 1 - [...fix, fixSaid[j]].join(' ').length >= 0) fix.push(fixSaid[j++]);
  let problemText = problem.join(' ');
  const budgetLeft = room([problemText]) - fixLen();
  if (budgetLeft < 0 && problemText.length > 200) problemText = cut(problemText, Math.max(200, problemText.length + budgetLeft));
  const restOfMessage = said.slice(problem.length).join(' ');
  const cutMessage = problemText !== problem.join(' ');
  let fixText = fix.join(' ');
  const fixRoom = VISIBLE_BUDGET - head.length - problemText.length - (alsoAt ? alsoAt.length + 1 : 0) - fixHead.length - 1;
  const cutFix = fixText.length > fixRoom && fixText.length > 120;
  if (cutFix) fixText = cut(fixText, Math.max(120, fixRoom));
  const restOfFix = fixSaid.slice(fix.length).join(' ');

  const lines = [`${head}${problemText}${alsoAt ? ` ${alsoAt}` : ''}`];
  if (f.fix) lines.push('', `${fixHead}${fixText}`);
  if (withSuggestion && f.fix?.replace) {
    const newLines = replacementLines(f.fix);
    const fence = fenceFor(newLines.join('\n'));
    lines.push('', `${fence}suggestion`, ...newLines, fence);
  }
  const details: string[] = [];
  if (cutMessage) details.push(f.message);
  else if (restOfMessage) details.push(restOfMessage);
  if (f.fix && (cutFix || restOfFix)) details.push(`Fix, in full: ${f.fix.description}`);
  if (f.why) details.push(f.why);
  if (f.members && f.members.length > 1) {
    const listed = f.members.slice(0, MAX_SITES_LISTED).map((m) => `- line ${m.line}:${m.column}: ${oneLine(m.message)}`);
    if (f.members.length > MAX_SITES_LISTED) listed.push(`- …and ${f.members.length - MAX_SITES_LISTED} more`);
    details.push(`Sites (${f.members.length}):\n${listed.join('\n')}`);
  }
  details.push(f.docUrl ? `Source: ${f.citation} · [rule docs](${f.docUrl})` : `Source: ${f.citation}`);
  if (f.also && f.also.length > 0) details.push(`Also matched: ${f.also.join(', ')}`);
  lines.push('', '<details><summary>Why, figures and source</summary>', '', details.join('\n\n'), '', '</details>');
  const rw = shownRewrite(f);
  if (rw && !(withSuggestion && rw.suggestion)) lines.push('', rewriteDetails(rw));
  lines.push(fingerprintMarker(f.fingerprint));
  return lines.join('\n');
}

/** The part of a comment body a reader sees without opening `<details>`, without suggestion code and markers. */
export function visibleText(body: string): string {
  return body
    .replace(/<details>[\s\S]*?<\/details>/g, '')
    .replace(/^(`{3,})suggestion\n[\s\S]*?\n\1$/gm, '')
    .replace(/<!--[\s\S]*?-->/g, '')
    .replace(/\n{2,}/g, '\n')
    .trim();
}

/** Cut at a word boundary, ending in an ellipsis, never inside inline code. */
function cut(text: string, max: number): string {
  if (text.length <= max) return text;
  let end = text.lastIndexOf(' ', max - 1);
  if (end < max / 2) end = max - 1;
  let out = text.slice(0, end);
  if ((out.match(/`/g) ?? []).length % 2 === 1) out = out.slice(0, out.lastIndexOf('`')).trimEnd();
  return `${out.replace(/[\s,;:(]+$/, '')} …`;
}

const ABBREVIATIONS = /(?:^|\s)(?:e\.g|i\.e|vs|etc|cf|approx|ca|no|Fig)\.$/i;

/**
 * Sentences of a message or fix: split after `.`, `!` or `?` followed by a space and a capital,
 * a backtick or a parenthesis, never inside inline code and never after a common abbreviation.
 */
export function sentences(text: string): string[] {
  const out: string[] = [];
  let start = 0;
  let code = false;
  for (let k = 0; k < text.length; k++) {
    const c = text[k];
    if (c === '`') code = !code;
    if (code || (c !== '.' && c !== '!' && c !== '?') || text[k + 1] !== ' ') continue;
    const next = text[k + 2] ?? '';
    if (!/[A-Z`(]/.test(next)) continue;
    const piece = text.slice(start, k + 1);
    if (ABBREVIATIONS.test(piece) || /\.\.$/.test(piece)) continue;
    out.push(piece.trim());
    start = k + 2;
  }
  const last = text.slice(start).trim();
  if (last) out.push(last);
  return out;
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

function compileSection(result: ReviewResult): string[] {
  return result.compile ? ['### Compiler evidence', '', ...compileLines(result.compile, 'markdown')] : [];
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
  const sections = [coverageSection(result), compileSection(result), skippedSection(result), errorsSection(result)].filter((s) => s.length);
  const fixedParts = [before.join('\n'), ...sections.map((s) => s.join('\n')), REVIEW_MARKER];
  const fixedLength = fixedParts.join('\n\n').length;
  const notInline = notInlineSection(planned, Math.max(0, Math.floor(input.inlineCommentCap)), BODY_BUDGET - fixedLength);
  const parts = [fixedParts[0]];
  if (notInline.length) parts.push(notInline.join('\n'));
  parts.push(...fixedParts.slice(1));
  return parts.join('\n\n');
}

/** GitHub refuses a review body over 65,536 characters. */
const BODY_LIMIT = 65_000;

function where(c: ReviewComment): string {
  return c.start_line !== undefined ? `${c.path}:${c.start_line}-${c.line}` : `${c.path}:${c.line}`;
}

/** The rule line of a comment (`**[severity] rule** — message`) for the body listing. */
function headline(c: ReviewComment): string {
  return (c.body.split('\n')[0] ?? '').trim();
}

/** Inserts a section before the review marker, keeping the body under GitHub's limit. */
export function addToBody(body: string, section: string): string {
  const at = body.lastIndexOf(REVIEW_MARKER);
  const head = at >= 0 ? body.slice(0, at).replace(/\s+$/, '') : body;
  const tail = at >= 0 ? body.slice(at) : '';
  let text = `${head}\n\n${section}\n\n${tail}`.replace(/\n+$/, '');
  if (text.length > BODY_LIMIT) {
    const room = Math.max(0, BODY_LIMIT - head.length - tail.length - 100);
    text = `${head}\n\n${section.slice(0, room)}\n…(cut to fit GitHub's limit)\n\n${tail}`;
  }
  return text;
}

/** The payload with some comments moved into the body, so no finding is lost with them. */
export function moveToBody(payload: ReviewPayload, moved: readonly ReviewComment[], why: string): ReviewPayload {
  if (moved.length === 0) return payload;
  const set = new Set(moved);
  const lines = [
    '### Refused inline by GitHub',
    '',
    `GitHub did not accept ${moved.length === 1 ? 'this comment' : `these ${moved.length} comments`} on the diff (${why}); ${moved.length === 1 ? 'it is' : 'they are'} listed here instead.`,
    '',
    ...moved.map((c) => `- \`${where(c)}\` — ${headline(c)}`),
  ];
  return { ...payload, body: addToBody(payload.body, lines.join('\n')), comments: payload.comments.filter((c) => !set.has(c)) };
}

/** One 422 of GitHub's: the comments it refused (by marker key) and its reason. */
export interface Refusal {
  markers: ReadonlySet<string>;
  why: string;
}

export interface BuildOptions {
  /** Marker keys of the comments an earlier push already posted (the bot's threads): left out, and counted. */
  alreadyPosted?: ReadonlySet<string>;
  /** GitHub's refusals, in order: each moves its comments into the body under its own heading. */
  refused?: readonly Refusal[];
}

/** The review payload, and for each of its comments (same order) the finding it speaks for. */
export interface BuiltReview extends ReviewPayload {
  placements: ReviewPlacement[];
  /** Comments left out because an earlier push posted them. */
  repeated: number;
  /** Comments moved into the body by `refused`. */
  movedToBody: number;
}

/**
 * The exact payload for `pulls.createReview`: every comment anchored by line/side (never
 * `position`) on a line the diff lets GitHub comment on; everything else goes to the body. With
 * `alreadyPosted`, the comments an earlier push posted are left out (the body says how many);
 * with `refused`, the comments GitHub refused are listed in the body instead. The placements say
 * which finding each comment is, so nothing reads fingerprints back out of rendered markdown.
 */
export function buildReview(input: ReportInput, opts: BuildOptions = {}): BuiltReview {
  const { payload, placements: all } = planReview(input);
  const posted = opts.alreadyPosted;
  let placements = posted ? all.filter((p) => !posted.has(p.marker)) : all;
  const repeated = all.length - placements.length;
  let body = payload.body;
  if (repeated > 0) {
    body = addToBody(
      body,
      `_${repeated} of the inline comments ${repeated === 1 ? 'was' : 'were'} already posted on an earlier push and ${repeated === 1 ? 'is' : 'are'} not repeated._`,
    );
  }
  let out: ReviewPayload = { ...payload, body, comments: placements.map((p) => p.comment) };
  let movedToBody = 0;
  for (const r of opts.refused ?? []) {
    const moved = placements.filter((p) => r.markers.has(p.marker));
    out = moveToBody(out, moved.map((p) => p.comment), r.why);
    placements = placements.filter((p) => !r.markers.has(p.marker));
    movedToBody += moved.length;
  }
  return { ...out, placements, repeated, movedToBody };
}

/** buildReview's payload with the finding behind each comment. */
export function planReview(input: ReportInput): PlannedReview {
  const planned = plan(input);
  return {
    payload: {
      body: renderBody(input, planned),
      comments: planned.comments.map((c) => c.comment),
      event: 'COMMENT',
    },
    placements: planned.comments.map((c) => ({ fingerprint: c.finding.fingerprint, marker: markerKey(c.finding.fingerprint), comment: c.comment })),
  };
}

/**
 * The review without the comments an earlier push already posted (`alreadyPosted`: marker keys of
 * the bot's threads), and how many were left out. The body is the full review's.
 */
export function withoutAlreadyPosted(planned: PlannedReview, alreadyPosted: ReadonlySet<string>): { payload: ReviewPayload; repeated: number } {
  const comments = planned.placements.filter((p) => !alreadyPosted.has(p.marker)).map((p) => p.comment);
  return { payload: { ...planned.payload, comments }, repeated: planned.payload.comments.length - comments.length };
}

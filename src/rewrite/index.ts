import type { ResolvedConfig } from '../config/schema.js';
import { parseUnifiedDiff, hunkOfLine, type DiffFile } from '../diff/model.js';
import type { CheckDef } from '../engine/check.js';
import type { Finding, Language } from '../core/types.js';
import { activeChecks, reviewFileContent, type ReviewOutput } from '../review/file.js';
import { replacementLines } from '../core/fix.js';
import { buildSources } from '../sources/build.js';
import type { Source } from '../sources/types.js';
import { nodeAt } from './context.js';
import { applyEdits, editsConflict, unitDiff } from './edit.js';
import { enclosingUnit } from './context.js';
import { TEMPLATES } from './templates/index.js';
import { declined, type LineEdit, type Proposal, type Rewrite, type Template, type VerificationStep } from './types.js';
import { Compiler, findToolchain, type Toolchain } from './verify.js';

export type { Rewrite } from './types.js';

/** What pass 7 attaches to a finding: a rewrite, or why there is none. */
export type RewriteOutcome = Rewrite | { declined: string; tried: string[] };

export interface Pass7Options {
  config: ResolvedConfig;
  /** Repository root, for the compiler's include paths. */
  repo?: string;
  /** Compile rewrites (python3 -m py_compile, nvcc) where the tools exist. Default true. */
  compile?: boolean;
  toolchain?: Toolchain;
  compileTimeoutMs?: number;
  checks?: readonly CheckDef[];
  templates?: readonly Template[];
  /** Offer the checks' own line fixes as rewrites (default true). */
  engineFixes?: boolean;
  /** Wall-time budget for the whole pass; findings not reached in time are declined as such. */
  budgetMs?: number;
  /** Only these findings get a rewrite (the App: the ones it will post); the others are left as they are. */
  select?: (f: Finding) => boolean;
  /** Drafts for findings no template covers (src/rewrite/llm.ts); none when absent. */
  draft?: (f: Finding, ctx: { path: string; language: Language; text: string; lines: string[]; unit: { startLine: number; endLine: number; text: string } }) => Promise<Proposal | { decline: string } | null>;
}

export interface Pass7Summary {
  findings: number;
  withRewrite: number;
  verified: number;
  unverified: number;
  failed: number;
  declined: number;
  byTemplate: Record<string, number>;
}

/** The diff of a whole file added: what re-reviewing a rewritten file runs on. */
function wholeFileDiff(path: string, text: string): DiffFile {
  const lines = text.split('\n');
  const diff = [`diff --git a/${path} b/${path}`, 'new file mode 100644', '--- /dev/null', `+++ b/${path}`, `@@ -0,0 +1,${lines.length} @@`, ...lines.map((l) => '+' + l), ''].join('\n');
  return parseUnifiedDiff(diff).files[0];
}

interface FileState {
  path: string;
  language: Language;
  text: string;
  lines: string[];
  source: Source;
  before: Finding[];
}

/**
 * Pass 7: for each finding whose fix is a rewrite, build one (the check's own line fix, else a
 * template, else an optional model draft), verify it, and attach it as `finding.rewrite`.
 */
export async function runPass7(out: ReviewOutput, opts: Pass7Options): Promise<Pass7Summary> {
  const config = opts.config;
  const checks = activeChecks(config, opts.checks);
  const templates = opts.templates ?? TEMPLATES;
  const compiler = opts.compile === false ? null : new Compiler({ toolchain: opts.toolchain ?? findToolchain(), includes: [], timeoutMs: opts.compileTimeoutMs ?? 60_000 });
  const summary: Pass7Summary = { findings: 0, withRewrite: 0, verified: 0, unverified: 0, failed: 0, declined: 0, byTemplate: {} };
  const deadline = opts.budgetMs === undefined ? Number.POSITIVE_INFINITY : performance.now() + opts.budgetMs;
  // A re-review gets what is left of the budget, so one file cannot hold the pass past it.
  // A review cut short by the budget proves nothing: it counts as no answer (null).
  const review = (path: string, text: string): Finding[] | null => {
    const done = reviewFileContent(wholeFileDiff(path, text), text, config, checks, 'file', Math.max(1, deadline - performance.now()));
    return done.timedOut || done.skipped ? null : done.findings;
  };
  const states = new Map<string, FileState | string>();
  const state = (f: Finding): FileState | string => {
    let s = states.get(f.path);
    if (s !== undefined) return s;
    const lines = out.fileLines.get(f.path);
    const report = out.result.files.find((r) => r.path === f.path);
    if (!lines || lines.length === 0 || lines.some((l) => l === undefined)) s = 'the whole file is not available (diff-only review): give --repo to get rewrites';
    else if (!report?.language || report.language === 'luisa-dsl') s = 'no rewrite templates for this language';
    else {
      const text = (lines as string[]).join('\n');
      const language = report.language;
      const source = buildSources(f.path, language, { text, firstLine: 1, label: 'file', wholeFile: true }, config.limits.fileTimeoutMs)[0];
      const before = review(f.path, text);
      s = before ? { path: f.path, language, text, lines: lines as string[], source, before } : 'the file could not be reviewed again within the time budget of pass 7';
    }
    states.set(f.path, s);
    return s;
  };
  const done = new Map<string, Rewrite>();
  for (const f of out.result.findings) {
    if (opts.select && !opts.select(f)) continue;
    summary.findings++;
    if (performance.now() > deadline) {
      f.rewrite = { declined: 'the time budget of pass 7 was spent before this finding', tried: [] };
      summary.declined++;
      continue;
    }
    const st = state(f);
    if (typeof st === 'string') {
      f.rewrite = { declined: st, tried: [] };
      summary.declined++;
      continue;
    }
    const tried: string[] = [];
    const reasons: string[] = [];
    const proposals: Array<{ id: string; origin: Rewrite['origin']; p: Proposal }> = [];
    if (f.fix?.replace && opts.engineFixes !== false) {
      const r = f.fix.replace;
      proposals.push({ id: 'engine-fix', origin: 'engine', p: { description: f.fix.description, edits: [{ startLine: r.startLine, endLine: r.endLine, text: replacementLines(f.fix).join('\n') }], behaviourPreserving: f.fix.kind === 'safe' } });
    }
    const lang = st.language === 'nvrtc-in-python' ? 'python' : st.language;
    const node = nodeAt(st.source.root, f.line, f.column, f.endLine, f.endColumn);
    for (const t of templates) {
      if (!t.rules.includes(f.ruleId) || !t.languages.includes(lang)) continue;
      tried.push(t.id);
      let got;
      try {
        got = t.build({ finding: f, path: f.path, language: st.language, text: st.text, lines: st.lines, source: st.source, node, config });
      } catch (e) {
        got = { decline: `template error: ${(e as Error).message}` };
      }
      if (declined(got)) reasons.push(`${t.id}: ${got.decline}`);
      else proposals.push({ id: t.id, origin: 'template', p: got });
    }
    if (proposals.length === 0 && opts.draft && f.fix?.kind !== 'safe') {
      const unit = enclosingUnit(node, lang === 'python');
      const u = { startLine: unit.node.startPosition.row + 1, endLine: unit.node.endPosition.row + 1, text: '' };
      u.text = st.lines.slice(u.startLine - 1, u.endLine).join('\n');
      tried.push('llm');
      const d = await opts.draft(f, { path: f.path, language: st.language, text: st.text, lines: st.lines, unit: u }).catch((e: Error) => ({ decline: `draft failed: ${e.message}` }));
      if (d && declined(d)) reasons.push(`llm: ${d.decline}`);
      else if (d) proposals.push({ id: 'llm', origin: 'llm', p: d });
    }
    let chosen: Rewrite | null = null;
    let lastFailed: Rewrite | null = null;
    for (const { id, origin, p } of proposals) {
      const key = JSON.stringify(p.edits);
      const prior = done.get(key);
      let rw = prior ?? (await build(st, f, id, origin, p, node, compiler, opts.repo, review));
      done.set(key, rw);
      // The same rewrite for a second finding still has to clear that finding's rule.
      if (prior && !clears(st, rw, f, review)) rw = { ...rw, verification: { status: 'failed', steps: [...rw.verification.steps, { step: 're-review', status: 'fail', detail: `${f.ruleId} still fires` }] } };
      if (rw.verification.status !== 'failed') {
        chosen = rw;
        break;
      }
      lastFailed = rw;
      reasons.push(`${id}: verification failed (${rw.verification.steps.find((s) => s.status === 'fail')?.detail ?? ''})`);
    }
    const file = out.diff.files.find((d) => d.path === f.path);
    if (chosen) {
      chosen = { ...chosen, suggestion: suggestionFits(chosen, file) };
      f.rewrite = chosen;
      summary.withRewrite++;
      summary.byTemplate[chosen.template] = (summary.byTemplate[chosen.template] ?? 0) + 1;
      if (chosen.verification.status === 'verified') summary.verified++;
      else summary.unverified++;
      if (chosen.suggestion && !(f.fix?.replace && chosen.origin === 'engine')) {
        const e = chosen.edits[0];
        f.fix = { kind: 'safe', description: chosen.description, replace: { startLine: e.startLine, endLine: e.endLine, text: e.text } };
        f.suggestionFits = true;
      } else if (chosen.origin !== 'engine' && f.fix?.kind === 'safe' && !f.fix.replace) {
        // keep the check's prose
      }
    } else if (lastFailed) {
      summary.failed++;
      // What failed is not shown: the check's own fix loses its suggestion too.
      if (f.fix?.replace && lastFailed.origin === 'engine') {
        f.fix = { kind: 'judgment', description: f.fix.description };
        f.suggestionFits = false;
      }
      f.rewrite = { declined: reasons.join('; '), tried };
    } else {
      summary.declined++;
      f.rewrite = { declined: reasons.length ? reasons.join('; ') : `no rewrite template for ${f.ruleId}`, tried };
    }
  }
  return summary;
}

function suggestionFits(rw: Rewrite, file: DiffFile | undefined): boolean {
  if (!file || !rw.behaviourPreserving || rw.edits.length !== 1) return false;
  const e = rw.edits[0];
  if (e.endLine < e.startLine) return false;
  const h = hunkOfLine(file, e.startLine);
  if (h < 0 || h !== hunkOfLine(file, e.endLine)) return false;
  for (let l = e.startLine; l <= e.endLine; l++) if (!file.added.has(l)) return false;
  return true;
}

function countByRule(fs: readonly Finding[]): Map<string, number> {
  const m = new Map<string, number>();
  // A rule that lost to another on the same node (`also`) still fires there.
  for (const f of fs) for (const r of [f.ruleId, ...(f.also ?? [])]) m.set(r, (m.get(r) ?? 0) + 1);
  return m;
}

const afterCache = new WeakMap<Rewrite, Finding[]>();

function clears(st: FileState, rw: Rewrite, f: Finding, review: (p: string, t: string) => Finding[] | null): boolean {
  let after = afterCache.get(rw);
  if (!after) {
    const got = review(st.path, applyEdits(st.lines, rw.edits).join('\n'));
    if (!got) return false;
    after = got;
    afterCache.set(rw, after);
  }
  return (countByRule(after).get(f.ruleId) ?? 0) < (countByRule(st.before).get(f.ruleId) ?? 0);
}

async function build(st: FileState, f: Finding, id: string, origin: Rewrite['origin'], p: Proposal, node: ReturnType<typeof nodeAt>, compiler: Compiler | null, repo: string | undefined, review: (p: string, t: string) => Finding[] | null): Promise<Rewrite> {
  const python = st.language === 'python' || st.language === 'nvrtc-in-python';
  const steps: VerificationStep[] = [];
  const edits: LineEdit[] = p.edits;
  const unitNode = enclosingUnit(node, python);
  let start = unitNode.node.startPosition.row + 1;
  let end = unitNode.node.endPosition.row + 1;
  for (const e of edits) {
    start = Math.min(start, e.startLine);
    end = Math.max(end, e.endLine, e.startLine);
  }
  const rw: Rewrite = {
    template: id,
    origin,
    description: p.description,
    edits,
    unit: { label: unitNode.label, startLine: start, endLine: end },
    behaviourPreserving: p.behaviourPreserving,
    diff: '',
    verification: { status: 'failed', steps },
    suggestion: false,
  };
  const bad = edits.find((e) => e.startLine < 1 || e.endLine > st.lines.length || e.endLine < e.startLine - 1);
  if (bad || edits.some((a, i) => edits.some((b, j) => i < j && editsConflict([a], [b])))) {
    steps.push({ step: 'reparse', status: 'fail', detail: 'edits out of range or overlapping' });
    return rw;
  }
  const afterLines = applyEdits(st.lines, edits);
  const after = afterLines.join('\n');
  rw.diff = unitDiff(st.path, st.lines, edits, start, end);
  // 1. Re-parse: no new ERROR / MISSING nodes.
  const parsed = buildSources(st.path, st.language, { text: after, firstLine: 1, label: 'file', wholeFile: true }, 20_000)[0];
  const errs = (s: Source) => s.errorRanges.length;
  if (errs(parsed) > errs(st.source)) {
    steps.push({ step: 'reparse', status: 'fail', detail: `${errs(parsed) - errs(st.source)} new parse error(s)` });
    return rw;
  }
  steps.push({ step: 'reparse', status: 'pass' });
  // 2. Compile where a compiler exists.
  if (compiler) {
    const s = await compiler.step(st.path, st.language, st.text, after, Compiler.includesFor(repo, st.path));
    steps.push(s);
    if (s.status === 'fail') return rw;
  } else steps.push({ step: python ? 'py_compile' : 'nvcc', status: 'skipped', detail: 'compilation turned off' });
  // 3. Review again: the rule no longer fires there and nothing new appears.
  const again = review(st.path, after);
  if (!again) {
    steps.push({ step: 're-review', status: 'fail', detail: 'the re-review did not finish within the time budget' });
    return rw;
  }
  afterCache.set(rw, again);
  const before = countByRule(st.before);
  const now = countByRule(again);
  const still = (now.get(f.ruleId) ?? 0) >= (before.get(f.ruleId) ?? 0);
  const fresh = [...now].filter(([r, n]) => n > (before.get(r) ?? 0) && r !== f.ruleId).map(([r]) => r);
  if (still || fresh.length) {
    steps.push({ step: 're-review', status: 'fail', detail: still ? `${f.ruleId} still fires` : `new finding(s): ${fresh.join(', ')}` });
    return rw;
  }
  steps.push({ step: 're-review', status: 'pass' });
  rw.verification.status = steps.some((s) => s.status === 'skipped') ? 'unverified' : 'verified';
  return rw;
}

/**
 * The development corpus runner: recall and precision of the review on real fix commits and on
 * real well-optimised files, read from local mirrors of public repositories (corpus/README.md).
 *
 *   npm run corpus -- --mirrors DIR [--half check|tune|all] [--only ID,...] [--repo OWNER/NAME]
 *                     [--json FILE] [--preview] [--validate] [--quiet]
 *
 * Not part of CI: it needs the mirrors. The last line printed is
 * `recall_family=… recall_exact=… fix_same_family=… clean_fp_per_kloc=…` for --half (default check).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Command, InvalidArgumentError } from 'commander';
import { resolveConfig, type ResolvedConfig } from '../src/config/schema.js';
import { CHECKS } from '../checks/registry.generated.js';
import type { Finding } from '../src/core/types.js';
import { review, type ReviewOutput } from '../src/review/pipeline.js';

export const FORBIDDEN = [
  'jarmak-personal/vibespatial',
  'luisagroup/luisarender',
  'rapidsai/cuspatial',
  'ggml-org/ggml',
  'ggerganov/ggml',
  'ggml-org/llama.cpp',
  'ggerganov/llama.cpp',
  'ggml-org/whisper.cpp',
  'ggerganov/whisper.cpp',
  'cupy/cupy',
  'rapidsai/raft',
];
export const FAMILIES = ['host-device', 'sync', 'kernel', 'precision', 'memory', 'nvrtc', 'luisa'] as const;

export interface RealRow {
  id: string;
  repo: string;
  fix: string;
  parent: string;
  path: string;
  start: number;
  end: number;
  rule: string;
  family: string;
  note: string;
  source: string;
}
export interface CleanRow {
  id: string;
  repo: string;
  commit: string;
  path: string;
  note: string;
  source: string;
}
export interface Judgement {
  kind: 'clean' | 'fix';
  id: string;
  rule: string;
  line: number;
  verdict: 'TP' | 'FP' | 'debatable';
  note: string;
}
export type Half = 'tune' | 'check';

/** A row whose hazard needs facts from another file of the repository (corpus/cross-file.tsv). */
export interface CrossFileRow {
  id: string;
  /** How the other file is reached: `python-import`, `include`, `reverse-include` (a file that includes this one). */
  needs: string;
  fact: string;
}

export interface Corpus {
  real: RealRow[];
  clean: CleanRow[];
  judgements: Judgement[];
  halves: Map<string, Half>;
  /** Rows that need another file's facts, by id. */
  crossFile: Map<string, CrossFileRow>;
  problems: string[];
}

const SHA = /^[0-9a-f]{40}$/;

export function corpusDir(): string {
  // dist/corpus/runner.js → <root>/corpus; corpus/runner.ts → <root>/corpus.
  const here = path.dirname(fileURLToPath(import.meta.url));
  const up = path.basename(path.dirname(here)) === 'dist' ? path.resolve(here, '..', '..', 'corpus') : here;
  return up;
}

export function familyOf(rule: string): string {
  const r = rule.startsWith('new:') ? rule.slice(4) : rule;
  return r.split('/')[0];
}

function readTsv(file: string): Array<Record<string, string> & { __line: string }> {
  const lines = readFileSync(file, 'utf8').split('\n');
  const header = (lines.shift() ?? '').split('\t').map((h) => h.trim());
  const rows: Array<Record<string, string> & { __line: string }> = [];
  lines.forEach((l, i) => {
    if (!l.trim() || l.startsWith('#')) return;
    const cells = l.split('\t');
    const row: Record<string, string> & { __line: string } = { __line: `${path.basename(path.dirname(file))}/${path.basename(file)}:${i + 2}` };
    header.forEach((h, j) => (row[h] = (cells[j] ?? '').trim()));
    rows.push(row);
  });
  return rows;
}

function tsvFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith('.tsv'))
    .sort()
    .map((f) => path.join(dir, f));
}

/** Reads and validates the corpus files; every problem is one line naming the row. */
export function loadCorpus(dir = corpusDir(), knownRules: ReadonlySet<string> = new Set(CHECKS.map((c) => c.id))): Corpus {
  const problems: string[] = [];
  const ids = new Set<string>();
  const forbidden = (repo: string) => FORBIDDEN.includes(repo.toLowerCase());
  const real: RealRow[] = [];
  for (const f of tsvFiles(path.join(dir, 'real'))) {
    for (const r of readTsv(f)) {
      const where = r.__line;
      const m = /^(\d+)(?:-(\d+))?$/.exec(r.lines ?? '');
      const bad: string[] = [];
      if (!r.id) bad.push('no id');
      else if (ids.has(r.id)) bad.push(`duplicate id ${r.id}`);
      if (!/^[\w.-]+\/[\w.-]+$/.test(r.repo ?? '')) bad.push(`bad repo "${r.repo}"`);
      else if (forbidden(r.repo)) bad.push(`repository ${r.repo} is kept out of the corpus`);
      if (!SHA.test(r.fix ?? '')) bad.push('fix is not a 40-hex commit');
      if (!SHA.test(r.parent ?? '')) bad.push('parent is not a 40-hex commit');
      if (!r.path) bad.push('no path');
      if (!m) bad.push(`bad lines "${r.lines}"`);
      const rule = r.rule ?? '';
      if (rule.startsWith('new:')) {
        if (!/^new:[a-z-]+\/[a-z0-9-]+$/.test(rule) || !(FAMILIES as readonly string[]).includes(familyOf(rule))) bad.push(`bad new rule "${rule}"`);
      } else if (!knownRules.has(rule)) bad.push(`unknown rule "${rule}"`);
      if (bad.length) {
        problems.push(`${where}: ${bad.join('; ')}`);
        continue;
      }
      ids.add(r.id);
      const start = Number(m![1]);
      const end = Number(m![2] ?? m![1]);
      real.push({ id: r.id, repo: r.repo, fix: r.fix, parent: r.parent, path: r.path, start: Math.min(start, end), end: Math.max(start, end), rule, family: familyOf(rule), note: r.note ?? '', source: where });
    }
  }
  const clean: CleanRow[] = [];
  for (const f of tsvFiles(path.join(dir, 'clean'))) {
    for (const r of readTsv(f)) {
      const bad: string[] = [];
      if (!r.id) bad.push('no id');
      else if (ids.has(r.id)) bad.push(`duplicate id ${r.id}`);
      if (!/^[\w.-]+\/[\w.-]+$/.test(r.repo ?? '')) bad.push(`bad repo "${r.repo}"`);
      else if (forbidden(r.repo)) bad.push(`repository ${r.repo} is kept out of the corpus`);
      if (!SHA.test(r.commit ?? '')) bad.push('commit is not a 40-hex commit');
      if (!r.path) bad.push('no path');
      if (bad.length) {
        problems.push(`${r.__line}: ${bad.join('; ')}`);
        continue;
      }
      ids.add(r.id);
      clean.push({ id: r.id, repo: r.repo, commit: r.commit, path: r.path, note: r.note ?? '', source: r.__line });
    }
  }
  const judgements: Judgement[] = [];
  for (const jf of [path.join(dir, 'judgements.tsv'), ...tsvFiles(path.join(dir, 'judgements'))].filter((f) => existsSync(f))) {
    for (const r of readTsv(jf)) {
      if ((r.kind !== 'clean' && r.kind !== 'fix') || !['TP', 'FP', 'debatable'].includes(r.verdict) || !/^\d+$/.test(r.line ?? '')) {
        problems.push(`${r.__line}: bad judgement`);
        continue;
      }
      judgements.push({ kind: r.kind, id: r.id, rule: r.rule, line: Number(r.line), verdict: r.verdict as Judgement['verdict'], note: r.note ?? '' });
    }
  }
  const halves = new Map<string, Half>();
  const hf = path.join(dir, 'halves.tsv');
  if (existsSync(hf)) {
    for (const r of readTsv(hf)) {
      if (r.half !== 'tune' && r.half !== 'check') problems.push(`${r.__line}: half must be tune or check`);
      else halves.set(r.repo.toLowerCase(), r.half);
    }
  }
  for (const repo of new Set([...real.map((r) => r.repo), ...clean.map((r) => r.repo)])) {
    if (!halves.has(repo.toLowerCase())) problems.push(`halves.tsv: no half for ${repo}`);
  }
  // cross-file.tsv of the corpus folder, else of this checkout (the list may arrive before the rows do).
  const crossFile = new Map<string, CrossFileRow>();
  const cf = [path.join(dir, 'cross-file.tsv'), path.join(corpusDir(), 'cross-file.tsv')].find((f) => existsSync(f));
  if (cf) {
    const realIds = new Set(real.map((r) => r.id));
    for (const r of readTsv(cf)) {
      if (!['python-import', 'include', 'reverse-include'].includes(r.needs)) problems.push(`${r.__line}: needs must be python-import, include or reverse-include`);
      // The checkout's list names rows of the checkout's corpus: another corpus folder need not hold them.
      else if (!realIds.has(r.id)) { if (cf === path.join(dir, 'cross-file.tsv')) problems.push(`${r.__line}: no real row ${r.id}`); }
      else crossFile.set(r.id, { id: r.id, needs: r.needs, fact: r.fact ?? '' });
    }
  }
  return { real, clean, judgements, halves, crossFile, problems };
}

/** The bare git directory of a repository under the mirrors folder (the layout `fetch` makes). */
export function mirrorOf(mirrors: string, repo: string): string | null {
  const stem = repo.replace('/', '+');
  const candidates = [path.join(mirrors, stem), path.join(mirrors, `${stem}.git`)];
  if (existsSync(mirrors)) {
    for (const d of readdirSync(mirrors)) if (d.toLowerCase() === stem.toLowerCase() || d.toLowerCase() === `${stem.toLowerCase()}.git`) candidates.push(path.join(mirrors, d));
  }
  for (const c of candidates) {
    if (!existsSync(c) || !statSync(c).isDirectory()) continue;
    if (existsSync(path.join(c, 'objects')) && existsSync(path.join(c, 'HEAD'))) return c;
    if (existsSync(path.join(c, '.git', 'objects'))) return path.join(c, '.git');
    // One level down (a bare repository inside the mirror's folder).
    for (const d of readdirSync(c)) {
      const sub = path.join(c, d);
      if (existsSync(path.join(sub, 'objects')) && existsSync(path.join(sub, 'HEAD'))) return sub;
    }
  }
  return null;
}

export class Git {
  constructor(readonly dir: string) {}
  run(args: string[]): string {
    return execFileSync('git', ['--git-dir', this.dir, ...args], { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024, stdio: ['ignore', 'pipe', 'pipe'] });
  }
  show(commit: string, p: string): string | null {
    try {
      return this.run(['show', `${commit}:${p}`]);
    } catch {
      return null;
    }
  }
  /** Many files of one commit with one `git cat-file --batch` (the project index reads in batches). */
  showMany(commit: string, paths: string[]): Map<string, string | null> {
    const out = new Map<string, string | null>();
    const ok = paths.filter((p) => !/[\n\0]/.test(p));
    for (const p of paths) out.set(p, null);
    if (!ok.length) return out;
    let buf: Buffer;
    try {
      buf = execFileSync('git', ['--git-dir', this.dir, 'cat-file', '--batch'], { input: ok.map((p) => `${commit}:${p}`).join('\n') + '\n', maxBuffer: 512 * 1024 * 1024, stdio: ['pipe', 'pipe', 'ignore'] });
    } catch {
      return out;
    }
    let at = 0;
    for (const p of ok) {
      const nl = buf.indexOf(10, at);
      if (nl < 0) break;
      const header = buf.subarray(at, nl).toString('utf8');
      at = nl + 1;
      const m = /^[0-9a-f]+ (\w+) (\d+)$/.exec(header);
      if (!m) continue; // "<name> missing"
      const size = Number(m[2]);
      if (m[1] === 'blob') out.set(p, buf.subarray(at, at + size).toString('utf8'));
      at += size + 1;
    }
    return out;
  }
  diff(from: string, to: string, p: string): string {
    return this.run(['diff', '--no-color', '--no-ext-diff', '-U3', from, to, '--', p]);
  }
}

export interface FindingOut {
  rule: string;
  line: number;
  endLine: number;
  severity: string;
  message: string;
  also?: string[];
  /** Sites of a grouped finding (engine/group.ts); the row is caught when any of them covers it. */
  members?: Array<{ line: number; endLine: number }>;
}
export interface RowResult {
  id: string;
  repo: string;
  half: Half;
  rule: string;
  family: string;
  status: 'ok' | 'error';
  error?: string;
  skipped?: string;
  hitFamily: boolean;
  hitExact: boolean;
  /** Findings of the introducing diff (all rules, on added lines). */
  intro: FindingOut[];
  /** Same-family findings on the fix's added lines. */
  fix: FindingOut[];
}
export interface CleanResult {
  id: string;
  repo: string;
  half: Half;
  path: string;
  lines: number;
  status: 'ok' | 'error';
  error?: string;
  skipped?: string;
  findings: Array<FindingOut & { verdict: Judgement['verdict'] | 'unjudged' }>;
}

function out(f: Finding): FindingOut {
  return {
    rule: f.ruleId,
    line: f.line,
    endLine: f.endLine,
    severity: f.severity,
    message: f.message,
    ...(f.also?.length ? { also: f.also } : {}),
    ...(f.members ? { members: f.members.map((m) => ({ line: m.line, endLine: m.endLine })) } : {}),
  };
}

/** The lines a finding speaks for: its range, or its first line when the range is a whole body. */
function covers(f: FindingOut, start: number, end: number): boolean {
  return (f.members ?? [f]).some((m) => {
    const last = m.endLine - m.line > 40 ? m.line : m.endLine;
    return m.line <= end && last >= start;
  });
}

/** A judgement names one line of a finding: the anchor, or any site of a grouped one. */
function atLine(f: FindingOut, line: number): boolean {
  return f.line === line || (f.members ?? []).some((m) => m.line === line);
}

const fileReader = (git: Git, commit: string) => async (p: string) => git.show(commit, p);
/** The project index reads the other files of the repository at the same revision, in one batch. */
const filesReader = (git: Git, commit: string) => async (paths: string[]) => git.showMany(commit, paths);

/** Rows of one fix and path share their two reviews. */
const reviews = new Map<string, Promise<ReviewOutput>>();
function cachedReview(git: Git, from: string, to: string, p: string, config: ResolvedConfig): Promise<ReviewOutput> | null {
  const key = `${git.dir}\0${from}\0${to}\0${p}`;
  let got = reviews.get(key);
  if (!got) {
    const diff = git.diff(from, to, p);
    if (!diff.trim()) return null;
    got = review({ diff, config, scope: 'added', readFile: fileReader(git, to), readFiles: filesReader(git, to), workers: 0 });
    reviews.set(key, got);
  }
  return got;
}

export async function runRow(row: RealRow, git: Git, config: ResolvedConfig, half: Half): Promise<RowResult> {
  const res: RowResult = { id: row.id, repo: row.repo, half, rule: row.rule, family: row.family, status: 'ok', hitFamily: false, hitExact: false, intro: [], fix: [] };
  try {
    const pending = cachedReview(git, row.fix, row.parent, row.path, config);
    if (!pending) throw new Error(`git diff ${row.fix.slice(0, 10)} ${row.parent.slice(0, 10)} -- ${row.path} is empty`);
    const intro = await pending;
    const file = intro.result.files.find((f) => f.path === row.path);
    if (file?.skipped) res.skipped = file.skipped;
    res.intro = intro.result.findings.filter((f) => f.path === row.path).map(out);
    const added = intro.diff.files.find((f) => f.path === row.path)?.added ?? new Set<number>();
    let anchored = false;
    for (let l = row.start; l <= row.end; l++) if (added.has(l)) anchored = true;
    if (!anchored) res.error = `lines ${row.start}-${row.end} hold no added line of the introducing diff`;
    const inRange = res.intro.filter((f) => covers(f, row.start, row.end));
    res.hitFamily = inRange.some((f) => familyOf(f.rule) === row.family || (f.also ?? []).some((a) => familyOf(a) === row.family));
    res.hitExact = inRange.some((f) => f.rule === row.rule || (f.also ?? []).includes(row.rule));
    const fixPending = git.show(row.fix, row.path) !== null ? cachedReview(git, row.parent, row.fix, row.path, config) : null;
    if (fixPending) {
      const fx = await fixPending;
      res.fix = fx.result.findings.filter((f) => f.path === row.path && familyOf(f.ruleId) === row.family).map(out);
    }
  } catch (e) {
    res.status = 'error';
    res.error = (e as Error).message.split('\n')[0];
  }
  return res;
}

export async function runClean(row: CleanRow, git: Git, config: ResolvedConfig, half: Half, judgements: Judgement[]): Promise<CleanResult> {
  const res: CleanResult = { id: row.id, repo: row.repo, half, path: row.path, lines: 0, status: 'ok', findings: [] };
  try {
    const text = git.show(row.commit, row.path);
    if (text === null) throw new Error(`${row.commit.slice(0, 10)}:${row.path} not in the mirror`);
    const lines = text.split('\n');
    if (lines[lines.length - 1] === '') lines.pop();
    res.lines = lines.length;
    const diff = `diff --git a/${row.path} b/${row.path}\nnew file mode 100644\n--- /dev/null\n+++ b/${row.path}\n@@ -0,0 +1,${lines.length} @@\n` + lines.map((l) => '+' + l).join('\n') + '\n';
    const r = await review({ diff, config, scope: 'added', workers: 0 });
    const file = r.result.files.find((f) => f.path === row.path);
    if (file?.skipped) res.skipped = file.skipped;
    res.findings = r.result.findings.map((f) => {
      const o = out(f);
      const j = judgements.find((x) => x.kind === 'clean' && x.id === row.id && x.rule === f.ruleId && atLine(o, x.line));
      return { ...o, verdict: j?.verdict ?? 'unjudged' };
    });
  } catch (e) {
    res.status = 'error';
    res.error = (e as Error).message.split('\n')[0];
  }
  return res;
}

export interface Summary {
  rows: number;
  recallFamily: number;
  recallExact: number;
  fixSameFamily: number;
  cleanLines: number;
  cleanFindings: number;
  cleanFp: number;
  cleanFpPerKloc: number;
  cleanJudgedFpPerKloc: number;
}

export function summarize(rows: RowResult[], clean: CleanResult[]): Summary {
  const ok = rows.filter((r) => r.status === 'ok');
  const n = ok.length || 1;
  const lines = clean.reduce((a, c) => a + c.lines, 0);
  const all = clean.flatMap((c) => c.findings);
  const fp = all.filter((f) => f.verdict === 'FP' || f.verdict === 'unjudged').length;
  const judgedFp = all.filter((f) => f.verdict === 'FP').length;
  return {
    rows: ok.length,
    recallFamily: ok.filter((r) => r.hitFamily).length / n,
    recallExact: ok.filter((r) => r.hitExact).length / n,
    fixSameFamily: ok.filter((r) => r.fix.length > 0).length / n,
    cleanLines: lines,
    cleanFindings: all.length,
    cleanFp: fp,
    cleanFpPerKloc: lines ? (fp * 1000) / lines : 0,
    cleanJudgedFpPerKloc: lines ? (judgedFp * 1000) / lines : 0,
  };
}

const f2 = (x: number) => x.toFixed(2);
const f3 = (x: number) => x.toFixed(3);

export function summaryLine(s: Summary): string {
  return `recall_family=${f3(s.recallFamily)} recall_exact=${f3(s.recallExact)} fix_same_family=${f3(s.fixSameFamily)} clean_fp_per_kloc=${f2(s.cleanFpPerKloc)}`;
}

function table(title: string, keyOf: (r: RowResult) => string, rows: RowResult[]): string[] {
  const groups = new Map<string, RowResult[]>();
  for (const r of rows) {
    const k = keyOf(r);
    groups.set(k, [...(groups.get(k) ?? []), r]);
  }
  const out = [`${title}: rows  family  exact`];
  for (const [k, g] of [...groups].sort((a, b) => b[1].length - a[1].length || a[0].localeCompare(b[0]))) {
    const fam = g.filter((r) => r.hitFamily).length;
    const ex = g.filter((r) => r.hitExact).length;
    out.push(`  ${k.padEnd(58)} ${String(g.length).padStart(4)}  ${`${fam}`.padStart(3)} ${f2(fam / g.length)}  ${`${ex}`.padStart(3)} ${f2(ex / g.length)}`);
  }
  return out;
}

function parseArgs(argv: string[]) {
  const program = new Command('corpus')
    .description('Recall and precision of the review on the development corpus of real fixes')
    .requiredOption('--mirrors <dir>', 'folder of bare git mirrors (owner+name), as the fetch tool lays them out')
    .option('--corpus <dir>', 'the corpus folder (default: corpus/ of this checkout)')
    .option('--half <half>', 'which half the last line reports: check, tune or all', (v) => {
      if (!['check', 'tune', 'all'].includes(v)) throw new InvalidArgumentError('check, tune or all');
      return v;
    }, 'check')
    .option('--only <ids>', 'comma-separated row ids')
    .option('--repo <repo>', 'only rows of this repository')
    .option('--json <file>', 'write every row result as JSON')
    .option('--preview', 'enable preview rules', false)
    .option('--validate', 'check the corpus files and the mirrors, review nothing', false)
    .option('--quiet', 'print the figures only, not the lists', false)
    .exitOverride()
    .configureOutput({ writeErr: (s) => process.stderr.write(s) });
  program.parse(argv, { from: 'user' });
  return program.opts<{ corpus?: string; mirrors: string; half: 'check' | 'tune' | 'all'; only?: string; repo?: string; json?: string; preview: boolean; validate: boolean; quiet: boolean }>();
}

export async function main(argv: string[]): Promise<number> {
  let opts: ReturnType<typeof parseArgs>;
  try {
    opts = parseArgs(argv);
  } catch (e) {
    const code = (e as { exitCode?: number }).exitCode;
    return code === 0 ? 0 : 2;
  }
  if (!existsSync(opts.mirrors)) {
    console.error(`corpus: --mirrors ${opts.mirrors}: no such folder`);
    return 2;
  }
  const corpus = loadCorpus(opts.corpus ? path.resolve(opts.corpus) : corpusDir());
  for (const p of corpus.problems) console.error(`corpus: ${p}`);
  const only = opts.only ? new Set(opts.only.split(',')) : null;
  const pick = <T extends { id: string; repo: string }>(r: T) => (!only || only.has(r.id)) && (!opts.repo || r.repo.toLowerCase() === opts.repo.toLowerCase());
  const real = corpus.real.filter(pick);
  const clean = corpus.clean.filter(pick);
  const gits = new Map<string, Git | null>();
  const gitOf = (repo: string) => {
    if (!gits.has(repo)) {
      const m = mirrorOf(opts.mirrors, repo);
      gits.set(repo, m ? new Git(m) : null);
    }
    return gits.get(repo)!;
  };
  const halfOf = (repo: string): Half => corpus.halves.get(repo.toLowerCase()) ?? 'tune';
  const config = resolveConfig(opts.preview ? { enable_preview: true } : {}, CHECKS.map((c) => c.id));

  if (opts.validate) {
    let bad = 0;
    for (const r of real) {
      const git = gitOf(r.repo);
      const msg = !git ? `no mirror of ${r.repo}` : validateRow(r, git);
      if (msg) {
        bad++;
        console.error(`corpus: ${r.source} ${r.id}: ${msg}`);
      }
    }
    for (const c of clean) {
      const git = gitOf(c.repo);
      const msg = !git ? `no mirror of ${c.repo}` : git.show(c.commit, c.path) === null ? `${c.commit.slice(0, 10)}:${c.path} not in the mirror` : null;
      if (msg) {
        bad++;
        console.error(`corpus: ${c.source} ${c.id}: ${msg}`);
      }
    }
    console.log(`${real.length} rows, ${clean.length} clean files, ${bad} problem(s)`);
    return bad ? 1 : 0;
  }

  const t0 = performance.now();
  const rows: RowResult[] = [];
  for (const r of real) {
    const git = gitOf(r.repo);
    if (!git) {
      rows.push({ id: r.id, repo: r.repo, half: halfOf(r.repo), rule: r.rule, family: r.family, status: 'error', error: `no mirror of ${r.repo} under ${opts.mirrors}`, hitFamily: false, hitExact: false, intro: [], fix: [] });
      continue;
    }
    rows.push(await runRow(r, git, config, halfOf(r.repo)));
  }
  const cleans: CleanResult[] = [];
  for (const c of clean) {
    const git = gitOf(c.repo);
    if (!git) {
      cleans.push({ id: c.id, repo: c.repo, half: halfOf(c.repo), path: c.path, lines: 0, status: 'error', error: `no mirror of ${c.repo}`, findings: [] });
      continue;
    }
    cleans.push(await runClean(c, git, config, halfOf(c.repo), corpus.judgements));
  }
  const secs = (performance.now() - t0) / 1000;

  const byId = new Map(real.map((r) => [r.id, r]));
  const lines: string[] = [];
  const halves: Array<Half | 'all'> = ['tune', 'check', 'all'];
  for (const h of halves) {
    const rs = rows.filter((r) => h === 'all' || r.half === h);
    const cs = cleans.filter((c) => h === 'all' || c.half === h);
    if (!rs.length && !cs.length) continue;
    lines.push('', `== ${h} half: ${rs.length} rows from ${new Set(rs.map((r) => r.repo)).size} repositories, ${cs.length} clean files ==`);
    if (!opts.quiet) {
      lines.push(...table('by family', (r) => r.family, rs), ...table('by rule', (r) => r.rule, rs), ...table('by repository', (r) => r.repo, rs));
      const xs = rs.filter((r) => corpus.crossFile.has(r.id));
      if (xs.length) lines.push(...table('rows that need another file (cross-file.tsv), by how it is reached', (r) => corpus.crossFile.get(r.id)!.needs, xs));
    }
  }
  if (!opts.quiet) {
    const errs = rows.filter((r) => r.status === 'error' || r.error);
    if (errs.length) {
      lines.push('', `rows with problems (${errs.length}):`);
      for (const r of errs) lines.push(`  ${r.id} ${r.status === 'error' ? 'ERROR' : 'warning'}: ${r.error}`);
    }
    const skipped = rows.filter((r) => r.skipped);
    if (skipped.length) {
      lines.push('', `rows whose file the review skipped (${skipped.length}):`);
      for (const r of skipped) lines.push(`  ${r.id} ${byId.get(r.id)?.path}: ${r.skipped}`);
    }
    lines.push('', 'missed rows (family), with what fired on the introducing diff:');
    for (const r of rows.filter((x) => x.status === 'ok' && !x.hitFamily)) {
      const row = byId.get(r.id)!;
      const near = r.intro.map((f) => `${f.rule}@${f.line}`).join(', ');
      lines.push(`  ${r.id} [${r.half}] ${row.rule} ${row.path}:${row.start}-${row.end}${near ? `  fired: ${near}` : ''}`);
    }
    lines.push('', 'fix diffs with same-family findings on their added lines:');
    for (const r of rows.filter((x) => x.fix.length)) {
      for (const f of r.fix) {
        const j = corpus.judgements.find((x) => x.kind === 'fix' && x.id === r.id && x.rule === f.rule && atLine(f, x.line));
        lines.push(`  ${r.id} [${r.half}] ${f.rule}@${f.line} ${j ? j.verdict : 'unjudged'}: ${f.message.slice(0, 140)}`);
      }
    }
    lines.push('', 'clean-file findings:');
    for (const c of cleans) {
      if (c.status === 'error') lines.push(`  ${c.id} ERROR: ${c.error}`);
      if (c.skipped) lines.push(`  ${c.id} skipped: ${c.skipped}`);
      for (const f of c.findings) lines.push(`  ${c.id} [${c.half}] ${c.path}:${f.line} ${f.rule} ${f.verdict}: ${f.message.slice(0, 140)}`);
    }
  }
  lines.push('', `reviewed ${rows.length} rows and ${cleans.length} clean files in ${secs.toFixed(1)} s`);
  for (const h of halves) {
    const s = summarize(
      rows.filter((r) => h === 'all' || r.half === h),
      cleans.filter((c) => h === 'all' || c.half === h),
    );
    const xs = rows.filter((r) => (h === 'all' || r.half === h) && r.status === 'ok' && corpus.crossFile.has(r.id));
    if (xs.length) lines.push(`${h}: cross_file_rows=${xs.length} cross_file_family=${xs.filter((r) => r.hitFamily).length} cross_file_exact=${xs.filter((r) => r.hitExact).length}`);
    lines.push(`${h}: rows=${s.rows} clean_kloc=${(s.cleanLines / 1000).toFixed(1)} clean_findings=${s.cleanFindings} clean_judged_fp_per_kloc=${f2(s.cleanJudgedFpPerKloc)} ${summaryLine(s)}`);
  }
  const last = summarize(
    rows.filter((r) => opts.half === 'all' || r.half === opts.half),
    cleans.filter((c) => opts.half === 'all' || c.half === opts.half),
  );
  lines.push(summaryLine(last));
  console.log(lines.join('\n'));
  if (opts.json) writeFileSync(opts.json, JSON.stringify({ rows, clean: cleans }, null, 1));
  return 0;
}

function validateRow(r: RealRow, git: Git): string | null {
  try {
    const parent = git.run(['rev-parse', `${r.fix}^`]).trim();
    if (parent !== r.parent) return `parent ${r.parent.slice(0, 10)} is not the first parent of ${r.fix.slice(0, 10)} (${parent.slice(0, 10)})`;
  } catch {
    return `commit ${r.fix.slice(0, 10)} not in the mirror`;
  }
  const text = git.show(r.parent, r.path);
  if (text === null) return `${r.parent.slice(0, 10)}:${r.path} not in the mirror`;
  const n = text.split('\n').length;
  if (r.end > n) return `lines ${r.start}-${r.end} past the end of the file (${n} lines)`;
  const diff = git.diff(r.fix, r.parent, r.path);
  // The '+' lines of the introducing diff, by their line number at the parent.
  const exact = new Set<number>();
  let line = 0;
  for (const l of diff.split('\n')) {
    const h = /^@@ -\d+(?:,\d+)? \+(\d+)/.exec(l);
    if (h) {
      line = Number(h[1]);
      continue;
    }
    if (!line) continue;
    if (l.startsWith('+')) exact.add(line++);
    else if (l.startsWith(' ')) line++;
  }
  for (let l = r.start; l <= r.end; l++) if (exact.has(l)) return null;
  return `lines ${r.start}-${r.end} hold no line the fix removed or changed`;
}

const isMain = process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url);
if (isMain) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (e) => {
      console.error(`corpus: ${(e as Error).message.split('\n')[0]}`);
      process.exit(2);
    },
  );
}

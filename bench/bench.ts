/**
 * `npm run bench`: raw tree-sitter parse throughput vs full review throughput on the same corpus
 * (bench/corpus.ts), in one process. Goal (engine issue): review ≥ 0.5 × raw parse throughput.
 * Timings are printed and written to bench/corpus/results.json; nothing asserts them.
 *
 *   node dist/bench/bench.js [--runs=3] [--lang-runs=1] [--only=parse|review|stages] [--no-langs] [--stages]
 *
 * The per-language rows run each language's subset once more (--lang-runs, no extra warm-up: the
 * code is warm by then). --stages adds a one-pass breakdown of review() into its steps;
 * dist/bench/profile.js gives the function-level picture.
 *
 * MB here is 10^6 bytes; throughput is corpus source bytes / wall time.
 */
import { createRequire } from 'node:module';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import os from 'node:os';
import path from 'node:path';
import v8 from 'node:v8';
import vm from 'node:vm';
import Parser from 'tree-sitter';
import Cpp from 'tree-sitter-cpp';
import Python from 'tree-sitter-python';
import { activeChecks, review } from '../src/review/pipeline.js';
import { resolveConfig, type ResolvedConfig } from '../src/config/schema.js';
import { CHECKS } from '../checks/registry.generated.js';
import { parseUnifiedDiff, hunkNewText } from '../src/diff/model.js';
import { detectLanguage } from '../src/sources/detect.js';
import { buildSources } from '../src/sources/build.js';
import { maskCuda } from '../src/sources/cuda-mask.js';
import { normalizeLuisa } from '../src/sources/luisa.js';
import { extractKernels } from '../src/sources/nvrtc.js';
import { cudaGrammarAvailable, errorRegions } from '../src/sources/parsers.js';
import { runChecks } from '../src/engine/runner.js';
import { scanSuppressions } from '../src/engine/suppress.js';
import { pythonModel } from '../src/analysis/python.js';
import type { Language, ReviewError } from '../src/core/types.js';
import { addedFilesDiff, defaultCorpusDir, ensureCorpus, readCorpusFile, type Corpus, type CorpusFile, type CorpusLang } from './corpus.js';
import { loadMirrors, MirrorError } from './mirrors.js';

const require = createRequire(import.meta.url);
const Cuda = require('tree-sitter-cuda') as Parser.Language;

const LANGS: CorpusLang[] = ['cuda', 'python', 'luisa'];

// ---------------------------------------------------------------------------------------------
// Options

function opt(name: string): string | undefined {
  const a = process.argv.find((x) => x === `--${name}` || x.startsWith(`--${name}=`));
  if (!a) return undefined;
  return a.includes('=') ? a.slice(a.indexOf('=') + 1) : '';
}
const MIRRORS = opt('mirrors') || (process.argv.includes('--mirrors') ? (process.argv[process.argv.indexOf('--mirrors') + 1] ?? '') : undefined);
/** --many=N: a PR of N small files (the smallest corpus files, repeated under copyK/ prefixes when there are fewer). */
const MANY = opt('many') !== undefined ? Math.max(1, Number(opt('many')) || 3000) : 0;
const ONE_LINE = opt('one-line') !== undefined;
/** Real-code runs are long: one timed pass unless --runs says otherwise. */
const RUNS = Math.max(1, Number(opt('runs') ?? (MIRRORS ? 1 : 3)));
/** Parse and review each in a process of its own, so each peak RSS is that phase's alone (default with --mirrors/--many). */
const ISOLATE = opt('no-isolate') === undefined && (MIRRORS !== undefined || MANY > 0);
const ONLY = opt('only');
const DO_LANGS = opt('no-langs') === undefined && !ONLY && !MIRRORS && !MANY;
const DO_STAGES = opt('stages') !== undefined || ONLY === 'stages';
const LANG_RUNS = Math.max(1, Number(opt('lang-runs') ?? 1));

// A full collection between passes, so one pass does not pay for the previous one's garbage.
v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;

const MB = 1e6;
const rssMB = () => process.resourceUsage().maxRSS / 1024; // maxRSS is in KiB
const rssNow = () => process.memoryUsage().rss / 1048576;

interface Timing {
  /** Wall seconds per timed pass. */
  runs: number[];
  best: number;
  median: number;
  /** Process CPU seconds (user + system, all threads) per pass: robust to a busy machine. */
  cpu: number[];
  cpuBest: number;
  /** Resident set size right after each pass returned, before anything was collected (MB). */
  rssEnd: number[];
}

function summarize(runs: number[], cpu: number[], rssEnd: number[]): Timing {
  const s = [...runs].sort((a, b) => a - b);
  return { runs, best: s[0], median: s[Math.floor(s.length / 2)], cpu, cpuBest: Math.min(...cpu), rssEnd };
}

/**
 * Collect garbage and let finalizers run. tree-sitter's native trees are freed by N-API
 * finalizers that only run once the event loop turns: a synchronous loop (or one long async
 * function without a macrotask boundary) keeps every tree it parsed alive.
 */
async function settle(): Promise<void> {
  for (let i = 0; i < 2; i++) {
    gc();
    await new Promise((r) => setImmediate(r));
  }
}

async function timeIt(fn: () => unknown | Promise<unknown>, runs = RUNS, warm = !MIRRORS && !MANY): Promise<Timing> {
  if (warm) {
    await fn();
  }
  const out: number[] = [];
  const cpu: number[] = [];
  const rssEnd: number[] = [];
  for (let i = 0; i < runs; i++) {
    await settle();
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    await fn();
    out.push((performance.now() - t0) / 1000);
    const c = process.cpuUsage(c0);
    cpu.push((c.user + c.system) / 1e6);
    rssEnd.push(process.memoryUsage().rss / 1048576);
  }
  await settle();
  return summarize(out, cpu, rssEnd);
}

const mbps = (bytes: number, s: number) => bytes / MB / s;

// ---------------------------------------------------------------------------------------------
// Corpus

interface Loaded extends CorpusFile {
  text: string;
}

function loadTexts(c: Corpus): Loaded[] {
  return c.files.map((f) => ({ ...f, text: readCorpusFile(c, f) }));
}

const bytesOf = (fs: Loaded[]) => fs.reduce((a, f) => a + f.bytes, 0);

// ---------------------------------------------------------------------------------------------
// Raw parse

const parsers: Record<CorpusLang, Parser> = (() => {
  const mk = (lang: Parser.Language) => {
    const p = new Parser();
    p.setLanguage(lang);
    return p;
  };
  return { cuda: mk(Cuda), python: mk(Python as Parser.Language), luisa: mk(Cpp as Parser.Language) };
})();

/** Parse every file; returns how many trees have an ERROR/MISSING node, per language. */
function parseAll(files: Loaded[]): Record<string, number> {
  const withErrors: Record<string, number> = {};
  for (const f of files) {
    const tree = parsers[f.lang].parse(f.text, null, { bufferSize: f.text.length * 2 + 16 });
    if (tree.rootNode.hasError) withErrors[f.lang] = (withErrors[f.lang] ?? 0) + 1;
  }
  return withErrors;
}

// ---------------------------------------------------------------------------------------------
// Stage breakdown: the pipeline's per-file steps, timed one by one with the same exported
// functions review() uses (approximate: a re-implementation of pipeline.reviewFile for added files).

interface Stages {
  [k: string]: number;
}

function stageBreakdown(diffText: string, config: ResolvedConfig): { stages: Stages; byLang: Record<string, Stages> } {
  const st: Stages = {};
  const byLang: Record<string, Stages> = {};
  const add = (k: string, lang: string, ms: number) => {
    st[k] = (st[k] ?? 0) + ms;
    const l = (byLang[lang] ??= {});
    l[k] = (l[k] ?? 0) + ms;
  };
  const clock = <T>(k: string, lang: string, fn: () => T): T => {
    const t0 = performance.now();
    const r = fn();
    add(k, lang, performance.now() - t0);
    return r;
  };
  const t0 = performance.now();
  const diff = parseUnifiedDiff(diffText);
  add('diff: parseUnifiedDiff', 'all', performance.now() - t0);
  const checks = activeChecks(config);
  const errors: ReviewError[] = [];
  const grammar = cudaGrammarAvailable() ? 'cuda' : 'cpp';
  for (const file of diff.files) {
    const hunkText = clock('file: hunkNewText + join', '?', () => file.hunks.map((h) => hunkNewText(h).text).join('\n'));
    const det = clock('file: detectLanguage', '?', () => detectLanguage(file.path, hunkText, config.vocab.kernel_macros));
    const language = det.language as Language;
    const L = language === 'luisa-dsl' ? 'luisa' : language;
    const h = file.hunks[0];
    const unit = clock('file: unit text + lines split', L, () => {
      const { text, firstLine } = hunkNewText(h);
      const lines: string[] = [];
      text.split('\n').forEach((l, i) => {
        if (i < h.newLines) lines[firstLine - 1 + i] = l;
      });
      return { text, firstLine, label: 'file', wholeFile: true, lines };
    });
    clock('file: longest line + vocabulary scan', L, () => {
      unit.lines.reduce((m, l) => Math.max(m, l?.length ?? 0), 0);
      return config.vocab.vibespatial_helpers.some((x) => hunkText.includes(x.split('.').pop() ?? x));
    });
    const built = clock('sources: buildSources (total)', L, () => buildSources(file.path, language, unit, config.limits.fileTimeoutMs));
    // Re-run the pieces of buildSources separately to apportion its time.
    if (language === 'cuda') clock('sources: maskCuda', L, () => maskCuda(unit.text, grammar));
    if (language === 'luisa-dsl') clock('sources: normalizeLuisa', L, () => normalizeLuisa(unit.text));
    if (language === 'python') {
      const ks = clock('sources: extractKernels', L, () => extractKernels(built[0].root, built[0].text));
      for (const k of ks) clock('sources: maskCuda (kernel strings)', L, () => maskCuda(k.text, grammar));
    }
    for (const s of built) clock('sources: errorRegions', L, () => errorRegions(s.root, s.text.length));
    const applicable = checks.filter((c) => c.languages.some((l) => l === language || (language === 'python' && l === 'nvrtc-in-python')));
    for (const s of built) {
      const forSource = applicable.filter((c) => c.languages.includes(s.language));
      if (!forSource.length) continue;
      if (s.language === 'python') clock('checks: pythonModel.compute (re-run)', L, () => pythonModel.compute(s, config));
      clock('checks: runChecks (total)', L, () => runChecks(s, forSource, config, errors));
    }
    clock('file: scanSuppressions', L, () => scanSuppressions(unit.lines));
  }
  return { stages: st, byLang };
}

// ---------------------------------------------------------------------------------------------

interface BenchCorpus {
  label: string;
  digest: string;
  seed: string | null;
  /** Where results*.json go. */
  root: string;
  suffix: string;
  files: Loaded[];
}

async function getCorpus(): Promise<BenchCorpus> {
  let c: BenchCorpus;
  if (MIRRORS !== undefined) {
    if (!MIRRORS) throw new MirrorError('--mirrors needs a directory (e.g. --mirrors /work/.mirror)');
    const m = await loadMirrors(MIRRORS);
    // --repos=owner/name,...: a subset of the list.
    const only = opt('repos')?.split(',').map((r) => r.replace('/', '+') + '/');
    if (only) m.files = m.files.filter((f) => only.some((r) => f.path.startsWith(r)));
    const root = defaultCorpusDir();
    mkdirSync(root, { recursive: true });
    c = { label: 'real-code (bench/mirrors.json)', digest: m.digest, seed: null, root, suffix: '-mirrors', files: m.files };
  } else {
    const corpus = ensureCorpus(undefined, undefined, undefined, (x) => console.log(x));
    c = { label: 'synthetic', digest: corpus.digest, seed: corpus.seed, root: corpus.root, suffix: '', files: loadTexts(corpus) };
  }
  if (MANY) {
    // The smallest files, in a stable order, repeated under copyK/ when the corpus has fewer.
    const small = [...c.files].sort((a, b) => a.bytes - b.bytes || a.path.localeCompare(b.path)).slice(0, Math.min(MANY, 1000));
    const files: Loaded[] = [];
    for (let i = 0; i < MANY; i++) {
      const f = small[i % small.length];
      const k = Math.floor(i / small.length);
      files.push({ ...f, path: k ? `copy${k}/${f.path}` : f.path });
    }
    c = { ...c, label: `${MANY}-small-file PR from the ${c.label}`, suffix: `${c.suffix}-many${MANY}`, files };
  }
  return c;
}

/** Each phase in a child process of its own (same options, --only=PHASE), then one summary of both. */
async function isolated(c: BenchCorpus): Promise<void> {
  const me = fileURLToPath(import.meta.url);
  const got: Record<string, Record<string, unknown>> = {};
  for (const phase of ['parse', 'review']) {
    const r = spawnSync(process.execPath, [me, ...process.argv.slice(2), `--only=${phase}`], { stdio: 'inherit' });
    if (r.status !== 0) throw new Error(`bench: the ${phase} phase exited ${r.status ?? r.signal}`);
    got[phase] = JSON.parse(readFileSync(path.join(c.root, `results${c.suffix}-${phase}.json`), 'utf8')) as Record<string, unknown>;
  }
  const p = got.parse.parse as Timing;
  const r = got.review.review as Timing;
  const pr = (got.parse.rssMB as { peak: number }).peak;
  const rr = (got.review.rssMB as { peak: number }).peak;
  const total = c.files.reduce((a, f) => a + f.bytes, 0);
  const line = '═'.repeat(86);
  console.log(line);
  console.log(`${c.label}: ${c.files.length} files, ${(total / MB).toFixed(2)} MB, each phase in its own process (best of ${RUNS})`);
  console.log(`wall         raw parse ${p.best.toFixed(2)} s, review ${r.best.toFixed(2)} s: review = ${(r.best / p.best).toFixed(2)}× the raw parse (throughput ratio ${(p.best / r.best).toFixed(3)})`);
  console.log(`CPU          raw parse ${p.cpuBest.toFixed(2)} s, review ${r.cpuBest.toFixed(2)} s (all threads): ${(r.cpuBest / p.cpuBest).toFixed(2)}×`);
  console.log(`peak RSS     raw parse ${pr.toFixed(0)} MB, review ${rr.toFixed(0)} MB`);
  console.log(line);
  const out = path.join(c.root, `results${c.suffix}.json`);
  writeFileSync(out, JSON.stringify({ date: new Date().toISOString(), corpus: c.label, digest: c.digest, files: c.files.length, bytes: total, parse: p, review: r, peakRssMB: { parse: pr, review: rr }, sanity: got.review.sanity }, null, 2));
  console.log(`results → ${path.relative(process.cwd(), out)}`);
}

/**
 * One-line-change mode: a large CUDA file of the corpus gets a one-line edit (a trailing comment
 * on a line with a finding, see below); the review of that one-line diff (`--scope added`,
 * the post-change file read as the App reads it) is timed against the whole-file review of the
 * same post-change file (an all-added diff), alternating, in this process. Also checks that both
 * report the same findings on the changed line.
 */
async function oneLine(files: Loaded[], root: string): Promise<void> {
  const lines = (t: string) => t.split('\n').length;
  const cuda = files.filter((f) => f.lang === 'cuda').sort((a, b) => lines(b.text) - lines(a.text) || a.path.localeCompare(b.path));
  if (!cuda.length) throw new Error('bench: no CUDA file in the corpus for --one-line');
  const config = resolveConfig({}, CHECKS.map((c) => c.id));
  // The longest of the five longest CUDA files that has findings, edited on the finding nearest its
  // middle (so the identity check compares something); else the longest, on a statement near its middle.
  let f = cuda[0];
  let at = -1;
  for (const c of cuda.slice(0, 5)) {
    const found = (await review({ diff: addedFilesDiff([c]), config, scope: 'added' })).result.findings;
    const ls = c.text.split('\n');
    const ok = found.map((x) => x.line - 1).filter((k) => !/\\\s*$/.test(ls[k] ?? '\\'));
    if (ok.length) {
      f = c;
      const mid = ls.length / 2;
      at = ok.sort((a, b) => Math.abs(a - mid) - Math.abs(b - mid))[0];
      break;
    }
  }
  const old = f.text.split('\n');
  if (at < 0) {
    at = Math.floor(old.length / 2);
    for (let d = 0; d < old.length; d++) {
      const cand = [at + d, at - d].find((k) => k >= 0 && k < old.length && /^\s+\S.*;\s*$/.test(old[k]) && !old[k].includes('//') && !old[k].includes('\\'));
      if (cand !== undefined) {
        at = cand;
        break;
      }
    }
  }
  const edited = [...old];
  edited[at] = `${old[at]}  // one-line edit`;
  const after = edited.join('\n');
  const lineNo = at + 1;
  const ctx = 3;
  const lo = Math.max(0, at - ctx);
  const hi = Math.min(old.length - 1, at + ctx);
  const body: string[] = [];
  for (let k = lo; k <= hi; k++) {
    if (k === at) body.push('-' + old[k], '+' + edited[k]);
    else body.push(' ' + old[k]);
  }
  const n = hi - lo + 1;
  const oneDiff = `diff --git a/${f.path} b/${f.path}\n--- a/${f.path}\n+++ b/${f.path}\n@@ -${lo + 1},${n} +${lo + 1},${n} @@\n${body.join('\n')}\n`;
  const wholeDiff = addedFilesDiff([{ path: f.path, text: after }]);
  const readFile = async () => after;
  const one = () => review({ diff: oneDiff, config, scope: 'added', readFile });
  const whole = () => review({ diff: wholeDiff, config, scope: 'added' });
  const key = (x: { ruleId: string; line: number; column: number; message: string }) => `${x.ruleId}@${x.line}:${x.column} ${x.message}`;
  const a = (await one()).result;
  const b = (await whole()).result;
  const onLine = (fs: typeof a.findings) => fs.filter((x) => x.line <= lineNo && lineNo <= x.endLine).map(key).sort();
  const same = JSON.stringify(onLine(a.findings)) === JSON.stringify(onLine(b.findings));
  const tOne: number[] = [];
  const tWhole: number[] = [];
  const cOne: number[] = [];
  const cWhole: number[] = [];
  const runs = Math.max(RUNS, 3);
  for (let i = 0; i < runs; i++) {
    for (const [fn, t, c] of [
      [whole, tWhole, cWhole],
      [one, tOne, cOne],
    ] as const) {
      await settle();
      const c0 = process.cpuUsage();
      const t0 = performance.now();
      await fn();
      t.push((performance.now() - t0) / 1000);
      const u = process.cpuUsage(c0);
      c.push((u.user + u.system) / 1e6);
    }
  }
  const best = (x: number[]) => Math.min(...x);
  console.log(`one-line change: ${f.path} (${old.length} lines, ${(f.bytes / 1e3).toFixed(0)} kB), line ${lineNo} edited; best of ${runs}, alternating`);
  console.log(`wall         whole-file review ${best(tWhole).toFixed(3)} s, one-line diff (--scope added) ${best(tOne).toFixed(3)} s: ratio ${(best(tOne) / best(tWhole)).toFixed(3)} (goal ≤ 0.25)`);
  console.log(`CPU          whole-file ${best(cWhole).toFixed(3)} s, one-line ${best(cOne).toFixed(3)} s: ratio ${(best(cOne) / best(cWhole)).toFixed(3)}`);
  console.log(`findings     on the changed line: one-line ${onLine(a.findings).length}, whole-file ${onLine(b.findings).length}: ${same ? 'identical' : 'DIFFERENT'}; whole file ${b.findings.length} in all`);
  console.log(`peak RSS     ${rssMB().toFixed(0)} MB`);
  const out = path.join(root, 'results-one-line.json');
  writeFileSync(out, JSON.stringify({ date: new Date().toISOString(), file: f.path, lines: old.length, line: lineNo, whole: tWhole, oneLine: tOne, cpuWhole: cWhole, cpuOneLine: cOne, identical: same, peakRssMB: rssMB() }, null, 2));
  if (!same) process.exitCode = 1;
}

function fmt(n: number, w: number, d = 2): string {
  return n.toFixed(d).padStart(w);
}

async function main(): Promise<void> {
  const tStart = performance.now();
  const corpus = await getCorpus();
  const files = corpus.files;
  if (ONE_LINE) return oneLine(files, corpus.root);
  if (ISOLATE && !ONLY) return isolated(corpus);
  const total = bytesOf(files);
  const byLang = Object.fromEntries(LANGS.map((l) => [l, files.filter((f) => f.lang === l)])) as Record<CorpusLang, Loaded[]>;
  const rssStart = rssMB();
  console.log(`gpu-review bench — node ${process.version}, ${corpus.label} corpus ${corpus.digest} (${files.length} files, ${(total / MB).toFixed(2)} MB), ${RUNS} timed runs after a warm-up, best/median; per-language review rows: ${LANG_RUNS} run(s)`);

  const results: Record<string, unknown> = {
    date: new Date().toISOString(),
    node: process.version,
    runs: RUNS,
    corpus: {
      label: corpus.label,
      digest: corpus.digest,
      seed: corpus.seed,
      files: files.length,
      bytes: total,
      byLang: Object.fromEntries(LANGS.map((l) => [l, { files: byLang[l].length, bytes: bytesOf(byLang[l]) }])),
    },
  };

  // ---- raw parse ----
  let parse: Timing | null = null;
  const parseLang: Partial<Record<CorpusLang, Timing>> = {};
  let rawErrorFiles: Record<string, number> = {};
  if (!ONLY || ONLY === 'parse') {
    rawErrorFiles = parseAll(files);
    parse = await timeIt(() => parseAll(files));
    if (DO_LANGS) for (const l of LANGS) parseLang[l] = await timeIt(() => parseAll(byLang[l]), Math.max(LANG_RUNS, RUNS), false);
  }
  const rssAfterParse = rssMB();

  // ---- full review ----
  const config = resolveConfig({}, CHECKS.map((c) => c.id));
  const diffText = addedFilesDiff(files);
  let rev: Timing | null = null;
  const revLang: Partial<Record<CorpusLang, Timing>> = {};
  let sanity: Record<string, unknown> = {};
  if (!ONLY || ONLY === 'review') {
    const first = await review({ diff: diffText, config, scope: 'added' });
    const r = first.result;
    const skipped = r.files.filter((f) => f.skipped);
    const byRule: Record<string, number> = {};
    for (const f of r.findings) byRule[f.ruleId] = (byRule[f.ruleId] ?? 0) + 1;
    const coverage: Record<string, { sources: number; bytes: number; coverage: number }> = {};
    for (const f of r.files) {
      for (const s of f.sources) {
        const c = (coverage[s.language] ??= { sources: 0, bytes: 0, coverage: 0 });
        c.sources++;
        c.bytes += s.bytes;
        c.coverage += s.parseCoverage * s.bytes;
      }
    }
    for (const c of Object.values(coverage)) c.coverage = Math.round((c.coverage / Math.max(1, c.bytes)) * 10000) / 10000;
    const languages: Record<string, number> = {};
    for (const f of r.files) languages[String(f.language)] = (languages[String(f.language)] ?? 0) + 1;
    sanity = {
      findings: r.findings.length,
      findingsByRule: byRule,
      filesReviewed: r.files.length - skipped.length,
      filesSkipped: skipped.length,
      skipReasons: [...new Set(skipped.map((f) => f.skipped))],
      errors: r.errors.length,
      firstErrors: r.errors.slice(0, 3),
      detectedLanguages: languages,
      parseCoverage: coverage,
      rawParseFilesWithErrors: rawErrorFiles,
      diffBytes: diffText.length,
    };
    rev = await timeIt(() => review({ diff: diffText, config, scope: 'added' }));
    if (DO_LANGS) {
      for (const l of LANGS) {
        const d = addedFilesDiff(byLang[l]);
        revLang[l] = await timeIt(() => review({ diff: d, config, scope: 'added' }), LANG_RUNS, false);
      }
    }
  }
  const rssAfterReview = rssMB();

  // ---- stage breakdown ----
  let stages: ReturnType<typeof stageBreakdown> | null = null;
  if (DO_STAGES) {
    await settle();
    stages = stageBreakdown(diffText, config);
    await settle();
  }

  // ---- report ----
  const line = '─'.repeat(86);
  console.log(line);
  console.log(`corpus       ${(total / MB).toFixed(2)} MB, ${files.length} files: ` + LANGS.map((l) => `${l} ${byLang[l].length} files ${(bytesOf(byLang[l]) / MB).toFixed(2)} MB (${((100 * bytesOf(byLang[l])) / total).toFixed(0)}%)`).join(', '));
  console.log(line);
  console.log(`${''.padEnd(8)}${'MB'.padStart(7)} │ ${'parse s'.padStart(8)} ${'parse MB/s'.padStart(11)} │ ${'review s'.padStart(8)} ${'review MB/s'.padStart(12)} │ ${'ratio'.padStart(6)}   (best; median in parentheses)`);
  const row = (label: string, bytes: number, p?: Timing | null, r?: Timing | null) => {
    const ps = p ? `${fmt(p.best, 8, 3)} ${fmt(mbps(bytes, p.best), 11)}` : `${'-'.padStart(8)} ${'-'.padStart(11)}`;
    const rs = r ? `${fmt(r.best, 8, 3)} ${fmt(mbps(bytes, r.best), 12)}` : `${'-'.padStart(8)} ${'-'.padStart(12)}`;
    const ratio = p && r ? fmt(p.best / r.best, 6, 3) : '-'.padStart(6);
    const med = p && r ? `   (${mbps(bytes, p.median).toFixed(2)} / ${mbps(bytes, r.median).toFixed(2)} MB/s, ${(p.median / r.median).toFixed(3)})` : '';
    console.log(`${label.padEnd(8)}${fmt(bytes / MB, 7)} │ ${ps} │ ${rs} │ ${ratio}${med}`);
  };
  row('all', total, parse, rev);
  if (DO_LANGS) for (const l of LANGS) row(l, bytesOf(byLang[l]), parseLang[l], revLang[l]);
  const cpuRow = (label: string, bytes: number, p?: Timing | null, r?: Timing | null) =>
    `${label} ${p ? mbps(bytes, p.cpuBest).toFixed(2) : '-'} / ${r ? mbps(bytes, r.cpuBest).toFixed(2) : '-'}${p && r ? ` (${(p.cpuBest / r.cpuBest).toFixed(3)})` : ''}`;
  console.log(
    `CPU-time MB/s parse / review (ratio), robust to a busy machine: ${cpuRow('all', total, parse, rev)}` +
      (DO_LANGS ? '; ' + LANGS.map((l) => cpuRow(l, bytesOf(byLang[l]), parseLang[l], revLang[l])).join('; ') : ''),
  );
  console.log(`load average ${os.loadavg().map((x) => x.toFixed(1)).join(' ')} on ${os.cpus().length} CPUs`);
  console.log(line);
  if (rev) {
    const s = sanity as { findings: number; findingsByRule: Record<string, number>; filesReviewed: number; filesSkipped: number; skipReasons: string[]; errors: number; parseCoverage: Record<string, { sources: number; coverage: number }> };
    console.log(`findings     ${s.findings} (${Object.entries(s.findingsByRule).map(([k, v]) => `${k}: ${v}`).join(', ') || 'none'})`);
    console.log(`files        ${s.filesReviewed} reviewed, ${s.filesSkipped} skipped${s.skipReasons.length ? ` (${s.skipReasons.join('; ')})` : ''}, ${s.errors} errors`);
    console.log(`sources      ` + Object.entries(s.parseCoverage).map(([k, v]) => `${k} ${v.sources} (coverage ${(v.coverage * 100).toFixed(2)}%)`).join(', ') + (parse ? `; raw parse (no masking/normalization): files with an ERROR node: ${LANGS.map((l) => `${l} ${rawErrorFiles[l] ?? 0}/${byLang[l].length}`).join(', ')}` : ''));
  }
  console.log(`peak RSS     ${rssMB().toFixed(0)} MB (maxRSS: ${rssStart.toFixed(0)} MB at start, ${rssAfterParse.toFixed(0)} MB after the parse passes, ${rssAfterReview.toFixed(0)} MB after the review passes)`);
  if (parse && rev) {
    console.log(`RSS at end   of one raw parse pass ${Math.max(...parse.rssEnd).toFixed(0)} MB, of one review() ${Math.max(...rev.rssEnd).toFixed(0)} MB (before finalizers free the trees)`);
  }
  if (parse && rev) {
    const ratio = parse.best / rev.best;
    console.log(`goal         review ≥ 0.5 × parse throughput: ratio ${ratio.toFixed(3)} → ${ratio >= 0.5 ? 'MET' : 'NOT MET'} (informational; nothing asserts timings)`);
  }
  if (stages) {
    console.log(line);
    console.log('stage breakdown (one pass, re-implemented from pipeline.reviewFile; "buildSources (total)" includes the parse):');
    const ls = ['cuda', 'python', 'luisa'];
    console.log(`${'stage'.padEnd(42)}${'ms'.padStart(9)}${ls.map((l) => l.padStart(9)).join('')}`);
    const keys = Object.keys(stages.stages).sort((a, b) => stages!.stages[b] - stages!.stages[a]);
    for (const k of keys) {
      console.log(`${k.padEnd(42)}${fmt(stages.stages[k], 9, 1)}${ls.map((l) => fmt(stages!.byLang[l]?.[k] ?? 0, 9, 1)).join('')}`);
    }
    if (parse && rev) {
      console.log(`(raw parse of the same files: ${(parse.best * 1000).toFixed(1)} ms; whole review(): ${(rev.best * 1000).toFixed(1)} ms)`);
    }
  }
  console.log(line);

  Object.assign(results, {
    parse: parse && { ...parse, mbps: mbps(total, parse.best), mbpsMedian: mbps(total, parse.median) },
    review: rev && { ...rev, mbps: mbps(total, rev.best), mbpsMedian: mbps(total, rev.median) },
    ratio: parse && rev ? parse.best / rev.best : null,
    ratioMedian: parse && rev ? parse.median / rev.median : null,
    goalMet: parse && rev ? parse.best / rev.best >= 0.5 : null,
    byLang: Object.fromEntries(
      LANGS.map((l) => {
        const b = bytesOf(byLang[l]);
        const p = parseLang[l];
        const r = revLang[l];
        return [l, { bytes: b, parse: p && { ...p, mbps: mbps(b, p.best) }, review: r && { ...r, mbps: mbps(b, r.best) }, ratio: p && r ? p.best / r.best : null }];
      }),
    ),
    rssMB: { start: rssStart, afterParse: rssAfterParse, afterReview: rssAfterReview, peak: rssMB() },
    sanity,
    stages,
    wallSeconds: (performance.now() - tStart) / 1000,
  });
  // Partial runs (--only, as profile.js does) must not overwrite the full results.
  const out = path.join(corpus.root, `results${corpus.suffix}${ONLY ? `-${ONLY}` : ''}.json`);
  writeFileSync(out, JSON.stringify(results, null, 2));
  console.log(`results → ${path.relative(process.cwd(), out)} (total ${((performance.now() - tStart) / 1000).toFixed(1)} s)`);
}

main().catch((e) => {
  console.error(e instanceof MirrorError ? `bench: ${e.message}` : e);
  process.exit(1);
});

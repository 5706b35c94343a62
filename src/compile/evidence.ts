import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, posix, resolve, sep } from 'node:path';
import { cudaModel } from '../analysis/cuda.js';
import { launchConfigs, prod } from '../analysis/launch-config.js';
import { occupancy } from '../analysis/occupancy.js';
import type { CompileSettings, ResolvedConfig } from '../config/schema.js';
import type { GpuSpec } from '../config/gpus.js';
import type { DiffModel } from '../diff/model.js';
import type { FileReader } from '../core/types.js';
import { buildSources } from '../sources/build.js';
import { detectLanguage } from '../sources/detect.js';
import { extractKernels } from '../sources/nvrtc.js';
import { parseText } from '../sources/parsers.js';
import type { Source } from '../sources/types.js';
import { archOf, probeNvcc, runLimited, type NvccInfo } from './nvcc.js';
import { baseName, demangle, parsePtxas, signature, type KernelFigures } from './ptxas.js';
import { collectUnit, makeTrees, type CollectedUnit, type Trees } from './units.js';

/** Figures of one kernel on one architecture, without the mangled name. */
export type Figures = Omit<KernelFigures, 'mangled' | 'arch'>;

export interface OccupancyFigure {
  gpu: string;
  threads: number;
  /** Fractions in [0, 1]; null where that side has no figures. */
  base: number | null;
  head: number | null;
  /** What limits the head's occupancy. */
  limiter: string | null;
}

export interface KernelEvidence {
  /** Source name (`smooth_kernel`). */
  name: string;
  /** Demangled, without return type (`ns::smooth_kernel<64>(float const*, float*, int)`). */
  signature: string;
  /** Where the kernel is defined in the post-change files (line range), when the diff holds it. */
  path: string | null;
  line: number | null;
  endLine: number | null;
  /** The compiled unit (repo path; `file.py#2` for the second kernel string of a Python file). */
  unit: string;
  /** `changed` with no base figures: the base did not compile. */
  status: 'added' | 'removed' | 'changed' | 'unchanged';
  /** Whether the kernel's definition overlaps added lines. */
  touched: boolean;
  arches: Array<{ arch: string; base: Figures | null; head: Figures | null }>;
  occupancy: OccupancyFigure[];
  /** The one-line summary posted for it. */
  text: string;
}

export interface UnitReport {
  unit: string;
  side: 'base' | 'head';
  ms: number;
  /** Entry functions compiled (each for every target architecture). */
  kernels: number;
  /** The side's files equal the base's: the base's figures were reused, nothing compiled. */
  reused?: boolean;
  /** Why it was not compiled, or failed: never the compiler's text, at most the first error's location. */
  skipped?: string;
}

export interface CompileReport {
  nvcc: string | null;
  arches: string[];
  units: UnitReport[];
  kernels: KernelEvidence[];
  /** Findings the compiler contradicted (removed from the review) and why. */
  silenced: Array<{ ruleId: string; path: string; line: number; reason: string }>;
  ms: number;
  /** Why nothing was compiled at all, if so. */
  unavailable?: string;
}

export interface CompileOptions {
  settings: CompileSettings;
  /** Lists the repository's files at the head (`--repo`, `git ls-tree`), to find the units that include a changed header. */
  listFiles?: () => Promise<string[]>;
}

const CUDA_UNIT = /\.cu$/i;
const HEADER = /\.(cuh|h|hh|hpp|hxx|inl|inc)$/i;
/** Units found through a changed header, at most (the rest are named as skipped). */
const MAX_HEADER_UNITS = 16;

interface SideFigures {
  base: KernelFigures[] | null;
  head: KernelFigures[] | null;
  /** The unit does not exist before the change (an added file or kernel string). */
  baseAbsent: boolean;
}

interface UnitJob {
  /** Repo path of the unit, or `file.py#N` for a kernel string. */
  id: string;
  /** Path the unit is written to inside the copy. */
  path: string;
  /** Unit text per side; null when the side has no such unit. Undefined: read it from the tree. */
  base?: string | null;
  head?: string | null;
  /** A reason to skip both sides (unresolved `.format` parameter). */
  skip?: { base?: string; head?: string };
}

/** Compile the units the diff touches at base and head, and turn ptxas' figures into evidence. */
export async function compileEvidence(diff: DiffModel, config: ResolvedConfig, readFile: FileReader | undefined, opts: CompileOptions): Promise<CompileReport> {
  const t0 = performance.now();
  const s = opts.settings;
  const arches = [...new Set(config.targets.map((g) => archOf(g.cc)))];
  const report: CompileReport = { nvcc: null, arches, units: [], kernels: [], silenced: [], ms: 0 };
  const info = await probeNvcc(s.nvcc);
  if (!info) {
    report.unavailable = `nvcc not found or not runnable (${s.nvcc})`;
    report.ms = performance.now() - t0;
    return report;
  }
  report.nvcc = info.version;
  const trees = makeTrees(diff, readFile);
  const jobs = await findUnits(diff, trees, opts, report);
  const deadline = t0 + s.reviewTimeoutMs;
  const work = await mkdtemp(join(tmpdir(), 'gpu-review-nvcc-'));
  try {
    const figures = new Map<string, SideFigures>();
    for (const job of jobs) {
      const got: SideFigures = { base: null, head: null, baseAbsent: false };
      const collected: Partial<Record<'base' | 'head', CollectedUnit>> = {};
      for (const side of ['head', 'base'] as const) {
        const text = job[side] !== undefined ? job[side] : await trees[side](job.path);
        if (text === null || text === undefined) {
          if (side === 'base') got.baseAbsent = true;
          continue;
        }
        const pre = job.skip?.[side];
        if (pre) {
          report.units.push({ unit: job.id, side, ms: 0, kernels: 0, skipped: pre });
          continue;
        }
        collected[side] = await collectUnit(job.path, text, (p) => trees[side](p), s.includeDirs);
      }
      const same = Boolean(collected.base && collected.head && !collected.base.skipped && !collected.head.skipped && sameFiles(collected.base.files, collected.head.files));
      // Base and head compile side by side (two nvcc processes); the same files on both sides
      // compile to the same figures, so those are compiled once.
      const sides = (['base', 'head'] as const).filter((side) => collected[side] && !(same && side === 'head'));
      const results = await Promise.all(
        sides.map(async (side) => {
          const unit = collected[side]!;
          if (unit.skipped) return { report: { unit: job.id, side, ms: 0, kernels: 0, skipped: unit.skipped } as UnitReport };
          if (performance.now() > deadline) return { report: { unit: job.id, side, ms: 0, kernels: 0, skipped: `compile time budget of the review (${s.reviewTimeoutMs} ms) exhausted` } as UnitReport };
          return compileUnit(job, side, unit, info, s, arches, join(work, `${report.units.length}-${side}`), Math.min(s.timeoutMs, Math.max(1, deadline - performance.now())));
        }),
      );
      sides.forEach((side, i) => {
        report.units.push(results[i].report);
        if (results[i].kernels) got[side] = results[i].kernels!;
      });
      if (same) {
        got.head = got.base;
        report.units.push({ unit: job.id, side: 'head', ms: 0, kernels: got.base ? countKernels(got.base) : 0, reused: true, ...(got.base ? {} : { skipped: 'same files as the base, which did not compile' }) });
      }
      if (!collected.base && !collected.head && !report.units.some((u) => u.unit === job.id)) {
        report.units.push({ unit: job.id, side: 'head', ms: 0, kernels: 0, skipped: 'the post-change file is not available (review with --repo or --git)' });
      }
      figures.set(job.id, got);
    }
    report.kernels = await buildEvidence(jobs, figures, trees, diff, config);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  report.ms = performance.now() - t0;
  return report;
}

function sameFiles(a: Map<string, string>, b: Map<string, string>): boolean {
  if (a.size !== b.size) return false;
  for (const [k, v] of a) if (b.get(k) !== v) return false;
  return true;
}

function countKernels(k: KernelFigures[]): number {
  return new Set(k.map((x) => x.mangled)).size;
}

async function findUnits(diff: DiffModel, trees: Trees, opts: CompileOptions, report: CompileReport): Promise<UnitJob[]> {
  const jobs: UnitJob[] = [];
  const seen = new Set<string>();
  const headers: string[] = [];
  for (const f of diff.files) {
    if (f.binary || f.problem) continue;
    const path = f.status === 'deleted' ? f.oldPath! : f.path;
    const norm = posix.normalize(path);
    if (posix.isAbsolute(norm) || norm === '..' || norm.startsWith('../')) {
      if (CUDA_UNIT.test(path)) report.units.push({ unit: path, side: 'head', ms: 0, kernels: 0, skipped: 'path outside the repository' });
      continue;
    }
    if (CUDA_UNIT.test(path)) {
      if (!seen.has(path)) jobs.push({ id: path, path });
      seen.add(path);
      if (f.status === 'renamed' && f.oldPath) {
        // The unit at its old path is the base side.
        jobs[jobs.length - 1].base = await trees.base(f.oldPath);
      }
    } else if (HEADER.test(path)) {
      headers.push(path);
    } else if (/\.py$/i.test(path)) {
      jobs.push(...(await pythonUnits(f.path, trees, f.status)));
    }
  }
  if (headers.length && opts.listFiles) {
    let listed: string[] = [];
    try {
      listed = (await opts.listFiles()).filter((p) => CUDA_UNIT.test(p) && !seen.has(p));
    } catch {
      listed = [];
    }
    const names = headers.map((h) => posix.basename(h));
    const extra: string[] = [];
    for (const p of listed) {
      const t = await trees.head(p);
      if (t && names.some((n) => t.includes(n))) extra.push(p);
    }
    for (const p of extra.slice(0, MAX_HEADER_UNITS)) jobs.push({ id: p, path: p });
    for (const p of extra.slice(MAX_HEADER_UNITS)) report.units.push({ unit: p, side: 'head', ms: 0, kernels: 0, skipped: `more than ${MAX_HEADER_UNITS} units include the changed headers` });
  }
  return jobs;
}

/** One unit per kernel string of a Python file, on each side, with `.format` parameters filled in. */
async function pythonUnits(path: string, trees: Trees, status: string): Promise<UnitJob[]> {
  const sides = { base: status === 'added' ? null : await trees.base(path), head: await trees.head(path) };
  const per = { base: sides.base ? kernelStrings(sides.base) : [], head: sides.head ? kernelStrings(sides.head) : [] };
  // Pair the strings of both sides by the name they are bound to, the rest in order.
  const pairs: Array<[KernelString | undefined, KernelString | undefined]> = [];
  const baseLeft = [...per.base];
  for (const h of per.head) {
    const i = h.variable ? baseLeft.findIndex((b) => b.variable === h.variable) : -1;
    pairs.push([i >= 0 ? baseLeft.splice(i, 1)[0] : undefined, h]);
  }
  for (const p of pairs) if (!p[0] && !p[1]!.variable && baseLeft.length && !baseLeft[0].variable) p[0] = baseLeft.shift();
  for (const b of baseLeft) pairs.push([b, undefined]);
  const jobs: UnitJob[] = [];
  pairs.forEach(([b, h], i) => {
    const skip: UnitJob['skip'] = {};
    if (b?.unresolved) skip.base = `.format parameter ${b.unresolved} is not a constant`;
    if (h?.unresolved) skip.head = `.format parameter ${h.unresolved} is not a constant`;
    jobs.push({ id: `${path}#${i + 1}`, path: `${path.replace(/\.py$/i, '')}__kernel${i + 1}.cu`, base: b ? b.text : null, head: h ? h.text : null, skip });
  });
  return jobs;
}

/**
 * The kernel strings of a Python file as the review extracts them, ready for nvcc: `{{`/`}}` are
 * already single braces, and each `.format` placeholder gets its argument when that is a literal.
 */
export interface KernelString {
  text: string;
  /** The name the string is bound to (`_SRC`), when it is assigned to one. */
  variable?: string;
  /** A `.format` parameter whose argument is not a literal. */
  unresolved?: string;
}

export function kernelStrings(py: string): KernelString[] {
  const tree = parseText('python', py, 20_000);
  return extractKernels(tree.rootNode, py).map((k) => {
    let unresolved: string | undefined;
    const text = k.text.replace(/__FMT_([A-Za-z0-9_]+?)__/g, (m, name: string) => {
      const v = literal(k.placeholders.get(m) ?? null);
      if (v === null) {
        unresolved ??= name;
        return m;
      }
      return v;
    });
    return { text, ...(k.variable ? { variable: k.variable } : {}), ...(unresolved ? { unresolved } : {}) };
  });
}

function literal(src: string | null): string | null {
  if (src === null) return null;
  const t = src.trim();
  if (/^[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$/.test(t) || /^0[xX][0-9a-fA-F]+$/.test(t)) return t;
  const str = /^(?:[rRuU]?)(['"])([^'"\\\n]*)\1$/.exec(t);
  if (str) return str[2];
  const s = /^str\((\d+)\)$/.exec(t);
  return s ? s[1] : null;
}

async function compileUnit(
  job: UnitJob,
  side: 'base' | 'head',
  collected: CollectedUnit,
  info: NvccInfo,
  s: CompileSettings,
  arches: string[],
  dir: string,
  timeoutMs: number,
): Promise<{ report: UnitReport; kernels?: KernelFigures[] }> {
  const t0 = performance.now();
  const done = (extra: Partial<UnitReport>, kernels?: KernelFigures[]) => ({ report: { unit: job.id, side, ms: Math.round(performance.now() - t0), kernels: kernels ? countKernels(kernels) : 0, ...extra }, kernels });
  for (const [p, t] of collected.files) {
    const abs = resolve(dir, p);
    // Paths come from the diff and the repository: none may land outside the copy.
    if (!abs.startsWith(dir + sep)) return done({ skipped: `path ${p} is outside the repository` });
    await mkdir(dirname(abs), { recursive: true });
    await writeFile(abs, t);
  }
  const args = [
    '-fatbin',
    '--resource-usage',
    `-std=${s.std}`,
    ...s.includeDirs.map((d) => `-I${join(dir, d)}`),
    ...s.defines.map((d) => `-D${d}`),
    ...arches.map((a) => `-gencode=arch=compute_${a.slice(3)},code=${a}`),
    '-o',
    join(dir, '.gpu-review.fatbin'),
    join(dir, job.path),
  ];
  const r = await runLimited(info.path, args, { cwd: dir, timeoutMs, memoryMb: s.memoryMb });
  if (r.timedOut) return done({ skipped: `compile exceeded ${timeoutMs} ms` });
  if (r.outOfMemory) return done({ skipped: `compile exceeded the memory limit (${s.memoryMb} MB)` });
  if (r.code !== 0) return done({ skipped: `does not compile: ${firstErrorLocation(r.output, dir, job)}` });
  return done({}, parsePtxas(r.output).kernels);
}

/**
 * Where the first error is, as `path:line` inside the repository (or "a toolkit or system
 * header"); the message itself is never passed on: it could quote text of other files.
 */
export function firstErrorLocation(output: string, dir: string, job: UnitJob): string {
  const lines = output.split('\n');
  for (const l of lines) {
    const m = /^(.+?)\((\d+)\): (?:catastrophic )?error\b/.exec(l) ?? /^(.+?):(\d+)(?::\d+)?: (?:fatal )?error\b/.exec(l);
    if (!m) continue;
    const file = m[1].trim();
    const rel = file.startsWith(dir + '/') ? file.slice(dir.length + 1) : file.startsWith('/') ? null : file;
    if (rel === null) return `first error in a toolkit or system header`;
    const shown = rel === job.path && job.id !== job.path ? job.id : rel;
    return `first error at ${shown}:${m[2]}`;
  }
  if (lines.some((l) => /^ptxas (fatal|error)/.test(l))) return 'first error in ptxas (no source location)';
  return 'no error location reported';
}

export interface KernelSite {
  path: string;
  line: number;
  endLine: number;
  touched: boolean;
  /** Threads per block and dynamic shared bytes of the launches the review knows (by kernel name). */
  threads: number | null;
  dynSmem: number;
}

/** Kernel definitions and launch configurations of the changed files, on one side. */
async function kernelSites(diff: DiffModel, trees: Trees, config: ResolvedConfig, side: 'base' | 'head'): Promise<Map<string, KernelSite[]>> {
  const out = new Map<string, KernelSite[]>();
  const launches = new Map<string, { threads: number; smem: number }>();
  for (const f of diff.files) {
    if (f.binary || f.problem || (side === 'head' && f.status === 'deleted') || (side === 'base' && f.status === 'added')) continue;
    const path = side === 'base' ? (f.oldPath ?? f.path) : f.path;
    const text = await trees[side](path);
    if (text === null) continue;
    const lang = detectLanguage(path, text, config.vocab.kernel_macros).language;
    if (lang !== 'cuda' && lang !== 'python') continue;
    let sources: Source[];
    try {
      sources = buildSources(path, lang, { text: text.replace(/\r\n/g, '\n'), firstLine: 1, label: 'file', wholeFile: true }, config.limits.fileTimeoutMs);
    } catch {
      continue;
    }
    for (const src of sources) {
      if (src.language === 'python' || src.language === 'cuda') {
        for (const l of launchConfigs.compute(src, config)) {
          if (!l.block) continue;
          const smem = l.smemNode ? (src.language === 'cuda' ? cudaModel.compute(src, config).constValue(l.smemNode) : null) : 0;
          launches.set(l.label, { threads: prod(l.block), smem: smem ?? 0 });
        }
      }
      if (src.language === 'python') continue;
      const m = cudaModel.compute(src, config);
      for (const fn of m.kernels.values()) {
        const a = src.toFile(fn.node.startPosition.row, fn.node.startPosition.column);
        const b = src.toFile(fn.node.endPosition.row, fn.node.endPosition.column);
        if (!a || !b) continue;
        let touched = false;
        for (let l = a.line; l <= b.line && !touched; l++) if (f.added.has(l)) touched = true;
        const bound = fn.launchBounds?.maxThreads ? m.constValue(fn.launchBounds.maxThreads) : null;
        const site: KernelSite = { path: f.path, line: a.line, endLine: b.line, touched: side === 'head' && touched, threads: bound, dynSmem: 0 };
        out.set(fn.name, [...(out.get(fn.name) ?? []), site]);
      }
    }
  }
  // A launch the file spells out beats the launch bound (the most the kernel allows).
  for (const [name, sites] of out) {
    const l = launches.get(name);
    if (l) for (const s of sites) (s.threads = l.threads), (s.dynSmem = l.smem);
  }
  return out;
}

async function buildEvidence(
  jobs: UnitJob[],
  figures: Map<string, SideFigures>,
  trees: Trees,
  diff: DiffModel,
  config: ResolvedConfig,
): Promise<KernelEvidence[]> {
  const all = [...figures.values()].flatMap((f) => [...(f.base ?? []), ...(f.head ?? [])]);
  const names = await demangle(all.map((k) => k.mangled));
  const sites = { base: await kernelSites(diff, trees, config, 'base'), head: await kernelSites(diff, trees, config, 'head') };
  const out: KernelEvidence[] = [];
  for (const job of jobs) {
    const f = figures.get(job.id);
    if (!f || (!f.base && !f.head)) continue;
    // Only kernels compiled on both sides can be compared; a side that failed contributes nothing.
    const bySig = new Map<string, { base: Map<string, Figures>; head: Map<string, Figures> }>();
    for (const side of ['base', 'head'] as const) {
      for (const k of f[side] ?? []) {
        const sig = signature(names.get(k.mangled) ?? k.mangled);
        const e = bySig.get(sig) ?? { base: new Map(), head: new Map() };
        const { mangled: _m, arch, ...fig } = k;
        e[side].set(arch, fig);
        bySig.set(sig, e);
      }
    }
    for (const [sig, e] of bySig) {
      const name = baseName(sig);
      const headSite = sites.head.get(name)?.[0] ?? null;
      const baseSite = sites.base.get(name)?.[0] ?? null;
      const archList = [...new Set([...e.base.keys(), ...e.head.keys()])].sort();
      const arches = archList.map((arch) => ({ arch, base: e.base.get(arch) ?? null, head: e.head.get(arch) ?? null }));
      const hasBase = e.base.size > 0;
      const hasHead = e.head.size > 0;
      // A side that did not compile says nothing about the kernel: its figures stay unknown.
      if (!hasHead && !f.head) continue;
      const differs = arches.some((a) => JSON.stringify(a.base) !== JSON.stringify(a.head));
      const status: KernelEvidence['status'] = !hasHead ? 'removed' : !hasBase ? (f.base || f.baseAbsent ? 'added' : 'changed') : differs ? 'changed' : 'unchanged';
      const touched = headSite?.touched ?? false;
      // Kernels the PR neither touched nor changed the code of are not part of the review.
      if (status === 'unchanged' && !touched) continue;
      const occ = occupancyFigures(config.targets, arches, baseSite, headSite);
      const ev: KernelEvidence = {
        name,
        signature: sig,
        path: headSite?.path ?? null,
        line: headSite?.line ?? null,
        endLine: headSite?.endLine ?? null,
        unit: job.id,
        status,
        touched,
        arches,
        occupancy: occ,
        text: '',
      };
      ev.text = describe(ev);
      out.push(ev);
    }
  }
  return out;
}

export function occupancyFigures(targets: readonly GpuSpec[], arches: KernelEvidence['arches'], baseSite: KernelSite | null, headSite: KernelSite | null): OccupancyFigure[] {
  const out: OccupancyFigure[] = [];
  for (const gpu of targets) {
    const a = arches.find((x) => x.arch === archOf(gpu.cc));
    if (!a) continue;
    const threadsHead = headSite?.threads ?? null;
    const threadsBase = baseSite?.threads ?? threadsHead;
    const threads = threadsHead ?? threadsBase;
    if (!threads) continue;
    const of = (fig: Figures | null, t: number | null, dyn: number) => (fig && t ? occupancy(gpu, { threadsPerBlock: t, regsPerThread: fig.registers, smemPerBlock: fig.smem + dyn }) : null);
    const h = of(a.head, threadsHead ?? threads, headSite?.dynSmem ?? 0);
    const b = of(a.base, threadsBase ?? threads, baseSite?.dynSmem ?? headSite?.dynSmem ?? 0);
    out.push({ gpu: gpu.name, threads, base: b ? b.occupancy : null, head: h ? h.occupancy : null, limiter: h ? h.limiter : null });
  }
  return out;
}

const pctOf = (x: number | null) => (x === null ? '–' : `${Math.round(x * 1000) / 10} %`);

function change(b: number | null, h: number | null, unit: string, status: KernelEvidence['status']): string {
  if (b === null && h === null) return '–';
  if (b === null) return `${h}${unit} (${status === 'added' ? 'new' : 'base not compiled'})`;
  if (h === null) return `${b}${unit} (removed)`;
  return b === h ? `${h}${unit}` : `${b} → ${h}${unit}`;
}

function archPart(a: KernelEvidence['arches'][number], status: KernelEvidence['status']): string {
  const pick = (side: 'base' | 'head', f: (x: Figures) => number) => (a[side] ? f(a[side]!) : null);
  const parts = [
    `registers ${change(pick('base', (x) => x.registers), pick('head', (x) => x.registers), '', status)}`,
    `spills ${change(pick('base', (x) => x.spillStores + x.spillLoads), pick('head', (x) => x.spillStores + x.spillLoads), ' B', status)}`,
  ];
  const stack = [pick('base', (x) => x.stackFrame), pick('head', (x) => x.stackFrame)];
  if (stack.some((x) => x)) parts.push(`stack ${change(stack[0], stack[1], ' B', status)}`);
  const smem = [pick('base', (x) => x.smem), pick('head', (x) => x.smem)];
  if (smem.some((x) => x)) parts.push(`static smem ${change(smem[0], smem[1], ' B', status)}`);
  return parts.join(', ');
}

/**
 * "`smooth_kernel`: registers 64 → 96, spills 0 → 24 B; occupancy on H100 at 256 threads 50 % → 31 %,
 * on RTX 4090 67 % → 33 %". Architectures whose figures agree share one part; where they differ each
 * group is named (`sm_80: …; sm_86, sm_89: …`).
 */
export function describe(ev: KernelEvidence): string {
  const groups = new Map<string, string[]>();
  for (const a of ev.arches) {
    const t = archPart(a, ev.status);
    groups.set(t, [...(groups.get(t) ?? []), a.arch]);
  }
  const figures = groups.size === 1 ? [...groups.keys()][0] : [...groups].map(([t, arches]) => `${arches.join(', ')}: ${t}`).join('; ');
  const label = `\`${ev.name}\`${ev.signature.includes('<') ? ` (${ev.signature.replace(/\(.*$/, '')})` : ''}`;
  let text = `${label}: ${figures}`;
  if (ev.occupancy.length) {
    let lastThreads: number | null = null;
    const occ = ev.occupancy.map((o) => {
      const at = o.threads === lastThreads ? '' : ` at ${o.threads} threads`;
      lastThreads = o.threads;
      const v = o.base === null || o.head === null || o.base === o.head ? pctOf(o.head ?? o.base) : `${pctOf(o.base)} → ${pctOf(o.head)}`;
      return `on ${o.gpu}${at} ${v}`;
    });
    text += `; occupancy ${occ.join(', ')}`;
  }
  return text;
}

// spillBytes: import it from ./spills.js (kept apart so the rules need not load the parsers).

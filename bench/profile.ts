/**
 * Where does review time go? Runs the review part of the benchmark under the V8 CPU profiler and
 * prints the top functions by self and by inclusive time, mapped back to the TypeScript sources.
 *
 *   npm run build && node dist/bench/profile.js [--runs=2] [--top=30] [--only=review|stages|parse] [--profile=FILE]
 *
 * With --profile=FILE an existing .cpuprofile is summarized instead of recording a new one.
 * Profiles go to bench/corpus/prof/ (gitignored).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { SourceMap } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { defaultCorpusDir } from './corpus.js';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

function opt(name: string): string | undefined {
  const a = process.argv.find((x) => x.startsWith(`--${name}=`));
  return a?.slice(a.indexOf('=') + 1);
}

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(defaultCorpusDir(), '..', '..');

const maps = new Map<string, SourceMap | null>();
function sourceMapFor(file: string): SourceMap | null {
  if (!maps.has(file)) {
    let sm: SourceMap | null = null;
    try {
      if (existsSync(file + '.map')) sm = new SourceMap(JSON.parse(readFileSync(file + '.map', 'utf8')));
    } catch {
      sm = null;
    }
    maps.set(file, sm);
  }
  return maps.get(file) ?? null;
}

/** `src/analysis/python.ts:123 buildModel` for a frame of compiled project code; a short form otherwise. */
function describe(cf: CallFrame): { key: string; file: string } {
  const name = cf.functionName || '(anonymous)';
  if (!cf.url) return { key: name, file: name.startsWith('(') ? name : '(native)' };
  let file = cf.url.startsWith('file://') ? fileURLToPath(cf.url) : cf.url;
  let line = cf.lineNumber + 1;
  const sm = file.endsWith('.js') ? sourceMapFor(file) : null;
  if (sm) {
    const e = sm.findEntry(cf.lineNumber, cf.columnNumber) as { originalSource?: string; originalLine?: number };
    if (e && e.originalSource) {
      file = e.originalSource.startsWith('file://') ? fileURLToPath(e.originalSource) : path.resolve(path.dirname(file), e.originalSource);
      line = (e.originalLine ?? 0) + 1;
    }
  }
  let rel = path.relative(root, file);
  if (rel.startsWith('node_modules')) rel = rel.replace(/^node_modules\//, 'nm:');
  if (rel.startsWith('..')) rel = file.startsWith('node:') ? file : path.basename(file);
  return { key: `${rel}:${line} ${name}`, file: rel };
}

function summarize(profile: CpuProfile, top: number): void {
  const byId = new Map<number, ProfileNode>();
  const parent = new Map<number, number>();
  for (const n of profile.nodes) byId.set(n.id, n);
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const desc = new Map<number, { key: string; file: string }>();
  const d = (id: number) => {
    let v = desc.get(id);
    if (!v) desc.set(id, (v = describe(byId.get(id)!.callFrame)));
    return v;
  };
  const self = new Map<string, number>();
  const incl = new Map<string, number>();
  const perFile = new Map<string, number>();
  /** Self time with tree-sitter binding frames (node access through N-API) charged to the project frame that called them. */
  const charged = new Map<string, number>();
  /** tree-sitter binding function ← project caller. */
  const pairs = new Map<string, number>();
  const isProject = (f: string) => /^(src|checks|bench)\//.test(f);
  let total = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    const dt = (profile.timeDeltas[i] ?? 0) / 1000; // ms
    total += dt;
    const id = profile.samples[i];
    const me = d(id);
    self.set(me.key, (self.get(me.key) ?? 0) + dt);
    perFile.set(me.file, (perFile.get(me.file) ?? 0) + dt);
    if (me.file.startsWith('nm:tree-sitter/')) {
      let cur = parent.get(id);
      let entry = me.key.replace(/^nm:tree-sitter\/index\.js:\d+ /, '');
      while (cur !== undefined && !isProject(d(cur).file)) {
        if (d(cur).file.startsWith('nm:tree-sitter/')) entry = d(cur).key.replace(/^nm:tree-sitter\/index\.js:\d+ /, '');
        cur = parent.get(cur);
      }
      const caller = cur !== undefined ? d(cur).key : '(no project caller)';
      charged.set(caller, (charged.get(caller) ?? 0) + dt);
      const pk = `${entry.padEnd(20)} ← ${caller}`;
      pairs.set(pk, (pairs.get(pk) ?? 0) + dt);
    } else {
      charged.set(me.key, (charged.get(me.key) ?? 0) + dt);
    }
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const k = d(cur).key;
      if (seen.has(k)) continue;
      seen.add(k);
      incl.set(k, (incl.get(k) ?? 0) + dt);
    }
  }
  const show = (title: string, m: Map<string, number>, n: number) => {
    console.log(`\n${title}`);
    const rows = [...m.entries()].sort((a, b) => b[1] - a[1]).slice(0, n);
    for (const [k, v] of rows) console.log(`${v.toFixed(0).padStart(8)} ms ${((100 * v) / total).toFixed(1).padStart(5)}%  ${k}`);
  };
  console.log(`profile: ${(total / 1000).toFixed(1)} s sampled`);
  show('self time by file', perFile, 20);
  show(`top ${top} functions by self time`, self, top);
  show(`top ${top} functions by inclusive time`, incl, top);
  show(`top ${top} functions by self time, tree-sitter node access charged to the project caller`, charged, top);
  show(`top ${top} tree-sitter binding entry points by project caller`, pairs, top);
}

function latestProfile(dir: string): string | null {
  if (!existsSync(dir)) return null;
  const fs = readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'));
  fs.sort((a, b) => statSync(path.join(dir, b)).mtimeMs - statSync(path.join(dir, a)).mtimeMs);
  return fs.length ? path.join(dir, fs[0]) : null;
}

const top = Number(opt('top') ?? 30);
let file = opt('profile') ?? null;
if (!file) {
  const dir = path.join(defaultCorpusDir(), 'prof');
  mkdirSync(dir, { recursive: true });
  const only = opt('only') ?? 'review';
  const args = ['--cpu-prof', `--cpu-prof-dir=${dir}`, '--cpu-prof-interval=250', path.join(here, 'bench.js'), `--only=${only}`, `--runs=${opt('runs') ?? 2}`];
  console.log(`$ node ${args.join(' ')}`);
  const r = spawnSync(process.execPath, args, { stdio: 'inherit' });
  if (r.status !== 0) process.exit(r.status ?? 1);
  file = latestProfile(dir);
  if (!file) throw new Error(`no .cpuprofile written to ${dir}`);
}
console.log(`summarizing ${path.relative(process.cwd(), file)}`);
summarize(JSON.parse(readFileSync(file, 'utf8')) as CpuProfile, top);

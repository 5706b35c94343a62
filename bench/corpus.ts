/**
 * Deterministic benchmark corpus: realistic GPU source across CUDA (.cu/.cuh), Python with CuPy
 * and NVRTC kernel strings (.py) and LuisaCompute C++ (.cpp/.h), written under bench/corpus/
 * (gitignored). Same seed and version → byte-identical files; no Math.random.
 *
 *   node dist/bench/corpus.js [--force] [--mb=6] [--seed=gpu-review-bench]
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { NOUNS, Rng, VERBS } from './gen/common.js';
import { cudaFile } from './gen/cuda.js';
import { luisaFile } from './gen/luisa.js';
import { pythonFile } from './gen/python.js';

/** Bump when a generator changes, so stale corpora are regenerated. */
export const CORPUS_VERSION = 4;
export const DEFAULT_SEED = 'gpu-review-bench';
/** 6 MiB: comfortably above 5 MB in either unit. */
export const DEFAULT_BYTES = 6 * 1024 * 1024;

export type CorpusLang = 'cuda' | 'python' | 'luisa';

export interface CorpusFile {
  /** Repository-relative path, as it appears in the diff (never under bench/ or tests/). */
  path: string;
  lang: CorpusLang;
  bytes: number;
}

export interface Corpus {
  version: number;
  seed: string;
  targetBytes: number;
  root: string;
  totalBytes: number;
  files: CorpusFile[];
  /** sha256 over all paths and contents, to tell corpora apart in results. */
  digest: string;
}

const SHARES: ReadonlyArray<readonly [CorpusLang, number]> = [
  ['cuda', 0.4],
  ['python', 0.4],
  ['luisa', 0.2],
];

const MIN_FILE = 5 * 1024;
const MAX_FILE = 60 * 1024;

const DIRS: Record<CorpusLang, string[]> = {
  cuda: ['cuda/geometry', 'cuda/raster', 'cuda/index', 'cuda/join', 'cuda/overlay', 'cuda/scan', 'cuda/io', 'cuda/predicates'],
  python: ['python/vibespatial/kernels', 'python/vibespatial/ops', 'python/vibespatial/overlay', 'python/vibespatial/index', 'python/vibespatial/io', 'python/vibespatial/predicates', 'python/vibespatial/constructive'],
  luisa: ['luisa/src/render', 'luisa/src/sim', 'luisa/src/spatial', 'luisa/src/compute', 'luisa/include/app'],
};

export function defaultCorpusDir(): string {
  // dist/bench/corpus.js → <root>/bench/corpus ; also works when run from the source tree.
  const here = path.dirname(fileURLToPath(import.meta.url));
  let dir = here;
  for (let i = 0; i < 4; i++) {
    if (existsSync(path.join(dir, 'package.json'))) return path.join(dir, 'bench', 'corpus');
    dir = path.dirname(dir);
  }
  return path.join(process.cwd(), 'bench', 'corpus');
}

/** Log-uniform file size in [lo, hi]: many small files, a tail of large ones. */
function fileTarget(rng: Rng, lo: number, hi: number): number {
  return Math.round(Math.exp(Math.log(lo) + rng.next() * (Math.log(hi) - Math.log(lo))));
}

function generateOne(lang: CorpusLang, seed: string, index: number): { rel: string; text: string } {
  const rng = new Rng(`${seed}:${lang}:${index}`);
  const dir = rng.pick(DIRS[lang]);
  const noun = rng.pick(NOUNS);
  const base = `${rng.pick(VERBS)}_${/(s|x|ch|sh)$/.test(noun) ? noun + 'es' : noun + 's'}_${String(index).padStart(3, '0')}`;
  // Generators overshoot their target by up to one top-level chunk; aim below the 60 KB cap.
  let target = fileTarget(rng, 5.6 * 1024, 52 * 1024);
  for (let attempt = 0; ; attempt++) {
    const g = rng.fork(`attempt${attempt}`);
    let ext: string;
    let text: string;
    if (lang === 'cuda') {
      const header = g.chance(0.25);
      ext = header ? '.cuh' : '.cu';
      text = cudaFile(g, target, header);
    } else if (lang === 'python') {
      ext = '.py';
      text = pythonFile(g, target);
    } else {
      const header = dir.includes('include') || g.chance(0.15);
      ext = header ? '.h' : '.cpp';
      text = luisaFile(g, target, header);
    }
    const bytes = Buffer.byteLength(text);
    if ((bytes >= MIN_FILE && bytes <= MAX_FILE) || attempt >= 8) return { rel: `${dir}/${base}${ext}`, text };
    target = bytes > MAX_FILE ? Math.round(target * 0.85) : Math.round(target * 1.2);
  }
}

export function generateCorpus(root: string, seed = DEFAULT_SEED, targetBytes = DEFAULT_BYTES, log: (s: string) => void = () => {}): Corpus {
  if (existsSync(root)) {
    // Only what this generator wrote: the language folders and the manifest.
    for (const d of ['cuda', 'python', 'luisa', 'manifest.json']) rmSync(path.join(root, d), { recursive: true, force: true });
  }
  mkdirSync(root, { recursive: true });
  const files: CorpusFile[] = [];
  const hash = createHash('sha256');
  const t0 = performance.now();
  for (const [lang, share] of SHARES) {
    const want = targetBytes * share;
    let have = 0;
    for (let i = 0; have < want; i++) {
      const { rel, text } = generateOne(lang, seed, i);
      const abs = path.join(root, rel);
      mkdirSync(path.dirname(abs), { recursive: true });
      writeFileSync(abs, text);
      const bytes = Buffer.byteLength(text);
      files.push({ path: rel, lang, bytes });
      hash.update(rel).update('\0').update(text).update('\0');
      have += bytes;
    }
  }
  const corpus: Corpus = {
    version: CORPUS_VERSION,
    seed,
    targetBytes,
    root,
    totalBytes: files.reduce((a, f) => a + f.bytes, 0),
    files,
    digest: hash.digest('hex').slice(0, 16),
  };
  const { root: _r, ...manifest } = corpus;
  writeFileSync(path.join(root, 'manifest.json'), JSON.stringify(manifest, null, 1));
  log(`generated ${files.length} files, ${(corpus.totalBytes / 1e6).toFixed(2)} MB in ${((performance.now() - t0) / 1000).toFixed(1)} s → ${root}`);
  return corpus;
}

/** The corpus on disk if it matches this generator version, seed and size; otherwise null. */
export function loadCorpus(root: string, seed = DEFAULT_SEED, targetBytes = DEFAULT_BYTES): Corpus | null {
  const mf = path.join(root, 'manifest.json');
  if (!existsSync(mf)) return null;
  try {
    const m = JSON.parse(readFileSync(mf, 'utf8')) as Omit<Corpus, 'root'>;
    if (m.version !== CORPUS_VERSION || m.seed !== seed || m.targetBytes !== targetBytes) return null;
    for (const f of m.files) {
      const p = path.join(root, f.path);
      if (!existsSync(p) || statSync(p).size !== f.bytes) return null;
    }
    return { ...m, root };
  } catch {
    return null;
  }
}

export function ensureCorpus(root = defaultCorpusDir(), seed = DEFAULT_SEED, targetBytes = DEFAULT_BYTES, log: (s: string) => void = () => {}): Corpus {
  return loadCorpus(root, seed, targetBytes) ?? generateCorpus(root, seed, targetBytes, log);
}

export function readCorpusFile(c: Corpus, f: CorpusFile): string {
  return readFileSync(path.join(c.root, f.path), 'utf8');
}

function isMain(): boolean {
  return !!process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url);
}

if (isMain()) {
  const arg = (name: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1];
  const root = defaultCorpusDir();
  const seed = arg('seed') ?? DEFAULT_SEED;
  const bytes = arg('mb') ? Math.round(Number(arg('mb')) * 1024 * 1024) : DEFAULT_BYTES;
  const c = process.argv.includes('--force') ? generateCorpus(root, seed, bytes, console.log) : ensureCorpus(root, seed, bytes, console.log);
  const by = (l: CorpusLang) => c.files.filter((f) => f.lang === l);
  for (const l of ['cuda', 'python', 'luisa'] as const) {
    const fs = by(l);
    const b = fs.reduce((a, f) => a + f.bytes, 0);
    console.log(`${l.padEnd(7)} ${String(fs.length).padStart(4)} files ${(b / 1e6).toFixed(2).padStart(6)} MB  (${((100 * b) / c.totalBytes).toFixed(1)}%)  min ${(Math.min(...fs.map((f) => f.bytes)) / 1024).toFixed(1)} KB  max ${(Math.max(...fs.map((f) => f.bytes)) / 1024).toFixed(1)} KB`);
  }
  console.log(`total   ${String(c.files.length).padStart(4)} files ${(c.totalBytes / 1e6).toFixed(2).padStart(6)} MB  digest ${c.digest}`);
}

/** One unified diff in which every file is added (what `npm run bench` and the findings snapshot review). */
export function addedFilesDiff(files: Array<{ path: string; text: string }>): string {
  const parts: string[] = [];
  for (const f of files) {
    const lines = f.text.split('\n');
    if (lines[lines.length - 1] === '') lines.pop();
    parts.push(
      `diff --git a/${f.path} b/${f.path}\nnew file mode 100644\n--- /dev/null\n+++ b/${f.path}\n@@ -0,0 +1,${lines.length} @@\n` +
        lines.map((l) => '+' + l).join('\n') +
        '\n',
    );
  }
  return parts.join('');
}

/**
 * Real-code corpus for `npm run bench -- --mirrors DIR`: files of public GPU repositories, read
 * from local bare mirrors (DIR/OWNER+NAME/repo, as `git show REV:PATH` would read them; here one
 * `git cat-file --batch` per repository), at the commits pinned in bench/mirrors.json. Nothing of
 * those repositories is stored in this one: only their names, commits and paths.
 *
 *   node dist/bench/mirrors.js --select --mirrors DIR   # rewrite bench/mirrors.json from the mirrors' HEADs (the rules below)
 *   node dist/bench/mirrors.js --mirrors DIR            # check that every pinned file can be read; print the sizes
 *
 * The list was selected once by the rules in SELECTION, and is pinned, so every run reads the same
 * bytes. The repositories the project keeps out of every corpus (see the common brief: e.g.
 * cupy/cupy, rapidsai/raft) are refused by name.
 */
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import picomatch from 'picomatch';
import type { CorpusLang } from './corpus.js';

export interface MirrorRepo {
  repo: string;
  commit: string;
  files: Array<{ path: string; lang: CorpusLang; bytes: number }>;
}
export interface MirrorList {
  note: string;
  repos: MirrorRepo[];
}

/** Never read, whatever the list says. */
const FORBIDDEN = ['jarmak-personal/vibespatial', 'luisagroup/luisarender', 'rapidsai/cuspatial', 'ggml-org/ggml', 'ggml-org/llama.cpp', 'ggml-org/whisper.cpp', 'cupy/cupy', 'rapidsai/raft'];

/** How bench/mirrors.json was chosen: per repository, a language, path globs (git pathspecs) and, for Python and LuisaCompute, a content filter. */
const SELECTION: Array<{ repo: string; lang: CorpusLang; specs: string[]; grep?: string }> = [
  { repo: 'NVIDIA/cuda-samples', lang: 'cuda', specs: ['*.cu', '*.cuh'] },
  { repo: 'karpathy/llm.c', lang: 'cuda', specs: ['*.cu', '*.cuh'] },
  { repo: 'NVlabs/tiny-cuda-nn', lang: 'cuda', specs: ['*.cu', '*.cuh'] },
  { repo: 'NVIDIA/apex', lang: 'cuda', specs: ['*.cu', '*.cuh'] },
  { repo: 'nerfstudio-project/gsplat', lang: 'cuda', specs: ['*.cu', '*.cuh'] },
  { repo: 'facebookresearch/faiss', lang: 'cuda', specs: ['*.cu', '*.cuh'] },
  { repo: 'Dao-AILab/flash-attention', lang: 'cuda', specs: ['*.cu', '*.cuh'] },
  { repo: 'NVIDIA/cccl', lang: 'cuda', specs: ['cub/cub/*.cuh', 'cub/cub/{agent,block,warp,thread}/**/*.cuh', 'thrust/examples/**/*.cu'] },
  { repo: 'rapidsai/cusignal', lang: 'python', specs: ['*.py'], grep: 'import cupy|RawKernel|RawModule|ElementwiseKernel' },
  { repo: 'mikgroup/sigpy', lang: 'python', specs: ['*.py'], grep: 'import cupy|RawKernel|RawModule|ElementwiseKernel' },
  { repo: 'tomography/tomocupy', lang: 'python', specs: ['*.py'], grep: 'import cupy|RawKernel|RawModule|ElementwiseKernel' },
  { repo: 'PyLops/pylops', lang: 'python', specs: ['*.py'], grep: 'import cupy|RawKernel|RawModule|ElementwiseKernel' },
  { repo: 'rapidsai/cucim', lang: 'python', specs: ['*.py'], grep: 'import cupy|RawKernel|RawModule|ElementwiseKernel' },
  { repo: 'rapidsai/cuml', lang: 'python', specs: ['*.py'], grep: 'import cupy|RawKernel|RawModule|ElementwiseKernel' },
  { repo: 'LuisaGroup/LuisaCompute', lang: 'luisa', specs: ['*.cpp', '*.h'], grep: 'Kernel[123]D|Callable' },
];

export const MIRROR_LIST = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'bench', 'mirrors.json');

export class MirrorError extends Error {}

function gitDir(dir: string, repo: string): string {
  const base = path.join(dir, repo.replace('/', '+'));
  const bare = path.join(base, 'repo');
  return existsSync(bare) ? bare : base;
}

function git(gd: string, args: string[]): string {
  return execFileSync('git', ['--git-dir', gd, ...args], { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024, stdio: ['ignore', 'pipe', 'pipe'] });
}

function refuse(repo: string): void {
  if (FORBIDDEN.includes(repo.toLowerCase())) throw new MirrorError(`${repo} is kept out of every corpus`);
}

/** Rewrite bench/mirrors.json from the mirrors' HEADs; only blobs the mirror really holds. */
export function selectMirrors(dir: string): MirrorList {
  const repos: MirrorRepo[] = [];
  for (const s of SELECTION) {
    refuse(s.repo);
    const gd = gitDir(dir, s.repo);
    if (!existsSync(gd)) throw new MirrorError(`no mirror of ${s.repo} under ${dir}`);
    const commit = git(gd, ['rev-parse', 'HEAD']).trim();
    const sizes = new Map<string, number>();
    for (const l of git(gd, ['ls-tree', '-r', '-l', commit]).split('\n')) {
      const m = /^\d+ blob ([0-9a-f]+)\s+(\d+)\t(.*)$/.exec(l);
      if (m) sizes.set(m[3], Number(m[2]));
    }
    const match = picomatch(s.specs, { basename: !s.specs.some((g) => g.includes('/')), dot: true });
    // Present blobs only (a mirror may leave its largest files out), under the review's 2 MB limit.
    const wanted = [...sizes.keys()].filter((p) => match(p) && sizes.get(p)! > 0 && sizes.get(p)! <= 2_000_000).sort();
    const check = execFileSync('git', ['--git-dir', gd, 'cat-file', '--batch-check=%(objecttype)'], { input: wanted.map((p) => `${commit}:${p}\n`).join(''), encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 }).split('\n');
    let files = wanted.filter((_, k) => check[k] === 'blob').map((p) => ({ path: p, lang: s.lang, bytes: sizes.get(p)! }));
    if (s.grep) {
      const re = new RegExp(s.grep);
      const texts = readRepoSync(gd, { repo: s.repo, commit, files });
      files = files.filter((_, k) => re.test(texts[k]));
    }
    repos.push({ repo: s.repo, commit, files });
  }
  return {
    note: 'Real-code bench corpus (bench/mirrors.ts): files read from local mirrors of these public repositories at the pinned commits. Only names, commits and paths are stored here.',
    repos,
  };
}

export function readMirrorList(file = MIRROR_LIST): MirrorList {
  return JSON.parse(readFileSync(file, 'utf8')) as MirrorList;
}

export interface MirrorFile {
  /** Path in the review's diff: OWNER+NAME/PATH, so files of different repositories never collide. */
  path: string;
  lang: CorpusLang;
  bytes: number;
  text: string;
}

/** Split `git cat-file --batch` output into the blobs' texts, in request order. */
function splitBatch(buf: Buffer, r: MirrorRepo): string[] {
  const out: string[] = [];
  let at = 0;
  for (const f of r.files) {
    const nl = buf.indexOf(10, at);
    const header = buf.subarray(at, nl).toString();
    const m = /^[0-9a-f]+ blob (\d+)$/.exec(header);
    if (!m) throw new MirrorError(`${r.repo}@${r.commit.slice(0, 12)}:${f.path}: ${header} (is the mirror complete? see bench/mirrors.ts)`);
    const n = Number(m[1]);
    out.push(buf.subarray(nl + 1, nl + 1 + n).toString('utf8'));
    at = nl + 1 + n + 1;
  }
  return out;
}

function readRepoSync(gd: string, r: MirrorRepo): string[] {
  const buf = execFileSync('git', ['--git-dir', gd, 'cat-file', '--batch'], { input: r.files.map((f) => `${r.commit}:${f.path}\n`).join(''), maxBuffer: 1024 * 1024 * 1024 });
  return splitBatch(buf, r);
}

/** Read one repository's pinned files with one `git cat-file --batch`. */
function readRepo(gd: string, r: MirrorRepo): Promise<MirrorFile[]> {
  return new Promise((resolve, reject) => {
    const child = spawn('git', ['--git-dir', gd, 'cat-file', '--batch'], { stdio: ['pipe', 'pipe', 'pipe'] });
    const chunks: Buffer[] = [];
    let err = '';
    child.stdout.on('data', (c: Buffer) => chunks.push(c));
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) return reject(new MirrorError(`git cat-file in ${gd} exited ${code}: ${err.trim()}`));
      try {
        const texts = splitBatch(Buffer.concat(chunks), r);
        resolve(r.files.map((f, k) => ({ path: `${r.repo.replace('/', '+')}/${f.path}`, lang: f.lang, bytes: Buffer.byteLength(texts[k]), text: texts[k] })));
      } catch (e) {
        reject(e);
      }
    });
    child.stdin.end(r.files.map((f) => `${r.commit}:${f.path}\n`).join(''));
  });
}

export async function loadMirrors(dir: string, list = readMirrorList()): Promise<{ files: MirrorFile[]; digest: string }> {
  const files: MirrorFile[] = [];
  for (const r of list.repos) {
    refuse(r.repo);
    const gd = gitDir(dir, r.repo);
    if (!existsSync(gd)) throw new MirrorError(`no mirror of ${r.repo} under ${dir} (expected ${gd})`);
    files.push(...(await readRepo(gd, r)));
  }
  const h = createHash('sha256');
  for (const f of files) h.update(f.path).update('\0').update(f.text).update('\0');
  return { files, digest: h.digest('hex').slice(0, 16) };
}

async function main(): Promise<void> {
  const i = process.argv.indexOf('--mirrors');
  const eq = process.argv.find((a) => a.startsWith('--mirrors='));
  const dir = eq ? eq.slice('--mirrors='.length) : i >= 0 ? process.argv[i + 1] : undefined;
  if (!dir) throw new MirrorError('usage: node dist/bench/mirrors.js [--select] --mirrors DIR');
  if (process.argv.includes('--select')) {
    const list = selectMirrors(dir);
    writeFileSync(MIRROR_LIST, JSON.stringify(list, null, 1) + '\n');
    console.log(`${MIRROR_LIST}: ${list.repos.reduce((a, r) => a + r.files.length, 0)} files`);
  }
  const { files, digest } = await loadMirrors(dir);
  const by: Record<string, { files: number; bytes: number }> = {};
  for (const f of files) {
    const b = (by[f.lang] ??= { files: 0, bytes: 0 });
    b.files++;
    b.bytes += f.bytes;
  }
  const total = files.reduce((a, f) => a + f.bytes, 0);
  console.log(`mirror corpus ${digest}: ${files.length} files, ${(total / 1e6).toFixed(2)} MB; ` + Object.entries(by).map(([l, b]) => `${l} ${b.files} files ${(b.bytes / 1e6).toFixed(2)} MB`).join(', '));
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  main().catch((e) => {
    console.error(e instanceof MirrorError ? `mirrors: ${e.message}` : e);
    process.exit(1);
  });
}

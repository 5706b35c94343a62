/**
 * Builds the project index of one review: from the changed files, follow Python imports (relative and
 * package-absolute, against the repository's packages) and `#include`s (against the including file's
 * folder, then `index.include_roots`) to `index.depth` steps; read each step's files in one batch
 * through the reader; stop at the file count, byte budget or time budget and say so. The deepest files'
 * facts are built first, so a helper that calls an indexed helper that synchronizes synchronizes too.
 */
import { createHash } from 'node:crypto';
import { posix } from 'node:path';
import type { ResolvedConfig } from '../config/schema.js';
import { factSources, fileFacts, fileLinks, type ParsedFile } from './facts.js';
import type { Source } from '../sources/types.js';
import type { BatchReader, ProjectIndex } from './types.js';

const PY = /\.pyi?$/;
const CXX = /\.(cu|cuh|c|cc|cpp|cxx|h|hh|hpp|hxx|inl|inc|ipp|tpp)$/i;

export interface ChangedFile {
  path: string;
  /** The post-change text when the review already read it (saves a read). */
  text?: string | null;
}

/**
 * Top-level modules that are never the repository's own (the standard library's most used, the array,
 * tensor and CUDA packages): no candidate paths are read for them. A project shipping a package of one
 * of these names is not indexed through that name.
 */
const EXTERNAL_PY = new Set(['numpy', 'cupy', 'cupyx', 'torch', 'scipy', 'numba', 'jax', 'triton', 'cuda', 'pandas', 'cudf', 'os', 'sys', 're', 'math', 'typing', 'functools', 'itertools', 'collections', 'dataclasses', 'logging', 'warnings', 'abc', 'enum', 'time', 'json', 'pathlib', 'contextlib', 'threading', 'ctypes', 'copy', 'inspect', 'importlib', 'operator', 'weakref', '__future__']);
/** `#include <...>` of the CUDA toolkit, the C/C++ standard library and common third-party headers: not read. */
const EXTERNAL_INCLUDE = /^(thrust|cub|cuda|cuda_runtime|cuda_fp16|cuda_bf16|cuda_runtime_api|curand\w*|cublas\w*|cusparse\w*|cufft\w*|cusolver\w*|nccl|nvrtc|nvtx3?|cooperative_groups|mma|cutlass|cute|torch|ATen|c10|pybind11|Eigen|boost|gtest|gmock|omp|mpi|sys|stdio|stdlib|string|math|assert|stdint|stddef|limits|float|unistd|pthread)([/._]|$)/;

/** Candidate paths of a Python module (`pkg.sub`, `.sibling`, `..up.mod`) imported from `fromPath`. */
export function pythonModuleCandidates(mod: string, fromPath: string, roots: readonly string[]): string[] {
  const dots = /^\.*/.exec(mod)![0].length;
  const rest = mod.slice(dots).split('.').filter(Boolean);
  if (!dots && EXTERNAL_PY.has(rest[0] ?? '')) return [];
  const bases: string[] = [];
  if (dots) {
    let dir = posix.dirname(fromPath);
    for (let i = 1; i < dots; i++) dir = posix.dirname(dir);
    bases.push(dir === '.' ? '' : dir);
  } else {
    if (!rest.length) return [];
    // The repository root, the configured roots, and every folder above the changed file that holds a
    // package of that top-level name (`python/pkg/src/` for `import pkg.x` from `python/pkg/src/pkg/a.py`).
    bases.push('', ...roots.map((r) => (r === '.' ? '' : r)));
    const segs = posix.dirname(fromPath).split('/');
    for (let i = 0; i < segs.length; i++) if (segs[i] === rest[0]) bases.push(segs.slice(0, i).join('/'));
  }
  const out: string[] = [];
  for (const b of new Set(bases)) {
    const stem = posix.join(b || '.', ...rest);
    if (rest.length) out.push(`${stem}.py`);
    out.push(posix.join(stem, '__init__.py'));
  }
  return [...new Set(out.map((p) => posix.normalize(p)).filter((p) => !p.startsWith('../')))];
}

/** Candidate paths of an `#include` from `fromPath`: quoted ones first against the including folder. */
export function includeCandidates(inc: string, quoted: boolean, fromPath: string, roots: readonly string[]): string[] {
  if (posix.isAbsolute(inc) || !CXX.test(inc) || (!quoted && EXTERNAL_INCLUDE.test(inc))) return [];
  const out: string[] = [];
  if (quoted) out.push(posix.join(posix.dirname(fromPath), inc));
  for (const r of roots) out.push(posix.join(r, inc));
  return [...new Set(out.map((p) => posix.normalize(p)).filter((p) => !p.startsWith('../')))];
}

/**
 * Facts of a file's first parse by path and content hash, across reviews of one process (a service
 * reviewing pushes to one PR, the corpus runner): the same header is parsed once. Bounded LRU; facts
 * are small plain data (no trees), so the cache holds no parser memory.
 */
const CACHE_MAX = 2000;
const factsCache = new Map<string, { vocab: ResolvedConfig['vocab']; parsed: ParsedFile | null }>();
function cachedFacts(path: string, text: string, depth: number, config: ResolvedConfig, timeoutMs: number, keep?: (sources: Source[]) => void): ParsedFile | null {
  const key = `${path}\0${createHash('sha1').update(text).digest('hex')}`;
  const hit = factsCache.get(key);
  if (hit && hit.vocab === config.vocab) {
    factsCache.delete(key);
    factsCache.set(key, hit);
    return copyOf(hit.parsed, depth);
  }
  const sources = factSources(path, text, config, timeoutMs);
  keep?.(sources);
  const parsed = fileFacts(path, text, depth, config, timeoutMs, sources);
  factsCache.set(key, { vocab: config.vocab, parsed });
  if (factsCache.size > CACHE_MAX) factsCache.delete(factsCache.keys().next().value!);
  return copyOf(parsed, depth);
}

/** The review's own copy: its re-exports are filled per review (they depend on what resolves). */
function copyOf(p: ParsedFile | null, depth: number): ParsedFile | null {
  if (!p) return null;
  const { reexports: _r, ...facts } = p.facts;
  return { ...p, facts: { ...facts, depth } };
}

/** Whether a file's imports or includes reached indexed files with function facts (worth a second parse). */
function reachesFacts(ix: ProjectIndex, p: string): boolean {
  const withFns = (f: string) => Object.keys(ix.files[f]?.functions ?? {}).length > 0;
  const py = Object.values(ix.python[p] ?? {}).some((t) => withFns(t.slice(0, t.lastIndexOf('#'))));
  return py || (ix.includes[p] ?? []).some(withFns);
}

/** Candidate paths looked up per file the index may still take (most resolve on the first or second). */
const CANDIDATES_PER_FILE = 4;

interface Want {
  /** Candidate paths, first existing wins. */
  candidates: string[];
  /** What to record once it resolves. */
  bind: (path: string) => void;
}

/**
 * The index of everything the changed files reach (`notFollowed`: changed files the caller left out
 * at the bounds, for the output). Never throws for content: unreadable or unparsable
 * files are skipped; the stats say what was read and why the index stopped, if it did.
 */
export async function buildProjectIndex(changed: readonly ChangedFile[], read: BatchReader, config: ResolvedConfig, deadline = performance.now() + config.index.budgetMs, notFollowed = 0): Promise<ProjectIndex> {
  const t0 = performance.now();
  const lim = config.index;
  const ix: ProjectIndex = { files: {}, python: {}, includes: {}, stats: { files: 0, bytes: 0, ms: 0, missing: 0 } };
  const parsed = new Map<string, ParsedFile>();
  /** Sources of the first parse of files that may get a second model (bounded by the index's own bounds). */
  const trees = new Map<string, Source[]>();
  const texts = new Map<string, string>();
  const known = new Map<string, string | null>();
  const changedPaths = new Set(changed.map((c) => c.path));
  const stop = (why: string) => {
    ix.stats.stopped ??= why;
  };
  const parse = (path: string, text: string, depth: number) => {
    if (performance.now() > deadline) return stop(`index time budget (${Math.round(lim.budgetMs / 1000)} s) spent`);
    try {
      const budget = Math.max(1, Math.min(config.limits.fileTimeoutMs, deadline - performance.now()));
      // A file short of the last step may be modelled twice (below): its trees are kept for that.
      const keep = depth < lim.depth ? (ss: Source[]) => void trees.set(path, ss) : undefined;
      const p = depth === 0 ? fileLinks(path, text, config, budget) : cachedFacts(path, text, depth, config, budget, keep);
      if (p) parsed.set(path, p);
    } catch {
      // A file the parser cannot take is one fact source fewer, never a failed review.
    }
  };

  let frontier: string[] = [];
  for (const c of changed) {
    if (!PY.test(c.path) && !CXX.test(c.path)) continue;
    const text = c.text ?? null;
    if (text !== null) {
      texts.set(c.path, text);
      known.set(c.path, text);
    }
    frontier.push(c.path);
  }
  // The changed files' own texts, when the caller did not pass them.
  const unread = frontier.filter((p) => !texts.has(p));
  if (unread.length) {
    const got = await read(unread);
    for (const [p, t] of got) {
      known.set(p, t);
      if (t !== null) texts.set(p, t);
    }
    if (unread.some((p) => !got.has(p))) stop(read.stopped?.() ?? 'the reader stopped');
  }
  frontier = frontier.filter((p) => texts.has(p));
  // The changed files whose imports / includes are followed: the same file count and byte budget
  // (a 3,000-file PR: its first files only, said in the output; the review itself goes on).
  let scanned = 0;
  let scannedBytes = 0;
  const followed = frontier.filter((p) => {
    const n = texts.get(p)!.length;
    if (scanned >= lim.maxFiles || scannedBytes + n > lim.maxBytes) return false;
    scanned++;
    scannedBytes += n;
    return true;
  });
  const left = frontier.length - followed.length + notFollowed;
  if (left > 0) stop(`index.max_files (${lim.maxFiles}) / max_bytes (${lim.maxBytes}): the imports of ${left} of ${frontier.length + notFollowed} changed files not followed`);
  frontier = followed;
  const depthOf = new Map(frontier.map((p) => [p, 0]));
  for (const p of frontier) parse(p, texts.get(p)!, 0);

  for (let depth = 1; depth <= lim.depth && frontier.length; depth++) {
    const wants: Want[] = [];
    for (const from of frontier) wants.push(...wantsOf(from, parsed.get(from), ix, lim));
    const toRead = [...new Set(wants.flatMap((w) => w.candidates))].filter((p) => !known.has(p));
    // Bounds: a file count (files that exist: a candidate path that does not is no file of the index,
    // but its look-up is bounded too, at CANDIDATES_PER_FILE per file of room) and the time budget.
    const room = lim.maxFiles - ix.stats.files;
    const batch = toRead.slice(0, Math.max(0, room * CANDIDATES_PER_FILE));
    if (toRead.length > batch.length) stop(`index.max_files (${lim.maxFiles}) reached`);
    if (performance.now() > deadline) {
      stop(`index time budget (${Math.round(lim.budgetMs / 1000)} s) spent`);
      break;
    }
    if (batch.length) {
      const got = await read(batch);
      if (batch.some((p) => !got.has(p))) stop(read.stopped?.() ?? 'the reader stopped');
      for (const [p, t] of got) {
        if (t === null) {
          known.set(p, null);
          ix.stats.missing++;
          continue;
        }
        if (ix.stats.bytes + t.length > lim.maxBytes) {
          stop(`index.max_bytes (${lim.maxBytes}) reached`);
          known.set(p, null);
          continue;
        }
        if (ix.stats.files >= lim.maxFiles) {
          stop(`index.max_files (${lim.maxFiles}) reached`);
          known.set(p, null);
          continue;
        }
        known.set(p, t);
        texts.set(p, t);
        ix.stats.bytes += t.length;
        ix.stats.files++;
      }
    }
    const next: string[] = [];
    for (const w of wants) {
      const hit = w.candidates.find((c) => typeof known.get(c) === 'string');
      if (!hit) continue;
      w.bind(hit);
      if (!depthOf.has(hit)) {
        depthOf.set(hit, depth);
        next.push(hit);
      }
    }
    frontier = [...new Set(next)];
    // Facts of this step's files are parsed now (their imports drive the next step) but recorded
    // deepest first below, so transitive facts are not needed here.
    for (const p of frontier) parse(p, texts.get(p)!, depth);
  }

  // Record facts of the indexed (not the changed) files, deepest first: a file at depth d is re-parsed
  // under a config carrying the facts of depth > d, so its helpers inherit what their callees do.
  const order = [...depthOf].filter(([p]) => !changedPaths.has(p) && parsed.has(p)).sort((a, b) => b[1] - a[1]);
  let prevDepth = Number.POSITIVE_INFINITY;
  let withFacts: ResolvedConfig = config;
  for (const [p, d] of order) {
    if (d < prevDepth) {
      withFacts = { ...config, projectIndex: ix };
      prevDepth = d;
    }
    let facts = parsed.get(p)!.facts;
    if (d < lim.depth && performance.now() < deadline && reachesFacts(ix, p)) {
      try {
        facts = fileFacts(p, texts.get(p)!, d, withFacts, Math.max(1, Math.min(config.limits.fileTimeoutMs, deadline - performance.now())), trees.get(p))?.facts ?? facts;
      } catch {
        // keep the facts of the first parse
      }
    }
    trees.delete(p);
    facts.reexports = parsed.get(p)!.facts.reexports;
    ix.files[p] = facts;
  }
  // Transitive includes: a header's own headers come after it.
  for (const p of Object.keys(ix.includes)) {
    const seen = new Set<string>();
    const walk = (q: string, k: number) => {
      for (const h of ix.includes[q] ?? []) {
        if (seen.has(h) || h === p) continue;
        seen.add(h);
        if (k < lim.depth) walk(h, k + 1);
      }
    };
    walk(p, 1);
    ix.includes[p] = [...seen];
  }
  ix.stats.ms = Math.round(performance.now() - t0);
  return ix;
}

/** What a parsed file asks for: its imports (Python) or includes (C/C++/CUDA). */
function wantsOf(from: string, p: ParsedFile | undefined, ix: ProjectIndex, lim: ResolvedConfig['index']): Want[] {
  if (!p) return [];
  const out: Want[] = [];
  if (p.imports) {
    const names = (ix.python[from] ??= {});
    const reexports = (p.facts.reexports ??= {});
    for (const [name, mod] of p.imports) {
      const last = mod.split('.').pop() ?? '';
      // `from pkg.mod import f` binds `f` → `pkg.mod.f`: a submodule `pkg/mod/f.py`, or `f` defined in `pkg/mod`.
      const asModule = pythonModuleCandidates(mod, from, lim.pythonRoots);
      const parentMod = mod.slice(0, mod.length - last.length).replace(/\.$/, '');
      const asName = last && (parentMod || mod.startsWith('.')) ? pythonModuleCandidates(parentMod || '.'.repeat(/^\.*/.exec(mod)![0].length), from, lim.pythonRoots) : [];
      const bind = (target: string) => {
        names[name] ??= target;
        reexports[name] ??= target;
      };
      // A submodule (`from . import mod` → `mod.py`) is bound first; a name defined in the package second.
      if (asModule.length) out.push({ candidates: asModule, bind: (path) => bind(`${path}#`) });
      if (asName.length && last) out.push({ candidates: asName, bind: (path) => bind(`${path}#${last}`) });
    }
  }
  if (p.includes) {
    const list = (ix.includes[from] ??= []);
    for (const inc of p.includes) {
      const candidates = includeCandidates(inc.path, inc.quoted, from, lim.includeRoots);
      if (candidates.length) out.push({ candidates, bind: (path) => void (list.includes(path) || path === from || list.push(path)) });
    }
  }
  return out;
}

/**
 * Facts of one indexed file, built with the same shared models the rules use on a reviewed file
 * (the Python host model, the CUDA model, the stream facts and the Luisa model): no second copy of
 * what "returns device data", "synchronizes" or "launches" means.
 */
import type { ResolvedConfig } from '../config/schema.js';
import type { SyntaxNode } from '../core/types.js';
import { cudaModel, type CudaModel } from '../analysis/cuda.js';
import { BLOCKING_COPY } from '../analysis/hostsync.js';
import { luisaModel } from '../analysis/luisa.js';
import { pythonModel, type PyModel } from '../analysis/python.js';
import { streamFacts, syncingFunctions, type StreamFacts } from '../analysis/streams.js';
import { unparen } from '../analysis/syntax.js';
import { buildSources } from '../sources/build.js';
import { detectLanguage } from '../sources/detect.js';
import type { Source } from '../sources/types.js';
import type { ConstantFact, FileFacts, FunctionFacts, KernelSignature, Place } from './types.js';

const DEVICE_ALLOC = /^(cudaMalloc|cudaMallocAsync|cudaMallocPitch|cudaMalloc3D|cudaMallocArray|cudaMallocManaged|cuMemAlloc|cuMemAlloc_v2|cuMemAllocAsync|cuMemAllocManaged|cuMemAllocPitch)$/;
const DEVICE_FREE = /^(cudaFree|cudaFreeAsync|cudaFreeArray|cuMemFree|cuMemFree_v2|cuMemFreeAsync)$/;
const COMPILE = /^(nvrtcCompileProgram|cuModuleLoadData|cuModuleLoadDataEx|cuLinkComplete|cudaLibraryLoadData|cuLibraryLoadData)$/;

export interface ParsedFile {
  facts: FileFacts;
  /** Python: what the import statements bind (name → module path as written, relative or absolute). */
  imports?: ReadonlyMap<string, string>;
  /** C/C++: the `#include` targets as written, with whether they were quoted. */
  includes?: Array<{ path: string; quoted: boolean }>;
}

const lineOf = (s: Source, n: SyntaxNode): number => s.toFile(n.startPosition.row, n.startPosition.column)?.line ?? n.startPosition.row + 1;
const placeOf = (s: Source, n: SyntaxNode): Place => ({ path: s.path, line: lineOf(s, n) });
const inside = (outer: SyntaxNode, n: SyntaxNode) => n.startIndex >= outer.startIndex && n.endIndex <= outer.endIndex;

/**
 * What a file's import statements bind: name → module as written (`np` → `numpy`, `f` → `.mod.f`). The
 * Python host model reads the same statements the same way (PyModel.importMap); a changed file needs
 * only this, not a model of its own here (the review builds that).
 */
function pythonImports(root: SyntaxNode): Map<string, string> {
  const imports = new Map<string, string>();
  for (const imp of root.descendantsOfType(['import_statement', 'import_from_statement'])) {
    const from = imp.type === 'import_from_statement' ? imp.childForFieldName('module_name')?.text : undefined;
    for (const nm of imp.childrenForFieldName('name')) {
      if (nm.type === 'aliased_import') {
        const alias = nm.childForFieldName('alias')?.text;
        const mod = nm.childForFieldName('name')?.text;
        if (alias && mod) imports.set(alias, from ? `${from}.${mod}` : mod);
      } else if (nm.type === 'dotted_name') {
        if (from) imports.set(nm.text, `${from}.${nm.text}`);
        else imports.set(nm.text.split('.')[0], nm.text.split('.')[0]);
      }
    }
  }
  return imports;
}

function includesOf(root: SyntaxNode): Array<{ path: string; quoted: boolean }> {
  const includes: Array<{ path: string; quoted: boolean }> = [];
  for (const inc of root.descendantsOfType('preproc_include')) {
    const p = inc.childForFieldName('path');
    if (!p) continue;
    const target = p.text.replace(/^["<]|[">]$/g, '');
    if (target) includes.push({ path: target, quoted: p.type === 'string_literal' });
  }
  return includes;
}

/** `#include "x"` / `#include <x>` at the start of a line (a preprocessor line: no parse needed to find it). */
const INCLUDE_LINE = /^[ \t]*#[ \t]*include[ \t]*(?:"([^"\n]+)"|<([^>\n]+)>)/gm;

/**
 * A changed file: its imports or includes only, no models (the review models it itself). C/C++/CUDA
 * includes are read off the preprocessor lines without a parse (the review parses the file anyway:
 * issue #15's cost); an include inside a block comment is one more candidate look-up, never a fact.
 * Python imports need the parse (multi-line, aliased, relative).
 */
export function fileLinks(path: string, text: string, config: ResolvedConfig, timeoutMs: number): ParsedFile | null {
  const detected = detectLanguage(path, text, config.vocab.kernel_macros);
  if (!detected.language || detected.language === 'nvrtc-in-python') return null;
  if (detected.language !== 'python') {
    const facts: FileFacts = { path, language: detected.language === 'luisa-dsl' ? 'luisa-dsl' : 'cuda', depth: 0, functions: {}, constants: {}, kernels: [] };
    const includes: Array<{ path: string; quoted: boolean }> = [];
    for (const m of text.matchAll(INCLUDE_LINE)) includes.push(m[1] !== undefined ? { path: m[1], quoted: true } : { path: m[2], quoted: false });
    return { facts, includes };
  }
  const [main] = buildSources(path, detected.language, { text: text.replace(/\r\n/g, '\n'), firstLine: 1, label: 'file', wholeFile: true }, timeoutMs);
  if (!main) return null;
  const facts: FileFacts = { path, language: main.language === 'python' ? 'python' : main.language === 'luisa-dsl' ? 'luisa-dsl' : 'cuda', depth: 0, functions: {}, constants: {}, kernels: [] };
  return main.language === 'python' ? { facts, imports: pythonImports(main.root) } : { facts, includes: includesOf(main.root) };
}

/** The sources of an indexed file, kept by the index between its two passes (one parse, two models). */
export function factSources(path: string, text: string, config: ResolvedConfig, timeoutMs: number): Source[] {
  const detected = detectLanguage(path, text, config.vocab.kernel_macros);
  // A plain C/C++ header (no GPU code of its own) still holds the constants and wrappers its includers use.
  if (!detected.language && /\.(h|hh|hpp|hxx|inl|inc|ipp|tpp|c|cc|cpp|cxx)$/i.test(path)) detected.language = 'cuda';
  if (!detected.language || detected.language === 'nvrtc-in-python') return [];
  return buildSources(path, detected.language, { text: text.replace(/\r\n/g, '\n'), firstLine: 1, label: 'file', wholeFile: true }, timeoutMs);
}

/**
 * Parses one file (or takes the sources `factSources` built) and collects its facts; null when it is
 * not a language the review reads.
 */
export function fileFacts(path: string, text: string, depth: number, config: ResolvedConfig, timeoutMs: number, parsed?: Source[]): ParsedFile | null {
  const sources = parsed ?? factSources(path, text, config, timeoutMs);
  const main = sources[0];
  if (!main) return null;
  const facts: FileFacts = { path, language: main.language === 'python' ? 'python' : main.language === 'luisa-dsl' ? 'luisa-dsl' : 'cuda', depth, functions: {}, constants: {}, kernels: [] };
  if (main.language === 'python') {
    const m = pythonModel.compute(main, config);
    pythonFacts(main, m, streamFacts.compute(main, config), config, facts);
    for (const k of sources.filter((s) => s.language === 'nvrtc-in-python')) kernelSignatures(k, cudaModel.compute(k, config), facts, 'python-string');
    return { facts, imports: m.importMap };
  }
  const cm = main.language === 'luisa-dsl' ? luisaModel.compute(main, config).cuda : cudaModel.compute(main, config);
  cudaFacts(main, cm, streamFacts.compute(main, config), facts);
  kernelSignatures(main, cm, facts, 'cuda');
  if (main.language === 'luisa-dsl') {
    const lm = luisaModel.compute(main, config);
    for (const b of lm.bodies) if (b.kind === 'Callable' && b.name) (facts.callables ??= {})[b.name] = placeOf(main, b.node);
  }
  return { facts, includes: includesOf(main.root) };
}

function pythonFacts(s: Source, m: PyModel, sf: StreamFacts, config: ResolvedConfig, out: FileFacts): void {
  const syncing = new Map(syncingFunctions(s.root, sf).map((f) => [f.fn.id, f.sync]));
  for (const fn of s.root.descendantsOfType('function_definition')) {
    const name = fn.childForFieldName('name')?.text;
    if (!name) continue;
    let holder = fn.parent;
    if (holder?.type === 'decorated_definition') holder = holder.parent;
    let key: string | null = null;
    if (holder?.type === 'module') key = name;
    else if (holder?.type === 'block' && holder.parent?.type === 'class_definition') key = `${holder.parent.childForFieldName('name')?.text}.${name}`;
    if (!key) continue;
    const f: FunctionFacts = { name: key, path: s.path, line: lineOf(s, fn) };
    const mine = (n: SyntaxNode) => m.scopeOf(n).id === fn.id;
    const returns = fn.descendantsOfType('return_statement').filter(mine).map((r) => unparen(r.namedChildren[0] ?? null)).filter((v): v is SyntaxNode => !!v && v.type !== 'none');
    if (returns.some((v) => v.type !== 'tuple' && v.type !== 'expression_list' && m.isDevice(v))) f.returnsDevice = true;
    const tuples = returns.filter((v) => v.type === 'tuple' || v.type === 'expression_list');
    if (tuples.length) {
      const width = Math.max(...tuples.map((t) => t.namedChildren.length));
      const els = Array.from({ length: width }, (_, i) => tuples.some((t) => m.isDevice(t.namedChildren[i])));
      if (els.some(Boolean)) f.returnsDeviceTuple = els;
    }
    const params = fn.childForFieldName('parameters')?.namedChildren ?? [];
    if (params.some((p) => /^\**stream\b/.test(p.text) || /:\s*\S*Stream\b/.test(p.text))) f.takesStream = true;
    const sync = syncing.get(fn.id);
    if (sync) f.syncs = placeOf(s, sync);
    const d2h = m.d2h.find((d) => mine(d.node));
    if (d2h) f.readsToHost = placeOf(s, d2h.node);
    const op = m.gpuOps.find((o) => mine(o.node));
    if (op) f.launches = placeOf(s, op.node);
    const alloc = m.allocs.find(mine);
    if (alloc) f.allocates = placeOf(s, alloc);
    const compile = fn.descendantsOfType('call').find((c) => mine(c) && m.callMatches(c, config.vocab.nvrtc_compile_calls));
    if (compile) f.compiles = placeOf(s, compile);
    out.functions[key] = f;
  }
  // Module-level names bound once to a literal (`BLOCK = 256`, `KERNEL_NAME = "scan"`).
  const seen = new Map<string, number>();
  for (const st of s.root.namedChildren) {
    const a = st.type === 'expression_statement' ? st.namedChildren[0] : null;
    const left = a?.type === 'assignment' ? a.childForFieldName('left') : null;
    if (left?.type === 'identifier') seen.set(left.text, (seen.get(left.text) ?? 0) + 1);
  }
  for (const st of s.root.namedChildren) {
    const a = st.type === 'expression_statement' ? st.namedChildren[0] : null;
    if (a?.type !== 'assignment') continue;
    const left = a.childForFieldName('left');
    const right = a.childForFieldName('right');
    if (left?.type !== 'identifier' || !right || seen.get(left.text) !== 1) continue;
    if (!['integer', 'float', 'string', 'true', 'false', 'binary_operator'].includes(right.type) || right.text.length > 200) continue;
    const num = right.type === 'integer' ? Number(right.text.replace(/_/g, '')) : undefined;
    out.constants[left.text] = { name: left.text, value: right.text, ...(num !== undefined && Number.isFinite(num) ? { num } : {}), kind: 'module', path: s.path, line: lineOf(s, a) };
  }
}

function cudaFacts(s: Source, cm: CudaModel, sf: StreamFacts, out: FileFacts): void {
  for (const d of s.root.descendantsOfType('preproc_def')) {
    const name = d.childForFieldName('name')?.text;
    const value = d.childForFieldName('value')?.text.trim();
    if (!name || value === undefined) continue;
    const num = cm.constValueOfText(value);
    out.constants[name] = { name, value, ...(num !== null ? { num } : {}), kind: 'define', path: s.path, line: lineOf(s, d) };
  }
  for (const d of s.root.descendantsOfType('declaration')) {
    if (d.descendantsOfType('compound_statement').length || hasFunctionAncestor(d)) continue;
    const quals = d.children.filter((c) => c.type === 'type_qualifier' || c.type === 'storage_class_specifier').map((c) => c.text);
    if (!quals.some((q) => q === 'const' || q === 'constexpr')) continue;
    for (const c of d.namedChildren) {
      if (c.type !== 'init_declarator') continue;
      const id = c.childForFieldName('declarator');
      const value = c.childForFieldName('value');
      if (id?.type !== 'identifier' || !value) continue;
      const num = cm.constValue(value);
      out.constants[id.text] = { name: id.text, value: value.text, ...(num !== null ? { num } : {}), kind: 'constexpr', path: s.path, line: lineOf(s, d) };
    }
  }
  const syncing = new Map(syncingFunctions(s.root, sf).map((f) => [f.fn.id, f.sync]));
  // Calls in source order: a function's calls are one binary search and a short walk away (a large
  // header's functions times its calls would be quadratic).
  const byStart = [...cm.calls].sort((a, b) => a.node.startIndex - b.node.startIndex);
  const callsIn = (fn: SyntaxNode) => {
    let lo = 0;
    let hi = byStart.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (byStart[mid].node.startIndex < fn.startIndex) lo = mid + 1;
      else hi = mid;
    }
    const out: typeof byStart = [];
    for (let i = lo; i < byStart.length && byStart[i].node.startIndex < fn.endIndex; i++) if (inside(fn, byStart[i].node)) out.push(byStart[i]);
    return out;
  };
  for (const fn of cm.functions) {
    if (!fn.isHost || !fn.name || !fn.body) continue;
    const f: FunctionFacts = { name: fn.name, path: s.path, line: lineOf(s, fn.node) };
    const sync = syncing.get(fn.node.id);
    if (sync) f.syncs = placeOf(s, sync);
    const calls = callsIn(fn.node);
    const first = (re: RegExp) => calls.find((c) => re.test(c.name));
    const alloc = first(DEVICE_ALLOC);
    if (alloc) f.allocates = placeOf(s, alloc.node);
    const free = first(DEVICE_FREE);
    if (free) f.frees = placeOf(s, free.node);
    const copy = first(BLOCKING_COPY);
    if (copy) {
      f.blockingCopy = placeOf(s, copy.node);
      if (/DeviceToHost|Default/.test(copy.node.text)) f.readsToHost = placeOf(s, copy.node);
    }
    const compile = first(COMPILE);
    if (compile) f.compiles = placeOf(s, compile.node);
    const launch = cm.launches.find((l) => inside(fn.node, l.node));
    if (launch) {
      const b = cm.dim3(launch.block);
      f.launches = { ...placeOf(s, launch.node), ...(b ? { block: b[0] * b[1] * b[2] } : {}) };
    } else {
      const op = calls.find((c) => cm.isGpuOp(c.node));
      if (op) f.launches = placeOf(s, op.node);
    }
    if (cm.streamContract(fn) === 'param') f.takesStream = true;
    const ret = fn.node.childForFieldName('type')?.text ?? '';
    if (/\b(cudaStream_t|CUstream|cuda_stream_view)\b/.test(ret)) f.returnsStream = true;
    // Overloads keep the first definition with facts; a declaration-only name is not indexed.
    const prev = out.functions[fn.name];
    if (!prev || Object.keys(prev).length < Object.keys(f).length) out.functions[fn.name] = f;
  }
}

function hasFunctionAncestor(n: SyntaxNode): boolean {
  for (let p = n.parent; p; p = p.parent) if (p.type === 'function_definition' || p.type === 'compound_statement') return true;
  return false;
}

function kernelSignatures(s: Source, cm: CudaModel, out: FileFacts, where: KernelSignature['in']): void {
  for (const k of cm.kernels.values()) {
    const maxThreads = k.launchBounds?.maxThreads ? cm.constValue(k.launchBounds.maxThreads) : null;
    out.kernels.push({ name: k.name, params: k.params.map((p) => p.text.replace(/\s+/g, ' ')), ...(maxThreads !== null ? { maxThreads } : {}), path: s.path, line: lineOf(s, k.node), in: where });
  }
}

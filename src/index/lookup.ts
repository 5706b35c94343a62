/**
 * How the shared models consult the project index (types.ts). Nothing here reads a file: the index
 * was built before the review from what the changed files import or include, and reaches the models
 * through `config.projectIndex`. Local definitions always win; these answer only for names the
 * reviewed file does not define itself.
 */
import type { ResolvedConfig } from '../config/schema.js';
import type { ConstantFact, FunctionFacts, KernelSignature, Place, ProjectIndex } from './types.js';

const index = (config: ResolvedConfig): ProjectIndex | undefined => config.projectIndex;

/** Follows `path#name` through re-exports (`from .impl import f` in a package `__init__`), a few hops at most. */
function pyTarget(ix: ProjectIndex, target: string, hops = 0): FunctionFacts | null {
  const cut = target.lastIndexOf('#');
  const path = target.slice(0, cut);
  const name = target.slice(cut + 1);
  const file = ix.files[path];
  if (!file || !name) return null;
  const fn = file.functions[name];
  if (fn) return fn;
  const re = file.reexports?.[name];
  return re && hops < 4 ? pyTarget(ix, re, hops + 1) : null;
}

/**
 * The facts of the imported Python function a call path names in the file at `fromPath`: `helper`
 * (`from .mod import helper`), `mod.helper` (`from . import mod`, `import pkg.mod as mod`).
 */
export function pyFunctionFacts(config: ResolvedConfig, fromPath: string, callPath: string | null): FunctionFacts | null {
  const ix = index(config);
  if (!ix || !callPath) return null;
  const names = ix.python[fromPath];
  if (!names) return null;
  const direct = names[callPath];
  if (direct !== undefined && !direct.endsWith('#')) return pyTarget(ix, direct);
  const dot = callPath.indexOf('.');
  if (dot < 0) return null;
  const head = names[callPath.slice(0, dot)];
  const rest = callPath.slice(dot + 1);
  if (head === undefined || rest.includes('.')) return null;
  // `mod.helper` where `mod` is an indexed module, or an imported name that the module re-exports.
  if (head.endsWith('#')) return pyTarget(ix, head + rest);
  const target = pyTargetModule(ix, head);
  return target ? pyTarget(ix, `${target}#${rest}`) : null;
}

/** `from pkg import mod` that the index resolved to a module re-export (`path#mod` → `mod/__init__.py#`). */
function pyTargetModule(ix: ProjectIndex, target: string): string | null {
  const cut = target.lastIndexOf('#');
  const re = ix.files[target.slice(0, cut)]?.reexports?.[target.slice(cut + 1)];
  return re?.endsWith('#') ? re.slice(0, -1) : null;
}

/** A module-level constant of an imported Python module (`mod.BLOCK`, or `BLOCK` imported by name). */
export function pyConstant(config: ResolvedConfig, fromPath: string, name: string): ConstantFact | null {
  const ix = index(config);
  const names = ix?.python[fromPath];
  if (!ix || !names) return null;
  const t = names[name];
  if (t && !t.endsWith('#')) {
    const cut = t.lastIndexOf('#');
    return ix.files[t.slice(0, cut)]?.constants[t.slice(cut + 1)] ?? null;
  }
  const dot = name.indexOf('.');
  const head = dot > 0 ? names[name.slice(0, dot)] : undefined;
  if (head?.endsWith('#')) return ix.files[head.slice(0, -1)]?.constants[name.slice(dot + 1)] ?? null;
  return null;
}

/** Indexed headers the file at `fromPath` includes, nearest first. */
function headers(config: ResolvedConfig, fromPath: string): string[] {
  return index(config)?.includes[fromPath] ?? [];
}

/** A `#define` or namespace-scope constant of an included project header. */
export function includedConstant(config: ResolvedConfig, fromPath: string, name: string): ConstantFact | null {
  const ix = index(config);
  if (!ix) return null;
  for (const h of headers(config, fromPath)) {
    const c = ix.files[h]?.constants[name];
    if (c) return c;
  }
  return null;
}

/** A host function defined in an included project header (by its unqualified name). */
export function includedFunction(config: ResolvedConfig, fromPath: string, name: string): FunctionFacts | null {
  const ix = index(config);
  if (!ix) return null;
  const bare = name.split('::').pop() ?? name;
  for (const h of headers(config, fromPath)) {
    const f = ix.files[h]?.functions[bare];
    if (f) return f;
  }
  return null;
}

/** A kernel signature from an included header (or, for Python, from an imported module's kernel strings). */
export function includedKernel(config: ResolvedConfig, fromPath: string, name: string): KernelSignature | null {
  const ix = index(config);
  if (!ix) return null;
  for (const h of headers(config, fromPath)) {
    const k = ix.files[h]?.kernels.find((x) => x.name === name);
    if (k) return k;
  }
  return null;
}

/** A LuisaCompute `Callable` defined in an included header. */
export function includedCallable(config: ResolvedConfig, fromPath: string, name: string): Place | null {
  const ix = index(config);
  if (!ix) return null;
  for (const h of headers(config, fromPath)) {
    const c = ix.files[h]?.callables?.[name];
    if (c) return c;
  }
  return null;
}

/** Whether the review has an index for this file at all (cheap pre-check for the models). */
export function hasProjectFacts(config: ResolvedConfig, fromPath: string): boolean {
  const ix = index(config);
  return !!ix && (!!ix.python[fromPath] || !!ix.includes[fromPath]?.length);
}

/** "`stage_counts()` (src/pipeline/counts.py:41) synchronizes the device": what a finding says about a fact it used. */
export function describeFact(f: FunctionFacts): string | null {
  const at = (p: Place) => `${p.path}:${p.line}`;
  const what: string[] = [];
  if (f.syncs) what.push(`synchronizes the device (${at(f.syncs)})`);
  else if (f.readsToHost) what.push(`copies device data to the host (${at(f.readsToHost)})`);
  if (f.blockingCopy && !f.syncs) what.push(`makes a blocking copy (${at(f.blockingCopy)})`);
  if (f.frees) what.push(`frees device memory (${at(f.frees)})`);
  if (f.allocates) what.push(`allocates device memory (${at(f.allocates)})`);
  if (f.returnsDevice || f.returnsDeviceTuple?.some(Boolean)) what.push('returns device data');
  if (f.compiles) what.push(`compiles kernels (${at(f.compiles)})`);
  if (f.launches && !what.length) what.push(`launches GPU work (${at(f.launches)})`);
  if (!what.length) return null;
  return `\`${f.name}()\` (${f.path}:${f.line}) ${what.join(', ')}`;
}

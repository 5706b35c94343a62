/**
 * The project index (issue #15): facts about the files a change imports or includes, so the shared
 * models answer "is this a device value / a sync / a launch / a constant" the same way for a local
 * name and an imported one. Plain data (no syntax nodes), so it travels to worker threads with the
 * config and a finding can name where a fact comes from.
 */

/**
 * Reads files of the repository at the reviewed revision, in one batch: path → text, or null when the
 * path does not exist there. The CLI reads a checkout (`--repo`) or `git show REV:PATH` (`--git`); the
 * App reads the head commit through batched GraphQL (src/github/index-reader.ts). A reader with a
 * bound of its own (the App's request count) leaves out the paths it did not read, and `stopped` says
 * why: the index then stops there as it does at its own bounds.
 */
export type BatchReader = ((paths: string[]) => Promise<Map<string, string | null>>) & { stopped?: () => string | undefined };

/** Where a fact was found: a path and a 1-based line. */
export interface Place {
  path: string;
  line: number;
}

/** What one function does, as far as the models of its own file can tell. */
export interface FunctionFacts {
  name: string;
  path: string;
  line: number;
  /** Some `return` gives a device value (Python host model). */
  returnsDevice?: true;
  /** `return a, b`: which elements are device values. */
  returnsDeviceTuple?: boolean[];
  /** Takes a stream parameter (CUDA: a stream-typed parameter; Python: a parameter named `stream`). */
  takesStream?: true;
  /** Returns a stream. */
  returnsStream?: true;
  /** Blocks the host on the device on every path: a sync call, directly or through a helper it calls. */
  syncs?: Place;
  /** Copies device data to the host (a blocking read: `.get()`, `.item()`, `cudaMemcpy` D2H). */
  readsToHost?: Place;
  /** Launches a kernel or runs other GPU work. */
  launches?: Place & { block?: number };
  /** Allocates device memory. */
  allocates?: Place;
  /** Frees device memory. */
  frees?: Place;
  /** A blocking `cudaMemcpy`-family copy. */
  blockingCopy?: Place;
  /** Compiles kernel source (NVRTC, `RawModule`, `cuModuleLoadData`, ...). */
  compiles?: Place;
}

/** A named constant: `#define`, `constexpr`/`const` at namespace scope, a module-level Python name. */
export interface ConstantFact {
  name: string;
  /** Its value as written. */
  value: string;
  /** Its integer value when the model of its file can evaluate it. */
  num?: number;
  kind: 'define' | 'constexpr' | 'module';
  path: string;
  line: number;
}

/** A kernel signature, wherever the kernel is defined: a `.cu` file, a header or a Python string. */
export interface KernelSignature {
  name: string;
  params: string[];
  /** `__launch_bounds__` maximum threads, when constant. */
  maxThreads?: number;
  path: string;
  line: number;
  in: 'cuda' | 'python-string';
}

export interface FileFacts {
  path: string;
  language: 'python' | 'cuda' | 'luisa-dsl';
  depth: number;
  /** By name; Python methods as `Class.method`. */
  functions: Record<string, FunctionFacts>;
  constants: Record<string, ConstantFact>;
  kernels: KernelSignature[];
  /** LuisaCompute: `Callable` names defined in the file. */
  callables?: Record<string, Place>;
  /** Python: names the module binds by import (`from .x import f`) → `path#name` (or `path#` for a module). */
  reexports?: Record<string, string>;
}

export interface IndexStats {
  files: number;
  bytes: number;
  ms: number;
  /** Paths read that did not exist (unresolved candidates). */
  missing: number;
  /** Why the index stopped short (a bound), when it did. */
  stopped?: string;
}

export interface ProjectIndex {
  files: Record<string, FileFacts>;
  /**
   * Python, per reviewed or indexed file: what its imported names mean. A key is a name as the code
   * spells it (`ndi`, `stage_counts`); the value `path#name` names a function (or a re-export) of an
   * indexed file, `path#` an indexed module.
   */
  python: Record<string, Record<string, string>>;
  /** C/C++/CUDA, per file: the indexed headers it includes (directly first, then theirs). */
  includes: Record<string, string[]>;
  stats: IndexStats;
}

export interface IndexLimits {
  enabled: boolean;
  depth: number;
  maxFiles: number;
  maxBytes: number;
  /** Share of the review time budget the index may take. */
  budgetMs: number;
  includeRoots: string[];
  pythonRoots: string[];
}

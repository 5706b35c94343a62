import { existsSync } from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import type { ResolvedConfig } from '../config/schema.js';
import type { DiffFile } from '../diff/model.js';
import type { FileDone, ReviewOptions, Scope } from './file.js';
import type { CheckDef } from '../engine/check.js';
import { CHECKS } from '../../checks/registry.generated.js';
import type { FileReport, Finding } from '../core/types.js';
import { diffScopeEnabled } from '../sources/diff-scope.js';
import { isolationNow, processPool, type TaskPool } from './process-pool.js';

/**
 * Reviews run off the main thread, in worker threads of a piscina pool (the CLI, the Action) or in
 * child processes of a tinypool pool (the service, the App: process-pool.ts), so the webhook server and
 * /healthz answer while a review runs and a file's budget is preemptive: a file still running
 * at its deadline (`limits.file_timeout_ms`, or what is left of `limits.review_timeout_ms`) has its
 * worker terminated (piscina aborts the task and replaces the thread), and the file is reported as
 * timed out. One pool per process, shared by all reviews; at most as many files run as there are
 * threads, so a file's clock starts when it starts, not while it waits.
 *
 * Threads: GPU_REVIEW_WORKERS=N (0 = no pool: files run on the main thread with the soft budgets
 * only), else ReviewOptions.workers, else the cores, at least 2, at most 4.
 * Only the built-in checks can be sent to a worker (check objects hold functions); a review with
 * other checks runs on the main thread.
 */

export interface WorkerTask {
  config: PortableConfig;
  /** The config's JSON, made once per review: the worker's cache key. */
  configKey: string;
  checkIds: string[] | null;
  scope: Scope;
  file: DiffFile;
  content: string | Uint8Array | null;
  /** The time the file may take; the worker stops itself at it (see HARD_STOP_GRACE_MS). */
  budgetMs: number;
  /** ReviewOptions.diffScope, resolved by the main thread (a worker's env is a copy). */
  diffScope?: boolean;
}

/**
 * The worker is terminated only this long after its budget: within the budget it stops itself
 * (the parse is bounded natively, checks stop being started), so termination is kept for code
 * that does not return. Terminating a thread inside a native parser call can abort the process.
 */
export const HARD_STOP_GRACE_MS = 2000;
let hardStopGraceMs = HARD_STOP_GRACE_MS;
/**
 * Tests move the hard stop: a negative grace puts it before the worker's own stop, so it lands
 * inside the work (a native parse). Child processes only: a thread stopped there can abort the process.
 */
export function setHardStopGraceMs(ms: number = HARD_STOP_GRACE_MS): void {
  hardStopGraceMs = ms;
}

/** ResolvedConfig with its two name patterns as sources (functions cannot be posted). */
export type PortableConfig = Omit<ResolvedConfig, 'hotPathFunctions' | 'setupFunctions'> & { hotPathFunctions: string; setupFunctions: string };

export function portableConfig(c: ResolvedConfig): PortableConfig {
  return { ...c, hotPathFunctions: c.hotPathFunctions.source, setupFunctions: c.setupFunctions.source };
}

const builtWorker = new URL('./review-worker.js', import.meta.url);
/**
 * The worker script: the compiled sibling, or (tests and benchmarks run from the TypeScript
 * sources, where there is none) the one GPU_REVIEW_WORKER_SCRIPT names, e.g. dist/src/review/review-worker.js.
 */
function workerUrlNow(): URL {
  const env = process.env.GPU_REVIEW_WORKER_SCRIPT;
  return env ? new URL(`file://${env.startsWith('/') ? '' : process.cwd() + '/'}${env}`) : builtWorker;
}
let pool: TaskPool | null = null;
let poolSize = 0;
let running = 0;
const waiting: Array<() => void> = [];

export function poolThreads(opts: Pick<ReviewOptions, 'workers'>): number {
  const env = process.env.GPU_REVIEW_WORKERS;
  if (env !== undefined && env !== '') return Math.max(0, Math.floor(Number(env)) || 0);
  if (opts.workers !== undefined) return Math.max(0, opts.workers);
  // The main thread only reads files and merges results, so every core can take a worker.
  return Math.max(2, Math.min(4, os.availableParallelism()));
}

/** Compiled output only: under a TypeScript loader (tests) there is no worker script to start. */
function workerScript(): URL | null {
  const u = workerUrlNow();
  return u.protocol === 'file:' && existsSync(fileURLToPath(u)) ? u : null;
}

let poolScript = '';
/** Children lost while idle (see process-pool.ts); a review in flight sees its own task's error. */
let lostIdle = 0;
export function idleChildrenLost(): number {
  return lostIdle;
}
function getPool(n: number, script: URL): TaskPool {
  // Threads (piscina) for the CLI, child processes (tinypool) for the service and the App: process-pool.ts says why.
  const proc = isolationNow() === 'process';
  const key = `${proc ? 'process' : 'thread'} ${script.href}`;
  if (!pool || poolSize !== n || poolScript !== key) {
    poolScript = key;
    void pool?.destroy();
    pool = proc
      ? processPool(n, new URL('./review-process.js', script), () => lostIdle++)
      : // The analyses recurse over syntax trees; a larger stack keeps deep (but legal) code in reach.
        new Piscina({ filename: script.href, minThreads: 0, maxThreads: n, idleTimeout: 30_000, resourceLimits: { stackSizeMb: 8 } });
    poolSize = n;
  }
  return pool;
}

async function slot(n: number): Promise<void> {
  if (running < n) {
    running++;
    return;
  }
  await new Promise<void>((r) => waiting.push(r));
}
function release(): void {
  const next = waiting.shift();
  if (next) next();
  else running--;
}

/** The ids of `checks` when every one is the built-in object (or a severity override of it), else null. */
function builtinIds(checks: readonly CheckDef[] | undefined): string[] | null | false {
  if (checks === undefined) return null;
  const byId = new Map(CHECKS.map((c) => [c.id, c]));
  for (const c of checks) {
    const b = byId.get(c.id);
    if (!b || b.create !== c.create) return false;
  }
  return checks.map((c) => c.id);
}

export class FileTimeout extends Error {}

/** The pool a review's work goes to, with what every task carries; null when work stays on the main thread. */
interface PoolHandle {
  n: number;
  pool: TaskPool;
  config: PortableConfig;
  configKey: string;
  checkIds: string[] | null;
}

function poolFor(opts: Pick<ReviewOptions, 'config' | 'checks' | 'workers'>): PoolHandle | null {
  const n = poolThreads(opts);
  const script = n === 0 ? null : workerScript();
  if (!script) return null;
  const ids = builtinIds(opts.checks);
  if (ids === false) return null;
  const config = portableConfig(opts.config);
  return { n, pool: getPool(n, script), config, configKey: JSON.stringify(config), checkIds: ids };
}

/**
 * One task in a slot of the pool: its budget is taken when the slot is free (a file's clock starts
 * when it starts, not while it waits); the worker stops itself at the budget and is terminated
 * HARD_STOP_GRACE_MS later, which rejects with `stopped(budget)`.
 */
async function bounded<R>(h: PoolHandle, budgetNow: () => number, task: (budgetMs: number) => unknown, name: string | undefined, stopped: (budget: number) => Error): Promise<R> {
  await slot(h.n);
  const budget = budgetNow();
  const ac = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    ac.abort();
  }, Math.max(1, Math.max(1, budget) + hardStopGraceMs));
  try {
    return (await h.pool.run(task(Math.max(1, budget)), { signal: ac.signal, ...(name ? { name } : {}) })) as R;
  } catch (e) {
    if (timedOut) throw stopped(budget);
    throw e;
  } finally {
    clearTimeout(timer);
    release();
  }
}

/**
 * The function review() runs each file through, or null when files stay on the main thread
 * (no worker script, GPU_REVIEW_WORKERS=0, or checks that are not the built-in ones). It resolves
 * to the file's result, or rejects with FileTimeout when its worker was stopped at the deadline.
 */
export function isolatedRunner(
  opts: ReviewOptions,
  scope: Scope,
  reviewDeadline: number,
): { threads: number; run: (file: DiffFile, content: string | Uint8Array | null) => Promise<FileDone> } | null {
  const h = poolFor(opts);
  if (!h) return null;
  const fileMs = opts.config.limits.fileTimeoutMs;
  return {
    threads: h.n,
    run: (file, content) =>
      bounded<FileDone>(
        h,
        () => Math.min(fileMs, reviewDeadline - performance.now()),
        (budgetMs): WorkerTask => ({ config: h.config, configKey: h.configKey, checkIds: h.checkIds, scope, file, content, budgetMs, diffScope: opts.diffScope ?? diffScopeEnabled() }),
        undefined,
        (budget) => new FileTimeout(budget < fileMs ? 'review' : 'file'),
      ),
  };
}

/** Pass 7 for one file's findings (src/review/pass7.ts → review-worker.ts `pass7`). */
export interface Pass7Task {
  path: string;
  findings: Finding[];
  report: FileReport;
  diffFile: DiffFile;
  lines: Array<string | undefined>;
  compile: boolean;
}
/** What `pass7` sends back: per finding, in the task's order, what pass 7 set on it. */
export interface Pass7FileResult {
  outcomes: Array<Pick<Finding, 'rewrite' | 'fix' | 'suggestionFits'>>;
  summary: import('../rewrite/index.js').Pass7Summary;
}
/** What a named task of the worker receives besides its payload. */
export interface NamedTaskEnvelope<T> {
  config: PortableConfig;
  configKey: string;
  checkIds: string[] | null;
  budgetMs: number;
  payload: T;
}

/**
 * A named export of review-worker.ts run in the review pool, with the same slots and the same
 * deadline rule as files. `deadline` is a performance.now() time. Null when work stays on the main
 * thread (see isolatedRunner).
 */
export function isolatedTask<T, R>(name: string, opts: Pick<ReviewOptions, 'config' | 'checks' | 'workers'>): ((payload: T, deadline: number) => Promise<R>) | null {
  const h = poolFor(opts);
  if (!h) return null;
  return (payload, deadline) =>
    bounded<R>(
      h,
      () => deadline - performance.now(),
      (budgetMs): NamedTaskEnvelope<T> => ({ config: h.config, configKey: h.configKey, checkIds: h.checkIds, budgetMs, payload }),
      name,
      () => new FileTimeout('its time budget was spent'),
    );
}

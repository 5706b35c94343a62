import { existsSync } from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { ResolvedConfig } from '../config/schema.js';
import type { DiffFile, DiffModel } from '../diff/model.js';
import type { FileDone, ReviewOptions, Scope } from '../pipeline.js';
import type { CheckDef } from './check.js';

/**
 * Worker threads for large reviews: files are independent (each is parsed and checked on its own),
 * so other cores take files while the main thread takes files too. The pool is made on first use
 * and kept (its threads are unref'd: they never keep the process alive); a review uses it only when
 * it has enough work to pay for the hand-over, and only with the built-in checks (check objects
 * hold functions and cannot be sent). Results are merged in diff order by review(), so findings do
 * not depend on which thread analysed a file.
 *
 * Threads: GPU_REVIEW_WORKERS=N (0 = none), else ReviewOptions.workers, else one fewer than the
 * available cores, at most 3.
 */

/** Below this many added lines in reviewable files the review stays on the main thread. */
const MIN_LINES = 4000;
const MIN_FILES = 4;
/** Files handed to one worker at a time, so it does not wait for the busy main thread between files. */
const DEPTH = 2;

interface Job {
  resolve: (d: FileDone) => void;
  reject: (e: Error) => void;
}
interface PoolWorker {
  worker: Worker;
  jobs: Map<number, Job>;
  configs: WeakSet<object>;
  dead: boolean;
}

const workerUrl = new URL('./review-worker.js', import.meta.url);
let pool: PoolWorker[] = [];
let nextJob = 0;
const configIds = new WeakMap<object, number>();
let nextConfig = 0;

function wanted(opts: ReviewOptions): number {
  const env = process.env.GPU_REVIEW_WORKERS;
  if (env !== undefined && env !== '') return Math.max(0, Math.floor(Number(env)) || 0);
  if (opts.workers !== undefined) return Math.max(0, opts.workers);
  return Math.max(0, Math.min(3, os.availableParallelism() - 1));
}

function spawn(): PoolWorker {
  const worker = new Worker(workerUrl);
  const pw: PoolWorker = { worker, jobs: new Map(), configs: new WeakSet(), dead: false };
  worker.on('message', (m: { id: number; done?: FileDone; error?: string }) => {
    const job = pw.jobs.get(m.id);
    if (!job) return;
    pw.jobs.delete(m.id);
    if (!pw.jobs.size) worker.unref();
    if (m.done) job.resolve(m.done);
    else job.reject(new Error(m.error ?? 'worker failed'));
  });
  const fail = (e: Error) => {
    pw.dead = true;
    pool = pool.filter((p) => p !== pw);
    for (const job of pw.jobs.values()) job.reject(e);
    pw.jobs.clear();
  };
  worker.on('error', fail);
  worker.on('exit', (code) => fail(new Error(`review worker exited with code ${code}`)));
  // Referenced only while it has jobs (send), so an idle pool never keeps the process alive. After the
  // listeners: adding a 'message' listener refs the worker's port again.
  worker.unref();
  return pw;
}

function send(pw: PoolWorker, config: ResolvedConfig, scope: Scope, file: DiffFile, content: string | Uint8Array | null): Promise<FileDone> {
  let cid = configIds.get(config);
  if (cid === undefined) configIds.set(config, (cid = ++nextConfig));
  // The config goes over once per worker; later jobs name it by id, so caches keyed by the config
  // object (compiled vocabularies) keep working in the worker.
  const withConfig = !pw.configs.has(config);
  pw.configs.add(config);
  const id = ++nextJob;
  return new Promise<FileDone>((resolve, reject) => {
    if (!pw.jobs.size) pw.worker.ref();
    pw.jobs.set(id, { resolve, reject });
    pw.worker.postMessage({ id, cid, config: withConfig ? config : undefined, scope, file, content });
  });
}

/**
 * Extra lanes for review(): one function per worker slot, each analysing one file in a worker. If a
 * worker dies, its files are analysed on the main thread instead (`fallback`). Empty when the review
 * is small, custom checks are in use, or no workers are wanted.
 */
export function workerLanes(
  opts: ReviewOptions,
  diff: DiffModel,
  _checks: readonly CheckDef[],
  scope: Scope,
  fallback: (file: DiffFile, content: string | Uint8Array | null) => FileDone,
): Array<(file: DiffFile, content: string | Uint8Array | null) => Promise<FileDone>> {
  const n = wanted(opts);
  if (n === 0 || opts.checks !== undefined) return [];
  const reviewable = diff.files.filter((f) => f.status !== 'deleted' && !f.binary && !f.modeOnly && !f.problem);
  if (reviewable.length < MIN_FILES) return [];
  let lines = 0;
  for (const f of reviewable) lines += f.added.size;
  if (lines < MIN_LINES) return [];
  // Compiled output only: under a TypeScript loader (tests) there is no worker script to start.
  if (workerUrl.protocol !== 'file:' || !existsSync(fileURLToPath(workerUrl))) return [];
  while (pool.length < n) pool.push(spawn());
  const lanes: Array<(file: DiffFile, content: string | Uint8Array | null) => Promise<FileDone>> = [];
  for (const pw of pool.slice(0, n)) {
    for (let k = 0; k < DEPTH; k++) {
      lanes.push(async (file, content) => {
        if (pw.dead) return fallback(file, content);
        try {
          return await send(pw, opts.config, scope, file, content);
        } catch {
          return fallback(file, content);
        }
      });
    }
  }
  return lanes;
}

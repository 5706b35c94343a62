/**
 * Reviews in child processes (issue 16): the service and the App analyse files in forked Node
 * processes of a tinypool pool (`runtime: 'child_process'`), so the hard stop at a deadline is a
 * signal to a process, never the termination of a thread inside the server's own process.
 *
 * Why: terminating a worker *thread* while it is inside a native call (tree-sitter's parse) makes
 * the pending N-API exception escape as a C++ exception, and the whole process aborts
 * ("terminate called after throwing an instance of 'Napi::Error'", SIGABRT). A child process
 * killed there takes only itself down; tinypool starts a new one for the next task.
 *
 * The CLI keeps worker threads (piscina, pool.ts): one review per process, and a thread starts in
 * a fraction of a process's time (README "Isolation" gives the figures); the Action, like the CLI.
 * GPU_REVIEW_ISOLATION=thread|process overrides the choice for any entry point.
 *
 * Messages to a child go through the IPC channel as JSON, which has no Set, Uint8Array, undefined
 * or Infinity (a DiffFile holds Sets, a file may be bytes, lines have holes): each task and each
 * result crosses as V8's structured serialization in base64 (the same clone a worker thread's
 * postMessage makes), see `encode` / `decode`.
 */
import { fileURLToPath } from 'node:url';
import v8 from 'node:v8';
import { Tinypool } from 'tinypool';

export type Isolation = 'thread' | 'process';

let defaultIsolation: Isolation = 'thread';

/** The service and the App call this once: their reviews run in child processes. */
export function useProcessIsolation(): void {
  defaultIsolation = 'process';
}

/** GPU_REVIEW_ISOLATION when it is `thread` or `process`, else the entry point's default. */
export function isolationNow(): Isolation {
  const env = process.env.GPU_REVIEW_ISOLATION;
  return env === 'thread' || env === 'process' ? env : defaultIsolation;
}

/**
 * A task or a result as it crosses the IPC channel. A task's config (the same for every file of a
 * review, about 20 KB) is serialized once per review in this process and decoded once per child
 * (`cfg`, by its key), not once per file.
 */
export interface Encoded {
  v8: string;
  cfg?: { key: string; v8: string };
}

const b64 = (x: unknown) => v8.serialize(x).toString('base64');
const unb64 = (s: string): unknown => v8.deserialize(Buffer.from(s, 'base64'));

/** Small LRU of configs by their key (on either side). */
function lru<V>(max: number): { get(k: string, make: () => V): V } {
  const m = new Map<string, V>();
  return {
    get(k, make) {
      let v = m.get(k);
      if (v === undefined) {
        v = make();
        m.set(k, v);
        if (m.size > max) m.delete(m.keys().next().value!);
      }
      return v;
    },
  };
}
const sentConfigs = lru<string>(8);
const gotConfigs = lru<unknown>(8);

export function encode(x: unknown): Encoded {
  if (x && typeof x === 'object' && 'config' in x && 'configKey' in x && typeof x.configKey === 'string') {
    const { config, ...rest } = x as { config: unknown; configKey: string };
    return { v8: b64(rest), cfg: { key: rest.configKey, v8: sentConfigs.get(rest.configKey, () => b64(config)) } };
  }
  return { v8: b64(x) };
}

export function decode<T>(e: Encoded): T {
  const x = unb64(e.v8);
  if (!e.cfg) return x as T;
  const { key, v8: cfg } = e.cfg;
  return { ...(x as object), config: gotConfigs.get(key, () => unb64(cfg)) } as T;
}

/** What pool.ts needs of a pool: piscina's `run` and `destroy`, and this one's. */
export interface TaskPool {
  run(task: unknown, opts: { signal: AbortSignal; name?: string }): Promise<unknown>;
  destroy(): Promise<void>;
}

/** The child's stack, in KiB: V8's default is under 1 MiB; the threads get 8 MiB (pool.ts). Kept under the usual 8 MiB `ulimit -s`. */
const CHILD_STACK_KB = 7000;

/**
 * A child was lost (killed at a deadline, out of memory, crashed): the error its task rejects
 * with. Anything else is the task's own error, re-thrown as it was.
 */
export class ChildLost extends Error {}

/** A pool of `n` child processes running `script` (review-process.js). */
export function processPool(n: number, script: URL, onIdleExit: (err: Error) => void): TaskPool {
  const tp = new Tinypool({
    filename: fileURLToPath(script),
    runtime: 'child_process',
    minThreads: 0,
    maxThreads: n,
    idleTimeout: 30_000,
    // Not the parent's flags (a test runner's loaders); the environment as it is (tinypool's default is none: no PATH).
    execArgv: [`--stack-size=${CHILD_STACK_KB}`],
    env: Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => e[1] !== undefined)),
  });
  // A child that exits while it has no task (killed from outside, out of memory) is reported here;
  // without a listener, the pool's 'error' event would be thrown in this process.
  tp.on('error', onIdleExit);
  return {
    async run(task, opts) {
      try {
        return decode(await tp.run(encode(task), { signal: opts.signal, ...(opts.name ? { name: opts.name } : {}) }));
      } catch (e) {
        if (e instanceof Error && /exited unexpectedly/.test(e.message)) throw new ChildLost(`the analysis process ended (${e.message.toLowerCase()})`);
        throw e;
      }
    },
    destroy: () => tp.destroy(),
  };
}

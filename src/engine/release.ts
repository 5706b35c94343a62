import v8 from 'node:v8';
import vm from 'node:vm';

/**
 * Syntax trees live in native memory that V8 does not see: a tree is freed only by its N-API
 * finalizer, after a garbage collection found its wrapper dead. A worker's JS heap stays small
 * while it parses megabytes, so V8 rarely collects and dead trees pile up (2,015 real files:
 * 1.6 GB peak RSS). After every RELEASE_BYTES (1 MB; 4 MB left 10 % more RSS, 1 MB cost about 5 % more CPU
 * on a 6 MB subset) of parsed source, a full collection is asked for
 * once the file's results are out; the finalizers then run when the event loop next turns.
 * The main thread's lanes yield between two files (pipeline.ts). A piscina worker does not: between
 * tasks it blocks in Atomics.wait (its default `atomics: 'sync'`), so no immediate and no N-API
 * finalizer ever ran there and every tree a worker parsed stayed in memory until the review ended
 * (2,015 real files, two workers: 1.5 GB peak RSS against 0.57 GB on the main thread alone).
 * `releaseTrees` is the awaitable form the worker uses: it lets the loop turn after collecting.
 *
 * GPU_REVIEW_RELEASE_MB overrides the interval (0: never collect explicitly).
 */
const RELEASE_BYTES = (() => {
  const env = process.env.GPU_REVIEW_RELEASE_MB;
  const mb = env !== undefined && env !== '' && Number.isFinite(Number(env)) ? Math.max(0, Number(env)) : 1;
  return mb * 1e6;
})();

let collect: (() => void) | null | undefined;
function collector(): (() => void) | null {
  if (collect === undefined) {
    try {
      // `gc` is only exposed to contexts made after the flag is set; the caller's globals stay as they are.
      v8.setFlagsFromString('--expose-gc');
      collect = vm.runInNewContext('gc') as () => void;
    } catch {
      collect = null;
    }
  }
  return collect;
}

let sinceLast = 0;

/** A file of `bytes` source was analysed and its trees are no longer referenced; true when it collected. */
export function treesDone(bytes: number): boolean {
  if (RELEASE_BYTES <= 0) return false;
  sinceLast += bytes;
  if (sinceLast < RELEASE_BYTES) return false;
  sinceLast = 0;
  const gc = collector();
  gc?.();
  return gc !== null;
}

/**
 * treesDone, then (when it collected) two turns of the event loop, so the native finalizers of
 * the dead trees run now: N-API queues them as immediates after the collection.
 */
export async function releaseTrees(bytes: number): Promise<void> {
  if (!treesDone(bytes)) return;
  for (let i = 0; i < 2; i++) await new Promise<void>((r) => setImmediate(r));
}

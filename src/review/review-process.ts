/**
 * Child process of the service's review pool (process-pool.ts, tinypool `child_process`): the
 * same tasks as the worker threads (review-worker.ts), with each task and result in V8's
 * structured serialization (`encode` / `decode`), since the IPC channel carries JSON only.
 */
import { decode, encode, type Encoded } from './process-pool.js';
import reviewTask, { pass7 as pass7Task } from './review-worker.js';

export default async function review(e: Encoded): Promise<Encoded> {
  return encode(await reviewTask(decode(e)));
}

export async function pass7(e: Encoded): Promise<Encoded> {
  return encode(await pass7Task(decode(e)));
}

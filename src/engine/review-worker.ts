/**
 * Worker thread of the review pool (pool.ts): analyses one file per message with the built-in
 * checks and the review's config, and answers with plain data (FileDone).
 */
import { parentPort } from 'node:worker_threads';
import type { ResolvedConfig } from '../config/schema.js';
import type { DiffFile } from '../diff/model.js';
import { activeChecks, reviewFileContent, type Scope } from '../pipeline.js';
import type { CheckDef } from './check.js';

interface Message {
  id: number;
  cid: number;
  config?: ResolvedConfig;
  scope: Scope;
  file: DiffFile;
  content: string | Uint8Array | null;
}

/** Configs by id, newest last; a few are kept for reviews that overlap. */
const configs = new Map<number, { config: ResolvedConfig; checks: CheckDef[] }>();

parentPort!.on('message', (m: Message) => {
  try {
    if (m.config && !configs.has(m.cid)) {
      configs.set(m.cid, { config: m.config, checks: activeChecks(m.config) });
      if (configs.size > 8) configs.delete(configs.keys().next().value!);
    }
    const c = configs.get(m.cid);
    if (!c) throw new Error(`unknown config ${m.cid}`);
    const done = reviewFileContent(m.file, m.content, c.config, c.checks, m.scope);
    parentPort!.postMessage({ id: m.id, done });
  } catch (e) {
    parentPort!.postMessage({ id: m.id, error: (e as Error).message });
  }
});

/**
 * Worker thread of the review pool (pool.ts, piscina): analyses one file per task with the
 * built-in checks and the review's config, and answers with plain data (FileDone).
 */
import type { ResolvedConfig } from '../config/schema.js';
import { activeChecks, reviewFileContent, type FileDone } from '../pipeline.js';
import type { CheckDef } from './check.js';
import type { PortableConfig, WorkerTask } from './pool.js';
import { namePattern } from './regex.js';
import { CHECKS } from './registry.generated.js';
import { treesDone } from './release.js';

/**
 * Configs seen recently, by their JSON, so caches keyed by the config object (compiled
 * vocabularies, memoized models) keep working across the files of one review.
 */
const configs = new Map<string, { config: ResolvedConfig; checks: Map<string, CheckDef[]> }>();

function revive(p: PortableConfig, key: string): { config: ResolvedConfig; checks: Map<string, CheckDef[]> } {
  let hit = configs.get(key);
  if (!hit) {
    const config: ResolvedConfig = { ...p, hotPathFunctions: namePattern(p.hotPathFunctions), setupFunctions: namePattern(p.setupFunctions) };
    hit = { config, checks: new Map() };
    configs.set(key, hit);
    if (configs.size > 8) configs.delete(configs.keys().next().value!);
  }
  return hit;
}

export default function reviewTask(t: WorkerTask): FileDone {
  const c = revive(t.config, t.configKey);
  const idKey = t.checkIds ? t.checkIds.join(',') : '*';
  let checks = c.checks.get(idKey);
  if (!checks) {
    const wanted = t.checkIds ? new Set(t.checkIds) : null;
    checks = activeChecks(c.config, wanted ? CHECKS.filter((x) => wanted.has(x.id)) : CHECKS);
    c.checks.set(idKey, checks);
  }
  const done = reviewFileContent(t.file, t.content, c.config, checks, t.scope, t.budgetMs);
  treesDone(done.sources.reduce((a, s) => a + s.bytes, 0));
  return done;
}

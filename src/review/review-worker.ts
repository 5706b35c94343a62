/**
 * Worker thread of the review pool (pool.ts, piscina): analyses one file per task with the
 * built-in checks and the review's config, and answers with plain data (FileDone).
 */
import type { ResolvedConfig } from '../config/schema.js';
import { activeChecks, reviewFileContent, type FileDone } from './pipeline.js';
import type { CheckDef } from '../engine/check.js';
import type { NamedTaskEnvelope, Pass7FileResult, Pass7Task, PortableConfig, WorkerTask } from './pool.js';
import { namePattern } from '../core/regex.js';
import { CHECKS } from '../../checks/registry.generated.js';
import { releaseTrees } from '../engine/release.js';

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

function checksFor(t: { config: PortableConfig; configKey: string; checkIds: string[] | null }): { config: ResolvedConfig; checks: CheckDef[] } {
  const c = revive(t.config, t.configKey);
  const idKey = t.checkIds ? t.checkIds.join(',') : '*';
  let checks = c.checks.get(idKey);
  if (!checks) {
    const wanted = t.checkIds ? new Set(t.checkIds) : null;
    checks = activeChecks(c.config, wanted ? CHECKS.filter((x) => wanted.has(x.id)) : CHECKS);
    c.checks.set(idKey, checks);
  }
  return { config: c.config, checks };
}

/** Async only to free the file's trees before the next task (release.ts: piscina's worker never yields between tasks). */
export default async function reviewTask(t: WorkerTask): Promise<FileDone> {
  const { config, checks } = checksFor(t);
  const done = reviewFileContent(t.file, t.content, config, checks, t.scope, t.budgetMs, t.diffScope ?? true);
  await releaseTrees(done.sources.reduce((a, s) => a + s.bytes, 0));
  return done;
}

/** Pass 7 for one file's findings (loaded on first use: a review without rewrites never loads it). */
export async function pass7(t: NamedTaskEnvelope<Pass7Task>): Promise<Pass7FileResult> {
  const { config, checks } = checksFor(t);
  const { runPass7 } = await import('../rewrite/index.js');
  const p = t.payload;
  const out = { result: { findings: p.findings, files: [p.report], errors: [] }, diff: { files: [p.diffFile] }, fileLines: new Map([[p.path, p.lines]]) };
  const summary = await runPass7(out, { config, checks, compile: p.compile, budgetMs: t.budgetMs });
  return { outcomes: p.findings.map((f) => ({ rewrite: f.rewrite, fix: f.fix, suggestionFits: f.suggestionFits })), summary };
}

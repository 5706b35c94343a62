/**
 * The one place review() calls into the project index: build it from the diff's changed files when
 * the caller can read the repository, and hand it to the models through the config.
 */
import type { ResolvedConfig } from '../config/schema.js';
import type { DiffModel } from '../diff/model.js';
import { buildProjectIndex } from './build.js';
import type { BatchReader, IndexStats } from './types.js';

export interface IndexedConfig {
  config: ResolvedConfig;
  /** What the review reports about the index (files, bytes, time, and the bound it stopped at). */
  stats: IndexStats | null;
}

export async function withProjectIndex(diff: DiffModel, config: ResolvedConfig, readFiles: BatchReader | undefined, reviewDeadline: number): Promise<IndexedConfig> {
  if (!readFiles || !config.index.enabled) return { config, stats: null };
  const changed = diff.files.filter((f) => f.status !== 'deleted' && !f.binary).map((f) => ({ path: f.path }));
  if (!changed.length) return { config, stats: null };
  const deadline = Math.min(performance.now() + config.index.budgetMs, reviewDeadline);
  try {
    const ix = await buildProjectIndex(changed, readFiles, config, deadline);
    if (!Object.keys(ix.files).length) return { config, stats: ix.stats };
    return { config: { ...config, projectIndex: ix }, stats: ix.stats };
  } catch (e) {
    // A reader that fails (a network error in the App) costs the cross-file facts, never the review.
    return { config, stats: { files: 0, bytes: 0, ms: 0, missing: 0, stopped: `reading the imported files failed: ${(e as Error).message.split('\n')[0]}` } };
  }
}

/** The line the review prints when the index stopped short. */
export function indexNote(stats: IndexStats | null | undefined): string | null {
  if (!stats?.stopped) return null;
  return `project index stopped early (${stats.stopped}) after ${stats.files} file(s): facts of further imported or included files are unknown to this review`;
}

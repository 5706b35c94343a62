/**
 * The one place review() calls into the project index: build it from the diff's changed files when
 * the caller can read the repository, and hand it to the models through the config.
 */
import type { ResolvedConfig } from '../config/schema.js';
import type { DiffModel } from '../diff/model.js';
import { buildProjectIndex } from './build.js';
import type { FileReader } from '../core/types.js';
import { asText } from './readers.js';
import type { BatchReader, IndexStats } from './types.js';

export interface IndexedConfig {
  config: ResolvedConfig;
  /** What the review reports about the index (files, bytes, time, and the bound it stopped at). */
  stats: IndexStats | null;
}

export async function withProjectIndex(diff: DiffModel, config: ResolvedConfig, readFiles: BatchReader | undefined, reviewDeadline: number, readFile?: FileReader): Promise<IndexedConfig> {
  if (!readFiles || !config.index.enabled) return { config, stats: null };
  // The changed files come through the review's own reader (already fetched in the App: no extra request).
  const changed = await Promise.all(
    diff.files.filter((f) => f.status !== 'deleted' && !f.binary).map(async (f) => ({ path: f.path, text: readFile ? asText(await readFile(f.path).catch(() => null)) : undefined })),
  );
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

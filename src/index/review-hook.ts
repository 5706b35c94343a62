/**
 * The one place review() calls into the project index: build it from the diff's changed files when
 * the caller can read the repository, and hand it to the models through the config.
 */
import type { ResolvedConfig } from '../config/schema.js';
import type { DiffModel } from '../diff/model.js';
import { buildProjectIndex, type ChangedFile } from './build.js';

/** Files the index follows the imports / includes of (build.ts reads the same). */
const INDEXABLE = /\.(pyi?|cu|cuh|c|cc|cpp|cxx|h|hh|hpp|hxx|inl|inc|ipp|tpp)$/i;
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
  // The changed files come through the review's own reader (already fetched in the App: no extra
  // request), a few at a time. Only the first index.max_files of them are followed (and read here,
  // kept until the review reads them): a 3,000-file PR holds no more than that for the index.
  const indexable = diff.files.filter((f) => f.status !== 'deleted' && !f.binary && INDEXABLE.test(f.path));
  if (!indexable.length) return { config, stats: null };
  const first = indexable.slice(0, config.index.maxFiles);
  const changed: ChangedFile[] = first.map((f) => ({ path: f.path }));
  if (readFile) {
    let next = 0;
    const lane = async () => {
      while (next < first.length) {
        const c = changed[next++];
        c.text = asText(await readFile(c.path).catch(() => null));
      }
    };
    await Promise.all(Array.from({ length: Math.min(8, first.length) }, lane));
  }
  const deadline = Math.min(performance.now() + config.index.budgetMs, reviewDeadline);
  try {
    const ix = await buildProjectIndex(changed, readFiles, config, deadline, indexable.length - first.length);
    if (!Object.keys(ix.files).length) return { config, stats: ix.stats };
    return { config: { ...config, projectIndex: ix }, stats: ix.stats };
  } catch (e) {
    // A reader that fails (a network error in the App) costs the cross-file facts, never the review.
    return { config, stats: { files: 0, bytes: 0, ms: 0, missing: 0, stopped: `reading the imported files failed: ${(e as Error).message.split('\n')[0]}` } };
  }
}

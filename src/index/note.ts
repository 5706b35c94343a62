import type { IndexStats } from './types.js';

/** The line the review prints when the index stopped short. */
export function indexNote(stats: IndexStats | null | undefined): string | null {
  if (!stats?.stopped) return null;
  return `project index stopped early (${stats.stopped}) after ${stats.files} file(s): facts of further imported or included files are unknown to this review`;
}

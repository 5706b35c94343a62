import picomatch from 'picomatch';
import type { ResolvedConfig } from '../config/schema.js';
import { pathLanguage } from '../sources/detect.js';
import type { DiffFile } from './model.js';

/**
 * The one path gate of the CLI, the Action and the App: which files of a diff are reviewed at
 * all, from the diff and the config alone (status, binary, mode change, `include` / `exclude`, a
 * section of the diff that could not be read), and which are worth reading (their type says a
 * GPU language, or C++, whose text decides). The pipeline applies `skip`; the App reads only the
 * files `wantsContent` names and leaves the language of C++ files to the pipeline's detection on
 * their real text.
 */
export interface PathGate {
  /** Why the file is not reviewed, or null. */
  skip(file: DiffFile): string | null;
  /** Whether the file's post-change content can serve the review (not skipped, has hunks, a GPU type or C++). */
  wantsContent(file: DiffFile): boolean;
}

export function pathGate(config: Pick<ResolvedConfig, 'include' | 'exclude'>): PathGate {
  const include = config.include.length ? picomatch(config.include, { dot: true }) : null;
  const exclude = config.exclude.length ? picomatch(config.exclude, { dot: true }) : null;
  const skip = (file: DiffFile): string | null => {
    if (file.status === 'deleted') return 'deleted';
    if (file.binary) return 'binary file';
    if (file.modeOnly) return 'mode change only';
    if (include && !include(file.path)) return 'not matched by config "include"';
    if (exclude && exclude(file.path)) return 'matched by config "exclude"';
    if (file.problem) return file.problem;
    return null;
  };
  return {
    skip,
    wantsContent(file) {
      if (skip(file) !== null || file.hunks.length === 0) return false;
      const byPath = pathLanguage(file.path);
      return byPath === 'content' || byPath.language !== null;
    },
  };
}

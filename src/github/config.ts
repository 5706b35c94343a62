import { ConfigError, resolveConfig, type ResolvedConfig } from '../config/schema.js';

export const CONFIG_FILE = 'gpu-review.yml';
export const CONFIG_PATH = `.github/${CONFIG_FILE}`;

export type ConfigOutcome = { ok: true; config: ResolvedConfig; found: boolean } | { ok: false; message: string };

/**
 * Reads and validates the repository's config. `read` is Probot's `context.config`: the file on
 * the default branch (a PR cannot relax its own rules), else the org's `.github` repository, with
 * `_extends` followed. A bad file is a value here, never a crash: the caller turns it into a
 * failed check run that quotes the problem.
 */
export async function loadConfig(read: () => Promise<unknown>, ruleIds: readonly string[]): Promise<ConfigOutcome> {
  let raw: unknown;
  try {
    raw = await read();
  } catch (e) {
    const status = (e as { status?: number }).status;
    if (typeof status === 'number' && status !== 404) throw e; // an API fault, not a bad file
    const cause = (e as { cause?: Error }).cause?.message?.split('\n')[0];
    const msg = (e as Error).message.replace(/^\[@probot\/octokit-plugin-config\]\s*/, '');
    return { ok: false, message: cause ? `${msg}: ${cause}` : msg };
  }
  if (raw !== null && raw !== undefined && (typeof raw !== 'object' || Array.isArray(raw))) {
    return { ok: false, message: `invalid config: the file must hold a mapping of keys, not ${Array.isArray(raw) ? 'a list' : typeof raw}` };
  }
  try {
    return { ok: true, config: resolveConfig(raw ?? {}, ruleIds), found: raw !== null && raw !== undefined };
  } catch (e) {
    if (e instanceof ConfigError) return { ok: false, message: e.message };
    throw e;
  }
}

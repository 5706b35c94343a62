import { ConfigError, resolveConfig, type ResolvedConfig } from '../config/schema.js';

export const CONFIG_FILE = 'gpu-review.yml';
export const CONFIG_PATH = `.github/${CONFIG_FILE}`;

export type ConfigOutcome = { ok: true; config: ResolvedConfig; found: boolean } | { ok: false; message: string };

/**
 * What a read of the config file gave, as the cache keeps it: the parsed file (null: no file), or
 * the one-line reason it could not be read (invalid YAML, a directory). API faults are never cached.
 */
export type CachedConfig = { raw: unknown } | { message: string };

/** Where read configs are kept between reviews: in-process (`MemoryConfigStore`) or shared (Redis). */
export interface ConfigStore {
  get(key: string): Promise<CachedConfig | undefined>;
  set(key: string, value: CachedConfig): Promise<void>;
}

/**
 * How long a cached config is used at most. The key already changes with the file's content, so
 * this only bounds how long a change to a file it `_extends` (another repository) goes unseen.
 */
export const CONFIG_TTL_MS = 10 * 60_000;

/** An in-process LRU of configs, bounded in entries and age. */
export class MemoryConfigStore implements ConfigStore {
  private readonly entries = new Map<string, { value: CachedConfig; until: number }>();

  constructor(
    private readonly capacity = 2000,
    private readonly ttlMs = CONFIG_TTL_MS,
    private readonly now: () => number = Date.now,
  ) {}

  async get(key: string): Promise<CachedConfig | undefined> {
    const e = this.entries.get(key);
    if (!e) return undefined;
    this.entries.delete(key);
    if (e.until <= this.now()) return undefined;
    this.entries.set(key, e); // most recently used last
    return structuredClone(e.value);
  }

  async set(key: string, value: CachedConfig): Promise<void> {
    this.entries.delete(key);
    this.entries.set(key, { value: structuredClone(value), until: this.now() + this.ttlMs });
    while (this.entries.size > this.capacity) {
      const oldest = this.entries.keys().next().value;
      if (oldest === undefined) break;
      this.entries.delete(oldest);
    }
  }

  get size(): number {
    return this.entries.size;
  }
}

/**
 * Git object ids of `.github/gpu-review.yml` on the default branch of the repository and of the
 * owner's `.github` repository (null: no such file, or no such repository).
 */
export interface ConfigBlobs {
  repo: string | null;
  org: string | null;
}

/**
 * The cache key of a repository's config: the blob the config plugin would read — the
 * repository's own file, else the `.github` repository's — so a new or changed file is a new key
 * and is read at once. Null when neither file exists: then there is nothing to read (no 404s).
 */
export function configKey(owner: string, repo: string, blobs: ConfigBlobs): string | null {
  if (blobs.repo) return `${owner}/${repo}@${blobs.repo}`;
  if (blobs.org && repo !== '.github') return `${owner}/${repo}@-/${owner}/.github@${blobs.org}`;
  return null;
}

async function readRaw(read: () => Promise<unknown>): Promise<CachedConfig> {
  try {
    return { raw: (await read()) ?? null };
  } catch (e) {
    const status = (e as { status?: number }).status;
    if (typeof status === 'number' && status !== 404) throw e; // an API fault, not a bad file
    const cause = (e as { cause?: Error }).cause?.message?.split('\n')[0];
    const msg = (e as Error).message.replace(/^\[@probot\/octokit-plugin-config\]\s*/, '');
    return { message: cause ? `${msg}: ${cause}` : msg };
  }
}

function resolveRaw(got: CachedConfig, ruleIds: readonly string[]): ConfigOutcome {
  if ('message' in got) return { ok: false, message: got.message };
  const raw = got.raw;
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

/**
 * Reads and validates the repository's config. `read` is Probot's `context.config`: the file on
 * the default branch (a PR cannot relax its own rules), else the org's `.github` repository, with
 * `_extends` followed. A bad file is a value here, never a crash: the caller turns it into a
 * failed check run that quotes the problem. With `cache`, a read under the same key is not
 * repeated (a store that fails is a miss, never a failed review).
 */
export async function loadConfig(
  read: () => Promise<unknown>,
  ruleIds: readonly string[],
  cache?: { store: ConfigStore; key: string; onHit?: () => void },
): Promise<ConfigOutcome> {
  if (cache) {
    const hit = await cache.store.get(cache.key).catch(() => undefined);
    if (hit) {
      cache.onHit?.();
      return resolveRaw(hit, ruleIds);
    }
  }
  const got = await readRaw(read);
  if (cache) await cache.store.set(cache.key, got).catch(() => {});
  return resolveRaw(got, ruleIds);
}

/** deepmerge's defaults (what Probot's `context.config` merges an `_extends` chain with): objects key by key, arrays concatenated. */
function mergeTwo(a: unknown, b: unknown): unknown {
  const plain = (x: unknown): x is Record<string, unknown> => x !== null && typeof x === 'object' && !Array.isArray(x) && !(x instanceof RegExp) && !(x instanceof Date);
  if (Array.isArray(a) && Array.isArray(b)) return [...a, ...b].map((x) => mergeTwo(undefined, x));
  if (plain(b)) {
    const out: Record<string, unknown> = {};
    if (plain(a)) for (const k of Object.keys(a)) out[k] = mergeTwo(undefined, a[k]);
    for (const k of Object.keys(b)) out[k] = plain(a) && k in a ? mergeTwo(a[k], b[k]) : mergeTwo(undefined, b[k]);
    return out;
  }
  if (Array.isArray(b)) return b.map((x) => mergeTwo(undefined, x));
  return b;
}

/** What the config plugin gives `readRepoConfig` (Probot's Octokit has it). */
interface WithConfigPlugin {
  config: {
    get(o: { owner: string; repo: string; path: string; defaults?: (configs: object[]) => object }): Promise<{ config: unknown; files: Array<{ config: unknown }> }>;
  };
}

/**
 * The repository's `.github/gpu-review.yml` on the default branch, else the owner's `.github`
 * repository's, with `_extends` followed and merged (the same read and merge as Probot's
 * `context.config`, without a webhook context: the embedded and the Redis queue both read it
 * here). Null when there is no file.
 */
export async function readRepoConfig(octokit: unknown, owner: string, repo: string): Promise<unknown> {
  const { config, files } = await (octokit as WithConfigPlugin).config.get({
    owner,
    repo,
    path: CONFIG_PATH,
    defaults: (configs) => configs.reduce<unknown>((acc, c) => mergeTwo(acc, c), {}) as object,
  });
  return files.some((f) => f.config !== null) ? config : null;
}

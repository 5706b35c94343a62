/**
 * How a read config is kept in the Redis config cache (redis.ts, RedisConfigStore): exactly as
 * it was read. JSON has no Infinity, NaN or undefined (a YAML `limits: { max_file_bytes: .inf }`
 * came back as null, and the config was then judged by a different value than the file says), so
 * the value is V8's structured serialization in base64 behind a `v8:` tag. An entry without the
 * tag is JSON, as replicas of an earlier version wrote it.
 */
import v8 from 'node:v8';
import type { CachedConfig } from '../github/config.js';

const TAG = 'v8:';

export function encodeCachedConfig(value: CachedConfig): string {
  return TAG + v8.serialize(value).toString('base64');
}

/** The cached value, or undefined when the entry is not one (a miss: the file is read again). */
export function decodeCachedConfig(text: string): CachedConfig | undefined {
  let v: unknown;
  try {
    v = text.startsWith(TAG) ? v8.deserialize(Buffer.from(text.slice(TAG.length), 'base64')) : JSON.parse(text);
  } catch {
    return undefined;
  }
  return v && typeof v === 'object' && ('raw' in v || 'message' in v) ? (v as CachedConfig) : undefined;
}

/** The Redis config cache keeps a read config exactly (issue 16): a YAML `.inf` is still Infinity when read back. */
import { Redis } from 'ioredis';
import { parse } from 'yaml';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { loadConfig, MemoryConfigStore } from '../../src/github/config.js';
import { CHECKS } from '../../src/engine/registry.generated.js';
import { decodeCachedConfig, encodeCachedConfig } from '../../src/service/config-codec.js';
import { RedisConfigStore } from '../../src/service/redis.js';
import { cleanRedis, HAS_REDIS_SERVER, prefix, PrivateRedis, TEST_REDIS } from './redis-helpers.js';

const IDS = CHECKS.map((c) => c.id);
const YAML_TEXT = 'limits:\n  max_line_length: .inf\nignore_paths_note: ~\n';

test('the codec: Infinity, null and undefined survive; an old JSON entry is read; garbage is a miss', () => {
  const raw = { raw: { limits: { max_line_length: Number.POSITIVE_INFINITY, file_timeout_ms: Number.NaN }, none: null, gone: undefined } };
  const back = decodeCachedConfig(encodeCachedConfig(raw)) as { raw: any };
  expect(back.raw.limits.max_line_length).toBe(Number.POSITIVE_INFINITY);
  expect(back.raw.limits.file_timeout_ms).toBeNaN();
  expect(back.raw.none).toBeNull();
  expect('gone' in back.raw).toBe(true);
  expect(decodeCachedConfig(JSON.stringify({ raw: { a: 1 } }))).toEqual({ raw: { a: 1 } });
  expect(decodeCachedConfig(JSON.stringify({ message: 'bad' }))).toEqual({ message: 'bad' });
  expect(decodeCachedConfig('v8:not base64 of anything')).toBeUndefined();
  expect(decodeCachedConfig('{not json')).toBeUndefined();
  expect(decodeCachedConfig('42')).toBeUndefined();
});

describe.skipIf(!TEST_REDIS && !HAS_REDIS_SERVER)('RedisConfigStore', () => {
  let url = TEST_REDIS ?? '';
  let own: PrivateRedis | undefined;
  let redis: Redis | undefined;
  const p = prefix('cfgcache');
  beforeAll(async () => {
    if (!url) {
      own = new PrivateRedis({ persist: false });
      await own.start();
      url = own.url;
    }
    redis = new Redis(url, { maxRetriesPerRequest: 1 });
  }, 30_000);
  afterAll(async () => {
    redis?.disconnect();
    if (url) await cleanRedis(url, p);
    await own?.dispose();
  });

  test('a config read from YAML with .inf gives the same outcome from Redis as from memory (not null)', async () => {
    const store = new RedisConfigStore(redis!, p);
    const read = async () => parse(YAML_TEXT) as unknown;
    const fresh = await loadConfig(read, IDS);
    const first = await loadConfig(read, IDS, { store, key: 'o/r@blob1' });
    let hits = 0;
    const fromRedis = await loadConfig(
      async () => {
        throw new Error('not read again');
      },
      IDS,
      { store, key: 'o/r@blob1', onHit: () => hits++ },
    );
    expect(hits).toBe(1);
    const mem = new MemoryConfigStore();
    await loadConfig(read, IDS, { store: mem, key: 'k' });
    const fromMemory = await loadConfig(read, IDS, { store: mem, key: 'k' });
    expect(fromRedis).toEqual(first);
    expect(fromRedis).toEqual(fromMemory);
    expect(fromRedis).toEqual(fresh);
    const cached = await store.get('o/r@blob1');
    expect((cached as { raw: any }).raw.limits.max_line_length).toBe(Number.POSITIVE_INFINITY);
  });
});

import { describe, expect, test } from 'vitest';
import { configKey, loadConfig, MemoryConfigStore, type ConfigStore } from '../../src/github/config.js';

describe('config cache', () => {
  test('the key is the blob the config plugin would read: the repository\'s own, else the owner\'s .github one; none: null', () => {
    expect(configKey('o', 'r', { repo: 'aaa', org: 'bbb' })).toBe('o/r@aaa');
    expect(configKey('o', 'r', { repo: null, org: 'bbb' })).toBe('o/r@-/o/.github@bbb');
    expect(configKey('o', 'r', { repo: null, org: null })).toBeNull();
    // The .github repository has no fallback of its own.
    expect(configKey('o', '.github', { repo: null, org: 'bbb' })).toBeNull();
  });

  test('the in-process store drops the least recently used entry past its capacity, and entries past their age', async () => {
    let now = 0;
    const store = new MemoryConfigStore(2, 1000, () => now);
    await store.set('a', { raw: { fail_on: 'none' } });
    await store.set('b', { raw: null });
    expect(await store.get('a')).toEqual({ raw: { fail_on: 'none' } }); // a is now the most recent
    await store.set('c', { message: 'invalid YAML' });
    expect(await store.get('b')).toBeUndefined();
    expect(await store.get('a')).toBeDefined();
    expect(store.size).toBe(2);
    now = 1000;
    expect(await store.get('a')).toBeUndefined();
    // What it hands out is a copy: a caller changing it does not change the cache.
    await store.set('d', { raw: { limits: { max_file_bytes: 10 } } });
    const got = (await store.get('d')) as { raw: any };
    got.raw.limits.max_file_bytes = 99;
    expect(await store.get('d')).toEqual({ raw: { limits: { max_file_bytes: 10 } } });
  });

  test('loadConfig: a hit is not read; an API fault is thrown and not cached; a failing store is a miss', async () => {
    const store = new MemoryConfigStore();
    let reads = 0;
    const read = async () => {
      reads++;
      return { fail_on: 'none' };
    };
    const a = await loadConfig(read, [], { store, key: 'k' });
    const b = await loadConfig(read, [], { store, key: 'k' });
    expect(a).toMatchObject({ ok: true, found: true, config: { failOn: 'none' } });
    expect(b).toMatchObject({ ok: true, found: true, config: { failOn: 'none' } });
    expect(reads).toBe(1);

    const fault = Object.assign(new Error('Server Error'), { status: 502 });
    await expect(loadConfig(async () => Promise.reject(fault), [], { store, key: 'k2' })).rejects.toBe(fault);
    expect(await store.get('k2')).toBeUndefined();

    const broken: ConfigStore = { get: async () => Promise.reject(new Error('down')), set: async () => Promise.reject(new Error('down')) };
    expect(await loadConfig(read, [], { store: broken, key: 'k' })).toMatchObject({ ok: true });
    expect(reads).toBe(2);
  });
});

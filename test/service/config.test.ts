import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { ConfigError, loadConfig } from '../../src/service/config.js';
import { PRIVATE_KEY, SECRET } from '../app/harness.js';

const good = { APP_ID: '123', PRIVATE_KEY, WEBHOOK_SECRET: SECRET };

function error(env: Record<string, string | undefined>): string {
  try {
    loadConfig(env);
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as Error).message;
  }
  throw new Error('no error');
}

describe('configuration from the environment', () => {
  test('defaults', () => {
    const c = loadConfig(good);
    expect(c).toMatchObject({ appId: 123, port: 3000, host: '0.0.0.0', concurrency: 4, queueMax: 1000, shutdownTimeoutMs: 25_000, logLevel: 'info', baseUrl: undefined, webhookPath: '/api/github/webhooks' });
  });

  test.each(['APP_ID', 'WEBHOOK_SECRET', 'PRIVATE_KEY'])('missing %s: one line naming it', (name) => {
    const msg = error({ ...good, [name]: undefined });
    expect(msg).toContain(name);
    expect(msg).not.toContain('\n');
  });

  test('an empty variable counts as missing', () => {
    expect(error({ ...good, WEBHOOK_SECRET: '' })).toBe('WEBHOOK_SECRET is required but not set');
  });

  test.each([
    ['APP_ID', 'abc'],
    ['PORT', '70000'],
    ['REVIEW_CONCURRENCY', '0'],
    ['QUEUE_MAX', '-1'],
    ['LOG_LEVEL', 'loud'],
    ['GHE_HOST', 'https://ghe.example.com/'],
    ['SHUTDOWN_TIMEOUT_MS', '1.5'],
    ['PRIVATE_KEY', 'not a key'],
    ['REDIS_URL', 'http://:hunter2@redis:6379'],
    ['REDIS_PREFIX', 'a:b'],
    ['REVIEW_LOCK_MS', '10'],
  ])('malformed %s=%s: one line naming it, without the value', (name, value) => {
    const msg = error({ ...good, [name]: value });
    expect(msg.startsWith(`${name} is invalid`)).toBe(true);
    expect(msg).not.toContain('\n');
    if (name === 'PRIVATE_KEY' || name === 'REDIS_URL') expect(msg).not.toContain(value);
  });

  test('Redis: unset by default (the in-memory queue); REDIS_URL, REDIS_PREFIX, REVIEW_LOCK_MS', () => {
    expect(loadConfig(good)).toMatchObject({ redisUrl: undefined, redisPrefix: 'gpu-review', reviewLockMs: 30_000, compile: false });
    expect(loadConfig({ ...good, COMPILE: 'on' }).compile).toBe(true);
    expect(() => loadConfig({ ...good, COMPILE: 'yes' })).toThrow(/^COMPILE is invalid/);
    expect(loadConfig({ ...good, REDIS_URL: 'rediss://:pw@redis.internal:6380/2', REDIS_PREFIX: 'team-a', REVIEW_LOCK_MS: '5000' })).toMatchObject({
      redisUrl: 'rediss://:pw@redis.internal:6380/2',
      redisPrefix: 'team-a',
      reviewLockMs: 5000,
    });
  });

  test('PRIVATE_KEY_PATH, GHE_HOST, escaped newlines in PRIVATE_KEY', () => {
    const dir = mkdtempSync(join(tmpdir(), 'gpu-review-'));
    const file = join(dir, 'key.pem');
    writeFileSync(file, PRIVATE_KEY);
    const c = loadConfig({ APP_ID: '1', PRIVATE_KEY_PATH: file, WEBHOOK_SECRET: 's', GHE_HOST: 'ghe.example.com', PORT: '8080', REVIEW_CONCURRENCY: '8' });
    expect(c).toMatchObject({ privateKey: PRIVATE_KEY, baseUrl: 'https://ghe.example.com/api/v3', port: 8080, concurrency: 8 });
    expect(loadConfig({ ...good, PRIVATE_KEY: PRIVATE_KEY.replace(/\n/g, '\\n') }).privateKey).toBe(PRIVATE_KEY);
    expect(error({ APP_ID: '1', PRIVATE_KEY_PATH: join(dir, 'nope.pem'), WEBHOOK_SECRET: 's' })).toMatch(/^PRIVATE_KEY_PATH is invalid: cannot read .* \(ENOENT\)$/);
  });
});

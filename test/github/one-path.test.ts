/**
 * One webhook path (#22): only the application function (src/app.ts) subscribes to webhook
 * events, and nothing in src/ makes a Probot `Context` by hand: every queue runs the job that
 * `createApp` binds.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');
function files(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? files(p) : p.endsWith('.ts') ? [p] : [];
  });
}
const sources = files(join(root, 'src')).map((p) => ({ path: relative(root, p), text: readFileSync(p, 'utf8') }));

it('only src/app.ts subscribes to webhook events', () => {
  const subscribing = sources.filter((s) => /\bapp\.on\s*\(|\.webhooks\.on\s*\(/.test(s.text)).map((s) => s.path);
  expect(subscribing).toEqual(['src/app.ts']);
});

it('no Probot Context is built by hand', () => {
  const building = sources.filter((s) => /new\s+Context\s*\(/.test(s.text)).map((s) => s.path);
  expect(building).toEqual([]);
});

it('both queues implement the one JobQueue that createApp fills', () => {
  const redis = sources.find((s) => s.path === 'src/service/redis.ts')!.text;
  const queue = sources.find((s) => s.path === 'src/github/queue.ts')!.text;
  expect(redis).toMatch(/class RedisReviews implements JobQueue/);
  expect(queue).toMatch(/class EmbeddedQueue implements JobQueue/);
  expect(redis).not.toMatch(/reviewPullRequest/);
});

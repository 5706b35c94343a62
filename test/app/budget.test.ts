/**
 * Time budgets in App mode (issue 16): the review's files run in the worker pool (the compiled
 * worker script: `npx tsc` first), a file past its budget is stopped and the check run says so.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, expect, test } from 'vitest';
import type { FakeFile } from './fake-github.js';
import { examplePayload, setup, teardown, type Harness } from './harness.js';
import { cleanFn, loopFn, pythonFile } from './python.js';

const SCRIPT = join(import.meta.dirname, '..', '..', 'dist', 'src', 'review', 'review-worker.js');
let h: Harness | undefined;
const saved = process.env.GPU_REVIEW_WORKER_SCRIPT;
beforeAll(() => {
  expect(existsSync(SCRIPT)).toBe(true);
  process.env.GPU_REVIEW_WORKER_SCRIPT = SCRIPT;
});
afterAll(() => {
  if (saved === undefined) delete process.env.GPU_REVIEW_WORKER_SCRIPT;
  else process.env.GPU_REVIEW_WORKER_SCRIPT = saved;
});
afterEach(() => {
  teardown(h);
  h = undefined;
});
const added = (filename: string, content: string): FakeFile => ({ filename, status: 'added', content });
const run = (hh: Harness) => hh.github.checkRuns[0];

test('reviews in the pool give the same findings as on the main thread', async () => {
  h = await setup();
  h.github.files = [added('pkg/a.py', pythonFile(loopFn('a')))];
  await h.deliver(examplePayload('opened'));
  expect(run(h).conclusion).toBe('failure');
  expect(h.outcomes[0]).toMatchObject({ kind: 'reviewed', findings: 1 });
});

test('a file past its budget is stopped and the check run is neutral, never "No GPU issues found"', async () => {
  h = await setup();
  h.github.config = 'limits: { file_timeout_ms: 1 }\n';
  h.github.files = [added('pkg/clean.py', pythonFile(cleanFn('total')))];
  await h.deliver(examplePayload('opened'));
  expect(run(h).conclusion).toBe('neutral');
  expect(run(h).output.title).toBe('1 file not reviewed (time budget exceeded)');
  expect(run(h).output.summary).toContain('`pkg/clean.py`');
});

test('limits.on_timeout: failure makes it a failing check run', async () => {
  h = await setup();
  h.github.config = 'limits: { file_timeout_ms: 1, on_timeout: failure }\n';
  h.github.files = [added('pkg/clean.py', pythonFile(cleanFn('total')))];
  await h.deliver(examplePayload('opened'));
  expect(run(h).conclusion).toBe('failure');
});

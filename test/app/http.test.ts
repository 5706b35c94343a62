import { createHmac, randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createNodeMiddleware } from 'probot';
import { afterEach, expect, test } from 'vitest';
import { examplePayload, SECRET, setup, teardown, type Harness } from './harness.js';
import { loopFn, pythonFile } from './python.js';

let h: Harness | undefined;
let server: Server | undefined;

afterEach(async () => {
  const violations = h?.github.violations ?? [];
  await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
  server = undefined;
  teardown(h);
  h = undefined;
  expect(violations).toEqual([]);
});

function sign(body: string, secret = SECRET): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

async function post(url: string, body: string, headers: Record<string, string>): Promise<{ status: number; ms: number }> {
  const t0 = Date.now();
  const res = await fetch(url, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });
  await res.text();
  return { status: res.status, ms: Date.now() - t0 };
}

test('webhooks over HTTP on loopback: signed delivery answered at once and reviewed off the request path; bad signature rejected; redelivery reviewed once', async () => {
  h = await setup();
  h.github.files = [{ filename: 'pkg/a.py', status: 'added', content: pythonFile(loopFn('a')) }];
  // A slow GitHub: listing the files is held until the webhook has been answered, so the review
  // demonstrably runs off the request path (no duration is asserted: a busy machine makes that flaky).
  let release!: () => void;
  h.github.holds.push({ method: 'GET', path: /\/files$/, until: new Promise<void>((r) => (release = r)) });
  const middleware = await createNodeMiddleware(h.appFn, { probot: h.probot });
  server = createServer((req, res) => {
    void middleware(req, res, () => {
      res.writeHead(404);
      res.end();
    });
  });
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', () => r()));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/github/webhooks`;
  const body = JSON.stringify(examplePayload('opened'));
  const delivery = randomUUID();
  const headers = { 'x-github-event': 'pull_request', 'x-github-delivery': delivery, 'x-hub-signature-256': sign(body) };

  const first = await post(url, body, headers);
  expect(first.status).toBe(200);
  console.log(`[timing] webhook answered in ${first.ms} ms while its review waited on GitHub`);
  expect(h.queue.size).toBe(1); // the review is still running after GitHub got its answer

  const forged = await post(url, body, { ...headers, 'x-github-delivery': randomUUID(), 'x-hub-signature-256': sign(body, 'not-the-secret') });
  expect(forged.status).toBe(400);

  const again = await post(url, body, headers); // GitHub's redelivery keeps the delivery id
  expect(again.status).toBe(200);

  release();
  await h.queue.idle();
  expect(h.github.calls('pulls/create-review')).toHaveLength(1);
  expect(h.github.checkRuns).toHaveLength(1);
  expect(h.github.calls('pulls/list-files')).toHaveLength(1);
  expect(h.logs.some((l) => l.msg.includes('redelivered webhook'))).toBe(true);
});

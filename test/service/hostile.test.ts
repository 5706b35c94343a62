/** Unauthenticated and malformed deliveries (issue 16): bounded memory, bounded logs, no internals back. */
import { randomUUID } from 'node:crypto';
import { request } from 'node:http';
import nock from 'nock';
import { afterEach, expect, test } from 'vitest';
import { FakeGitHub } from '../app/fake-github.js';
import { examplePayload, GET_IN_LOOP } from '../app/harness.js';
import { deliver, sign, start, type Running } from './helpers.js';

let run: Running | undefined;
let gh: FakeGitHub | undefined;
afterEach(async () => {
  await run?.service.stop();
  run = undefined;
  gh?.stop();
  gh = undefined;
  nock.cleanAll();
  nock.enableNetConnect();
});

/**
 * POST a body in chunks with no Content-Length (Transfer-Encoding: chunked), as a sender that
 * stops sending once it has an answer. A connection reset before any answer fails the test at
 * once (the service must let the sender read its 413), instead of waiting for the test timeout.
 */
function chunked(base: string, bytes: number, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const u = new URL(`${base}/api/github/webhooks`);
    let answered = false;
    const req = request({ host: u.hostname, port: u.port, path: u.pathname, method: 'POST', headers: { 'content-type': 'application/json', ...headers } }, (res) => {
      answered = true;
      res.resume();
      resolve(res.statusCode ?? 0);
      req.destroy();
    });
    req.on('error', (e) => {
      if (!answered) reject(new Error(`no answer before the connection failed: ${(e as NodeJS.ErrnoException).code ?? e.message}`));
    });
    const chunk = Buffer.alloc(1024 * 1024, 'a');
    let sent = 0;
    const pump = () => {
      while (sent < bytes && !answered) {
        sent += chunk.length;
        if (!req.write(chunk)) return void req.once('drain', pump);
      }
      if (!answered) req.end();
    };
    pump();
  });
}

test('a 30 MB chunked body is refused with 413 (counted while read), signed or not', async () => {
  gh = new FakeGitHub().start();
  run = await start({}, { app: { checks: GET_IN_LOOP } });
  const headers = { 'x-github-event': 'pull_request', 'x-github-delivery': randomUUID(), 'x-hub-signature-256': sign('x') };
  expect(await chunked(run.service.url, 30 * 1024 * 1024, headers)).toBe(413);
  // The service still answers afterwards.
  expect((await fetch(`${run.service.url}/healthz`)).status).toBe(200);
});

test('bad signatures: 400, one warn line with the delivery id and no body, the rest counted, not logged', async () => {
  gh = new FakeGitHub().start();
  run = await start({}, { app: { checks: GET_IN_LOOP } });
  const ids = [randomUUID(), randomUUID(), randomUUID()];
  const marker = 'BODY-MARKER-' + 'x'.repeat(1000);
  for (const id of ids) {
    const r = await deliver(run.service.url, { ...examplePayload('opened'), marker }, id, 'wrong-secret');
    expect(r.status).toBe(400);
    expect(r.body).not.toContain('octokit');
  }
  const lines = run.logs().filter((l) => /signature/.test(l.msg ?? ''));
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatchObject({ level: 40, deliveryId: ids[0] });
  expect(run.logText()).not.toContain('BODY-MARKER');
  expect(run.logs().filter((l) => l.level >= 50)).toEqual([]);
});

test('a signed payload without the fields a review needs is 400 with no exception text', async () => {
  gh = new FakeGitHub().start();
  run = await start({}, { app: { checks: GET_IN_LOOP } });
  const p = examplePayload('opened') as Record<string, any>;
  const { pull_request: _drop, ...noPr } = p;
  for (const payload of [noPr, { ...p, repository: {} }, { action: 'opened' }]) {
    const r = await deliver(run.service.url, payload);
    expect(r.status).toBe(400);
    expect(r.body).not.toMatch(/TypeError|undefined|Cannot read/);
  }
  // Not JSON at all, signed.
  const body = '{not json';
  const res = await fetch(`${run.service.url}/api/github/webhooks`, { method: 'POST', body, headers: { 'content-type': 'application/json', 'x-github-event': 'pull_request', 'x-github-delivery': randomUUID(), 'x-hub-signature-256': sign(body) } });
  expect(res.status).toBe(400);
  expect((await deliver(run.service.url, examplePayload('opened'))).status).toBe(200);
});

import { createHmac, randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import nock from 'nock';
import { createService, type Service, type ServiceOptions } from '../../src/service/service.js';
import type { ServiceConfig } from '../../src/service/config.js';
import { createOctokitClass } from '../../src/github/octokit.js';
import { fastThrottle, PRIVATE_KEY, SECRET } from '../app/harness.js';

export { PRIVATE_KEY, SECRET };

export function config(over: Partial<ServiceConfig> = {}): ServiceConfig {
  return {
    appId: 1,
    privateKey: PRIVATE_KEY,
    webhookSecret: SECRET,
    baseUrl: undefined,
    logLevel: 'info',
    host: '127.0.0.1',
    port: 0,
    webhookPath: '/api/github/webhooks',
    concurrency: 4,
    queueMax: 100,
    shutdownTimeoutMs: 5000,
    maxBodyBytes: 25 * 1024 * 1024,
    redisUrl: undefined,
    redisPrefix: 'gpu-review',
    reviewLockMs: 30_000,
    compile: false,
    ...over,
  };
}

export interface Running {
  service: Service;
  /** Raw log text as written (after redaction). */
  logText: () => string;
  logs: () => Array<Record<string, any>>;
}

export async function start(over: Partial<ServiceConfig> = {}, opts: Partial<ServiceOptions> = {}): Promise<Running> {
  nock.disableNetConnect();
  nock.enableNetConnect(/^(127\.0\.0\.1|localhost)(:\d+)?$/);
  let text = '';
  const logStream = new Writable({
    write(chunk, _e, cb) {
      text += String(chunk);
      cb();
    },
  });
  const service = await createService({
    config: config(over),
    logStream,
    Octokit: createOctokitClass({ retryAfterBaseValue: 1, requestTimeoutMs: 5000, throttle: fastThrottle() }),
    authRetryMs: 50,
    ...opts,
  });
  await service.listen();
  return {
    service,
    logText: () => text,
    logs: () => text.split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l)),
  };
}

export function sign(body: string, secret = SECRET): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

export async function deliver(base: string, payload: unknown, id: string = randomUUID(), secret = SECRET): Promise<{ status: number; ms: number; body: string }> {
  const body = JSON.stringify(payload);
  const t0 = performance.now();
  const res = await fetch(`${base}/api/github/webhooks`, {
    method: 'POST',
    body,
    headers: { 'content-type': 'application/json', 'x-github-event': 'pull_request', 'x-github-delivery': id, 'x-hub-signature-256': sign(body, secret) },
  });
  const text = await res.text();
  return { status: res.status, ms: performance.now() - t0, body: text };
}

export async function waitFor(cond: () => boolean | Promise<boolean>, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** A `pull_request` payload for PR `number` of owner/repo at `sha`. */
export function prPayload(base: any, number: number, sha: string, action = 'synchronize'): any {
  const p = structuredClone(base);
  p.action = action;
  p.number = number;
  p.pull_request.number = number;
  p.pull_request.head.sha = sha;
  p.pull_request.state = 'open';
  p.pull_request.draft = false;
  if (action === 'synchronize') {
    p.before = '0'.repeat(40);
    p.after = sha;
  }
  return p;
}

import Bottleneck from 'bottleneck/light.js';
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import nock from 'nock';
import { pino } from 'pino';
import { Probot } from 'probot';
import examples from '@octokit/webhooks-examples';
import { createApp, type AppOptions } from '../../src/app.js';
import type { CheckDef } from '../../src/engine/check.js';
import { CHECKS } from '../../src/engine/registry.generated.js';
import { createOctokitClass, type OctokitTuning } from '../../src/github/octokit.js';
import { DeliveryLog, ReviewQueue } from '../../src/github/queue.js';
import type { Outcome } from '../../src/github/review-pr.js';
import { FakeGitHub } from './fake-github.js';

export const { privateKey: PRIVATE_KEY } = generateKeyPairSync('rsa', {
  modulusLength: 2048,
  publicKeyEncoding: { type: 'spki', format: 'pem' },
  privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
});

export const SECRET = 'webhook-secret-for-tests';

/** A real payload from @octokit/webhooks-examples: `pull_request` with this action (and an installation). */
export function examplePayload(action: string): any {
  const group = (examples as any[]).find((e) => e.name === 'pull_request');
  const found = group.examples.find((e: any) => e.action === action && e.installation);
  if (!found) throw new Error(`no pull_request.${action} example with an installation`);
  return structuredClone(found);
}

export interface LogLine {
  level: number;
  msg: string;
  [k: string]: unknown;
}

export interface Harness {
  probot: Probot;
  github: FakeGitHub;
  queue: ReviewQueue;
  logs: LogLine[];
  outcomes: Outcome[];
  /** Delivers a webhook through `probot.receive` and waits for the review job. */
  deliver(payload: any, id?: string): Promise<void>;
  appFn: ReturnType<typeof createApp>;
}

/** Throttle groups without the production 1 s / 3 s spacing of writes (the behaviour stays). */
export function fastThrottle() {
  return {
    write: new Bottleneck.Group({ maxConcurrent: 1, minTime: 0 }),
    notifications: new Bottleneck.Group({ maxConcurrent: 1, minTime: 0 }),
    global: new Bottleneck.Group({ maxConcurrent: 10, minTime: 0 }),
    auth: new Bottleneck.Group({ maxConcurrent: 1, minTime: 0 }),
    search: new Bottleneck.Group({ maxConcurrent: 1, minTime: 0 }),
  };
}

export function makeProbot(logs: LogLine[], tuning: OctokitTuning = {}): Probot {
  const stream = new Writable({
    write(chunk, _enc, cb) {
      for (const line of String(chunk).split('\n')) if (line.trim()) logs.push(JSON.parse(line));
      cb();
    },
  });
  return new Probot({
    appId: 1,
    privateKey: PRIVATE_KEY,
    secret: SECRET,
    log: pino({ level: 'info' }, stream) as any,
    Octokit: createOctokitClass({ retryAfterBaseValue: 2, requestTimeoutMs: 5000, throttle: fastThrottle(), ...tuning }),
  });
}

/**
 * The rule the scenarios count findings of. Pinned, so that rules landing later cannot change the
 * counts; the CLI-parity test runs the whole registry.
 */
export const GET_IN_LOOP = CHECKS.filter((c) => c.id === 'host-device/get-in-loop');

export async function setup(opts: { checks?: readonly CheckDef[]; app?: AppOptions; octokit?: OctokitTuning } = {}): Promise<Harness> {
  nock.disableNetConnect();
  nock.enableNetConnect(/^(127\.0\.0\.1|localhost)(:\d+)?$/);
  const logs: LogLine[] = [];
  const outcomes: Outcome[] = [];
  const github = new FakeGitHub().start();
  const queue = new ReviewQueue(2);
  const probot = makeProbot(logs, opts.octokit);
  // inProgressAfterMs 0: the check run opens in progress at once, so the scenarios see both of its
  // writes whatever the machine's speed (test/app/requests.test.ts covers the default).
  const appFn = createApp({ queue, deliveries: new DeliveryLog(), checks: opts.checks ?? GET_IN_LOOP, retryDelayMs: 5, inProgressAfterMs: 0, onOutcome: (o) => outcomes.push(o), ...opts.app });
  await probot.load(appFn);
  return {
    probot,
    github,
    queue,
    logs,
    outcomes,
    appFn,
    async deliver(payload, id = randomUUID()) {
      await probot.receive({ id, name: 'pull_request', payload } as any);
      await queue.idle();
    },
  };
}

export function teardown(h: Harness | undefined): void {
  h?.github.stop();
  nock.cleanAll();
  nock.enableNetConnect();
}

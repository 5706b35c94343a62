import { randomUUID } from 'node:crypto';
import nock from 'nock';
import { afterEach, describe, expect, test } from 'vitest';
import { QueueRejected, ReviewQueue } from '../../src/github/queue.js';
import type { Outcome, PullRequestEvent } from '../../src/github/review-pr.js';
import { examplePayload } from '../app/harness.js';
import { deliver, prPayload, start, waitFor, type Running } from './helpers.js';
import { LightGitHub } from './light-github.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('ReviewQueue options', () => {
  test('bounded backlog: past maxBacklog add throws QueueRejected(full) with status 503', async () => {
    const q = new ReviewQueue(1, () => {}, { maxBacklog: 2 });
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    q.add('a', () => held);
    q.add('b', async () => {});
    q.add('c', async () => {});
    expect(q.accepting).toBe(false);
    let err: unknown;
    try {
      q.add('d', async () => {});
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(QueueRejected);
    expect((err as QueueRejected).status).toBe(503);
    release();
    await q.idle();
    expect(q.accepting).toBe(true);
  });

  test('supersede: a newer job for a key with one waiting replaces it and keeps its place', async () => {
    const ran: string[] = [];
    const superseded: string[] = [];
    const q = new ReviewQueue(1, () => {}, { supersede: true, onSuperseded: (k) => superseded.push(k) });
    const job = (name: string, ms = 0) => async () => {
      ran.push(name);
      await sleep(ms);
    };
    q.add('pr1', job('pr1@a', 30)); // running
    q.add('pr1', job('pr1@b'));
    q.add('pr2', job('pr2@a'));
    q.add('pr1', job('pr1@c')); // replaces pr1@b, ahead of pr2
    await q.idle();
    expect(ran).toEqual(['pr1@a', 'pr1@c', 'pr2@a']);
    expect(superseded).toEqual(['pr1']);
  });

  test('one job per key at a time, other keys alongside', async () => {
    const q = new ReviewQueue(4, () => {}, { supersede: true });
    let perKey = 0;
    let maxPerKey = 0;
    let total = 0;
    let maxTotal = 0;
    for (let i = 0; i < 20; i++) {
      q.add(i % 2 ? 'x' : 'y', async () => {
        total++;
        maxTotal = Math.max(maxTotal, total);
        if (i % 2) {
          perKey++;
          maxPerKey = Math.max(maxPerKey, perKey);
        }
        await sleep(5);
        if (i % 2) perKey--;
        total--;
      });
    }
    await q.idle();
    expect(maxPerKey).toBe(1);
    expect(maxTotal).toBe(2);
  });

  test('close: add throws QueueRejected(closed), queued jobs still run', async () => {
    const q = new ReviewQueue(1);
    let ran = 0;
    q.add('a', async () => void ran++);
    q.add('b', async () => void ran++);
    q.close();
    expect(() => q.add('c', async () => {})).toThrow(QueueRejected);
    await q.idle();
    expect(ran).toBe(2);
  });
});

describe('over HTTP', () => {
  let run: Running | undefined;
  let gh: LightGitHub | undefined;
  afterEach(async () => {
    await run?.service.stop();
    gh?.stop();
    run = undefined;
    gh = undefined;
    nock.cleanAll();
    nock.enableNetConnect();
  });

  test('full backlog → 503 (and the redelivery is then taken); newer push supersedes; redelivery deduplicated', async () => {
    gh = new LightGitHub().start();
    let release!: () => void;
    gh.gate = new Promise((r) => (release = r));
    const done: Array<{ o: Outcome; e: PullRequestEvent }> = [];
    run = await start({ concurrency: 1, queueMax: 2 }, { slug: undefined, app: { retryDelayMs: 5, onOutcome: (o, e) => done.push({ o, e }) } });
    const base = run.service.url;
    const example = examplePayload('opened');
    const push = async (n: number, sha: string, id = randomUUID()) => {
      gh!.heads.set(n, sha);
      return (await deliver(base, prPayload(example, n, sha), id)).status;
    };
    expect(await push(1, 'a'.repeat(40))).toBe(200); // runs, held at the gate
    await waitFor(() => run!.service.queue.running === 1);
    expect(await push(2, 'b'.repeat(40))).toBe(200);
    expect(await push(3, 'c'.repeat(40))).toBe(200);
    const refusedId = randomUUID();
    expect(await push(4, 'd'.repeat(40), refusedId)).toBe(503); // backlog full
    expect((await fetch(`${base}/readyz`)).status).toBe(503); // not accepting
    expect(await push(2, 'e'.repeat(40))).toBe(200); // supersedes PR 2's waiting job: no growth
    const dupId = randomUUID();
    expect(await push(3, 'c'.repeat(40), dupId)).toBe(200);
    release();
    await run.service.queue.idle();
    expect(await push(4, 'd'.repeat(40), refusedId)).toBe(200); // GitHub's redelivery of the refused one
    expect(await push(3, 'c'.repeat(40), dupId)).toBe(200); // a redelivery of a taken one: ignored
    await run.service.queue.idle();
    const reviewed = done.map((d) => `${d.e.number}@${d.e.headSha[0]}:${d.o.kind}`).sort();
    // PR 2's older head never ran; the second delivery for PR 3's head replaced the waiting one.
    expect(reviewed).toEqual(['1@a:reviewed', '2@e:reviewed', '3@c:reviewed', '4@d:reviewed']);
    const metrics = await run.service.metrics.registry.metrics();
    expect(metrics).toMatch(/gpu_review_webhook_deliveries_total\{event="pull_request",status="503"\} 1/);
    expect(metrics).toMatch(/gpu_review_reviews_total\{result="superseded"\} 2/);
    expect(run.logs().filter((l) => l.msg?.includes('redelivered webhook'))).toHaveLength(1);
  });
});

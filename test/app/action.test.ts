/**
 * The GitHub Action's entry (src/action.ts) against the mocked GitHub the App tests use: a
 * recorded `pull_request` payload as GITHUB_EVENT_PATH, the repository checked out at the head
 * commit, GITHUB_TOKEN auth. The review goes through the App's reporter: inline comments, check run.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import nock from 'nock';
import { readContext, readInputs, runReviewMode, ActionError, cliArgs } from '../../src/action.js';
import { createOctokitClass } from '../../src/github/octokit.js';
import type { GitHubClient } from '../../src/github/octokit.js';
import { cleanupTmp, tmpDir, TmpRepo } from '../diff/tmp-git.js';
import { addedPatch, FakeGitHub } from './fake-github.js';
import { examplePayload, fastThrottle, GET_IN_LOOP } from './harness.js';

let github: FakeGitHub | undefined;

afterEach(() => {
  const violations = github?.violations ?? [];
  github?.stop();
  github = undefined;
  nock.cleanAll();
  nock.enableNetConnect();
  cleanupTmp();
  expect(violations).toEqual([]);
});

const CODE = ['import cupy as cp', '', '', 'def sizes(d_sizes, n):', '    out = 0', '    for k in range(n):', '        out += int(d_sizes[k])', '        d_sizes = cp.cumsum(d_sizes)', '    return out', ''].join('\n');

const silent: any = { info() {}, warn() {}, error() {}, debug() {}, child() { return silent; } };

/** A checkout of the PR head with one added GPU file, the fake GitHub serving that PR, the event file. */
function setupRun(extraFiles: Record<string, string> = {}) {
  nock.disableNetConnect();
  github = new FakeGitHub().start();
  const repo = new TmpRepo().write('README.md', 'base\n').commit('base');
  repo.write('pkg/sizes.py', CODE);
  for (const [p, t] of Object.entries(extraFiles)) repo.write(p, t);
  repo.commit('head');
  const head = repo.git('rev-parse', 'HEAD').trim();
  github.headSha = head;
  github.files = [{ filename: 'pkg/sizes.py', status: 'added', patch: addedPatch(CODE) }];
  const payload = examplePayload('opened');
  payload.pull_request.head.sha = head;
  const eventPath = join(tmpDir('adopt-event-'), 'event.json');
  writeFileSync(eventPath, JSON.stringify(payload));
  const env = { GITHUB_EVENT_PATH: eventPath, GITHUB_EVENT_NAME: 'pull_request', GITHUB_WORKSPACE: repo.dir, GITHUB_API_URL: 'https://api.github.com', INPUT_GITHUB_TOKEN: 'ghs_workflow_token' };
  const Octokit = createOctokitClass({ retryAfterBaseValue: 2, requestTimeoutMs: 5000, throttle: fastThrottle() });
  const octokit = new Octokit({ auth: 'ghs_workflow_token' }) as unknown as GitHubClient;
  return { repo, env, octokit, head };
}

describe('GitHub Action entry', () => {
  test('pull_request: posts the inline review and the check run with the workflow token, files read from the checkout', async () => {
    const { env, octokit, head } = setupRun();
    const inputs = readInputs({ ...env, INPUT_MODE: 'review' });
    const outcome = await runReviewMode(inputs, readContext(env), { octokit, checks: GET_IN_LOOP, retryDelayMs: 5, log: silent });
    expect(outcome).toMatchObject({ kind: 'reviewed', findings: 1, conclusion: 'failure' });
    const [post] = github!.calls('pulls/create-review');
    expect(post.status).toBe(200);
    expect(post.body.commit_id).toBe(head);
    expect(post.body.comments).toHaveLength(1);
    expect(post.body.comments[0]).toMatchObject({ path: 'pkg/sizes.py', line: 7, side: 'RIGHT' });
    expect(post.body.comments[0].body).toContain('host-device/get-in-loop');
    expect(github!.checkRuns).toHaveLength(1);
    expect(github!.checkRuns[0].conclusion).toBe('failure');
    expect(github!.checkRuns[0].annotations.map((a: any) => a.start_line)).toEqual([7]);
    // The checkout is the head commit, so no file content was downloaded.
    expect(github!.requests.filter((r) => /\/contents\//.test(r.path) || r.operation === 'graphql' && /object\(expression/.test(JSON.stringify(r.body ?? '')))).toEqual([]);
  });

  test('inputs fail_on and baseline, and the config file of the checkout', async () => {
    const { env, octokit } = setupRun({ '.github/gpu-review.yml': 'fail_on: none\n' });
    const outcome = await runReviewMode(readInputs(env), readContext(env), { octokit, checks: GET_IN_LOOP, retryDelayMs: 5, log: silent });
    expect(outcome).toMatchObject({ kind: 'reviewed', findings: 1, conclusion: 'success' });
    github!.stop();

    // A baseline listing the fingerprint the first review posted (its comment marker): nothing left to report.
    const second = setupRun();
    const first = await runReviewMode(readInputs({ ...second.env, INPUT_FAIL_ON: 'none' }), readContext(second.env), { octokit: second.octokit, checks: GET_IN_LOOP, retryDelayMs: 5, log: silent });
    expect(first).toMatchObject({ findings: 1 });
    const marker = /gpu-review:fingerprint=([^\s>]+)/.exec(github!.calls('pulls/create-review')[0].body.comments[0].body)![1];
    github!.stop();
    const third = setupRun({ 'ci/baseline.json': JSON.stringify({ tool: 'gpu-review', version: 1, findings: [{ rule: 'host-device/get-in-loop', path: 'pkg/sizes.py', fingerprint: marker }] }) });
    const out = await runReviewMode(readInputs({ ...third.env, INPUT_BASELINE: 'ci/baseline.json' }), readContext(third.env), { octokit: third.octokit, checks: GET_IN_LOOP, retryDelayMs: 5, log: silent });
    expect(out).toMatchObject({ kind: 'reviewed', findings: 0, conclusion: 'success' });
    expect(github!.checkRuns[0].output.summary).toContain('listed in the baseline `ci/baseline.json`');
  });

  test('bad inputs and events are one clear error each', () => {
    expect(() => readInputs({ INPUT_MODE: 'upload' })).toThrow(ActionError);
    expect(() => readInputs({ INPUT_MODE: 'review', INPUT_FAIL_ON: 'severe', GITHUB_TOKEN: 'x' })).toThrow(/input "fail_on" must be one of/);
    expect(() => readInputs({ INPUT_MODE: 'review' })).toThrow(/needs a token/);
    expect(() => readContext({})).toThrow(/GITHUB_EVENT_PATH is not set/);
    const ctx = { eventName: 'push', payload: { ref: 'refs/heads/main' }, workspace: '/w', apiUrl: '' };
    expect(() => cliArgs(readInputs({ INPUT_MODE: 'annotations' }), ctx)).toThrow(/runs on pull_request events/);
    expect(cliArgs(readInputs({ INPUT_MODE: 'sarif', INPUT_FAIL_ON: 'none' }), ctx)).toEqual(['scan', '--repo', '/w', '--format', 'sarif', '--config', '/w/.github/gpu-review.yml', '--fail-on', 'none']);
    expect(() => cliArgs(readInputs({ INPUT_MODE: 'sarif', INPUT_CONFIG: '../../etc/x.yml' }), ctx)).toThrow(/outside the workspace/);
  });
});

/**
 * The image's CLI, outside Docker: the final stage must install git and put `gpu-review` on the
 * PATH as a link to dist/src/cli.js; the same link, made here, runs `review --git` in a repository.
 */
import { spawn } from 'node:child_process';
import { readFileSync, symlinkSync, chmodSync } from 'node:fs';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, test } from 'vitest';
import { cleanupTmp, GIT_ENV, tmpDir, TmpRepo } from '../diff/tmp-git.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8').replace(/\\\n\s*/g, ' ');
const stages = dockerfile.split('\n').filter((l) => l.trim() && !l.trim().startsWith('#')).join('\n').split(/^(?=FROM )/m);
const final = stages[stages.length - 1];

afterAll(() => cleanupTmp());

function exec(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((res) => {
    const child = spawn(cmd, args, { cwd, env, timeout: 120_000 });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));
    child.on('close', (status) => res({ status, stdout, stderr }));
  });
}

describe('Dockerfile: the CLI in the image', () => {
  test('the final stage installs git and links gpu-review onto the PATH', () => {
    expect(final).toMatch(/apt-get install [^\n]*\bgit\b/);
    const link = /ln -s (\S+) (\S+)/.exec(final);
    expect(link?.[1]).toBe('/app/dist/src/cli.js');
    expect(link?.[2]).toBe('/usr/local/bin/gpu-review');
    expect(final).toMatch(/safe\.directory/);
    expect(JSON.parse(/^CMD (.*)$/m.exec(final)![1])).toEqual(['node', 'dist/src/server.js']);
  });

  test('`gpu-review review --git` through the same link, with only the link on the PATH besides git and node', async () => {
    const bin = tmpDir('adopt-dockerbin-');
    chmodSync(join(root, 'dist', 'src', 'cli.js'), 0o755);
    symlinkSync(join(root, 'dist', 'src', 'cli.js'), join(bin, 'gpu-review'));
    const repo = new TmpRepo().write('README.md', 'x\n').commit('base');
    repo.write('k.py', ['import cupy as cp', '', '', 'def f(d_x, n):', '    t = 0', '    for k in range(n):', '        t += int(d_x[k])', '        d_x = cp.cumsum(d_x)', '    return t', ''].join('\n')).commit('change');
    const env = { ...GIT_ENV, PATH: [bin, dirname(process.execPath), '/usr/bin', '/bin'].join(':') };
    const r = await exec('gpu-review', ['review', '--git', 'HEAD~1...HEAD', '--format', 'json'], repo.dir, env);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(1);
    expect(JSON.parse(r.stdout).findings.map((f: { ruleId: string }) => f.ruleId)).toContain('host-device/get-in-loop');
  });
});

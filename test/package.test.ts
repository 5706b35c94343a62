/**
 * The npm package as a user installs it: `npm pack`, then `npm install -g ./gpu-review-*.tgz` into a
 * temporary prefix, then the installed `gpu-review`. Only the CLI's dependencies come along (the
 * server stack is an optional peer). Prefers npm's cache; skips when npm cannot install here
 * (no cache and no registry), and says so.
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { cleanupTmp, tmpDir } from './diff/tmp-git.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const PKG = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));

function exec(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((res) => {
    const child = spawn(cmd, args, { cwd, env: { ...process.env, npm_config_update_notifier: 'false', ...env }, timeout: 400_000 });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));
    child.on('error', (e) => res({ status: null, stdout, stderr: String(e) }));
    child.on('close', (status) => res({ status, stdout, stderr }));
  });
}

function du(dir: string): number {
  let n = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) n += du(p);
    else if (e.isFile()) n += statSync(p).size;
  }
  return n;
}

afterAll(() => cleanupTmp());

describe('npm package', () => {
  it('package.json declares what a published package needs', () => {
    expect(PKG.license).toBe('MIT');
    expect(existsSync(join(ROOT, 'LICENSE'))).toBe(true);
    // No `repository` until the project has a public home: a made-up URL would make every rule-docs link dead
    // (docs_url derives from it). When it is set, it must be a real git URL.
    if (PKG.repository) expect(PKG.repository.url).toMatch(/^git\+https:\/\//);
    expect(PKG.engines.node).toMatch(/^>=(20|22|24)\b/);
    expect(PKG.files).toEqual(expect.arrayContaining(['checks/**/README.md', 'LICENSE']));
    // The server stack is not installed with the CLI.
    for (const dep of ['probot', 'bullmq', 'ioredis', 'pino', 'prom-client']) {
      expect(PKG.dependencies[dep], dep).toBeUndefined();
      expect(PKG.peerDependenciesMeta[dep]?.optional, dep).toBe(true);
    }
  });

  it('npm pack + npm install -g into a temporary prefix gives a working gpu-review', async (ctx) => {
    expect(existsSync(join(ROOT, 'dist', 'src', 'cli.js'))).toBe(true);
    const tmp = tmpDir('adopt-pkg-');
    const pack = await exec('npm', ['pack', '--ignore-scripts', '--pack-destination', tmp, '--json'], ROOT);
    expect(pack.status, pack.stderr).toBe(0);
    const [info] = JSON.parse(pack.stdout);
    const names: string[] = info.files.map((f: { path: string }) => f.path);
    expect(names).toContain('dist/src/cli.js');
    expect(names).toContain('checks/host-device/get-in-loop/README.md');
    expect(names.some((n) => n.startsWith('test/') || n.startsWith('corpus/') || n.includes('/fixtures/') || n.endsWith('.ts'))).toBe(false);
    const tgz = join(tmp, info.filename);
    const prefix = join(tmp, 'prefix');
    // Scripts off: the native walker is optional, and the parsers' prebuilt binaries need no build.
    const inst = await exec('npm', ['install', '-g', tgz, '--prefix', prefix, '--prefer-offline', '--ignore-scripts', '--no-audit', '--no-fund'], tmp);
    if (inst.status !== 0 && /ENOTCACHED|ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ETIMEDOUT|network/i.test(inst.stderr)) {
      ctx.skip(); // npm cannot install offline without a cache here
      return;
    }
    expect(inst.status, inst.stderr).toBe(0);
    const installed = join(prefix, 'lib', 'node_modules', 'gpu-review');
    const bin = join(prefix, 'bin', 'gpu-review');
    const version = await exec(bin, ['--version'], tmp);
    expect(version.stdout.trim()).toBe(PKG.version);
    expect((await exec(bin, ['rules'], tmp)).stdout).toContain('host-device/get-in-loop');
    for (const dep of ['probot', 'bullmq', 'ioredis', '@octokit']) expect(existsSync(join(installed, 'node_modules', dep)), dep).toBe(false);
    const size = du(installed);
    writeFileSync(join(tmp, 'size.txt'), String(size));
    console.log(`installed CLI: ${(size / 1e6).toFixed(1)} MB in ${installed}`);
    // A review needs the native parsers: either they load and the CLI reviews, or it says in one line how to rebuild them.
    const work = tmpDir('adopt-pkg-work-');
    writeFileSync(join(work, 'k.py'), ['import cupy as cp', '', '', 'def f(d_x, n):', '    t = 0', '    for k in range(n):', '        t += int(d_x[k])', '        d_x = cp.cumsum(d_x)', '    return t', ''].join('\n'));
    const loads = (await exec(process.execPath, ['-e', "require('tree-sitter')"], installed)).status === 0;
    const scan = await exec(bin, ['scan', '--format', 'json'], work);
    if (loads) {
      expect(scan.status, scan.stderr).toBe(1);
      expect(JSON.parse(scan.stdout).findings.map((f: { ruleId: string }) => f.ruleId)).toContain('host-device/get-in-loop');
    } else {
      expect(scan.status).toBe(2);
      expect(scan.stderr.trim().split('\n')).toHaveLength(1);
      expect(scan.stderr).toMatch(/^gpu-review: cannot load the tree-sitter parser .*npm rebuild/);
    }
  }, 600_000);
});

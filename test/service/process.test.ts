import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { PRIVATE_KEY, SECRET } from '../app/harness.js';

/**
 * No Docker engine here: the image's own entry command and environment, read from the Dockerfile,
 * run as a child process against a fake GitHub Enterprise on loopback.
 */
const root = join(import.meta.dirname, '..', '..');
const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8').replace(/\\\n\s*/g, ' ');
const lines = dockerfile.split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));
// Global ARGs before the first FROM (the runtime BASE) are not a stage.
const stages = lines.join('\n').split(/^(?=FROM )/m).filter((s) => s.startsWith('FROM '));
const baseArg = /^ARG BASE=(\S+)$/m.exec(lines.join('\n'))?.[1];
const final = stages[stages.length - 1];
const cmd = JSON.parse(/^CMD (.*)$/m.exec(final)![1]) as string[];
const imageEnv: Record<string, string> = {};
for (const m of final.matchAll(/^ENV (.*)$/gm)) for (const kv of m[1].matchAll(/(\w+)=(\S+)/g)) imageEnv[kv[1]] = kv[2];
const healthcheck = JSON.parse(/^HEALTHCHECK .*?CMD (\[.*\])$/m.exec(final)![1]) as string[];

const exec = promisify(execFile);

/** dist/ older than a source file (or missing): build, as the image's build stage does. */
function stale(): boolean {
  const built = join(root, 'dist', 'src', 'server.js');
  if (!existsSync(built)) return true;
  const t = statSync(built).mtimeMs;
  const newer = (dir: string): boolean =>
    readdirSync(dir, { withFileTypes: true }).some((e) => (e.isDirectory() ? e.name !== 'fixtures' && newer(join(dir, e.name)) : e.name.endsWith('.ts') && statSync(join(dir, e.name)).mtimeMs > t));
  return ['src', 'checks'].some((d) => newer(join(root, d))) || statSync(join(root, 'package.json')).mtimeMs > t;
}

describe('Dockerfile', () => {
  test('multi-stage on node:24-bookworm-slim (active LTS), production deps only, non-root, healthcheck, port, no secrets', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    // The runtime stage is FROM ${BASE}, node:24-bookworm-slim unless a CUDA toolkit base is asked for.
    expect(baseArg).toBe('node:24-bookworm-slim');
    for (const s of stages) expect(s.replace(/^FROM \$\{BASE\}/, `FROM ${baseArg}`)).toMatch(/^FROM node:24-bookworm-slim\b/);
    expect(cmd).toEqual(['node', 'dist/src/server.js']);
    expect(final).toMatch(/^USER node$/m);
    expect(final).toMatch(/^EXPOSE 3000$/m);
    expect(final).not.toMatch(/npm (ci|install)/); // node_modules come from a stage with --omit=dev
    const depsStage = stages.find((s) => /npm ci --omit=dev/.test(s));
    expect(depsStage).toBeDefined();
    expect(final).toMatch(new RegExp(`COPY --from=${/AS (\w+)/.exec(depsStage!)![1]}\\b.* /app/node_modules`));
    for (const k of Object.keys(imageEnv)) expect(k).not.toMatch(/SECRET|KEY|TOKEN|APP_ID/);
    expect(dockerfile).not.toMatch(/BEGIN [A-Z ]*PRIVATE KEY/);
    expect(imageEnv.PORT).toBe('3000');
  });
});

describe('the image entry command, outside Docker', () => {
  let fakeGitHub: Server;
  let ghe = '';
  const seen: string[] = [];

  beforeAll(async () => {
    // tsc emits even when a type error elsewhere in the tree fails it; the entry must exist.
    if (stale()) await exec(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json'], { cwd: root }).catch(() => {});
    expect(existsSync(join(root, 'dist', 'src', 'server.js'))).toBe(true);
    fakeGitHub = createServer((req, res) => {
      seen.push(`${req.method} ${req.url}`);
      res.setHeader('content-type', 'application/json');
      if (req.method === 'GET' && req.url === '/api/v3/app') return res.end(JSON.stringify({ id: 1, slug: 'gpu-review', name: 'gpu-review' }));
      if (req.method === 'POST' && /^\/api\/v3\/app\/installations\/\d+\/access_tokens$/.test(req.url ?? '')) {
        res.writeHead(201);
        return res.end(JSON.stringify({ token: 'ghs_' + 'y'.repeat(36), expires_at: new Date(Date.now() + 3600_000).toISOString() }));
      }
      res.writeHead(404).end('{"message":"Not Found"}');
    });
    await new Promise<void>((r) => fakeGitHub.listen(0, '127.0.0.1', () => r()));
    ghe = `127.0.0.1:${(fakeGitHub.address() as AddressInfo).port}`;
  }, 60_000);

  afterAll(async () => {
    await new Promise<void>((r) => fakeGitHub.close(() => r()));
  });

  const secrets = { APP_ID: '1', PRIVATE_KEY, WEBHOOK_SECRET: SECRET };

  function launch(env: Record<string, string | undefined>): { child: ChildProcess; out: () => string; err: () => string; exit: Promise<number | null> } {
    // Only the image's environment (plus PATH for nothing in particular): no inherited settings.
    const child = spawn(cmd[0] === 'node' ? process.execPath : cmd[0], cmd.slice(1), { cwd: root, env: { PATH: process.env.PATH, ...imageEnv, ...env } as NodeJS.ProcessEnv });
    let out = '';
    let err = '';
    child.stdout!.on('data', (d) => (out += d));
    child.stderr!.on('data', (d) => (err += d));
    const exit = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    return { child, out: () => out, err: () => err, exit };
  }

  async function freePort(): Promise<number> {
    const s = createServer();
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
    const port = (s.address() as AddressInfo).port;
    await new Promise<void>((r) => s.close(() => r()));
    return port;
  }

  test.each(['APP_ID', 'PRIVATE_KEY', 'WEBHOOK_SECRET'])('without %s: one line on stderr naming it, exit code 1', async (name) => {
    const p = launch({ ...secrets, [name]: undefined, HOST: '127.0.0.1', PORT: '0' });
    expect(await p.exit).toBe(1);
    const lines = p.err().trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(name);
    expect(p.out()).toBe('');
  });

  test('healthz, readyz (GET /app on the GHE host), the HEALTHCHECK command, SIGTERM exits 0', async () => {
    const port = await freePort();
    const p = launch({ ...secrets, HOST: '127.0.0.1', PORT: String(port), GHE_HOST: ghe, GHE_PROTOCOL: 'http', SHUTDOWN_TIMEOUT_MS: '2000' });
    const base = `http://127.0.0.1:${port}`;
    // A wait, not a speed claim: start-up on a loaded machine can take tens of seconds.
    const until = Date.now() + 60_000;
    let ready = 0;
    while (Date.now() < until) {
      ready = await fetch(`${base}/readyz`).then((r) => r.status, () => 0);
      if (ready === 200) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(ready, p.out() + p.err()).toBe(200);
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    expect(seen).toContain('GET /api/v3/app');
    // The image's HEALTHCHECK, as Docker would run it inside the container (same PORT).
    const hc = await exec(healthcheck[0] === 'node' ? process.execPath : healthcheck[0], healthcheck.slice(1), { env: { PORT: String(port) } }).then(() => 0, (e) => e.code);
    expect(hc).toBe(0);
    expect((await fetch(`${base}/metrics`)).status).toBe(200);

    p.child.kill('SIGTERM');
    expect(await p.exit).toBe(0);
    const logs = p.out().trim().split('\n').map((l) => JSON.parse(l));
    expect(logs.some((l) => l.msg === 'all reviews finished')).toBe(true);
    expect(p.out()).not.toContain(SECRET);
    expect(p.out()).not.toContain('ghs_');
    // And the HEALTHCHECK fails once the process is gone.
    const after = await exec(process.execPath, healthcheck.slice(1), { env: { PORT: String(port) } }).then(() => 0, (e) => e.code);
    expect(after).toBe(1);
  }, 120_000);
});

import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { closeSync, existsSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { PRIVATE_KEY, SECRET } from '../app/harness.js';

/**
 * Redis for the tests. `.ci/run` starts a redis-server on loopback and exports its URL as
 * GPU_REVIEW_TEST_REDIS; without it (or without a `redis-server` binary, for the tests that run
 * their own) the Redis tests are skipped. Each test uses a key prefix of its own and deletes its
 * keys afterwards.
 */
export const TEST_REDIS = process.env.GPU_REVIEW_TEST_REDIS || undefined;
export const HAS_REDIS_SERVER = spawnSync('redis-server', ['--version'], { timeout: 5000 }).status === 0;

export const root = join(import.meta.dirname, '..', '..');

export function prefix(name: string): string {
  return `t-${name}-${process.pid}-${randomUUID().slice(0, 6)}`;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Deletes a test's keys: BullMQ's and ours (`prefix:*`) and the throttle's (`b_prefix-*`). */
export async function cleanRedis(url: string, p: string): Promise<void> {
  const r = new Redis(url, { maxRetriesPerRequest: 1, connectTimeout: 2000, lazyConnect: true });
  r.on('error', () => {});
  try {
    await r.connect();
    for (const pattern of [`${p}:*`, `b_${p}-*`]) {
      let cursor = '0';
      do {
        const [next, keys] = await r.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
        cursor = next;
        if (keys.length) await r.del(...keys);
      } while (cursor !== '0');
    }
  } catch {
    // the test's own Redis may be gone already
  } finally {
    r.disconnect();
  }
}

export async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

async function ping(url: string, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const r = new Redis(url, { maxRetriesPerRequest: 0, connectTimeout: 500, lazyConnect: true, retryStrategy: () => null });
    r.on('error', () => {});
    const ok = await r
      .connect()
      .then(() => r.ping())
      .then(
        (p) => p === 'PONG',
        () => false,
      );
    r.disconnect();
    if (ok) return true;
    await sleep(50);
  }
  return false;
}

/**
 * A redis-server of the test's own on a free loopback port, persisting every write (AOF,
 * fsync always) in a temporary directory, so that it can be stopped and started again with its
 * data, as a production Redis with persistence would.
 */
export class PrivateRedis {
  readonly dir = mkdtempSync(join(tmpdir(), 'gpu-review-redis-'));
  port = 0;
  private child: ChildProcess | null = null;

  /** `persist: false`: no append-only file (a scratch Redis, as .ci/run starts). */
  constructor(private readonly opts: { persist?: boolean } = {}) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    if (!this.port) this.port = await freePort();
    const child = spawn('redis-server', ['--port', String(this.port), '--bind', '127.0.0.1', '--dir', this.dir, '--save', '', ...(this.opts.persist === false ? ['--appendonly', 'no'] : ['--appendonly', 'yes', '--appendfsync', 'always']), '--daemonize', 'no', '--logfile', join(this.dir, 'redis.log')], { stdio: 'ignore' });
    this.child = child;
    if (!(await ping(this.url, 10_000))) throw new Error(`private redis-server on port ${this.port} did not start`);
  }

  /** SIGTERM (Redis flushes its append-only file and exits), waits for the exit. */
  async stop(): Promise<void> {
    const c = this.child;
    this.child = null;
    if (!c || c.exitCode !== null) return;
    const exited = new Promise<void>((r) => c.once('exit', () => r()));
    c.kill('SIGTERM');
    await Promise.race([exited, sleep(5000)]);
    if (c.exitCode === null) c.kill('SIGKILL');
  }

  async dispose(): Promise<void> {
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

const exec = promisify(execFile);

/** Builds dist/ when it is older than a source file (the child processes run the built entry). */
export async function ensureBuilt(): Promise<void> {
  const built = join(root, 'dist', 'src', 'server.js');
  const stale = () => {
    if (!existsSync(built)) return true;
    const t = statSync(built).mtimeMs;
    const newer = (dir: string): boolean =>
      readdirSync(dir, { withFileTypes: true }).some((e) => (e.isDirectory() ? e.name !== 'fixtures' && newer(join(dir, e.name)) : e.name.endsWith('.ts') && statSync(join(dir, e.name)).mtimeMs > t));
    return ['src', 'checks'].some((d) => newer(join(root, d))) || statSync(join(root, 'package.json')).mtimeMs > t;
  };
  // tsc emits even when a type error elsewhere in the tree fails it; the entry must exist.
  if (stale()) await exec(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json'], { cwd: root }).catch(() => {});
  if (!existsSync(built)) throw new Error('dist/src/server.js missing after the build');
}

export interface Replica {
  name: string;
  child: ChildProcess;
  base: string;
  exit: Promise<number | null>;
  out: () => string;
  err: () => string;
  /** stdout's JSON log lines. */
  logs: () => Array<Record<string, any>>;
}

/**
 * One service process: the image's entry command (`node dist/src/server.js`) with this
 * environment. Its stdout and stderr go to files, not pipes: a busy test process reading a pipe
 * late would stall the service's (synchronous) log writes and so its answers.
 */
export async function startReplica(name: string, env: Record<string, string>): Promise<Replica> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), `gpu-review-replica-${name}-`));
  const outFd = openSync(join(dir, 'stdout'), 'w');
  const errFd = openSync(join(dir, 'stderr'), 'w');
  const child = spawn(process.execPath, ['dist/src/server.js'], {
    cwd: root,
    env: { PATH: process.env.PATH, NODE_ENV: 'production', APP_ID: '1', PRIVATE_KEY, WEBHOOK_SECRET: SECRET, HOST: '127.0.0.1', PORT: String(port), GHE_PROTOCOL: 'http', LOG_LEVEL: 'info', ...env } as NodeJS.ProcessEnv,
    stdio: ['ignore', outFd, errFd],
  });
  closeSync(outFd);
  closeSync(errFd);
  const read = (f: string) => {
    try {
      return readFileSync(join(dir, f), 'utf8');
    } catch {
      return '';
    }
  };
  const exit = new Promise<number | null>((r) =>
    child.on('exit', (code) => {
      r(code);
      // Kept until the test has read them; removed a while after the exit.
      setTimeout(() => rmSync(dir, { recursive: true, force: true }), 60_000).unref();
    }),
  );
  const base = `http://127.0.0.1:${port}`;
  const r: Replica = {
    name,
    child,
    base,
    exit,
    out: () => read('stdout'),
    err: () => read('stderr'),
    logs: () =>
      read('stdout')
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => {
          try {
            return JSON.parse(l);
          } catch {
            return {};
          }
        }),
  };
  const until = Date.now() + 20_000;
  while (Date.now() < until && child.exitCode === null) {
    if ((await fetch(`${base}/readyz`).then((x) => x.status, () => 0)) === 200) return r;
    await sleep(50);
  }
  child.kill('SIGKILL');
  throw new Error(`replica ${name} not ready: ${r.out().slice(-2000)} ${r.err().slice(-2000)}`);
}

export async function stopReplica(r: Replica | undefined, signal: NodeJS.Signals = 'SIGTERM', ms = 15_000): Promise<number | null> {
  if (!r) return null;
  if (r.child.exitCode !== null || r.child.signalCode !== null) return r.child.exitCode;
  r.child.kill(signal);
  const code = await Promise.race([r.exit, sleep(ms).then(() => 'timeout' as const)]);
  if (code === 'timeout') {
    r.child.kill('SIGKILL');
    return null;
  }
  return code;
}

/** Resident memory of a replica from its /metrics (MiB), or NaN. */
export async function rssMiB(r: Replica): Promise<number> {
  const text = await fetch(`${r.base}/metrics`).then((x) => x.text(), () => '');
  const m = /^gpu_review_process_resident_memory_bytes (\d+)/m.exec(text);
  return m ? Number(m[1]) / 2 ** 20 : NaN;
}

/** Counter values summed over labels matching `labels` from a replica's /metrics. */
export async function metric(r: Replica, name: string, labels = ''): Promise<number> {
  const text = await fetch(`${r.base}/metrics`).then((x) => x.text(), () => '');
  let sum = 0;
  for (const line of text.split('\n')) if (line.startsWith(name) && line.includes(labels)) sum += Number(line.split(' ').pop());
  return sum;
}

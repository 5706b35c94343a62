import { execFile, spawn } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';

const exec = promisify(execFile);

export interface NvccInfo {
  path: string;
  /** `13.0` from `Cuda compilation tools, release 13.0, V13.0.88`. */
  version: string;
  /** The toolkit's own include directory (where `cuda_runtime.h` lives). */
  includeDir: string;
}

const probes = new Map<string, Promise<NvccInfo | null>>();

/** Is `nvcc` (the given path or the one on PATH) runnable here? Memoized per path. */
export function probeNvcc(nvcc = 'nvcc'): Promise<NvccInfo | null> {
  let p = probes.get(nvcc);
  if (!p) {
    p = (async () => {
      try {
        const { stdout } = await exec(nvcc, ['--version'], { timeout: 20_000 });
        const version = /release (\d+\.\d+)/.exec(stdout)?.[1];
        if (!version) return null;
        const located = nvcc.includes('/') ? resolve(nvcc) : (await exec('sh', ['-c', 'command -v "$0"', nvcc])).stdout.trim();
        const { realpath } = await import('node:fs/promises');
        const real = await realpath(located).catch(() => located);
        return { path: located, version, includeDir: join(dirname(dirname(real)), 'include') };
      } catch {
        return null;
      }
    })();
    probes.set(nvcc, p);
  }
  return p;
}

export interface RunResult {
  code: number | null;
  output: string;
  timedOut: boolean;
  /** Killed by the memory limit (the process ran out of address space or was signalled for it). */
  outOfMemory: boolean;
  ms: number;
  /** Process (and process-group) id of the compiler run. */
  pid: number | null;
}

const MAX_OUTPUT = 4 * 1024 * 1024;

/**
 * Run one compiler command in its own process group with an address-space limit (`ulimit -v`,
 * inherited by cicc and ptxas) and a wall-clock limit; on timeout the whole group is killed, so no
 * cicc or ptxas child outlives it. The environment is reduced to what nvcc needs.
 */
export function runLimited(cmd: string, args: readonly string[], opts: { cwd: string; timeoutMs: number; memoryMb: number }): Promise<RunResult> {
  const t0 = performance.now();
  return new Promise((res) => {
    const env: NodeJS.ProcessEnv = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: opts.cwd, TMPDIR: opts.cwd, LANG: 'C', LC_ALL: 'C' };
    const kb = Math.max(1, Math.floor(opts.memoryMb * 1024));
    const child = spawn('/bin/sh', ['-c', 'ulimit -v "$0" 2>/dev/null; exec "$@"', String(kb), cmd, ...args], {
      cwd: opts.cwd,
      env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    const take = (b: Buffer) => {
      if (output.length < MAX_OUTPUT) output += b.toString('utf8');
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    let timedOut = false;
    const killGroup = () => {
      try {
        if (child.pid) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    };
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup();
    }, opts.timeoutMs);
    child.on('error', (e) => {
      clearTimeout(timer);
      res({ code: null, output: e.message, timedOut: false, outOfMemory: false, ms: performance.now() - t0, pid: child.pid ?? null });
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      // Reap any straggler of the group (a ptxas left behind by a crashed driver).
      killGroup();
      // Past the address-space limit cicc and ptxas report "out of memory" / bad_alloc, or die on a
      // failed allocation (nvcc then exits 139, or the child is signalled).
      const oom = !timedOut && (/out of memory|std::bad_alloc|Cannot allocate memory|memory allocation failure/i.test(output) || code === 137 || code === 139 || signal === 'SIGKILL' || signal === 'SIGSEGV');
      res({ code: code ?? null, output, timedOut, outOfMemory: oom && code !== 0, ms: performance.now() - t0, pid: child.pid ?? null });
    });
  });
}

/** `sm_90` for compute capability `9.0`. */
export function archOf(cc: string): string {
  return `sm_${cc.replace('.', '')}`;
}

import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import type { Language } from '../core/types.js';
import type { VerificationStep } from './types.js';

const exec = promisify(execFile);

function onPath(cmd: string, extra: string[] = []): string | null {
  for (const d of [...(process.env.PATH ?? '').split(delimiter), ...extra]) {
    if (d && existsSync(join(d, cmd))) return join(d, cmd);
  }
  return null;
}

export interface Toolchain {
  python: string | null;
  nvcc: string | null;
}

/** python3 and nvcc where they exist (GPU_REVIEW_NVCC / GPU_REVIEW_PYTHON override; "" turns one off). */
export function findToolchain(): Toolchain {
  const pick = (env: string | undefined, found: () => string | null) => (env === undefined ? found() : env === '' ? null : env);
  return {
    python: pick(process.env.GPU_REVIEW_PYTHON, () => onPath('python3')),
    nvcc: pick(process.env.GPU_REVIEW_NVCC, () => onPath('nvcc', ['/usr/local/cuda/bin'])),
  };
}

export interface CompileOptions {
  toolchain: Toolchain;
  /** Include directories: the repository root, its include/, the file's own directory. */
  includes: string[];
  timeoutMs: number;
}

/** Compile one file's text; null when no compiler applies. */
async function compileOnce(path: string, language: Language, text: string, opts: CompileOptions): Promise<{ ok: boolean; detail: string } | null> {
  const dir = mkdtempSync(join(tmpdir(), 'gpu-review-rewrite-'));
  try {
    if (language === 'python') {
      if (!opts.toolchain.python) return null;
      const f = join(dir, 'unit.py');
      writeFileSync(f, text);
      try {
        await exec(opts.toolchain.python, ['-m', 'py_compile', f], { timeout: opts.timeoutMs, env: { ...process.env, PYTHONPYCACHEPREFIX: dir } });
        return { ok: true, detail: 'python3 -m py_compile' };
      } catch (e) {
        return { ok: false, detail: firstError(e) };
      }
    }
    if (!opts.toolchain.nvcc) return null;
    const f = join(dir, /\.(cuh|hpp|h)$/.test(path) ? 'unit.cu' : 'unit.cu');
    writeFileSync(f, text);
    const inc = opts.includes.filter((d) => existsSync(d)).flatMap((d) => ['-I', d]);
    try {
      await exec(opts.toolchain.nvcc, ['-std=c++17', '--cuda', ...inc, '-o', '/dev/null', f], { timeout: opts.timeoutMs, maxBuffer: 8 * 1024 * 1024 });
      return { ok: true, detail: 'nvcc -std=c++17 --cuda' };
    } catch (e) {
      return { ok: false, detail: firstError(e) };
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function firstError(e: unknown): string {
  const x = e as { stderr?: string; killed?: boolean; message?: string };
  if (x.killed) return 'compiler timed out';
  const line = String(x.stderr ?? x.message ?? '').split('\n').find((l) => /error/i.test(l)) ?? String(x.message ?? '').split('\n')[0];
  return line.replace(/^.*unit\.(?:cu|py)/, '').trim().slice(0, 200);
}

/**
 * The compile step: the original file first, so that a file that does not compile on its own
 * (missing headers, a fragment) makes the step "skipped" instead of blaming the rewrite.
 */
export class Compiler {
  private before = new Map<string, Promise<{ ok: boolean; detail: string } | null>>();
  constructor(private readonly opts: CompileOptions) {}

  static includesFor(repo: string | undefined, path: string): string[] {
    if (!repo) return [];
    return [repo, join(repo, 'include'), join(repo, dirname(path)), join(repo, 'cpp', 'include'), join(repo, 'src')];
  }

  async step(path: string, language: Language, original: string, rewritten: string, includes: string[]): Promise<VerificationStep> {
    const lang: Language = language === 'python' || language === 'nvrtc-in-python' ? 'python' : 'cuda';
    const name = lang === 'python' ? 'py_compile' : 'nvcc';
    const tool = lang === 'python' ? this.opts.toolchain.python : this.opts.toolchain.nvcc;
    if (!tool) return { step: name, status: 'skipped', detail: `${lang === 'python' ? 'python3' : 'nvcc'} not found` };
    const o = { ...this.opts, includes };
    let b = this.before.get(path);
    if (!b) {
      b = compileOnce(path, lang, original, o);
      this.before.set(path, b);
    }
    const got = await b;
    if (!got) return { step: name, status: 'skipped', detail: 'no compiler' };
    if (!got.ok) return { step: name, status: 'skipped', detail: `the original file does not compile on its own (${got.detail})` };
    const after = await compileOnce(path, lang, rewritten, o);
    if (!after) return { step: name, status: 'skipped', detail: 'no compiler' };
    return after.ok ? { step: name, status: 'pass', detail: after.detail } : { step: name, status: 'fail', detail: after.detail };
  }
}

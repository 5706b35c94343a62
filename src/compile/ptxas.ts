import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const exec = promisify(execFile);

/**
 * What ptxas reports per entry function (`nvcc --resource-usage` / `-Xptxas -v`), for one target
 * architecture. Only these figures ever leave the compile step: compiler text can quote other
 * files (preprocessed lines, paths), so it is parsed here and dropped.
 */
export interface KernelFigures {
  /** Mangled name as ptxas prints it (`_Z6kernelPf`, or the plain name of an `extern "C"` kernel). */
  mangled: string;
  arch: string;
  registers: number;
  barriers: number;
  stackFrame: number;
  spillStores: number;
  spillLoads: number;
  /** Static `__shared__` bytes. */
  smem: number;
  /** Constant bank bytes the kernel uses (kernel parameters and user `__constant__`), summed over banks. */
  cmem: number;
}

export interface PtxasReport {
  kernels: KernelFigures[];
  /** Module-level `__constant__` bytes per arch (the `N bytes gmem, M bytes cmem[3]` line). */
  moduleCmem: Map<string, number>;
}

const ENTRY = /^ptxas info\s*: Compiling entry function '([^']+)' for '(sm_\w+)'/;
const PROPS = /^ptxas info\s*: Function properties for (\S+)/;
const FRAME = /^\s*(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads/;
const USED = /^ptxas info\s*: Used (\d+) registers(.*)$/;
const MODULE = /^ptxas info\s*: (\d+) bytes gmem(.*)$/;
const CMEM = /(\d+) bytes cmem\[\d+\]/g;

/**
 * Parse ptxas' verbose output. Entries are keyed by the `Compiling entry function` line; the
 * `Function properties` block that follows belongs to the same function only when it names it
 * (a non-inlined device function has properties of its own and no `Used` line).
 */
export function parsePtxas(text: string): PtxasReport {
  const kernels: KernelFigures[] = [];
  const moduleCmem = new Map<string, number>();
  let cur: KernelFigures | null = null;
  let propsFor: string | null = null;
  let pendingModule: number | null = null;
  for (const raw of text.split(/\r?\n/)) {
    // Output of several ptxas runs can arrive without a newline between them.
    for (const line of raw.split(/(?=ptxas info\s*:)/)) {
      let m: RegExpExecArray | null;
      if ((m = ENTRY.exec(line))) {
        cur = { mangled: m[1], arch: m[2], registers: 0, barriers: 0, stackFrame: 0, spillStores: 0, spillLoads: 0, smem: 0, cmem: 0 };
        kernels.push(cur);
        propsFor = null;
        if (pendingModule !== null && !moduleCmem.has(cur.arch)) moduleCmem.set(cur.arch, pendingModule);
        pendingModule = null;
      } else if ((m = PROPS.exec(line))) {
        propsFor = m[1];
      } else if ((m = FRAME.exec(line))) {
        if (cur && propsFor === cur.mangled) {
          cur.stackFrame = Number(m[1]);
          cur.spillStores = Number(m[2]);
          cur.spillLoads = Number(m[3]);
        }
      } else if ((m = USED.exec(line))) {
        if (!cur) continue;
        cur.registers = Number(m[1]);
        const rest = m[2];
        cur.barriers = Number(/(\d+) barriers/.exec(rest)?.[1] ?? 0);
        cur.smem = Number(/(\d+) bytes smem/.exec(rest)?.[1] ?? 0);
        cur.cmem = [...rest.matchAll(CMEM)].reduce((a, c) => a + Number(c[1]), 0);
      } else if ((m = MODULE.exec(line))) {
        pendingModule = [...m[2].matchAll(CMEM)].reduce((a, c) => a + Number(c[1]), 0);
      }
    }
  }
  return { kernels, moduleCmem };
}

/**
 * Demangle with `cu++filt` (CUDA toolkit) or binutils' `c++filt` (same Itanium ABI); names that
 * are not mangled (`extern "C"`) come back as they are. Without either tool the names stay mangled
 * and `baseName` reads the identifier out of the mangling itself.
 */
export async function demangle(names: readonly string[], tools: readonly string[] = ['cu++filt', 'c++filt']): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const mangled = [...new Set(names)].filter((n) => n.startsWith('_Z'));
  for (const n of names) out.set(n, n);
  if (!mangled.length) return out;
  for (const tool of tools) {
    try {
      const { stdout } = await exec(tool, mangled, { timeout: 10_000, maxBuffer: 16 * 1024 * 1024 });
      const lines = stdout.split('\n');
      mangled.forEach((n, i) => out.set(n, lines[i]?.trim() || n));
      return out;
    } catch {
      // try the next tool
    }
  }
  return out;
}

/**
 * The unqualified function name of a demangled (`void ns::smooth_kernel<64>(float const*, int)`) or
 * still-mangled (`_ZN2ns13smooth_kernelILi64EEEvPKfi`) kernel name: `smooth_kernel`.
 */
export function baseName(name: string): string {
  if (name.startsWith('_Z')) {
    // <mangled-name> ::= _Z <encoding>; nested names are N <len><id>... E, plain ones <len><id>.
    let i = 2;
    const ids: string[] = [];
    if (name[i] === 'N') {
      i++;
      while (i < name.length && /[rVKL]/.test(name[i])) i++;
    }
    while (i < name.length) {
      const m = /^(\d+)/.exec(name.slice(i));
      if (!m) break;
      const len = Number(m[1]);
      i += m[1].length;
      ids.push(name.slice(i, i + len));
      i += len;
      if (name[i] === 'I') break; // template arguments follow the function name
      if (name[2] !== 'N') break;
    }
    return ids[ids.length - 1] ?? name;
  }
  // Strip the parameter list, then template arguments, then the return type and qualifiers.
  let s = name;
  const paren = topLevelIndex(s, '(');
  if (paren >= 0) s = s.slice(0, paren);
  s = stripTemplateArgs(s).trim();
  const parts = s.split(/\s+/);
  s = parts[parts.length - 1];
  const q = s.lastIndexOf('::');
  return q >= 0 ? s.slice(q + 2) : s;
}

/** The demangled name without its return type (`ns::smooth_kernel<64>(float const*, int)`), for display and matching. */
export function signature(demangled: string): string {
  const paren = topLevelIndex(demangled, '(');
  const head = paren >= 0 ? demangled.slice(0, paren) : demangled;
  let depth = 0;
  let cut = 0;
  for (let i = 0; i < head.length; i++) {
    const c = head[i];
    if (c === '<') depth++;
    else if (c === '>') depth--;
    else if (c === ' ' && depth === 0) cut = i + 1;
  }
  return demangled.slice(cut);
}

function topLevelIndex(s: string, ch: string): number {
  let depth = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (c === '<') depth++;
    else if (c === '>') depth--;
    else if (c === ch && depth === 0) return i;
  }
  return -1;
}

function stripTemplateArgs(s: string): string {
  let out = '';
  let depth = 0;
  for (const c of s) {
    if (c === '<') depth++;
    else if (c === '>') depth--;
    else if (depth === 0) out += c;
  }
  return out;
}

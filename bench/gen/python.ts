/**
 * Python generator: CuPy and vibeSpatial-style host code (runtime.launch / runtime.allocate,
 * exclusive_sum, count_scatter_total, cp.*, .get(), cp.asnumpy, numpy) plus CUDA kernels held in
 * Python strings (cp.RawKernel raw strings, str.format templates with `{compute_type}` and doubled
 * braces, f-strings, runtime.compile_kernels). Some functions carry the anti-patterns the reviewer
 * flags: device-to-host reads inside loops that launch work, numpy applied to device arrays.
 */
import { Code, comment, LICENSES, Names, NOUNS, Rng, VERBS } from './common.js';
import { cudaKernel, type GeneratedKernel } from './cuda.js';

interface KernelRef {
  /** Python expression naming the launchable kernel. */
  expr: string;
  k: GeneratedKernel;
  /** RawKernel objects are called directly; compiled handles go through runtime.launch. */
  style: 'raw' | 'runtime';
}

interface PyCtx {
  dev: string[];
  host: string[];
  ints: string[];
  kernels: KernelRef[];
  tmp: number;
}

const CP_UNARY = ['cp.sqrt', 'cp.abs', 'cp.cumsum', 'cp.floor', 'cp.exp', 'cp.log1p', 'cp.sort', 'cp.argsort', 'cp.ascontiguousarray', 'cp.diff'];
const CP_BINARY = ['cp.minimum', 'cp.maximum', 'cp.hypot', 'cp.arctan2', 'cp.logical_and'];
const DTYPES = ['np.float64', 'np.float32', 'np.int32', 'np.int64', 'np.uint32', 'np.uint8', 'cp.float64', 'cp.int32'];

function devName(rng: Rng, ctx: PyCtx): string {
  return `d_${rng.pick(NOUNS)}${rng.chance(0.4) ? 's' : ''}_${ctx.tmp++}`;
}

function kernelArgs(rng: Rng, k: GeneratedKernel, ctx: PyCtx): string {
  return k.params
    .map((p) => {
      if (p.type.includes('*')) return ctx.dev.length ? rng.pick(ctx.dev) : 'd_out';
      if (/int/.test(p.type)) return `np.int32(${ctx.ints.length ? rng.pick(ctx.ints) : 'n'})`;
      return `np.float64(${rng.pick(['tol', 'scale', '0.5', '1e-9', 'center_x', 'center_y'])})`;
    })
    .join(', ');
}

function launch(rng: Rng, c: Code, ctx: PyCtx, count = rng.pick(ctx.ints.length ? ctx.ints : ['n'])): void {
  const kr = rng.pick(ctx.kernels);
  const args = kernelArgs(rng, kr.k, ctx);
  if (kr.style === 'raw') {
    c.line(`${kr.expr}((${rng.chance(0.5) ? `(${count} + ${kr.k.blockSize - 1}) // ${kr.k.blockSize}` : 'grid'},), (${kr.k.blockSize},), (${args}))`);
  } else if (rng.chance(0.5)) {
    c.line(`runtime.launch(${kr.expr}, grid=grid, block=block, args=(${args}))`);
  } else {
    c.line(`runtime.launch(`);
    c.line(`    ${kr.expr},`);
    c.line(`    grid=${rng.chance(0.5) ? 'grid' : `((${count} + ${kr.k.blockSize - 1}) // ${kr.k.blockSize},)`},`);
    c.line(`    block=${rng.chance(0.5) ? 'block' : `(${kr.k.blockSize},)`},`);
    c.line(`    args=(${args}),`);
    c.line(')');
  }
}

/** Random host statements (device ops, launches, host arithmetic, nested ifs and loops). */
function pyStmts(rng: Rng, c: Code, ctx: PyCtx, depth: number, count: number, allowAnti: boolean): void {
  let emitted = 0;
  for (let s = 0; s < count || emitted === 0; s++) {
    const k = rng.weighted<string>([
      [3, 'devop'], [2, 'launch'], [2, 'host'], [1, 'comment'], [depth < 3 ? 1.2 : 0, 'if'], [depth < 2 ? 1 : 0, 'for'],
      [1, 'log'], [ctx.dev.length ? 0.8 : 0, 'alloc'], [allowAnti && depth > 0 ? 0.5 : 0, 'anti'],
    ]);
    switch (k) {
      case 'devop': {
        const v = devName(rng, ctx);
        const a = ctx.dev.length ? rng.pick(ctx.dev) : 'd_out';
        const b = ctx.dev.length ? rng.pick(ctx.dev) : 'd_out';
        const form = rng.int(0, 5);
        if (form === 0) c.line(`${v} = ${rng.pick(CP_UNARY)}(${a})`);
        else if (form === 1) c.line(`${v} = ${rng.pick(CP_BINARY)}(${a}, ${b})`);
        else if (form === 2) c.line(`${v} = ${a} * ${rng.pick(['scale', '0.5', '2.0', 'tol'])} + ${b}`);
        else if (form === 3) c.line(`${v} = cp.where(${a} > ${rng.pick(['0', 'tol', '0.0'])}, ${a}, ${b})`);
        else if (form === 4) c.line(`${v} = ${a}[${rng.pick(['1:', ':-1', '::2', `${a} > 0`])}]`);
        else c.line(`${v} = cp.concatenate([${a}, ${b}])`);
        ctx.dev.push(v);
        break;
      }
      case 'launch':
        launch(rng, c, ctx);
        break;
      case 'host': {
        const v = `${rng.pick(['n', 'm', 'total', 'width', 'stride', 'limit', 'chunk'])}_${ctx.tmp++}`;
        const a = ctx.ints.length ? rng.pick(ctx.ints) : '1';
        c.line(`${v} = ${rng.pick([`${a} * 2 + 1`, `max(${a}, 1)`, `(${a} + 255) // 256`, `min(${a}, 1 << 20)`, `int(${a} * 1.5)`, `${a} // 2`, `len(parts) + ${a}`])}`);
        ctx.ints.push(v);
        break;
      }
      case 'comment':
        c.line(`# ${comment(rng)}`);
        continue;
      case 'log':
        c.line(`log.${rng.pick(['debug', 'debug', 'info'])}("${rng.pick(VERBS)} %s: %d items", ${JSON.stringify(rng.pick(NOUNS))}, ${ctx.ints.length ? rng.pick(ctx.ints) : 'n'})`);
        break;
      case 'alloc': {
        const v = devName(rng, ctx);
        const n = ctx.ints.length ? rng.pick(ctx.ints) : 'n';
        c.line(rng.chance(0.5) ? `${v} = runtime.allocate((${n},), ${rng.pick(DTYPES)})` : `${v} = cp.${rng.pick(['empty', 'zeros', 'ones'])}(${n}, dtype=${rng.pick(DTYPES)})`);
        ctx.dev.push(v);
        break;
      }
      case 'anti': {
        const d = rng.pick(ctx.dev.length ? ctx.dev : ['d_out']);
        const v = `h_${ctx.tmp++}`;
        c.line(rng.pick([`${v} = int(${d}[0])`, `${v} = ${d}.sum().get()`, `${v} = cp.asnumpy(${d})`, `${v} = float(${d}.max())`, `${v} = ${d}[-1].item()`]));
        ctx.host.push(v);
        break;
      }
      case 'if': {
        const a = ctx.ints.length ? rng.pick(ctx.ints) : 'n';
        c.open(`if ${a} ${rng.pick(['>', '<', '>=', '=='])} ${rng.pick(['0', '1', '32', '1024', 'threshold', 'limit'])}:`, false);
        const saved = [ctx.dev.length, ctx.ints.length];
        pyStmts(rng, c, ctx, depth + 1, rng.int(1, 3), allowAnti);
        ctx.dev.length = saved[0];
        ctx.ints.length = saved[1];
        if (rng.chance(0.3)) {
          c.mid('else:');
          pyStmts(rng, c, ctx, depth + 1, rng.int(1, 2), allowAnti);
          ctx.dev.length = saved[0];
          ctx.ints.length = saved[1];
        }
        c.close('');
        break;
      }
      case 'for': {
        const iv = rng.pick(['i', 'k', 'part', 'step', 'level', 'it']);
        c.open(`for ${iv} in range(${rng.pick(['n_parts', 'n_levels', 'iterations', '4', 'len(parts)', ctx.ints.length ? rng.pick(ctx.ints) : 'n'])}):`, false);
        const saved = [ctx.dev.length, ctx.ints.length];
        ctx.ints.push(iv);
        pyStmts(rng, c, ctx, depth + 1, rng.int(1, 4), allowAnti);
        ctx.dev.length = saved[0];
        ctx.ints.length = saved[1];
        c.close('');
        break;
      }
    }
    emitted++;
  }
}

/** Escape `{`/`}` for str.format / f-string templates. */
function doubleBraces(s: string): string {
  return s.replace(/[{}]/g, (m) => m + m);
}

interface ModuleState {
  names: Names;
  kernels: KernelRef[];
  /** Templates needing `.format(compute_type=...)` inside a function. */
  templates: Array<{ constName: string; kernelNames: string[] }>;
  fstringBuilders: Array<{ fnName: string; kernelName: string }>;
}

/** One kernel-source definition at module level; returns the Python text. */
function kernelSource(rng: Rng, st: ModuleState): string {
  const c = new Code(4);
  const form = rng.weighted<string>([[3, 'rawConst'], [1.5, 'rawInline'], [2.5, 'format'], [1.5, 'fstring'], [1, 'rawModule'], [1, 'elementwise']]);
  const names = st.names;
  if (form === 'rawConst' || form === 'rawInline') {
    const T = rng.pick(['double', 'float', 'double']);
    const k = cudaKernel(rng, names, { externC: true, T, templated: false, embedded: true });
    const var_ = `_${k.name}_kernel`.replace(/^__/, '_');
    if (form === 'rawConst') {
      const src = `_${k.name.toUpperCase()}_SOURCE`;
      c.line(`${src} = r'''`);
      c.raw(k.text);
      c.line(`'''`);
      c.line();
      c.line(`${var_} = cp.RawKernel(${src}, '${k.name}'${rng.chance(0.3) ? ", options=('--std=c++17',)" : ''})`);
    } else {
      c.line(`${var_} = cp.RawKernel(r'''`);
      c.raw(k.text);
      c.line(`''', '${k.name}')`);
    }
    st.kernels.push({ expr: var_, k, style: 'raw' });
  } else if (form === 'format') {
    const n = rng.int(1, 3);
    const ks = Array.from({ length: n }, () => cudaKernel(rng, names, { externC: true, T: 'compute_t', templated: false, embedded: true }));
    const constName = `_${names.snake().toUpperCase()}_TEMPLATE`;
    c.line(`${constName} = """`);
    c.line('typedef {compute_type} compute_t;');
    if (rng.chance(0.5)) c.line('#define BLOCK_SIZE {block_size}');
    c.line();
    for (const k of ks) {
      let t = doubleBraces(k.text);
      t = t.replace(/__launch_bounds__\((\d+)(, \d+)?\)/, '__launch_bounds__({block_size})');
      c.raw(t);
      c.line();
    }
    c.line('"""');
    st.templates.push({ constName, kernelNames: ks.map((k) => k.name) });
    for (const k of ks) st.kernels.push({ expr: `kernels["${k.name}"]`, k, style: 'runtime' });
  } else if (form === 'fstring') {
    const k = cudaKernel(rng, names, { externC: true, T: 'compute_t', templated: false, embedded: true });
    const fnName = `_${k.name}_source`;
    c.open(`def ${fnName}(compute_type: str, block_size: int) -> str:`, false);
    c.line(`"""Kernel source for ${k.name}, specialised for one precision and block size."""`);
    let t = doubleBraces(k.text);
    t = t.replace(/__launch_bounds__\((\d+)(, \d+)?\)/, '__launch_bounds__({block_size})').replace(/\bcompute_t\b/g, '{compute_type}');
    t = t.replace(new RegExp(`void ${k.name}\\(`), `void ${k.name}_{compute_type}(`);
    c.line(`return f'''`);
    for (const l of t.replace(/\n+$/, '').split('\n')) c.line(l);
    c.line(`'''`);
    c.close('');
    st.fstringBuilders.push({ fnName, kernelName: k.name });
  } else if (form === 'rawModule') {
    const ks = [0, 1].map(() => cudaKernel(rng, names, { externC: true, T: rng.pick(['float', 'double']), templated: false, embedded: true }));
    const mod = `_${names.snake()}_module`;
    c.line(`${mod} = cp.RawModule(code=r'''`);
    for (const k of ks) {
      c.raw(k.text);
      c.line();
    }
    c.line(`''', options=(${rng.pick(["'--std=c++17',", "'--std=c++17', '--use_fast_math'", "'-lineinfo',"])}))`);
    for (const k of ks) {
      c.line(`_${k.name}_fn = ${mod}.get_function('${k.name}')`);
      st.kernels.push({ expr: `_${k.name}_fn`, k, style: 'raw' });
    }
  } else {
    const name = names.snake();
    const expr = rng.pick(['z = x * x + y * y', 'z = x > y ? x - y : y - x', 'z = fma(x, a, y)', 'z = sqrt(x * x + y * y) * a']);
    const ins = expr.includes(' a') ? "'float64 x, float64 y, float64 a'" : "'float64 x, float64 y'";
    c.line(`_${name} = cp.ElementwiseKernel(`);
    c.line(`    ${ins},`);
    c.line(`    'float64 z',`);
    c.line(`    '${expr}',`);
    c.line(`    '${name}',`);
    c.line(')');
  }
  return c.toString();
}

function docstring(rng: Rng, c: Code, what: string): void {
  if (rng.chance(0.35)) return;
  if (rng.chance(0.5)) {
    c.line(`"""${what[0].toUpperCase()}${what.slice(1)}."""`);
  } else {
    c.line(`"""${what[0].toUpperCase()}${what.slice(1)}.`);
    c.line();
    const cm = comment(rng);
    c.line(`${cm[0].toUpperCase()}${cm.slice(1)}.`);
    c.line();
    c.line('Parameters');
    c.line('----------');
    c.line(`${rng.pick(NOUNS)}_count : int`);
    c.line(`    Number of ${rng.pick(NOUNS)}s to process.`);
    c.line('"""');
  }
}

type FnKind = 'countScatter' | 'pingPong' | 'whileConverge' | 'asnumpyLoop' | 'numpyOnDevice' | 'cupyOps' | 'cpuFallback' | 'compile' | 'fstring' | 'klass' | 'generic' | 'stream' | 'debugGated' | 'comprehension' | 'dataclass' | 'cached';

function hostFunction(rng: Rng, st: ModuleState, kind: FnKind): string {
  const c = new Code(4);
  const names = st.names;
  const fn = names.snake();
  const ctx: PyCtx = { dev: [], host: [], ints: [], kernels: st.kernels, tmp: 0 };
  const noun = rng.pick(NOUNS);
  const pre = rng.chance(0.3) ? '_' : '';
  const hasKernels = st.kernels.length > 0;
  if (!hasKernels && ['countScatter', 'pingPong', 'whileConverge', 'asnumpyLoop', 'generic', 'stream', 'klass', 'comprehension'].includes(kind)) kind = 'cupyOps';
  switch (kind) {
    case 'countScatter': {
      c.open(`def ${pre}${fn}(d_x, d_y, d_offsets, n_${noun}s: int, *, tol: float = 1e-9):`, false);
      docstring(rng, c, `${rng.pick(VERBS)} ${noun}s with the count-scatter pattern`);
      c.open(`if n_${noun}s == 0:`, false).line('return cp.empty(0, dtype=cp.float64)').close('');
      ctx.dev.push('d_x', 'd_y', 'd_offsets');
      ctx.ints.push(`n_${noun}s`);
      c.line(`d_counts = runtime.allocate((n_${noun}s,), np.int32)`);
      ctx.dev.push('d_counts');
      const k1 = rng.pick(st.kernels);
      c.line(`grid, block = runtime.launch_config(${k1.expr}, n_${noun}s)`);
      launch(rng, c, ctx, `n_${noun}s`);
      if (rng.chance(0.5)) pyStmts(rng, c, ctx, 1, rng.int(1, 3), false);
      c.line(`d_scan = exclusive_sum(d_counts, synchronize=False)`);
      c.line(`total = count_scatter_total(runtime, d_counts, d_scan)`);
      c.open('if total == 0:', false).line('return cp.empty(0, dtype=cp.float64)').close('');
      c.line('d_out = runtime.allocate((total,), np.float64)');
      ctx.dev.push('d_scan', 'd_out');
      ctx.ints.push('total');
      launch(rng, c, ctx, 'total');
      c.line(`return d_out`);
      c.close('');
      break;
    }
    case 'pingPong': {
      c.open(`def ${pre}${fn}(d_sizes, n_parts, grid, block):`, false);
      docstring(rng, c, `${rng.pick(VERBS)} each part separately`);
      ctx.dev.push('d_sizes');
      ctx.ints.push('n_parts');
      c.line('results = []');
      const iv = rng.pick(['k', 'part', 'i', 'p']);
      c.open(`for ${iv} in range(n_parts):`, false);
      const form = rng.int(0, 3);
      const read = form === 0 ? `int(d_sizes[${iv}])` : form === 1 ? `d_sizes[${iv}].get()` : form === 2 ? `d_sizes[${iv}].item()` : `cp.asnumpy(d_sizes[${iv}])`;
      c.line(`count = ${read}`);
      c.open('if count > 0:', false);
      c.line('d_part = runtime.allocate((count,), np.float64)');
      ctx.dev.push('d_part');
      ctx.ints.push('count');
      launch(rng, c, ctx, 'count');
      if (rng.chance(0.5)) pyStmts(rng, c, ctx, 2, rng.int(1, 2), false);
      c.line('results.append(d_part)');
      c.close('');
      c.close('');
      c.line(`return ${rng.chance(0.5) ? 'cp.concatenate(results) if results else cp.empty(0)' : 'results'}`);
      c.close('');
      break;
    }
    case 'whileConverge': {
      c.open(`def ${pre}${fn}(d_mask, d_state, grid, block, max_iterations=${rng.pick([16, 32, 64, 100])}):`, false);
      docstring(rng, c, `iterate until no ${noun} changes`);
      ctx.dev.push('d_mask', 'd_state');
      ctx.ints.push('max_iterations');
      c.line('iterations = 0');
      c.open(rng.chance(0.5) ? 'while True:' : 'while iterations < max_iterations:', false);
      launch(rng, c, ctx, 'max_iterations');
      c.line(rng.pick(['changed = cp.count_nonzero(d_mask).get()', 'changed = int(cp.count_nonzero(d_mask))', 'changed = d_mask.any().item()', 'changed = bool(d_mask.any())']));
      c.line('iterations += 1');
      c.open('if not changed:', false).line('break').close('');
      c.close('');
      c.line('return iterations');
      c.close('');
      break;
    }
    case 'asnumpyLoop': {
      c.open(`def ${pre}${fn}(d_values, chunks, grid, block):`, false);
      docstring(rng, c, `${rng.pick(VERBS)} ${noun}s chunk by chunk`);
      ctx.dev.push('d_values');
      c.line('out = []');
      c.open('for start, stop in chunks:', false);
      ctx.ints.push('start', 'stop');
      c.line('d_chunk = d_values[start:stop]');
      ctx.dev.push('d_chunk');
      launch(rng, c, ctx, 'stop - start');
      c.line(rng.pick(['out.append(cp.asnumpy(d_chunk))', 'out.append(d_chunk.get())', 'out.append(np.asarray(d_chunk.get()))']));
      c.close('');
      c.line('return np.concatenate(out)');
      c.close('');
      break;
    }
    case 'numpyOnDevice': {
      c.open(`def ${pre}${fn}(d_values, d_mask):`, false);
      docstring(rng, c, `summarise ${noun} values`);
      const forms = [
        'total = np.sum(d_values)',
        'idx = np.nonzero(d_mask)[0]',
        'h = np.asarray(d_values)',
        'peak = np.max(d_values[d_mask])',
        'order = np.argsort(d_values)',
        'mean = np.mean(d_values)',
      ];
      for (const f of rng.sample(forms, rng.int(2, 4))) c.line(f);
      c.line(`d_scaled = d_values * ${rng.pick(['0.5', '2.0', 'np.float64(1e-3)'])}`);
      c.line(`return ${rng.pick(['d_scaled', 'd_scaled, d_mask'])}`);
      c.close('');
      break;
    }
    case 'cupyOps': {
      c.open(`def ${pre}${fn}(d_x, d_y, tol=${rng.pick(['1e-9', '1e-12', '0.0', '1e-7'])}):`, false);
      docstring(rng, c, `${rng.pick(VERBS)} ${noun}s on the device`);
      c.line('d_norm = cp.sqrt(d_x * d_x + d_y * d_y)');
      c.line('d_keep = d_norm > tol');
      c.line('d_idx = cp.flatnonzero(d_keep)');
      ctx.dev.push('d_x', 'd_y', 'd_norm', 'd_idx');
      for (let i = 0, n = rng.int(1, 4); i < n; i++) {
        const v = devName(rng, ctx);
        c.line(`${v} = ${rng.pick(CP_UNARY)}(${rng.pick(ctx.dev)})`);
        ctx.dev.push(v);
      }
      c.line(`d_order = cp.argsort(d_norm[d_idx]${rng.chance(0.5) ? ', kind="stable"' : ''})`);
      c.line(`return d_idx[d_order]${rng.chance(0.3) ? ', d_norm' : ''}`);
      c.close('');
      break;
    }
    case 'cpuFallback': {
      c.open(`def _${fn}_cpu(x, y):`, false);
      c.line('out = np.empty_like(x)');
      c.open('for i in range(len(x)):', false);
      c.line(`out[i] = ${rng.pick(['x[i] * x[i] + y[i] * y[i]', 'max(x[i], y[i])', 'abs(x[i] - y[i])', 'x[i] if x[i] > y[i] else y[i]'])}`);
      c.close('');
      c.line('return out');
      c.close('');
      c.line();
      c.line();
      c.open(`def ${fn}(x, y):`, false);
      c.open(rng.pick(['if not runtime.has_gpu():', 'if not HAS_GPU:', 'if use_numpy_fallback(x):']), false);
      c.line(`return _${fn}_cpu(np.asarray(x), np.asarray(y))`);
      c.close('');
      c.line('d_x = cp.asarray(x)');
      c.line('d_y = cp.asarray(y)');
      c.line(`return ${rng.pick(['cp.maximum(d_x, d_y)', 'd_x * d_x + d_y * d_y', 'cp.abs(d_x - d_y)'])}`);
      c.close('');
      break;
    }
    case 'compile': {
      const t = st.templates.length ? rng.pick(st.templates) : null;
      if (!t) return hostFunction(rng, st, 'cupyOps');
      c.open(`def ${pre}${fn}(plan, d_x, d_y, d_offsets, n):`, false);
      docstring(rng, c, `compile and run the ${noun} kernels for the plan's precision`);
      c.line('compute_type = "float" if plan.compute_precision is PrecisionMode.FP32 else "double"');
      c.line(`block_size = ${rng.pick([128, 256, 256, 512])}`);
      c.line(`source = ${t.constName}.format(compute_type=compute_type, block_size=block_size)`);
      c.line(`cache_key = make_kernel_cache_key(f"${t.kernelNames[0]}-{compute_type}-{block_size}", source)`);
      c.line('kernels = runtime.compile_kernels(');
      c.line('    cache_key=cache_key,');
      c.line('    source=source,');
      c.line(`    kernel_names=(${t.kernelNames.map((k) => `"${k}"`).join(', ')}${t.kernelNames.length === 1 ? ',' : ''}),`);
      c.line(')');
      c.line('grid, block = runtime.launch_config(kernels["' + t.kernelNames[0] + '"], n)');
      ctx.dev.push('d_x', 'd_y', 'd_offsets');
      ctx.ints.push('n');
      const local = st.kernels.filter((k) => t.kernelNames.some((n) => k.expr === `kernels["${n}"]`));
      const saved = ctx.kernels;
      ctx.kernels = local.length ? local : saved;
      c.line('d_out = runtime.allocate((n,), np.float64)');
      ctx.dev.push('d_out');
      for (let i = 0, m = rng.int(1, 3); i < m; i++) launch(rng, c, ctx, 'n');
      ctx.kernels = saved;
      c.line('return d_out');
      c.close('');
      break;
    }
    case 'fstring': {
      const b = st.fstringBuilders.length ? rng.pick(st.fstringBuilders) : null;
      if (!b) return hostFunction(rng, st, 'cupyOps');
      c.open(`def ${pre}${fn}(d_values, n, compute_type="double", block_size=${rng.pick([128, 256])}):`, false);
      c.line(`source = ${b.fnName}(compute_type, block_size)`);
      c.line(`kernel = cp.RawKernel(source, f"${b.kernelName}_{compute_type}")`);
      c.line('d_out = cp.empty_like(d_values)');
      c.line('kernel(((n + block_size - 1) // block_size,), (block_size,), (d_values, d_out, np.int32(n)))');
      c.line('return d_out');
      c.close('');
      break;
    }
    case 'klass': {
      const cls = names.pascal(rng.pick(['Pipeline', 'Index', 'Builder', 'Stage', 'Accumulator']));
      c.open(`class ${cls}:`, false);
      docstring(rng, c, `device-resident ${noun} ${rng.pick(['index', 'pipeline', 'state'])}`);
      c.line();
      c.open('def __init__(self, capacity: int, dtype=np.float64):', false);
      c.line('self.capacity = capacity');
      c.line('self.d_buffer = cp.empty(capacity, dtype=dtype)');
      c.line('self.d_counts = cp.zeros(capacity, dtype=np.int32)');
      c.line('self.size = 0');
      c.close('');
      c.line();
      c.open(`def ${rng.pick(['run', 'execute', 'update', 'step'])}(self, d_input, n):`, false);
      ctx.dev.push('self.d_buffer', 'self.d_counts', 'd_input');
      ctx.ints.push('n', 'self.capacity');
      c.line(`grid, block = runtime.launch_config(${rng.pick(st.kernels).expr}, n)`);
      pyStmts(rng, c, ctx, 1, rng.int(2, 6), rng.chance(0.3));
      c.line(rng.pick(['self.size = int(self.d_counts.sum())', 'self.size = count_scatter_total(runtime, self.d_counts, exclusive_sum(self.d_counts, synchronize=False))', 'self.size += n']));
      c.line('return self');
      c.close('');
      c.line();
      c.open('def to_host(self):', false);
      c.line('return self.d_buffer[: self.size].get()');
      c.close('');
      c.close('');
      break;
    }
    case 'stream': {
      c.open(`def ${pre}${fn}(batches, grid, block):`, false);
      docstring(rng, c, `overlap uploads and ${noun} kernels on ${rng.pick(['two', 'several'])} streams`);
      c.line(`streams = [cp.cuda.Stream(non_blocking=True) for _ in range(${rng.int(2, 4)})]`);
      c.line('outputs = []');
      c.open('for i, h_batch in enumerate(batches):', false);
      c.line('stream = streams[i % len(streams)]');
      c.open('with stream:', false);
      c.line('d_batch = cp.asarray(h_batch)');
      c.line('d_out = cp.empty_like(d_batch)');
      ctx.dev.push('d_batch', 'd_out');
      ctx.ints.push('len(h_batch)');
      launch(rng, c, ctx, 'len(h_batch)');
      c.line('outputs.append(d_out)');
      c.close('');
      c.close('');
      c.open('for s in streams:', false).line('s.synchronize()').close('');
      c.line('return outputs');
      c.close('');
      break;
    }
    case 'debugGated': {
      c.open(`def ${pre}${fn}(d_counts, d_offsets, n):`, false);
      c.line('d_scan = exclusive_sum(d_counts, synchronize=False)');
      c.open('if DEBUG:', false);
      c.line('print("counts", d_counts)');
      c.line('assert int(d_scan[-1]) >= 0');
      c.close('');
      c.open('if log.isEnabledFor(logging.DEBUG):', false);
      c.line('log.debug("total %d", int(d_counts.sum()))');
      c.close('');
      c.line('return d_scan');
      c.close('');
      break;
    }
    case 'comprehension': {
      c.open(`def ${pre}${fn}(d_counts, partitions, grid, block):`, false);
      c.line(`totals = [int(d_counts[p]) for p in partitions]`);
      c.line('d_out = runtime.allocate((sum(totals),), np.float64)');
      ctx.dev.push('d_counts', 'd_out');
      ctx.ints.push('len(totals)');
      launch(rng, c, ctx, 'len(totals)');
      c.line('return d_out');
      c.close('');
      break;
    }
    case 'dataclass': {
      const cls = names.pascal('Config');
      c.line('@dataclass(frozen=True)');
      c.open(`class ${cls}:`, false);
      for (const f of rng.sample(['block_size: int = 256', 'max_iterations: int = 32', 'tolerance: float = 1e-9', 'use_fp32: bool = False', 'chunk_bytes: int = 1 << 26', 'n_streams: int = 2', 'center: bool = True'], rng.int(2, 5))) c.line(f);
      c.line();
      c.open('def grid_for(self, n: int) -> tuple[int]:', false);
      c.line('return ((n + self.block_size - 1) // self.block_size,)');
      c.close('');
      c.close('');
      break;
    }
    case 'cached': {
      c.line('@functools.lru_cache(maxsize=None)');
      c.open(`def _get_${fn}_kernels(compute_type: str):`, false);
      const t = st.templates.length ? rng.pick(st.templates) : null;
      if (t) {
        c.line(`source = ${t.constName}.format(compute_type=compute_type, block_size=256)`);
        c.line(`return runtime.compile_kernels(cache_key=make_kernel_cache_key("${fn}-" + compute_type, source), source=source, kernel_names=(${t.kernelNames.map((k) => `"${k}"`).join(', ')},))`);
      } else {
        c.line(`return cp.RawModule(code="extern \\"C\\" __global__ void noop() {}").get_function("noop")`);
      }
      c.close('');
      break;
    }
    case 'generic':
    default: {
      const args = ['d_x', 'd_y', 'n'];
      if (rng.chance(0.5)) args.push('scale=1.0');
      if (rng.chance(0.4)) args.push('tol=1e-9');
      c.open(`def ${pre}${fn}(${args.join(', ')}):`, false);
      docstring(rng, c, `${rng.pick(VERBS)} ${noun}s`);
      ctx.dev.push('d_x', 'd_y');
      ctx.ints.push('n');
      c.line('n_parts = max(1, n // 4096)');
      c.line('parts = list(range(n_parts))');
      c.line('threshold = 1024');
      c.line('limit = n');
      c.line('iterations = 4');
      c.line('n_levels = 3');
      c.line('grid, block = runtime.launch_config(' + rng.pick(st.kernels).expr + ', n)');
      c.line('d_out = runtime.allocate((n,), np.float64)');
      ctx.dev.push('d_out');
      ctx.ints.push('n_parts', 'limit');
      pyStmts(rng, c, ctx, 0, rng.int(4, 12), rng.chance(0.35));
      c.line(`return ${rng.pick(ctx.dev.slice(-3))}`);
      c.close('');
      break;
    }
  }
  return c.toString();
}

const FN_KINDS: ReadonlyArray<readonly [number, FnKind]> = [
  [3, 'countScatter'], [1.3, 'pingPong'], [0.8, 'whileConverge'], [0.8, 'asnumpyLoop'], [0.9, 'numpyOnDevice'],
  [2, 'cupyOps'], [1, 'cpuFallback'], [2, 'compile'], [1, 'fstring'], [1.2, 'klass'], [4, 'generic'], [0.8, 'stream'],
  [0.6, 'debugGated'], [0.5, 'comprehension'], [0.6, 'dataclass'], [0.6, 'cached'],
];

/** A whole Python module of about `target` bytes. */
export function pythonFile(rng: Rng, target: number): string {
  const names = new Names(rng);
  const st: ModuleState = { names, kernels: [], templates: [], fstringBuilders: [] };
  const out = new Code(4);
  out.line(`# ${rng.pick(LICENSES)}`);
  out.line(`"""${rng.pick(['GPU', 'Device', 'CUDA'])} ${rng.pick(NOUNS)} ${rng.pick(['kernels', 'primitives', 'pipeline', 'operations'])}: ${comment(rng)}."""`);
  out.line();
  out.line('from __future__ import annotations');
  out.line();
  const std = ['import logging'];
  if (rng.chance(0.6)) std.push('import functools');
  const debugFromEnv = rng.chance(0.5);
  if (debugFromEnv || rng.chance(0.3)) std.push('import os');
  if (rng.chance(0.5)) std.push('from dataclasses import dataclass');
  for (const l of std) out.line(l);
  out.line();
  out.line('import cupy as cp');
  out.line('import numpy as np');
  out.line();
  out.line('from vibespatial import runtime');
  out.line('from vibespatial.cccl import count_scatter_total, exclusive_sum');
  out.line('from vibespatial.kernels.cache import make_kernel_cache_key');
  if (rng.chance(0.7)) out.line('from vibespatial.precision import PrecisionMode, PrecisionPlan');
  out.line();
  out.line('log = logging.getLogger(__name__)');
  out.line(`DEBUG = ${debugFromEnv ? 'os.environ.get("VIBESPATIAL_DEBUG") == "1"' : 'False'}`);
  out.line(`HAS_GPU = runtime.has_gpu()`);
  if (rng.chance(0.5)) out.line(`_BLOCK = ${rng.pick([128, 256, 512])}`);
  out.line();
  // A few kernel sources up front, then host code interleaved with more sources.
  for (let i = 0, n = rng.int(1, 3); i < n; i++) {
    out.raw(kernelSource(rng, st));
    out.line();
    out.line();
  }
  let guard = 0;
  while (out.length < target && guard++ < 600) {
    if (rng.chance(0.18)) {
      out.raw(kernelSource(rng, st));
    } else {
      out.raw(hostFunction(rng, st, rng.weighted(FN_KINDS)));
    }
    out.line();
    out.line();
  }
  return out.toString();
}

import { cudaModel } from '../../../src/analysis/cuda.js';
import { pythonModel, type PyModel } from '../../../src/analysis/python.js';
import { quote, unparen } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';
import { COSTS, LAUNCH, MEASURED_ON, launchesCost } from '../../../src/config/costs.js';

/** Work-size bins are the sanctioned binning pattern (003 §5.3): one launch per complexity bin, not per item. */
const BINS = /\bbins?\b|_bins?\b|\bbins?_|WORK_BINS|\btiers?\b|buckets?\b/i;
/** Loops re-launching on the previous iteration's result (convergence, ping-pong buffers) cannot be batched. */
const CONVERGE = /\b(max_iter\w*|n_iter\w*|num_iter\w*|iterations?|epochs?|sweeps?|rounds?|levels?|passes|stages?|steps)\b/i;
/** 003 §3.5: a trivial kernel needs ~10,000 threads to amortise its launch; chunks at least that big are batched already. */
const TRIVIAL_THREADS = 10_000;
const CHUNK_NAME = /chunk|batch|tile|block_rows|CHUNK|BATCH/;
const MAX_STAGES = 8;
/** Device-array operations of the Python model that each run as (at least) one kernel launch. */
const ARRAY_OP_KINDS = new Set(['cupy', 'operator', 'method']);
/** Loops over the axes of an array run `ndim` times (2–3), not once per item. */
const OVER_AXES = /ndims?\b|n_dims?\b|\.shape\b|\baxes\b|\baxis\b|\bdims?\b|dimensions?\b/i;
/** Host builtins whose result is a host scalar (`n = len(part)`). */
const HOST_SCALAR_CALL = /^(len|int|float|min|max|abs|round)$/;
/** Index components that build a slice object (`d[tuple(sl)]`): a region, not an item. */
const SLICE_OBJECT = /^(tuple|slice)\s*\(/;
/** The body makes another GPU current: one share per device is multi-GPU dispatch, not per-item work. */
const DEVICE_SWITCH = /\b(cuda\.Device|cuda\.device|set_device|CUDAGuard|device_guard)\s*\(|\.use\(\s*\)/;
/** CuPy's `apply_along_axis` is a host loop: it calls the function once per 1-D slice, each call its own launches. */
const HOST_LOOPING_CALLS = ['cupy.apply_along_axis'];
/** Methods of a device row that copy it to the host or only reshape it: no kernel (the D2H rules speak for the copies). */
const ROW_HOST_METHODS = new Set(['get', 'item', 'tolist', 'tobytes', 'numpy', 'cpu', 'view', 'reshape', 'transpose', 'swapaxes', 'squeeze', 'ravel', 'flatten_', 'append']);

/** The assignment or expression statement a Python node belongs to. */
function statementOf(n: SyntaxNode): SyntaxNode | null {
  for (let p: SyntaxNode | null = n; p; p = p.parent) {
    if (p.type === 'assignment' || p.type === 'augmented_assignment') return p;
    if (p.type === 'expression_statement' || p.type === 'block') return null;
  }
  return null;
}

function ids(n: SyntaxNode): string[] {
  return n.type === 'identifier' ? [n.text] : n.descendantsOfType('identifier').map((i) => i.text);
}

/** Names bound by the loop header plus names assigned in the body from them (transitively). */
function itemNames(header: string[], body: SyntaxNode, assigns: Array<{ names: string[]; value: SyntaxNode }>): Set<string> {
  const out = new Set(header);
  for (let changed = true; changed; ) {
    changed = false;
    for (const a of assigns) {
      if (a.value.startIndex < body.startIndex || a.value.endIndex > body.endIndex) continue;
      if (!ids(a.value).some((x) => out.has(x))) continue;
      for (const n of a.names) if (!out.has(n)) (out.add(n), (changed = true));
    }
  }
  return out;
}

export default defineCheck({
  id: 'kernel/launch-in-per-item-loop',
  pass: 3,
  severity: 'medium',
  kind: 'performance',
  confidence: 'medium',
  languages: ['python', 'cuda'],
  citation:
    '003 §8.4 Small Kernel Launches (detection rule 2 "Kernel launched per-geometry in a loop instead of batched"); 003 §3.5 Launch Overhead Amortization; 004 §H1.9 Optimizing the Kernel ("many tiny kernels … merging them … CUDA Graphs"); 004 §H2.5 Tuning Occupancy with PyTorch (batch small ops)',
  summary: 'A kernel launched once per item (geometry, row, feature) inside a host loop instead of once over all items.',
  why: 'Every launch costs ' + LAUNCH + ' (bench/gpu/RESULTS.md; 003 §3.5: 2.5–5 µs, ~25 µs on WDDM), so a kernel shorter than ~25 µs spends over 10 % of its time launching and N per-item launches pay N times that (003 §8.4).',
  messages: {
    perItem:
      'Kernel launched once per item inside a host loop (`{{item}}` passed to `{{code}}`){{count}}; launch overhead (' + LAUNCH + ') dominates. Launch once over all items.',
    perItemOp:
      'Device-array operation `{{code}}` runs once per item of a host loop (it works on the slice or value of `{{item}}`){{count}}: every iteration is at least one kernel launch (' + LAUNCH + ') over one row or element. Operate on all items at once (vectorised indexing, a batched call over an axis).',
    alongAxis:
      '`{{code}}` is a host loop: CuPy calls the function once per 1-D slice, each call its own kernel launches (' + LAUNCH + ' each). Call a function that takes `axis=` once over the whole array.',
  },
  fix: 'judgment',
  create(ctx) {
    const scan = ctx.projectVocabulary ? '`exclusive_sum(..., synchronize=False)`' : ctx.source.language === 'python' ? 'an exclusive prefix sum on the device (`cp.cumsum`)' : '`cub::DeviceScan::ExclusiveSum`';
    const fixText = `Launch one kernel over all items with an offsets array (count → ${scan} → scatter), indexing items by thread; if the loop must stay, capture it in a CUDA Graph (004 §H1.9).`;
    const countOf = (n: number | null) => (n !== null && n > 0 ? `: ${n} launches × ${COSTS.launchUs} µs (${MEASURED_ON}) ${launchesCost(n)} of launch overhead alone` : '');

    function python() {
      const m = ctx.get(pythonModel);
      if (m.testOrBench) return;
      for (const op of m.gpuOps) {
        if (op.kind !== 'launch' && op.kind !== 'kernel-call') continue;
        const loop = m.loopOf(op.node);
        if (!loop || loop.type !== 'for_statement' || m.debugGated(op.node) || m.inCpuFallback(op.node)) continue;
        const left = loop.childForFieldName('left');
        const right = unparen(loop.childForFieldName('right'));
        const body = loop.childForFieldName('body');
        if (!left || !right || !body) continue;
        if (BINS.test(right.text) || CONVERGE.test(right.text)) continue;
        let count: number | null = null;
        if (right.type === 'list' || right.type === 'tuple') {
          if (right.namedChildCount <= MAX_STAGES) continue;
          count = right.namedChildCount;
        }
        if (right.type === 'call' && m.callPath(right) === 'range') {
          const args = right.childForFieldName('arguments')?.namedChildren ?? [];
          const lit = args.map((a) => (/^\d+$/.test(a.text) ? Number(a.text) : null));
          if (args.length === 1 && lit[0] !== null) {
            if (lit[0]! <= MAX_STAGES) continue;
            count = lit[0];
          }
          if (args.length === 3 && ((lit[2] ?? 0) >= TRIVIAL_THREADS || CHUNK_NAME.test(args[2]!.text))) continue;
        }
        // The sync of a D2H read in the same loop is the bigger cost; host-device/get-in-loop reports it.
        if (m.d2h.some((d) => d.node.startIndex >= loop.startIndex && d.node.endIndex <= loop.endIndex)) continue;
        if (body.descendantsOfType('break_statement').length > 0) continue;
        const assigns: Array<{ names: string[]; value: SyntaxNode }> = [];
        for (const a of body.descendantsOfType('assignment')) {
          const l = a.childForFieldName('left');
          const r = a.childForFieldName('right');
          if (l && r) assigns.push({ names: ids(l), value: r });
        }
        // `d_a, d_b = d_b, d_a` / `d_cur = d_next`: iteration i+1 reads what iteration i launched on.
        const argIds = new Set(ids(op.node).filter((x) => x !== op.node.childForFieldName('function')?.text));
        if (assigns.some((a) => a.value.startIndex > op.node.endIndex && a.names.some((n) => argIds.has(n)) && m.isDevice(a.value) && ids(a.value).some((x) => argIds.has(x)))) continue;
        const items = itemNames(ids(left), body, assigns);
        const fn = op.node.childForFieldName('function');
        const passed = op.node.descendantsOfType('identifier').find((i) => items.has(i.text) && !(fn && i.startIndex >= fn.startIndex && i.endIndex <= fn.endIndex));
        if (!passed) continue;
        ctx.report({ node: op.node, messageId: 'perItem', data: { item: passed.text, code: quote(op.node), count: countOf(count) }, fix: { description: fixText } });
      }
      arrayOps(m);
    }

    /**
     * The header names, iterable and body of a `for` statement or a comprehension's first `for` clause, and
     * the literal trip count when there is one; null for loops that are not per-item work (stages, bins,
     * iterations, chunks, loops that read back or break).
     */
    function itemLoop(m: PyModel, loop: SyntaxNode): { left: SyntaxNode; right: SyntaxNode; body: SyntaxNode; count: number | null } | null {
      let left: SyntaxNode | null = null;
      let right: SyntaxNode | null = null;
      let body: SyntaxNode | null = loop;
      if (loop.type === 'for_statement') {
        left = loop.childForFieldName('left');
        right = unparen(loop.childForFieldName('right'));
        body = loop.childForFieldName('body');
      } else {
        const clause = loop.namedChildren.find((c) => c.type === 'for_in_clause');
        left = clause?.childForFieldName('left') ?? null;
        right = unparen(clause?.childForFieldName('right'));
      }
      if (!left || !right || !body) return null;
      if (BINS.test(right.text) || CONVERGE.test(right.text) || OVER_AXES.test(right.text)) return null;
      let count: number | null = null;
      if (right.type === 'list' || right.type === 'tuple') {
        if (right.namedChildCount <= MAX_STAGES) return null;
        count = right.namedChildCount;
      }
      if (right.type === 'call' && m.callPath(right) === 'range') {
        const args = right.childForFieldName('arguments')?.namedChildren ?? [];
        const lit = args.map((a) => (/^\d+$/.test(a.text) ? Number(a.text) : null));
        if (args.length === 1 && lit[0] !== null) {
          if (lit[0]! <= MAX_STAGES) return null;
          count = lit[0];
        }
        if (args.length === 3 && ((lit[2] ?? 0) >= TRIVIAL_THREADS || CHUNK_NAME.test(args[2]!.text))) return null;
      }
      // A read back in the loop syncs every iteration (host-device/get-in-loop's); iterating the device array itself is this rule's case.
      const within = (n: SyntaxNode, o: SyntaxNode) => n.startIndex >= o.startIndex && n.endIndex <= o.endIndex;
      if (m.d2h.some((d) => within(d.node, loop) && !within(d.node, right!) && !within(right!, d.node))) return null;
      if (loop.descendantsOfType('break_statement').length > 0 || DEVICE_SWITCH.test(body.text)) return null;
      return { left, right, body, count };
    }

    /**
     * CuPy / tensor array operations run per item: in a host loop over items, an operation on the item's row or
     * element of a device array (`fZ[j, :] = …`, `mask[i, lo:hi] = 1.0`, `… krho[j] …`), on a row the loop takes
     * from a device array (`for row in d_mat`), or a fill creator given the item (`torch.full((n,), i, device=…)`).
     * Each is its own launch over a sliver of the data, where one vectorised call would cover every item.
     * Slices computed from the loop variable (`d[k * c:(k + 1) * c]`) are chunks, not items, and stay quiet.
     */
    function arrayOps(m: PyModel) {
      const seen = new Map<number, ReturnType<typeof itemLoop>>();
      const loopInfo = (loop: SyntaxNode) => {
        if (!seen.has(loop.id)) seen.set(loop.id, itemLoop(m, loop));
        return seen.get(loop.id)!;
      };
      const reported: SyntaxNode[] = [];
      /** Names bound to the result of an item-tied operation (`w = cp.cos(a) * freqs[k]`): their uses are item work too. */
      const tied = new Set<string>();
      // Iterating a device array yields device rows (views): a method of the row (`row[:, 1].argsort()`) is a launch.
      const rowCalls: SyntaxNode[] = [];
      for (const loop of m.source.root.descendantsOfType(['for_statement', 'list_comprehension', 'generator_expression', 'set_comprehension', 'dictionary_comprehension'])) {
        const info = loopInfo(loop);
        if (!info || !m.isDevice(info.right) || info.right.type === 'call') continue;
        const rows = new Set(ids(info.left));
        for (const c of info.body.descendantsOfType('call')) {
          const fn = c.childForFieldName('function');
          const attr = fn?.type === 'attribute' ? fn.childForFieldName('attribute')?.text ?? '' : '';
          if (!attr || ROW_HOST_METHODS.has(attr) || m.loopOf(c)?.id !== loop.id) continue;
          let root: SyntaxNode | null = fn!.childForFieldName('object');
          while (root && (root.type === 'subscript' || root.type === 'attribute')) root = root.type === 'subscript' ? root.childForFieldName('value') : root.childForFieldName('object');
          if (root?.type === 'identifier' && rows.has(root.text)) rowCalls.push(c);
        }
      }
      const sites = [
        ...rowCalls,
        ...m.gpuOps.filter((o) => ARRAY_OP_KINDS.has(o.kind)).map((o) => o.node),
      ].sort((a, b) => a.startIndex - b.startIndex);
      for (const node of sites) {
        if (m.debugGated(node) || m.inCpuFallback(node)) continue;
        if (m.callMatches(node, HOST_LOOPING_CALLS)) {
          ctx.report({ node, messageId: 'alongAxis', data: { code: quote(node) }, fix: { description: fixText } });
          continue;
        }
        const loop = m.loopOf(node);
        if (!loop) continue;
        const info = loopInfo(loop);
        if (!info) continue;
        if (reported.some((r) => r.startIndex <= node.startIndex && node.endIndex <= r.endIndex)) continue;
        const assigns: Array<{ names: string[]; value: SyntaxNode }> = [];
        for (const a of info.body.descendantsOfType('assignment')) {
          const l = a.childForFieldName('left');
          const r = a.childForFieldName('right');
          if (l && r) assigns.push({ names: ids(l), value: r });
        }
        const items = itemNames(ids(info.left), info.body, assigns);
        const rowsOfDevice = m.isDevice(info.right) && info.right.type !== 'call';
        const scalars = rowsOfDevice ? new Set<string>() : hostScalars(ids(info.left), assigns);
        // `x = layer(x, w[i])`: iteration i+1 consumes iteration i's result, a chain no batching removes.
        const stmt = statementOf(node);
        if (stmt?.type === 'assignment' && stmt.childForFieldName('right') && ids(stmt.childForFieldName('left')!).some((n) => ids(stmt.childForFieldName('right')!).includes(n))) continue;
        const item = itemOf(m, node, items, rowsOfDevice, tied, scalars);
        if (!item) continue;
        reported.push(node);
        if (stmt?.type === 'assignment') for (const n of ids(stmt.childForFieldName('left')!)) tied.add(n);
        ctx.report({ node, messageId: 'perItemOp', groupBy: 'loop', data: { item, code: quote(node), count: countOf(info.count) }, fix: { description: fixText } });
      }
    }

    /** A host value of the item: a literal, or a host scalar of the loop (`num = len(y)`; `1.0`). */
    function hostItemValue(e: SyntaxNode, scalars: Set<string>): boolean {
      const u = unparen(e);
      if (!u) return false;
      if (['integer', 'float', 'true', 'false'].includes(u.type)) return true;
      if (u.type === 'unary_operator' || u.type === 'binary_operator') return u.namedChildren.every((c) => hostItemValue(c, scalars));
      return u.type === 'identifier' && scalars.has(u.text);
    }

    /** Loop-header names and the names the body computes from them with host arithmetic and host builtins only. */
    function hostScalars(header: string[], assigns: Array<{ names: string[]; value: SyntaxNode }>): Set<string> {
      const out = new Set(header);
      const hostExpr = (e: SyntaxNode | null): boolean => {
        const u = unparen(e);
        if (!u) return false;
        if (['integer', 'float', 'true', 'false'].includes(u.type)) return true;
        if (u.type === 'identifier') return out.has(u.text);
        if (u.type === 'unary_operator' || u.type === 'binary_operator') return u.namedChildren.every(hostExpr);
        if (u.type === 'call') return HOST_SCALAR_CALL.test(u.childForFieldName('function')?.text ?? '');
        return false;
      };
      for (let changed = true; changed; ) {
        changed = false;
        for (const a of assigns) if (a.names.length === 1 && !out.has(a.names[0]!) && hostExpr(a.value)) (out.add(a.names[0]!), (changed = true));
      }
      return out;
    }

    /** The item name an operation is tied to: an index of a device subscript, the row of a device iterable, a fill creator's argument. */
    function itemOf(m: PyModel, node: SyntaxNode, items: Set<string>, rowsOfDevice: boolean, tied: Set<string>, scalars: Set<string>): string | null {
      if (node.type === 'assignment' && node.childForFieldName('left')?.type === 'subscript') {
        // A store into the item's slot (`out[j] = …`): per-item work when what is stored is a host value (a fill or
        // a one-element copy per item) or item work itself. A whole-array result stored per item
        // (`out[j] = cp.abs(shifted - ref).mean()`) is a per-parameter loop whose launches each do real work.
        const right = node.childForFieldName('right')!;
        const slot = itemOf(m, node.childForFieldName('left')!, items, false, tied, scalars);
        if (!slot) return rowsOfDevice ? itemOf(m, right, items, true, tied, scalars) : null;
        if (hostItemValue(right, scalars) || itemOf(m, right, items, rowsOfDevice, tied, scalars) || ids(right).some((x) => tied.has(x))) return slot;
        return null;
      }
      const subs = node.type === 'subscript' ? [node, ...node.descendantsOfType('subscript')] : node.descendantsOfType('subscript');
      for (const s of subs) {
        if (!m.isDevice(s.childForFieldName('value'))) continue;
        for (const ix of s.childrenForFieldName('subscript')) {
          // A device index array (`t[cols + i * n, vals]`) is a gather over many elements, not the item's slot.
          if (ix.type === 'slice' || SLICE_OBJECT.test(ix.text) || m.isDevice(ix)) continue;
          const hit = ids(ix).find((x) => items.has(x));
          if (hit) return hit;
        }
      }
      // Over the rows of a device array, any use of the row.
      if (rowsOfDevice) {
        const hit = ids(node).find((x) => items.has(x));
        if (hit) return hit;
      }
      return null;
    }

    function cuda() {
      const m = ctx.get(cudaModel);
      if (m.testOrBench) return;
      for (const l of m.launches) {
        if (m.inDeviceCode(l.node) || m.debugGated(l.node)) continue;
        const loop = m.loopOf(l.node);
        if (!loop || (loop.type !== 'for_statement' && loop.type !== 'for_range_loop')) continue;
        const body = loop.childForFieldName('body');
        if (!body) continue;
        const header: string[] = [];
        let count: number | null = null;
        if (loop.type === 'for_range_loop') {
          const d = loop.childForFieldName('declarator');
          if (d) header.push(...ids(d));
          const r = loop.childForFieldName('right');
          if (r && (BINS.test(r.text) || CONVERGE.test(r.text))) continue;
        } else {
          const init = loop.childForFieldName('initializer');
          for (const d of init?.descendantsOfType('init_declarator') ?? []) {
            const n = d.childForFieldName('declarator');
            if (n) header.push(n.text);
          }
          if (init?.type === 'assignment_expression') header.push(...ids(init.childForFieldName('left')!));
          const cond = loop.childForFieldName('condition');
          const bound = cond?.type === 'binary_expression' ? cond.childForFieldName('right') : null;
          if (cond && (BINS.test(cond.text) || CONVERGE.test(cond.text))) continue;
          const b = m.constValue(bound);
          if (b !== null) {
            if (b <= MAX_STAGES) continue;
            count = b;
          }
          const upd = loop.childForFieldName('update');
          const step = upd?.type === 'assignment_expression' ? upd.childForFieldName('right') : null;
          if (step && ((m.constValue(step) ?? 0) >= TRIVIAL_THREADS || CHUNK_NAME.test(step.text))) continue;
        }
        if (body.descendantsOfType('break_statement').length > 0) continue;
        // A blocking copy back to the host in the loop synchronises every iteration; that is the bigger cost.
        if (m.calls.some((c) => c.node.startIndex >= loop.startIndex && c.node.endIndex <= loop.endIndex && /^(cudaMemcpy|cudaMemcpy2D|cudaDeviceSynchronize|cudaStreamSynchronize|cudaEventSynchronize)$/.test(c.name))) continue;
        // `std::swap(d_in, d_out)`: iteration i+1 consumes iteration i's output.
        if (m.calls.some((c) => c.node.startIndex >= body.startIndex && c.node.endIndex <= body.endIndex && c.name === 'swap')) continue;
        // One launch per GPU: the loop switches the current device (multi-GPU dispatch), not per-item work.
        if (m.calls.some((c) => c.node.startIndex >= body.startIndex && c.node.endIndex <= body.endIndex && /^(cudaSetDevice|cuCtxSetCurrent|set_device|setDevice)$/.test(c.name)) || /\b(CUDAGuard|OptionalCUDAGuard|DeviceGuard|device_guard)\b/.test(body.text)) continue;
        const assigns: Array<{ names: string[]; value: SyntaxNode }> = [];
        for (const d of body.descendantsOfType('init_declarator')) {
          const n = d.childForFieldName('declarator');
          const v = d.childForFieldName('value');
          if (n && v) assigns.push({ names: ids(n), value: v });
        }
        for (const a of body.descendantsOfType('assignment_expression')) {
          const n = a.childForFieldName('left');
          const v = a.childForFieldName('right');
          if (n && v) assigns.push({ names: ids(n), value: v });
        }
        const items = itemNames(header, body, assigns);
        const passed = l.args.flatMap((a) => (a.type === 'identifier' ? [a] : a.descendantsOfType('identifier'))).find((i) => items.has(i.text));
        if (!passed) continue;
        ctx.report({ node: l.node, messageId: 'perItem', data: { item: passed.text, code: quote(l.node), count: countOf(count) }, fix: { description: fixText } });
      }
    }

    return {
      'source:exit'() {
        if (ctx.source.language === 'python') python();
        else cuda();
      },
    };
  },
});

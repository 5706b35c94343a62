import { cudaModel } from '../../../src/analysis/cuda.js';
import { pythonModel } from '../../../src/analysis/python.js';
import { quote, unparen } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/engine/types.js';
import { COSTS, LAUNCH, MEASURED_ON, launchesCost } from '../../../src/config/costs.js';

/** Work-size bins are the sanctioned binning pattern (003 §5.3): one launch per complexity bin, not per item. */
const BINS = /\bbins?\b|_bins?\b|\bbins?_|WORK_BINS|\btiers?\b|buckets?\b/i;
/** Loops re-launching on the previous iteration's result (convergence, ping-pong buffers) cannot be batched. */
const CONVERGE = /\b(max_iter\w*|n_iter\w*|num_iter\w*|iterations?|epochs?|sweeps?|rounds?|levels?|passes|stages?|steps)\b/i;
/** 003 §3.5: a trivial kernel needs ~10,000 threads to amortise its launch; chunks at least that big are batched already. */
const TRIVIAL_THREADS = 10_000;
const CHUNK_NAME = /chunk|batch|tile|block_rows|CHUNK|BATCH/;
const MAX_STAGES = 8;

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

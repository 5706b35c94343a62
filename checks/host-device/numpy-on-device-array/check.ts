import { pythonModel, type PyModel } from '../../../src/analysis/python.js';
import { calleePath, lastName } from '../../../src/analysis/syntax.js';
import { defineCheck, type CheckContext } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

interface Hit {
  call: SyntaxNode;
  fn: SyntaxNode;
  name: string;
  /** `np.<name>` can become `<cupy alias>.<name>` on its line. */
  safe: boolean;
}

const short = (s: string) => {
  const one = s.replace(/\s*\n\s*/g, ' ');
  return one.length > 60 ? one.slice(0, 57) + '...' : one;
};

/** The line of `fn` with every safe `np.<name>` callee on that line renamed to the CuPy module. */
function rewriteLine(ctx: CheckContext, m: PyModel, fn: SyntaxNode, onLine: Hit[], cupy: string): string {
  const text = m.source.text;
  const lineStart = text.lastIndexOf('\n', fn.startIndex - 1) + 1;
  let line = ctx.linesOf(fn);
  for (const h of [...onLine].sort((a, b) => b.fn.startIndex - a.fn.startIndex)) {
    const a = h.fn.startIndex - lineStart;
    line = line.slice(0, a) + `${cupy}.${h.name}` + line.slice(a + h.fn.text.length);
  }
  return line;
}

export default defineCheck({
  id: 'host-device/numpy-on-device-array',
  pass: 1,
  severity: 'critical',
  kind: 'performance',
  confidence: 'medium',
  languages: ['python'],
  citation: '003 §8.2 Host-Device Ping-Pong ("numpy in GPU dispatch paths = BLOCKING", case 1, device-resident data)',
  summary: 'numpy function called on a device (CuPy) array in GPU code.',
  why: '003 §8.2 rates numpy in GPU dispatch paths BLOCKING within its CRITICAL ping-pong pattern: np.* on a device buffer means a synchronizing D→H copy, CPU work and an H→D copy back instead of a kernel running at the 936–3,350 GB/s device bandwidth of the target GPUs (003 §0).',
  messages: {
    numpyOnDevice: 'numpy call `{{code}}` on device-resident data: forces a silent D→H copy, CPU work, and an H→D copy back.',
  },
  fix: 'safe',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(pythonModel);
        if (m.testOrBench) return;
        const vocab = ctx.config.vocab;
        const cupy = m.aliasFor('cupy');
        const opScopes = new Set(m.gpuOps.map((o) => m.scopeOf(o.node).id));
        const hits: Hit[] = [];
        for (const call of m.source.root.descendantsOfType('call')) {
          const fn = call.childForFieldName('function');
          const path = calleePath(fn);
          if (!fn || !m.isNumpyPath(path)) continue;
          const name = lastName(path) ?? '';
          // dtypes, scalar types and metadata helpers never touch array data (003 §8.2 exception).
          if (vocab.numpy_metadata_calls.includes(name)) continue;
          if (!m.deviceArgsOf(call).length) continue;
          // 003 §8.2: only "in GPU dispatch paths"; a CPU fallback or a debug dump is not one.
          if (m.debugGated(call) || m.inCpuFallback(call)) continue;
          if (!m.importsCupy && !opScopes.has(m.scopeOf(call).id)) continue;
          const safe =
            !!cupy &&
            path!.split('.').length === 2 &&
            vocab.cupy_same_signature.includes(name) &&
            fn.startPosition.row === fn.endPosition.row;
          hits.push({ call, fn, name, safe });
        }
        for (const h of hits) {
          const conversion = vocab.numpy_conversions.includes(h.name);
          const description = h.safe
            ? `Call \`${cupy}.${h.name}\` directly: it takes the same arguments and the work stays on the device.`
            : conversion
              ? 'Keep the data on the device and drop the conversion; if a host copy is really needed, read it back explicitly (`.get()`) once at the end of the pipeline.'
              : `Use the CuPy equivalent of \`${h.fn.text}\` if there is one, otherwise a custom NVRTC kernel or a CCCL primitive, so the data never leaves the device.`;
          // Several numpy calls on one line share one whole-line suggestion, so applying any of them fixes all.
          const onLine = hits.filter((o) => o.safe && o.fn.startPosition.row === h.fn.startPosition.row);
          ctx.report({
            node: h.call,
            messageId: 'numpyOnDevice',
            data: { code: short(h.call.text) },
            fix: h.safe ? { description, replace: { from: h.fn, text: rewriteLine(ctx, m, h.fn, onLine, cupy!) } } : { description },
          });
        }
      },
    };
  },
});

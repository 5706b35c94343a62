import { defaultLimitBytes, fmtBytes, quoteCode } from '../../../src/analysis/smem.js';
import { smemLaunches } from '../../../src/analysis/smem-launch.js';
import { defineCheck } from '../../../src/engine/check.js';

const short = (t: string) => quoteCode(t, 70);

export default defineCheck({
  id: 'memory/dynamic-smem-over-default-without-opt-in',
  pass: 5,
  severity: 'medium',
  kind: 'correctness',
  confidence: 'medium',
  languages: ['cuda', 'python', 'nvrtc-in-python'],
  citation: '003 §4.2 Shared Memory Usage ("Default carveout: 48 KB if not explicitly configured"; larger sizes "configure via cudaFuncSetAttribute")',
  summary: 'Launch with more than 48 KB of dynamic shared memory and no cudaFuncAttributeMaxDynamicSharedMemorySize opt-in for the kernel.',
  why: 'Without the opt-in a block gets at most 48 KB of shared memory (003 §4.2); the larger per-block sizes (163 KB on A100, 227 KB on H100, 99 KB on RTX 3090/4090) must be enabled with cudaFuncSetAttribute, otherwise the launch fails.',
  messages: {
    missing: 'Kernel `{{kernel}}` requests {{n}} bytes of dynamic shared memory (> 48 KB) without raising {{attr}}; the launch will fail: `{{code}}`.',
    missingWithStatic:
      'Kernel `{{kernel}}` requests {{n}} bytes of dynamic shared memory, {{total}} bytes with its {{static}} bytes of static `__shared__` (> 48 KB), without raising {{attr}}; the launch will fail: `{{code}}`.',
    tooSmall: 'Kernel `{{kernel}}` requests {{n}} bytes of dynamic shared memory but {{attr}} is raised only to {{set}} bytes (line {{line}}); the launch will fail: `{{code}}`.',
    late: 'Kernel `{{kernel}}` requests {{n}} bytes of dynamic shared memory (> 48 KB) but {{attr}} is raised only after this launch (line {{line}}); the launch will fail: `{{code}}`.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        // The default (no opt-in) ceiling covers static and dynamic shared memory together: a kernel's
        // default maximum dynamic size is 48 KB minus its static `__shared__` bytes.
        const limit = defaultLimitBytes(ctx.config.targets);
        for (const l of ctx.get(smemLaunches)) {
          if (l.dynamic === null || l.dynamic === 0 || l.dynamic + l.static <= limit) continue;
          const data = { kernel: l.label, n: fmtBytes(l.dynamic), attr: l.attr, code: short(l.node.text), static: fmtBytes(l.static), total: fmtBytes(l.dynamic + l.static) };
          // A kernel string's kernels are raised on the host, on the function the Python module loads.
          const howTo = ctx.source.parent
            ? `\`module.get_function("${l.kernel ?? l.label}").max_dynamic_shared_size_bytes = ${l.dynamic}\` in the Python code that loads the module`
            : l.attr.includes('max_dynamic')
            ? `\`${l.label}.max_dynamic_shared_size_bytes = ${l.dynamic}\``
            : l.attr.startsWith('CU_')
              ? `\`cuFuncSetAttribute(${l.label}, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, ${l.dynamic})\``
              : `\`cudaFuncSetAttribute(${l.label.replace(/^\(.*?\)\s*&?/, '')}, cudaFuncAttributeMaxDynamicSharedMemorySize, ${l.dynamic})\``;
          const fix = { description: `Raise the kernel's limit once before launching it: ${howTo} (allowed up to the target's opt-in maximum: 163 KB A100, 227 KB H100, 99 KB RTX 3090/4090), or keep the request at or under 48 KB.` };
          const effective = l.optIns.filter((o) => o.effective);
          if (l.optIns.length === 0) {
            ctx.report({ node: l.node, messageId: l.static ? 'missingWithStatic' : 'missing', data, fix });
          } else if (effective.length === 0) {
            ctx.report({ node: l.node, messageId: 'late', data: { ...data, line: l.optIns[0].line }, fix });
          } else if (effective.every((o) => o.value !== null && o.value < l.dynamic!)) {
            const top = effective.reduce((a, b) => (b.value! > a.value! ? b : a));
            ctx.report({ node: l.node, messageId: 'tooSmall', data: { ...data, set: fmtBytes(top.value!), line: top.line }, fix });
          }
        }
      },
    };
  },
});

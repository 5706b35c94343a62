import { cppD2H, valueDrives, workAfter, type ReadbackKind } from '../../../src/analysis/cpp-d2h.js';
import { cudaModel } from '../../../src/analysis/cuda.js';
import { onceGuarded } from '../../../src/analysis/once.js';
import { contains, oneLine } from '../../../src/analysis/syntax.js';
import { defineCheck, type CheckContext } from '../../../src/engine/check.js';

const WHAT: Record<ReadbackKind, string> = {
  memcpy: 'copies a device value into a host scalar',
  item: 'reads a tensor element back with `item()`',
  cpu: 'copies a tensor to the host',
  'device-scalar': 'reads a device scalar back with `value(stream)` (a copy plus a stream sync)',
  'device-vector-element': 'reads a `device_vector` element on the host (a blocking one-element copy)',
};
const DRIVES = { alloc: ' to size an allocation', launch: ' to size a launch', control: ' to steer host control flow' } as const;

export default defineCheck({
  id: 'host-device/native-d2h-count-readback',
  pass: 1,
  severity: 'high',
  kind: 'performance',
  confidence: 'medium',
  languages: ['cuda'],
  citation: '003 §8.2 Host-Device Ping-Pong; 003 §2.4 (sizes computed on the device stay there); 003 §9 Pass 1',
  summary: 'C++ host code reads a device value back in the middle of a pipeline or a loop (count readback).',
  why: 'Each readback stalls the host until the GPU drains and leaves the GPU idle until the next launch; a count read mid-pipeline or once per iteration serializes the whole pipeline (003 §8.2). Keep sizes on the device (upper-bound allocation, device-side offsets), or batch the reads into one at the end (003 §2.4, §9 Pass 1).',
  messages: {
    readback:
      '`{{code}}` {{what}}{{drives}} while GPU work still follows (`{{next}}`){{loop}}; the host waits for the device here and the device then waits for the host. Keep the count on the device (upper-bound sizing, device offsets) or defer one combined read to the end of the pipeline.',
  },
  fix: 'judgment',
  create(ctx: CheckContext) {
    return {
      'source:exit'() {
        const text = ctx.source.text;
        if (!/DeviceToHost|DtoH|FromSymbol|\.item\b|\.cpu\b|kCPU|\.value\s*\(|device_vector|device_uvector|d2h|update_host|device_to_host/i.test(text)) return;
        const m = ctx.get(cudaModel);
        if (m.testOrBench) return;
        const d = ctx.get(cppD2H);
        const launches = m.launches.map((l) => l.node);
        for (const r of d.readbacks) {
          if (m.debugGated(r.node) || onceGuarded(r.node)) continue;
          const loop = m.loopsOf(r.node).find((l) => contains(r.fn, l)) ?? null;
          const next = workAfter(d, r, loop);
          if (!next) continue;
          const drives = valueDrives(d, r, launches);
          ctx.report({
            node: r.node,
            messageId: 'readback',
            data: {
              code: oneLine(r.node.text, 50),
              what: WHAT[r.kind],
              drives: drives ? DRIVES[drives] : '',
              next: oneLine(next.text, 40),
              loop: loop && contains(loop, next) ? ', once per loop iteration' : '',
            },
          });
        }
      },
    };
  },
});

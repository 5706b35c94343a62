import { luisaModel } from '../../../src/analysis/luisa.js';
import { quote } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';

/** luisa_compute_validate_warp_size (src/dsl/builtin.cpp:10): 1, 2, or a power of two in [4, 128]. */
const ALLOWED = new Set([1, 2, 4, 8, 16, 32, 64, 128]);

export default defineCheck({
  id: 'luisa/invalid-warp-size',
  pass: 3,
  severity: 'high',
  kind: 'correctness',
  confidence: 'high',
  languages: ['luisa-dsl'],
  citation: '000 §1.5 Configuration (luisa_compute_validate_warp_size: 1, 2, or a power of two in [4, 128]; CUDA and both Metal backends error on anything but 32; CPU fallback on anything but 1); 000 §6 Hardware Mapping',
  summary: 'set_warp_size(n) with a width the DSL asserts on or the configured backend rejects.',
  why: 'set_warp_size is asserted to be one of 1, 2, 4, 8, 16, 32, 64, 128 when the kernel records, and it is an exact requirement the backend may refuse: CUDA and both Metal backends error on anything but 32, the CPU fallback on anything but 1 (000 §1.5, §6).',
  messages: {
    invalid: 'set_warp_size({{n}}) is invalid: allowed {1,2,4,8,16,32,64,128}, and CUDA/Metal accept only 32, the CPU fallback only 1 (`{{code}}`); use set_warp_size(device.compute_warp_size()).',
    backend: 'set_warp_size({{n}}) is rejected by the {{backend}} backend this project ships on, which accepts only {{only}} (`{{code}}`); use set_warp_size(device.compute_warp_size()){{alt}}.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(luisaModel);
        const backends = ctx.config.luisa.backends ?? [];
        for (const c of m.callsNamed('set_warp_size')) {
          if (c.receiver || c.args.length !== 1 || !m.inDeviceCode(c.node)) continue;
          // A width from device.compute_warp_size() (directly or through a host variable) has no
          // constant value and is what the backend reports, so it is left alone.
          const n = m.constValue(c.args[0]);
          if (n === null) continue;
          const code = quote(c.node);
          if (!ALLOWED.has(n)) {
            ctx.report({ node: c.node, messageId: 'invalid', data: { n, code }, fix: { description: 'Use set_warp_size(device.compute_warp_size()), or 32 on CUDA/Metal.' } });
            continue;
          }
          const rejecting = backends.filter((b) => ((b === 'cuda' || b === 'metal') && n !== 32) || (b === 'fallback' && n !== 1));
          if (!rejecting.length) continue;
          const b = rejecting[0];
          const only = b === 'fallback' ? 'a width of 1' : 'a width of 32';
          ctx.report({
            node: c.node,
            messageId: 'backend',
            data: { n, backend: b === 'cuda' ? 'CUDA' : b === 'metal' ? 'Metal' : 'CPU fallback', only, code, alt: b === 'fallback' ? '' : ', or 32 for CUDA/Metal' },
            fix: { description: 'Use set_warp_size(device.compute_warp_size()), or the one width every configured backend accepts.' },
          });
        }
      },
    };
  },
});

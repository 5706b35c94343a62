import { luisaModel } from '../../../src/analysis/luisa.js';
import { quote } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';

/** The smallest legal block with the same y and z, or a square 2D / cubic 3D default. */
function suggestion(dims: [number | null, number | null, number | null]): string {
  const [x, y, z] = dims.map((d) => (d === null ? 1 : Math.min(Math.max(d, 1), 1024)));
  // Too many threads: start from the measured optimum (64–256, 000 §5.7) rather than the 1,024 ceiling.
  if (x * y * z > 1024) return z > 1 ? 'set_block_size(8u, 8u, 4u)' : y > 1 ? 'set_block_size(16u, 16u, 1u)' : 'set_block_size(256u, 1u, 1u)';
  for (let nx = Math.max(x, 1); nx <= 1024; nx++) {
    const p = nx * y * z;
    if (p > 1024) break;
    if (p % 32 === 0) return `set_block_size(${nx}u, ${y}u, ${z}u)`;
  }
  return z > 1 ? 'set_block_size(8u, 8u, 4u)' : y > 1 ? 'set_block_size(16u, 16u, 1u)' : 'set_block_size(256u, 1u, 1u)';
}

export default defineCheck({
  id: 'luisa/invalid-block-size',
  pass: 3,
  severity: 'high',
  kind: 'correctness',
  confidence: 'high',
  languages: ['luisa-dsl'],
  citation: '000 §5.1 Hardware Constraints (each dim in [1,1024]; x·y·z ≤ 1024 and a multiple of 32); 000 §5.7 (finding 2: "the DSL hard-asserts block_size % 32 == 0")',
  summary: 'set_block_size with constant dimensions the DSL rejects (a dimension outside 1–1024, or a total above 1,024 or not a multiple of 32).',
  why: 'luisa_compute_validate_block_size asserts each dimension in [1, 1024] and x·y·z ≤ 1,024 with x·y·z % 32 == 0 (000 §5.1, §5.7 finding 2), so the kernel fails when it is recorded, not when it is tuned.',
  messages: {
    invalid: 'set_block_size({{x}},{{y}},{{z}}) violates the DSL limits (each dimension 1–1024, total ≤ 1024 and a multiple of 32): {{problem}}. Use `{{suggest}}` and guard the tail with `$if`.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(luisaModel);
        for (const c of m.callsNamed('set_block_size')) {
          if (c.receiver || !m.inDeviceCode(c.node)) continue;
          const b = m.blockSizeAt(c.node);
          if (!b) continue;
          const problems: string[] = [];
          const names = ['x', 'y', 'z'];
          b.dims.forEach((d, i) => {
            if (d !== null && (d < 1 || d > 1024)) problems.push(`${names[i]} = ${d} is outside [1, 1024]`);
          });
          // Only the constant part can be judged; a run-time size is checked by the DSL itself.
          if (b.product !== null && !problems.length) {
            if (b.product > 1024) problems.push(`the block has ${b.product} threads (> 1,024)`);
            else if (b.product % 32 !== 0) problems.push(`${b.product} threads is not a multiple of 32`);
          }
          if (!problems.length) continue;
          const show = (i: number) => (b.dims[i] === null ? (b.args[i] ? quote(b.args[i]) : '?') : String(b.dims[i]));
          ctx.report({
            node: c.node,
            messageId: 'invalid',
            data: { x: show(0), y: show(1), z: show(2), problem: problems.join('; '), suggest: suggestion(b.dims) },
            fix: { description: `Pick a block the DSL accepts (${suggestion(b.dims)}) and guard the extra threads with \`$if (dispatch_x() < n)\`.` },
          });
        }
      },
    };
  },
});

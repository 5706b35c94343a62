import { luisaModel } from '../../../src/analysis/luisa.js';
import { quote, unparen } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';

const D3D12_MAX_GROUPS = 65535;
/** Kernel1D's block when the kernel sets none (LuisaCompute's 1D default). */
const DEFAULT_BLOCK_X = 256;
const SCALAR_TYPE = /^(const\s+)?(unsigned(\s+int)?|uint|uint32_t|uint64_t|int|size_t|luisa::uint|uint_t|auto)\b/;

export default defineCheck({
  id: 'luisa/dx-1d-dispatch-over-65535-groups',
  pass: 3,
  severity: 'medium',
  kind: 'portability',
  confidence: 'low',
  status: 'preview',
  languages: ['luisa-dsl'],
  citation: '000 §5.7 (trap 2: D3D12 caps dispatch group dimensions at 65,535; "a 1D grid over >65535 groups fails on DX")',
  summary: '1D dispatch that can exceed 65,535 thread groups, the D3D12 per-dimension limit.',
  why: 'D3D12 caps each dispatch dimension at 65,535 thread groups, so a 1D dispatch of more than 65,535 × block_x threads (16.7 M at 256) fails on the DX backend with "Dispatch size out of range" (000 §5.7 trap 2).',
  messages: {
    constant: '`{{code}}`: 1D dispatch of {{n}} threads is {{groups}} thread groups of {{bx}} on DirectX (n / block_size > 65535); split into a 2D grid `dispatch(w, h)` (w a multiple of {{bx}}) and flatten the index with `dispatch_id().y * dispatch_size().x + dispatch_id().x`.',
    dynamic: '`{{code}}`: 1D dispatch can exceed 65,535 thread groups on DirectX (n / block_size > 65535 once n > {{limit}} with blocks of {{bx}}); split into a 2D grid `dispatch(w, h)` and flatten the index with `dispatch_id().y * dispatch_size().x + dispatch_id().x`.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(luisaModel);
        const backends = ctx.config.luisa.backends;
        if (backends && !backends.includes('dx')) return;
        // The project ships on DX when the config says so or this file creates a "dx" device.
        const dxKnown = !!backends?.includes('dx') || /create_device\s*\(\s*"dx"/.test(ctx.source.text);
        for (const d of m.dispatches) {
          if (d.args.length !== 1) continue;
          const arg = unparen(d.args[0]);
          if (!arg || arg.type === 'call_expression' && /^(make_)?uint[23]$/.test(arg.childForFieldName('function')?.text ?? '')) continue;
          const k = d.kernel;
          if (k && k.dims !== 1) continue;
          // A kernel that already flattens a 2D grid is being dispatched on purpose.
          if (k && /dispatch_size\s*\(\s*\)\s*\.\s*x/.test(k.body.text)) continue;
          const bx = k?.blockSize ? k.blockSize.dims[0] : DEFAULT_BLOCK_X;
          if (bx === null) continue;
          const n = m.constValue(arg);
          if (n !== null) {
            const groups = Math.ceil(n / bx);
            if (groups <= D3D12_MAX_GROUPS) continue;
            ctx.report({
              node: d.node,
              messageId: 'constant',
              data: { code: quote(d.node), n: n.toLocaleString('en-US'), groups: groups.toLocaleString('en-US'), bx },
              fix: { description: 'Dispatch a 2D grid: `dispatch(w, (n + w - 1u) / w)` with w a multiple of the block size, index with `dispatch_id().y * dispatch_size().x + dispatch_id().x` and guard `idx < n`.' },
            });
            continue;
          }
          if (!dxKnown || m.testOrBench) continue;
          // A run-time size is only known to be 1D when the kernel is, or the size is a scalar.
          if (!k) {
            const decl = arg.type === 'identifier' ? m.declOf(arg.text, arg) : null;
            const scalar = decl ? SCALAR_TYPE.test(decl.type.trim()) && !/uint[234]|make_uint/.test(decl.value?.text ?? '') : arg.type === 'binary_expression';
            if (!scalar) continue;
          }
          if (/\bmin\s*\(/.test(arg.text)) continue;
          ctx.report({
            node: d.node,
            messageId: 'dynamic',
            data: { code: quote(d.node), limit: (D3D12_MAX_GROUPS * bx).toLocaleString('en-US'), bx },
            fix: { description: 'Dispatch a 2D grid: `dispatch(w, (n + w - 1u) / w)` with w a multiple of the block size, index with `dispatch_id().y * dispatch_size().x + dispatch_id().x` and guard `idx < n`.' },
          });
        }
      },
    };
  },
});

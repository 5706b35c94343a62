import { luisaModel } from '../../../src/analysis/luisa.js';
import { quote, unparen } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

const isCallTo = (n: SyntaxNode | null, name: string): boolean => {
  const u = unparen(n);
  return u?.type === 'call_expression' && u.childForFieldName('function')?.text === name && (u.childForFieldName('arguments')?.namedChildren.length ?? 0) === 0;
};

const OTHER_BACKEND = /(^|[/_.-])(metal|cuda|hip|vk|vulkan|fallback|ispc|simd)([/_.-]|$)/i;
const DX_PATH = /(^|[/_.-])(dx|hlsl|d3d\w*|directx|dml)([/_.-]|$)/i;

export default defineCheck({
  id: 'luisa/warp-first-active-lane-on-hlsl',
  pass: 3,
  severity: 'medium',
  kind: 'portability',
  confidence: 'high',
  languages: ['luisa-dsl'],
  citation: '000 §1.1 Query / Metadata (warp_first_active_lane "Not implemented in the HLSL codegen path … LUISA_NOT_IMPLEMENTED()")',
  summary: 'warp_first_active_lane() aborts shader compilation on the DirectX (HLSL) backend.',
  why: 'The HLSL codegen path has no lowering for warp_first_active_lane() (function_codegen.cpp:1985 calls LUISA_NOT_IMPLEMENTED()), so the kernel fails to compile on DirectX while warp_is_first_active_lane() lowers to WaveIsFirstLane (000 §1.1).',
  messages: {
    hlsl: 'warp_first_active_lane() is not implemented on the DirectX/HLSL backend; use warp_is_first_active_lane() or ctz(warp_active_bit_mask(true).x){{hint}}.',
  },
  fix: 'safe',
  create(ctx) {
    return {
      'source:exit'() {
        const backends = ctx.config.luisa.backends;
        if (backends && !backends.includes('dx')) return;
        const m = ctx.get(luisaModel);
        // A backend-specific file (`test_metal_xir_air.cpp`, `cuda/…`) never compiles through the HLSL codegen.
        if (OTHER_BACKEND.test(m.source.path) && !DX_PATH.test(m.source.path)) return;
        for (const c of m.callsNamed('warp_first_active_lane')) {
          if (c.receiver || !m.inDeviceCode(c.node)) continue;
          // `warp_lane_id() == warp_first_active_lane()` is exactly warp_is_first_active_lane().
          const p = c.node.parent;
          let cmp: SyntaxNode | null = null;
          let negate = false;
          if (p?.type === 'binary_expression' && ['==', '!='].includes(p.childForFieldName('operator')?.type ?? '')) {
            const other = p.childForFieldName('left')?.id === c.node.id ? p.childForFieldName('right') : p.childForFieldName('left');
            if (isCallTo(other, 'warp_lane_id')) {
              cmp = p;
              negate = p.childForFieldName('operator')?.type === '!=';
            }
          }
          let fix: { description: string; replace?: { from: SyntaxNode; text: string } } = {
            description: cmp ? 'Use `warp_is_first_active_lane()`.' : 'Use `ctz(warp_active_bit_mask(true).x)` for the lane index (it lowers to WaveActiveBallot on DirectX).',
          };
          if (cmp && cmp.startPosition.row === cmp.endPosition.row) {
            const line = m.lineText(cmp);
            const a = cmp.startPosition.column;
            const b = cmp.endPosition.column;
            const wasText = cmp.text;
            if (line !== null && line.slice(a, b) === wasText) {
              // `(cmp)` as a whole `$if` condition keeps its own parentheses.
              const rep = negate ? '!warp_is_first_active_lane()' : 'warp_is_first_active_lane()';
              fix = { description: `Use \`${rep}\`.`, replace: { from: cmp, text: line.slice(0, a) + rep + line.slice(b) } };
            }
          }
          ctx.report({
            node: cmp ?? c.node,
            messageId: 'hlsl',
            data: { hint: cmp ? ` (here \`${quote(cmp)}\` is \`${negate ? '!' : ''}warp_is_first_active_lane()\`)` : '' },
            fix,
          });
        }
      },
    };
  },
});

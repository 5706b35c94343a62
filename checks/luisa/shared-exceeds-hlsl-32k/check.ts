import { luisaModel, type SharedDecl } from '../../../src/analysis/luisa.js';
import { quote } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';

/** HLSL groupshared limit asserted by hlsl_codegen.cpp:798 (000 §4.7 rule 6, §5.7 trap 3). */
const HLSL_LIMIT = 32768;

/** Bytes per element as the HLSL backend lays them out (float3 is padded to 16 bytes). */
function elemBytes(type: string): number | null {
  const t = type.replace(/\s+/g, '').replace(/^(const)?(luisa::compute::|luisa::)/, '');
  const scalar: Record<string, number> = {
    float: 4, int: 4, uint: 4, int32_t: 4, uint32_t: 4, unsigned: 4, bool: 4,
    half: 2, short: 2, ushort: 2, int16_t: 2, uint16_t: 2,
    double: 8, slong: 8, ulong: 8, int64_t: 8, uint64_t: 8,
  };
  if (t in scalar) return scalar[t];
  const vec = /^(float|int|uint|bool|half|short|ushort|double|slong|ulong)([234])$/.exec(t);
  if (vec) {
    const s = scalar[vec[1]];
    const n = Number(vec[2]);
    // 3-vectors are aligned like 4-vectors.
    return s * (n === 3 ? 4 : n);
  }
  const mat = /^float([234])x\1$/.exec(t);
  if (mat) {
    const n = Number(mat[1]);
    return n * (n === 2 ? 8 : 16);
  }
  return null;
}

export default defineCheck({
  id: 'luisa/shared-exceeds-hlsl-32k',
  pass: 5,
  severity: 'medium',
  kind: 'portability',
  confidence: 'high',
  languages: ['luisa-dsl'],
  citation: '000 §4.7 Correctness & Performance Rules, rule 6 ("Stay inside the 32 KiB HLSL floor"); 000 §5.1 Hardware Constraints; 000 §5.7 (trap 3)',
  summary: 'Shared<T> arrays of one kernel exceed the 32 KiB the DirectX/HLSL backend accepts.',
  why: 'The DX/HLSL codegen asserts a total of at most 32,768 bytes of shared memory per group (hlsl_codegen.cpp:798) while Vulkan reports more through compute_max_shared_memory_size(), so a kernel that runs on Vulkan fails to compile on DirectX (000 §4.7 rule 6, §5.7 trap 3).',
  messages: {
    exceeds: '`{{code}}`: Shared<T> allocations total {{n}} bytes per group ({{parts}}); the DirectX/HLSL backend asserts ≤ 32,768 bytes. Size tiles for the 32 KiB floor.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const backends = ctx.config.luisa.backends;
        if (backends && !backends.includes('dx')) return;
        const m = ctx.get(luisaModel);
        if (!m.shared.length) return;
        // Sizes chosen against the device's reported limit are the project's own portability check.
        if (m.callsNamed('compute_max_shared_memory_size').length) return;
        for (const b of m.bodies) {
          if (!b.shared.length) continue;
          let total = 0;
          const parts: string[] = [];
          let over: SharedDecl | null = null;
          for (const s of b.shared) {
            const e = elemBytes(s.elemType);
            if (s.count === null || e === null) continue;
            total += s.count * e;
            parts.push(`${s.name ?? 'Shared'}: ${s.count} × ${e} B`);
            if (!over && total > HLSL_LIMIT) over = s;
          }
          if (!over) continue;
          ctx.report({
            node: over.node,
            messageId: 'exceeds',
            data: { code: quote(over.node), n: total.toLocaleString('en-US'), parts: parts.join(', ') },
            fix: { description: `Shrink or split the tiles by at least ${(total - HLSL_LIMIT).toLocaleString('en-US')} bytes so the kernel's Shared<T> arrays total at most 32,768 bytes, or stage the data in two passes; size against device.compute_max_shared_memory_size() only where DirectX is not a target.` },
          });
        }
      },
    };
  },
});

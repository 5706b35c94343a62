import { describe, expect, it } from 'vitest';
import { CHECKS } from '../../checks/registry.generated.js';
import { reviewText } from '../helpers.js';

/**
 * Backend-dependent Luisa warp rules read `luisa.backends`: warp_first_active_lane() only breaks the
 * DirectX (HLSL) path, and a pinned warp size other than 32 only fails on CUDA/Metal (000 §1.1, §1.5).
 */
const checks = CHECKS.filter((c) => ['luisa/warp-first-active-lane-on-hlsl', 'luisa/invalid-warp-size'].includes(c.id));

const SRC = `#include <luisa/luisa-compute.h>
using namespace luisa::compute;
Kernel1D push = [&](BufferFloat src, BufferUInt q) noexcept {
    set_block_size(128u, 1u, 1u);
    set_warp_size(64u);
    Float v = src.read(dispatch_x());
    $if (warp_lane_id() == warp_first_active_lane()) { q.write(0u, 1u); };
};
`;
const rules = async (backends?: string[]) =>
  (await reviewText('src/push.cpp', SRC, { checks, config: { enable_preview: true, ...(backends ? { luisa: { backends } } : {}) } })).map((f) => `${f.ruleId}:${f.line}`).sort();

describe('luisa warp rules and luisa.backends', () => {
  it('unknown backends: the HLSL gap is reported, a valid width of 64 is not', async () => {
    expect(await rules()).toEqual(['luisa/warp-first-active-lane-on-hlsl:7']);
  });
  it('CUDA/Vulkan only: no HLSL finding, and CUDA rejects a width of 64', async () => {
    expect(await rules(['cuda', 'vulkan'])).toEqual(['luisa/invalid-warp-size:5']);
  });
  it('Vulkan only: nothing', async () => {
    expect(await rules(['vulkan'])).toEqual([]);
  });
  it('DirectX listed: the HLSL gap is reported', async () => {
    expect(await rules(['dx', 'vulkan'])).toEqual(['luisa/warp-first-active-lane-on-hlsl:7']);
  });
});

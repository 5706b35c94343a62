import { describe, expect, it } from 'vitest';
import { luisaModel, type LuisaModel } from '../../src/analysis/luisa.js';
import { buildSources } from '../../src/sources/build.js';
import type { SyntaxNode } from '../../src/engine/types.js';
import { config } from '../helpers.js';

function model(text: string, path = 'src/k.cpp'): LuisaModel {
  const [s] = buildSources(path, 'luisa-dsl', { text, firstLine: 1, label: 'file', wholeFile: true }, 5000);
  return luisaModel.compute(s, config());
}
const at = (m: LuisaModel, needle: string, type?: string): SyntaxNode => {
  const i = m.source.text.indexOf(needle);
  if (i < 0) throw new Error(`no ${needle}`);
  let n: SyntaxNode | null = m.source.root.descendantForIndex(i, i + needle.length);
  while (type && n && n.type !== type) n = n.parent;
  if (!n) throw new Error(`no ${type} at ${needle}`);
  return n;
};

const SRC = `
static constexpr uint kBlock = 128u;
Shared<float> global_tile{64};
void emit_tree(Shared<float> &s) {
  $if (thread_x() < 16u) { s[thread_x()] += s[thread_x() + 16u]; };
  sync_block();
}
void run(Device &device, Stream &stream, uint n, luisa::vector<float> &host) {
  Kernel1D reduce = [&](BufferFloat in, BufferFloat out, UInt count) noexcept {
    set_block_size(kBlock, 1u, 1u);
    set_warp_size(32u);
    Shared<float> s{kBlock};
    auto tid = thread_x();
    UInt item = block_id().x;
    Float v = in.read(dispatch_x());
    Float total = warp_active_sum(v);
    s[tid] = v;
    sync_block();
    $if (tid < 64u) { s[tid] += s[tid + 64u]; } $else { v = 0.f; };
    $if (item < count) { out.write(item, total); };
    $if (tid / warp_lane_count() == 0u) { total = warp_read_lane(total, 3u); };
    $for (i, 0u, count) { v += in.read(i); };
    for (uint k = 0u; k < 4u; k++) { v += s[k]; }
    $while (v > 1.f) { v *= 0.5f; };
  };
  Callable<float(float)> sq = [](Float x) noexcept { return x * x; };
  auto shader = device.compile(reduce);
  for (uint f = 0; f < 10; f++) {
    stream << shader(a, b, n).dispatch(n) << b.copy_to(host.data()) << synchronize();
    auto cl = CommandList::create();
    cl << shader(a, b, n).dispatch((n + kBlock - 1u) / kBlock);
    stream << cl.commit();
  }
  std::cout << "done" << std::endl;
}
`;

describe('luisa model', () => {
  const m = model(SRC);
  it('finds kernel and callable bodies with their block and warp sizes', () => {
    expect(m.bodies.map((b) => [b.kind, b.name, b.dims])).toEqual([['Kernel1D', 'reduce', 1], ['Callable', 'sq', null]]);
    const k = m.bodies[0];
    expect(k.blockSize?.dims).toEqual([128, 1, 1]);
    expect(k.blockSize?.product).toBe(128);
    expect(k.warpSize?.value).toBe(32);
    expect(k.params.length).toBe(3);
  });
  it('places Shared<T> declarations in their body or outside any', () => {
    expect(m.shared.map((s) => [s.name, s.elemType, s.count, s.body?.name ?? null])).toEqual([['global_tile', 'float', 64, null], ['s', 'float', 128, 'reduce']]);
    const acc = m.sharedAccesses(m.shared[1]).map((a) => `${a.kind}:${a.index ? m.source.text.slice(a.index.startIndex, a.index.endIndex) : ''}`);
    expect(acc).toEqual(['write:tid', 'read:tid', 'write:tid', 'read:tid + 64u', 'read:k']);
  });
  it('tells device branches and loops from record-time C++ loops', () => {
    const write = at(m, 's[tid] += s[tid + 64u]', 'expression_statement');
    const br = m.deviceBranchesAround(write);
    expect(br.length).toBe(1);
    expect(m.laneDependent(br[0].condition)).toBe(true);
    const elseStmt = at(m, 'v = 0.f', 'expression_statement');
    expect(m.deviceBranchesAround(elseStmt)[0].inElse).toBe(true);
    const inFor = at(m, 'v += in.read(i)', 'expression_statement');
    const loops = m.deviceLoopsAround(inFor);
    expect(loops.length).toBe(1);
    expect(m.loopParts(loops[0])).toMatchObject({ variable: 'i' });
    const unrolled = at(m, 'for (uint k', 'for_statement');
    expect(m.isDeviceLoop(unrolled)).toBe(false);
    expect(m.isRecordTimeLoop(unrolled)).toBe(true);
    expect(m.isDeviceLoop(at(m, 'while (v > 1.f)', 'while_statement'))).toBe(true);
  });
  it('classifies lane dependence', () => {
    const cond = (needle: string) => m.conditionOf(at(m, needle, 'if_statement'));
    expect(m.laneDependent(cond('if (item < count)'))).toBe(false);
    expect(m.laneDependent(cond('if (tid < 64u)'))).toBe(true);
    const warpIdx = cond('if (tid / warp_lane_count() == 0u)');
    expect(m.laneDependent(warpIdx)).toBe(true);
    expect(m.warpDivergent(warpIdx)).toBe(false);
    expect(m.laneDependent(at(m, 'warp_active_sum(v)', 'call_expression'))).toBe(false);
    expect(m.laneDependent(at(m, 'in.read(dispatch_x())', 'call_expression'))).toBe(true);
  });
  it('marks host functions that emit DSL as generators', () => {
    expect(m.generatorOf(at(m, 'sync_block()', 'expression_statement'))).not.toBeNull();
    expect(m.inDeviceCode(at(m, 's[thread_x()] +=', 'expression_statement'))).toBe(true);
    expect(m.generatorOf(at(m, 'std::cout', 'expression_statement'))).toBeNull();
  });
  it('reads stream and command-list submissions and dispatches', () => {
    expect(m.submissions.map((s) => [s.targetName, s.targetKind, s.operands.length, s.synchronizes])).toEqual([
      ['stream', 'stream', 3, true],
      ['cl', 'cmdlist', 1, false],
      ['stream', 'stream', 1, false],
    ]);
    expect(m.dispatches.length).toBe(2);
    expect(m.dispatches.every((d) => d.kernel?.name === 'reduce' && d.shaderName === 'shader')).toBe(true);
    expect(m.hostLoopOf(m.submissions[0].stmt)?.type).toBe('for_statement');
    expect(m.declOf('host', m.submissions[0].stmt)?.reference).toBe(true);
  });
  it('finds kernels passed to device.compile and braced initializers', () => {
    const m2 = model(`void f(Device &device) {
  auto s1 = device.compile<2>([&](ImageFloat img) noexcept { set_block_size(16u, 16u); img.write(dispatch_id().xy(), make_float4(1.f)); });
  Kernel3D k3{[&]() noexcept { set_block_size(8u, 8u, 8u); }};
}`);
    expect(m2.bodies.map((b) => [b.kind, b.dims, b.blockSize?.product])).toEqual([['compile', 2, 256], ['Kernel3D', 3, 512]]);
  });
});

import { describe, expect, it } from 'vitest';
import { luisaModel, type LuisaModel } from '../../src/analysis/luisa.js';
import { buildSources } from '../../src/sources/build.js';
import type { SyntaxNode } from '../../src/core/types.js';
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
  it('makes device-loop variables lane dependent through their start or step', () => {
    const m4 = model(`Kernel1D k = [&](BufferFloat b, UInt n) noexcept {
  Shared<float> s{256};
  $for (i, thread_x(), n, 256u) { s.atomic(i % 4u).fetch_add(1.f); };
  $for (j, 0u, n) { s.atomic(j).fetch_add(1.f); };
  for (auto r : dynamic_range(dispatch_x(), n, 4096u)) { s.atomic(r).fetch_add(1.f); };
  for (auto q : dynamic_range(n)) { s.atomic(q).fetch_add(1.f); };
};`);
    const idx = (needle: string) => at(m4, needle, 'call_expression').childForFieldName('arguments')!.namedChildren[0];
    expect(m4.laneDependent(idx('s.atomic(i % 4u)'))).toBe(true);
    expect(m4.laneDependent(idx('s.atomic(j)'))).toBe(false);
    expect(m4.laneDependent(idx('s.atomic(r)'))).toBe(true);
    expect(m4.laneDependent(idx('s.atomic(q)'))).toBe(false);
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
  auto s2 = compiler.compile<1>(slot, [&](BufferFloat b) noexcept { set_block_size(64u); b.write(dispatch_x(), 1.f); });
}`);
    expect(m2.bodies.map((b) => [b.kind, b.dims, b.blockSize?.product])).toEqual([['compile', 2, 256], ['Kernel3D', 3, 512], ['compile', 1, 64]]);
  });
  it('links a dispatch to the shader and kernel declared in its own scope when names repeat', () => {
    const m5 = model(`void first(Device &device, Stream &stream) {
  constexpr auto block_size = 256u;
  Kernel1D kernel = [&](BufferFloat b) noexcept { set_block_size(block_size, 1u, 1u); b.write(dispatch_x(), 1.f); };
  auto shader = device.compile(kernel);
  stream << shader(buf).dispatch(4u);
}
void second(Device &device, Stream &stream) {
  constexpr auto block_size = 64u;
  Kernel1D kernel = [&](BufferFloat b) noexcept { set_block_size(block_size, 1u, 1u); b.write(dispatch_x(), 2.f); };
  auto shader = device.compile(kernel);
  stream << shader(buf).dispatch(8u);
}`);
    expect(m5.dispatches.map((d) => d.kernel?.blockSize?.product)).toEqual([256, 64]);
  });
  it('reads the vector overload of set_block_size and digit-separated constants', () => {
    const m3 = model(`void f(Device &device, Stream &stream) {
  constexpr uint n = 40'000'000u;
  Kernel2D k = [&](ImageFloat img) noexcept { set_block_size(make_uint3(8u, 32u, 1u)); };
  Kernel1D j = [&](BufferFloat b) noexcept { set_block_size(128u); set_block_size(n / 1000000u); };
  stream << fill(buf).dispatch(n);
}`);
    expect(m3.bodies.map((b) => b.blockSize?.dims)).toEqual([[8, 32, 1], [128, 1, 1]]);
    expect(m3.constValue(m3.dispatches[0].args[0])).toBe(40000000);
    const second = m3.callsNamed('set_block_size')[2].node;
    expect(m3.blockSizeAt(second)?.dims).toEqual([40, 1, 1]);
    expect(m3.blockSizeAt(m3.dispatches[0].node)).toBeNull();
  });
  it('reads pinned warp sizes through casts, and gives fix lines back with DSL macros restored', () => {
    const m4 = model(`static constexpr uint kWarp = 32u;
Kernel1D k = [&](BufferFloat b, UInt n) noexcept {
  set_warp_size(static_cast<uint8_t>(kWarp));
  $if (warp_lane_id() == 0u) { b.write(0u, 1.f); };
  $for (i, 0u, n) { b.write(i, warp_read_lane(b.read(i), i + 1u)); };
  Shared<float> s{32u};
};`);
    expect(m4.bodies[0].warpSize?.value).toBe(32);
    expect(m4.lineText(at(m4, 'warp_lane_id() == 0u'))).toBe('  $if (warp_lane_id() == 0u) { b.write(0u, 1.f); };');
    expect(m4.lineText(at(m4, 'warp_read_lane', 'call_expression'))).toBe('  $for (i, 0u, n) { b.write(i, warp_read_lane(b.read(i), i + 1u)); };');
    expect(m4.lineText(at(m4, 's{32u}'))).toBeNull();
  });
});

describe('luisa model: shared-array index keys', () => {
  it('compares Shared<T> indices through aliases and thread_id().x, but not through reassigned locals', () => {
    const m = model(`Kernel1D k = [&](BufferFloat in) noexcept {
  set_block_size(256u, 1u, 1u);
  Shared<float> s{256u};
  auto tid = thread_x();
  UInt half = 128u;
  s[tid] = in.read(dispatch_x());
  s[thread_id().x] = 1.f;
  s[thread_x() * 2u + 1] = 2.f;
  s[tid * 2 + 1u] = 3.f;
  s[half] = 4.f;
  half /= 2u;
};`);
    const keys = m.sharedAccesses(m.shared[0]).map((a) => m.indexKey(a.index));
    expect(keys).toEqual(['thread_x()', 'thread_x()', 'thread_x()*2+1', 'thread_x()*2+1', 'half']);
  });
});

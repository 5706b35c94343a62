/**
 * LuisaCompute C++ generator: Kernel1D/2D/3D lambdas and Callables written in the DSL ($if / $else /
 * $elif / $for / $while / $loop / $switch, Shared<T>, sync_block, warp_* intrinsics, buffer
 * read/write/atomics) and host code (Context, Device, Stream, CommandList, device.compile).
 * Some host loops synchronize or download every iteration, as real code sometimes does.
 */
import { Code, comment, LICENSES, Names, NOUNS, Rng } from './common.js';

interface LCtx {
  floats: string[];
  uints: string[];
  buffers: string[];
  tmp: number;
  acc: string;
}

function lf(rng: Rng): string {
  return rng.pick(['0.f', '1.f', '0.5f', '2.f', '1e-4f', '0.25f', '3.1415926f', '-1.f', '16.f']);
}

function fExpr(rng: Rng, ctx: LCtx, depth = 0): string {
  const leaf = () => (ctx.floats.length && rng.chance(0.8) ? rng.pick(ctx.floats) : lf(rng));
  if (depth > 2) return leaf();
  switch (rng.int(0, 8)) {
    case 0:
    case 1:
      return leaf();
    case 2:
    case 3:
      return `${fExpr(rng, ctx, depth + 1)} ${rng.pick(['+', '-', '*', '*'])} ${fExpr(rng, ctx, depth + 1)}`;
    case 4:
      return `${rng.pick(['sqrt', 'abs', 'exp', 'sin', 'cos', 'fract', 'saturate', 'log'])}(${fExpr(rng, ctx, depth + 1)})`;
    case 5:
      return `${rng.pick(['max', 'min', 'pow'])}(${leaf()}, ${fExpr(rng, ctx, depth + 1)})`;
    case 6:
      return `lerp(${leaf()}, ${leaf()}, ${fExpr(rng, ctx, depth + 1)})`;
    case 7:
      return `clamp(${fExpr(rng, ctx, depth + 1)}, 0.f, 1.f)`;
    default:
      return `ite(${leaf()} > ${leaf()}, ${leaf()}, ${leaf()})`;
  }
}

function uCond(rng: Rng, ctx: LCtx): string {
  const u = ctx.uints.length ? rng.pick(ctx.uints) : 'i';
  return rng.pick([`${u} < n`, `${u} % 2u == 0u`, `${u} > 0u`, `${u} != ${rng.pick(['0u', '1u', 'n - 1u'])}`, `(${u} & 31u) == 0u`]);
}

function fCond(rng: Rng, ctx: LCtx): string {
  return `${fExpr(rng, ctx, 2)} ${rng.pick(['>', '<', '>=', '<='])} ${lf(rng)}`;
}

/** DSL statements with random nesting of the `$` control-flow macros. */
function dslStmts(rng: Rng, c: Code, ctx: LCtx, depth: number, count: number, inLoop: boolean): void {
  for (let s = 0; s < count; s++) {
    const k = rng.weighted<string>([
      [4, 'decl'], [3, 'acc'], [1, 'comment'], [ctx.buffers.length ? 2 : 0, 'read'], [ctx.buffers.length ? 1 : 0, 'write'],
      [depth < 3 ? 2.2 : 0, 'if'], [depth < 3 ? 1.2 : 0, 'ifelse'], [depth < 2 ? 0.5 : 0, 'elif'], [depth < 2 ? 1.3 : 0, 'for'],
      [depth < 2 ? 0.4 : 0, 'while'], [depth < 2 ? 0.2 : 0, 'switch'], [1, 'warp'], [inLoop ? 0.3 : 0, 'break'],
      [ctx.buffers.length ? 0.6 : 0, 'atomic'],
    ]);
    switch (k) {
      case 'decl': {
        const v = `v${ctx.tmp++}`;
        c.line(`${rng.pick(['Float', 'auto', 'Var<float>', 'Float'])} ${v} = ${fExpr(rng, ctx)};`);
        ctx.floats.push(v);
        break;
      }
      case 'acc':
        c.line(`${ctx.acc} ${rng.pick(['+=', '+=', '*=', '-='])} ${fExpr(rng, ctx)};`);
        break;
      case 'comment':
        c.line(`// ${comment(rng)}`);
        break;
      case 'read': {
        const v = `v${ctx.tmp++}`;
        const u = ctx.uints.length ? rng.pick(ctx.uints) : 'i';
        c.line(`${rng.pick(['Float', 'auto'])} ${v} = ${rng.pick(ctx.buffers)}.read(${rng.pick([u, `(${u} + 1u) % n`, `min(${u} + 1u, n - 1u)`])});`);
        ctx.floats.push(v);
        break;
      }
      case 'write': {
        const u = ctx.uints.length ? rng.pick(ctx.uints) : 'i';
        c.line(`${rng.pick(ctx.buffers)}.write(${u}, ${fExpr(rng, ctx)});`);
        break;
      }
      case 'atomic': {
        c.line(`${rng.pick(ctx.buffers)}.atomic(${rng.pick(['0u', 'i % 64u', 'bin'])}).fetch_add(${fExpr(rng, ctx, 2)});`);
        break;
      }
      case 'warp': {
        const v = `w${ctx.tmp++}`;
        const a = ctx.floats.length ? rng.pick(ctx.floats) : ctx.acc;
        c.line(`${rng.pick(['Float', 'auto'])} ${v} = ${rng.pick([`warp_active_sum(${a})`, `warp_active_max(${a})`, `warp_prefix_sum(${a})`, `warp_read_lane(${a}, warp_lane_id() ^ 1u)`, `warp_read_first_active_lane(${a})`, `warp_active_min(${a})`])};`);
        ctx.floats.push(v);
        break;
      }
      case 'break':
        c.line(rng.chance(0.5) ? `$if (${fCond(rng, ctx)}) { $break; };` : `$if (${fCond(rng, ctx)}) { $continue; };`);
        break;
      case 'if': {
        c.open(`$if (${rng.chance(0.5) ? uCond(rng, ctx) : fCond(rng, ctx)})`);
        const saved = ctx.floats.length;
        dslStmts(rng, c, ctx, depth + 1, rng.int(1, 3), inLoop);
        ctx.floats.length = saved;
        c.close('};');
        break;
      }
      case 'ifelse': {
        c.open(`$if (${fCond(rng, ctx)})`);
        const saved = ctx.floats.length;
        dslStmts(rng, c, ctx, depth + 1, rng.int(1, 3), inLoop);
        ctx.floats.length = saved;
        c.mid('} $else {');
        dslStmts(rng, c, ctx, depth + 1, rng.int(1, 2), inLoop);
        ctx.floats.length = saved;
        c.close('};');
        break;
      }
      case 'elif': {
        c.open(`$if (${fCond(rng, ctx)})`);
        const saved = ctx.floats.length;
        dslStmts(rng, c, ctx, depth + 1, rng.int(1, 2), inLoop);
        ctx.floats.length = saved;
        c.mid(`} $elif (${fCond(rng, ctx)}) {`);
        dslStmts(rng, c, ctx, depth + 1, rng.int(1, 2), inLoop);
        ctx.floats.length = saved;
        c.mid('} $else {');
        dslStmts(rng, c, ctx, depth + 1, 1, inLoop);
        ctx.floats.length = saved;
        c.close('};');
        break;
      }
      case 'for': {
        const iv = rng.pick(['j', 'k', 's', 't']) + ctx.tmp++;
        const form = rng.int(0, 2);
        c.open(form === 0 ? `$for (${iv}, 0u, ${rng.pick(['4u', '8u', '16u', '32u', 'n'])})` : form === 1 ? `$for (${iv}, ${rng.pick(['n', '16u', 'count'])})` : `$for (${iv}, 0u, n, ${rng.pick(['2u', '4u', 'block_size'])})`);
        const saved = [ctx.floats.length, ctx.uints.length];
        ctx.uints.push(iv);
        ctx.floats.push(`cast<float>(${iv})`);
        dslStmts(rng, c, ctx, depth + 1, rng.int(1, 4), true);
        ctx.floats.length = saved[0];
        ctx.uints.length = saved[1];
        c.close('};');
        break;
      }
      case 'while': {
        const v = `it${ctx.tmp++}`;
        c.line(`UInt ${v} = 0u;`);
        c.open(`$while (${v} < ${rng.pick(['8u', '16u', 'max_iterations'])})`);
        const saved = ctx.floats.length;
        dslStmts(rng, c, ctx, depth + 1, rng.int(1, 3), true);
        ctx.floats.length = saved;
        c.line(`${v} += 1u;`);
        c.close('};');
        break;
      }
      case 'switch': {
        const u = ctx.uints.length ? rng.pick(ctx.uints) : 'i';
        c.open(`$switch (${u} % 3u)`);
        for (const cs of ['0u', '1u']) {
          c.open(`$case (${cs})`);
          c.line(`${ctx.acc} += ${fExpr(rng, ctx, 2)};`);
          c.close('};');
        }
        c.open('$default');
        c.line(`${ctx.acc} = ${lf(rng)};`);
        c.close('};');
        c.close('};');
        break;
      }
    }
  }
}

function kernel(rng: Rng, names: Names, c: Code): string {
  const name = names.snake();
  const kind = rng.weighted<string>([[4, 'k1'], [2, 'k2'], [1, 'k3'], [2, 'reduce'], [1.5, 'warp']]);
  const block = rng.pick([64, 128, 256, 256, 512]);
  const ctx: LCtx = { floats: [], uints: ['i'], buffers: [], tmp: 0, acc: 'acc' };
  if (rng.chance(0.4)) c.line(`// ${comment(rng)}`);
  if (kind === 'k1' || kind === 'reduce' || kind === 'warp') {
    const bufs = rng.sample(['src', 'dst', 'weights', 'values', 'out', 'accum'], rng.int(2, 3));
    const btype = rng.pick(['BufferVar<float>', 'BufferFloat', 'Var<Buffer<float>>', 'BufferFloat']);
    const param = rng.pick(['UInt n', 'Var<uint> n', 'UInt n']);
    c.open(`Kernel1D ${name} = [&](${bufs.map((b) => `${btype} ${b}`).join(', ')}, ${param}) noexcept`);
    ctx.buffers = bufs;
    if (rng.chance(0.7)) c.line(`set_block_size(${block}u, 1u, 1u);`);
    c.line(`${rng.pick(['auto', 'UInt'])} i = ${rng.pick(['dispatch_x()', 'dispatch_id().x'])};`);
    c.line('Float acc = 0.f;');
    if (kind === 'reduce') {
      const sm = rng.pick(['smem', 's_partial', 'tile', 'partial']);
      c.line(`Shared<float> ${sm}{${block}};`);
      c.line('auto tid = thread_x();');
      c.line(`${sm}[tid] = ite(i < n, ${bufs[0]}.read(i), 0.f);`);
      c.line('sync_block();');
      c.line(`for (auto stride = ${block / 2}u; stride > 0u; stride >>= 1u) {`);
      c.line(`    $if (tid < stride) { ${sm}[tid] += ${sm}[tid + stride]; };`);
      c.line('    sync_block();');
      c.line('}');
      c.line(`$if (tid == 0u) { ${bufs[1]}.write(block_id().x, ${sm}[0]); };`);
      ctx.uints.push('tid');
    } else if (kind === 'warp') {
      c.open('$if (i < n)');
      c.line(`acc = ${bufs[0]}.read(i);`);
      c.close('};');
      c.line('Float total = warp_active_sum(acc);');
      c.open('$if (warp_is_first_active_lane())');
      c.line(`${bufs[1]}.atomic(0u).fetch_add(total);`);
      c.close('};');
      ctx.floats.push('total');
    } else {
      c.open('$if (i < n)');
      ctx.floats.push(`${bufs[0]}.read(i)`);
      dslStmts(rng, c, ctx, 1, rng.int(3, 9), false);
      c.line(`${bufs[bufs.length - 1]}.write(i, acc);`);
      c.mid('} $else {');
      c.line('acc = 0.f;');
      c.close('};');
    }
    if (kind !== 'k1') dslStmts(rng, c, ctx, 1, rng.int(1, 5), false);
    c.close('};');
  } else if (kind === 'k2') {
    c.open(`Kernel2D ${name} = [&](ImageFloat image, ${rng.pick(['Float time', 'Float scale', 'BufferFloat params'])}) noexcept`);
    c.line('set_block_size(16u, 16u, 1u);');
    c.line('UInt2 coord = dispatch_id().xy();');
    c.line('Float2 uv = make_float2(coord) / make_float2(dispatch_size().xy());');
    c.line('Float3 color = make_float3(uv, 0.5f);');
    c.line('Float acc = 0.f;');
    ctx.floats.push('uv.x', 'uv.y', 'color.x');
    ctx.uints.push('coord.x', 'coord.y');
    dslStmts(rng, c, ctx, 1, rng.int(3, 8), false);
    c.line('image->write(coord, make_float4(color * acc, 1.f));');
    c.close('};');
  } else {
    c.open(`Kernel3D ${name} = [&](BufferFloat density, UInt3 size) noexcept`);
    c.line('set_block_size(8u, 8u, 4u);');
    c.line('UInt3 p = dispatch_id();');
    c.line('UInt i = p.x + size.x * (p.y + size.y * p.z);');
    c.line('UInt n = size.x * size.y * size.z;');
    c.line('Float acc = density.read(i);');
    ctx.buffers = ['density'];
    dslStmts(rng, c, ctx, 1, rng.int(3, 8), false);
    c.line('density.write(i, acc);');
    c.close('};');
  }
  return name;
}

function callable(rng: Rng, names: Names, c: Code): void {
  const name = names.snake();
  const form = rng.int(0, 2);
  if (form === 0) {
    c.open(`Callable ${name} = [](Float a, Float b, Float t) noexcept`);
    const ctx: LCtx = { floats: ['a', 'b', 't'], uints: [], buffers: [], tmp: 0, acc: 'r' };
    c.line('Float r = lerp(a, b, t);');
    dslStmts(rng, c, ctx, 1, rng.int(1, 4), false);
    c.line('return r;');
    c.close('};');
  } else if (form === 1) {
    c.open(`Callable ${name} = [](UInt x) noexcept`);
    c.line('x = (x ^ 61u) ^ (x >> 16u);');
    c.line('x *= 9u;');
    c.line('x = x ^ (x >> 4u);');
    c.line('x *= 0x27d4eb2du;');
    c.line('x = x ^ (x >> 15u);');
    c.line('return x;');
    c.close('};');
  } else {
    c.open(`Callable ${name} = [](Float2 p, Float2 a, Float2 b) noexcept`);
    c.line('Float2 pa = p - a, ba = b - a;');
    c.line('Float h = clamp(dot(pa, ba) / dot(ba, ba), 0.f, 1.f);');
    c.line('return length(pa - ba * h);');
    c.close('};');
  }
}

function hostFunction(rng: Rng, names: Names, c: Code, isMain: boolean): void {
  const fn = names.snake();
  let hasFrames = false;
  if (isMain) {
    c.open('int main(int argc, char *argv[])');
    c.line('log_level_info();');
    c.line('Context context{argv[0]};');
    c.open('if (argc <= 1)');
    c.line('LUISA_INFO("Usage: {} <backend>. <backend>: cuda, dx, cpu, metal", argv[0]);');
    c.line('exit(1);');
    c.close();
    c.line('Device device = context.create_device(argv[1]);');
  } else {
    hasFrames = rng.chance(0.5);
    c.open(`void ${fn}(Device &device, Stream &stream, luisa::span<float> host_data${hasFrames ? ', uint frames' : ''})`);
  }
  const frames = hasFrames ? 'frames' : `${rng.pick([8, 16, 64, 100])}u`;
  if (isMain) c.line(`Stream stream = device.create_stream(${rng.pick(['', 'StreamTag::COMPUTE', 'StreamTag::GRAPHICS'])});`);
  c.line(`${rng.pick(['auto', 'uint', 'static constexpr auto'])} n = ${rng.pick(['1024u * 1024u', '1u << 20u', '65536u', 'host_data.size()'].filter((x) => isMain ? !x.includes('host_data') : true))};`);
  c.line('Buffer<float> src = device.create_buffer<float>(n);');
  c.line('Buffer<float> dst = device.create_buffer<float>(n);');
  if (rng.chance(0.4)) c.line(`Image<float> image = device.create_image<float>(PixelStorage::BYTE4, ${rng.pick([512, 1024, 1920])}u, ${rng.pick([512, 768, 1080])}u);`);
  if (isMain) c.line('luisa::vector<float> host_data(n, 1.f);');
  c.line('luisa::vector<float> result(n);');
  const kernels: string[] = [];
  for (let i = 0, m = rng.int(1, 3); i < m; i++) {
    c.line();
    if (rng.chance(0.4)) {
      callable(rng, names, c);
      c.line();
    }
    kernels.push(kernel(rng, names, c));
  }
  c.line();
  const shaders = kernels.map((k) => {
    const s = `${k}_shader`;
    c.line(`auto ${s} = device.compile(${k}${rng.chance(0.3) ? `, ShaderOption{.name = "${k}"}` : ''});`);
    return s;
  });
  const form = rng.weighted<string>([[3, 'cmdlist'], [2, 'loopSync'], [1.5, 'loopDownload'], [1.5, 'chain'], [1, 'batchedLoop']]);
  const call = (s: string) => `${s}(src, dst, n).dispatch(n)`;
  if (form === 'cmdlist') {
    c.line('CommandList cmdlist = CommandList::create();');
    c.line('cmdlist << src.copy_from(host_data.data());');
    for (const s of shaders) c.line(`cmdlist << ${call(s)};`);
    c.line('cmdlist << dst.copy_to(result.data());');
    c.line('stream << cmdlist.commit() << synchronize();');
  } else if (form === 'loopSync') {
    c.line('stream << src.copy_from(host_data.data());');
    c.open(`for (auto frame = 0u; frame < ${frames}; frame++)`);
    for (const s of shaders) c.line(`stream << ${call(s)} << synchronize();`);
    c.close();
    c.line('stream << dst.copy_to(result.data()) << synchronize();');
  } else if (form === 'loopDownload') {
    c.open(`for (auto frame = 0u; frame < ${frames}; frame++)`);
    c.line('stream << src.copy_from(host_data.data())');
    for (const s of shaders) c.line(`       << ${call(s)}`);
    c.line('       << dst.copy_to(result.data())');
    c.line('       << synchronize();');
    c.line(`LUISA_INFO("frame {}: {}", frame, result[0]);`);
    c.close();
  } else if (form === 'chain') {
    c.line('stream << src.copy_from(host_data.data())');
    for (const s of shaders) c.line(`       << ${call(s)}`);
    c.line('       << dst.copy_to(result.data())');
    c.line('       << synchronize();');
  } else {
    c.line('CommandList cmdlist = CommandList::create();');
    c.open(`for (auto frame = 0u; frame < ${frames}; frame++)`);
    for (const s of shaders) c.line(`cmdlist << ${call(s)};`);
    c.close();
    c.line('stream << cmdlist.commit();');
    c.line('stream << dst.copy_to(result.data()) << synchronize();');
  }
  if (rng.chance(0.4)) c.line('Clock clock;');
  if (rng.chance(0.5)) c.line(`LUISA_INFO("${fn}: {} elements, first = {}", n, result[0]);`);
  if (isMain) c.line('return 0;');
  c.close();
}

function classHeader(rng: Rng, names: Names, c: Code): void {
  const cls = names.pascal(rng.pick(['Pass', 'Integrator', 'Reducer', 'Filter', 'Solver']));
  c.open(`class ${cls}`);
  c.mid('private:');
  c.line('Device &_device;');
  const members = [0, 1].map(() => `_${names.snake()}`);
  for (const m of members) c.line(`Shader1D<Buffer<float>, Buffer<float>, uint> ${m};`);
  c.line('Buffer<float> _scratch;');
  c.line();
  c.mid('public:');
  c.line(`explicit ${cls}(Device &device, uint capacity) noexcept`);
  c.line('    : _device{device}, _scratch{device.create_buffer<float>(capacity)} {}');
  c.line();
  c.open('void compile() noexcept');
  for (const m of members) {
    const k = kernel(rng, names, c);
    c.line(`${m} = _device.compile(${k});`);
  }
  c.close();
  c.line();
  c.open('void operator()(CommandList &cmdlist, BufferView<float> data, uint n) noexcept');
  for (const m of members) c.line(`cmdlist << ${m}(data, _scratch.view(0u, n), n).dispatch(n);`);
  c.close();
  c.close('};');
}

/** A whole LuisaCompute `.cpp` or `.h` file of about `target` bytes. */
export function luisaFile(rng: Rng, target: number, header: boolean): string {
  const names = new Names(rng);
  const out = new Code(4);
  out.line(`// ${rng.pick(LICENSES)}`);
  if (header) out.line('#pragma once');
  out.line();
  out.line('#include <luisa/luisa-compute.h>');
  if (rng.chance(0.6)) out.line('#include <luisa/dsl/sugar.h>');
  if (rng.chance(0.3)) out.line('#include <luisa/dsl/syntax.h>');
  out.line('#include <iostream>');
  if (rng.chance(0.5)) out.line('#include <random>');
  out.line();
  out.line('using namespace luisa;');
  out.line('using namespace luisa::compute;');
  out.line();
  if (rng.chance(0.5)) {
    const s = names.pascal();
    out.open(`struct ${s}`);
    for (const f of rng.sample(['float3 position', 'float3 normal', 'float2 uv', 'float weight', 'uint id', 'float4 color'], rng.int(2, 4))) out.line(`${f};`);
    out.close('};');
    out.line();
  }
  const ns = rng.chance(0.5) ? rng.pick(['render', 'sim', 'spatial', 'compute']) : null;
  if (ns) {
    out.line(`namespace ${rng.pick(['app', 'luisa_app', 'demo'])}::${ns} {`);
    out.line();
  }
  let guard = 0;
  let hasMain = false;
  while (out.length < target && guard++ < 300) {
    const what = rng.weighted<string>([[header ? 3 : 1, 'class'], [header ? 0.5 : 4, 'fn'], [0.5, 'comment']]);
    if (what === 'class') classHeader(rng, names, out);
    else if (what === 'fn') hostFunction(rng, names, out, false);
    else {
      out.line(`// ${'='.repeat(rng.int(20, 70))}`);
      out.line(`// ${rng.pick(NOUNS)}: ${comment(rng)}`);
    }
    out.line();
  }
  if (ns) out.line(`}  // namespace`);
  if (!header && !ns && rng.chance(0.6) && !hasMain) {
    out.line();
    hostFunction(rng, names, out, true);
    hasMain = true;
  }
  return out.toString();
}

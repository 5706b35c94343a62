import Parser from 'tree-sitter';
import Cpp from 'tree-sitter-cpp';
import { describe, expect, it } from 'vitest';
import { dslKindAt, normalizeLuisa } from '../../src/sources/luisa.js';

const parser = new Parser();
parser.setLanguage(Cpp as Parser.Language);

const STATEMENTS = ['if_statement', 'else_clause', 'while_statement', 'for_statement', 'for_range_loop', 'switch_statement'];

function lineBreaks(s: string): number[] {
  return [...s.matchAll(/[\r\n]/g)].map((m) => m.index);
}

function problems(node: Parser.SyntaxNode, out: string[] = []): string[] {
  if (node.type === 'ERROR' || node.isMissing) out.push(`${node.type}@${node.startPosition.row}:${node.startPosition.column}`);
  for (const c of node.children) problems(c, out);
  return out;
}

/** Normalizes, checks the invariants every test shares, and lists control flow as `type:kind`. */
function normalize(src: string) {
  const { text, dsl } = normalizeLuisa(src);
  expect(text.length).toBe(src.length);
  expect(lineBreaks(text)).toEqual(lineBreaks(src));
  const macro = new Set<number>();
  for (const m of src.matchAll(/\$\w+/g)) for (let k = m.index; k < m.index + m[0].length; k++) macro.add(k);
  for (let i = 0; i < src.length; i++) {
    if (text[i] !== src[i]) expect(macro.has(i) || /[ \t]/.test(src[i]), `index ${i}`).toBe(true);
  }
  const tree = parser.parse(text);
  expect(problems(tree.rootNode)).toEqual([]);
  expect(tree.rootNode.hasError).toBe(false);
  const nodes = tree.rootNode.descendantsOfType(STATEMENTS);
  const keywords = new Set(nodes.map((n) => n.firstChild!.startIndex));
  for (const key of dsl.keys()) expect(keywords.has(key), `dsl key ${key} is a statement keyword`).toBe(true);
  const shape = nodes.map((n) => `${n.type}:${dslKindAt(dsl, n) ?? 'native'}`);
  return { text, dsl, tree, nodes, shape };
}

describe('normalizeLuisa', () => {
  it('normalizes a 1D kernel using every common control-flow macro', () => {
    const src = `#include <luisa/luisa-compute.h>
using namespace luisa::compute;

void build(Device &device, Stream &stream, uint n) {
    Kernel1D k = [&](BufferVar<float> buf, UInt count) noexcept {
        set_block_size(256u, 1u, 1u);
        auto i = dispatch_x();
        Shared<float> s{256};
        $if (i < count) {
            s[thread_x()] = buf.read(i);
        } $elif (i == count) {
            s[thread_x()] = 1.f;
        } $else {
            s[thread_x()] = 0.f;
        };
        sync_block();
        Float acc;
        $for (j, 0u, 16u) {
            acc += s[(thread_x() + j) % 256u];
        };
        UInt x = i;
        $while (x > 0u) {
            x >>= 1u;
        };
        $loop {
            $if (acc > 100.f) { $break; };
            acc *= 2.f;
        };
        buf.write(i, acc);
    };
    auto shader = device.compile(k);
    stream << shader(buffer, n).dispatch(n) << synchronize();
}
`;
    const { shape, text } = normalize(src);
    expect(shape).toEqual([
      'if_statement:dsl-if',
      'else_clause:native',
      'if_statement:dsl-elif',
      'else_clause:dsl-else',
      'if_statement:dsl-for',
      'while_statement:dsl-while',
      'for_statement:dsl-loop',
      'if_statement:dsl-if',
    ]);
    expect(text).toContain('        }else if(i == count) {');
    expect(text).toContain('        }  else {');
    expect(text).toContain('\n      for(;;) {\n');
    expect(text).toContain('         if  (j, 0u, 16u) {');
  });

  it('keeps the warp matmul kernel from the guide parseable, with a native range loop', () => {
    const src = `auto warp_size = device.compute_warp_size();
Kernel2D mat_mul = [&](BufferFloat lhs, BufferFloat rhs, BufferFloat result, UInt lhs_row_size) {
    set_block_size(128, 1, 1);
    set_warp_size(warp_size);
    UInt lhs_y = dispatch_id().x / warp_size;
    UInt rhs_x = dispatch_id().y;
    UInt warp_lane = warp_lane_id();
    UInt tile_count = (lhs_row_size + warp_size - 1) / warp_size;
    Float acc = 0.f;
    for (auto t : dynamic_range(tile_count)) {
        UInt lhs_x = t * warp_size + warp_lane;
        Float local_v;
        $if (lhs_x < lhs_row_size) {
            local_v = lhs.read(lhs_y * lhs_row_size + lhs_x)
                    * rhs.read(rhs_x * lhs_row_size + lhs_x);
        } $else {
            local_v = 0.f;
        };
        acc += warp_active_sum(local_v);   // all-reduce sum within warp
    }
    $if (warp_lane == 0) {
        result.write((dispatch_size().x / warp_size) * lhs_y + rhs_x, acc);
    };
};
`;
    const { shape } = normalize(src);
    expect(shape).toEqual(['for_range_loop:native', 'if_statement:dsl-if', 'else_clause:dsl-else', 'if_statement:dsl-if']);
  });

  it('blanks an export macro between the class key and the class name', () => {
    const src = `class LC_RUNTIME_API Sorter : public Module {
public:
    void sort(Device &device) { Kernel1D k = [](BufferUInt b) noexcept { $if (dispatch_x() == 0u) { b.write(0u, 1u); }; }; }
};
struct LCGS_API Item { int x; };
`;
    const { text } = normalizeLuisa(src);
    expect(text.length).toBe(src.length);
    expect(text).toContain('class                Sorter : public Module {');
    expect(text).toContain('struct          Item { int x; };');
    expect(problems(parser.parse(text).rootNode)).toEqual([]);
    // Not a class head: left alone.
    expect(normalizeLuisa('class Sorter : public BASE_API {};').text).toBe('class Sorter : public BASE_API {};');
  });

  it('handles a Callable with $if(x) and no blanks, and $return', () => {
    const src = `Callable<float(float)> safe_rcp = [](Float x) noexcept {
    $if(abs(x)<1e-6f){ $return(0.f); };
    $return(1.f / x);
};
Callable<float(float, float)> soft = [](Float a, Float b) noexcept { return max(a, b) + log1p(exp(-abs(a - b))); };
`;
    const { shape, text } = normalize(src);
    expect(shape).toEqual(['if_statement:dsl-if']);
    expect(text).toContain('     if(abs(x)<1e-6f){ $return(0.f); };');
  });

  it('nests else-if chains written as `$else $if` and `$elif` right after `}`', () => {
    const src = `auto shader = device.compile<1>([&](BufferUInt keys, UInt n) noexcept {
    auto k = keys.read(dispatch_x());
    $if (k == 0u) { keys.write(dispatch_x(), 1u); } $else $if (k == 1u) { keys.write(dispatch_x(), 2u); } $else { keys.write(dispatch_x(), 3u); };
    $if(k > n) { k = n; }$elif(k < 4u) { k = 4u; };
});
`;
    const { shape, nodes, dsl, text } = normalize(src);
    expect(shape).toEqual([
      'if_statement:dsl-if',
      'else_clause:dsl-else',
      'if_statement:dsl-if',
      'else_clause:dsl-else',
      'if_statement:dsl-if',
      'if_statement:dsl-elif',
    ]);
    // `$else $if` nests the second if in the first one's else_clause.
    expect(nodes[2].parent!.type).toBe('else_clause');
    // `}$elif(` has no blanks for `else if`, so it becomes a sibling if, still tagged dsl-elif.
    expect(text).toContain('} if  (k < 4u)');
    expect([...dsl.values()].filter((k) => k === 'dsl-elif')).toHaveLength(1);
    expect(nodes[5].parent!.type).toBe('compound_statement');
  });

  it('puts `$elif` into the else_clause when it starts an indented line', () => {
    const src = `Kernel1D clamp_kernel = [&](BufferFloat v) noexcept {
    auto x = v.read(dispatch_x());
    $if (x < 0.f) {
        x = 0.f;
    }
    $elif (x > 1.f) {
        x = 1.f;
    };
    v.write(dispatch_x(), x);
};
`;
    const { shape, nodes, text } = normalize(src);
    expect(shape).toEqual(['if_statement:dsl-if', 'else_clause:native', 'if_statement:dsl-elif']);
    expect(nodes[2].parent!.type).toBe('else_clause');
    expect(text).toContain('\n  else if (x > 1.f) {');
  });

  it('rewrites $switch / $case / $default', () => {
    const src = `Kernel1D classify = [&](BufferUInt tags, BufferFloat out) noexcept {
    auto i = dispatch_x();
    auto t = tags.read(i);
    $switch (t) {
        $case (0u) { out.write(i, 0.f); };
        $case (1u) { out.write(i, 0.5f); };
        $default { out.write(i, 1.f); };
    };
};
`;
    const { shape, text } = normalize(src);
    expect(shape).toEqual(['switch_statement:dsl-switch', 'if_statement:dsl-case', 'if_statement:dsl-case', 'if_statement:dsl-default']);
    expect(text).toContain('     switch (t) {');
    expect(text).toContain('         if   (0u) {');
    expect(text).toContain('         if(1)   {');
  });

  it('tags nested $if inside nested $for loops', () => {
    const src = `Kernel2D blur = [&](ImageFloat src, ImageFloat dst, Int radius) noexcept {
    auto p = make_int2(dispatch_id().xy());
    Float4 sum;
    $for (dy, -radius, radius + 1) {
        $for (dx, -radius, radius + 1) {
            auto q = p + make_int2(dx, dy);
            $if (all(q >= 0 && q < make_int2(dispatch_size().xy()))) {
                sum += src.read(make_uint2(q));
            };
        };
    };
    dst.write(dispatch_id().xy(), sum / sum.w);
};
`;
    const { shape, nodes } = normalize(src);
    expect(shape).toEqual(['if_statement:dsl-for', 'if_statement:dsl-for', 'if_statement:dsl-if']);
    expect(nodes[2].parent!.parent!.startIndex).toBe(nodes[1].startIndex);
    expect(nodes[1].parent!.parent!.startIndex).toBe(nodes[0].startIndex);
  });

  it('leaves native C++ branches untagged, in host code and inside the kernel body', () => {
    const src = `template <bool kUseShared>
void record(Device &device, bool verbose) {
    if (verbose) { LUISA_INFO("recording"); }
    Kernel1D k = [&](BufferFloat b) noexcept {
        if constexpr (kUseShared) {
            Shared<float> s{64};
            s[thread_x()] = b.read(dispatch_x());
            sync_block();
        } else {
            $if (dispatch_x() % 2u == 0u) { b.write(dispatch_x(), 0.f); };
        }
        for (auto r = 0u; r < 4u; r++) { b.write(r, 1.f); }
    };
    auto s = device.compile(k);
}
`;
    const { shape } = normalize(src);
    expect(shape).toEqual(['if_statement:native', 'if_statement:native', 'else_clause:native', 'if_statement:dsl-if', 'for_statement:native']);
  });

  it('does not touch `$` inside string literals, raw strings, char literals or comments', () => {
    const src = `Kernel1D k = [&](BufferUInt b) noexcept {
    // $if (x) { } $else { } — a comment about the DSL
    /* $loop { $break; }; */
    auto label = "$if (i < n) $elif";
    auto raw = R"lc($while (x) { }; ")lc";
    auto sep = 1'000'000u;
    auto c = '$';
    $if (dispatch_x() < sep) { b.write(dispatch_x(), 1u); };  // $else
};
`;
    const { text, dsl, shape } = normalize(src);
    expect(shape).toEqual(['if_statement:dsl-if']);
    expect(dsl.size).toBe(1);
    const lines = text.split('\n');
    const orig = src.split('\n');
    for (const i of [1, 2, 3, 4, 5, 6]) expect(lines[i]).toBe(orig[i]);
    expect(lines[7]).toBe('     if (dispatch_x() < sep) { b.write(dispatch_x(), 1u); };  // $else');
  });

  it('rewrites $shared and blanks $outline / $autodiff blocks', () => {
    const src = `Kernel1D reduce = [&](BufferFloat in, BufferFloat out) noexcept {
    set_block_size(256u, 1u, 1u);
    $shared<float> tile{256};
    auto tid = thread_x();
    tile[tid] = in.read(dispatch_x());
    sync_block();
    UInt half = 128u;
    $while (half > 0u) {
        $if (tid < half) { tile[tid] += tile[tid + half]; };
        sync_block();
        half >>= 1u;
    };
    $outline {
        $if (tid == 0u) { out.write(block_id().x, tile[0]); };
    };
};
`;
    const { text, shape } = normalize(src);
    expect(text).toContain('     Shared<float> tile{256};');
    expect(text).toContain('\n             {\n');
    expect(shape).toEqual(['while_statement:dsl-while', 'if_statement:dsl-if', 'if_statement:dsl-if']);
  });

  it('falls back to `if(1)` for a `$loop{` with no blanks around it', () => {
    const src = `Kernel1D spin = [&](BufferUInt flag) noexcept {
$loop{ $if (flag.volatile_read(0u) != 0u) { $break; }; };
};
`;
    const { text, shape } = normalize(src);
    expect(text.split('\n')[1]).toBe('if(1){  if (flag.volatile_read(0u) != 0u) { $break; }; };');
    expect(shape).toEqual(['if_statement:dsl-loop', 'if_statement:dsl-if']);
  });

  it('keys by UTF-16 index after non-ASCII comments and keeps CRLF line breaks', () => {
    const src =
      '// 共享内存归约 — shared-memory reduction 😀\r\n' +
      'Kernel1D k = [&](BufferFloat b) noexcept {\r\n' +
      '    $if (thread_x() == 0u) { b.write(0u, 0.f); } $else { b.write(1u, 1.f); };\r\n' +
      '    $while (warp_active_any(b.read(0u) < 1.f)) { b.write(0u, 1.f); };\r\n' +
      '};\r\n';
    const { shape } = normalize(src);
    expect(shape).toEqual(['if_statement:dsl-if', 'else_clause:dsl-else', 'while_statement:dsl-while']);
  });

  it('normalizes the decoupled look-back polling loops', () => {
    const src = `Callable wait_for_valid = [&](BufferUInt tile_status, UInt predecessor_idx) noexcept {
    UInt status = tile_status.volatile_read(predecessor_idx);
    $while (warp_active_any(status == SCAN_TILE_INVALID)) {
        delay();
        status = tile_status.volatile_read(predecessor_idx);
    };
    $while (warp_active_all(status != SCAN_TILE_INCLUSIVE)) {
        predecessor_idx -= compute::Int(32);
        $if (predecessor_idx < 32u) { $break; };
    };
    $return(status);
};
`;
    const { shape } = normalize(src);
    expect(shape).toEqual(['while_statement:dsl-while', 'while_statement:dsl-while', 'if_statement:dsl-if']);
  });
});

describe('LuisaCompute findings point at the original text', () => {
  it('maps line and column of findings inside $if / $for / $elif back to the un-normalized file, in repo and diff-only mode', async () => {
    const { reviewText } = await import('../helpers.js');
    const { CHECKS } = await import('../../checks/registry.generated.js');
    const ids = ['luisa/sync-block-in-divergent-branch', 'luisa/shuffle-in-divergent-branch', 'luisa/nonexistent-warp-builtin'];
    const checks = CHECKS.filter((c) => ids.includes(c.id));
    const src = [
      '#include <luisa/luisa-compute.h>',
      'using namespace luisa::compute;',
      'void build(Device &device) {',
      '  Kernel1D k = [&](BufferFloat buf, UInt n) noexcept {',
      '    set_block_size(128u); set_warp_size(32u);',
      '    auto tid = thread_x();',
      '    $for (i, 0u, n) { $if (tid < 7u) {  sync_block(); }; };',
      '    $if (tid == 0u) { buf.write(0u, 1.f); } $elif (tid < 9u) { auto v = warp_read_lane(buf.read(tid), 3u); };',
      '    Float w = wave_active_sum(buf.read(tid));',
      '  };',
      '}',
      '',
    ].join('\n');
    const lines = src.split('\n');
    for (const repoMode of [true, false]) {
      const found = await reviewText('src/render/kernels.cpp', src, { checks, repoMode });
      const at = found.map((f) => [f.ruleId, f.line, lines[f.line - 1].slice(f.column - 1).match(/^\w+/)?.[0]]);
      expect(at).toEqual([
        ['luisa/sync-block-in-divergent-branch', 7, 'sync_block'],
        ['luisa/shuffle-in-divergent-branch', 8, 'warp_read_lane'],
        ['luisa/nonexistent-warp-builtin', 9, 'wave_active_sum'],
      ]);
    }
  });
});

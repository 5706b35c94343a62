import { luisaModel } from '../../../src/analysis/luisa.js';
import { quoteCode } from '../../../src/analysis/smem.js';
import { unparen } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

/** Tests of generator or lowering code (XIR passes, codegen, emitters): where 000 §10.9 asks for ragged extents. */
const LOWERING_PATH = /xir|codegen|lower|(^|[_/])pass(es)?[_/.]|emit|vectori[sz]|strength|unroll|schedule/i;

export default defineCheck({
  id: 'luisa/tests-only-even-extents',
  pass: 3,
  severity: 'low',
  kind: 'maintainability',
  confidence: 'low',
  status: 'preview',
  languages: ['luisa-dsl'],
  citation: '000 §10.9 Verification discipline for lowering changes ("Exercise ragged extents"; "gate on an end-to-end correctness check against a host reference")',
  summary: 'Lowering/codegen test that dispatches only sizes divisible by the warp size.',
  why: 'Guard-elision and segment-bound bugs hide behind evenly dividing test sizes, and lowering bugs produce plausible-but-wrong numbers far more often than crashes, so 000 §10.9 exercises ragged extents (not divisible by the block/warp size) against a host reference.',
  messages: {
    even: 'Tests for this lowering change only use sizes divisible by the block/warp size ({{sizes}}); add ragged extents (e.g. n = block + 1) and a host-reference comparison.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(luisaModel);
        if (!m.testOrBench || !LOWERING_PATH.test(ctx.source.path)) return;
        const sizes: number[] = [];
        let anchor: SyntaxNode | null = null;
        /** Values of `n` bound by `for (uint n : {256u, 1024u})` around `at`. */
        const listValues = (name: string, at: SyntaxNode): number[] | null => {
          for (let cur = at.parent; cur; cur = cur.parent) {
            if (cur.type !== 'for_range_loop') continue;
            if (cur.childForFieldName('declarator')?.text.replace(/^[&*\s]+/, '') !== name) continue;
            const r = cur.childForFieldName('right');
            if (r?.type !== 'initializer_list') return null;
            const vs = r.namedChildren.map((c) => m.constValue(c));
            if (vs.some((v) => v === null)) return null;
            anchor ??= r;
            return vs as number[];
          }
          return null;
        };
        const valuesOf = (e: SyntaxNode | null, at: SyntaxNode): number[] | null => {
          const u = unparen(e);
          if (!u) return null;
          const v = m.constValue(u);
          if (v !== null) return [v];
          if (u.type === 'identifier') {
            const l = listValues(u.text, at);
            if (l) return l;
            const d = m.declOf(u.text, at);
            const dv = d?.value ? m.constValue(d.value) : null;
            return dv !== null ? [dv] : null;
          }
          // `make_uint2(w, h)`
          if (u.type === 'call_expression' && /^make_uint[23]$/.test(u.childForFieldName('function')?.text ?? '')) {
            const out: number[] = [];
            for (const a of u.childForFieldName('arguments')?.namedChildren ?? []) {
              const av = valuesOf(a, at);
              if (!av) return null;
              out.push(...av);
            }
            return out;
          }
          return null;
        };
        for (const d of m.dispatches) {
          for (const a of d.args) {
            const vs = valuesOf(a, d.node);
            // A helper's size parameter takes the sizes its callers pass (the lists below).
            const u = unparen(a);
            if (!vs && u?.type === 'identifier' && m.declOf(u.text, d.node)?.param) continue;
            // An extent the checker cannot evaluate may well be ragged.
            if (!vs) return;
            // Single-thread dispatches (`dispatch(1u)`) are setup kernels, not test extents.
            sizes.push(...vs.filter((x) => x > 1));
          }
        }
        // Size lists that drive the test cases: `for (uint n : {256u, 1024u}) { REQUIRE(check(kernel, n)); }`.
        for (const loop of ctx.source.root.descendantsOfType('for_range_loop')) {
          const r = loop.childForFieldName('right');
          const v = loop.childForFieldName('declarator')?.text.replace(/^[&*\s]+/, '');
          if (r?.type !== 'initializer_list' || !v || !r.namedChildren.length) continue;
          const vs = r.namedChildren.map((c) => m.constValue(c));
          if (vs.some((x) => x === null)) continue;
          const body = loop.childForFieldName('body');
          const passed = !!body && body.descendantsOfType('argument_list').some((al) => al.namedChildren.some((x) => x.text === v));
          if (!passed) continue;
          anchor ??= r;
          sizes.push(...(vs as number[]).filter((x) => x > 1));
        }
        if (!sizes.length || sizes.some((s) => s % 32 !== 0)) return;
        const node = anchor ?? m.dispatches[0].node;
        const uniq = [...new Set(sizes)].sort((a, b) => a - b);
        ctx.report({
          node,
          messageId: 'even',
          data: { sizes: quoteCode(uniq.map((s) => `${s}`).join(', '), 60) },
          fix: { description: 'Add a ragged case (a size such as block + 1 or 1000 that no block/warp size divides) and compare every case against a host reference (000 §10.9).' },
        });
      },
    };
  },
});

import { luisaModel, type DslBody, type LuisaModel } from '../../../src/analysis/luisa.js';
import { quote, unparen } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';
import { escapeRe as esc } from '../../../src/core/regex.js';

/** `thread_x()`, `dispatch_x()`, `thread_id().x`, `dispatch_id().x`, or a local initialized with one. */
function isThreadIndex(m: LuisaModel, n: SyntaxNode | null, depth = 0): boolean {
  const u = unparen(n);
  if (!u) return false;
  if (u.type === 'call_expression') return /^(thread_x|dispatch_x)$/.test(u.childForFieldName('function')?.text ?? '') && (u.childForFieldName('arguments')?.namedChildren.length ?? 0) === 0;
  if (u.type === 'field_expression') return u.childForFieldName('field')?.text === 'x' && /^(thread_id|dispatch_id)\s*\(\s*\)$/.test(u.childForFieldName('argument')?.text ?? '');
  if (u.type === 'identifier' && depth === 0) {
    const d = m.declOf(u.text, u);
    return !!d?.value && !d.param && isThreadIndex(m, d.value, 1);
  }
  return false;
}

/** Width a constant stands for in `x / w`, `x % w`, `x >> s`, `x & (w - 1)`; null when it is not 32 or 64. */
function widthOf(op: string, v: number): number | null {
  // A lane taken modulo 64 is rare next to `% 64u` as a bin or tile count, so only the warp-index
  // forms (`/ 64u`, `>> 6u`) read 64 as a (wavefront) width.
  if (op === '/') return v === 32 || v === 64 ? v : null;
  if (op === '%') return v === 32 ? v : null;
  if (op === '>>') return v === 5 ? 32 : v === 6 ? 64 : null;
  if (op === '&') return v === 31 ? 32 : null;
  return null;
}

/** Constants the kernel legitimately uses: its block dimensions and the width it pins. */
function allowed(b: DslBody, v: number, name: string | null): boolean {
  if (b.warpSize?.value === v) return true;
  if (b.blockSize && (b.blockSize.dims.includes(v) || b.blockSize.product === v)) return true;
  if (name && b.blockSize?.args.some((a) => new RegExp(`\\b${esc(name)}\\b`).test(a.text))) return true;
  return false;
}

export default defineCheck({
  id: 'luisa/hardcoded-warp-width',
  pass: 3,
  severity: 'medium',
  kind: 'portability',
  confidence: 'medium',
  languages: ['luisa-dsl'],
  citation: '000 §6 Hardware Mapping ("Never hardcode a width. Query device.compute_warp_size() on the host and warp_lane_count() on the device")',
  summary: 'Warp width written as a literal 32/64 in warp-level index math instead of warp_lane_count().',
  why: 'The warp width differs by backend (32 on CUDA and Metal, the queried wavefront width on HIP, the subgroup size on Vulkan, up to the maximum wave width on DirectX, 1 on the CPU fallback), so a literal 32 in lane or warp-index math breaks wherever the kernel runs on another width (000 §6).',
  messages: {
    width: 'Warp width hard-coded as {{value}} (`{{code}}`); query warp_lane_count() on the device / device.compute_warp_size() on the host (or pin it with set_warp_size).',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(luisaModel);
        const reported = new Set<number>();
        const report = (n: SyntaxNode, value: number, code: SyntaxNode): void => {
          if (reported.has(n.id)) return;
          reported.add(n.id);
          ctx.report({ node: n, messageId: 'width', data: { value, code: quote(code) }, fix: { description: 'Use warp_lane_count() in the kernel, or pin the width with set_warp_size(kWarp) and keep the constant.' } });
        };
        const warpKernels = new Set<number>();
        for (const c of m.callsNamed(/^warp_/)) {
          const k = m.kernelOf(c.node);
          if (k) warpKernels.add(k.node.id);
        }

        // (a) `thread_x() / 32u`, `dispatch_x() % 32u`, `thread_x() >> 5u`, `thread_x() & 31u`. Only in
        // kernels that use warp operations: elsewhere 32 is a tile or row size, not a warp width.
        if (warpKernels.size) {
          for (const b of m.bodies) {
            if (!warpKernels.has(b.node.id)) continue;
            // Only `/`, `%`, `>>` and `&` tokens can matter: find them in the text instead of visiting
            // every binary expression of the body.
            const base = b.body.startIndex;
            for (const mt of m.source.text.slice(base, b.body.endIndex).matchAll(/(?<![/*&>%=<!])(\/|%|>>|&)(?![=&/*>])/g)) {
              const tok = m.source.root.descendantForIndex(base + mt.index!, base + mt.index! + mt[0].length);
              const e = tok?.parent;
              if (!e || e.type !== 'binary_expression' || e.childForFieldName('operator')?.startIndex !== base + mt.index!) continue;
              const op = mt[0];
              const r = unparen(e.childForFieldName('right'));
              const v = m.constValue(r);
              const w = v === null ? null : widthOf(op, v);
              if (w === null || !isThreadIndex(m, e.childForFieldName('left'))) continue;
              // `hist.atomic(i % 32u)`: a bin index of a buffer atomic, not a lane.
              if ((op === '%' || op === '&') && e.parent?.type === 'argument_list' && /(\.|->)\s*atomic$/.test(e.parent.parent?.childForFieldName('function')?.text ?? '')) continue;
              if (m.kernelOf(e)?.node.id !== b.node.id) continue;
              if (allowed(b, v!, r?.type === 'identifier' ? r.text : null) || b.warpSize?.value === w) continue;
              report(e, w, e);
            }
          }
        }

        for (const c of m.callsNamed('warp_read_lane')) {
          if (c.receiver || c.args.length !== 2) continue;
          const k = m.kernelOf(c.node);
          if (!k) continue;
          const lane = c.args[1];
          // (c) `lane ^ 16u`: a butterfly that starts at half of 32 spans exactly a 32-lane warp.
          for (const x of [lane, ...lane.descendantsOfType('binary_expression')]) {
            if (x.type !== 'binary_expression' || x.childForFieldName('operator')?.type !== '^') continue;
            const r = unparen(x.childForFieldName('right'));
            const v = m.constValue(r);
            if ((v === 16 || v === 32) && !allowed(k, 2 * v, null)) report(x, 2 * v, x);
            // `for (uint off = 16u; off > 0u; off >>= 1u) … lane ^ off`, unrolled when the kernel records.
            if (r?.type === 'identifier') {
              const loop = loopOf(c.node, r.text);
              const init = loop ? loopInit(m, loop, r.text) : null;
              if (init !== null && (init.v === 16 || init.v === 32) && !allowed(k, 2 * init.v, null)) report(init.node, 2 * init.v, init.node);
            }
          }
          // (b) a lane loop bounded by a literal width: `$for (l, 0u, 32u) { … warp_read_lane(v, l) … }`.
          const ids = new Set([lane, ...lane.descendantsOfType('identifier')].filter((i) => i.type === 'identifier').map((i) => i.text));
          for (const id of ids) {
            const loop = loopOf(c.node, id);
            if (!loop) continue;
            const bound = loopBound(m, loop, id);
            if (bound && (bound.v === 32 || bound.v === 64) && !allowed(k, bound.v, bound.node.type === 'identifier' ? bound.node.text : null)) report(bound.node, bound.v, loop.type === 'for_statement' && !m.isDeviceLoop(loop) ? (loop.childForFieldName('condition') ?? bound.node) : bound.node);
          }
        }

        // (d) host: a literal 32 passed where the callee (a function or kernel of this file) takes a warp width.
        if (!/[(,]\s*(32|64)[uU]?\s*[,)]/.test(m.source.text)) return;
        // Names the file pins the width from (`set_warp_size(static_cast<uint8_t>(wave_size))`): a literal
        // passed to such a parameter selects the width on purpose (a wave32/wave64 test), it assumes nothing.
        const pinnedFrom = new Set<string>();
        for (const s of m.callsNamed('set_warp_size')) {
          for (const a of s.args) if (m.constValue(a) === null) for (const id of [a, ...a.descendantsOfType('identifier')]) if (id.type === 'identifier') pinnedFrom.add(id.text);
        }
        for (const c of m.calls) {
          if (!c.args.length || m.inDeviceCode(c.node)) continue;
          c.args.forEach((a, i) => {
            const v = a.type === 'number_literal' ? m.constValue(a) : null;
            if (v !== 32 && v !== 64) return;
            const p = paramName(m, c.name, c.receiver === null ? c.node : null, i);
            if (p && !pinnedFrom.has(p) && /^(k_?)?(warp|wave|subgroup|simd)_?(size|width|lanes)$|^lanes_per_warp$/i.test(p)) report(a, v, c.node);
          });
        }
      },
    };
  },
});

/** The innermost loop around `n` that declares `name` as its variable (device or record-time). */
function loopOf(n: SyntaxNode, name: string): SyntaxNode | null {
  for (let cur = n.parent; cur; cur = cur.parent) {
    if (cur.type === 'lambda_expression') return null;
    if (cur.type === 'for_statement') {
      const init = cur.childForFieldName('initializer');
      if (init && new RegExp(`\\b${esc(name)}\\b\\s*=`).test(init.text)) return cur;
    }
    if (cur.type === 'for_range_loop' && cur.childForFieldName('declarator')?.text.replace(/^[&*\s]+/, '') === name) return cur;
    if (cur.type === 'if_statement' || cur.type === 'while_statement') {
      // `$for (l, 0u, 32u)` is normalized to an if_statement with a comma condition.
      const cond = cur.childForFieldName('condition');
      const first = cond?.namedChildren[0];
      if (first?.type === 'comma_expression' && first.childForFieldName('left')?.text === name) return cur;
    }
  }
  return null;
}
function loopBound(m: LuisaModel, loop: SyntaxNode, name: string): { node: SyntaxNode; v: number } | null {
  const parts = m.loopParts(loop);
  if (parts) {
    const v = m.constValue(parts.end);
    return parts.end && v !== null && parts.variable === name ? { node: parts.end, v } : null;
  }
  if (loop.type !== 'for_statement') return null;
  const cond = unparen(loop.childForFieldName('condition'));
  if (cond?.type !== 'binary_expression' || !['<', '<='].includes(cond.childForFieldName('operator')?.type ?? '')) return null;
  if (unparen(cond.childForFieldName('left'))?.text !== name) return null;
  const r = cond.childForFieldName('right')!;
  const v = m.constValue(r);
  return v === null ? null : { node: r, v: cond.childForFieldName('operator')?.type === '<=' ? v + 1 : v };
}
function loopInit(m: LuisaModel, loop: SyntaxNode, name: string): { node: SyntaxNode; v: number } | null {
  if (loop.type !== 'for_statement') return null;
  const init = loop.childForFieldName('initializer');
  const d = init?.descendantsOfType('init_declarator').find((x) => x.childForFieldName('declarator')?.text === name);
  const val = d?.childForFieldName('value') ?? null;
  const v = m.constValue(val);
  return val && v !== null ? { node: val, v } : null;
}
const declaratorsMemo = new WeakMap<LuisaModel, SyntaxNode[]>();
/** Name of parameter `i` of the host function or kernel `name` defined in this source. */
function paramName(m: LuisaModel, name: string, freeCall: SyntaxNode | null, i: number): string | null {
  const k = m.kernelOfShader(name) ?? m.bodies.find((b) => b.name === name) ?? null;
  if (k) return declName(k.params[i]);
  if (!freeCall) return null;
  let fns = declaratorsMemo.get(m);
  if (!fns) declaratorsMemo.set(m, (fns = m.source.root.descendantsOfType('function_declarator')));
  for (const f of fns) {
    if (f.childForFieldName('declarator')?.text.split('::').pop() !== name) continue;
    const ps = f.childForFieldName('parameters')?.namedChildren.filter((p) => p.type.endsWith('parameter_declaration')) ?? [];
    return declName(ps[i]);
  }
  return null;
}
function declName(p: SyntaxNode | undefined): string | null {
  if (!p) return null;
  const d = p.childForFieldName('declarator');
  if (!d) return null;
  return d.type === 'identifier' ? d.text : d.descendantsOfType('identifier')[0]?.text ?? null;
}

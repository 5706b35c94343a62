import { luisaModel } from '../../../src/analysis/luisa.js';
import { quoteCode } from '../../../src/analysis/smem.js';
import { unparen } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

const WARP_NAME = /warp|lanes?$|wave/i;
/** DSL value types: a `%` on them is recorded device arithmetic, not a generation-time decision. */
const DSL_TYPE = /^(const\s+)?(UInt|Int|Float|Bool|UInt\d|Int\d|Var\s*<|Expr\s*<|auto)\b/;

export default defineCheck({
  id: 'luisa/codegen-guard-elision-unpinned-warp',
  pass: 3,
  severity: 'high',
  kind: 'correctness',
  confidence: 'low',
  status: 'preview',
  languages: ['luisa-dsl'],
  citation: '000 §10.3 Full/tail loop splitting and guard elision ("Never elide based on the runtime warp size unless it was pinned with set_warp_size")',
  summary: 'Generator drops a per-lane guard because K % warp width == 0, but the emitted kernel does not pin its warp size.',
  why: 'Eliding a per-lane guard is only sound for the warp width the kernel actually runs with; LuisaCompute backends differ (32 on CUDA, 64 on some HIP parts, 1 on the CPU fallback, any of 1, 2, 4, … 128 per luisa_compute_validate_warp_size), so without `set_warp_size` the unguarded lanes read out of bounds (000 §10.3).',
  messages: {
    unpinned: 'Guard elided on the assumption K % warp_width == 0 (`{{code}}`), but the kernel does not pin its warp size; call `set_warp_size({{width}})` in the emitted kernel or keep the per-lane guard.',
  },
  fix: 'judgment',
  create(ctx) {
    const mods: SyntaxNode[] = [];
    return {
      binary_expression(node) {
        mods.push(node);
      },
      'source:exit'() {
        if (!mods.length || !ctx.source.text.includes('%')) return;
        const m = ctx.get(luisaModel);
        const warpWidth = (r: SyntaxNode | null): { text: string; value: number | null } | null => {
          const e = unparen(r);
          if (!e) return null;
          const v = m.constValue(e);
          if (v === 32 || v === 64) return { text: e.text, value: v };
          if (e.type === 'call_expression' && /compute_warp_size$/.test(e.childForFieldName('function')?.text ?? '')) return { text: e.text, value: null };
          if ((e.type === 'identifier' || e.type === 'field_expression') && WARP_NAME.test(e.text)) {
            const d = e.type === 'identifier' ? m.declOf(e.text, e) : null;
            if (d && DSL_TYPE.test(d.type.trim()) && !/^auto/.test(d.type.trim())) return null;
            const dv = d?.value ? m.constValue(d.value) : null;
            return { text: e.text, value: v ?? dv };
          }
          return null;
        };
        for (const mod of mods) {
          if (mod.childForFieldName('operator')?.type !== '%') continue;
          const w = warpWidth(mod.childForFieldName('right'));
          const left = unparen(mod.childForFieldName('left'));
          if (!w || !left) continue;
          // Device arithmetic (`$if (k % 32u == 0u)`, a `UInt` operand) is not a host decision.
          if (m.deviceBranchesAround(mod).some((b) => b.condition && b.condition.startIndex <= mod.startIndex && mod.endIndex <= b.condition.endIndex)) continue;
          if (m.laneDependent(left)) continue;
          const ids = left.type === 'identifier' ? [left] : left.descendantsOfType('identifier');
          if (ids.some((i) => { const d = m.declOf(i.text, mod); return !!d && DSL_TYPE.test(d.type.trim()) && !/^(const\s+)?auto/.test(d.type.trim()); })) continue;
          // The remainder must decide emission: a native `if`/`?:` condition, or a bool that feeds one.
          let decides = false;
          for (let cur: SyntaxNode | null = mod.parent; cur; cur = cur.parent) {
            if (cur.type === 'if_statement' || cur.type === 'conditional_expression') {
              const c = cur.childForFieldName('condition');
              decides = !!c && c.startIndex <= mod.startIndex && mod.endIndex <= c.endIndex && !m.isDeviceBranch(cur);
              break;
            }
            if (cur.type === 'init_declarator' || cur.type === 'assignment_expression') {
              decides = /\bbool\b|auto/.test(cur.parent?.childForFieldName('type')?.text ?? '') || /guard|need|tail|divis|even|elide|aligned|exact|full/i.test((cur.childForFieldName('declarator') ?? cur.childForFieldName('left'))?.text ?? '');
              break;
            }
            if (cur.type.endsWith('statement') || cur.type === 'compound_statement') break;
          }
          if (!decides) continue;
          // Generator code: inside a kernel body, a DSL-emitting host function, or a function that calls `emit_*` helpers.
          let fn: SyntaxNode | null = mod.parent;
          while (fn && fn.type !== 'function_definition') fn = fn.parent;
          const kernel = m.kernelOf(mod);
          const generator = kernel !== null || m.generatorOf(mod) !== null || (!!fn && m.callsIn(fn, /^emit_/).length > 0);
          if (!generator) continue;
          // Pinned: the kernel, the generator, or a kernel that calls the generator sets the warp size.
          const pins: Array<number | null> = [];
          if (kernel?.warpSize) pins.push(kernel.warpSize.value);
          if (!kernel && fn) {
            for (const c of m.callsIn(fn, 'set_warp_size')) pins.push(m.constValue(c.args[0]));
            let d = fn.childForFieldName('declarator');
            while (d && d.type !== 'function_declarator') d = d.childForFieldName('declarator');
            const name = d?.childForFieldName('declarator')?.text.split('::').pop();
            if (name) {
              for (const c of m.callsNamed(name)) {
                const k = m.kernelOf(c.node);
                if (k?.warpSize) pins.push(k.warpSize.value);
              }
            }
          }
          if (pins.some((p) => p === null || w.value === null || p === w.value)) continue;
          ctx.report({
            node: mod,
            messageId: 'unpinned',
            data: { code: quoteCode(mod.text, 40), width: w.value !== null ? `${w.value}u` : quoteCode(w.text, 30) },
            fix: { description: `Pin the width the generator assumed (\`set_warp_size(${w.value !== null ? `${w.value}u` : quoteCode(w.text, 30)})\`, a width the target backends support) in every kernel that uses this code, or keep the per-lane guard (000 §10.3).` },
          });
        }
      },
    };
  },
});

import type { CudaFunction } from '../../../src/analysis/cuda.js';
import { cudaModel } from '../../../src/analysis/cuda.js';
import { launchConfigs, type LaunchConfig } from '../../../src/analysis/launch-config.js';
import { pythonModel } from '../../../src/analysis/python.js';
import { pyArgs, unparen } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';
import { LAUNCH } from '../../../src/config/costs.js';
import { escapeRe as esc } from '../../../src/core/regex.js';

interface L {
  cfg: LaunchConfig;
  stmt: SyntaxNode;
  args: SyntaxNode[];
  /** Argument positions the kernel writes through (a non-const pointer parameter that is stored to). */
  outputs: Set<number>;
}

const STATEMENT = new Set(['expression_statement']);
const ASSIGN_OPS = /^(=|\+=|-=|\*=|\/=|\|=|&=|\^=)$/;

/** Parameter positions the kernel stores to: `p[i] = …`, `*p = …`, `atomicAdd(&p[…], …)`. */
function storedParams(fn: CudaFunction): Set<number> | null {
  if (!fn.body) return null;
  const out = new Set<number>();
  fn.params.forEach((p, i) => {
    if (!p.text.includes('*') || /^\s*const\b|\bconst\s*\*/.test(p.text.split('*')[0] + '*')) return;
    const name = p.descendantsOfType('identifier').at(-1)?.text;
    if (!name) return;
    const writes = fn.body!.descendantsOfType('assignment_expression').some((a) => {
      const op = a.childForFieldName('operator')?.text ?? '=';
      const l = a.childForFieldName('left');
      return ASSIGN_OPS.test(op) && !!l && (l.type === 'subscript_expression' || l.type === 'pointer_expression') && new RegExp(`^\\*?\\(?${esc(name)}\\b`).test(l.text);
    });
    const atomics = new RegExp(`\\batomic\\w+\\([^,]*\\b${esc(name)}\\b`).test(fn.body!.text);
    if (writes || atomics) out.add(i);
  });
  return out;
}

function argName(a: SyntaxNode): string | null {
  const u = unparen(a);
  return u?.type === 'identifier' ? u.text : null;
}

export default defineCheck({
  id: 'kernel/fusion-candidate',
  pass: 3,
  severity: 'medium',
  kind: 'performance',
  confidence: 'low',
  status: 'retired',
  languages: ['python', 'cuda'],
  citation:
    '003 §8.4 Small Kernel Launches (detection rule 4 "Multiple kernels that could be fused (same input, similar work)"); 003 §3.4 Kernel Fusion Opportunities; 004 §H1.8/§H1.9 (fuse kernels to raise arithmetic intensity); 004 §H3.6 (torch.compile fusion)',
  summary: 'Back-to-back launches with the same grid and block where the second only consumes the first one\'s intermediate (or both read the same inputs): fusable.',
  why: 'Fusing a 2–3 op pointwise chain gives 2–3× (003 §3.4) because the intermediate stays in registers instead of a global-memory write and re-read, and it saves one launch (' + LAUNCH + '; 003 §3.5).',
  messages: {
    chain:
      'These consecutive launches form a producer→consumer chain (`{{a}}` writes `{{buf}}`, `{{b}}` reads it, nothing else does) that could be fused into one kernel, saving a global-memory round trip{{figure}}.',
    sameInput:
      'These consecutive launches form a same-input chain (`{{a}}` and `{{b}}` both read {{bufs}} with the same grid and block) that could be fused into one kernel, saving a global-memory round trip{{figure}}.',
  },
  fix: 'judgment',
  create(ctx) {
    function collect(): L[] {
      const out: L[] = [];
      for (const cfg of ctx.get(launchConfigs)) {
        if (cfg.testOrBench) continue;
        let stmt: SyntaxNode | null = cfg.node.parent;
        if (!stmt || !STATEMENT.has(stmt.type)) continue;
        let args: SyntaxNode[];
        if (ctx.source.language === 'python') {
          const { positional, keywords } = pyArgs(cfg.node);
          const tuple = unparen(keywords.get('args') ?? positional[2] ?? null);
          if (!tuple || (tuple.type !== 'tuple' && tuple.type !== 'list')) continue;
          args = tuple.namedChildren;
        } else {
          const l = ctx.get(cudaModel).launches.find((x) => x.node.id === cfg.node.id);
          if (!l || l.kind !== 'chevron') continue;
          args = l.args;
        }
        const stored = cfg.kernel ? storedParams(cfg.kernel.fn) : null;
        // Without the kernel source, the project convention (outputs last: `args=(d_in, …, d_out)`) names the output.
        const outputs = stored ?? new Set(args.length > 1 ? [args.length - 1] : []);
        out.push({ cfg, stmt, args, outputs });
      }
      return out;
    }

    function usesIn(name: string, a: L, b: L): number {
      if (ctx.source.language === 'python') {
        const m = ctx.get(pythonModel);
        return m.usesOf(name, m.scopeOf(a.cfg.node)).filter((u) => !(u.startIndex >= a.stmt.startIndex && u.endIndex <= b.stmt.endIndex) && !/parameter/.test(u.parent?.type ?? '')).length;
      }
      const m = ctx.get(cudaModel);
      const fn = m.functionOf(a.cfg.node);
      if (!fn?.body) return 1;
      // Allocation and release of the intermediate are not consumers of its contents.
      return fn.body.descendantsOfType('identifier').filter((i) => {
        if (i.text !== name || (i.startIndex >= a.stmt.startIndex && i.endIndex <= b.stmt.endIndex)) return false;
        let p = i.parent;
        while (p && p.type !== 'call_expression' && p.type !== 'compound_statement') p = p.parent;
        const callee = p?.type === 'call_expression' ? p.childForFieldName('function')?.text ?? '' : '';
        if (/Malloc|Free|alloc|free/.test(callee)) return false;
        return !(i.parent?.type === 'init_declarator' || i.parent?.type === 'pointer_declarator' || i.parent?.type === 'declaration');
      }).length;
    }

    return {
      'source:exit'() {
        const ls = collect();
        for (let k = 0; k + 1 < ls.length; k++) {
          const a = ls[k]!;
          const b = ls[k + 1]!;
          // Adjacent statements of one block: no host work, sync or CCCL scan (cross-block dependency) in between.
          let next = a.stmt.nextNamedSibling;
          while (next?.type === 'comment') next = next.nextNamedSibling;
          if (next?.id !== b.stmt.id || a.stmt.parent?.id !== b.stmt.parent?.id) continue;
          const gA = a.cfg.gridNode?.text.replace(/\s+/g, '');
          const bA = a.cfg.blockNode?.text.replace(/\s+/g, '');
          // A different grid or block expression means a different thread-to-data mapping (003 §3.4 "Do NOT fuse").
          if (!gA || !bA || gA !== b.cfg.gridNode?.text.replace(/\s+/g, '') || bA !== b.cfg.blockNode?.text.replace(/\s+/g, '')) continue;
          if (a.cfg.label === b.cfg.label) continue;
          const figure =
            a.cfg.grid && a.cfg.block
              ? ` (both launch ${a.cfg.grid[0] * a.cfg.grid[1] * a.cfg.grid[2]} blocks of ${a.cfg.block[0] * a.cfg.block[1] * a.cfg.block[2]} threads)`
              : '';
          const aOut = [...a.outputs].map((i) => a.args[i]).filter((x): x is SyntaxNode => !!x).map(argName).filter((x): x is string => !!x);
          const bOut = new Set([...b.outputs].map((i) => (b.args[i] ? argName(b.args[i]!) : null)));
          const bIn = b.args.filter((_, i) => !b.outputs.has(i)).map(argName);
          const buf = aOut.find((n) => bIn.includes(n) && !bOut.has(n) && usesIn(n, a, b) === 0);
          if (buf) {
            ctx.report({ node: b.cfg.node, messageId: 'chain', data: { a: a.cfg.label, b: b.cfg.label, buf, figure }, fix: { description: `Fuse \`${a.cfg.label}\` into \`${b.cfg.label}\` so \`${buf}\` stays in registers (003 §3.4).` } });
            continue;
          }
          const aIn = a.args.filter((_, i) => !a.outputs.has(i)).map(argName);
          const sameInputs = aIn.length > 0 && aIn.length === bIn.length && aIn.every((n, i) => n !== null && n === bIn[i]);
          if (sameInputs && a.outputs.size > 0 && b.outputs.size > 0) {
            ctx.report({ node: b.cfg.node, messageId: 'sameInput', data: { a: a.cfg.label, b: b.cfg.label, bufs: aIn.map((n) => `\`${n}\``).join(', '), figure }, fix: { description: `Compute both outputs in one kernel that reads ${aIn.join(', ')} once (003 §3.4).` } });
          }
        }
      },
    };
  },
});

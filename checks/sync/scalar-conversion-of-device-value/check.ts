import { pythonModel } from '../../../src/analysis/python.js';
import { commentsAround, contains, pyArgs, quote } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';
import { LAUNCH } from '../../../src/config/costs.js';

const TRACE_COND = /\b\w*(trac(e|ing)|profil\w*|TRACE|PROFILE)\w*\b/;

function statementOf(n: SyntaxNode): SyntaxNode {
  let cur = n;
  while (cur.parent && cur.parent.type !== 'block' && cur.parent.type !== 'module') cur = cur.parent;
  return cur;
}

/** Validation and error reporting: `assert int(d_n) == n`, `raise ValueError(f"{int(d_n)}")`. */
function checkingContext(n: SyntaxNode): boolean {
  for (let p = n.parent; p && p.type !== 'function_definition'; p = p.parent) {
    if (p.type === 'raise_statement' || p.type === 'assert_statement') return true;
    if ((p.type === 'if_statement' || p.type === 'elif_clause') && TRACE_COND.test(p.childForFieldName('condition')?.text ?? '') && !contains(p.childForFieldName('condition')!, n)) return true;
  }
  return false;
}

export default defineCheck({
  id: 'sync/scalar-conversion-of-device-value',
  pass: 2,
  severity: 'high',
  kind: 'performance',
  confidence: 'medium',
  languages: ['python'],
  citation: '003 §8.1 Implicit Synchronization (row "int(cupy_scalar) / float(cupy_scalar)"); 003 §2.4 (rows ".item()", "int()/float()"); 003 §9 Pass 2 bullet 2',
  summary: 'Device scalar turned into a Python value (int/float/bool/.item()/if/min/max) while GPU work still follows.',
  why: 'The conversion blocks until every queued kernel has finished and copies the value back, so the GPU idles and the next launch pays its launch overhead (' + LAUNCH + ') on an empty queue (003 §2.4, §8.1 HIGH, §8.4).',
  messages: {
    convert:
      '`{{code}}` converts a device scalar to a Python value while GPU work follows (`{{next}}`): converting a device scalar to a Python number syncs the GPU; keep it on the device until the host truly needs it.',
    condition:
      '`{{code}}` is a device value used as a branch condition while GPU work follows (`{{next}}`): the implicit bool() syncs the GPU; keep the decision on the device (a mask, `cp.where`, a kernel-side early exit).',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(pythonModel);
        if (m.testOrBench) return;
        const markers = ctx.config.vocab.sync_fence_markers.map((x) => x.toLowerCase());
        const candidates: Array<{ node: SyntaxNode; kind: 'convert' | 'condition' }> = [];
        for (const d of m.d2h) {
          if (d.kind === 'convert' || d.kind === 'item') candidates.push({ node: d.node, kind: 'convert' });
          else if (d.kind === 'condition') candidates.push({ node: d.node, kind: 'condition' });
          else if (d.kind === 'builtin') {
            // Builtin min/max compare device scalars with `>` and call bool() on the 0-d result; range() calls __index__.
            const fn = d.node.childForFieldName('function')?.text;
            if ((fn === 'min' || fn === 'max') && pyArgs(d.node).positional.length >= 2) candidates.push({ node: d.node, kind: 'convert' });
            else if (fn === 'range') candidates.push({ node: d.node, kind: 'convert' });
          }
        }
        // `math.ceil(d_total / 256)`: the math module converts its argument with float() (one sync).
        for (const call of m.moduleOf('math') !== undefined ? ctx.source.root.descendantsOfType('call') : []) {
          const p = m.callPath(call);
          if (p && /^math\.\w+$/.test(p) && m.moduleOf('math') !== undefined && pyArgs(call).positional.some((a) => m.isDevice(a))) candidates.push({ node: call, kind: 'convert' });
        }

        const seen = new Set<number>();
        const opsByScope = new Map<number, SyntaxNode[]>();
        for (const c of candidates.sort((a, b) => a.node.startIndex - b.node.startIndex)) {
          const n = c.node;
          // One finding per expression: `int(d_x.item())` is reported once, on the outer conversion.
          if (seen.has(n.id) || candidates.some((o) => o.node.id !== n.id && contains(o.node, n) && o.node.startIndex <= n.startIndex && o.node.text.length > n.text.length)) continue;
          seen.add(n.id);
          if (m.inLoop(n) || m.debugGated(n) || m.inCpuFallback(n) || checkingContext(n)) continue;
          const stmt = statementOf(n);
          if (commentsAround(stmt).some((t) => markers.some((mk) => t.toLowerCase().includes(mk)))) continue;
          const scope = m.scopeOf(n);
          // Pipeline end: no GPU operation runs after the conversion (an operation whose arguments hold it runs after it).
          let ops = opsByScope.get(scope.id);
          if (!ops) opsByScope.set(scope.id, (ops = m.gpuOps.map((o) => o.node).filter((o) => m.scopeOf(o).id === scope.id)));
          const next = ops.filter((o) => !contains(n, o) && (contains(o, n) || (o.startIndex >= n.endIndex && m.flowsTo(n, o)))).sort((a, b) => a.startIndex - b.startIndex)[0];
          if (!next) continue;
          ctx.report({
            node: n,
            messageId: c.kind,
            data: { code: quote(n), next: quote(next) },
            fix: {
              description:
                'Keep the value on the device: pass the 0-d CuPy array (or a one-element device buffer) to the kernel, use a device-side predicate or `cp.where`, or batch ' +
                (ctx.projectVocabulary ? 'through `exclusive_sum(..., synchronize=False)` and one `count_scatter_total(...)`.' : 'the reads into one transfer after the GPU work is queued.'),
            },
          });
        }
      },
    };
  },
});

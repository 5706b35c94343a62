import { luisaModel, type DslCall } from '../../../src/analysis/luisa.js';
import { quoteCode } from '../../../src/analysis/smem.js';
import { unparen } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

/** `buf.read(j)` / `buf->read(j)` on something that is not block-shared: a global load. */
function globalRead(callOf: Map<number, DslCall>, e: SyntaxNode | null, isShared: (name: string) => boolean): SyntaxNode | null {
  const c = unparen(e);
  if (c?.type !== 'call_expression') return null;
  const call = callOf.get(c.id);
  if (!call || call.name !== 'read' || !call.receiver) return null;
  return isShared(baseName(call.receiver)) ? null : c;
}

/** Base name of a store target (`tile` in `tile[i]`, `s->write`). */
function baseName(n: SyntaxNode | null): string {
  return (n?.text ?? '').replace(/^\(?\*?|\)$|\s/g, '').replace(/->.*|\[.*/, '');
}

export default defineCheck({
  id: 'luisa/codegen-serial-copy-loop',
  pass: 3,
  severity: 'medium',
  kind: 'performance',
  confidence: 'medium',
  languages: ['luisa-dsl'],
  citation: '000 §10.4 Memory-level parallelism in generated copy loops',
  summary: 'Device copy loop that alternates one global load and one shared store per element.',
  why: 'A copy loop that stores each element right after loading it keeps one load in flight, so every element pays the full global-memory latency; loading K = 4–8 elements into locals before storing them is "the single biggest fix for copy-dominated kernels" (000 §10.4).',
  messages: {
    serial: 'Copy loop alternates one dependent global load and one shared store per element (`{{code}}`); batch K = 4–8 loads into locals, then store them, so loads overlap.',
  },
  fix: 'judgment',
  create(ctx) {
    const candidates: SyntaxNode[] = [];
    const collect = (n: SyntaxNode): void => void candidates.push(n);
    return {
      for_range_loop: collect,
      if_statement: collect,
      while_statement: collect,
      for_statement: collect,
      'source:exit'() {
        if (!candidates.length) return;
        const m = ctx.get(luisaModel);
        const loops = candidates.filter((l) => m.isDeviceLoop(l) && m.inDeviceCode(l));
        if (!loops.length) return;
        const callOf = new Map(m.calls.map((c) => [c.node.id, c]));
        /** A `Shared<T>` (declared here, a namespace-scope one, or a `Shared<T> &` parameter of a generator). */
        const isShared = (name: string, at: SyntaxNode): boolean => {
          const d = m.declOf(name, at);
          if (d) return /\bShared\s*</.test(d.type) || (/^auto/.test(d.type) && !!d.value && /\bShared\s*</.test(d.value.text));
          return m.shared.some((s) => s.name === name && !s.body);
        };
        for (const loop of loops) {
          const body = loop.type === 'for_range_loop' ? loop.childForFieldName('body') : loop.childForFieldName('consequence') ?? loop.childForFieldName('body');
          if (!body) continue;
          const stmts = body.type === 'compound_statement' ? body.namedChildren.filter((c) => c.type !== 'comment') : [body];
          if (stmts.length !== 1 || stmts[0].type !== 'expression_statement') continue;
          const e = stmts[0].namedChildren[0];
          let target: string | null = null;
          let load: SyntaxNode | null = null;
          if (e?.type === 'assignment_expression' && e.childForFieldName('operator')?.text === '=') {
            const l = e.childForFieldName('left');
            if (l?.type === 'subscript_expression') {
              target = baseName(l.childForFieldName('argument'));
              load = globalRead(callOf, e.childForFieldName('right'), (n) => isShared(n, loop));
            }
          } else if (e?.type === 'call_expression') {
            const call = callOf.get(e.id);
            if (call?.name === 'write' && call.receiver && call.args.length === 2) {
              target = baseName(call.receiver);
              load = globalRead(callOf, call.args[1], (n) => isShared(n, loop));
            }
          }
          if (!target || !load || !isShared(target, loop)) continue;
          // `async_copy` moves the tile without a register round trip; nothing to batch.
          const scope = m.kernelOf(loop)?.body ?? m.generatorOf(loop);
          if (scope && m.callsIn(scope, /^async_copy/).length) continue;
          ctx.report({
            node: loop,
            messageId: 'serial',
            data: { code: quoteCode(stmts[0].text, 60) },
            fix: { description: 'Split the loop into chunks of K = 4–8 elements: K `read`s into locals, then K shared stores; partition the chunks across threads and guard the last chunk when chunk_count % threads != 0 (000 §10.4).' },
          });
        }
      },
    };
  },
});

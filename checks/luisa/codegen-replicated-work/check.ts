import { luisaModel } from '../../../src/analysis/luisa.js';
import { quoteCode } from '../../../src/analysis/smem.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

/** Per-thread arrays of DSL values: registers/local memory, one copy per thread. */
const LOCAL_ARRAY = /^(const\s+)?((luisa::)?(compute::)?(ArrayVar|ArrayFloat\d?|ArrayInt\d?|ArrayUInt\d?|ArrayBool|ArrayHalf\d?|Local)\s*<|(std|luisa)::array\s*<\s*(Float|Int|UInt|Bool|Half|Var|Expr|float|int|uint)|Var\s*<\s*(std|luisa)::array)/;
const TILE_NAME = /tile|block/i;
const NATIVE_FOR = new Set(['for_statement', 'for_range_loop']);

export default defineCheck({
  id: 'luisa/codegen-replicated-work',
  pass: 3,
  severity: 'medium-high',
  kind: 'performance',
  confidence: 'low',
  status: 'preview',
  languages: ['luisa-dsl'],
  citation: '000 §10.1 Audit for replicated work first',
  summary: 'Every thread fills a whole tile-sized per-thread array but reads back only its own element.',
  why: 'A per-thread array materialized in full by every thread but consumed per element multiplies its cost by the block size, and removing such replication is "order-of-magnitude, not percent", worth more than every arithmetic micro-optimization combined (000 §10.1).',
  messages: {
    replicated: 'Every thread materializes the whole tile (loop over {{trip}} into the per-thread array `{{arr}}`) but consumes only its own element (`{{use}}`); partition the producer loop or back it with one block-shared array.',
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
        if (!m.bodies.length && !m.source.dsl?.size) return;
        const loops = candidates.filter((l) => (m.isDeviceLoop(l) || (NATIVE_FOR.has(l.type) && m.isRecordTimeLoop(l))) && m.inDeviceCode(l));
        for (const loop of loops) {
          // Trip count: `$for (k, 0u, N)`, `dynamic_range(N)`, or a native `for (k = 0; k < N; …)` unrolled at record time.
          let variable: string | null = null;
          let end: SyntaxNode | null = null;
          let start: SyntaxNode | null = null;
          const parts = m.loopParts(loop);
          if (parts) {
            if (parts.step) continue;
            ({ variable, end, start } = parts);
          } else if (loop.type === 'for_statement') {
            const c = loop.childForFieldName('condition');
            const init = loop.childForFieldName('initializer');
            if (c?.type !== 'binary_expression' || c.childForFieldName('operator')?.type !== '<') continue;
            variable = c.childForFieldName('left')?.text ?? null;
            end = c.childForFieldName('right');
            const iv = init?.descendantsOfType('init_declarator')[0]?.childForFieldName('value') ?? init?.descendantsOfType('assignment_expression')[0]?.childForFieldName('right') ?? null;
            start = iv;
          } else continue;
          if (!variable || !end) continue;
          // A loop that starts at the thread index is already partitioned.
          if (start && (m.laneDependent(start) || (m.constValue(start) ?? 0) !== 0)) continue;
          const kernel = m.kernelOf(loop);
          const block = kernel?.blockSize?.product ?? null;
          const trip = m.constValue(end);
          const tileSized = (block !== null && block > 1 && trip === block) || TILE_NAME.test(end.text);
          if (!tileSized) continue;
          const body = loop.type === 'for_range_loop' || loop.type === 'for_statement' ? loop.childForFieldName('body') : loop.childForFieldName('consequence') ?? loop.childForFieldName('body');
          if (!body) continue;
          // The loop fills `arr[k]` of a per-thread array.
          for (const a of body.descendantsOfType('assignment_expression')) {
            const l = a.childForFieldName('left');
            if (l?.type !== 'subscript_expression' || a.childForFieldName('operator')?.text !== '=') continue;
            const idx = l.childForFieldName('indices')?.namedChildren[0] ?? l.childForFieldName('index');
            const arrNode = l.childForFieldName('argument');
            if (!idx || idx.text.trim() !== variable || arrNode?.type !== 'identifier') continue;
            const arr = arrNode.text;
            const decl = m.declOf(arr, loop);
            if (!decl || decl.param || !LOCAL_ARRAY.test(decl.type.trim())) continue;
            // After the loop, every read of the array must be the thread's own element.
            const scope = kernel?.body ?? m.generatorOf(loop);
            if (!scope) continue;
            const reads = scope.descendantsOfType('subscript_expression').filter((s) => s.startIndex >= loop.endIndex && s.childForFieldName('argument')?.text === arr);
            if (!reads.length) continue;
            const own = reads.every((s) => {
              const i = s.childForFieldName('indices')?.namedChildren[0] ?? s.childForFieldName('index');
              return !!i && m.laneDependent(i) && m.deviceLoopsAround(s).length === m.deviceLoopsAround(loop).length;
            });
            if (!own) continue;
            ctx.report({
              node: loop,
              messageId: 'replicated',
              data: { trip: quoteCode(end.text, 30) + (block !== null && trip === block ? ` = the ${block}-thread block` : ''), arr, use: quoteCode(reads[0].text, 30) },
              fix: { description: `Partition the producer across the block (k = thread_x(); k < ${quoteCode(end.text, 20)}; k += block size) writing a Shared<T> array, or compute only the element this thread consumes (000 §10.1).` },
            });
            break;
          }
        }
      },
    };
  },
});

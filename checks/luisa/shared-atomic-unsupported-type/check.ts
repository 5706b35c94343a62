import { luisaModel } from '../../../src/analysis/luisa.js';
import { quote } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

const FLOAT_SCALAR = /^(luisa::)?(float|half|double)$/;
const BIT_OPS = /^fetch_(and|or|xor)$/;
const ATOMIC_OPS = /^(fetch_(add|sub|min|max|and|or|xor)|exchange|compare_exchange)$/;
/** Vectors, matrices, arrays and tuples: AtomicRef exposes no aggregate operation on them (atomic.h:204-249). */
const AGGREGATE = /^(luisa::)?((float|int|uint|short|ushort|half|slong|ulong|double|bool)[234]|float[234]x[234])$|^(std::|luisa::)?(array|tuple)\s*</;
const SCALAR = /^(luisa::)?(float|half|double|int|uint|short|ushort|slong|ulong|int32_t|uint32_t|int64_t|uint64_t|unsigned|unsigned int|bool)$/;

export default defineCheck({
  id: 'luisa/shared-atomic-unsupported-type',
  pass: 5,
  severity: 'low',
  kind: 'correctness',
  confidence: 'high',
  languages: ['luisa-dsl'],
  citation: '000 §4.1 API (`s.atomic(i)`: fetch_and/or/xor only on integer specializations; vector/matrix/tuple need scalar lanes first; custom-struct elements have no atomic)',
  summary: 's.atomic(i) used in a way its element type does not support (does not compile).',
  why: 'AtomicRef<T> offers fetch_and/or/xor only on int/uint/slong/ulong, no aggregate operation on vectors, matrices or tuples, and nothing at all for LUISA_STRUCT elements (shared.h:26-28, atomic.h:128-249), so the kernel does not compile (000 §4.1).',
  messages: {
    bitOnFloat: '`{{code}}`: s.atomic(i).{{op}} is not available for Shared<{{type}}>; fetch_and/or/xor exist only on int/uint/slong/ulong elements.',
    aggregate: '`{{code}}`: s.atomic(i).{{op}} is not available for Shared<{{type}}>; reach a scalar lane first (`{{name}}.atomic(i).x.{{op}}(…)` or `{{name}}.atomic(i)[k].{{op}}(…)`).',
    struct: '`{{code}}`: s.atomic(i) is not available for Shared<{{type}}>: custom-struct elements (LUISA_STRUCT) have no atomic reference; use a Shared<uint>/Shared<int> per field.',
    noop: '`{{code}}`: s.atomic(i) alone does nothing; it returns an atomic reference that must be followed by an operation (`.fetch_add(v)`, `.exchange(v)`, …).',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(luisaModel);
        if (!m.shared.length) return;
        const text = ctx.source.text;
        // Structs registered with the DSL (or defined in this file and used as a Shared element).
        const structs = new Set<string>();
        for (const mm of text.matchAll(/\bLUISA_STRUCT\s*\(\s*([\w:]+)/g)) structs.add(mm[1].split('::').pop()!);
        for (const s of m.shared) {
          const type = s.elemType.replace(/\s+/g, ' ').trim();
          const bare = type.replace(/^(const\s+)?(luisa::compute::|luisa::)/, '');
          const isStruct = structs.has(bare.split('::').pop()!) && !SCALAR.test(bare) && !AGGREGATE.test(bare);
          for (const a of m.sharedAccesses(s)) {
            if (a.kind !== 'atomic') continue;
            const call = a.node;
            const p = call.parent;
            const report = (node: SyntaxNode, messageId: string, op: string): void =>
              ctx.report({
                node,
                messageId,
                data: { code: quote(node), op, type, name: s.name ?? 's' },
                fix: { description: messageId === 'bitOnFloat' ? 'Use an integer element type (e.g. Shared<uint> holding the bit pattern) or an arithmetic atomic.' : messageId === 'noop' ? 'Call the intended atomic operation on the reference, or delete the statement.' : 'Reach a scalar lane first (`.x`, `[k]`), or use an integer element type.' },
              });
            if (isStruct) {
              report(p?.type === 'field_expression' && p.parent?.type === 'call_expression' ? p.parent : call, 'struct', '');
              continue;
            }
            // `s.atomic(i);` as a statement of its own.
            if (p?.type === 'expression_statement') {
              report(call, 'noop', '');
              continue;
            }
            const op = a.atomicOp;
            if (!op || !ATOMIC_OPS.test(op)) continue;
            const opCall = p!.parent!;
            if (FLOAT_SCALAR.test(bare) && BIT_OPS.test(op)) report(opCall, 'bitOnFloat', op);
            else if (AGGREGATE.test(bare)) report(opCall, 'aggregate', op);
          }
        }
      },
    };
  },
});

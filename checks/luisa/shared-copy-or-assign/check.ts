import { luisaModel, type LuisaModel } from '../../../src/analysis/luisa.js';
import { lastName, quote, unparen } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

const SHARED_TYPE = /(^|::|\s)Shared\s*</;
/** Containers that hold their elements by value (a `Shared<T>` element would be copied or assigned). */
const CONTAINER = /^(vector|array|deque|list|forward_list|map|unordered_map|flat_map|fixed_vector|small_vector|optional|pair|tuple|queue|stack)$/;

/** `Shared<float>` as a type node (template_type named Shared), by value. */
function isSharedType(t: SyntaxNode | null): boolean {
  return !!t && t.type === 'template_type' && lastName(t.childForFieldName('name')?.text ?? '') === 'Shared';
}

/** The named object a Shared<T> expression denotes by value (`a`, `*p`, `(*p)`), or null. */
function sharedObject(m: LuisaModel, e: SyntaxNode | null, classTypes: Set<string>): { name: string; type: string } | null {
  let n = unparen(e);
  let deref = false;
  if (n?.type === 'pointer_expression' && n.child(0)?.type === '*') {
    deref = true;
    n = unparen(n.childForFieldName('argument'));
  }
  if (n?.type !== 'identifier') return null;
  const d = m.declOf(n.text, n);
  if (!d) return null;
  let type = d.type;
  // `auto a = Shared<float>{256};` / `auto *p = new Shared<float>{256};`
  if (/^auto\b/.test(type) && d.value && SHARED_TYPE.test(d.value.text.split(/[{(]/)[0] ?? '')) type = d.value.text.split(/[{(]/)[0].replace(/^new\s+/, '');
  const isShared = SHARED_TYPE.test(type) || SHARED_TYPE.test(' ' + type);
  const isClass = classTypes.has(type.replace(/^(const\s+)?(struct\s+|class\s+)?/, '').trim());
  if (!isShared && !isClass) return null;
  if (d.pointer !== deref) return null;
  return { name: n.text, type: type.trim() };
}

export default defineCheck({
  id: 'luisa/shared-copy-or-assign',
  pass: 5,
  severity: 'low',
  kind: 'correctness',
  confidence: 'high',
  languages: ['luisa-dsl'],
  citation: '000 §4.7 Correctness & Performance Rules, rule 5 ("Move-construct only"); 000 §4.1 API (`new Shared<T>{n}`; copy construction and both assignment operators deleted)',
  summary: 'Shared<T> copied, assigned, passed by value or stored by value in a container.',
  why: 'Shared<T> deletes copy construction and both assignment operators and only defaults the move constructor (shared.h:47-50), so this does not compile; helper classes hold a Shared<T>* created with new (000 §4.1, §4.7 rule 5).',
  messages: {
    copy: '`{{code}}` copies a Shared<T> ({{what}}): Shared<T> cannot be copied or assigned (or stored by value in a container); hold a Shared<T>* created with new.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        if (!/\bShared\s*</.test(ctx.source.text)) return;
        const m = ctx.get(luisaModel);
        const nodes = ctx.source.root.descendantsOfType(['declaration', 'assignment_expression', 'template_type', 'parameter_declaration', 'field_declaration']);
        // Classes holding a Shared<T> by value are non-copyable too.
        const classTypes = new Set<string>();
        for (const n of nodes) {
          if (n.type !== 'field_declaration' || !isSharedType(n.childForFieldName('type'))) continue;
          const byValue = n.namedChildren.some((c) => c.type === 'field_identifier' || (c.type === 'init_declarator' && c.childForFieldName('declarator')?.type === 'field_identifier'));
          let cls: SyntaxNode | null = n.parent;
          while (cls && cls.type !== 'class_specifier' && cls.type !== 'struct_specifier') cls = cls.parent;
          const name = cls?.childForFieldName('name')?.text;
          if (byValue && name) classTypes.add(name);
        }
        const fix = { description: 'Create the array once with `Shared<T> *p = new Shared<T>{n};` inside the kernel body and pass or store the pointer (000 §4.1 WarpReduce pattern); move-construct with `std::move` where ownership must change.' };
        const report = (node: SyntaxNode, what: string): void => ctx.report({ node, messageId: 'copy', data: { code: quote(node), what }, fix });
        const isMove = (v: SyntaxNode | null): boolean => {
          const n = unparen(v);
          return n?.type === 'call_expression' && /^(std::)?move$/.test(n.childForFieldName('function')?.text.replace(/\s/g, '') ?? '');
        };
        for (const n of nodes) {
          switch (n.type) {
            case 'declaration': {
              const t = n.childForFieldName('type');
              const shared = isSharedType(t);
              const cls = !shared && t?.type === 'type_identifier' && classTypes.has(t.text);
              const isAuto = t?.type === 'placeholder_type_specifier';
              if (!shared && !cls && !isAuto) break;
              for (const dd of n.namedChildren) {
                if (dd.type !== 'init_declarator' || dd.childForFieldName('declarator')?.type !== 'identifier') continue;
                const v = dd.childForFieldName('value');
                if (!v || isMove(v)) continue;
                // `Shared<float> b = a;`, `auto b = a;`, `Shared<float> b{a};`, `Tile t2(t1);`
                const src = v.type === 'initializer_list' || v.type === 'argument_list' ? (v.namedChildren.length === 1 ? v.namedChildren[0] : null) : v;
                if (!src || isMove(src)) continue;
                const obj = sharedObject(m, src, classTypes);
                if (!obj) continue;
                if (isAuto && !SHARED_TYPE.test(obj.type) && !classTypes.has(obj.type)) continue;
                report(n, `copy construction from \`${obj.name}\`${SHARED_TYPE.test(obj.type) ? '' : `, a \`${obj.type}\` holding a Shared<T> by value`}`);
              }
              break;
            }
            case 'assignment_expression': {
              const l = sharedObject(m, n.childForFieldName('left'), classTypes);
              if (!l) break;
              const op = n.childForFieldName('operator')?.text;
              if (op !== '=') break;
              report(n, `${isMove(n.childForFieldName('right')) ? 'move' : 'copy'} assignment to \`${l.name}\`; both assignment operators are deleted`);
              break;
            }
            case 'template_type': {
              const name = lastName(n.childForFieldName('name')?.text ?? '');
              if (!name || !CONTAINER.test(name)) break;
              for (const a of n.childForFieldName('arguments')?.namedChildren ?? []) {
                if (a.type !== 'type_descriptor' || a.childForFieldName('declarator')) continue;
                const at = a.childForFieldName('type');
                const byValueClass = at?.type === 'type_identifier' && classTypes.has(at.text);
                if (!isSharedType(at) && !byValueClass) continue;
                report(n, `a container storing \`${at!.text}\` by value`);
                break;
              }
              break;
            }
            case 'parameter_declaration': {
              const t = n.childForFieldName('type');
              const d = n.childForFieldName('declarator');
              const byValueClass = t?.type === 'type_identifier' && classTypes.has(t.text);
              if ((!isSharedType(t) && !byValueClass) || (d && d.type !== 'identifier')) break;
              report(n, 'a by-value parameter copies the argument at every call; take `Shared<T> &` or `Shared<T> *`');
              break;
            }
          }
        }
      },
    };
  },
});

import { cudaModel } from '../../../src/analysis/cuda.js';
import { pythonModel } from '../../../src/analysis/python.js';
import { pythonLaunches } from '../../../src/analysis/pylaunch.js';
import { quote } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';
import { alternation } from '../../../src/core/regex.js';

const VEC = /^(double|float)[23]$/;
/** `a[2*i]`, `a[i*2 + 1]`, `a[3*i + k]`: element k of an interleaved K-tuple; returns K. */
const INTERLEAVED = /^\(?\s*(?:([23])\s*\*\s*\(?\s*(\w+)\s*\)?|\(?\s*(\w+)\s*\)?\s*\*\s*([23]))\s*\)?\s*(?:\+\s*(\w+))?$/;
/** Python producers of an (n, 2) / (n, 3) interleaved device array. */
const AOS_PY = /\b(?:stack\s*\([\s\S]*axis\s*=\s*(?:1|-1)|column_stack\s*\(|\.reshape\s*\(\s*\(?\s*-1\s*,\s*[23]\s*\)?\s*\))/;
const COLUMN = /^\w+\s*\[\s*:\s*,\s*[0-2]\s*\]$/;

function coordName(name: string, vocab: readonly string[]): boolean {
  return new RegExp(`(^|_)(${alternation(vocab)})s?($|_)|^d_(${alternation(vocab)})`, 'i').test(name) || new RegExp(`^(${alternation(vocab)})`, 'i').test(name);
}

function structsWithXY(root: SyntaxNode): Map<string, number> {
  const out = new Map<string, number>();
  for (const s of [...root.descendantsOfType('struct_specifier'), ...root.descendantsOfType('class_specifier')]) {
    const name = s.childForFieldName('name')?.text;
    const body = s.childForFieldName('body');
    if (!name || !body) continue;
    const fields = body.descendantsOfType('field_identifier').map((f) => f.text);
    if (fields.includes('x') && fields.includes('y')) out.set(name, fields.length);
  }
  // `typedef struct { double x, y; } Pt;`
  for (const t of root.descendantsOfType('type_definition')) {
    const st = t.childForFieldName('type');
    const decl = t.childForFieldName('declarator');
    if (st?.type !== 'struct_specifier' || !decl) continue;
    const fields = st.descendantsOfType('field_identifier').map((f) => f.text);
    if (fields.includes('x') && fields.includes('y')) out.set(decl.text, fields.length);
  }
  return out;
}

export default defineCheck({
  id: 'kernel/aos-coordinates',
  pass: 3,
  severity: 'high',
  kind: 'performance',
  confidence: 'medium',
  languages: ['cuda', 'nvrtc-in-python', 'python'],
  citation: '003 §4.1 Coalesced Access and SoA vs AoS ("NEVER use Array of Structures (AoS)" for coordinates; OwnedGeometryArray contract)',
  summary: 'Coordinates stored as an array of structs or interleaved pairs instead of separate x[] / y[] arrays.',
  why: 'A warp reading one field of interleaved (x, y) pairs uses only half of every 32-byte sector it fetches (stride-2 = 50 % of bandwidth, stride-N = 1/N, down to 3.1 %; 003 §4.1).',
  messages: {
    param: 'Coordinates stored as an array of structs / interleaved pairs (`{{code}}`: {{what}}); use separate x[] and y[] arrays (SoA) so warp loads coalesce — a warp reading one field uses ~1/{{k}} of the fetched bandwidth.',
    interleaved: 'Coordinates stored as an array of structs / interleaved pairs (`{{code}}` reads element {{k}}·i+c of `{{name}}`); use separate x[] and y[] arrays (SoA) so warp loads coalesce — each warp load uses ~1/{{k}} of the fetched bandwidth.',
    python: 'Coordinates stored as an array of structs / interleaved pairs (`{{code}}`, an (n, {{k}}) device array, reaches a kernel launch); use separate x[] and y[] arrays (SoA) so warp loads coalesce.',
  },
  fix: 'judgment',
  create(ctx) {
    const vocab = ctx.config.vocab.coord_names;
    const fixText = 'Pass `const double* __restrict__ x, const double* __restrict__ y` (separate arrays), following the OwnedGeometryArray contract.';
    return {
      'source:exit'() {
        if (ctx.source.language === 'python') {
          const py = ctx.get(pythonModel);
          for (const l of ctx.get(pythonLaunches).launches) {
            const scope = py.scopeOf(l.node);
            const assigns = py.assignmentsIn(scope);
            const args = l.node.childForFieldName('arguments');
            if (!args) continue;
            const seen = new Set<string>();
            for (const n of args.descendantsOfType(['identifier', 'subscript'])) {
              if (n.type === 'subscript') {
                // A strided column view handed to a kernel: the kernel sees every other element.
                if (COLUMN.test(n.text) && py.isDevice(n.childForFieldName('value'))) {
                  ctx.report({ node: n, messageId: 'python', data: { code: quote(n), k: 2 }, fix: { description: fixText } });
                }
                continue;
              }
              if (seen.has(n.text) || n.parent?.type === 'subscript') continue;
              seen.add(n.text);
              const vals = assigns.get(n.text) ?? [];
              const v = vals.filter((a) => a.node.startIndex < l.node.startIndex).pop()?.value;
              if (!v || !AOS_PY.test(v.text) || !py.isDevice(v)) continue;
              const k = /\[[^\]]*,[^\]]*,[^\]]*\]|,\s*3\s*\)?\s*\)$/.test(v.text) ? 3 : 2;
              ctx.report({ node: n, messageId: 'python', data: { code: quote(v), k }, fix: { description: fixText } });
            }
          }
          return;
        }
        const m = ctx.get(cudaModel);
        const structs = structsWithXY(ctx.source.root);
        for (const f of m.functions) {
          if (!f.isKernel || !f.body) continue;
          for (const p of f.params) {
            const type = p.childForFieldName('type')?.text.replace(/\b(const|struct|class)\b/g, '').trim() ?? '';
            const decl = p.childForFieldName('declarator');
            if (!decl || !/^\*|pointer_declarator/.test(decl.type === 'pointer_declarator' ? 'pointer_declarator' : decl.text)) continue;
            const name = decl.descendantsOfType('identifier').pop()?.text ?? '';
            let what = '';
            let k = 2;
            if (structs.has(type)) {
              what = `a pointer to struct \`${type}\` with x/y fields`;
              // Adjacent threads reading one field are sizeof(struct) apart: stride = number of fields.
              k = structs.get(type)!;
            }
            else if (VEC.test(type) && coordName(name, vocab)) {
              what = `\`${type}\` per point`;
              k = Number(type.slice(-1));
            }
            if (!what) continue;
            ctx.report({ node: p, messageId: 'param', data: { code: quote(p), what, k }, fix: { description: fixText } });
          }
          // Interleaved scalars: x at 2i, y at 2i+1 on one coordinate array.
          const byArray = new Map<string, { node: SyntaxNode; k: number; offsets: Set<string> }>();
          for (const s of f.body.descendantsOfType('subscript_expression')) {
            const arr = s.childForFieldName('argument')?.text ?? '';
            const idx = s.childForFieldName('indices')?.text.replace(/^\[|\]$/g, '').trim() ?? s.childForFieldName('index')?.text ?? '';
            const mm = INTERLEAVED.exec(idx);
            if (!mm || !/^\w+$/.test(arr) || !coordName(arr, vocab)) continue;
            const k = Number(mm[1] ?? mm[4]);
            const e = byArray.get(arr) ?? { node: s, k, offsets: new Set<string>() };
            e.offsets.add(mm[5] ?? '0');
            byArray.set(arr, e);
          }
          for (const [name, e] of byArray) {
            if (e.offsets.size < 2) continue;
            ctx.report({ node: e.node, messageId: 'interleaved', data: { code: quote(e.node), name, k: e.k }, fix: { description: fixText } });
          }
        }
      },
    };
  },
});

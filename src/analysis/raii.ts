import type { SyntaxNode } from '../core/types.js';
import type { ApiCall, CudaModel } from './cuda.js';
import { calleePath, contains } from './syntax.js';

/**
 * RAII buffer wrappers of CUDA C++ host code: a class whose constructor allocates (`cudaMalloc`,
 * `cudaMallocHost`, ...) turns every construction of the class into that API call, so a
 * `DeviceBuffer tmp(bytes);` inside a loop allocates (and, through the destructor, frees) once per
 * iteration. Same-source classes only; library types come from a vocabulary (`raw_alloc_types`).
 */

export interface Construction {
  /** The declaration, call or `new` expression that constructs the object. */
  node: SyntaxNode;
  /** The constructed type, without template arguments (`thrust::device_vector`, `DeviceBuffer`). */
  type: string;
  /** Template arguments written at the construction (`<float>` → 1), for allocator-parameterized types. */
  templateArgs: number;
}

const CLASS_TYPES = ['class_specifier', 'struct_specifier'];

function declaratorOf(fn: SyntaxNode): SyntaxNode | null {
  let d = fn.childForFieldName('declarator');
  while (d && d.type !== 'function_declarator') d = d.childForFieldName('declarator') ?? d.namedChildren[0] ?? null;
  return d?.childForFieldName('declarator') ?? null;
}

/** Class that owns a member function (in-class definition or `Owner::name`) and the member's name. */
function ownerOf(fn: SyntaxNode): { owner: string | null; name: string } {
  const d = declaratorOf(fn);
  if (!d) return { owner: null, name: '' };
  if (d.type === 'qualified_identifier') {
    const scope = d.childForFieldName('scope')?.text.split('::').pop() ?? null;
    return { owner: scope?.replace(/<.*$/s, '') ?? null, name: d.childForFieldName('name')?.text ?? '' };
  }
  let p = fn.parent;
  while (p && !CLASS_TYPES.includes(p.type)) {
    if (p.type === 'function_definition' || p.type === 'translation_unit') return { owner: null, name: d.text };
    p = p.parent;
  }
  return { owner: p?.childForFieldName('name')?.text ?? null, name: d.text };
}

/**
 * Classes of the source whose constructor calls an API of `vocab`, directly or through one member
 * function of the same class (`DeviceBuffer(size_t n) { allocate(n); }`), with that call.
 */
export function allocatingTypes(m: CudaModel, vocab: readonly string[]): Map<string, ApiCall> {
  const out = new Map<string, ApiCall>();
  const hits = m.callsMatching(vocab);
  if (!hits.length) return out;
  const members = m.functions.map((f) => ({ f, ...ownerOf(f.node) })).filter((x) => x.owner);
  for (const mem of members) {
    if (mem.name !== mem.owner || !mem.f.body) continue;
    const body = mem.f.body;
    let via = hits.find((c) => contains(body, c.node) && m.functionOf(c.node)?.node.id === mem.f.node.id);
    if (!via) {
      const called = new Set(body.descendantsOfType('call_expression').map((c) => calleePath(c.childForFieldName('function'))?.replace(/^this\./, '') ?? ''));
      for (const other of members) {
        if (other.owner !== mem.owner || other.name === mem.owner || !called.has(other.name) || !other.f.body) continue;
        via = hits.find((c) => contains(other.f.body!, c.node));
        if (via) break;
      }
    }
    if (via && mem.owner && !out.has(mem.owner)) out.set(mem.owner, via);
  }
  return out;
}

const stripTemplate = (t: string) => t.replace(/\s+/g, '').replace(/<.*$/s, '').replace(/^::/, '');
const templateArgCount = (n: SyntaxNode | null | undefined): number => n?.descendantsOfType('template_argument_list')[0]?.namedChildren.length ?? 0;

/**
 * Constructions, inside function bodies, of the given types: `T x(args);`, `T x{args};`, `T x = v;`,
 * `T(args)`, `std::make_unique<T>(args)` / `make_shared`, `new T(args)`. Function-local `static`
 * objects are constructed once and are left out.
 */
export function constructionsOf(m: CudaModel, types: ReadonlySet<string>): Construction[] {
  const out: Construction[] = [];
  if (!types.size) return out;
  const root = m.source.root;
  for (const d of root.descendantsOfType('declaration')) {
    if (!m.functionOf(d)) continue;
    if (d.children.some((c) => c.type === 'storage_class_specifier' && c.text === 'static')) continue;
    const typeNode = d.childForFieldName('type');
    const type = stripTemplate(typeNode?.text ?? '');
    if (!types.has(type)) continue;
    const constructs = d.namedChildren.some((c) => {
      // `T x(bytes);` parses as a function declaration (the most vexing parse); in a body it is an object.
      if (c.type === 'function_declarator') return c.childForFieldName('declarator')?.type === 'identifier';
      if (c.type !== 'init_declarator' || c.childForFieldName('declarator')?.type !== 'identifier') return false;
      const v = c.childForFieldName('value');
      // `T x = T(n);` is reported at the call.
      return !!v && !(v.type === 'call_expression' && stripTemplate(calleePath(v.childForFieldName('function')) ?? '') === type);
    });
    if (constructs) out.push({ node: d, type, templateArgs: templateArgCount(typeNode) });
  }
  for (const c of m.calls) {
    const fn = c.node.childForFieldName('function');
    const path = stripTemplate(c.path);
    if (types.has(path)) {
      out.push({ node: c.node, type: path, templateArgs: templateArgCount(fn) });
      continue;
    }
    if (/^(std::)?make_(unique|shared)$/.test(path)) {
      const targs = fn?.descendantsOfType('template_argument_list')[0];
      const t = stripTemplate(targs?.namedChildren[0]?.text ?? '');
      if (types.has(t)) out.push({ node: c.node, type: t, templateArgs: templateArgCount(targs?.namedChildren[0]) });
    }
  }
  for (const n of root.descendantsOfType('new_expression')) {
    const t = n.childForFieldName('type');
    const type = stripTemplate(t?.text ?? '');
    if (types.has(type) && m.functionOf(n)) out.push({ node: n, type, templateArgs: templateArgCount(t) });
  }
  return out.sort((a, b) => a.node.startIndex - b.node.startIndex);
}

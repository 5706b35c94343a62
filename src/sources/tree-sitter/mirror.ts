import Parser from 'tree-sitter';

/**
 * A compact JS mirror of each syntax tree, so node access stops crossing into native code.
 *
 * Every getter of the tree-sitter 0.25 Node bindings is an N-API call (~0.1–0.3 µs), and every node
 * it hands back is a fresh JS object that the binding registers in a native cache with a weak
 * reference and a finalizer (~1 µs, plus GC work). The checks touch the same nodes many times
 * (`parent`, `childForFieldName`, `children`, `text`), so the review spent most of its time there.
 *
 * One TreeCursor walk per tree (about as long as the parse) records, in pre-order, each node's type
 * id, start and end index, field id, parent and last descendant in typed arrays. Node objects stay
 * `SyntaxNode`s of the binding (same classes and prototypes, so the checks need no edit), but they are
 * created lazily from the mirror, one object per node (identity holds: `a === b` for the same node),
 * and their hot getters answer from the arrays. The native transfer fields of a node are filled in
 * only when a getter the mirror does not serve needs them (`walk()`, `descendantForIndex`, ...):
 * then a cursor jumps to the node's pre-order index. Nodes that native code returns are mapped back to
 * the mirror's object, so there is still one object per node.
 *
 * `id` is a synthetic number, unique across live trees (tree serial × 2^26 + pre-order index), not
 * the native pointer: nothing may mix the two, and every node object reports the synthetic one.
 */
type SN = Parser.SyntaxNode;
/** A node object: the binding's transfer fields in elements 0..5 (once realized), its pre-order index in `__mi`. */
type Node = SN & { [k: number]: number; __mi?: number; tree: Tree };
type Tree = Parser.Tree & { input?: unknown; language: Lang; __mirror?: Mirror };
type Lang = { nodeSubclasses: Array<new (tree: Tree) => SN> };
type Cursor = Parser.TreeCursor & { gotoDescendant(i: number): void };

const ERROR_TYPE = 0xffff;
// A named property, not element 6 next to the binding's transfer fields: an element that far in makes
// V8 allocate a holey backing store for every node object (about 4x slower to create, 2x to read).
const SLOT = '__mi' as const;
const TREE_STRIDE = 2 ** 26;

const SyntaxNodeClass = (Parser as unknown as { SyntaxNode: new (tree: Tree) => SN }).SyntaxNode;
const proto = SyntaxNodeClass.prototype as unknown as Record<string, unknown>;
const treeProto = (Parser as unknown as { Tree: { prototype: object } }).Tree.prototype;
const cursorProto = (Parser as unknown as { TreeCursor: { prototype: object } }).TreeCursor.prototype;

function getter(o: object, name: string): ((this: unknown) => unknown) | undefined {
  return Object.getOwnPropertyDescriptor(o, name)?.get as ((this: unknown) => unknown) | undefined;
}
const native = {
  rootNode: getter(treeProto, 'rootNode')!,
  currentNode: getter(cursorProto, 'currentNode')!,
  startIndex: getter(proto, 'startIndex')!,
  endIndex: getter(proto, 'endIndex')!,
  typeId: getter(proto, 'typeId')!,
  id: getter(proto, 'id')!,
  walk: proto.walk as (this: SN) => Cursor,
};
/** Native getters and methods, kept for verifyTree. */
const orig = {
  isMissing: getter(proto, 'isMissing')!,
  hasError: getter(proto, 'hasError')!,
  parent: getter(proto, 'parent')!,
  children: getter(proto, 'children')!,
  namedChildren: getter(proto, 'namedChildren')!,
  nextSibling: getter(proto, 'nextSibling')!,
  previousSibling: getter(proto, 'previousSibling')!,
  nextNamedSibling: getter(proto, 'nextNamedSibling')!,
  previousNamedSibling: getter(proto, 'previousNamedSibling')!,
  childForFieldName: proto.childForFieldName as (this: unknown, name: string) => SN | null,
  childrenForFieldName: proto.childrenForFieldName as (this: unknown, name: string) => SN[],
};
let fieldNamesOf: ((language: unknown) => string[]) | null = null;
/** Every field name of the tree's language (from the binding, when it can be loaded). */
function bindingFieldNames(t: Tree): string[] | null {
  if (!fieldNamesOf) return null;
  try {
    return fieldNamesOf(t.language).filter((x) => typeof x === 'string' && x);
  } catch {
    return null;
  }
}
export function setFieldNameSource(f: (language: unknown) => string[]): void {
  fieldNamesOf = f;
}

/** Per language (keyed by its node-class table): type names, named flags and field names by id. */
interface NodeTypeInfo {
  type: string;
  named: boolean;
  fields?: Record<string, unknown>;
}
interface LangInfo {
  /** Filled from the whole symbol table by the native walker (otherwise type by type as the JS walk meets them). */
  complete?: boolean;
  typeName: string[];
  named: boolean[];
  /** Types that node-types.json lists without fields (unknown types and ERROR count as having some). */
  fieldless: boolean[];
  fieldName: string[];
  fieldId: Map<string, number>;
  typeIds: Map<string, number[]>;
}
let langs = new WeakMap<object, LangInfo>();
function langInfo(tree: Tree): LangInfo {
  const key = tree.language as object;
  let l = langs.get(key);
  if (!l) langs.set(key, (l = { typeName: [], named: [], fieldless: [], fieldName: [], fieldId: new Map(), typeIds: new Map() }));
  return l;
}

let treeSerial = 0;
let installed = false;

export interface Mirror {
  tree: Tree;
  lang: LangInfo;
  n: number;
  base: number;
  type: Uint16Array;
  start: Uint32Array;
  end: Uint32Array;
  field: Uint16Array;
  parent: Int32Array;
  /** Pre-order index of the last node in each node's subtree (itself for a leaf). */
  last: Int32Array;
  /** Zero-width nodes the parser inserted (MISSING). */
  missing: Uint8Array;
  nodes: Array<SN | undefined>;
  byType?: Map<number, Int32Array>;
  byKey: Map<string, SN[]>;
  lineStarts?: Int32Array;
  errPrefix?: Int32Array;
  cursor?: Cursor;
}

function grow<T extends Uint16Array | Uint32Array | Int32Array | Uint8Array>(a: T, cap: number): T {
  const b = new (a.constructor as new (n: number) => T)(cap);
  b.set(a);
  return b;
}

/** The native walker (native/mirror.c), when its addon is built and agrees with the JS walk. */
export interface NativeWalker {
  walk(idLo: number, idHi: number): ArrayBuffer | undefined;
  language(idLo: number, idHi: number): { types: Array<string | undefined>; named: boolean[]; fields: Array<string | undefined> } | undefined;
}
let nativeWalker: NativeWalker | null = null;
export function setNativeWalker(w: NativeWalker | null): void {
  nativeWalker = w;
  // Type and field tables filled by a walker that is being dropped are not trusted either.
  langs = new WeakMap();
}
export function nativeWalkerInUse(): boolean {
  return nativeWalker !== null;
}
export function getNativeWalker(): NativeWalker | null {
  return nativeWalker;
}

function fillLanguage(lang: LangInfo, info: NonNullable<ReturnType<NativeWalker['language']>>): void {
  info.types.forEach((name, t) => {
    if (name === undefined) return;
    lang.typeName[t] = name;
    lang.named[t] = info.named[t];
    const ids = lang.typeIds.get(name) ?? [];
    if (!ids.includes(t)) ids.push(t);
    lang.typeIds.set(name, ids);
  });
  lang.typeName[ERROR_TYPE] = 'ERROR';
  lang.named[ERROR_TYPE] = true;
  const errIds = lang.typeIds.get('ERROR') ?? [];
  if (!errIds.includes(ERROR_TYPE)) errIds.push(ERROR_TYPE);
  lang.typeIds.set('ERROR', errIds);
  info.fields.forEach((name, f) => {
    if (name === undefined) return;
    lang.fieldName[f] = name;
    lang.fieldId.set(name, f);
  });
  lang.complete = true;
}

/** The arrays from one native call (21 bytes per node, layout in native/mirror.c), or null. */
function buildNative(tree: Tree, lang: LangInfo, root: Node): Omit<Mirror, 'tree' | 'lang' | 'base' | 'nodes' | 'byKey'> | null {
  if (!nativeWalker || root[0] === undefined) return null;
  const ab = nativeWalker.walk(root[0], root[1]);
  if (!ab || ab.byteLength % 21 !== 0) return null;
  if (!lang.complete) {
    const info = nativeWalker.language(root[0], root[1]);
    if (!info) return null;
    fillLanguage(lang, info);
  }
  const n = ab.byteLength / 21;
  return {
    n,
    start: new Uint32Array(ab, 0, n),
    end: new Uint32Array(ab, 4 * n, n),
    parent: new Int32Array(ab, 8 * n, n),
    last: new Int32Array(ab, 12 * n, n),
    type: new Uint16Array(ab, 16 * n, n),
    field: new Uint16Array(ab, 18 * n, n),
    missing: new Uint8Array(ab, 20 * n, n),
  };
}

/** True while build() runs: the binding's own walk() reads `currentNode`, which must not recurse into a build. */
let building = false;

function build(tree: Tree): Mirror {
  const lang = langInfo(tree);
  const rootNative = native.rootNode.call(tree) as SN;
  const arrays = buildNative(tree, lang, rootNative as Node);
  if (arrays) return finish({ ...arrays, tree, lang, base: ++treeSerial * TREE_STRIDE, nodes: new Array(arrays.n), byKey: new Map() }, rootNative);
  building = true;
  let c: Cursor;
  try {
    c = native.walk.call(rootNative) as Cursor;
  } finally {
    building = false;
  }
  let cap = 256;
  let type = new Uint16Array(cap);
  let start = new Uint32Array(cap);
  let end = new Uint32Array(cap);
  let field = new Uint16Array(cap);
  let parent = new Int32Array(cap);
  let last = new Int32Array(cap);
  let missing = new Uint8Array(cap);
  const stack: number[] = [];
  let n = 0;
  for (;;) {
    if (n === cap) {
      cap *= 2;
      type = grow(type, cap);
      start = grow(start, cap);
      end = grow(end, cap);
      field = grow(field, cap);
      parent = grow(parent, cap);
      last = grow(last, cap);
      missing = grow(missing, cap);
    }
    const t = c.nodeTypeId as number;
    if (lang.typeName[t] === undefined) {
      lang.typeName[t] = c.nodeType;
      lang.named[t] = c.nodeIsNamed;
      const info = t === ERROR_TYPE ? undefined : (tree.language as unknown as { nodeTypeInfo?: NodeTypeInfo[] }).nodeTypeInfo?.find((x) => x.type === c.nodeType && x.named === lang.named[t]);
      lang.fieldless[t] = info !== undefined && (!info.fields || Object.keys(info.fields).length === 0);
      const ids = lang.typeIds.get(c.nodeType) ?? [];
      ids.push(t);
      lang.typeIds.set(c.nodeType, ids);
    }
    type[n] = t;
    const s = c.startIndex;
    const e = c.endIndex;
    start[n] = s;
    end[n] = e;
    if (s === e && (c as unknown as { nodeIsMissing: boolean }).nodeIsMissing) missing[n] = 1;
    // Only the children of a type that has fields can carry one (node-types.json lists every field
    // a type has, inherited ones included): elsewhere the call is skipped.
    const pt = stack.length ? type[stack[stack.length - 1]] : -1;
    const f = pt >= 0 && !lang.fieldless[pt] ? (c as unknown as { currentFieldId: number | undefined }).currentFieldId : undefined;
    if (f !== undefined) {
      field[n] = f;
      if (lang.fieldName[f] === undefined) {
        const name = c.currentFieldName;
        lang.fieldName[f] = name;
        lang.fieldId.set(name, f);
      }
    }
    parent[n] = stack.length ? stack[stack.length - 1] : -1;
    last[n] = n;
    const me = n++;
    if (c.gotoFirstChild()) {
      stack.push(me);
      continue;
    }
    let done = false;
    while (!c.gotoNextSibling()) {
      if (!c.gotoParent()) {
        done = true;
        break;
      }
      last[stack.pop()!] = n - 1;
    }
    if (done) break;
  }
  const m: Mirror = {
    tree,
    lang,
    n,
    base: ++treeSerial * TREE_STRIDE,
    type,
    start,
    end,
    field,
    parent,
    last,
    missing,
    nodes: new Array(n),
    byKey: new Map(),
  };
  return finish(m, rootNative);
}

function finish(m: Mirror, rootNative: SN): Mirror {
  if (installed) wrapSubclasses(m.tree.language);
  // The native root object already exists (the binding caches it): it becomes the mirror's root.
  (rootNative as Node)[SLOT] = 0;
  m.nodes[0] = rootNative;
  return m;
}

export function mirrorOf(tree: Tree): Mirror {
  return tree.__mirror ?? (tree.__mirror = build(tree));
}

/** The one node object for pre-order index i. */
function nodeAt(m: Mirror, i: number): SN {
  let o = m.nodes[i];
  if (o === undefined) {
    const t = m.type[i];
    const Cls = t === ERROR_TYPE ? SyntaxNodeClass : (m.tree.language.nodeSubclasses[t] ?? SyntaxNodeClass);
    // The binding's constructor only defines `tree` (with defineProperty, the slow way): same
    // prototype and property, made directly.
    const n = Object.create(Cls.prototype) as Node;
    n.tree = m.tree;
    n[SLOT] = i;
    o = n;
    m.nodes[i] = o;
  }
  return o;
}

function lowerBound(a: Uint32Array, n: number, v: number): number {
  let lo = 0;
  let hi = n;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (a[mid] < v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * Pre-order index of a node object. Objects created by native code (a cursor's `currentNode`,
 * `descendantForIndex`) are found by range and type; same-range candidates are told apart by their
 * native ids.
 */
function indexOf(node: SN): number {
  const i = (node as Node)[SLOT];
  if (i !== undefined) return i;
  const m = mirrorOf(node.tree as Tree);
  const s = native.startIndex.call(node) as number;
  const e = native.endIndex.call(node) as number;
  const t = native.typeId.call(node) as number;
  const cand: number[] = [];
  // Pre-order start offsets never decrease, so the nodes starting at s are one run.
  for (let k = lowerBound(m.start, m.n, s); k < m.n && m.start[k] === s; k++) if (m.end[k] === e && m.type[k] === t) cand.push(k);
  let found = cand.length === 1 ? cand[0] : -1;
  if (found < 0) {
    const id = native.id.call(node);
    for (const k of cand) {
      if (native.id.call(realize(m, k)) === id) {
        found = k;
        break;
      }
    }
  }
  if (found < 0) throw new Error('tree mirror: node not found in its tree');
  if (m.nodes[found] === undefined) {
    (node as Node)[SLOT] = found;
    m.nodes[found] = node;
  }
  return found;
}

/** Canonical object for a node that native code returned. */
function adopt<T>(x: T): T {
  if (building) return x;
  if (x && typeof x === 'object' && (x as unknown) instanceof SyntaxNodeClass) {
    const n = x as unknown as SN;
    if ((n as Node)[SLOT] !== undefined) return x;
    const m = mirrorOf(n.tree as Tree);
    return nodeAt(m, indexOf(n)) as unknown as T;
  }
  return x;
}

/** Give a mirror-made node object its native transfer fields (for getters the mirror does not serve). */
function realize(m: Mirror, i: number): SN {
  const o = nodeAt(m, i) as Node;
  if (o[0] === undefined) {
    const c = m.cursor ?? (m.cursor = native.walk.call(nodeAt(m, 0)) as Cursor);
    c.gotoDescendant(i);
    const real = native.currentNode.call(c) as Node;
    for (let k = 0; k < 6; k++) o[k] = real[k];
  }
  return o;
}

function mOf(node: SN): Mirror {
  return (node.tree as Tree).__mirror ?? mirrorOf(node.tree as Tree);
}

function children(m: Mirror, i: number, namedOnly: boolean): SN[] {
  const out: SN[] = [];
  const stop = m.last[i];
  for (let k = i + 1; k <= stop; k = m.last[k] + 1) if (!namedOnly || m.lang.named[m.type[k]]) out.push(nodeAt(m, k));
  return out;
}

function childIndices(m: Mirror, i: number): number[] {
  const out: number[] = [];
  const stop = m.last[i];
  for (let k = i + 1; k <= stop; k = m.last[k] + 1) out.push(k);
  return out;
}

function lineStarts(m: Mirror): Int32Array {
  if (!m.lineStarts) {
    const text = m.tree.input as string;
    const starts = [0];
    for (let k = text.indexOf('\n'); k >= 0; k = text.indexOf('\n', k + 1)) starts.push(k + 1);
    m.lineStarts = Int32Array.from(starts);
  }
  return m.lineStarts;
}

function point(m: Mirror, index: number): { row: number; column: number } {
  const ls = lineStarts(m);
  let lo = 0;
  let hi = ls.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (ls[mid] <= index) lo = mid;
    else hi = mid - 1;
  }
  return { row: lo, column: index - ls[lo] };
}

function errPrefix(m: Mirror): Int32Array {
  if (!m.errPrefix) {
    const p = new Int32Array(m.n + 1);
    for (let k = 0; k < m.n; k++) p[k + 1] = p[k] + (m.type[k] === ERROR_TYPE || m.missing[k] ? 1 : 0);
    m.errPrefix = p;
  }
  return m.errPrefix;
}

/** ERROR and MISSING nodes, outermost only, as [start, end) string ranges (what errorRegions needs). */
export function errorNodeRanges(root: SN): Array<[number, number]> {
  const m = mOf(root);
  const i = indexOf(root);
  const out: Array<[number, number]> = [];
  const p = errPrefix(m);
  if (p[m.last[i] + 1] - p[i] === 0) return out;
  for (let k = i; k <= m.last[i]; ) {
    if (m.type[k] === ERROR_TYPE || m.missing[k]) {
      out.push([m.start[k], Math.max(m.end[k], m.start[k] + 1)]);
      k = m.last[k] + 1;
    } else if (p[m.last[k] + 1] - p[k] === 0) {
      k = m.last[k] + 1;
    } else k++;
  }
  return out;
}

function typeIdList(m: Mirror, types: readonly string[]): number[] {
  const ids: number[] = [];
  for (const t of types) for (const id of m.lang.typeIds.get(t) ?? []) ids.push(id);
  return ids;
}

/** Pre-order indices of each type id, built once per tree by a counting sort over the type array. */
const typeCount = new Int32Array(0x10000);
function byType(m: Mirror): Map<number, Int32Array> {
  if (!m.byType) {
    const type = m.type;
    const n = m.n;
    for (let k = 0; k < n; k++) typeCount[type[k]]++;
    const lists = new Map<number, Int32Array>();
    const fill: Array<{ list: Int32Array; at: number } | undefined> = [];
    for (let k = 0; k < n; k++) {
      const t = type[k];
      let f = fill[t];
      if (f === undefined) {
        f = fill[t] = { list: new Int32Array(typeCount[t]), at: 0 };
        lists.set(t, f.list);
        typeCount[t] = 0;
      }
      f.list[f.at++] = k;
    }
    m.byType = lists;
  }
  return m.byType;
}

function indicesOfTypes(m: Mirror, types: readonly string[], from: number, to: number): number[] {
  const bt = byType(m);
  const out: number[] = [];
  const ids = typeIdList(m, types);
  for (const id of ids) {
    const list = bt.get(id);
    if (!list) continue;
    let lo = 0;
    let hi = list.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (list[mid] < from) lo = mid + 1;
      else hi = mid;
    }
    for (let k = lo; k < list.length && list[k] <= to; k++) out.push(list[k]);
  }
  if (ids.length > 1) out.sort((a, b) => a - b);
  return out;
}

function uniqueTypes(types: string | readonly string[]): string[] {
  return typeof types === 'string' ? [types] : [...new Set(types)];
}

/** Install the mirror-backed getters. */
export function installMirror(): void {
  installed = true;
  const def = (o: object, name: string, get: (this: SN) => unknown) => Object.defineProperty(o, name, { configurable: true, get });
  const fn = (o: object, name: string, value: (this: SN, ...a: never[]) => unknown) => Object.defineProperty(o, name, { configurable: true, writable: true, value });

  def(proto, 'id', function () {
    const m = mOf(this);
    return m.base + indexOf(this);
  });
  def(proto, 'typeId', function () {
    return mOf(this).type[indexOf(this)];
  });
  def(proto, 'type', function () {
    const m = mOf(this);
    return m.lang.typeName[m.type[indexOf(this)]];
  });
  def(proto, 'isNamed', function () {
    const m = mOf(this);
    return m.lang.named[m.type[indexOf(this)]];
  });
  def(proto, 'isError', function () {
    return mOf(this).type[indexOf(this)] === ERROR_TYPE;
  });
  def(proto, 'isMissing', function () {
    return mOf(this).missing[indexOf(this)] === 1;
  });
  def(proto, 'hasError', function () {
    // A tree nobody has walked yet (the raw parse of the benchmark asks only this) is not mirrored
    // for it: the root answers natively.
    if (!(this.tree as Tree).__mirror && (this as Node)[0] !== undefined) return orig.hasError.call(this);
    const m = mOf(this);
    const i = indexOf(this);
    const p = errPrefix(m);
    return p[m.last[i] + 1] - p[i] > 0;
  });
  def(proto, 'startIndex', function () {
    return mOf(this).start[indexOf(this)];
  });
  def(proto, 'endIndex', function () {
    return mOf(this).end[indexOf(this)];
  });
  const nativeText = getter(proto, 'text')!;
  def(proto, 'text', function () {
    const m = mOf(this);
    const input = m.tree.input;
    if (typeof input !== 'string') return nativeText.call(this);
    const i = indexOf(this);
    return input.substring(m.start[i], m.end[i]);
  });
  const nativeStartPos = getter(proto, 'startPosition')!;
  const nativeEndPos = getter(proto, 'endPosition')!;
  def(proto, 'startPosition', function () {
    const m = mOf(this);
    const i = indexOf(this);
    if (typeof m.tree.input !== 'string') return nativeStartPos.call(realize(m, i));
    return point(m, m.start[i]);
  });
  def(proto, 'endPosition', function () {
    const m = mOf(this);
    const i = indexOf(this);
    if (typeof m.tree.input !== 'string') return nativeEndPos.call(realize(m, i));
    return point(m, m.end[i]);
  });
  def(proto, 'parent', function () {
    const m = mOf(this);
    const p = m.parent[indexOf(this)];
    return p < 0 ? null : nodeAt(m, p);
  });
  def(proto, 'children', function () {
    return children(mOf(this), indexOf(this), false);
  });
  def(proto, 'namedChildren', function () {
    return children(mOf(this), indexOf(this), true);
  });
  def(proto, 'childCount', function () {
    return childIndices(mOf(this), indexOf(this)).length;
  });
  def(proto, 'namedChildCount', function () {
    return children(mOf(this), indexOf(this), true).length;
  });
  def(proto, 'descendantCount', function () {
    const m = mOf(this);
    const i = indexOf(this);
    return m.last[i] - i + 1;
  });
  fn(proto, 'child', function (this: SN, k: number) {
    const m = mOf(this);
    const c = childIndices(m, indexOf(this))[k];
    return c === undefined ? null : nodeAt(m, c);
  });
  fn(proto, 'namedChild', function (this: SN, k: number) {
    return children(mOf(this), indexOf(this), true)[k] ?? null;
  });
  def(proto, 'firstChild', function () {
    const m = mOf(this);
    const i = indexOf(this);
    return m.last[i] > i ? nodeAt(m, i + 1) : null;
  });
  def(proto, 'lastChild', function () {
    const m = mOf(this);
    const cs = childIndices(m, indexOf(this));
    return cs.length ? nodeAt(m, cs[cs.length - 1]) : null;
  });
  def(proto, 'firstNamedChild', function () {
    return children(mOf(this), indexOf(this), true)[0] ?? null;
  });
  def(proto, 'lastNamedChild', function () {
    const cs = children(mOf(this), indexOf(this), true);
    return cs[cs.length - 1] ?? null;
  });
  // Siblings: natively, tree-sitter finds them by position, and around zero-width (MISSING) nodes
  // that can differ from child order; under a parent with an error the native getter answers.
  const sibling = (self: SN, name: 'nextSibling' | 'previousSibling' | 'nextNamedSibling' | 'previousNamedSibling', step: 1 | -1, namedOnly: boolean): SN | null => {
    const m = mOf(self);
    const i = indexOf(self);
    const p = m.parent[i];
    if (p < 0) return null;
    const ep = errPrefix(m);
    if (ep[m.last[p] + 1] - ep[p] > 0) return adopt(orig[name].call(realize(m, i)) as SN | null);
    const cs = childIndices(m, p);
    for (let k = cs.indexOf(i) + step; k >= 0 && k < cs.length; k += step) if (!namedOnly || m.lang.named[m.type[cs[k]]]) return nodeAt(m, cs[k]);
    return null;
  };
  def(proto, 'nextSibling', function () {
    return sibling(this, 'nextSibling', 1, false);
  });
  def(proto, 'previousSibling', function () {
    return sibling(this, 'previousSibling', -1, false);
  });
  def(proto, 'nextNamedSibling', function () {
    return sibling(this, 'nextNamedSibling', 1, true);
  });
  def(proto, 'previousNamedSibling', function () {
    return sibling(this, 'previousNamedSibling', -1, true);
  });
  fn(proto, 'childForFieldName', function (this: SN, name: string) {
    const m = mOf(this);
    const f = m.lang.fieldId.get(name);
    if (f === undefined) return null;
    const i = indexOf(this);
    // Natively this reads the node's own production, and an ERROR node has none; the cursor (and so
    // the mirror, and childrenForFieldName) still sees fields of the hidden rules inside it.
    if (m.type[i] === ERROR_TYPE) return null;
    const stop = m.last[i];
    for (let k = i + 1; k <= stop; k = m.last[k] + 1) if (m.field[k] === f) return nodeAt(m, k);
    return null;
  });
  fn(proto, 'childrenForFieldName', function (this: SN, name: string) {
    const m = mOf(this);
    const f = m.lang.fieldId.get(name);
    const out: SN[] = [];
    if (f === undefined) return out;
    const i = indexOf(this);
    const stop = m.last[i];
    for (let k = i + 1; k <= stop; k = m.last[k] + 1) if (m.field[k] === f) out.push(nodeAt(m, k));
    return out;
  });
  const nativeDescendants = proto.descendantsOfType as (this: SN, types: string | string[], start?: unknown, end?: unknown) => SN[];
  fn(proto, 'descendantsOfType', function (this: SN, types: string | string[], start?: unknown, end?: unknown) {
    const m = mOf(this);
    const i = indexOf(this);
    if (start !== undefined || end !== undefined) return nativeDescendants.call(realize(m, i), types, start, end).map(adopt);
    const list = uniqueTypes(types);
    if (i === 0) {
      // Root queries repeat across checks: cached per type set, handed out as copies.
      const key = list.length === 1 ? list[0] : [...list].sort().join('\0');
      let r = m.byKey.get(key);
      if (!r) m.byKey.set(key, (r = indicesOfTypes(m, list, 0, m.n - 1).map((k) => nodeAt(m, k))));
      return r.slice();
    }
    return indicesOfTypes(m, list, i, m.last[i]).map((k) => nodeAt(m, k));
  });
  fn(proto, 'toJSON', function (this: SN) {
    return { type: this.type, startPosition: this.startPosition, endPosition: this.endPosition, childCount: this.childCount };
  });

  // Everything else (walk, descendantForIndex, closest, toString, field getters of the node
  // subclasses, ...) runs natively on the node's real transfer fields, and node results are mapped
  // back to the mirror's objects.
  const served = new Set(['constructor', 'id', 'typeId', 'type', 'isNamed', 'isError', 'isMissing', 'hasError', 'startIndex', 'endIndex', 'text', 'startPosition', 'endPosition', 'parent', 'children', 'namedChildren', 'childCount', 'namedChildCount', 'descendantCount', 'child', 'namedChild', 'firstChild', 'lastChild', 'firstNamedChild', 'lastNamedChild', 'nextSibling', 'previousSibling', 'nextNamedSibling', 'previousNamedSibling', 'childForFieldName', 'childrenForFieldName', 'descendantsOfType', 'toJSON', 'tree']);
  wrapRest(proto, served);
  def(treeProto as unknown as SN, 'rootNode', function (this: unknown) {
    const t = this as Tree;
    if (t.__mirror) return nodeAt(t.__mirror, 0);
    // The mirror is built on the first access that needs it; the binding keeps handing out this same
    // root object while it is alive, and build() adopts it as node 0.
    const r = native.rootNode.call(t) as Node;
    r[SLOT] = 0;
    return r;
  });
  def(cursorProto as unknown as SN, 'currentNode', function (this: unknown) {
    return adopt(native.currentNode.call(this));
  });
}

const wrapped = new WeakSet<object>();
function wrapRest(o: Record<string, unknown>, served: Set<string>): void {
  if (wrapped.has(o)) return;
  wrapped.add(o);
  for (const name of Object.getOwnPropertyNames(o)) {
    if (served.has(name)) continue;
    const d = Object.getOwnPropertyDescriptor(o, name)!;
    // The binding defines the field getters of node subclasses (`bodyNode`, ...) non-configurable:
    // they cannot be wrapped and would misread a mirror-made node. Nothing here uses them.
    if (!d.configurable) continue;
    const ready = (self: SN) => realize(mOf(self), indexOf(self));
    const out = (r: unknown) => (Array.isArray(r) ? r.map(adopt) : adopt(r));
    if (d.get) {
      const g = d.get;
      Object.defineProperty(o, name, { configurable: true, enumerable: d.enumerable, get(this: SN) { return out(g.call(ready(this))); } });
    } else if (typeof d.value === 'function') {
      const f = d.value as (...a: unknown[]) => unknown;
      Object.defineProperty(o, name, { configurable: true, writable: true, enumerable: d.enumerable, value(this: SN, ...a: unknown[]) { return out(f.apply(ready(this), a)); } });
    }
  }
}

/** Node subclasses (per language, with field getters such as `bodyNode`) get the same treatment. */
const wrappedLanguages = new WeakSet<object>();
export function wrapSubclasses(language: Lang): void {
  if (wrappedLanguages.has(language)) return;
  wrappedLanguages.add(language);
  for (const Cls of language.nodeSubclasses ?? []) if (Cls && Cls.prototype !== (proto as object)) wrapRest(Cls.prototype as Record<string, unknown>, new Set(['constructor']));
}

/**
 * Compare every mirror answer with the native binding on one tree (load-time self-check and
 * bench/verify-mirror.ts). Uses the captured native getters on realized nodes and compares native ids.
 * Returns the first mismatch, or null.
 */
export function verifyTree(tree: Parser.Tree, deep = true): string | null {
  const t = tree as Tree;
  const m = mirrorOf(t);
  const nid = (x: unknown) => (x ? (native.id.call((x as Node)[SLOT] !== undefined ? realize(m, (x as Node)[SLOT]!) : x) as number) : null);
  const nodeIds = (xs: SN[]) => xs.map(nid).join(',');
  const mIds = (ks: number[]) => ks.map((k) => nid(realize(m, k))).join(',');
  const c = native.walk.call(native.rootNode.call(t) as SN) as Cursor;
  const allFields = deep ? (bindingFieldNames(t) ?? [...m.lang.fieldId.keys()]) : [...m.lang.fieldId.keys()];
  let i = 0;
  for (;;) {
    const real = native.currentNode.call(c) as SN;
    const o = realize(m, i);
    const chk = (what: string, a: unknown, b: unknown) => (a === b ? null : `node ${i} (${m.lang.typeName[m.type[i]]}): ${what}: mirror ${String(a)}, native ${String(b)}`);
    const ls = typeof t.input === 'string';
    let r =
      chk('id', nid(o), nid(real)) ??
      chk('type', m.lang.typeName[m.type[i]], c.nodeType) ??
      chk('isNamed', m.lang.named[m.type[i]], c.nodeIsNamed) ??
      chk('start', m.start[i], c.startIndex) ??
      chk('end', m.end[i], c.endIndex) ??
      (ls ? chk('startPosition', JSON.stringify(point(m, m.start[i])), JSON.stringify(c.startPosition)) : null) ??
      (ls ? chk('endPosition', JSON.stringify(point(m, m.end[i])), JSON.stringify(c.endPosition)) : null) ??
      chk('isMissing', m.missing[i] === 1, orig.isMissing.call(real)) ??
      chk('hasError', errPrefix(m)[m.last[i] + 1] - errPrefix(m)[i] > 0, orig.hasError.call(real)) ??
      chk('parent', m.parent[i] < 0 ? null : nid(realize(m, m.parent[i])), nid(orig.parent.call(real)));
    if (!r && deep) {
      const ks = childIndices(m, i);
      r =
        chk('children', mIds(ks), nodeIds(orig.children.call(real) as SN[])) ??
        chk('namedChildren', mIds(ks.filter((k) => m.lang.named[m.type[k]])), nodeIds(orig.namedChildren.call(real) as SN[])) ??
        chk('nextSibling', nid(getter(proto, 'nextSibling')!.call(o)), nid(orig.nextSibling.call(real))) ??
        chk('previousSibling', nid(getter(proto, 'previousSibling')!.call(o)), nid(orig.previousSibling.call(real))) ??
        chk('nextNamedSibling', nid(getter(proto, 'nextNamedSibling')!.call(o)), nid(orig.nextNamedSibling.call(real))) ??
        chk('previousNamedSibling', nid(getter(proto, 'previousNamedSibling')!.call(o)), nid(orig.previousNamedSibling.call(real)));
      for (const f of allFields) {
        if (r) break;
        const fid = m.lang.fieldId.get(f);
        const mk = fid === undefined || m.type[i] === ERROR_TYPE ? undefined : ks.find((k) => m.field[k] === fid);
        r =
          chk(`childForFieldName(${f})`, mk === undefined ? null : nid(realize(m, mk)), nid(orig.childForFieldName.call(real, f))) ??
          chk(`childrenForFieldName(${f})`, mIds(fid === undefined ? [] : ks.filter((k) => m.field[k] === fid)), nodeIds(orig.childrenForFieldName.call(real, f)));
      }
    }
    if (r) return r;
    i++;
    if (c.gotoFirstChild()) continue;
    let done = false;
    while (!c.gotoNextSibling()) {
      if (!c.gotoParent()) {
        done = true;
        break;
      }
    }
    if (done) break;
  }
  return i === m.n ? null : `node count: mirror ${m.n}, walk ${i}`;
}

import { createRequire } from 'node:module';
import Parser from 'tree-sitter';
import Python from 'tree-sitter-python';
import { installMirror, setFieldNameSource, setNativeWalker, verifyTree, type NativeWalker } from './mirror.js';

/*
 * Preferred: the tree mirror (mirror.ts), which serves node access from typed arrays built by
 * one walk per tree. It is installed only if it agrees with the native binding on a sample tree
 * (every node: id, type, range, positions, parent, children, fields); otherwise the memoizing
 * patches below are used. GPU_REVIEW_TREE_MIRROR=0 switches the mirror off.
 *
 * The arrays come from the native walker (native/mirror.c, compiled by `npm ci` where a C compiler
 * and node-gyp work) in one call per tree, or else from a TreeCursor walk in JS, which costs about as
 * much as the parse. The native walker is used only if it too agrees with the binding on the sample
 * tree; GPU_REVIEW_NATIVE=0 switches it off.
 */
function loadNativeWalker(): NativeWalker | null {
  if (process.env.GPU_REVIEW_NATIVE === '0') return null;
  const require = createRequire(import.meta.url);
  // From src/sources/tree-sitter (vitest) or dist/src/sources/tree-sitter (the build): the addon is <root>/native/build/Release.
  for (const rel of ['../../../native/build/Release/gpu_review_native.node', '../../../../native/build/Release/gpu_review_native.node']) {
    try {
      const m = require(rel) as Partial<NativeWalker>;
      if (typeof m.walk === 'function' && typeof m.language === 'function') return m as NativeWalker;
    } catch {
      // not built at this place: try the next, then fall back to the JS walk
    }
  }
  return null;
}

const SAMPLE = 'é = "ü😀"\ndef f(x, *a, k=1):\n    """doc"""\n    return [y for y in x if y]  # c\nclass C(B):\n    def g(self): pass\nif (\n';

function sampleAgrees(): boolean {
  try {
    const p = new Parser();
    p.setLanguage(Python as Parser.Language);
    return verifyTree(p.parse(SAMPLE)) === null;
  } catch {
    return false;
  }
}

function mirrorHolds(): boolean {
  try {
    const require = createRequire(import.meta.url);
    const dir = require.resolve('tree-sitter/package.json').replace(/package\.json$/, '');
    const binding = createRequire(dir + 'index.js')('node-gyp-build')(dir) as { getNodeFieldNamesById(l: unknown): string[] };
    setFieldNameSource((l) => binding.getNodeFieldNamesById(l));
  } catch {
    // field names then come from the sample tree itself
  }
  const walker = loadNativeWalker();
  if (walker) {
    setNativeWalker(walker);
    if (sampleAgrees()) return true;
    setNativeWalker(null);
  }
  return sampleAgrees();
}
/** Whether the tree mirror serves node access (set by installTreeSitterPatches). */
export let mirrorInstalled = false;

/**
 * Speed-ups for the tree-sitter 0.25 Node bindings, which every check leans on.
 *
 * - `parent` is found by descending from the root, so it costs O(depth) and an ancestor walk
 *   O(depth²) (minutes on 500-deep nesting): memoized per tree, by node id.
 * - `id` and `startIndex` each cross into native code (~250 ns) although the JS node object already
 *   carries both in its transfer fields: [0..1] the 64-bit id, [2] the start byte (the text is
 *   handed over as UTF-16, so bytes / 2 = string index). A self-check at load time keeps the native
 *   getters if a binding update ever changes that layout.
 */
type Node = Parser.SyntaxNode & Record<number, number>;
const proto = (Parser as unknown as { SyntaxNode: { prototype: object } }).SyntaxNode.prototype;
const native = (name: string) => Object.getOwnPropertyDescriptor(proto, name)?.get;
const nativeId = native('id');
const nativeStart = native('startIndex');
const nativeParent = native('parent');

const fastId = function (this: Node): number {
  return this[1] * 4294967296 + this[0];
};
const fastStart = function (this: Node): number {
  return this[2] / 2;
};

function layoutHolds(): boolean {
  if (!nativeId || !nativeStart) return false;
  try {
    const p = new Parser();
    p.setLanguage(Python as Parser.Language);
    const tree = p.parse('é = "ü😀"\ndef f(x):\n    return [y for y in x if y]\n');
    const cursor = tree.rootNode.walk();
    let n = 0;
    for (;;) {
      const node = cursor.currentNode as Node;
      if (fastId.call(node) !== nativeId.call(node) || fastStart.call(node) !== nativeStart.call(node)) return false;
      n++;
      if (cursor.gotoFirstChild()) continue;
      while (!cursor.gotoNextSibling()) if (!cursor.gotoParent()) return n > 10;
    }
  } catch {
    return false;
  }
}

function patchIdAndStart(): void {
  Object.defineProperty(proto, 'id', { configurable: true, get: fastId });
  Object.defineProperty(proto, 'startIndex', { configurable: true, get: fastStart });
}

const parentCache = new WeakMap<object, Map<number, Parser.SyntaxNode | null>>();
function patchParent(nativeParent: NonNullable<ReturnType<typeof native>>): void {
  Object.defineProperty(proto, 'parent', {
    configurable: true,
    get(this: Parser.SyntaxNode) {
      let cache = parentCache.get(this.tree);
      if (!cache) parentCache.set(this.tree, (cache = new Map()));
      const id = this.id;
      let p = cache.get(id);
      if (p === undefined) {
        p = nativeParent.call(this) as Parser.SyntaxNode | null;
        cache.set(id, p);
      }
      return p;
    },
  });
}

/** Whether the node getters read the JS node's transfer fields (set by installTreeSitterPatches). */
export let fastNodeFields = false;

/*
 * `descendantsOfType` is a native walk of the whole subtree, and checks and models ask for the same
 * node types of the same tree dozens of times (every rule wants the calls). Each tree is walked
 * natively once, for the union of every type asked for so far; later queries, on the root or on a
 * subtree, are answered from that index. Pre-order keeps a subtree's nodes contiguous and start
 * offsets non-decreasing, so a subtree query is two binary searches.
 */
type SN = Parser.SyntaxNode;
const nativeDescendants = (proto as unknown as { descendantsOfType: (this: SN, types: string | string[], start?: unknown, end?: unknown) => SN[] }).descendantsOfType;
const nativeEnd = native('endIndex');
const nativeField = (proto as unknown as { childForFieldName: (this: SN, name: string) => SN | null }).childForFieldName;

interface TreeIndex {
  rootId: number;
  types: Set<string>;
  byType: Map<string, SN[]>;
  pos: Map<number, number>;
  byKey: Map<string, SN[]>;
}
const indexes = new WeakMap<object, TreeIndex>();
/** Every node type any caller has asked for, so the next tree is indexed in one walk. */
const wantedTypes = new Set<string>();
const endCache = new WeakMap<object, Map<number, number>>();
const fieldCache = new WeakMap<object, Map<number, Map<string, SN | null>>>();

function endOf(n: SN): number {
  let cache = endCache.get(n.tree);
  if (!cache) endCache.set(n.tree, (cache = new Map()));
  const id = n.id;
  let e = cache.get(id);
  if (e === undefined) {
    e = nativeEnd!.call(n) as number;
    cache.set(id, e);
  }
  return e;
}

function buildIndex(tree: Parser.Tree, root: SN): TreeIndex {
  const types = new Set(wantedTypes);
  const all = types.size ? nativeDescendants.call(root, [...types]) : [];
  const byType = new Map<string, SN[]>();
  const pos = new Map<number, number>();
  for (const t of types) byType.set(t, []);
  all.forEach((n, i) => {
    pos.set(n.id, i);
    byType.get(n.type)?.push(n);
  });
  const idx: TreeIndex = { rootId: root.id, types, byType, pos, byKey: new Map() };
  indexes.set(tree, idx);
  return idx;
}

function rootQuery(idx: TreeIndex, list: string[], key: string): SN[] {
  let r = idx.byKey.get(key);
  if (!r) {
    if (list.length === 1) r = idx.byType.get(list[0]) ?? [];
    else {
      r = list.flatMap((t) => idx.byType.get(t) ?? []);
      r.sort((a, b) => idx.pos.get(a.id)! - idx.pos.get(b.id)!);
    }
    idx.byKey.set(key, r);
  }
  return r;
}

function lowerBound(list: SN[], start: number): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (list[mid].startIndex < start) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function patchQueries(): void {
  Object.defineProperty(proto, 'endIndex', { configurable: true, get(this: SN) { return endOf(this); } });
  Object.defineProperty(proto, 'descendantsOfType', {
    configurable: true,
    writable: true,
    value: function descendantsOfType(this: SN, types: string | string[], start?: unknown, end?: unknown): SN[] {
      if (start !== undefined || end !== undefined) return nativeDescendants.call(this, types, start, end);
      const list = typeof types === 'string' ? [types] : [...types];
      const tree = this.tree;
      let idx = indexes.get(tree);
      let fresh = false;
      for (const t of list) if (!wantedTypes.has(t)) (wantedTypes.add(t), (fresh = true));
      if (!idx || fresh || list.some((t) => !idx!.types.has(t))) idx = buildIndex(tree, tree.rootNode);
      const key = list.length === 1 ? list[0] : [...list].sort().join('\0');
      const all = rootQuery(idx, list, key);
      if (this.id === idx.rootId) return all.slice();
      const s = this.startIndex;
      const e = endOf(this);
      if (e <= s) return nativeDescendants.call(this, list);
      const lo = lowerBound(all, s);
      const hi = lowerBound(all, e);
      const out: SN[] = [];
      const selfPos = idx.pos.get(this.id);
      for (let i = lo; i < hi; i++) {
        const n = all[i];
        if (n.startIndex === s) {
          const ne = endOf(n);
          if (ne > e) continue; // an ancestor starting at the same offset
          if (ne === e && n.id !== this.id) {
            // Same range: an ancestor comes before this node in pre-order, a descendant after it.
            if (selfPos === undefined) return nativeDescendants.call(this, list);
            if (idx.pos.get(n.id)! < selfPos) continue;
          }
        }
        out.push(n);
      }
      return out;
    },
  });
  Object.defineProperty(proto, 'childForFieldName', {
    configurable: true,
    writable: true,
    value: function childForFieldName(this: SN, name: string): SN | null {
      let perTree = fieldCache.get(this.tree);
      if (!perTree) fieldCache.set(this.tree, (perTree = new Map()));
      const id = this.id;
      let fields = perTree.get(id);
      if (!fields) perTree.set(id, (fields = new Map()));
      let r = fields.get(name);
      if (r === undefined) {
        r = nativeField.call(this, name);
        fields.set(name, r);
      }
      return r;
    },
  });
}

/**
 * The binding version the patches and the mirror's transfer-field layout were written and checked
 * against; package.json pins the same version. With any other version nothing is patched and the
 * plain binding serves every node (correct, only slower).
 */
export const BINDING_VERSION = '0.25.1';

function bindingVersion(): string | null {
  try {
    return (createRequire(import.meta.url)('tree-sitter/package.json') as { version?: string }).version ?? null;
  } catch {
    return null;
  }
}

let installed: { binding: string | null; mirror: boolean; fastNodeFields: boolean } | null = null;

/**
 * The one install call of the tree mirror and the binding patches (src/sources/parsers.ts makes it
 * when it loads, before any parse); later calls return the first call's outcome. Each speed-up is
 * installed only where its self-check on a sample tree agrees with the native binding.
 */
export function installTreeSitterPatches(): { binding: string | null; mirror: boolean; fastNodeFields: boolean } {
  if (installed) return installed;
  const binding = bindingVersion();
  if (binding === BINDING_VERSION) {
    mirrorInstalled = process.env.GPU_REVIEW_TREE_MIRROR !== '0' && mirrorHolds();
    if (mirrorInstalled) installMirror();
    fastNodeFields = !mirrorInstalled && layoutHolds();
    if (fastNodeFields) patchIdAndStart();
    if (nativeParent && !mirrorInstalled) patchParent(nativeParent);
    if (fastNodeFields && nativeEnd && typeof nativeDescendants === 'function') patchQueries();
  }
  installed = { binding, mirror: mirrorInstalled, fastNodeFields };
  return installed;
}

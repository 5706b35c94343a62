import Parser from 'tree-sitter';
import Python from 'tree-sitter-python';

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

const fast = layoutHolds();
if (fast) {
  Object.defineProperty(proto, 'id', { configurable: true, get: fastId });
  Object.defineProperty(proto, 'startIndex', { configurable: true, get: fastStart });
}

const parentCache = new WeakMap<object, Map<number, Parser.SyntaxNode | null>>();
if (nativeParent) {
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

export const fastNodeFields = fast;

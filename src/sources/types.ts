import type { Language, SyntaxNode, Tree } from '../core/types.js';

/** What a DSL rewrite replaced (catalog §1.3); keyed by the string index of the rewritten token. */
export type DslKind =
  | 'dsl-if'
  | 'dsl-elif'
  | 'dsl-else'
  | 'dsl-while'
  | 'dsl-for'
  | 'dsl-loop'
  | 'dsl-switch'
  | 'dsl-case'
  | 'dsl-default';

/**
 * One parsed unit of a changed file: the file itself, one hunk of it (diff-only mode), or a CUDA
 * kernel held in a Python string. Positions inside `text` are JS string indices and 0-based rows,
 * exactly as tree-sitter reports them; `toFile` maps them back to the post-change file.
 */
export interface Source {
  path: string;
  language: Language;
  /** Human label: "file", "hunk @@ -10,4 +10,6 @@", "kernel string at line 40". */
  label: string;
  /** The text that was parsed (masked / normalized / extracted; same length as what it came from). */
  text: string;
  tree: Tree;
  root: SyntaxNode;
  /** Map a 0-based row and column of `text` to a 1-based line and column of the file, or null for synthetic text. */
  toFile(row: number, column: number): { line: number; column: number } | null;
  /** Share of characters outside ERROR/MISSING nodes. */
  parseCoverage: number;
  /** [start, end) string-index ranges covered by ERROR or MISSING nodes. */
  errorRanges: Array<[number, number]>;
  /** LuisaCompute: DSL keyword rewrites by string index. */
  dsl?: Map<number, DslKind>;
  /** NVRTC in Python: format placeholders (`__FMT_name__`) to the source text of their `.format(name=...)` argument. */
  placeholders?: Map<string, string | null>;
  /** NVRTC in Python: the Python source the kernel string sits in. */
  parent?: Source;
  /** Python: the kernel strings extracted from it (catalog §1.2), so host-side rules can read the kernels they launch. */
  kernels?: Source[];
  /** True when the whole post-change file was available (repo mode or an added file). */
  wholeFile: boolean;
}

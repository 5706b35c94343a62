import type Parser from 'tree-sitter';

export type SyntaxNode = Parser.SyntaxNode;
export type Tree = Parser.Tree;

/** Six-level scale of the catalog (§2.3), most severe first. */
export const SEVERITIES = ['critical', 'high', 'medium-high', 'medium', 'low-medium', 'low'] as const;
export type Severity = (typeof SEVERITIES)[number];

/** Lower rank = more severe. */
export function severityRank(s: Severity): number {
  return SEVERITIES.indexOf(s);
}

/** True when `s` is at least as severe as `threshold`. */
export function atLeast(s: Severity, threshold: Severity): boolean {
  return severityRank(s) <= severityRank(threshold);
}

export const LANGUAGES = ['cuda', 'python', 'nvrtc-in-python', 'luisa-dsl'] as const;
export type Language = (typeof LANGUAGES)[number];

export type Confidence = 'high' | 'medium' | 'low';
export type Kind = 'correctness' | 'performance' | 'portability' | 'maintainability';
export type Pass = 1 | 2 | 3 | 4 | 5 | 6 | 7;

export const PASS_NAMES: Record<Pass, string> = {
  1: 'host-device boundary',
  2: 'synchronization',
  3: 'kernel efficiency',
  4: 'precision',
  5: 'memory',
  6: 'NVRTC / compilation',
  7: 'rewrite hand-off',
};

/**
 * A fix replaces whole lines of the post-change file (1-based, inclusive), which is what a
 * GitHub suggestion block does. `safe` fixes may become suggestion blocks; `judgment` fixes
 * are prose only.
 */
export interface Fix {
  kind: 'safe' | 'judgment';
  description: string;
  replace?: { startLine: number; endLine: number; text: string };
}

export interface Finding {
  ruleId: string;
  pass: Pass;
  severity: Severity;
  confidence: Confidence;
  kind: Kind;
  messageId: string;
  message: string;
  citation: string;
  /** One sentence: why this matters (from the rule's documentation). */
  why: string;
  docUrl: string;
  /** Path on the new side of the diff. */
  path: string;
  language: Language;
  /** 1-based, on the new side. */
  line: number;
  endLine: number;
  column: number;
  endColumn: number;
  fix?: Fix;
  fingerprint: string;
  /** Other rules that matched the same node (§2.4 precedence). */
  also?: string[];
  /**
   * Every site of a grouped finding (one root cause: the reads of one loop, the pointers of one
   * kernel, ...), the anchor first; absent when the finding has one site. See engine/group.ts.
   */
  members?: FindingMember[];
  /** Filled by the diff filter. */
  onAddedLine?: boolean;
  inHunk?: boolean;
  suggestionFits?: boolean;
  /** Pass 7 (src/rewrite/): the verified rewrite, or why there is none; only when rewrites were asked for. */
  rewrite?: import('../rewrite/index.js').RewriteOutcome;
}

/** One site of a grouped finding. */
export interface FindingMember {
  path: string;
  line: number;
  endLine: number;
  column: number;
  endColumn: number;
  message: string;
  fix?: Fix;
}

export interface FileReport {
  path: string;
  language: Language | null;
  /** Share of bytes outside ERROR/MISSING nodes, per source (0..1); 1 when nothing was parsed. */
  parseCoverage: number;
  sources: { language: Language; label: string; parseCoverage: number; bytes: number }[];
  skipped?: string;
  /** Present (true) when the file was not reviewed because a time budget ran out. */
  timedOut?: true;
  findings: number;
}

export interface ReviewError {
  path?: string;
  message: string;
}

/** A `gpu-review: ignore[id]` that silenced nothing in this review (`--report-unused-suppressions`). */
export interface UnusedSuppression {
  path: string;
  line: number;
  column: number;
  ruleId: string;
}

export interface ReviewResult {
  findings: Finding[];
  files: FileReport[];
  errors: ReviewError[];
  /** Suppressions that matched no finding, in file order. */
  unusedSuppressions?: UnusedSuppression[];
  /** The project index of this review (src/index/): what it read, and the bound it stopped at, if any. */
  index?: import('../index/types.js').IndexStats;
  /** nvcc figures of the changed kernels, when the review compiled them (`--compile`). */
  compile?: import('../compile/evidence.js').CompileReport;
}

/** Reads a post-change file (repo checkout, GitHub contents at the head SHA); null when absent. */
export type FileReader = (path: string) => Promise<string | Uint8Array | null>;

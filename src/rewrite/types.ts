import type { ResolvedConfig } from '../config/schema.js';
import type { Finding, Language, SyntaxNode } from '../core/types.js';
import type { Source } from '../sources/types.js';

/** Whole-line replacement on the post-change file: lines startLine..endLine (1-based, inclusive) become `text`. */
export interface LineEdit {
  startLine: number;
  /** startLine - 1 inserts `text` before startLine without replacing anything. */
  endLine: number;
  /** Replacement lines joined by '\n', no final newline; '' deletes the lines. */
  text: string;
}

export type StepName = 'reparse' | 'py_compile' | 'nvcc' | 're-review';
export interface VerificationStep {
  step: StepName;
  status: 'pass' | 'fail' | 'skipped';
  detail?: string;
}

/**
 * `verified`: re-parsed, compiled and re-reviewed; `unverified`: re-parsed and re-reviewed but the
 * compiler could not judge it (absent, or the original file does not compile on its own either);
 * `failed`: a step failed, and the rewrite is not shown.
 */
export type VerificationStatus = 'verified' | 'unverified' | 'failed';

export interface Rewrite {
  /** Template id (`launch-on-stream`, …), `engine-fix` for the check's own fix, `llm` for a model draft. */
  template: string;
  origin: 'template' | 'engine' | 'llm';
  description: string;
  edits: LineEdit[];
  /** The smallest enclosing unit (function, else statement) before and after, as file lines. */
  unit: { label: string; startLine: number; endLine: number };
  /** The rewrite keeps the program's observable behaviour (no stream, type or block-size change). */
  behaviourPreserving: boolean;
  /** Unified diff of the unit, before → after. */
  diff: string;
  verification: { status: VerificationStatus; steps: VerificationStep[] };
  /** A one-click GitHub suggestion: a single edit inside the diff's lines that keeps behaviour. */
  suggestion: boolean;
}

/** What a template sees: the finding, the whole post-change file and its parse. */
export interface TemplateContext {
  finding: Finding;
  path: string;
  language: Language;
  text: string;
  lines: string[];
  /** The file's own source (Python or CUDA), parsed like the checks saw it. */
  source: Source;
  /** Smallest named node covering the finding's range. */
  node: SyntaxNode;
  config: ResolvedConfig;
}

export interface Proposal {
  description: string;
  edits: LineEdit[];
  behaviourPreserving: boolean;
}

export type TemplateResult = Proposal | { decline: string };

export interface Template {
  id: string;
  /** Rule ids whose findings it rewrites. */
  rules: readonly string[];
  languages: readonly Language[];
  build(ctx: TemplateContext): TemplateResult;
}

export function declined(r: TemplateResult): r is { decline: string } {
  return 'decline' in r;
}

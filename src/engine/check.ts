import type { ResolvedConfig } from '../config/schema.js';
import type { Source } from '../sources/types.js';
import type { Confidence, Kind, Language, Pass, Severity, SyntaxNode } from '../core/types.js';

export interface CheckMeta {
  /** `pass-name/rule-name`, equal to the check's folder under checks/. */
  id: string;
  pass: Pass;
  severity: Severity;
  kind: Kind;
  confidence: Confidence;
  languages: Language[];
  /** Reference section it enforces, e.g. `003 §8.2 Host-Device Ping-Pong`. */
  citation: string;
  /** One line for `gpu-review rules`. */
  summary: string;
  /** One sentence posted under each finding. */
  why: string;
  /** Message templates by id; `{{name}}` is replaced from the report's data. */
  messages: Record<string, string>;
  fix: 'safe' | 'judgment' | 'none';
  /**
   * Preview rules run only when enabled in config (low-confidence rules, catalog §2.2). Retired
   * rules were measured on real code and found to flag mostly good code (the rule's README gives
   * the figures): they run only when a config names them (`rules: {id: on}`, `--select id`),
   * never through `enable_preview` or a family.
   */
  status?: 'stable' | 'preview' | 'retired';
  /** Rules this one wins over when both match the same code (catalog §2.4 fixed pairs). */
  supersedes?: string[];
  /**
   * One finding per root cause (engine/group.ts): the sites this rule reports in one loop
   * (`loop`), one function or kernel (`function`), or with one value in one file (`value`: the
   * report's `groupKey`, e.g. a block-size constant used by several launches) become one finding.
   */
  group?: 'loop' | 'function' | 'value';
  /** Switched off on repositories without the vibeSpatial vocabulary (catalog §2.4). */
  needsProjectVocabulary?: boolean;
  /**
   * A `needsProjectVocabulary` rule still runs on a source when this returns true: names the rule's
   * own catalog entry counts as the project's vocabulary (Pass 4: `compute_t`), or a config opt-in
   * (`precision.require_compute_t`). `text` is the file text the pipeline tested for the vocabulary.
   */
  vocabularyOptIn?: (config: ResolvedConfig, language: Language, text: string) => boolean;
  /** `compiler`: the rule reads nvcc figures (`config.compileEvidence`) and says nothing without `--compile`. */
  requires?: 'compiler';
}

export interface FixSpec {
  description: string;
  /** Replace whole source lines `from.startRow..to.endRow` with `text` (safe fixes only). */
  replace?: { from: SyntaxNode; to?: SyntaxNode; text: string };
}

export interface Report {
  node: SyntaxNode;
  messageId: string;
  data?: Record<string, string | number>;
  fix?: FixSpec;
  /**
   * What the finding is about beyond its node (e.g. `kernel:scale`): a rule that `supersedes`
   * another also wins over that rule's findings with the same subject in the file, where they sit
   * on different lines (a launch and the kernel it launches).
   */
  subject?: string;
  /** For `group: 'value'` rules: the value the sites share (default: the node's text). */
  groupKey?: string;
  /**
   * This site's grouping where it differs from the rule's `group` (a rule whose launch sites stand alone
   * but whose device-array operations in one host loop share one root cause: `'loop'`).
   */
  groupBy?: 'loop' | 'function' | 'value';
  /**
   * A lower severity than the rule's when this site's own evidence shows less harm (e.g. full
   * occupancy on every target); a more severe value is ignored.
   */
  severity?: Severity;
}

/** A memoized per-source analysis shared by every check that asks for it. */
export interface Analysis<T> {
  name: string;
  compute(source: Source, config: ResolvedConfig): T;
}

export interface CheckContext {
  source: Source;
  config: ResolvedConfig;
  report(r: Report): void;
  get<T>(a: Analysis<T>): T;
  /**
   * True when the file uses the project's own helper vocabulary (config `vocabularies.vibespatial_helpers`):
   * only then may a message or fix name those helpers; otherwise it gives the plain CuPy / CUDA remedy.
   */
  projectVocabulary: boolean;
  /** Source text of the lines spanned by a node (for building whole-line fixes). */
  linesOf(from: SyntaxNode, to?: SyntaxNode): string;
}

export type Visitor = (node: SyntaxNode) => void;
export interface Visitors {
  [nodeType: string]: Visitor | (() => void) | undefined;
  /** Called once after every node of the source was visited. */
  'source:exit'?: () => void;
}

export interface CheckDef extends CheckMeta {
  create(ctx: CheckContext): Visitors;
}

/** The one factory every check is built with. */
export function defineCheck(def: CheckDef): CheckDef {
  for (const m of Object.values(def.messages)) {
    if (!m.trim()) throw new Error(`${def.id}: empty message template`);
  }
  return def;
}

export function renderMessage(template: string, data: Record<string, string | number> = {}): string {
  return template.replace(/\{\{\s*(\w+)\s*\}\}/g, (_, k: string) => (k in data ? String(data[k]) : `{{${k}}}`));
}

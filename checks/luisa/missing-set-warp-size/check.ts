import { luisaModel, type DslBody, type LuisaModel } from '../../../src/analysis/luisa.js';
import { functionName } from '../../../src/analysis/flow.js';
import { quote } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';
import { alternation, escapeRe as esc } from '../../../src/core/regex.js';

const USES_WIDTH = /^(warp_active_\w+|warp_prefix_\w+|warp_read_lane|warp_lane_id|warp_is_first_active_lane)$/;

/** `thread_x() / warp_lane_count()`: the warp index, which shrinks when the backend picks a wider wave. */
function isWarpIndex(p: SyntaxNode, count: SyntaxNode): boolean {
  return p.childForFieldName('operator')?.type === '/' && p.childForFieldName('right')?.id === count.id && /\bthread_(x\s*\(|id\s*\(\s*\)\s*\.\s*x)/.test(p.childForFieldName('left')?.text ?? '');
}
function warpIndexIn(m: LuisaModel, b: DslBody): SyntaxNode | null {
  for (const c of m.callsIn(b.body, 'warp_lane_count')) {
    const p = c.node.parent;
    if (p?.type === 'binary_expression' && isWarpIndex(p, c.node)) return p;
  }
  return null;
}

/** The host name to pin with: a captured `Device &device`, or a local holding `device.compute_warp_size()`. */
const hostMemo = new WeakMap<LuisaModel, Map<string, string | null>>();
function hostWidth(m: LuisaModel, b: DslBody): string | null {
  let memo = hostMemo.get(m);
  if (!memo) hostMemo.set(m, (memo = new Map()));
  const caps = b.node.namedChildren.find((n) => n.type === 'lambda_capture_specifier');
  let fn0: SyntaxNode | null = b.node.parent;
  while (fn0 && fn0.type !== 'function_definition' && fn0.type !== 'lambda_expression') fn0 = fn0.parent;
  const key = `${fn0?.id ?? -1}:${caps?.text ?? ''}`;
  if (!memo.has(key)) memo.set(key, hostWidthUncached(m, b));
  return memo.get(key)!;
}
function hostWidthUncached(m: LuisaModel, b: DslBody): string | null {
  const captures = b.node.namedChildren.find((n) => n.type === 'lambda_capture_specifier');
  if (!captures) return null;
  const capText = captures.text;
  const byRef = /\[\s*[&=]/.test(capText);
  const captured = (name: string) => byRef || new RegExp(`[\\[,]\\s*&?\\s*${esc(name)}\\s*[,\\]]`).test(capText);
  let fn: SyntaxNode | null = b.node.parent;
  while (fn && fn.type !== 'function_definition' && fn.type !== 'lambda_expression') fn = fn.parent;
  if (!fn) return null;
  const text = m.source.text.slice(fn.startIndex, fn.endIndex);
  for (const mm of text.matchAll(/\b(\w+)\s*=\s*(?:static_cast<\w+>\s*\()?\s*(\w+)\s*(?:\.|->)\s*compute_warp_size\s*\(\s*\)/g)) {
    const d = m.declOf(mm[1], b.node);
    if (d && !d.param && captured(mm[1])) return mm[1];
  }
  for (const mm of text.matchAll(/\bDevice\s*[&*]?\s*(\w+)/g)) {
    const d = m.declOf(mm[1], b.node);
    if (d && /\bDevice\b/.test(d.type) && captured(mm[1])) return `${mm[1]}${d.pointer ? '->' : '.'}compute_warp_size()`;
  }
  return null;
}

export default defineCheck({
  id: 'luisa/missing-set-warp-size',
  pass: 3,
  severity: 'medium',
  kind: 'portability',
  confidence: 'high',
  languages: ['luisa-dsl'],
  citation: '000 §7 rule 2 ("Set warp size explicitly when using warp collectives"); 000 §3.8 ("Pin the warp size … Without pinning, a backend may choose a wider wave/subgroup (e.g. 64), which shrinks warp_in_block and silently skips items"); 000 §7 rule 14',
  summary: 'Kernel uses warp collectives or lane arithmetic without pinning the width with set_warp_size.',
  why: 'Without set_warp_size a backend may run the kernel with a wider wave/subgroup (e.g. 64 instead of 32; DirectX reports only the maximum wave width), which changes every warp collective\'s lane set and shrinks thread_x() / warp_lane_count(), silently skipping items (000 §3.8, §7 rules 2 and 14).',
  messages: {
    missing: 'Kernel{{name}} uses warp collectives / lane arithmetic (`{{use}}`) but does not pin the warp size with set_warp_size(...); add `set_warp_size({{width}});` after set_block_size.',
  },
  fix: 'safe',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(luisaModel);
        // Callables of this file that use the width: a kernel calling one inlines its warp code.
        const callables = m.bodies.filter((b) => b.kind === 'Callable' && b.name);
        const names = callables.length ? callables.filter((b) => m.callsIn(b.body, USES_WIDTH).length || warpIndexIn(m, b)).map((b) => b.name!.replace(/\W/g, '')) : [];
        // Host helper functions of this file that emit warp code (`void load(...) { ... warp_lane_id() ... }`):
        // a kernel calling one records that code into its own body.
        for (const c of m.callsNamed(USES_WIDTH)) {
          const g = c.receiver ? null : m.generatorOf(c.node);
          const fname = g ? functionName(g) : '';
          const name = /^\w+$/.test(fname) && fname !== 'main' ? fname : null;
          if (name && !names.includes(name)) names.push(name);
        }
        const warpCallables = new RegExp(`^(${alternation(names)})$`);
        // First width-dependent use per kernel, in one pass over the calls.
        const firstUse = new Map<number, SyntaxNode>();
        const pinned = new Set<number>();
        const note = (k: DslBody | null, n: SyntaxNode): void => {
          if (k && !firstUse.has(k.node.id)) firstUse.set(k.node.id, n);
        };
        for (const c of m.callsNamed('set_warp_size')) {
          const k = m.kernelOf(c.node);
          if (k) pinned.add(k.node.id);
        }
        for (const c of m.callsNamed(USES_WIDTH)) if (!c.receiver) note(m.kernelOf(c.node), c.node);
        for (const c of m.callsNamed('warp_lane_count')) {
          const p = c.node.parent;
          if (p?.type === 'binary_expression' && isWarpIndex(p, c.node)) note(m.kernelOf(c.node), p);
        }
        if (names.length) for (const c of m.callsNamed(warpCallables)) if (!c.receiver) note(m.kernelOf(c.node), c.node);
        for (const b of m.bodies) {
          // Callables take the width of the kernel that calls them.
          if (b.kind === 'Callable' || b.warpSize || pinned.has(b.node.id)) continue;
          const use = firstUse.get(b.node.id);
          if (!use) continue;
          const host = hostWidth(m, b);
          const width = host ?? 'device.compute_warp_size()';
          let node: SyntaxNode = use;
          let fix: { description: string; replace?: { from: SyntaxNode; text: string } } = { description: `Add \`set_warp_size(${width});\` as the first statement after set_block_size(...).` };
          const bs = b.blockSize?.node ?? null;
          const stmt = bs?.parent?.type === 'expression_statement' ? bs.parent : null;
          if (stmt && m.bodyOf(stmt)?.node.id === b.node.id) {
            node = stmt;
            const line = stmt.startPosition.row === stmt.endPosition.row ? m.lineText(stmt) : null;
            // Insert only next to a set_block_size that is alone on its line.
            if (host && line !== null && line.trim() === stmt.text.trim()) {
              const indent = /^\s*/.exec(line)![0];
              fix = { ...fix, replace: { from: stmt, text: `${line}\n${indent}set_warp_size(${host});` } };
            }
          }
          ctx.report({ node, messageId: 'missing', data: { name: b.name ? ` ${b.name}` : '', use: quote(use), width }, fix });
        }
      },
    };
  },
});

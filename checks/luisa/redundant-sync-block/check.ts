import { luisaModel } from '../../../src/analysis/luisa.js';
import { cppStatement } from '../../../src/analysis/flow.js';
import { contains, quote } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

const COLLECTIVE = /^warp_(active_\w+|prefix_\w+|read_lane|read_first_active_lane)$/;
const LOOPS = new Set(['while_statement', 'for_statement', 'do_statement', 'for_range_loop']);
/** DSL builtins and math that never touch shared memory. */
const BUILTIN = /^(warp_\w+|thread_(id|x|y|z)|block_(id|size|x|y|z)|dispatch_(id|size|x|y|z)|set_block_size|set_warp_size|make_\w+|def|cast|as|bit_cast|ite|select|min|max|abs|sqrt|rsqrt|exp|exp2|log|log2|pow|sin|cos|tan|asin|acos|atan|atan2|floor|ceil|round|fract|trunc|clamp|saturate|lerp|fma|dot|cross|normalize|length|distance|sign|step|smoothstep|isnan|isinf|all|any|none|popcount|ctz|clz|reverse|device_log|float|int|uint|Float|Int|UInt|Bool|static_cast|sync_block|dynamic_range)$/;
const isEmpty = (s: SyntaxNode): boolean => (s.type === 'expression_statement' && s.namedChildCount === 0) || s.type === 'comment';
const esc = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

export default defineCheck({
  id: 'luisa/redundant-sync-block',
  pass: 3,
  severity: 'low-medium',
  kind: 'performance',
  confidence: 'medium',
  languages: ['luisa-dsl'],
  citation: '000 §1.5 Configuration ("No sync_block() is needed for warp collectives"); 000 §3.7 step 3, rule 3; 000 §7 rule 4',
  summary: 'sync_block() between warp collectives with no Shared<T> access between the surrounding barriers.',
  why: 'Warp collectives are complete for the calling lane as soon as they return, so a sync_block() that guards no Shared<T> traffic only makes every warp of the block (8 for 256 threads) wait for the slowest one; 000 §5.7 measured such barrier stragglers halving a block reduction\'s throughput at 1,024 threads (000 §1.5, §3.7 step 3 rule 3, §7 rule 4).',
  messages: {
    redundant: '`sync_block()` next to the warp collective `{{collective}}` guards no Shared<T> read or write between the surrounding barriers; warp ops are complete for the calling lane, so this only adds a block-wide stall. Delete it.',
  },
  fix: 'safe',
  create(ctx) {
    return {
      'source:exit'() {
        const m = ctx.get(luisaModel);
        const text = m.source.text;
        let declarators: SyntaxNode[] | null = null;
        for (const sync of m.callsNamed('sync_block')) {
          if (sync.receiver || sync.args.length) continue;
          const body = m.bodyOf(sync.node);
          const kernel = m.kernelOf(sync.node);
          // A callable's barrier may guard its caller's shared memory, which this file may not show.
          if (!body || !kernel || body.kind === 'Callable' || kernel.kind === 'Callable') continue;
          const stmt = cppStatement(sync.node);
          if (stmt.type !== 'expression_statement' || stmt.namedChildren[0]?.id !== sync.node.id) continue;
          // A warp collective in the statement right before or after the barrier.
          const neighbour = (dir: 'previousNamedSibling' | 'nextNamedSibling'): SyntaxNode | null => {
            let s = stmt[dir];
            while (s && isEmpty(s)) s = s[dir];
            return s;
          };
          const adjacent = [neighbour('previousNamedSibling'), neighbour('nextNamedSibling')]
            .flatMap((s) => (s ? m.calls.filter((c) => !c.receiver && COLLECTIVE.test(c.name) && contains(s, c.node)) : []));
          if (!adjacent.length) continue;
          // The barrier interval: from the previous sync_block() (or the body start) to the next one
          // (or the body end); a barrier inside a loop also guards the wrap-around to the next iteration.
          const syncs = m.callsIn(kernel.body, 'sync_block').filter((c) => !c.receiver).map((c) => c.node);
          let from = kernel.body.startIndex;
          let to = kernel.body.endIndex;
          for (const s of syncs) {
            if (s.endIndex <= sync.node.startIndex) from = Math.max(from, s.endIndex);
            if (s.startIndex >= sync.node.endIndex) to = Math.min(to, s.startIndex);
          }
          for (let p = sync.node.parent; p && p.id !== kernel.body.id; p = p.parent) {
            if (LOOPS.has(p.type) || m.isDeviceLoop(p)) {
              from = Math.min(from, p.startIndex);
              to = Math.max(to, p.endIndex);
            }
          }
          const span = text.slice(from, to);
          // Any Shared<T> named in the interval (subscript, read/write/atomic, passed to a helper).
          const shared = m.shared.filter((s) => s.name && contains(kernel.body, s.node));
          const touches = shared.some((s) => {
            const re = new RegExp(`\\b${esc(s.name!)}\\b`, 'g');
            for (const hit of span.matchAll(re)) {
              const at = from + hit.index!;
              if (!(at >= s.node.startIndex && at < s.node.endIndex)) return true;
            }
            return false;
          });
          if (touches) continue;
          // Helpers (callables, generator functions) that use shared memory or barriers themselves.
          const inSpan = (n: SyntaxNode): boolean => n.startIndex >= from && n.endIndex <= to;
          const helpers = m.calls.filter((c) => !c.receiver && inSpan(c.node) && c.node.id !== sync.node.id);
          const helperTouches = helpers.some((c) => {
            if (BUILTIN.test(c.name)) return false;
            const b = m.bodies.find((x) => x.name === c.name);
            if (b && /\bShared\s*<|\bsync_block\s*\(|\$shared\b/.test(b.body.text)) return true;
            declarators ??= m.source.root.descendantsOfType('function_declarator');
            const def = declarators.find((d) => d.childForFieldName('declarator')?.text === c.name);
            // A helper defined elsewhere (an included header's block_reduce) may use shared memory.
            if (!b && !def) return true;
            return !!def && /\bShared\s*<|\bsync_block\s*\(/.test(def.parent?.text ?? '');
          });
          if (helperTouches) continue;
          // async_copy pipelines: the barrier after pipeline_wait_prior publishes the copied tile.
          if (/\b(async_copy|pipeline_wait_prior|pipeline_commit)\s*\(/.test(span)) continue;
          // Global-memory hand-off: a buffer written before the barrier and read after it by other threads.
          const before = m.calls.filter((c) => c.receiver && c.node.startIndex >= from && c.node.endIndex <= sync.node.startIndex && /^(write|atomic)$/.test(c.name));
          const after = m.calls.filter((c) => c.receiver && c.node.startIndex >= sync.node.endIndex && c.node.endIndex <= to && /^(read|volatile_read|atomic)$/.test(c.name));
          if (before.some((w) => after.some((r) => r.receiver!.text === w.receiver!.text))) continue;
          const lineStart = text.lastIndexOf('\n', stmt.startIndex - 1) + 1;
          let lineEnd = text.indexOf('\n', stmt.endIndex);
          if (lineEnd < 0) lineEnd = text.length;
          const alone = /^[ \t]*$/.test(text.slice(lineStart, stmt.startIndex)) && /^[ \t]*$/.test(text.slice(stmt.endIndex, lineEnd));
          ctx.report({
            node: stmt,
            messageId: 'redundant',
            data: { collective: quote(adjacent[0].node) },
            fix: alone ? { description: 'Delete the barrier.', replace: { from: stmt, to: stmt, text: '' } } : { description: 'Delete the barrier.' },
          });
        }
      },
    };
  },
});

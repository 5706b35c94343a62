import { cudaModel } from '../../../src/analysis/cuda.js';
import { calleePath, quote } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

const CUDA_NS = '(?:thrust::)?(?:system::)?cuda(?:_cub)?::';
/** The allocator argument of `par(alloc)`: balanced parentheses, one level deep. */
const ALLOC = '\\((?:[^()]|\\([^()]*\\))*\\)';
/** Policies that run on the legacy default stream: `thrust::device`, `thrust::cuda::par`, `thrust::cuda::par(alloc)`, `....on(0)`. */
const DEFAULT_POLICY = new RegExp(`^(?:(?:thrust::)?device|${CUDA_NS}par(?:_nosync)?(?:${ALLOC})?|${CUDA_NS}par(?:_nosync)?(?:${ALLOC})?\\.on\\((?:0|nullptr|NULL|cudaStreamLegacy)\\))$`, 's');
/** A synchronizing policy bound to a stream: `thrust::cuda::par.on(s)`, `thrust::cuda::par(alloc).on(s)`, `rmm::exec_policy(s)`. */
const SYNC_STREAM_POLICY = new RegExp(`^(?:${CUDA_NS}par(?:${ALLOC})?\\.on\\((.+)\\)|(?:rmm::)?exec_policy\\((.+)\\))$`, 's');
/**
 * Algorithms whose result the host reads (a value, or an end iterator that depends on the data): they
 * must wait for the GPU whatever the policy, so only their stream matters.
 */
const HOST_RESULT = /^(reduce|count|count_if|find|find_if|find_if_not|min_element|max_element|minmax_element|all_of|any_of|none_of|equal|inner_product|transform_reduce|is_sorted|is_sorted_until|is_partitioned|mismatch|copy_if|remove|remove_if|remove_copy|remove_copy_if|unique|unique_copy|unique_by_key|unique_by_key_copy|unique_count|reduce_by_key|partition|stable_partition|partition_copy|stable_partition_copy|set_union|set_intersection|set_difference|set_symmetric_difference|set_union_by_key|set_intersection_by_key|set_difference_by_key|set_symmetric_difference_by_key|binary_search|lower_bound|upper_bound|equal_range)$/;
const PROGRAM_PATH = /(^|\/)(samples?|demos?|tutorials?|apps?|tools)\//i;

export default defineCheck({
  id: 'sync/thrust-default-policy',
  pass: 2,
  severity: 'medium',
  kind: 'performance',
  confidence: 'medium',
  languages: ['cuda'],
  citation: '003 §2.3 (Synchronization Pitfalls; Default stream serialization); 003 §2.4 Operations That Cause Implicit Synchronization',
  summary: 'Thrust algorithm on a policy that synchronizes after the call or runs on the legacy default stream.',
  why: 'Thrust\'s `thrust::device` and `thrust::cuda::par` policies run on the legacy default stream unless bound with `.on(stream)`, and both `par` and `par.on(stream)` block the host until the algorithm finishes; `thrust::cuda::par_nosync.on(stream)` (RMM: `rmm::exec_policy_nosync`) keeps the work stream-ordered and asynchronous (003 §2.3, §2.4).',
  messages: {
    defaultStream:
      '`{{code}}` uses `{{policy}}`, which runs on the legacy default stream (and synchronizes after the call): bind it to the working stream, `thrust::cuda::par_nosync.on(stream)` (with your allocator: `thrust::cuda::par_nosync(alloc).on(stream)`).',
    syncAfter:
      '`{{code}}` uses `{{policy}}`, which blocks the host until the algorithm finishes although nothing reads its result; use `thrust::cuda::par_nosync` on that stream (RMM: `rmm::exec_policy_nosync`).',
    syncPolicy:
      'Policy `{{policy}}` synchronizes its stream after every Thrust algorithm it runs; build it from `thrust::cuda::par_nosync` (RMM: `rmm::exec_policy_nosync`) and synchronize only before host reads.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        if (ctx.source.language !== 'cuda') return;
        const m = ctx.get(cudaModel);
        if (m.testOrBench || PROGRAM_PATH.test(ctx.source.path)) return;
        const program = m.functions.some((f) => f.name === 'main' && f.isHost);
        const skip = (n: SyntaxNode) => {
          const fn = m.functionOf(n);
          if (!fn || !fn.isHost || m.inDeviceCode(n) || m.debugGated(n)) return true;
          // `#if THRUST_MAJOR_VERSION >= 2 ... par_nosync ... #else ... par ... #endif`: a fallback for
          // Thrust versions that lack the non-synchronizing policy.
          for (let p = n.parent; p && p.id !== fn.node.id; p = p.parent) {
            if ((p.type === 'preproc_if' || p.type === 'preproc_ifdef') && /\bpar_nosync\b/.test(p.text)) return true;
          }
          return ctx.config.setupFunctions.test(fn.name);
        };
        const norm = (t: string) => t.replace(/\s+/g, '');
        const used = new Set<number>();
        for (const c of m.calls) {
          if (!/^(::)?thrust::/.test(c.path) || c.args.length < 2 || skip(c.node)) continue;
          const policy = c.args[0];
          const p = norm(policy.text);
          const algo = c.name;
          if (DEFAULT_POLICY.test(p)) {
            used.add(policy.id);
            // A program that runs everything on the default stream has nothing to serialize against.
            if (program && !m.hotPath(c.node)) continue;
            ctx.report({ node: policy, messageId: 'defaultStream', data: { code: quote(c.node), policy: quote(policy) } });
          } else if (SYNC_STREAM_POLICY.test(p)) {
            used.add(policy.id);
            if (HOST_RESULT.test(algo)) continue;
            ctx.report({ node: policy, messageId: 'syncAfter', data: { code: quote(c.node), policy: quote(policy) } });
          }
        }
        // A synchronizing stream policy built once and handed out (`auto policy() { return thrust::cuda::par(alloc).on(s); }`).
        for (const c of ctx.source.root.descendantsOfType('call_expression')) {
          if (used.has(c.id) || c.parent?.type !== 'return_statement' && c.parent?.type !== 'init_declarator') continue;
          const f = c.childForFieldName('function');
          if (f?.type !== 'field_expression' || f.childForFieldName('field')?.text !== 'on') continue;
          if (!new RegExp(`^${CUDA_NS}par$`).test(norm(calleePath(f.childForFieldName('argument')) ?? f.childForFieldName('argument')?.text ?? ''))) continue;
          if (!SYNC_STREAM_POLICY.test(norm(c.text)) || skip(c)) continue;
          ctx.report({ node: c, messageId: 'syncPolicy', data: { policy: quote(c) } });
        }
      },
    };
  },
});

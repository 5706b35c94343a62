import { ancestorOf, functionStream } from '../context.js';
import { lineWith } from '../edit.js';
import type { Template, TemplateContext, TemplateResult } from '../types.js';

/**
 * A Thrust policy on the legacy default stream → the same synchronizing policy bound to the
 * function's stream; a synchronizing stream policy whose result nothing reads → its `_nosync` form.
 */
export const thrustPolicy: Template = {
  id: 'thrust-policy-on-stream',
  rules: ['sync/thrust-default-policy'],
  languages: ['cuda'],
  build(ctx: TemplateContext): TemplateResult {
    const policy = ctx.node;
    const t = policy.text.replace(/\s+/g, '');
    const msg = ctx.finding.messageId;
    if (msg === 'defaultStream') {
      const known = /^(?:::)?thrust::(?:device|(?:system::)?cuda::par(\(.*\))?)$/.exec(t);
      if (!known) return { decline: `policy \`${policy.text}\` is not one the template knows (thrust::device, thrust::cuda::par, thrust::cuda::par(alloc))` };
      // The allocator argument of `thrust::cuda::par(alloc)` stays with the policy.
      const alloc = known[1] ?? '';
      const s = functionStream(ancestorOf(policy, ['function_definition']));
      if ('none' in s) return { decline: s.none };
      // A call whose value is dropped needs no host wait (Thrust's own advice); one whose value is used keeps it.
      const call = policy.parent ? ancestorOf(policy.parent, ['call_expression']) : null;
      const dropped = call?.parent?.type === 'expression_statement';
      return {
        description: dropped
          ? `Run the algorithm on the function's stream \`${s.name}\` without the host wait (nothing reads its return value).`
          : `Bind the algorithm to the function's stream \`${s.name}\` (same synchronizing behaviour, no legacy default stream).`,
        edits: [lineWith(ctx.lines, policy, `thrust::cuda::${dropped ? 'par_nosync' : 'par'}${alloc}.on(${s.raw})`)],
        behaviourPreserving: false,
      };
    }
    if (msg === 'syncAfter') {
      let next: string | null = null;
      const m = /^((?:::)?thrust::(?:system::)?cuda::)par((?:\(.*\))?\.on\(.+\))$/.exec(t);
      if (m) next = `${m[1]}par_nosync${m[2]}`;
      const r = /^((?:::)?rmm::)exec_policy(\(.+\))$/.exec(t);
      if (r) next = `${r[1]}exec_policy_nosync${r[2]}`;
      if (!next) return { decline: `policy \`${policy.text}\` has no _nosync form the template knows` };
      return {
        description: 'Use the non-synchronizing form of the policy: nothing on the host reads the result.',
        edits: [lineWith(ctx.lines, policy, next)],
        behaviourPreserving: false,
      };
    }
    return { decline: `no template for message ${msg}` };
  },
};

import type { SyntaxNode } from '../../core/types.js';
import { ancestorOf, functionStream } from '../context.js';
import { lineWith } from '../edit.js';
import type { Template, TemplateContext, TemplateResult } from '../types.js';

const NULL_STREAM = /^(?:0|NULL|nullptr|0x0|cudaStreamLegacy|cudaStream_t\s*\(\s*0\s*\)|\(cudaStream_t\)\s*0)$/;

/** The `<<<…>>>` launch at or around the finding. */
export function launchAt(n: SyntaxNode): SyntaxNode | null {
  const call = ancestorOf(n, ['call_expression']);
  if (call?.namedChildren.some((c) => c.type === 'kernel_call_syntax')) return call;
  const inner = n.descendantsOfType('kernel_call_syntax')[0];
  return inner?.parent ?? null;
}

/** The `<<<…>>>` launch at or around the finding and its configuration arguments (comments left out). */
export function launchConfigAt(n: SyntaxNode): { call: SyntaxNode; cfg: SyntaxNode; args: SyntaxNode[] } | null {
  const call = launchAt(n);
  if (!call) return null;
  const cfg = call.namedChildren.find((c) => c.type === 'kernel_call_syntax')!;
  return { call, cfg, args: cfg.namedChildren.filter((c) => c.type !== 'comment') };
}

/** A kernel launch on the legacy default stream → the same launch on the function's one stream. */
export const launchOnStream: Template = {
  id: 'launch-on-stream',
  rules: ['sync/default-stream-launch-in-library', 'sync/null-stream-in-multistream-code'],
  languages: ['cuda'],
  build(ctx: TemplateContext): TemplateResult {
    const launch = launchConfigAt(ctx.node);
    if (!launch) return { decline: 'not a <<<…>>> kernel launch' };
    const { call, cfg, args } = launch;
    if (args.length < 2 || args.length > 4) return { decline: 'launch configuration is not <<<grid, block[, smem[, stream]]>>>' };
    if (args.length === 4 && !NULL_STREAM.test(args[3].text.trim())) return { decline: `launch already names a stream (${args[3].text})` };
    const s = functionStream(ancestorOf(call, ['function_definition']));
    if ('none' in s) return { decline: s.none };
    const smem = args[2]?.text ?? '0';
    const text = `<<<${args[0].text}, ${args[1].text}, ${smem}, ${s.raw}>>>`;
    const open = cfg.text.startsWith('<<<') ? cfg : null;
    if (!open) return { decline: 'unexpected launch syntax' };
    return {
      description: `Queue the launch on the function's stream \`${s.name}\` instead of the legacy default stream.`,
      edits: [lineWith(ctx.lines, cfg, text)],
      behaviourPreserving: false,
    };
  },
};

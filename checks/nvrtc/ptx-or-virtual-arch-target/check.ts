import { calleePath, lastName } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';
import { NVRTC_COLD } from '../../../src/config/costs.js';

// `compute_XX` is a virtual architecture: NVRTC emits PTX only, which the driver JIT-compiles at module load.
const VIRTUAL_ARCH = /(?:--gpu-architecture|-arch|--gpu-name|-gpu-name)(?:=|\s+)compute_(?:\d+|\{)/;
const REAL_TARGET = /\bsm_(?:\d+|\{)|nvrtcGetCUBIN/;
const GET_PTX = new Set(['nvrtcGetPTX', 'nvrtcGetPTXSize']);

function scopeOf(n: SyntaxNode): SyntaxNode {
  let p = n.parent;
  while (p && p.type !== 'function_definition') p = p.parent;
  return p ?? n.tree.rootNode;
}

export default defineCheck({
  id: 'nvrtc/ptx-or-virtual-arch-target',
  pass: 6,
  severity: 'low-medium',
  kind: 'performance',
  confidence: 'high',
  languages: ['python', 'cuda'],
  citation:
    '003 §7.2 Compilation Caching ("Compile to CUBIN when possible: Target real architectures (sm_80, sm_89, sm_90) instead of virtual (compute_80) … Use nvrtcGetCUBIN() instead of nvrtcGetPTX()")',
  summary: 'NVRTC targets a virtual architecture or retrieves PTX, so the driver JIT-compiles at load time.',
  why: 'PTX from a compute_XX target is JIT-compiled by the driver on every cold load, adding compilation on top of the NVRTC step (' + NVRTC_COLD + ') that a real sm_XX CUBIN avoids (003 §7.2, §7.3).',
  messages: {
    virtualArch: 'NVRTC option `{{code}}` targets a virtual architecture; the driver JIT-compiles the PTX at load time. Target sm_XX and use nvrtcGetCUBIN().',
    getPtx: '`{{code}}` retrieves PTX with no nvrtcGetCUBIN() in `{{fn}}`; the driver JIT-compiles it at load time. Target sm_XX and use nvrtcGetCUBIN().',
  },
  fix: 'judgment',
  create(ctx) {
    const lang = ctx.source.language;
    if (lang !== 'python' && lang !== 'cuda') return {};
    const strType = lang === 'python' ? 'string' : 'string_literal';
    const callType = lang === 'python' ? 'call' : 'call_expression';
    /** The node sits in one branch of an `if`/`try` whose other branch compiles to a real sm_XX / CUBIN. */
    const inFallbackBranch = (node: SyntaxNode): boolean => {
      for (let p = node.parent; p && p.type !== 'function_definition'; p = p.parent) {
        if ((p.type === 'if_statement' || p.type === 'try_statement') && REAL_TARGET.test(p.text)) return true;
      }
      return false;
    };
    const ptxScopes = new Set<number>();
    return {
      [strType](node: SyntaxNode) {
        if (lang === 'python' && node.parent?.type === 'string') return;
        if (!VIRTUAL_ARCH.test(node.text)) return;
        // A PTX target kept next to a CUBIN path is the forward-compatibility fallback for newer GPUs.
        if (inFallbackBranch(node)) return;
        ctx.report({ node, messageId: 'virtualArch', data: { code: node.text.length > 60 ? node.text.slice(0, 57) + '...' : node.text }, fix: { description: 'Build the target from the device (`--gpu-architecture=sm_{major}{minor}`) and fetch the image with nvrtcGetCUBIN().' } });
      },
      [callType](node: SyntaxNode) {
        const name = lastName(calleePath(node.childForFieldName('function')));
        if (!name || !GET_PTX.has(name)) return;
        const scope = scopeOf(node);
        if (ptxScopes.has(scope.id) || /nvrtcGetCUBIN/.test(scope.text)) return;
        ptxScopes.add(scope.id);
        const declarator = scope.type === 'function_definition' ? scope.childForFieldName(lang === 'python' ? 'name' : 'declarator') : null;
        const fn = lang === 'python' ? declarator?.text : declarator?.childForFieldName('declarator')?.text ?? declarator?.text;
        const first = node.text.split('\n')[0];
        ctx.report({ node, messageId: 'getPtx', data: { code: first.length > 60 ? first.slice(0, 57) + '...' : first, fn: fn ?? 'module scope' }, fix: { description: 'Compile for the device\'s real architecture and load the CUBIN from nvrtcGetCUBINSize()/nvrtcGetCUBIN().' } });
      },
    };
  },
});

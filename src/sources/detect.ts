import type { Language } from '../core/types.js';

const CUDA_EXT = /\.(cu|cuh)$/i;
const PY_EXT = /\.(py|pyi)$/i;
const CPP_EXT = /\.(cpp|cc|cxx|c\+\+|h|hh|hpp|hxx|inl|ipp|tpp)$/i;

/** DSL code itself: kernels, callables, device control flow, command lists, block sizes, barriers. */
const LUISA_DSL_MARKERS = /\bKernel[123]D\b|\bCallable\s*<|\bCommandList::create\s*\(|\bset_block_size\s*\(|\bsync_block\s*\(\s*\)|\bdevice\s*(\.|->)\s*compile\s*[<(]|\bdispatch_id\s*\(\s*\)/;
/** Only the library: its headers or namespace (LuisaCompute's own backends and runtime live there too). */
const LUISA_LIBRARY_MARKERS = /#include\s*[<"]luisa\/|\bluisa::compute\b/;
const LUISA_DSL_TOKENS = /\$(if|else|elif|for|while|loop)\b/;
const CUDA_MARKERS =
  /\b__global__\b|\b__device__\b|\b__shared__\b|<<<|#include\s*[<"](cuda_runtime|cuda\.h|cuda_fp16|cub\/|thrust\/|cooperative_groups)|\bcuda(Malloc|Memcpy|Free|Stream|Event|Launch|DeviceSynchronize|Memset|FuncSetAttribute|Occupancy)\w*\s*\(|\bcu(MemAlloc|LaunchKernel|CtxSynchronize|StreamSynchronize)\w*\s*\(/;

export interface Detected {
  language: Language | null;
  reason?: string;
}

/**
 * Language by extension; C++ headers and sources only count when their content shows CUDA or
 * LuisaCompute, because plain C++ has nothing for a GPU reviewer to say.
 */
export function detectLanguage(path: string, text: string, kernelMacros: readonly string[] = []): Detected {
  const byPath = pathLanguage(path);
  if (byPath !== 'content') return byPath;
  if (LUISA_DSL_MARKERS.test(text) || LUISA_DSL_TOKENS.test(text)) return { language: 'luisa-dsl' };
  // A backend source of the library that drives CUDA (`cuMemAllocAsync`, `cuStreamSynchronize`)
  // under `namespace luisa::compute::cuda` is CUDA host code, not DSL code.
  if (CUDA_MARKERS.test(text)) return { language: 'cuda' };
  if (LUISA_LIBRARY_MARKERS.test(text)) return { language: 'luisa-dsl' };
  if (kernelMacros.length && new RegExp(`\\b(${kernelMacros.map(escapeRe).join('|')})\\b`).test(text)) {
    return { language: 'cuda' };
  }
  return { language: null, reason: 'C++ without CUDA or LuisaCompute code' };
}

/**
 * What the path alone says: the language, `content` for C++ (only its text can tell whether it
 * is CUDA, LuisaCompute or plain C++), or no language with the reason. The path gate
 * (`src/diff/gate.ts`) uses it to decide which files are worth reading at all.
 */
export function pathLanguage(path: string): Detected | 'content' {
  if (CUDA_EXT.test(path)) return { language: 'cuda' };
  if (PY_EXT.test(path)) return { language: 'python' };
  if (CPP_EXT.test(path)) return 'content';
  return { language: null, reason: 'not a GPU source type (.cu, .cuh, .py, or C++ with CUDA/LuisaCompute)' };
}

export function escapeRe(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

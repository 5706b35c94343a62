import { cudaModel } from '../../../src/analysis/cuda.js';
import { mentionNodes, mentions, pyCallOf, pyReferenceOf } from '../../../src/analysis/mentions.js';
import { pythonModel, TEST_OR_BENCH_PATH, type PyModel } from '../../../src/analysis/python.js';
import { calleePath, matchesVocab, pyArgs, oneLine } from '../../../src/analysis/syntax.js';
import { defineCheck, type CheckContext } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';
import { escapeRe as esc } from '../../../src/core/regex.js';


const FIX =
  'Keep one strategy per allocation class: drop managed memory from pooled paths (pool-backed `runtime.allocate` / `cudaMallocAsync` buffers, with explicit copies or prefetches where the host needs the data), or keep the managed buffers and do not pool them.';

/** A managed-memory site and, when it builds a pool on managed memory, that construct. */
interface Site {
  node: SyntaxNode;
  poolOverManaged: boolean;
}

const within = (a: SyntaxNode, b: SyntaxNode) => a.startIndex <= b.startIndex && b.endIndex <= a.endIndex;
const truthy = (n: SyntaxNode | undefined) => !!n && !/^(False|None|0)$/.test(n.text.trim());

// ---------------------------------------------------------------- Python

/** `rmm.reinitialize(pool_allocator=True, managed_memory=True)`: RMM's pool and managed switches are keywords. */
function rmmSwitches(m: PyModel, call: SyntaxNode, vocab: readonly string[]): { pool: boolean; managed: boolean } | null {
  const p = m.callPath(call) ?? '';
  if (!/(^|\.)reinitialize$/.test(p) || !m.callMatches(call, vocab)) return null;
  const kw = pyArgs(call).keywords;
  return { pool: truthy(kw.get('pool_allocator')), managed: truthy(kw.get('managed_memory')) };
}

function pythonSites(ctx: CheckContext): { sites: Site[]; pools: SyntaxNode[] } {
  const vocab = ctx.config.vocab;
  if (!mentions(ctx.source, vocab.managed_alloc_calls) && !/\bmanaged_memory\b/.test(ctx.source.text)) return { sites: [], pools: [] };
  const m = ctx.get(pythonModel);
  const sites = new Map<number, Site>();
  const pools: SyntaxNode[] = [];
  const poolVocab = [...vocab.pool_alloc_calls, ...vocab.pool_config_calls];
  for (const name of mentionNodes(ctx.source, poolVocab)) {
    const ref = pyReferenceOf(name);
    const call = ref && pyCallOf(ref);
    if (!call) continue;
    const rmm = rmmSwitches(m, call, vocab.pool_config_calls);
    if (rmm) {
      if (rmm.managed) sites.set(call.id, { node: call, poolOverManaged: rmm.pool });
      else if (rmm.pool) pools.push(call);
      continue;
    }
    if (m.callMatches(call, poolVocab)) pools.push(call);
  }
  // `os.environ.get("VIBESPATIAL_GPU_POOL_LIMIT")`: the process configures the default pool.
  for (const str of mentionNodes(ctx.source, vocab.pool_limit_env_vars)) {
    if (str.type === 'string_content' && vocab.pool_limit_env_vars.includes(str.text)) pools.push(str.parent ?? str);
  }
  // References to managed allocators, called (`malloc_managed(n)`) or passed (`set_allocator(malloc_managed)`).
  for (const name of mentionNodes(ctx.source, vocab.managed_alloc_calls)) {
    const ref = pyReferenceOf(name);
    const par = ref?.parent;
    if (!ref || !par || par.type === 'import_from_statement' || par.type === 'dotted_name' || par.type === 'aliased_import') continue;
    if (!m.pathMatches(ref, vocab.managed_alloc_calls)) continue;
    // Report on the call that takes or makes the managed memory.
    let call: SyntaxNode | null = par?.type === 'call' && par.childForFieldName('function')?.id === ref.id ? par : null;
    if (!call) {
      let a: SyntaxNode | null = par;
      if (a?.type === 'keyword_argument') a = a.parent;
      call = a?.type === 'argument_list' && a.parent?.type === 'call' ? a.parent : null;
    }
    if (!call) continue;
    // `MemoryPool(ManagedMemoryResource())` / `PoolMemoryResource(ManagedMemoryResource(), ...)`: the pool is the site.
    const outer = call.parent?.type === 'argument_list' ? call.parent.parent : call.parent?.type === 'keyword_argument' ? call.parent.parent?.parent : null;
    const poolCall = [call, outer].find((c) => c?.type === 'call' && (m.callMatches(c, vocab.pool_alloc_calls) || m.callMatches(c, vocab.pool_config_calls)));
    if (poolCall) sites.set(poolCall.id, { node: poolCall, poolOverManaged: true });
    else if (!sites.has(call.id)) sites.set(call.id, { node: call, poolOverManaged: false });
  }
  // `upstream = ManagedMemoryResource(); pool = PoolMemoryResource(upstream, ...)`: one construct, reported at the pool.
  for (const pool of pools.filter((p) => p.type === 'call')) {
    const bindings = m.assignmentsIn(m.scopeOf(pool));
    for (const id of pool.childForFieldName('arguments')?.descendantsOfType('identifier') ?? []) {
      const value = (bindings.get(id.text) ?? []).filter((b) => b.node.endIndex <= pool.startIndex).pop()?.value;
      const managed = value && sites.get(value.id);
      if (!managed || managed.poolOverManaged) continue;
      sites.delete(value.id);
      sites.set(pool.id, { node: pool, poolOverManaged: true });
    }
  }
  const over = [...sites.values()].filter((s) => s.poolOverManaged).map((s) => s.node);
  return { sites: [...sites.values()], pools: pools.filter((p) => !over.some((o) => within(o, p) || within(p, o))) };
}

// ---------------------------------------------------------------- CUDA C++

const stripTemplate = (t: string) => t.replace(/\s+/g, '').replace(/<.*$/s, '').replace(/^::/, '');

function cudaSites(ctx: CheckContext): { sites: Site[]; pools: SyntaxNode[] } {
  const vocab = ctx.config.vocab;
  if (!mentions(ctx.source, vocab.managed_alloc_calls) && !/\b__managed__\b|\[\[managed\]\]/.test(ctx.source.text)) return { sites: [], pools: [] };
  const m = ctx.get(cudaModel);
  const root = ctx.source.root;
  const sites: Site[] = [];
  const pools: SyntaxNode[] = [];
  const poolVocab = [...vocab.pool_alloc_calls, ...vocab.pool_config_calls];
  for (const c of m.calls) {
    if (matchesVocab(c.path, vocab.managed_alloc_calls)) sites.push({ node: c.node, poolOverManaged: false });
    else if (matchesVocab(c.path, poolVocab)) pools.push(c.node);
  }
  // `__managed__` globals (masked to `[[managed]]` when the CUDA grammar is unavailable).
  const MANAGED = /\b__managed__\b|\[\[managed\]\]/g;
  for (let k = MANAGED.exec(ctx.source.text); k; k = MANAGED.exec(ctx.source.text)) {
    let d: SyntaxNode | null = root.descendantForIndex(k.index, k.index + k[0].length);
    while (d && d.type !== 'declaration' && d.type !== 'translation_unit') d = d.parent;
    if (d?.type === 'declaration') sites.push({ node: d, poolOverManaged: false });
  }
  // Library pool and managed resource types (`rmm::mr::pool_memory_resource<rmm::mr::managed_memory_resource>`),
  // each taken as the whole (possibly qualified, templated) type its name ends.
  const typeNodes: SyntaxNode[] = [];
  for (const name of mentionNodes(ctx.source, [...vocab.pool_config_calls, ...vocab.managed_alloc_calls].filter((e) => e.includes('::')))) {
    if (name.type !== 'type_identifier') continue;
    let t = name;
    while (t.parent && (t.parent.type === 'qualified_identifier' || t.parent.type === 'template_type')) t = t.parent;
    if (!typeNodes.some((o) => o.id === t.id)) typeNodes.push(t);
  }
  for (const t of typeNodes) {
    const name = stripTemplate(t.text);
    if (!name.includes('::') && t.type !== 'type_identifier') continue;
    const isPool = matchesVocab(name, vocab.pool_config_calls);
    const managedInside = t.descendantsOfType(['qualified_identifier', 'type_identifier']).some((x) => x.id !== t.id && matchesVocab(stripTemplate(x.text), vocab.managed_alloc_calls));
    const stmt = statementOf(t);
    if (isPool && managedInside) sites.push({ node: stmt, poolOverManaged: true });
    else if (isPool) pools.push(stmt);
    else if (matchesVocab(name, vocab.managed_alloc_calls) && !typeNodes.some((o) => o.id !== t.id && within(o, t) && matchesVocab(stripTemplate(o.text), vocab.pool_config_calls))) {
      sites.push({ node: stmt, poolOverManaged: false });
    }
  }
  // A mempool created or fetched with the managed allocation type (`props.allocType = cudaMemAllocationTypeManaged`).
  for (const p of pools.slice()) {
    const fn = m.functionOf(p);
    const scope = fn?.body;
    if (!scope || p.type !== 'call_expression') continue;
    const managedType = (n: SyntaxNode) => n.descendantsOfType(['identifier', 'qualified_identifier']).some((i) => matchesVocab(i.text, vocab.managed_alloc_calls));
    const direct = managedType(p);
    const viaProps = /(^|::)(cudaMemPoolCreate|cuMemPoolCreate)$/.test(calleePath(p.childForFieldName('function')) ?? '') &&
      scope.descendantsOfType('assignment_expression').some((a) => /(\.|->)allocType$/.test(a.childForFieldName('left')?.text ?? '') && managedType(a.childForFieldName('right')!));
    if (direct || viaProps) {
      pools.splice(pools.indexOf(p), 1);
      sites.push({ node: p, poolOverManaged: true });
    }
  }
  const over = sites.filter((s) => s.poolOverManaged).map((s) => s.node);
  // `managed_memory_resource upstream; pool_memory_resource<...> pool{&upstream, n};`: the upstream is part of the pool.
  const upstreamOf = (s: Site) =>
    s.node.type === 'declaration' &&
    s.node.namedChildren.some((d) => {
      const name = (d.type === 'init_declarator' ? d.childForFieldName('declarator') : d)?.text ?? '';
      return /^\w+$/.test(name) && over.some((o) => new RegExp(`\\b${esc(name)}\\b`).test(o.text));
    });
  const dedup = new Map<number, Site>();
  for (const s of sites) {
    if (dedup.has(s.node.id) || (!s.poolOverManaged && (over.some((o) => within(o, s.node)) || upstreamOf(s)))) continue;
    dedup.set(s.node.id, s);
  }
  return { sites: [...dedup.values()], pools: pools.filter((p) => !over.some((o) => within(o, p) || within(p, o))) };
}

/** The declaration, parameter or statement a type is written in. */
function statementOf(n: SyntaxNode): SyntaxNode {
  for (let p = n.parent; p; p = p.parent) {
    if (['declaration', 'field_declaration', 'parameter_declaration', 'expression_statement', 'return_statement', 'alias_declaration'].includes(p.type)) return p;
    if (['compound_statement', 'function_definition', 'translation_unit'].includes(p.type)) break;
  }
  return n;
}

export default defineCheck({
  id: 'memory/managed-memory-with-pool',
  pass: 5,
  severity: 'medium',
  kind: 'performance',
  confidence: 'high',
  languages: ['cuda', 'python'],
  citation: '003 §1.3 Pool vs Managed Memory ("Never combine pooling with managed (unified) memory")',
  summary: 'Managed (unified) memory in a module that also allocates from a memory pool, or a pool built on managed memory.',
  why: 'A pool keeps its blocks resident in VRAM while managed pages migrate between host and device on demand, so mixing the two gives unpredictable migration and fragmentation that neither strategy has alone (003 §1.3).',
  messages: {
    mixed: 'Managed (unified) memory `{{code}}` is mixed with pooled allocation (`{{pool}}`, line {{line}}); this causes unpredictable migration and fragmentation. Pick one strategy per allocation class.',
    poolOverManaged: '`{{code}}` builds a memory pool on managed (unified) memory; this causes unpredictable migration and fragmentation. Pick one strategy per allocation class.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        const lang = ctx.source.language;
        if (lang !== 'cuda' && lang !== 'python') return;
        // Tests exercise both allocators on purpose (interop and oversubscription tests).
        if (TEST_OR_BENCH_PATH.test(ctx.source.path)) return;
        const { sites, pools } = lang === 'cuda' ? cudaSites(ctx) : pythonSites(ctx);
        const pool = pools.sort((a, b) => a.startIndex - b.startIndex)[0];
        for (const s of sites.sort((a, b) => a.node.startIndex - b.node.startIndex)) {
          if (s.poolOverManaged) {
            ctx.report({ node: s.node, messageId: 'poolOverManaged', data: { code: oneLine(s.node.text) }, fix: { description: FIX } });
          } else if (pool) {
            const line = ctx.source.toFile(pool.startPosition.row, pool.startPosition.column)?.line ?? pool.startPosition.row + 1;
            ctx.report({ node: s.node, messageId: 'mixed', data: { code: oneLine(s.node.text), pool: oneLine(pool.text), line }, fix: { description: FIX } });
          }
        }
      },
    };
  },
});

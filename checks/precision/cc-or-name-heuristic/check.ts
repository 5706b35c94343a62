import { usesVocabulary } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';
import type { SyntaxNode } from '../../../src/core/types.js';

const CC_NAME = /^(cc|cc_major|cc_minor|major|minor|cc_ver|compute_capability|capability|sm|sm_version|arch_major|cc_tuple)$/;
const CC_TEXT = /compute_capability|get_device_capability|COMPUTE_CAPABILITY_(MAJOR|MINOR)|cudaDevAttrComputeCapability|\[\s*['"](major|minor)['"]\s*\]|\.(major|minor)\b/;
const NAME_VAR = /^(name|device_name|gpu_name|dev_name|gpu_model|product_name)$/;
const NAME_TEXT = /\[\s*['"]name['"]\s*\]|\bcuDeviceGetName\b|\bget_device_name\b|\.name\b/;
// Marketing names say nothing about fp64 throughput: a GeForce RTX runs it at 1:64, an A100 at 1:2 (003 §6.1).
const GPU_NAME = /RTX|GeForce|GTX|Quadro|TITAN|Tesla|A100|H100|H200|V100|A10G?\b|L4\b|L40|T4\b|B200|GH200|Ada|Ampere|Hopper|Blackwell/;
const COMPARE_OPS = /^(==|!=|<|>|<=|>=|in|not in)$/;
// The compile target legitimately follows the compute capability (catalog do-not-flag).
const ARCH_USE = /sm_|compute_\d|gpu-architecture|--gpu-arch|-arch\b|\barch\b|\bptx\b|cubin/i;
const LOGGING = /^(print|printf|fprintf|log|logger|logging|warnings|LOG|std::cout|std::cerr)(\.|$)|\.(debug|info|warning|warn|error|exception|critical)$/;

function fnOf(n: SyntaxNode): SyntaxNode | null {
  let p = n.parent;
  while (p && p.type !== 'function_definition') p = p.parent;
  return p;
}

export default defineCheck({
  id: 'precision/cc-or-name-heuristic',
  pass: 4,
  severity: 'medium-high',
  kind: 'correctness',
  confidence: 'high',
  languages: ['python', 'cuda'],
  citation:
    '003 §6.1 FP64:FP32 Throughput Ratios ("Detection: Use CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO … Do NOT use compute capability or device name heuristics")',
  summary: 'Kernel precision chosen from the compute capability or the device name instead of the fp64 perf-ratio attribute.',
  why: 'The fp64:fp32 ratio is 1:64 on RTX 3090/4090 but 1:2 on H100 at compute capabilities and names that do not track it, and the project rule no-cc-heuristics mandates CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO (003 §6.1).',
  messages: {
    heuristic:
      'Precision is chosen from the {{what}} (`{{code}}`); query CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO instead.',
  },
  fix: 'judgment',
  needsProjectVocabulary: true,
  create(ctx) {
    const py = ctx.source.language === 'python';
    const selectors = ctx.config.vocab.precision_selectors;
    const root = ctx.source.root;

    /** Names a function binds to the compute capability or the device name. */
    const derived = new Map<number, { cc: Set<string>; name: Set<string> }>();
    const namesIn = (fn: SyntaxNode) => {
      let hit = derived.get(fn.id);
      if (hit) return hit;
      hit = { cc: new Set(), name: new Set() };
      const assigns = fn.descendantsOfType(py ? ['assignment'] : ['init_declarator', 'assignment_expression']);
      for (const a of assigns) {
        const left = a.childForFieldName(py ? 'left' : a.type === 'init_declarator' ? 'declarator' : 'left');
        const right = a.childForFieldName(py ? 'right' : a.type === 'init_declarator' ? 'value' : 'right');
        if (!left || !right) continue;
        const targets = left.type === 'identifier' ? [left] : left.descendantsOfType('identifier');
        const isCc = CC_TEXT.test(right.text) || right.descendantsOfType('identifier').some((i) => hit!.cc.has(i.text));
        const isName = NAME_TEXT.test(right.text) || right.descendantsOfType('identifier').some((i) => hit!.name.has(i.text));
        for (const t of targets) {
          if (isCc) hit.cc.add(t.text);
          else if (isName) hit.name.add(t.text);
        }
      }
      // cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev) writes through its first argument.
      if (!py) {
        for (const c of fn.descendantsOfType('call_expression')) {
          if (!/COMPUTE_CAPABILITY|ComputeCapability/.test(c.text)) continue;
          const first = c.childForFieldName('arguments')?.namedChildren[0];
          const id = first?.descendantsOfType('identifier')[0];
          if (id) hit.cc.add(id.text);
        }
      }
      derived.set(fn.id, hit);
      return hit;
    };

    const operandKind = (op: SyntaxNode, fn: SyntaxNode): 'cc' | 'name' | null => {
      const { cc, name } = namesIn(fn);
      if (/version_info|__version__|CUDART_VERSION|driver_version|runtimeGetVersion/.test(op.text)) return null;
      const ids = op.type === 'identifier' ? [op] : op.descendantsOfType('identifier');
      if (ids.some((i) => cc.has(i.text) || CC_NAME.test(i.text)) || CC_TEXT.test(op.text)) return 'cc';
      if (ids.some((i) => name.has(i.text) || NAME_VAR.test(i.text)) || NAME_TEXT.test(op.text)) return 'name';
      return null;
    };
    const isCcTuple = (op: SyntaxNode) => (op.type === 'tuple' || op.type === 'initializer_list') && op.namedChildren.length === 2 && op.namedChildren.every((c) => /^(integer|number_literal)$/.test(c.type));
    const STRINGS = ['string', 'string_literal', 'raw_string_literal', 'concatenated_string'];
    const isGpuString = (op: SyntaxNode) => (STRINGS.includes(op.type) ? [op] : op.descendantsOfType(STRINGS)).some((s) => GPU_NAME.test(s.text));

    const legitimate = (n: SyntaxNode): boolean => {
      for (let p = n.parent; p && p.type !== 'function_definition'; p = p.parent) {
        if (p.type === 'call' || p.type === 'call_expression') {
          const f = p.childForFieldName('function')?.text ?? '';
          if (LOGGING.test(f)) return true;
        }
        // `if cc >= 90: arch = "sm_90"` picks the compile target, not the precision.
        if (['if_statement', 'conditional_expression', 'assignment', 'init_declarator', 'conditional_expression'].includes(p.type)) {
          const body = p.type === 'if_statement' ? p.childForFieldName('consequence')?.text ?? '' : p.text;
          const left = p.type === 'assignment' ? p.childForFieldName('left')?.text ?? '' : p.type === 'init_declarator' ? p.childForFieldName('declarator')?.text ?? '' : '';
          if ((ARCH_USE.test(body) || ARCH_USE.test(left)) && !usesVocabulary(body, selectors)) return true;
          if (p.type === 'if_statement') break;
        }
      }
      return false;
    };

    const reportedRows = new Set<number>();
    const report = (node: SyntaxNode, what: 'cc' | 'name') => {
      // `prop.major == 8 && prop.minor == 0` is one heuristic: one finding per line.
      if (reportedRows.has(node.startPosition.row)) return;
      reportedRows.add(node.startPosition.row);
      const code = node.text.replace(/\s+/g, ' ');
      ctx.report({
        node,
        messageId: 'heuristic',
        data: { what: what === 'cc' ? 'compute capability' : 'device name', code: code.length > 70 ? code.slice(0, 67) + '...' : code },
        fix: {
          description:
            'Read the ratio: `ratio = cp.cuda.Device().attributes["SingleToDoublePrecisionPerfRatio"]` (or cuDeviceGetAttribute with CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO) and choose fp32 when it is large (1:64 on consumer GPUs).',
        },
      });
    };

    return {
      'source:exit'() {
        const selecting = new Map<number, boolean>();
        const selects = (fn: SyntaxNode) => {
          let s = selecting.get(fn.id);
          if (s === undefined) {
            // A comment naming compute_type does not make the function choose one.
            let text = fn.text;
            for (const c of fn.descendantsOfType('comment').reverse()) text = text.slice(0, c.startIndex - fn.startIndex) + text.slice(c.endIndex - fn.startIndex);
            selecting.set(fn.id, (s = usesVocabulary(text, selectors)));
          }
          return s;
        };
        const comparisons = root.descendantsOfType(py ? 'comparison_operator' : 'binary_expression');
        for (const cmp of comparisons) {
          const fn = fnOf(cmp);
          if (!fn || !selects(fn)) continue;
          const ops = cmp.children.filter((c) => !c.isNamed).map((c) => c.text);
          if (!ops.some((o) => COMPARE_OPS.test(o))) continue;
          // `a < b == c` in C++ nests comparisons: report the outermost one.
          if (cmp.parent?.type === cmp.type && cmp.parent.children.some((c) => !c.isNamed && COMPARE_OPS.test(c.text))) continue;
          const operands = cmp.namedChildren;
          let what: 'cc' | 'name' | null = null;
          for (const o of operands) {
            const k = operandKind(o, fn);
            if (k === 'cc') what = 'cc';
            else if (k === 'name' && operands.some(isGpuString)) what ??= 'name';
          }
          if (!what && operands.some(isCcTuple) && operands.some((o) => /capab|\bcc\b|major/.test(o.text))) what = 'cc';
          if (!what && operands.some(isGpuString) && operands.some((o) => operandKind(o, fn) === 'name')) what = 'name';
          if (!what || legitimate(cmp)) continue;
          report(cmp, what);
        }
        // `name.startswith("GeForce")`, `strstr(prop.name, "RTX")`: a membership test on the device name.
        for (const call of root.descendantsOfType(py ? 'call' : 'call_expression')) {
          const f = call.childForFieldName('function');
          const args = call.childForFieldName('arguments')?.namedChildren ?? [];
          if (!f || !args.some(isGpuString)) continue;
          const fn = fnOf(call);
          if (!fn || !selects(fn)) continue;
          const ftext = f.text;
          const target = py ? f.childForFieldName('object') : args[0];
          const membership = py ? /\.(startswith|endswith|find|index|__contains__)$/.test(ftext) || /^re\.(search|match)$/.test(ftext) : /^(strstr|strcasestr|strncmp|strcmp)$/.test(ftext);
          const subject = py && /^re\./.test(ftext) ? args[1] : target;
          if (!membership || !subject || operandKind(subject, fn) !== 'name' || legitimate(call)) continue;
          if (call.parent && (call.parent.type === 'comparison_operator' || call.parent.type === 'binary_expression')) continue;
          report(call, 'name');
        }
      },
    };
  },
});

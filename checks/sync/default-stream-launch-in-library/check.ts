import { cudaModel } from '../../../src/analysis/cuda.js';
import { streamFacts } from '../../../src/analysis/streams.js';
import { quote } from '../../../src/analysis/syntax.js';
import { defineCheck } from '../../../src/engine/check.js';

const PER_THREAD_BUILD = /CUDA_API_PER_THREAD_DEFAULT_STREAM|--default-stream[= ]per-thread/;
/** Sample and tutorial trees: programs, not libraries (tests, benchmarks and examples are the CUDA model's `testOrBench`). */
const PROGRAM_PATH = /(^|\/)(samples?|demos?|tutorials?|apps?|tools)\//i;

export default defineCheck({
  id: 'sync/default-stream-launch-in-library',
  pass: 2,
  severity: 'medium',
  kind: 'performance',
  confidence: 'medium',
  languages: ['cuda'],
  citation: '003 §2.3 (Default stream serialization); 003 §2.4 (row "Any operation on the null/default stream: Serializes all streams")',
  summary: 'Kernel launch or async copy on the legacy default stream in library code that takes no stream from its caller.',
  why: 'Library code runs inside its caller\'s stream order (PyTorch\'s current stream, a stream the caller passes): work queued on the legacy default stream ignores that order, and the legacy stream waits for and blocks every blocking stream of the process (003 §2.3), so the caller loses its overlap and, with non-blocking streams, its ordering.',
  messages: {
    launch:
      '`{{code}}` runs on the legacy default stream in library code: it ignores the caller\'s stream and serializes with every blocking stream; take a `cudaStream_t` (or the framework\'s current stream, `at::cuda::getCurrentCUDAStream()`) and queue it there.',
  },
  fix: 'judgment',
  create(ctx) {
    return {
      'source:exit'() {
        if (ctx.source.language !== 'cuda' || PER_THREAD_BUILD.test(ctx.source.text)) return;
        const m = ctx.get(cudaModel);
        if (m.testOrBench || PROGRAM_PATH.test(ctx.source.path)) return;
        // An executable owns its streams: its default-stream launches are its own business.
        if (m.functions.some((f) => f.name === 'main' && f.isHost)) return;
        const facts = ctx.get(streamFacts);
        // Code that also queues work on a stream is `sync/null-stream-in-multistream-code`'s.
        if (facts.uses.some((u) => u.stream !== null && !m.inDeviceCode(u.node))) return;
        for (const u of facts.uses) {
          if (u.stream !== null || !(u.kind === 'launch' || u.kind === 'copy' || u.kind === 'memset')) continue;
          const fn = m.functionOf(u.node);
          if (!fn || !fn.isHost || m.inDeviceCode(u.node)) continue;
          if (ctx.config.setupFunctions.test(fn.name) || !fn.node.childForFieldName('type') || m.debugGated(u.node)) continue;
          if (m.streamContract(fn) === 'param') continue;
          ctx.report({ node: u.node, messageId: 'launch', data: { code: quote(u.node) }, fix: { description: 'Add a `cudaStream_t stream` parameter (from Python: the framework\'s current stream) and pass it as the fourth launch argument / the stream argument of the copy.' } });
        }
      },
    };
  },
});

import type { Template } from '../types.js';
import { asyncMemsetMemcpy } from './async-memset-memcpy.js';
import { cachedKernel } from './cached-kernel.js';
import { dtypeComputeType } from './dtype-compute-type.js';
import { hoistLoopReads } from './hoist-loop-reads.js';
import { hostIterate } from './host-iterate.js';
import { int64Index } from './int64-index.js';
import { launchOnStream } from './launch-on-stream.js';
import { occupancyBlockSize } from './occupancy-block-size.js';
import { streamOrderedAlloc } from './stream-ordered-alloc.js';
import { thrustPolicy } from './thrust-policy.js';

/** Pass-7 templates, tried in this order for a finding of one of their rules. */
export const TEMPLATES: readonly Template[] = [
  launchOnStream,
  asyncMemsetMemcpy,
  thrustPolicy,
  streamOrderedAlloc,
  occupancyBlockSize,
  int64Index,
  hoistLoopReads,
  hostIterate,
  dtypeComputeType,
  cachedKernel,
];

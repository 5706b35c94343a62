/**
 * Vocabularies of catalog §1.5. Every check reads names from here (through the resolved config),
 * never from its own list, so a project can map its own helpers onto the same rules.
 * Entries are dotted call paths; a leading `*.` matches any receiver (`*.synchronize`).
 */
export const DEFAULT_VOCABULARIES = {
  sync_calls: [
    'runtime.synchronize', 'cp.cuda.runtime.deviceSynchronize', 'cupy.cuda.runtime.deviceSynchronize',
    'cp.cuda.Device.synchronize', 'cupy.cuda.Device.synchronize', 'cp.cuda.Stream.null.synchronize',
    'cupy.cuda.Stream.null.synchronize', 'cp.cuda.get_current_stream.synchronize', '*.synchronize',
    'cudart.cudaDeviceSynchronize', 'cudart.cudaStreamSynchronize', 'driver.cuCtxSynchronize',
    'driver.cuStreamSynchronize', 'torch.cuda.synchronize', 'cudaDeviceSynchronize', 'cudaStreamSynchronize',
    'cudaEventSynchronize', 'cuCtxSynchronize', 'cuStreamSynchronize',
  ],
  alloc_calls: [
    'cudaMalloc', 'cudaFree', 'cuMemAlloc', 'cuMemAlloc_v2', 'cuMemFree', 'cuMemFree_v2', 'cudart.cudaMalloc',
    'cudart.cudaFree', 'driver.cuMemAlloc', 'driver.cuMemFree', 'cp.cuda.runtime.malloc', 'cp.cuda.runtime.free',
    'cupy.cuda.runtime.malloc', 'cupy.cuda.runtime.free',
  ],
  pool_alloc_calls: [
    'runtime.allocate', 'cudaMallocAsync', 'cudaFreeAsync', 'cudaMallocFromPoolAsync', 'cp.cuda.MemoryPool',
    'cp.cuda.MemoryAsyncPool', 'cupy.cuda.MemoryPool', 'cupy.cuda.MemoryAsyncPool',
  ],
  /** CuPy / project calls whose result lives on the device (DEVICE taint sources, §1.4). */
  device_array_creators: [
    'empty', 'zeros', 'ones', 'full', 'arange', 'asarray', 'array', 'empty_like', 'zeros_like', 'ones_like',
    'full_like', 'concatenate', 'stack', 'hstack', 'vstack', 'where', 'linspace', 'copy', 'ascontiguousarray',
    'repeat', 'tile', 'cumsum', 'sort', 'argsort', 'unique', 'nonzero', 'flatnonzero', 'searchsorted',
    'take', 'diff', 'minimum', 'maximum', 'sqrt', 'abs', 'clip', 'count_nonzero', 'sum', 'min', 'max', 'any',
    'all', 'mean', 'argmax', 'argmin', 'prod', 'bincount', 'isnan', 'isfinite', 'logical_and', 'logical_or',
    'logical_not', 'floor', 'ceil', 'round', 'hypot', 'arctan2', 'cos', 'sin', 'exp', 'log', 'dot', 'matmul',
  ],
  /** Modules whose array functions return device arrays. */
  device_modules: ['cp', 'cupy', 'cupyx', 'cupyx.scipy'],
  /** Project helpers that return device arrays. */
  device_helpers: ['runtime.allocate', 'runtime.from_host', 'runtime.device_array', 'runtime.empty', 'runtime.zeros'],
  /** Kernel launches and launch-like calls (GPU_OP, §1.4). */
  launch_calls: ['runtime.launch', 'runtime.launch_kernel', 'runtime.copy_host_to_device_async', 'runtime.copy_device_to_host_async'],
  /** Objects created by these are kernels; calling them is a launch. */
  kernel_factories: [
    'cp.RawKernel', 'cupy.RawKernel', 'cp.ElementwiseKernel', 'cupy.ElementwiseKernel', 'cp.ReductionKernel',
    'cupy.ReductionKernel', '*.get_function', 'cp.fuse', 'cupy.fuse',
  ],
  /** Explicit device-to-host copies beyond `.get()` / `cp.asnumpy` (D2H, §1.4). */
  d2h_calls: ['runtime.copy_device_to_host', 'cp.asnumpy', 'cupy.asnumpy'],
  /**
   * Asynchronous device-to-host copies: the host buffer is only valid after the next sync, so the
   * transfer costs a pipeline stall at that sync (003 §2.3).
   */
  d2h_async_calls: ['runtime.copy_device_to_host_async', 'cuMemcpyDtoHAsync', 'cuMemcpyDtoHAsync_v2'],
  /** Host-to-device uploads. */
  h2d_calls: [
    'cp.asarray', 'cp.array', 'cupy.asarray', 'cupy.array', 'runtime.from_host', 'runtime.copy_host_to_device',
    'runtime.copy_host_to_device_async', 'driver.cuMemcpyHtoD', 'driver.cuMemcpyHtoDAsync',
  ],
  /**
   * Copies whose direction is an argument; they count as uploads when an argument names
   * `HostToDevice` / `HtoD`.
   */
  memcpy_calls: [
    'cudaMemcpy', 'cudaMemcpyAsync', 'cudart.cudaMemcpy', 'cudart.cudaMemcpyAsync', 'cuMemcpy', 'cuMemcpyAsync',
    'driver.cuMemcpy', 'driver.cuMemcpyAsync',
  ],
  /** Names the host array module (numpy) is imported as when the file's imports do not say otherwise. */
  host_array_modules: ['np', 'numpy'],
  /**
   * numpy calls that only handle dtypes, scalar types or array metadata, never array data
   * (003 §8.2: numpy "used only for dtypes or scalar types" stays allowed).
   */
  numpy_metadata_calls: [
    'dtype', 'iinfo', 'finfo', 'result_type', 'promote_types', 'can_cast', 'min_scalar_type', 'issubdtype',
    'isscalar', 'ndim', 'shape', 'size', 'float16', 'float32', 'float64', 'longdouble', 'int8', 'int16', 'int32',
    'int64', 'uint8', 'uint16', 'uint32', 'uint64', 'intp', 'uintp', 'bool_', 'complex64', 'complex128',
    'errstate', 'seterr', 'printoptions', 'set_printoptions',
  ],
  /**
   * numpy calls that convert their argument into a host ndarray. On a CuPy array they raise
   * TypeError (CuPy refuses implicit `__array__` conversion); on other device arrays they copy to
   * the host silently.
   */
  numpy_conversions: ['asarray', 'array', 'asanyarray', 'ascontiguousarray', 'asfortranarray'],
  /** numpy creators whose contents come from sizes and constants only (003 §8.2 "precursor data"). */
  numpy_array_creators: [
    'arange', 'zeros', 'ones', 'full', 'empty', 'linspace', 'logspace', 'geomspace', 'eye', 'identity', 'tri',
    'indices', 'zeros_like', 'ones_like', 'full_like', 'empty_like',
  ],
  /** numpy transforms whose result is as host-bound as their first (array) argument. */
  numpy_array_transforms: [
    'repeat', 'tile', 'cumsum', 'cumprod', 'concatenate', 'stack', 'hstack', 'vstack', 'column_stack', 'diff',
    'where', 'take', 'sort', 'argsort', 'unique', 'searchsorted', 'flatnonzero', 'nonzero', 'bincount', 'clip',
    'minimum', 'maximum', 'reshape', 'ravel', 'flip', 'roll', 'pad', 'append', 'broadcast_to', 'outer',
  ],
  /**
   * numpy functions whose `cp.<name>` takes the same arguments, so `np.<name>` → `cp.<name>` is a
   * safe one-line rewrite (catalog `host-device/numpy-*`). On a CuPy argument NumPy's
   * `__array_function__` / `__array_ufunc__` protocols already dispatch to exactly this function.
   */
  cupy_same_signature: [
    'arange', 'zeros', 'ones', 'full', 'empty', 'linspace', 'where', 'concatenate', 'stack', 'hstack', 'vstack',
    'argsort', 'sort', 'cumsum', 'diff', 'searchsorted', 'take', 'clip', 'minimum', 'maximum', 'sqrt', 'abs',
    'absolute', 'square', 'hypot', 'arctan2', 'sin', 'cos', 'exp', 'log', 'floor', 'ceil', 'isnan', 'isfinite',
    'logical_and', 'logical_or', 'logical_not', 'add', 'subtract', 'multiply', 'divide', 'sum', 'mean', 'min',
    'max', 'amin', 'amax', 'argmax', 'argmin', 'any', 'all', 'count_nonzero', 'nonzero', 'flatnonzero',
    'bincount', 'dot', 'matmul',
  ],
  /** The sanctioned single sync for a scatter total (003 §8.2). */
  count_scatter_calls: ['count_scatter_total', 'runtime.count_scatter_total'],
  /** Returns a host pointer/handle to device memory: metadata, not a transfer. */
  pointer_calls: ['runtime.pointer'],
  implicit_sync_calls: [
    'cudaMemset', 'cudaMemcpy', 'cudaMemcpy2D', 'cudaMemcpyToSymbol', 'cudaMallocHost', 'cudaHostAlloc',
    'cudaHostRegister', 'cp.cuda.alloc_pinned_memory', 'cupyx.empty_pinned', 'cupyx.zeros_pinned',
    'cudaDeviceSetCacheConfig', 'cudaFuncSetCacheConfig', 'cudaDeviceSetSharedMemConfig',
  ],
  cccl_calls: [
    'exclusive_sum', 'inclusive_sum', 'exclusive_scan', 'inclusive_scan', 'reduce', 'reduce_into',
    'segmented_reduce', 'sort_pairs', 'sort_keys', 'radix_sort', 'merge_sort', 'unique_by_key', 'select',
    'partition', 'histogram', 'transform',
  ],
  /** Module objects any call on which is a CCCL primitive. */
  cccl_modules: ['cuda.cccl', 'cuda.compute', 'cccl', 'parallel', 'algorithms'],
  vibespatial_helpers: [
    'runtime.launch', 'runtime.launch_config', 'runtime.allocate', 'runtime.from_host', 'runtime.pointer',
    'runtime.copy_device_to_host', 'runtime.copy_device_to_host_async', 'runtime.compile_kernels',
    'runtime.memory_pool_stats', 'make_kernel_cache_key', 'count_scatter_total', 'request_warmup',
    'request_nvrtc_warmup', 'PrecisionPlan', 'PrecisionMode', 'plan.compute_precision',
    'plan.center_coordinates', 'plan.compensation', '_WORK_BINS',
  ],
  /** Array attributes that are host metadata, never a transfer. */
  metadata_attributes: ['shape', 'size', 'ndim', 'dtype', 'nbytes', 'strides', 'itemsize', 'data', 'ptr', 'device', 'flags', 'T_shape'],
  /** Calls that mark a CPU fallback branch (003 §8.2 numpy exception) when they appear in a branch condition. */
  cpu_fallback_markers: ['cpu', 'fallback', 'host', 'numpy', 'use_gpu', 'gpu_available', 'has_gpu', 'HAS_GPU', 'is_available'],
  constructive_kernel_names: ['clip', 'overlay', 'intersect', 'union', 'difference', 'symdiff', 'split', 'snap', 'polygonize', 'buffer', 'construct'],
  metric_kernel_names: ['area', 'length', 'perimeter', 'centroid', 'distance', 'hausdorff', 'frechet'],
  coord_names: ['pts', 'points', 'coords', 'xy', 'xyz', 'vert', 'vertices', 'point'],
  /** Macros that expand to `__global__` (RAFT_KERNEL-style). */
  kernel_macros: ['RAFT_KERNEL', 'CUSPATIAL_KERNEL', 'KERNEL', 'GLOBAL'],
};

export type VocabularyName = keyof typeof DEFAULT_VOCABULARIES;
export type Vocabularies = Record<VocabularyName, string[]>;

export const DEFAULT_HOT_PATH_FUNCTIONS = '^(dispatch|launch|run|execute|_gpu_|.*_kernel$|.*_pipeline$)';

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
    // Same device-wide sync as cudaMalloc/cudaFree (pitched, 3D and array allocations).
    'cudaMallocPitch', 'cudaMalloc3D', 'cudaMallocArray', 'cudaMalloc3DArray', 'cudaFreeArray', 'cuMemAllocPitch',
    'cuMemAllocPitch_v2',
    // `cupy.cuda.Memory(n)` calls runtime.malloc directly, bypassing the CuPy pool; runtime.free on release.
    'cp.cuda.Memory', 'cupy.cuda.Memory', 'cp.cuda.memory.Memory', 'cupy.cuda.memory.Memory',
  ],
  pool_alloc_calls: [
    'runtime.allocate', 'cudaMallocAsync', 'cudaFreeAsync', 'cudaMallocFromPoolAsync', 'cp.cuda.MemoryPool',
    'cp.cuda.MemoryAsyncPool', 'cupy.cuda.MemoryPool', 'cupy.cuda.MemoryAsyncPool',
  ],
  /** Raw device frees: device-wide sync for `cudaMalloc` memory, none for stream-ordered memory (003 §1.4). */
  raw_free_calls: [
    'cudaFree', 'cuMemFree', 'cuMemFree_v2', 'cudart.cudaFree', 'driver.cuMemFree', 'cp.cuda.runtime.free', 'cupy.cuda.runtime.free',
  ],
  /** Stream-ordered frees: the block returns to its mempool in stream order (003 §1.4, §2.2). */
  async_free_calls: [
    'cudaFreeAsync', 'cuMemFreeAsync', 'cudart.cudaFreeAsync', 'driver.cuMemFreeAsync', 'cp.cuda.runtime.freeAsync',
    'cupy.cuda.runtime.freeAsync',
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
  /**
   * CuPy functions (under `device_modules`) that return a Python list or tuple of device arrays, not one
   * array: iterating their result walks arrays, not elements.
   */
  device_sequence_calls: ['split', 'array_split', 'hsplit', 'vsplit', 'dsplit', 'meshgrid', 'broadcast_arrays', 'nonzero'],
  /**
   * CuPy functions and array methods whose output size depends on the data (`(labels == v).nonzero()`,
   * `cp.unique(x)`): CuPy reads the element count back to the host to allocate the result, a blocking
   * device→host copy on every call.
   */
  data_sized_calls: ['nonzero', 'flatnonzero', 'argwhere', 'unique', 'compress', 'extract'],
  /**
   * Array functions (CuPy, or NumPy dispatching to CuPy) that join arrays into one new allocation; called
   * on an array's own previous value inside a loop they grow it one reallocation per iteration (003 §1.6).
   */
  array_join_calls: ['concatenate', 'append', 'hstack', 'vstack', 'column_stack', 'row_stack', 'concat'],
  /** Calls that reallocate a device array to a new size (`X.resize(n)`, `cp.resize(X, n)`, `runtime.resize(X, n)`). */
  resize_calls: ['*.resize', 'runtime.resize'],
  /** Reductions whose CuPy result is a 0-d device array (a few bytes, not a buffer worth releasing early). */
  scalar_reduction_calls: ['sum', 'count_nonzero', 'max', 'min', 'amax', 'amin', 'any', 'all', 'mean', 'argmax', 'argmin', 'prod', 'dot', 'vdot', 'item', 'nanmax', 'nanmin', 'nansum'],
  /** Modules whose array functions return device arrays. */
  device_modules: ['cp', 'cupy', 'cupyx', 'cupyx.scipy'],
  /** Tensor libraries whose functions of device tensors return device tensors (`torch.linalg.norm(t_gpu)`). */
  tensor_modules: ['torch', 'warp'],
  /** Functions of `tensor_modules` that return host values even for device arguments. */
  tensor_host_calls: ['is_tensor', 'numel', 'is_floating_point', 'is_complex', 'typename', 'type_repr', 'get_device', 'device'],
  /** Array factories that allocate on the GPU unless given `device="cpu"` (warp's default device is CUDA). */
  device_default_factories: [
    'warp.array', 'warp.zeros', 'warp.empty', 'warp.ones', 'warp.full', 'warp.zeros_like', 'warp.empty_like',
    'warp.ones_like', 'warp.full_like', 'warp.clone', 'warp.from_numpy', 'warp.from_torch',
  ],
  /** Tensor factories that allocate on the device named by their `device=` argument (CPU by default). */
  tensor_factories: [
    'torch.empty', 'torch.zeros', 'torch.ones', 'torch.full', 'torch.arange', 'torch.tensor', 'torch.as_tensor',
    'torch.rand', 'torch.randn', 'torch.randint', 'torch.linspace', 'torch.eye', 'torch.empty_strided',
  ],
  /** Kernel launches of tensor libraries (`wp.launch(kernel, dim=n, inputs=[...])`). */
  tensor_launch_calls: ['warp.launch', 'warp.launch_tiled'],
  /** Project helpers that return device arrays. */
  device_helpers: ['runtime.allocate', 'runtime.from_host', 'runtime.device_array', 'runtime.empty', 'runtime.zeros'],
  /** Kernel launches and launch-like calls (GPU_OP, §1.4). */
  launch_calls: [
    'runtime.launch', 'runtime.launch_kernel', 'runtime.copy_host_to_device_async', 'runtime.copy_device_to_host_async',
    // cuda-python / CuPy runtime spellings of the CUDA GPU_OPs (§1.4).
    'cudaLaunchKernel', 'cuLaunchKernel', 'cudaLaunchCooperativeKernel', 'cuLaunchCooperativeKernel', 'cudaMemcpyAsync',
    'cudaMemsetAsync', 'cuMemcpyHtoDAsync', 'cuMemcpyDtoDAsync', 'cuMemsetD8Async', 'cuMemsetD32Async',
    'cp.cuda.runtime.memcpyAsync', 'cupy.cuda.runtime.memcpyAsync', 'cp.cuda.runtime.memsetAsync', 'cupy.cuda.runtime.memsetAsync',
  ],
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
  /**
   * Device allocations whose first positional argument (or `shape=`) is the buffer size
   * (catalog `host-device/alloc-sized-from-device-value`).
   */
  sized_alloc_calls: [
    'runtime.allocate', 'runtime.empty', 'runtime.zeros', 'cp.empty', 'cp.zeros', 'cp.ones', 'cp.full', 'cp.ndarray',
    'cupy.empty', 'cupy.zeros', 'cupy.ones', 'cupy.full', 'cupy.ndarray',
  ],
  /** The sanctioned single sync for a scatter total (003 §8.2). */
  count_scatter_calls: ['count_scatter_total', 'runtime.count_scatter_total'],
  /** Returns a host pointer/handle to device memory: metadata, not a transfer. */
  pointer_calls: ['runtime.pointer'],
  /**
   * Blocking (non-async) memset/memcpy: they run on the legacy default stream, which serializes
   * against every blocking stream (003 §2.4; `sync/blocking-memset-memcpy`).
   */
  blocking_memcpy_calls: [
    'cudaMemset', 'cudaMemset2D', 'cudaMemset3D', 'cudaMemcpy', 'cudaMemcpy2D', 'cudaMemcpy3D', 'cudaMemcpyToSymbol',
    'cudaMemcpyFromSymbol', 'cudaMemcpyPeer', 'cuMemcpy', 'cuMemcpyHtoD', 'cuMemcpyDtoH', 'cuMemcpyDtoD', 'cuMemcpyHtoD_v2',
    'cuMemcpyDtoH_v2', 'cuMemcpyDtoD_v2', 'cuMemsetD8', 'cuMemsetD16', 'cuMemsetD32', 'cuMemsetD8_v2', 'cuMemsetD16_v2',
    'cuMemsetD32_v2', 'cp.cuda.runtime.memcpy', 'cupy.cuda.runtime.memcpy', 'cp.cuda.runtime.memset', 'cupy.cuda.runtime.memset',
  ],
  /** Page-locked host allocation and registration: device-wide sync (003 §2.4; `sync/pinned-alloc-in-hot-path`). */
  pinned_alloc_calls: [
    'cudaMallocHost', 'cudaHostAlloc', 'cudaHostRegister', 'cudaFreeHost', 'cudaHostUnregister', 'cuMemAllocHost',
    'cuMemAllocHost_v2', 'cuMemHostAlloc', 'cuMemHostRegister', 'cuMemHostRegister_v2', 'cuMemFreeHost', 'cuMemHostUnregister',
    'cp.cuda.runtime.hostAlloc', 'cupy.cuda.runtime.hostAlloc', 'cp.cuda.runtime.freeHost', 'cupy.cuda.runtime.freeHost',
    'cp.cuda.runtime.hostRegister', 'cupy.cuda.runtime.hostRegister', 'cp.cuda.runtime.hostUnregister',
    'cupy.cuda.runtime.hostUnregister',
  ],
  /**
   * CuPy pinned helpers that go through the current pinned allocator: CuPy installs a
   * PinnedMemoryPool at import, which reuses freed blocks of the same (512-byte rounded) size.
   */
  pooled_pinned_alloc_calls: [
    'cp.cuda.alloc_pinned_memory', 'cupy.cuda.alloc_pinned_memory', 'cupyx.empty_pinned', 'cupyx.zeros_pinned',
    'cupyx.empty_like_pinned', 'cupyx.zeros_like_pinned',
  ],
  /** L1/shared-memory configuration changes: device-wide sync (003 §2.4; `sync/cache-config-change-in-hot-path`). */
  cache_config_calls: [
    'cudaDeviceSetCacheConfig', 'cudaFuncSetCacheConfig', 'cudaDeviceSetSharedMemConfig', 'cudaFuncSetSharedMemConfig',
    'cuFuncSetCacheConfig', 'cuCtxSetCacheConfig', 'cuCtxSetSharedMemConfig', 'cuFuncSetSharedMemConfig',
  ],
  /** Function-attribute setters; they change the cache configuration when given a `carveout_attributes` name. */
  func_set_attribute_calls: ['cudaFuncSetAttribute', 'cuFuncSetAttribute'],
  /** The L1/shared carveout attribute (C++ enums, and CuPy's settable RawKernel attribute). */
  carveout_attributes: ['cudaFuncAttributePreferredSharedMemoryCarveout', 'CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT', 'preferred_shared_memory_carveout'],
  /**
   * Library types whose constructor allocates with raw cudaMalloc (thrust's default device
   * allocator); a type written with an explicit allocator argument is not matched.
   */
  raw_alloc_types: ['thrust::device_vector'],
  /**
   * CUDA arrays (texture/surface memory): they sync like cudaMalloc, but have no pooled or
   * stream-ordered form, so "use the pool" does not apply to them.
   */
  array_alloc_calls: [
    'cudaMallocArray', 'cudaMalloc3DArray', 'cudaMallocMipmappedArray', 'cudaFreeArray', 'cudaFreeMipmappedArray',
    'cuArrayCreate', 'cuArrayCreate_v2', 'cuArray3DCreate', 'cuArray3DCreate_v2', 'cuMipmappedArrayCreate',
  ],
  /** Stream-ordered allocations from a CUDA mempool (003 §1.4, §2.2; `memory/async-pool-release-threshold`). */
  async_alloc_calls: [
    'cudaMallocAsync', 'cudaMallocFromPoolAsync', 'cuMemAllocAsync', 'cuMemAllocFromPoolAsync', 'cp.cuda.malloc_async',
    'cupy.cuda.malloc_async', 'cp.cuda.memory.malloc_async', 'cupy.cuda.memory.malloc_async',
    // CuPy's runtime bindings return a raw pointer (catalog `sync/cudafree-of-async-allocation`).
    'cp.cuda.runtime.mallocAsync', 'cupy.cuda.runtime.mallocAsync', 'cp.cuda.runtime.mallocFromPoolAsync',
    'cupy.cuda.runtime.mallocFromPoolAsync',
  ],
  /**
   * Pool setup beyond the allocating calls of `pool_alloc_calls`: CuPy's default pool, CUDA mempool
   * handles and attributes, and RMM / CUB pool resources (C++ types are matched where they are constructed).
   */
  pool_config_calls: [
    'cp.get_default_memory_pool', 'cupy.get_default_memory_pool', 'runtime.configure_pool', 'cudaDeviceGetDefaultMemPool',
    'cudaDeviceGetMemPool', 'cudaDeviceSetMemPool', 'cudaMemPoolCreate', 'cudaMemPoolSetAttribute', 'cuDeviceGetDefaultMemPool',
    'cuDeviceGetMemPool', 'cuDeviceSetMemPool', 'cuMemPoolCreate', 'cuMemPoolSetAttribute', 'cp.cuda.runtime.memPoolSetAttribute',
    'cudaMemGetDefaultMemPool', 'cudaMemGetMemPool', 'cudaMemSetMemPool', 'cuMemGetDefaultMemPool', 'cuMemGetMemPool', 'cuMemSetMemPool',
    'cupy.cuda.runtime.memPoolSetAttribute', 'cuMemAllocAsync', 'cuMemAllocFromPoolAsync', 'cp.cuda.malloc_async',
    'cupy.cuda.malloc_async', 'rmm.reinitialize', 'rmm.mr.PoolMemoryResource', 'rmm.mr.ArenaMemoryResource',
    'rmm.mr.CudaAsyncMemoryResource', 'rmm.mr.BinningMemoryResource', 'rmm.mr.FixedSizeMemoryResource',
    'rmm::mr::pool_memory_resource', 'rmm::mr::arena_memory_resource', 'rmm::mr::cuda_async_memory_resource',
    'rmm::mr::binning_memory_resource', 'rmm::mr::fixed_size_memory_resource', 'cub::CachingDeviceAllocator',
  ],
  /**
   * Managed (unified) memory: allocation calls, CuPy allocator functions, RMM resources, and the mempool
   * allocation type of a managed pool (003 §1.3; `memory/managed-memory-with-pool`).
   */
  managed_alloc_calls: [
    'cudaMallocManaged', 'cuMemAllocManaged', 'cp.cuda.malloc_managed', 'cupy.cuda.malloc_managed',
    'cp.cuda.memory.malloc_managed', 'cupy.cuda.memory.malloc_managed', 'cp.cuda.ManagedMemory', 'cupy.cuda.ManagedMemory',
    'cp.cuda.memory.ManagedMemory', 'cupy.cuda.memory.ManagedMemory', 'rmm.mr.ManagedMemoryResource',
    'rmm::mr::managed_memory_resource', 'cudaMemAllocationTypeManaged', 'CU_MEM_ALLOCATION_TYPE_MANAGED',
  ],
  /**
   * Calls that install or wrap an allocator function or object: what they receive is the pool
   * implementation itself (`memory/raw-cuda-malloc` do-not-flag).
   */
  allocator_hooks: [
    'cp.cuda.set_allocator', 'cupy.cuda.set_allocator', 'cp.cuda.PythonFunctionAllocator', 'cupy.cuda.PythonFunctionAllocator',
    'cp.cuda.CFunctionAllocator', 'cupy.cuda.CFunctionAllocator', 'cp.cuda.MemoryPool', 'cupy.cuda.MemoryPool',
    'rmm.mr.CallbackMemoryResource', 'numba.cuda.set_memory_manager', 'cuda.set_memory_manager',
    'torch.cuda.memory.CUDAPluggableAllocator', 'torch.cuda.memory.change_current_allocator', 'rmm::mr::callback_memory_resource',
  ],
  /** Base classes of allocator implementations (CuPy, RMM, Numba EMM, cuda.core, std::pmr / CCCL). */
  allocator_bases: [
    'MemoryPool', 'MemoryAsyncPool', 'BaseMemory', 'DeviceMemoryResource', 'MemoryResource', 'BaseCUDAMemoryManager',
    'HostOnlyCUDAMemoryManager', 'device_memory_resource', 'memory_resource', 'stream_ordered_memory_resource',
  ],
  /**
   * Free and total device memory: calls returning `(free, total)` (`(err, free, total)` in cuda-python) or
   * writing them through `&free, &total`; `cuDeviceTotalMem` writes the total first (`memory/pool-limit-full-vram`).
   */
  mem_info_calls: [
    'cp.cuda.runtime.memGetInfo', 'cupy.cuda.runtime.memGetInfo', 'cudaMemGetInfo', 'cuMemGetInfo', 'cuMemGetInfo_v2',
    'torch.cuda.mem_get_info', 'rmm::available_device_memory', 'rmm.mr.available_device_memory', 'mem_info',
    'cuDeviceTotalMem', 'cuDeviceTotalMem_v2',
  ],
  /** Device-property fields holding the total device memory in bytes. */
  total_memory_fields: ['totalGlobalMem', 'total_memory'],
  /** Environment variables that cap the device memory pool ("90%" or bytes). */
  pool_limit_env_vars: ['VIBESPATIAL_GPU_POOL_LIMIT', 'CUPY_GPU_MEMORY_LIMIT'],
  /**
   * Names that set a mempool's release threshold: the attribute enums, and keyword or helper names of
   * libraries that set it (RMM's `release_threshold=`, Warp's `set_mempool_release_threshold`).
   */
  release_threshold_settings: [
    'cudaMemPoolAttrReleaseThreshold', 'CU_MEMPOOL_ATTR_RELEASE_THRESHOLD', 'release_threshold', 'set_mempool_release_threshold',
  ],
  /** Comment words that mark a deployment where several processes share the GPU (003 §1.4 scope). */
  shared_gpu_markers: ['shared gpu', 'shared-gpu', 'gpu is shared', 'multi-process', 'multiprocess', 'multi-tenant', 'mps'],
  /** Mempool export/import for other processes (IPC): the pool is shared across processes. */
  shared_pool_calls: [
    'cudaMemPoolExportToShareableHandle', 'cudaMemPoolImportFromShareableHandle', 'cudaMemPoolExportPointer',
    'cudaMemPoolImportPointer', 'cuMemPoolExportToShareableHandle', 'cuMemPoolImportFromShareableHandle',
    'cuMemPoolExportPointer', 'cuMemPoolImportPointer',
  ],
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
  /**
   * vibeSpatial CCCL wrappers that take a `synchronize=` keyword and synchronize unless it is False
   * (003 §2.3; catalog `sync/cccl-implicit-synchronize`). A wrapper defined in the reviewed file is
   * judged by its own default instead.
   */
  cccl_sync_wrappers: ['exclusive_sum', 'inclusive_sum', 'reduce', 'segmented_reduce', 'sort_pairs'],
  /**
   * Wrappers whose `synchronize` defaults to False in this project (newer vibeSpatial releases): they
   * are taken off `cccl_sync_wrappers`, which can only be extended.
   */
  cccl_async_wrappers: [] as string[],
  /**
   * Words in a comment on (or directly above) a synchronizing line that mark it as a deliberate fence
   * the project has reviewed; the sync rules leave such lines alone.
   */
  sync_fence_markers: ['fence', 'sync-ok', 'sync: ok', 'intentional sync', 'deliberate sync', 'required sync', 'sync required'],
  /** Host clocks, CUDA events and profiler ranges: a sync next to one of these is a measurement. */
  timing_calls: [
    'time.perf_counter', 'time.perf_counter_ns', 'time.time', 'time.time_ns', 'time.monotonic', 'time.monotonic_ns',
    'time.process_time', 'perf_counter', 'perf_counter_ns', 'monotonic', 'now', 'elapsed_time',
    'cp.cuda.get_elapsed_time', 'cupy.cuda.get_elapsed_time', 'record', 'nvtx.push_range', 'nvtx.pop_range',
    'cudaEventRecord', 'cudaEventElapsedTime', 'cuEventRecord', 'cuEventElapsedTime', 'clock', 'gettimeofday',
    'clock_gettime', 'MPI_Wtime', 'nvtxRangePush', 'nvtxRangePushA', 'nvtxRangePop', 'nvtxRangeStartA', 'nvtxRangeEnd',
  ],
  /**
   * Calls that create a new stream (CuPy, cuda-python runtime/driver, CuPy runtime bindings, CUDA C++).
   * Wrappers of existing handles (`ExternalStream`, `Stream.from_external`) and CuPy's `Stream(null=True)` /
   * `Stream(ptds=True)` create none (`sync/too-many-streams`, `sync/stream-for-dependent-or-tiny-work`).
   */
  stream_create_calls: [
    'cp.cuda.Stream', 'cupy.cuda.Stream', 'cp.cuda.stream.Stream', 'cupy.cuda.stream.Stream', 'cudaStreamCreate',
    'cudaStreamCreateWithFlags', 'cudaStreamCreateWithPriority', 'cuStreamCreate', 'cuStreamCreateWithPriority',
    'cp.cuda.runtime.streamCreate', 'cp.cuda.runtime.streamCreateWithFlags', 'cp.cuda.runtime.streamCreateWithPriority',
    'cupy.cuda.runtime.streamCreate', 'cupy.cuda.runtime.streamCreateWithFlags', 'cupy.cuda.runtime.streamCreateWithPriority',
    'runtime.create_stream',
  ],
  /** Queries of the valid stream-priority range (003 §2.5; `sync/stream-priority-literal`). */
  stream_priority_range_calls: [
    'cudaDeviceGetStreamPriorityRange', 'cuCtxGetStreamPriorityRange', 'cp.cuda.runtime.deviceGetStreamPriorityRange',
    'cupy.cuda.runtime.deviceGetStreamPriorityRange',
  ],
  /**
   * Names that carry the L2 persisting set-aside or the figures it is sized from (003 §4.3: set-aside ≤
   * min(0.75·l2CacheSize, persistingL2CacheMaxSize)); a window bounded by one of them fits the set-aside
   * (`memory/l2-persisting-window-unbounded`).
   */
  l2_set_aside_names: [
    'persistingL2CacheMaxSize', 'cudaLimitPersistingL2CacheSize', 'CU_LIMIT_PERSISTING_L2_CACHE_SIZE', 'l2CacheSize',
    'cudaDevAttrL2CacheSize', 'cudaDevAttrMaxPersistingL2CacheSize', 'CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE',
    'CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE', 'L2CacheSize', 'MaxPersistingL2CacheSize',
  ],
  /** Module objects any call on which is a CCCL primitive. */
  cccl_modules: ['cuda.cccl', 'cuda.compute', 'cccl', 'parallel', 'algorithms'],
  vibespatial_helpers: [
    'runtime.launch', 'runtime.launch_config', 'runtime.allocate', 'runtime.from_host', 'runtime.pointer',
    'runtime.copy_device_to_host', 'runtime.copy_device_to_host_async', 'runtime.compile_kernels',
    'runtime.memory_pool_stats', 'make_kernel_cache_key', 'count_scatter_total', 'request_warmup',
    'request_nvrtc_warmup', 'PrecisionPlan', 'PrecisionMode', 'plan.compute_precision',
    'plan.center_coordinates', 'plan.compensation', '_WORK_BINS',
    // The precision typedef of vibeSpatial kernel templates (catalog Pass 4 vocabulary); it is what a `.cu` file of the project shows.
    'compute_t',
  ],
  /** Helpers that build a kernel module-cache key from a name and the (formatted) source (003 §7.1, §7.2). */
  kernel_cache_key_calls: ['make_kernel_cache_key'],
  /** Runtime calls that compile kernel source with NVRTC and take a `cache_key=` (003 §7.2). */
  kernel_compile_calls: ['compile_kernels'],
  /** Direct NVRTC program creation/compilation (cuda-python), which bypasses the runtime's module cache. */
  nvrtc_program_calls: ['nvrtcCreateProgram', 'nvrtcCompileProgram'],
  /** File stems of the module that implements the runtime's compile/cache layer (it may call NVRTC directly). */
  kernel_runtime_modules: ['runtime', 'cuda_runtime', '_runtime', 'nvrtc_runtime', '_cuda_runtime'],
  /**
   * Names that carry the precision variant of a kernel template (`.format(compute_type=...)`,
   * `plan.compute_precision`); a cache-key name interpolating one covers the precision (003 §7.1, §6.6).
   */
  precision_names: ['compute_type', 'compute_precision', 'precision', 'compute_dtype'],
  /** Array attributes that are host metadata, never a transfer. */
  metadata_attributes: ['shape', 'size', 'ndim', 'dtype', 'nbytes', 'strides', 'itemsize', 'data', 'ptr', 'device', 'flags', 'T_shape'],
  /** Calls that mark a CPU fallback branch (003 §8.2 numpy exception) when they appear in a branch condition. */
  cpu_fallback_markers: ['cpu', 'fallback', 'host', 'numpy', 'use_gpu', 'gpu_available', 'has_gpu', 'HAS_GPU', 'is_available'],
  constructive_kernel_names: ['clip', 'overlay', 'intersect', 'union', 'difference', 'symdiff', 'split', 'snap', 'polygonize', 'buffer', 'construct'],
  metric_kernel_names: ['area', 'length', 'perimeter', 'centroid', 'distance', 'hausdorff', 'frechet'],
  coord_names: ['pts', 'points', 'coords', 'xy', 'xyz', 'vert', 'vertices', 'point'],
  /** Kernels that write bounding boxes for coarse filters (003 §6.3; `precision/nonconservative-fp32-bounds`). */
  bounds_kernel_names: ['bounds', 'bbox', 'envelope', 'mbr'],
  /** PREDICATE kernel names (003 §6.2: fp32 coarse + selective fp64 refinement); `precision/fast-math-in-precision-critical`. */
  predicate_kernel_names: ['contains', 'within', 'intersects', 'pip', 'predicate', 'covers', 'touches'],
  /**
   * Index, counting and flag-setting kernel names (003 §6.3 "Integer-like operations: counting, indexing, flag
   * setting"); with `coarse_kernel_names` they are never precision-critical.
   */
  integer_like_kernel_names: ['coarse', 'index', 'flag', 'count', 'mask', 'morton', 'hilbert', 'histogram', 'scatter_offsets'],
  /**
   * Names that select the kernel precision (003 §6.2 ADR-0002): a function mentioning one of them decides
   * between fp32 and fp64 (`precision/cc-or-name-heuristic`).
   */
  precision_selectors: ['compute_type', 'PrecisionMode', 'PrecisionPlan', 'use_fp64', 'use_fp32', 'compute_precision', 'use_double', 'compute_t'],
  /** Operation names whose reductions must be reproducible (003 §11: "overlay area, dissolve"). */
  reproducible_reduction_names: ['overlay', 'dissolve', 'area', 'union', 'aggregate'],
  /**
   * Calls that enumerate or select among several GPUs; a module with none of them runs on one GPU
   * (`precision/cccl-gpu-to-gpu-single-gpu`, `precision/cccl-multi-gpu-needs-gpu-to-gpu`).
   */
  multi_device_calls: [
    'cudaSetDevice', 'cudaGetDeviceCount', 'cuDeviceGetCount', 'cuDeviceGet', 'cuCtxSetCurrent', 'cp.cuda.runtime.setDevice',
    'cupy.cuda.runtime.setDevice', 'cp.cuda.runtime.getDeviceCount', 'cupy.cuda.runtime.getDeviceCount', 'cudart.cudaSetDevice',
    'cudart.cudaGetDeviceCount', 'driver.cuDeviceGetCount', 'runtime.getDeviceCount', 'runtime.device_count', 'torch.cuda.device_count',
    'torch.cuda.set_device', 'ncclCommInitRank', 'ncclCommInitAll', 'ncclAllReduce', 'nccl.NcclCommunicator', 'cupy.cuda.nccl.NcclCommunicator',
  ],
  /**
   * Precision vocabulary (catalog §2.4, 003 §6.2/§7.1): the `.format(...)` keyword (and host variable) that
   * carries the compute type into a kernel template.
   */
  precision_type_params: ['compute_type'],
  /** Typedef names a precision template declares for its arithmetic type (`typedef {compute_type} compute_t;`). */
  precision_typedefs: ['compute_t'],
  /** Names a PrecisionPlan is passed or bound under in a dispatch function. */
  precision_plan_names: ['plan', 'precision_plan'],
  /** Calls that build or select a PrecisionPlan. */
  precision_plan_factories: ['PrecisionPlan', 'select_precision_plan', 'make_precision_plan', 'resolve_precision_plan', 'precision_plan_for'],
  /** Plan fields that choose the compute precision (`plan.compute_precision`). */
  precision_compute_fields: ['compute_precision'],
  /** Plan fields that switch coordinate centering on (`plan.center_coordinates`). */
  precision_center_fields: ['center_coordinates'],
  /** Kernel parameters that receive the centering origin (003 §7.1 `center_x`, `center_y`). */
  center_param_names: ['center_x', 'center_y', 'center_z', 'centre_x', 'centre_y', 'cx', 'cy', 'cz', 'origin_x', 'origin_y'],
  /** COARSE kernels (003 §6.2/§6.3: bounds, index); fp32 bounding-box prefilters are fine inside constructive pipelines. */
  coarse_kernel_names: ['bounds', 'bbox', 'envelope', 'mbr', 'extent', 'prefilter', 'candidate'],
  /** Macros that expand to `__global__` (RAFT_KERNEL-style). */
  kernel_macros: ['RAFT_KERNEL', 'CUSPATIAL_KERNEL', 'KERNEL', 'GLOBAL'],
  /**
   * Calls that compile a kernel or build a module from source or an image (NVRTC, CuPy, cuda-python driver);
   * catalog `nvrtc/compile-in-hot-path`.
   */
  nvrtc_compile_calls: [
    'runtime.compile_kernels', '*.compile_kernels', 'cp.RawKernel', 'cupy.RawKernel', 'cp.RawModule', 'cupy.RawModule',
    'cp.ElementwiseKernel', 'cupy.ElementwiseKernel', 'cp.ReductionKernel', 'cupy.ReductionKernel', 'nvrtcCompileProgram',
    'cuModuleLoadData', 'cuModuleLoadDataEx', 'cuModuleLoad', 'cuLibraryLoadData',
  ],
  /** Module-scope NVRTC warmup declarations (003 §7.3 level 2; `nvrtc/missing-module-warmup`). */
  nvrtc_warmup_calls: ['request_nvrtc_warmup'],
  /** Module-scope CCCL warmup declarations (003 §7.3 level 1; `nvrtc/missing-cccl-warmup`). */
  cccl_warmup_calls: ['request_warmup'],
  /** Plan-level (pipeline-aware, 003 §7.3 level 3) requirement declarations that cover a module's CCCL specs. */
  warmup_requirement_calls: ['declare_requirements'],
  /** Compile helpers of another module that declares the NVRTC warmup for what it compiles (`nvrtc/missing-module-warmup`). */
  warmup_delegates: [] as string[],
  /** Accepted values of NVRTC's `--std=` (`nvrtc/std-flag-convention`; 003 §7.4: c++17 is the vibeSpatial convention). */
  nvrtc_std_versions: ['c++17'],
  /** Block-wide barriers every thread of the block must reach (catalog `kernel/syncthreads-in-divergent-branch`). */
  block_barrier_calls: ['__syncthreads', '__syncthreads_count', '__syncthreads_and', '__syncthreads_or', 'cg::sync', 'cooperative_groups::sync', '__barrier_sync'],
  /** Warp collectives whose mask names the lanes that must all execute the call (catalog `kernel/full-mask-warp-op-in-divergent-code`). */
  warp_collective_calls: [
    '__shfl_sync', '__shfl_up_sync', '__shfl_down_sync', '__shfl_xor_sync', '__ballot_sync', '__any_sync', '__all_sync',
    '__reduce_add_sync', '__reduce_min_sync', '__reduce_max_sync', '__reduce_and_sync', '__reduce_or_sync', '__reduce_xor_sync',
    '__match_any_sync', '__match_all_sync', '__syncwarp',
  ],
  /** Device atomic read-modify-write calls (catalog `kernel/global-atomic-in-loop`; `_block`/`_system` variants match by prefix in the rule). */
  device_atomic_calls: [
    'atomicAdd', 'atomicSub', 'atomicMin', 'atomicMax', 'atomicInc', 'atomicDec', 'atomicOr', 'atomicAnd', 'atomicXor', 'atomicCAS', 'atomicExch',
  ],
  /** Occupancy calls whose `minGridSize` output fills the GPU once, not a grid covering n (catalog `kernel/capped-grid-without-grid-stride` (a)). */
  occupancy_min_grid_calls: ['cudaOccupancyMaxPotentialBlockSize', 'cudaOccupancyMaxPotentialBlockSizeVariableSMem', 'cuOccupancyMaxPotentialBlockSize', 'cuOccupancyMaxPotentialBlockSizeWithFlags', 'driver.cuOccupancyMaxPotentialBlockSize', 'cuda.cuOccupancyMaxPotentialBlockSize'],
  /** Names and device attributes that hold the SM count (catalog `kernel/capped-grid-without-grid-stride` (b)/(c)). */
  sm_count_names: ['multiProcessorCount', 'MultiProcessorCount', 'multi_processor_count', 'sm_count', 'num_sms', 'n_sms', 'numSMs', 'num_multiprocessors', 'CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT', 'cudaDevAttrMultiProcessorCount'],
  /** Object-like macros or constants that projects define as the full warp mask. */
  full_mask_names: ['FULL_MASK', 'FULL_WARP_MASK', 'WARP_MASK', 'kFullMask', 'FULL_MASK_32'],
  /** NVRTC options every explicit options tuple must contain (e.g. `--std=c++17`); empty: omission is not flagged. */
  nvrtc_required_options: [] as string[],
};

export type VocabularyName = keyof typeof DEFAULT_VOCABULARIES;
export type Vocabularies = Record<VocabularyName, string[]>;

export const DEFAULT_HOT_PATH_FUNCTIONS = '^(dispatch|launch|run|execute|_gpu_|.*_kernel$|.*_pipeline$)';
/**
 * One-time setup and teardown functions: never HOT_PATH, even with a loop inside (catalog
 * `sync/malloc-free-in-hot-path` do-not-flag: "`__init__`/setup functions ... are not HOT_PATH").
 * C++ constructors and destructors count as setup too.
 */
export const DEFAULT_SETUP_FUNCTIONS =
  '^(__init__|__post_init__|__enter__|__exit__|__del__|_*([Ii]nit|[Ii]nitiali[sz]e|[Ss]et_?[Uu]p|[Cc]onfigure|[Ww]arm_?[Uu]p|[Tt]ear_?[Dd]own|[Cc]lean_?[Uu]p|[Ss]hut_?[Dd]own|[Dd]estroy|[Ff]inali[sz]e)([_A-Z0-9].*)?|.*_(init|setup|teardown|cleanup|shutdown)|.*[a-z0-9](Init|Setup|SetUp|Teardown|TearDown|Cleanup))$';

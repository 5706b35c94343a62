"""Polygon ring areas on the GPU (shoelace formula), one thread per ring."""
import cupy as cp
import numpy as np

from vibespatial import runtime
from vibespatial.cccl import exclusive_sum
from vibespatial.kernels.ring_area import ring_area_kernel, scatter_rings_kernel


def ring_areas(d_x, d_y, d_ring_offsets, n_rings):
    d_area = runtime.allocate((n_rings,), np.float64)
    grid, block = runtime.launch_config(ring_area_kernel, n_rings)
    runtime.launch(ring_area_kernel, grid=grid, block=block,
                   args=(d_x, d_y, d_ring_offsets, d_area, n_rings))
    return d_area


def ring_areas_by_part(d_x, d_y, d_ring_offsets, d_part_offsets, n_parts):
    """Area of every part (multipolygon member): sum of its ring areas."""
    n_rings = int(d_ring_offsets.shape[0]) - 1
    d_area = ring_areas(d_x, d_y, d_ring_offsets, n_rings)
    part_areas = []
    for p in range(n_parts):
        start = int(d_part_offsets[p])
        stop = int(d_part_offsets[p + 1])
        part_areas.append(float(cp.sum(d_area[start:stop])))
    return np.asarray(part_areas)


def largest_rings(d_x, d_y, d_ring_offsets, n_rings, k):
    d_area = ring_areas(d_x, d_y, d_ring_offsets, n_rings)
    order = np.argsort(d_area)[::-1][:k]
    d_order = cp.asarray(order)
    return d_order


def explode_rings(d_x, d_y, d_ring_offsets, d_counts, n_rings):
    d_offsets = exclusive_sum(d_counts, synchronize=False)
    total = int(d_offsets[-1]) + int(d_counts[-1])
    if total == 0:
        return runtime.allocate((0,), np.float64)
    d_out = runtime.allocate((total,), np.float64)
    grid, block = runtime.launch_config(scatter_rings_kernel, n_rings)
    runtime.launch(scatter_rings_kernel, grid=grid, block=block,
                   args=(d_x, d_y, d_ring_offsets, d_offsets, d_out, n_rings))
    return d_out

"""Cluster pairs (GROMACS nbnxm: Páll & Hess 2013; Páll et al. 2020), on the GPU and the CPU.

Particles are grouped into clusters of M (launch parameter cluster, default 8): the box is cut
into x-y columns of side about (M / density)^(1/3), each column's particles sorted by z and cut
into runs of M (the last one padded). The pair search keeps every pair of clusters whose bounding
boxes come closer than r_list = cutoff + skin (minimum image), with an interaction mask of the
M x M particle pairs within r_list (padding and a particle with itself left out). The list is
reused while no particle has moved more than skin / 2 since the search, like a Verlet list.

  clusterpair_warp_padded  CUDA (kernels/clusterpair.cu): clusters of 8 from the shared binning
                          (x-y columns sorted by z), the search on the device (bounding boxes
                          within r_list, in each column the clusters of the z-layers within
                          reach) into padded rows of j-clusters, each with its periodic image; a
                          warp per i-cluster computes 8 x 4 pairs per step (the lanes), the image
                          applied once per entry, the positions gathered into cluster order each
                          step at the image nearest their build position (so the MD loop's
                          wrapping leaves the entries' images valid). Full list, no atomics:
                          deterministic. The displacement check and the guarded rebuild run on
                          the device.
  clusterpair_warp_newton3 the same clusters and search into a half list (each cluster pair once),
                          Newton3: each pair's force added to i in registers and subtracted from j
                          by a shuffle reduce-scatter and one atomic instruction per entry (GROMACS's
                          GPU form); float atomics: not bitwise repeatable.
  clusterpair_thread_cpu  numba prange over i-clusters, the full list (each cluster pair from
                          both sides, no Newton3), the minimum image per particle pair (the MD
                          loop wraps positions every step, so an image fixed at the search would go
                          stale)

The search is exposed (search, bounding_boxes, brute_force_pairs) for its unit test against a
brute-force count of bounding-box pairs.
"""
from .cpu import ClusterpairThreadCpu
from .gpu import (COLUMNS_BLOCK, GPU_CLUSTER, J_LIMIT, PER_LAYER, PRUNE_BLOCK, ROLLING_CHOICES, SEARCH_BLOCK,
                  ClusterpairWarpNewton3, ClusterpairWarpPadded, cap_of, column_grid, pair_density)
from .search import CLUSTER_CHOICES, bounding_boxes, brute_force_pairs, clusters, search

__all__ = ["CLUSTER_CHOICES", "COLUMNS_BLOCK", "GPU_CLUSTER", "J_LIMIT", "PER_LAYER", "PRUNE_BLOCK", "ROLLING_CHOICES",
           "SEARCH_BLOCK", "ClusterpairThreadCpu", "ClusterpairWarpNewton3", "ClusterpairWarpPadded", "bounding_boxes",
           "brute_force_pairs", "cap_of", "clusters", "column_grid", "pair_density", "search"]

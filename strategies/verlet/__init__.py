"""Verlet neighbour lists (LAMMPS, HOOMD-blue, OpenMM's fallback): a list of the particles within
r_list = cutoff + skin, built from linked cells of side >= r_list and reused for as many steps as
no particle has moved more than skin / 2 since its build.

  verlet_thread_padded   CUDA (padded.py, plan.py; kernels/verlet_*.cu): padded rows in cell order
                         in 16-byte groups (near entries: the partner's slot relative to the row's
                         in 16 bits; far entries, across a periodic face or too far in slot: 32-bit
                         slots), one to sixteen threads a row by size, the displacement check and
                         the guarded rebuild on the device every step (no host synchronisation).
                         The MD loop runs it as fused steps (../integrate_fused.py).
  verlet_thread_cpu      numba (cpu.py): the same list and trigger on the CPU.
  verlet_thread_pairrows experimental (pairrows.py): rows of two particles of one cell.

All are full lists (every pair in both rows, no Newton3) and deterministic (rows in cell order, the
binning's order inside a cell). Launch shapes are chosen by tuning.py. A row longer than its
capacity is never truncated silently: the build raises a flag that the result's checks turn into a
StrategyError naming the length needed.
"""
from .common import GRID_DTYPE, VerletStrategy, adapt_text, cap_of, groups_of, parse_adapt
from .cpu import VerletThreadCpu
from .packed import PACKED_DTYPE, PACKED_EXPO, PackedLayout, packed_refusal, packed_step
from .padded import VerletThreadPadded, md_data_expressions
from .pairrows import VerletThreadPairrows
from .plan import FUSE_TPP_MOST, MD_BLOCK, VerletPlan, md_dtype
from .tuning import (AUTO_BATCH, AUTO_BATCH_ENTRIES, AUTO_BATCH_PACKED, AUTO_MINB, AUTO_MINB_PACKED, AUTO_TPP_MOST,
                     CELL_BUILD_FULLEST, CELL_BUILD_MAX, WARP_ROWS_PER_SM, build_kind)

__all__ = ["AUTO_BATCH", "AUTO_BATCH_ENTRIES", "AUTO_BATCH_PACKED", "AUTO_MINB", "AUTO_MINB_PACKED", "AUTO_TPP_MOST",
           "CELL_BUILD_FULLEST", "CELL_BUILD_MAX", "FUSE_TPP_MOST", "GRID_DTYPE", "MD_BLOCK", "PACKED_DTYPE",
           "PACKED_EXPO", "PackedLayout", "VerletPlan", "VerletStrategy", "VerletThreadCpu", "VerletThreadPadded",
           "VerletThreadPairrows", "WARP_ROWS_PER_SM", "adapt_text", "build_kind", "cap_of", "groups_of",
           "md_data_expressions", "md_dtype", "packed_refusal", "packed_step", "parse_adapt"]

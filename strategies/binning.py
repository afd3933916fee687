"""The build phase of every GPU cell strategy: particles sorted into cell order on the device
(kernels/binning.cu), shared by the full shell, c08 and the parity traverser.

Result: order (sorted slot -> particle index), start (CSR offsets, cells + 1), cell_sorted (cell
of each sorted slot) and, where the strategy reads the CSR storage directly, the sorted
positions. Inside a cell, particles are sorted by z (as a float), ties by index: a build of the
same positions gives the same bits whichever method ran and whatever order the atomics took, and
a column of cells along z is sorted by z (the full shell's z-windows rely on it).

Methods, chosen at set-up from the device's own first binning:
  small     one block does everything (n <= SMALL_N, cells <= SMALL_CELLS): one launch
  counting  bin_count, scan_counts, place, rank_in_cell: four launches, no host synchronisation
  radix     bin_cells (cell and a (cell, z) key), CuPy's stable argsort of the keys, a scan and a
            gather (cells fuller than RANK_MAX, where the counting sort's rank step, O(count) per
            particle, would be slow)
All are capturable in a CUDA graph.
"""
from __future__ import annotations

import numpy as np

from .cuda import kernel, sm_count

SMALL_BLOCK = 1024
SMALL_N = SMALL_BLOCK * 4  # kSmallPer in binning.cu
SMALL_CELLS = 1536  # (2 cells + 1 + 2 n) 4-byte words within the 48 KiB of a launch
RANK_MAX = 2048
# blocks of 256 per SM for the guarded counting sort (the list strategies' per-step upkeep, which
# skips it on most steps): a grid-stride loop over the particles instead of a block per 256
GUARDED_BLOCKS_PER_SM = 8
SCAN_TILE = 256 * 4  # kScanTile in binning.cu
METHODS = ("small", "counting", "radix")


SORTED_PAD = 7


class Binning:
    def __init__(self, cp, real_t: str, n: int, dims, pos, box, grid_struct, inv_side, write_pos: bool,
                 method: str | None = None):
        """pos: (n, 4) device positions in input order (read at every build); write_pos: also
        write the positions in cell order (self.sorted)."""
        self.cp, self.n, self.pos, self.box, self.grid_struct, self.inv_side = cp, n, pos, box, grid_struct, inv_side
        self.ncells = int(np.prod(dims))
        self.real_t = real_t
        self.write_pos = write_pos
        m = max(n, 1)
        self.cell = cp.empty(m, np.int32)
        self.slot = cp.empty(m, np.int32)
        self.order_tmp = cp.empty(m, np.int32)
        self.order = cp.empty(m, np.int32)
        self.cell_sorted = cp.empty(m, np.int32)
        self.start = cp.zeros(self.ncells + 1, np.int32)
        self.counts = cp.zeros(self.ncells, np.int32)
        self.ntiles = -(-self.ncells // SCAN_TILE)
        self.tiles = cp.zeros(self.ntiles, np.uint64)
        self.tickets = cp.zeros(2, np.uint32)
        self.keys = cp.empty(m, np.uint64)
        self.zkey = cp.empty(m, np.float32)
        # SORTED_PAD slots beyond the particles (zeros): the strip build loads candidates eight at a
        # time and reads up to seven past a round's last (their bits cleared; kernels/verlet_build.cu)
        self.sorted = cp.zeros((m + SORTED_PAD, 4), pos.dtype) if write_pos else None
        wp = "true" if write_pos else "false"
        self.k = {"bin_count": kernel("binning.cu", f"bin_count<{real_t}>"),
                  "scan": kernel("binning.cu", "scan_counts"),
                  "place": kernel("binning.cu", "place"),
                  "rank": kernel("binning.cu", f"rank_in_cell<{real_t}, {wp}>"),
                  "small": kernel("binning.cu", f"bin_small<{real_t}, {SMALL_BLOCK}, {wp}>"),
                  "bin_cells": kernel("binning.cu", f"bin_cells<{real_t}>")}
        self.method = method or "radix"

    @staticmethod
    def expressions(real_t: str) -> list[str]:
        """Every binning.cu kernel this class launches for one compute type (CI compiles them)."""
        out = [f"bin_count<{real_t}>", "scan_counts", "place", f"bin_cells<{real_t}>"]
        for wp in ("true", "false"):
            out += [f"rank_in_cell<{real_t}, {wp}>", f"bin_small<{real_t}, {SMALL_BLOCK}, {wp}>"]
        return out

    @property
    def device_bytes(self) -> int:
        arrays = [self.cell, self.slot, self.order_tmp, self.order, self.cell_sorted, self.start, self.counts,
                  self.tiles, self.tickets, self.keys, self.zkey] + ([self.sorted] if self.sorted is not None else [])
        return int(sum(a.nbytes for a in arrays))

    def choose(self) -> np.ndarray:
        """Bin once with the radix sort (correct for any occupancy), read the particles per cell
        and pick the method for the builds to come. Returns the counts (host, per cell)."""
        if not self.n:
            self.method = "counting"
            return np.zeros(self.ncells, np.int64)
        self.method = "radix"
        self.run()
        counts = np.diff(self.start.get()).astype(np.int64)
        fullest = int(counts.max())
        if self.n <= SMALL_N and self.ncells <= SMALL_CELLS and fullest <= RANK_MAX:
            self.method = "small"
        elif fullest <= RANK_MAX:
            self.method = "counting"
        return counts

    def _grid(self, work: int) -> int:
        return max(1, min(-(-work // 256), 8 * sm_count()))

    @property
    def guardable(self) -> bool:
        """Whether run(guard) can leave the decision to the device (the radix path uses CuPy's
        sort, which cannot be skipped from a device flag)."""
        return self.method in ("small", "counting")

    def run(self, guard=None) -> None:
        """guard: a device int (a CuPy array of one): the kernels run only where it is non-zero
        (small and counting methods; see guardable); None: always."""
        n = self.n
        if n == 0:
            return
        if guard is not None and not self.guardable:
            raise ValueError("the radix binning cannot be guarded by a device flag")
        g = guard if guard is not None else np.uint64(0)  # a null pointer: always run
        cp = self.cp
        geo = (self.box, self.grid_struct, *self.inv_side)
        out = self.sorted if self.sorted is not None else self.order  # not written without write_pos
        if self.method == "small":
            self.k["small"]((1,), (SMALL_BLOCK,), (self.pos, np.int32(n), *geo, np.int32(self.ncells), self.start,
                                                    self.order, self.cell_sorted, out, g),
                            shared_mem=4 * (2 * self.ncells + 1 + 2 * n))
        elif self.method == "counting":
            blocks = -(-n // 256)  # a thread per particle: many atomics and loads in flight
            if guard is not None:  # an MD step's upkeep: mostly skipped, and a skip costs a block each
                blocks = min(blocks, GUARDED_BLOCKS_PER_SM * sm_count())
            self.k["bin_count"]((blocks,), (256,), (self.pos, np.int32(n), *geo, self.cell, self.slot, self.counts,
                                                     self.zkey, g))
            self.k["scan"]((self.ntiles,), (256,), (self.counts, np.int32(self.ncells), self.start, self.tiles,
                                                    self.tickets, np.int32(self.ntiles), g))
            self.k["place"]((blocks,), (256,), (self.cell, self.slot, np.int32(n), self.start, self.order_tmp, g))
            self.k["rank"]((blocks,), (256,), (self.pos, self.order_tmp, self.cell, self.zkey, self.start, np.int32(n),
                                                self.order, self.cell_sorted, out, g))
        else:  # radix: a stable sort by (cell, z) keeps index order among equal keys
            blocks = self._grid(n)
            self.counts.fill(0)
            self.k["bin_cells"]((blocks,), (256,), (self.pos, np.int32(n), *geo, self.cell, self.counts, self.keys))
            self.order[:n] = cp.argsort(self.keys[:n])
            cp.take(self.cell[:n], self.order[:n], out=self.cell_sorted[:n])
            cp.cumsum(self.counts, dtype=np.int32, out=self.start[1:])
            self.counts.fill(0)  # the counting sort expects zeros
            if self.sorted is not None:
                cp.take(self.pos, self.order[:n], axis=0, out=self.sorted[:n])

"""layout=packed: the near entries' gathers read x, y and z as 21, 21 and 22 bits of fixed point
(8 bytes a particle, modulo 2^21 h) instead of a 16-byte Vec4, which halves the L1 wavefronts that
bound the force kernel at 1M particles (kernels/verlet_rows.cuh, PackedPositions). The Vec4
positions stay for the rows' own particles and the far entries. Float coordinates only, and only
where the grid step is no coarser than a float's spacing at the box's half-length (large boxes):
docs/decisions/verlet-packed-layout.md.
"""
from __future__ import annotations

import math

import numpy as np

from ..binning import GUARDED_BLOCKS_PER_SM
from ..cuda import kernel, sm_count

PACKED_DTYPE = np.dtype({"names": ["q", "h", "inv_h", "expo"],
                         "formats": [np.uint64, np.float32, np.float32, np.uint32]}, align=True)
PACKED_EXPO = 0x4B000000  # the bits of the float 2^23
NO_PACKED = np.zeros(1, PACKED_DTYPE)  # the kernels' PackedPositions where the layout is not packed
PACKED_BITS = 21  # x and y; z has one more


def packed_step(reach: float) -> float:
    """The packed positions' grid step h: the smallest power of two with 2^20 h >= reach (r_list +
    skin, the farthest a near pair can be while the list is valid), so that a near entry's
    difference taken modulo the period 2^21 h is exact."""
    return 2.0 ** math.ceil(math.log2(reach / 2.0 ** (PACKED_BITS - 1)))


def packed_refusal(reach: float, box_lengths) -> str:
    """Why layout=packed would be less precise than float coordinates in this box ("" where it is not):
    its grid step against a float's spacing at the box's half-length."""
    h = packed_step(reach)
    half = 0.5 * float(np.max(box_lengths))
    spacing = float(np.spacing(np.float32(half)))
    if h > spacing:
        return (f"layout=packed's grid step {h:.3g} (2^20 steps reach r_list + skin = {reach:g}) is coarser than a "
                f"float's spacing {spacing:.3g} at the box's half-length {half:.3g}: the packed positions would be less "
                "precise than the float ones (take aos4)")
    return ""


class PackedLayout:
    """Layout's counterpart for layout=packed: q, the packed copy of cur, written where cur is
    (the list's check verlet_refresh, the fused steps' update, pack() after a build), and the
    force kernel's PackedPositions; args() passes the Vec4 positions themselves."""

    name, code = "packed", 3

    def __init__(self, cp, m: int, reach: float):
        self.h = packed_step(reach)
        self.q = cp.zeros((max(int(m), 1), 2), np.uint32)
        self._k = kernel("verlet_build.cu", "verlet_pack")
        self._structs: dict[int, np.ndarray] = {}

    @property
    def nbytes(self) -> int:
        return int(self.q.nbytes)

    def struct(self) -> np.ndarray:
        """PackedPositions of the q now (the fused steps swap two), made once per buffer."""
        ptr = self.q.data.ptr
        if ptr not in self._structs:
            self._structs[ptr] = np.array([(ptr, self.h, 1.0 / self.h, PACKED_EXPO)], dtype=PACKED_DTYPE)
        return self._structs[ptr]

    def pack(self, src, n: int, guard=None) -> None:
        """q from the positions src (cur) after a build (guard: the device flag; None: always)."""
        if n:
            blocks = max(1, min(-(-n // 256), (GUARDED_BLOCKS_PER_SM if guard is not None else 8) * sm_count()))
            self._k((blocks,), (256,), (src, np.int32(n), self.struct(), guard if guard is not None else np.uint64(0)))

    def fill(self, src, n: int) -> None:
        """Nothing in the force phase: q is current wherever cur is."""

    def args(self, src) -> tuple:
        return src, np.int32(1)

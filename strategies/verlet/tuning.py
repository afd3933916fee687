"""The Verlet list's launch shapes, chosen by the code: users set physics (skin, capacity), the code
picks threads per row, register caps, gathers in flight and the build kernel (as HOOMD-blue's
autotuner and OpenMM's heuristics do). One table per GPU architecture, keyed by the compute
capability's major version; an architecture without an entry takes Hopper's. What each value was
measured against: docs/decisions/verlet-launch-shapes.md and verlet-build.md.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field

MAX_THREADS_PER_SM = 2048  # every GPU from sm_80 to sm_90
MINB_BLOCK = 128  # the block size the minb values were measured at ('auto' keeps their threads per SM)


@dataclass(frozen=True)
class LaunchTable:
    """The 'auto' values of one architecture. {energy: value} where the two output flavours differ."""

    # threads per row: the size rule (strategies.cuda.auto_tpp, rounded down), at most this many
    tpp_most: int = 16
    # a row's lanes split it by entries (each lane its own entries) from this many lanes a row;
    # by whole groups of 8 below: fewer index loads where a row has few lanes
    split_entries_from: int = 4
    # blocks per SM of MINB_BLOCK threads that the force kernel's registers must leave room for
    # (__launch_bounds__), and near entries in flight per thread, for the float sums: forces only
    # takes a tighter cap and twice the gathers in flight; with energy and virial the row's virial
    # fits a cap of 8 blocks. Mixed, fixed and fp64 sums take no cap (they spilled under one).
    minb: dict = field(default_factory=lambda: {False: 10, True: 8})
    batch: dict = field(default_factory=lambda: {False: 16, True: 8})
    # layout=packed's force kernels at a thread a row (where it was measured: large systems): fewer
    # registers a pair, so a tighter cap for forces only; with more threads a row the general values
    # (the tighter cap spills once a row's lanes split it by entries)
    minb_packed: dict = field(default_factory=lambda: {False: 12, True: 8})
    batch_packed: dict = field(default_factory=lambda: {False: 16, True: 16})
    # split by entries keeps one 16-bit index per entry in flight: 16 spill under the forces cap
    batch_entries: int = 8
    # the build: a warp per row while its threads fit the GPU about twice; a warp per cell up to
    # cell_build_max rows; a thread per row beyond; the opposite columns' walk where a cell is crowded
    warp_rows_per_sm: int = 128
    cell_build_max: int = 96_000
    cell_build_fullest: int = 64


HOPPER = LaunchTable()
TABLES: dict[int, LaunchTable] = {9: HOPPER}  # measured on the H100 and the H200


@functools.cache
def device_major() -> int | None:
    """The compute capability's major version of the current GPU; None without one."""
    try:
        import cupy

        return int(cupy.cuda.Device().compute_capability[0])
    except Exception:
        return None


def table(major: int | None = None) -> LaunchTable:
    """The launch table of an architecture (default: this machine's GPU; Hopper's without one)."""
    return TABLES.get(device_major() if major is None else major, HOPPER)


def build_kind(build: str, n: int, sms: int, fullest: int = 0) -> str:
    """The list build: an explicit choice is kept; 'auto' from the rows (n), the GPU's SMs and the
    particles in the fullest cell of the binning (fullest)."""
    if build != "auto":
        return build
    t = table()
    if n <= t.warp_rows_per_sm * sms:
        return "warp"
    if fullest > t.cell_build_fullest:
        return "opposite"
    return "cell" if n < t.cell_build_max else "strip"


def register_cap(minb, block: int, energy: bool, acc: str, packed: bool, md: int = 0, tpp: int = 1) -> int:
    """The force kernel's __launch_bounds__ minimum blocks: an explicit minb is kept; 'auto' takes the
    table's threads per SM in blocks of `block` where the sums are float, none otherwise, and none
    where those blocks do not fit on an SM. The fused MD steps' kernels (md > 0) take the general
    values at every layout (the packed cap slowed the fused step)."""
    if minb != "auto":
        return minb
    if acc != "float":
        return 0
    t = table()
    m = max(1, (t.minb_packed if packed and not md and tpp == 1 else t.minb)[energy] * MINB_BLOCK // block)
    return m if m * block <= MAX_THREADS_PER_SM else 0


def batch(value, energy: bool, entries: bool, packed: bool, md: int = 0, tpp: int = 1) -> int:
    """Near entries in flight per thread: an explicit value is kept; 'auto' from the table."""
    if value != "auto":
        return value
    t = table()
    if entries:
        return t.batch_entries
    return (t.batch_packed if packed and not md and tpp == 1 else t.batch)[energy]


def split_entries(split: str, tpp: int) -> bool:
    """Whether a row's tpp lanes split it by entries ('entries', or 'auto' from the table's count);
    one lane a row has nothing to split."""
    return tpp > 1 and (split == "entries" or (split == "auto" and tpp >= table().split_entries_from))


# kept for the tests and the decision records: Hopper's values under their earlier names
AUTO_TPP_MOST = HOPPER.tpp_most
AUTO_MINB, AUTO_BATCH = HOPPER.minb, HOPPER.batch
AUTO_MINB_PACKED, AUTO_BATCH_PACKED = HOPPER.minb_packed, HOPPER.batch_packed
AUTO_BATCH_ENTRIES = HOPPER.batch_entries
WARP_ROWS_PER_SM, CELL_BUILD_MAX, CELL_BUILD_FULLEST = (HOPPER.warp_rows_per_sm, HOPPER.cell_build_max,
                                                        HOPPER.cell_build_fullest)

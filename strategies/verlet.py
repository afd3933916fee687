"""Verlet neighbour lists (LAMMPS, HOOMD-blue, OpenMM's fallback): a list of the particles within
r_list = cutoff + skin, built from linked cells of side >= r_list and reused for as many steps as
no particle has moved more than skin / 2 since its build.

  verlet_thread_padded  CUDA: padded rows in cell order, in 16-byte groups (near entries: the
                        partner's slot relative to the row's in 16 bits; far entries, found
                        across a periodic face or too far in slot: 32-bit slots; the per-step
                        check gathers the positions into that order, unwrapped since the build,
                        so only far entries take a minimum image), TPP threads per row (launch
                        parameter tpp; 0, the default, from the size) sharing it by groups or by
                        entries (split), the rows built by one of four kernels of the same rows
                        (build: strip, cell, warp, tile; auto by size and the fullest cell), each
                        near group or whole row optionally reordered for the L1's bank groups
                        (banks=1, 2), the
                        displacement check and the guarded rebuild on the device every step (no
                        host synchronisation; kernels/verlet.cu)
  verlet_thread_pairrows CUDA: the same storage in rows of two particles of one cell (the union
                        of their lists: one gather for two pairs), a thread per row; loses to
                        rows of one on the H200 (below, VerletThreadPairrows)
  verlet_thread_cpu     numba: the same list and trigger on the CPU

The MD loop (harness/md.py) runs the rows of one as fused steps (VerletSteps, below): the state in
the list's order and the integrator at the end of the force kernel, with the plain loop's bits.

All three are full lists (every pair in both rows, no Newton3), deterministic (rows in cell order, the
binning's order inside a cell). Launch parameters: skin (default 0.3 sigma, LAMMPS's bench/in.lj),
cap (row capacity; 0: from the first build, 1.2 x the longest row + 8), rebuild (auto: the
displacement trigger; never: the list of the last build() is kept, the negative control that
verify must catch); verlet_thread_padded also prune (off, or an inner buffer below the skin: an
inner list pruned from the outer rows, GROMACS's dynamic pruning; measured below, off by default).

A row longer than its capacity is never truncated silently: the build raises a flag that the
result's checks turn into a StrategyError naming the length needed.
"""
from __future__ import annotations

import math
from typing import ClassVar

import numpy as np
from numba import njit, prange

from mdcore import FLOAT_PRECISIONS, MODES, Forces, InputError, Potential, Problem, StrategyError
from mdcore.ranges import nvtx_range

from . import schedules as S
from .base import Plan
from .binning import GUARDED_BLOCKS_PER_SM, SCAN_TILE, Binning
from .cells import max_cells, pmask
from .cells_cpu import _axis_range, _wrapi, bin_cells
from .cpu import CpuPlan, pair_step, separation, store_sums
from .cuda import (LAYOUTS, CudaPlan, CudaStrategy, Layout, auto_tpp, cbool, ctypes, kernel, layout_expressions,
                   sm_count)
from .graphs import upkeep_if
from .lists import SKIN, DeviceListPlan, ListStrategy, moved_beyond
from .registry import register

TPP_CHOICES = (0, 1, 2, 4, 8, 16, 32)
# tpp=0: cuda.auto_tpp rounded down, at most AUTO_TPP_MOST (H200, LJ, with a built list,
# reports/2026-11-24-h200/bench/s9-call8-tpp-s9.json; forces ms at tpp 1 / 2 / 4 / 8 / 16):
# 4,000: 0.023 / 0.017 / 0.012 / 0.011 / 0.009; 32,000: 0.023 / 0.018 / 0.016 / 0.020 / 0.021;
# 256,000: 0.053 / 0.055 / 0.064 / 0.094 / 0.109; 1M: 0.151 / 0.170 / 0.218 / 0.351 / 0.410
AUTO_TPP_MOST = 16
MINB_CHOICES = ("auto", 0, 8, 9, 10, 11, 12, 16)
BATCH_CHOICES = ("auto", 8, 16)
# split: how a row's tpp lanes share its entries (kernels/verlet.cu, ENTRIES): 'groups' (lane t takes
# whole groups of 8 entries t, t + tpp, ...), 'entries' (lane t takes entries t, t + tpp, ...: the
# lanes of a row gather neighbouring entries together). 'auto': entries from tpp 4 (H100, LJ, with
# a built list, forces / all ms, groups against entries, reports/2026-11-25-h100/bench/
# s14-call3-tune-s14-split-*.json):
# 32,000 tpp 4 0.0163 / 0.0222 against 0.0144 / 0.0204, tpp 8 0.0204 against 0.0173; 4,000 tpp 16
# 0.0092 / 0.0126 against 0.0091 / 0.0122; at tpp 2 entries lose (32,000: 0.0184 against 0.0236;
# the kernel spills under the forces flavour's register cap). At 1M (tpp 1 wins either way) ncu
# shows why entries do not help there: the gathers take 10-17% fewer sectors but no fewer L1
# data-pipe wavefronts (34.9M against 32.95M), and 37% more instructions (s14-call2 profiles).
SPLIT_CHOICES = ("auto", "groups", "entries")
SPLIT_ENTRIES_FROM = 4
# 'auto' per output flavour {energy: value}, from the ninth session's sweep (H200, LJ 1M, fp32,
# reports/2026-11-24-h200/bench/s9-call3-s9-knobs.json, with a built list): forces only, 16 near
# entries in flight under a cap of 10 blocks of 128 (0.151 ms; 8 under 12 blocks: 0.155); with
# energy and virial, 8 at the compiler's register count (0.187 ms; any cap spilled then: 0.205-0.63).
# Since the near entries' virial comes from the row's force (row_virial, sixteenth session), the
# energy flavour fits a cap of 8 blocks (64 registers, no spill at any tpp) and runs faster under
# it (H100, LJ 1M, reports/2026-11-25-h100/bench/s16-call4-knobs2-s16.json, with a built list, ms
# at minb 0 / 8 / 10, 8 entries in flight): 0.1909 / 0.1818 / 0.1844; rows permuted (banks=2)
# 0.1866 / 0.1659 / 0.1751.
AUTO_MINB = {False: 10, True: 8}
# The block size AUTO_MINB was measured at: 'auto' keeps its threads per SM (its register budget)
# at other block sizes. Taken as a count of blocks it capped 8 blocks of 256 (2,048 threads, 32
# registers) and the all-outputs kernel spilled: 0.354 against 0.178 ms at 128 (H200, LJ 1M, with
# a built list, reports/2026-11-26-h200/, s18-call5); 0.178 at 256 under this rule (s18-call6).
# Larger slabs of rows per block bought no L1 locality (s18-call1 and -call5, ncu): hit rate
# 83.3% at 128, 84.5% at 256, 84.8% at 512 (the first touches of a block's neighbourhood barely
# shrink per row); forces 0.152 / 0.153 / 0.177 ms (s18-call6).
AUTO_MINB_BLOCK = 128
AUTO_BATCH = {False: 16, True: 8}
# layout=packed's own 'auto' (minb at AUTO_MINB_BLOCK, batch), from the sweep after the predicated pairs (H200, LJ 1M,
# fp32, with a built list, reports/2026-11-28-h200 s31-call2, ms): forces at minb 10 / 12 / 16 with 16 in flight
# 0.1232 / 0.1219 / 0.1504 (8 in flight: 0.1245 / 0.1269 / 0.1412); all outputs at minb 0 / 8 / 10 with 16 in flight
# 0.1703 / 0.1542 / 0.1648 (8 in flight: 0.1602 / 0.1594 / 0.1599). No spill at either (SASS: 37 and 61 registers).
AUTO_MINB_PACKED = {False: 12, True: 8}
AUTO_BATCH_PACKED = {False: 16, True: 16}
# Tried and dropped (thirtieth session, H200, reports/2026-11-28-h200, s30-call1, commit f7b0223): the
# whole rounds software-pipelined (the next round's 8 gathers issued before this round's pairs, two
# register buffers in turn). ptxas sank the gathers below the pairs again to save registers (SASS:
# the loads at the end of each half-iteration, or, behind a branch, after half of the pairs), and
# under the forces flavour's cap of 10 blocks it spilled: LJ 1M packed, forces with a built list
# 0.2619 against 0.1247 ms, at minb 8 0.1789 against 0.1276. ncu says why there was little to win:
# the kernel's warps wait first for the scheduler (not selected 3.43 cycles an instruction, math
# pipe throttle 1.49) and only then for memory (long scoreboard 3.29 of 11.33): it is bound by issue.
# split by entries keeps one 16-bit index per entry in flight beside its position: 16 in flight spill
# under the forces flavour's register cap (compiled here: 300-600 bytes at tpp 2-8), 8 do not
AUTO_BATCH_ENTRIES = 8
# banks=1: each whole near group reordered after the build (kernels/verlet.cu, verlet_banks) so that
# a quarter-warp's gathers read distinct 16-byte L1 bank groups where the group allows. Measured
# (H100, LJ 1M, tpp 1, fifteenth session, reports/2026-11-25-h100/bench/s15-call1-*, profile/s15-
# call1-*): the force kernel's L1 data-pipe wavefronts 32.8M -> 28.0M, forces only 0.1523 -> 0.1403 ms
# with a built list (all outputs, issue-bound: 0.1861 -> 0.1848), but the pass takes 0.28 ms per
# build (10M groups, ~300 instructions each): amortised per step 0.274 -> 0.327 ms. Off by default:
# it pays only where a list is kept for many more steps than the LJ liquid's ~8. Done in the strip
# build as each group is stored instead, the build took 2.85 ms against 0.75 (91 registers, and
# the warp runs the ordering once per lane that fills a group: s15-call3).
# banks=2: each row permuted after the build (kernels/verlet.cu, verlet_rotate) so that its gather t
# reads bank group (slot + t) % 8 where the row has an entry there: a quarter-warp's 8 rows then
# read 8 distinct groups (tools/l1_probe.py measured the rule: per quarter-warp, one wavefront per
# 16-byte chunk sharing a group). Measured (H100, LJ 1M, sixteenth session, reports/2026-11-25-h100/
# bench/s16-call3-rotate-s16-large.json, profile/s16-call3-*): wavefronts 32.9M -> 23.8M, forces
# with a built list 0.1526 -> 0.1343 ms (all outputs 0.1903 -> 0.1855), but the pass takes 0.27 ms
# per build (172M instructions): amortised per step 0.273 -> 0.297 ms, so off by default; it beats
# banks=1 in every column. A thread per row, its row and its free positions in 3 bytes per entry of
# shared memory; rows longer than ROTATE_MOST (8-bit counts) or than ROTATE_SHARED holds keep the
# build's order. Rewritten without the table of free positions (twentieth session, commit 92b3cf2:
# each excess entry's position from the counts' prefix sums in 64-bit words of 8-bit fields, 2 bytes
# of shared memory an entry) it took 420M instructions against 172M (the fields' variable 64-bit
# shifts): 578 against 264 us at LJ 1M on the H200 (reports/2026-11-26-h200/, s20-call2). Reverted.
# prune: an inner list (GROMACS's dynamic pruning, Pall et al. 2020), kernels/verlet.cu verlet_prune: the
# outer rows' entries within cutoff + prune at the positions of now, pruned again (on the device, flag[1])
# where a particle moved beyond prune/2 since, and after every rebuild; the force kernel reads the inner
# rows (at one thread per row the same bits: tests/test_verlet_prune.py). Measured (H100, LJ 1M, fp32,
# packed, skin 0.3, twenty-seventh session, reports/2026-11-26-h100/, s27-call3): with a built list
# forces 0.1095 / all outputs 0.1494 ms against 0.1324 / 0.1742 without (prune 0.05: 0.1079 / 0.1459),
# but a prune takes 232 us under ncu (115.5M warp instructions against the force kernel's 89M: every
# outer entry's gather and distance, and each kept entry's store into its row; issue 51%, 64 registers,
# occupancy 42%), every 2.7 steps at prune 0.1: amortised per step 0.3049 against 0.2263 ms, harness md
# 0.3131 against 0.2332 (skin 0.5 with prune 0.1: 0.3107). In a row-per-thread list the distance check
# is most of a pair's cost, so a pass that checks every entry again costs about what it saves; GROMACS's
# prune pays in its cluster-pair kernel, where it clears mask bits of 4 x 8 pairs a step. Off by default:
# a measured design point, and the with-list column's figure for a list radius of cutoff + prune.
ROTATE_BLOCK = 64
ROTATE_MOST = 255
ROTATE_SHARED = 48 * 1024
PHANTOM = 1e30  # the padding slot's coordinates: beyond any cutoff from any particle (|x| << 1e30)
MAX_THREADS_PER_SM = 2048  # every GPU from sm_80 to sm_90
BUILD_FLAGS = (("false", "false"), ("false", "true"), ("true", "false"))  # (MINIMAGE, WINDOW) of the build
GRID_DTYPE = np.dtype([("nx", np.int32), ("ny", np.int32), ("nz", np.int32), ("pmask", np.int32)])


# build 'auto' (H200, LJ, sixth session, bench/s6-call11-build.json; build ms per strip / cell / warp):
# 4,000: 0.156 / 0.093 / 0.036; 32,000: 0.164 / 0.097 / 0.107; 256,000: 0.437 / 0.405 / 0.649;
# 1,048,576: 1.44 / 1.49 / 2.51. A warp per row while its threads fit the GPU about twice
# (rows <= 128 per SM), a warp per cell up to CELL_BUILD_MAX rows, then a thread per row.
# A warp per cell takes its cell's particles 32 at a time against all of the cell's candidates:
# a crowded cell keeps its warp busy long after the others (Gaussian sigma 12 at 64,000, ~260 per
# cell at the centre: cell 54.8 ms against strip 2.03 and warp 1.62, bench/s12-call3-verlet-gauss64k.json),
# so 'auto' takes it only while the fullest cell needs at most two rounds.
# build 'tile': a warp per 32 consecutive rows in `row_groups` groups, each group scanning the union
# of its rows' z-windows (kernels/verlet.cu, verlet_build_tile); periodic axes of 3 cells or more.
# On crowded inputs, where the strip build's lanes walk windows of very different lengths, it wins
# (H100, fourteenth session, reports/2026-11-25-h100/bench/s14-call3-tune-s14-*.json; build ms
# strip / tile with 1, 2, 4 groups): Gaussian sigma 12 at 64,000 1.522 / 1.327 / 1.401 / 1.613;
# clump 24,000 0.392 / 0.325 / 0.354 / 0.425; clump 48,000 0.742 / 0.609 / 0.656 / 0.792. On the LJ
# liquid the union of 32 rows' windows holds ~2.7x a row's candidates and it loses: 1M 0.752 /
# 1.214 / 1.111 / 1.061; 256,000 0.263 / 0.370 / 0.350 / 0.346. At 1M the Gaussian's crowded
# centre dominates either build: strip 31.9, tile 32.9 ms (s14-call4-check-s14-gauss-1m.json); at
# 256,000 tile still wins, 6.93 against 7.33 ms (s14-call5-gauss-s14-256k.json). So 'auto' took
# it (one group) where a cell was crowded, up to 262,144 rows, until the strip build's rework in the
# seventeenth session (below: 'auto' takes the strip build there now).
# The cell build against the strip build on the LJ liquid (H100, the s14-call3 and -call4 files;
# ms): 32,000 0.106 / 0.122; 62,500 0.122 / 0.134; 131,072 0.194 / 0.159; 256,000 0.324 / 0.263:
# the crossover lies between 62,500 and 131,072 rows (the sixth session's 524,288 predates the
# strip build's rework).
# Tried and dropped (seventeenth session, H200, reports/2026-11-25-h200/bench/s17-call1-*): the strip
# walk flattened, each lane's 9 windows found first (kept in shared memory) and then walked as one
# sequence of candidates, so that a warp would run the longest of its lanes' totals instead of the
# longest window of every column. At LJ 1M it took 1.26 ms against the strip build's 0.74: the lanes
# drift apart into different columns, so the L1 hit rate fell from 93% to 18% (wavefronts 145M
# against 84M), and fewer lanes were active (14.9 of 32 against 17.2: a hit's store and a run's
# change are branches of their own). 256,000: 0.44 against 0.26 ms; Gaussian 64,000: 4.4 against 1.6.
# After the strip build's hit stores lost their per-hit tests and its windows took one paired
# bisection (same session, s17-call3 and -call4): LJ 1M 0.678 ms (0.742 before), 256,000 0.239
# (0.259), Gaussian 64,000 1.135 (1.629): now ahead of the tile build there (1.233).
# Tried and dropped (eighteenth session, H200, reports/2026-11-26-h200/, s18-call1): a round's near
# hits stored two a step (a 32-bit word shifted into the row's buffer; the mask reversed once, a
# hit's offset one count of leading zeros), to halve the steps of the lane with most hits. The
# branch where the first of the two completes a group and the buffer's moves outweighed it: 496.5M
# instructions (18.3 lanes active) against 461M, 628.5 against 633.9 us under ncu, 0.681 against
# 0.679 ms by events in the same call.
# Tried and dropped (twentieth session, H200, reports/2026-11-26-h200/, s20-call1, commit cf0c996): the
# strip build's near entries staged in shared memory (16 bits a hit at stage[a * 130 + thread], whole
# groups stored at the row's end), so that a hit costs a shared store (ptxas unrolled the round's
# stores by four: ~7 instructions a hit against ~19). The same rows. At LJ 1M it executed 12% fewer
# instructions (426M against 485M) and took 58 registers against 63, but its 29 KB of staging per
# block of 128 (capacity 107) took the unified L1 from the candidates' gathers: hit rate 82.9%
# against 92.6%, 7 blocks per SM against 8, issue 63% against 79%; ncu 681 against 633 us, events
# 0.738 against 0.680 ms (256,000: 0.262 against 0.239; uniform 1M: 0.818 against 0.729). The
# build's locality is worth more than its store instructions: a writer must keep its buffer in
# registers (or a few bytes of shared memory a thread).
# Tried and dropped (same session, s20-call3, commit 66fa599): a block's 128 rows handed to its threads
# sorted by where each particle lies across its cell (x half, then y eighth), so that a warp would
# walk z-windows of like lengths. A CPU model of the windows and hits promised 0.79 of the warps'
# longest walks; the build got 20.5 lanes active against 19.3 and 1.4% fewer instructions, but a
# warp's rows now spread over ~7 cells in z, so its loads touched twice the sectors (13.4 against
# 6.9 a request; L1 wavefronts 121.7M against 85.8M): 630 against 636 us under ncu, 0.678 against
# 0.679 ms by events at 1M, 0.243 against 0.238 at 256,000. No gain: reverted.
# The crowded inputs again (same call, H200, build ms strip / tile; fullest cell of r_list):
# Gaussian sigma 12 at 64,000 (930) 1.196 / 1.233, at 256,000 (938) 6.233 / 5.996; clump at 24,000
# (249) 0.287 / 0.339, at 48,000 (429) 0.567 / 0.614; at 1M the strip build won already (s14). The
# tile build wins one of the four, by 4%, and loses the clump by 8-15%: 'auto' takes the strip
# build on crowded inputs; the tile build stays a choice.
# Kept (twenty-first session, H200, reports/2026-11-26-h200/, s21-call1 to -call5): the strip build's
# instructions cut where ncu's per-instruction counts put them (s21-call1: the candidate loop 32%
# of 485M, the hits' stores 24%, the windows' bisection 12%), the rows unchanged:
# - a candidate's hit bit shifted in from the bottom (kernels/verlet.cu, below(): an integer add and
#   a funnel shift on the bits of r2, where the compare, select and variable shift took three and a
#   half), eight candidates a step with no remainder loop (the binning pads `sorted` by 7 slots);
# - a round's hits stored two a step (RowWriter::push_round_msb), the row's length made even once
#   per round by a single hit first, so that a group always completes on the second of two (the
#   eighteenth session's pairs, above, paid that branch on every step);
# - the particle itself taken out of its round's bits instead of each run split in two passes;
# - both window searches branch-free with shared counts (cells.cuh, bisect_z_window: 16 SASS
#   instructions a step against 31).
# LJ 1M (s21-call5, against 5e1c55c in the same call): 378M instructions against 485M, 479 against
# 625 us under ncu (issue 82%, 56 registers against 63), build 0.529 against 0.679 ms by events;
# amortised per step 0.2407 against 0.2600 (forces), `harness md` 0.2711 against 0.2905 ms a step;
# 256,000 0.197 against 0.239; uniform 1M 0.579 against 0.726. The crowded inputs were not re-timed.
# The rows of two's build took the bit shift-in, the two-hit stores and the window searches (not the
# eight-a-step loop or the masked self): 0.590 against 0.663 ms at LJ 1M (s21-call7).
# build 'opposite' (thirty-second session, H200, reports/2026-11-28-h200, s32-call2 and -call3): the strip
# build walking each column with its opposite as one stream of rounds per thread (kernels/verlet.cu, verlet_build
# with OPPOSITE; every build walks the columns in that pair order, column_at, so the rows stay the same). The CPU
# model (tools/build_balance.py) promised lanes 0.65 -> 0.82 busy; on the LJ liquid ncu measured 21.43 lanes
# against 20.05, 380.7M instructions against 377.5M, and 66 registers against 56 (occupancy 37.8% against 47.4%):
# 0.5883 against 0.5416 ms at 1M. Where windows differ most it wins (build ms, opposite / strip): Gaussian 64,000
# 0.942 / 1.050, clump 48,000 0.391 / 0.424, clump 24,000 0.197 / 0.213, so 'auto' takes it where a cell is
# crowded. Tried and dropped (same session, s32-call6): the strip build under __launch_bounds__(128, 10) (47
# registers, no spill, 10 blocks an SM against 9): 0.5566 against 0.5393 ms at LJ 1M, 0.2086 against 0.1983 at
# 256,000. A bound on the shared kernel (one block) raised the other variants to 92-116 registers: the builds
# take none. Tried and dropped (thirty-third session, s33-call1, cdf5825): the strip build's near entries through a
# ring of 16 slots a thread in shared memory, every candidate's entry stored and the slot moved on by one predicated
# add where it hits, instead of the per-hit push: the same rows, but 0.686 against 0.538 ms at LJ 1M. Shared
# stores go through the same L1 data pipe as the candidates' loads (ncu: 144M wavefronts against 88M, the pipe 93%
# against 75% busy) and the candidate loop grew by 2 instructions a candidate (398M against 378M in all).
WARP_ROWS_PER_SM = 128
CELL_BUILD_MAX = 96_000
CELL_BUILD_FULLEST = 64
BUILD_CHOICES = ("auto", "strip", "opposite", "cell", "warp", "tile")
TILE_GROUPS = (1, 2, 4)
TILE_WARPS = 4  # kTileWarps
TILE_BLOCKS_PER_SM = 16  # the tile build's grid-stride grid: a guarded launch that skips costs few blocks


def build_kind(build: str, n: int, sms: int, fullest: int = 0) -> str:
    """The list build: an explicit choice is kept; 'auto' from the rows (n), the GPU's SMs and the
    particles in the fullest cell of the binning (fullest)."""
    if build != "auto":
        return build
    if n <= WARP_ROWS_PER_SM * sms:
        return "warp"
    if fullest > CELL_BUILD_FULLEST:
        return "opposite"
    return "cell" if n < CELL_BUILD_MAX else "strip"


def groups_of(cap: int) -> int:
    """Groups of 4 entries a row of capacity cap is stored in (kernels/verlet.cu, row_groups):
    one more than cap needs, so that plain and image entries, each padded to whole groups, fit."""
    return -(-cap // 4) + 1


def cap_of(longest: int) -> int:
    """Row capacity from the longest row of a build: room for the rows to grow as particles move."""
    return int(math.ceil(1.2 * longest)) + 8


# Thirty-second session (H200, reports/2026-11-28-h200, s32-call1): y taken as z is, the partner's coordinate plus
# the row's constant (packed_separation), so ptxas folds its funnel shift and add into one LEA.HI: 25 SASS
# instructions a pair against 26, the same separations; with a built list 0.1192 against 0.1219 ms (forces), 0.1488
# against 0.1515 (all outputs), harness md 0.2102 against 0.2126 ms a step. Tried and dropped in the same call
# (b79bfbc): a row's first near groups loaded with its length, ahead of the warp's reduce (the flags consumed at
# the kernel's end so that ptxas kept them there): the forces loop 3 instructions longer under its cap, 0.1228
# against 0.1192 ms. Tried and dropped (s32-call7, b2fcd52): persistent warps for the forces flavour at a thread per
# row (a grid of the blocks that fit at once, each warp taking chunks of 32 rows w, w + W, ... in turn): the same
# bits, but 0.1443 against 0.1186 ms with a built list at LJ 1M (packed), harness md 0.2355 against 0.2094 ms a
# step. Thirty-third session (s33-call2 to -call5): under ncu that variant keeps the L1 hit rate (80.4% against
# 80.7%) and loses warps (55% active against 62%: 5.17 chunks a warp, the last round 17% full). Chunks drawn from
# a counter (fc81400) and from a region per SM by %smid (a6d7267) raised the warps active to 67-68% and the L1 hit
# rate by at most 2 points, but doubled the long-scoreboard stalls a chunk's draw adds: 0.1238 and 0.1518 against
# 0.1185 ms. The rows read past L1 (L1::no_allocate) and the gathers marked evict_last: the same 80.6% hit rate
# and time. A launched block's four warps on 128 consecutive rows stay the best schedule found.
# layout=packed (kernels/verlet.cu, PackedPositions): the near entries' gathers read x, y and z as
# 21, 21 and 22 bits of fixed point (8 bytes a particle), modulo 2^21 h; the Vec4 positions stay for
# the rows' own particles and the far entries. Float coordinates only. Measured (H100, LJ 1M, fp32,
# twenty-fourth session, reports/2026-11-26-h100/, s24-call5 to -call7), against aos4 in the same
# call: forces with a built list 0.138 against 0.153 ms (ncu 134 against 155 us: 5.5 L1 wavefronts
# a request against 8.9, but 7 instructions more a pair: latency-bound at 73% issue), all outputs
# 0.177 against 0.179, harness md 0.249 against 0.255 ms per step. A launch choice, not the default.
VERLET_LAYOUTS = {**LAYOUTS, "packed": 3}
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


class PackedLayout:
    """Layout's counterpart for layout=packed: q, the packed copy of cur, written where cur is
    (the list's check verlet_refresh, the fused steps' update, pack() after a build), and the
    force kernel's PackedPositions; args() passes the Vec4 positions themselves."""

    name, code = "packed", 3

    def __init__(self, cp, m: int, reach: float):
        self.h = packed_step(reach)
        self.q = cp.zeros((max(int(m), 1), 2), np.uint32)
        self._k = kernel("verlet.cu", "verlet_pack")
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


# adapt (launch parameter, thirty-fourth session): each particle's own half-skin h_i = m + K dt |v_i|, at most
# skin / 2, from its velocity at a rebuild of the MD loop (the fused steps: VerletSteps, verlet_stage writes it in
# the position's w; the plain steps: use_velocities, verlet_half_skins; one expression), a pair listed where
# r < cutoff + h_i + h_j (kernels/verlet.cu, verlet_build ADAPT) and each particle's trigger its own h_i
# (refreshed). Replays (bench's amortised column, verify's replayed frames) hand it each frame's velocities
# (harness/md.py, FrameVelocities). Where no velocity is known (the first list, the with-list and from-scratch
# columns) h = skin / 2: the uniform list. Exact either way. tools/skin_model.py modelled it on the
# recorded trajectory (LJ 1M, 199 steps, H200, s34-call3): the uniform skin 0.3 rebuilds every 8.3 steps
# with rows of 75.6 entries; m 0.08, K 6 every 9.0 steps with 70.6; m 0.06, K 6 every 8.0 with 67.6. The
# move since the last build (instead of the velocity) predicted worse: LJ 32,000, m 0.08, K 8 rebuilt every
# 8.8 steps against the uniform list's 9.4 (--since-build, on this machine's CPU).
# Measured (H200, LJ 1M, fp32, layout=packed, harness md, 2,000 steps, reports/2026-11-28-h200 s34-call7 to
# -call12, ms a step against the uniform skin 0.3's 0.2087-0.2100 in the same calls, builds in 2,000 steps
# against 250): skin 0.4 with 0.08:6 0.2038 (224), 0.09:6 0.1995-0.2000 (208), 0.1:6 0.1978-0.1982 (199),
# 0.11:6 0.1959-0.1969 (190), 0.12:6 0.1987-0.1989 (188), 0.13:6 0.2014-0.2016, 0.11:5 0.1979-0.1981, 0.11:7
# 0.1981-0.1983; skin 0.35 with 0.08:6 0.2039-0.2041, 0.11:6 0.2038-0.2039 (213: the cap of 0.175 holds the
# fastest back); skin 0.45 with 0.1:6 0.1996-0.1998, 0.12:6 0.1978-0.1980. The energy drift is the uniform
# list's (9.48e-6 against 9.40e-6 per particle per tau). The build costs more (two multiply-adds a
# candidate, 58 registers against 56, cells of 2.9 against 2.8); 24% fewer builds and shorter rows gain 6% net.
# Opt-in: the plain steps and the benchmark's with-list and replayed columns know no velocity and take the
# uniform list of the larger skin (slower than the default's). Tried and dropped (9d1bcf5, s34-call10): the
# ballistic move over K steps, m + K dt |v| + (K dt)^2 |a| / 2 with the last closing kick's forces (on 32,000
# recorded steps it lengthened the intervals by 15-20% for 1% longer rows): at LJ 1M, skin 0.4, 0.11:6 0.1979 /
# 0.1979 ms (189 builds), 0.09:6 0.1981 / 0.1985 (202), 0.07:8 0.2008 / 0.2009 (209), 0.07:6 0.2036 (225), 0.05:6
# 0.2106 / 0.2109 (261), against the velocity alone's 0.1965-0.1969 at 0.11:6.
ADAPT_BUILDS = ("auto", "strip", "opposite")


def parse_adapt(name: str, value) -> tuple[float, float] | None:
    """The launch parameter adapt: 'off' (None) or 'm:K' -> (m, K), m > 0 and K >= 0 finite."""
    if value == "off":
        return None
    m, sep, k = str(value).partition(":")
    try:
        mv, kv = float(m), float(k)
    except ValueError:
        mv = kv = math.nan
    if not sep or not (0.0 < mv < math.inf) or not (0.0 <= kv < math.inf):
        raise InputError(f"{name}: launch parameter adapt must be 'off' or m:K (a margin m > 0 and K >= 0 steps of "
                         f"each particle's speed, e.g. 0.08:6), got {value!r}")
    return mv, kv


def adapt_text(adapt) -> str:
    """parse_adapt's value as the plans' launch_info says it."""
    return "off" if adapt is None else f"{adapt[0]:g}:{adapt[1]:g}"


class VerletStrategy(ListStrategy):
    traversal: ClassVar[str] = "verlet"
    processor: ClassVar[str] = "thread"
    list_kind: ClassVar[str] = "a Verlet list"
    launch_defaults: ClassVar[dict] = {"skin": SKIN, "cap": 0, "rebuild": "auto"}

    def __init__(self, **launch):
        super().__init__(**launch)
        cap = self.launch["cap"]
        if isinstance(cap, bool) or not isinstance(cap, int) or cap < 0:
            raise InputError(f"{self.name}: launch parameter cap must be a whole number >= 0 (0: sized at the first "
                             f"build), got {cap!r}")

    def grid(self, problem: Problem) -> np.ndarray:
        return S.grid_dims(problem.box.array, self.rlist(problem), 1.0)

    def supports(self, problem: Problem, check_device: bool = True) -> tuple[bool, str]:
        ok, why = super().supports(problem, check_device)
        if not ok:
            return ok, why
        dims = self.grid(problem)
        if int(np.prod(dims)) > max_cells(problem.n):
            return False, f"a grid of {int(np.prod(dims)):,} cells for {problem.n:,} particles is too sparse for cells"
        return True, ""

    def work(self, problem: Problem) -> dict:
        """The build's distance checks (cells of side r_list); the force phase checks each listed
        pair: about (cutoff + skin)^3 / cutoff^3 times the interactions."""
        if not problem.n or problem.potential.cutoff is None:
            return {"distance_checks": 0 if not problem.n else None}
        dims = self.grid(problem)
        counts = _counts(problem, dims)
        build = S.fullshell_checks(counts, dims, problem.box.periodic)
        rl, rc = self.rlist(problem), float(problem.potential.cutoff)
        cell = float(np.prod(problem.box.array / dims))
        listed = int(build * (4.0 / 3.0 * math.pi * rl ** 3) / (27.0 * cell))  # uniform density
        return {"distance_checks": listed, "build_checks": build, "skin": self.launch["skin"], "cells": int(np.prod(dims)),
                "list_to_cutoff_volume": (rl / rc) ** 3}


def _counts(problem: Problem, dims) -> np.ndarray:
    idx = np.minimum((problem.positions / (problem.box.array / dims)).astype(np.int64), dims - 1)
    return np.bincount((idx[:, 0] * dims[1] + idx[:, 1]) * dims[2] + idx[:, 2], minlength=int(np.prod(dims)))


# --- CUDA ---------------------------------------------------------------------------------------

@register
class VerletThreadPadded(VerletStrategy, CudaStrategy):
    name = "verlet_thread_padded"
    storage = "padded"
    source_file = "verlet.cu"
    description = ("CUDA Verlet list (cutoff + skin), padded rows of 16-bit near and 32-bit far entries, tpp threads per row; the "
                   "displacement check and rebuild decided on the device every step; layout aos4 (default), aos3 "
                   "or soa for the positions the force kernel gathers")
    # layout: how the force kernel's positions lie (aos4: the plan's Vec4 array; aos3, soa: a copy
    # made at the start of the force phase; kernels/layout.cuh)
    # minb: blocks per SM the force kernel's registers must leave room for (__launch_bounds__; 0:
    # the compiler's choice); batch: list entries a thread gathers before computing their pairs;
    # 'auto': each output flavour its own (AUTO_MINB, AUTO_BATCH)
    launch_defaults = {**VerletStrategy.launch_defaults, "block": 128, "tpp": 0, "build": "auto", "window": 1,
                       "layout": "aos4", "minb": "auto", "batch": "auto", "split": "auto", "row_groups": 1, "banks": 0,
                       "prune": "off", "adapt": "off"}
    launch_choices = {**VerletStrategy.launch_choices, "block": (64, 128, 256, 512), "tpp": TPP_CHOICES,
                      "build": BUILD_CHOICES, "window": (0, 1), "layout": tuple(VERLET_LAYOUTS),
                      "minb": MINB_CHOICES,
                      "batch": BATCH_CHOICES, "split": SPLIT_CHOICES, "row_groups": TILE_GROUPS,
                      "banks": (0, 1, 2)}
    auto_minb: ClassVar[dict] = AUTO_MINB
    auto_batch: ClassVar[dict] = AUTO_BATCH
    auto_packed: ClassVar[tuple] = (AUTO_MINB_PACKED, AUTO_BATCH_PACKED)  # layout=packed's (minb, batch)

    def __init__(self, **launch):
        super().__init__(**launch)
        if self.launch.get("prune", "off") != "off":  # a number in (0, skin): ListStrategy
            if self.launch["banks"]:
                raise InputError(f"{self.name}: banks={self.launch['banks']} orders the outer rows, which the force "
                                 "kernel does not read with prune: take banks=0")
        self.adapt = parse_adapt(self.name, self.launch.get("adapt", "off"))
        if self.adapt is not None:
            if self.launch.get("prune", "off") != "off":
                raise InputError(f"{self.name}: adapt sizes each particle's buffer from its speed; the inner list "
                                 "(prune) takes one buffer for all: take prune=off")
            if self.launch["build"] not in ADAPT_BUILDS:
                raise InputError(f"{self.name}: adapt needs the strip build (build=auto, strip or opposite), got "
                                 f"build={self.launch['build']}")
        if self.launch["minb"] != "auto" and self.launch["minb"] * self.launch["block"] > MAX_THREADS_PER_SM:
            raise InputError(f"{self.name}: minb={self.launch['minb']} blocks of {self.launch['block']} threads do not "
                             f"fit on one SM ({MAX_THREADS_PER_SM} threads): take minb <= "
                             f"{MAX_THREADS_PER_SM // self.launch['block']}")

    def supports(self, problem: Problem, check_device: bool = True) -> tuple[bool, str]:
        if self.launch["layout"] == "packed":
            if problem.precision not in self.kernel_precisions():
                return False, (f"layout=packed holds float coordinates in fixed point; {problem.precision} computes in "
                               f"{MODES[problem.precision].cxx_compute} (take layout aos4 or soa)")
            if problem.potential.cutoff is not None:
                h = packed_step(self.packed_reach(problem))
                half = 0.5 * float(np.max(problem.box.array))
                spacing = float(np.spacing(np.float32(half)))
                if h > spacing:
                    return False, (f"layout=packed's grid step {h:.3g} (2^20 steps reach r_list + skin = "
                                   f"{self.packed_reach(problem):g}) is coarser than a float's spacing "
                                   f"{spacing:.3g} at the box's half-length {half:.3g}: the packed positions would be "
                                   "less precise than the float ones (take aos4)")
        return super().supports(problem, check_device)

    def packed_reach(self, problem: Problem) -> float:
        """The farthest a near pair can be while the list is valid (each end within skin / 2 of its
        build position): r_list + skin, what layout=packed's grid must span (packed_step)."""
        return self.rlist(problem) + self.launch["skin"]

    def force_expression(self, precision: str, potential: Potential, energy: bool, pbc: bool, tpp: int,
                         md: int = 0) -> str:
        """The force kernel for threads per row `tpp` (the plan's: launch tpp, or auto_tpp's where 0);
        md 1 or 2: the fused MD step's (kernels/verlet.cu, MdStep)."""
        real, acc = ctypes(precision)
        minb, batch = self.register_cap(energy, acc, md), self.batch(energy, self.entries(tpp), md)
        return (f"verlet_force<{real}, {acc}, {potential.functor}, {cbool(energy)}, {cbool(pbc)}, "
                f"{tpp}, {self.launch['block']}, {VERLET_LAYOUTS[self.launch['layout']]}, {minb}, {batch}, "
                f"{cbool(self.entries(tpp))}" + (f", {md}>" if md else ">"))

    def md_expressions(self, potential: Potential) -> list[str]:
        """The fused MD steps' force kernels (periodic boxes, the float precision modes): the
        closing kick with every output flavour, the closing and opening kicks forces only."""
        return [self.force_expression(p, potential, e, True, t, md) for t in self.default_tpps()
                for p in FLOAT_PRECISIONS if p in self.kernel_precisions()
                for e, md in ((True, 1), (False, 1), (False, 2))]

    def entries(self, tpp: int) -> bool:
        """Whether the row's tpp lanes split it by entries (split 'entries', or 'auto' from
        SPLIT_ENTRIES_FROM lanes); one lane per row has nothing to split."""
        split = self.launch["split"]
        return tpp > 1 and (split == "entries" or (split == "auto" and tpp >= SPLIT_ENTRIES_FROM))

    def tpps(self) -> tuple[int, ...]:
        """The threads per row this launch may run with (tpp=0: every value auto_tpp may choose)."""
        t = self.launch["tpp"]
        return tuple(1 << k for k in range(AUTO_TPP_MOST.bit_length())) if t == 0 else (t,)

    def default_tpps(self) -> tuple[int, ...]:
        """The tpps whose kernels CI checks one by one (spills, float64 in PTX): tpp=0's two ends;
        those between differ only in the rows' shuffle sum and compile with expressions()."""
        t = self.tpps()
        return (t[0], t[-1]) if len(t) > 1 else t

    def register_cap(self, energy: bool, acc: str = "float", md: int = 0) -> int:
        """minb for the flavour: 'auto' is AUTO_MINB's threads per SM (layout=packed:
        AUTO_MINB_PACKED's; measured, H200, LJ, fp32, blocks of AUTO_MINB_BLOCK) in blocks of this
        size where the sums are float, none otherwise (mixed, fixed point and fp64 spilled under it),
        dropped where those blocks do not fit on an SM. The fused MD steps' kernels (md > 0) keep
        AUTO_MINB's at every layout: at minb 12 the packed MD 2 kernel took harness md's step from
        0.2122 to 0.2140 ms (LJ 1M, s31-call1 and -call3)."""
        m, block = self.launch["minb"], self.launch["block"]
        if m == "auto":
            if acc != "float":
                return 0
            m = max(1, self._auto_tables(md)[0][energy] * AUTO_MINB_BLOCK // block)
            return m if m * block <= MAX_THREADS_PER_SM else 0
        return m

    def _auto_tables(self, md: int) -> tuple[dict, dict]:
        """'auto''s (minb, batch) tables: layout=packed's own for the force kernels, the general ones
        for the other layouts and the fused MD steps' kernels."""
        if self.launch.get("layout") == "packed" and not md:
            return self.auto_packed
        return self.auto_minb, self.auto_batch

    def batch(self, energy: bool, entries: bool = False, md: int = 0) -> int:
        b = self.launch["batch"]
        if b != "auto":
            return b
        if entries:
            return AUTO_BATCH_ENTRIES
        return self._auto_tables(md)[1][energy]

    def expressions(self, potential: Potential) -> list[str]:
        """Every tpp at the default block (split by groups and by entries), every block at tpp 1,
        every layout, minb and batch, each flavour and precision."""
        variants = [{"tpp": t} for t in TPP_CHOICES] + [{"block": b} for b in self.launch_choices["block"]] + \
            [{"layout": lay} for lay in VERLET_LAYOUTS] + [{"minb": m} for m in MINB_CHOICES] + \
            [{"batch": b} for b in BATCH_CHOICES] + [{"tpp": t, "split": sp} for t in TPP_CHOICES[2:]
                                                     for sp in ("groups", "entries")]
        out: list[str] = []
        for v in variants:
            s = VerletThreadPadded(**v)
            out += [e for e in s.default_expressions(potential) if e not in out]
        return out

    def kernel_precisions(self) -> tuple[str, ...]:
        """The precision modes this launch's kernels exist for: layout=packed needs float coordinates."""
        return tuple(p for p in MODES if self.launch["layout"] != "packed" or MODES[p].cxx_compute == "float")

    def default_expressions(self, potential: Potential) -> list[str]:
        return [self.force_expression(p, potential, e, pbc, t) for t in self.default_tpps()
                for p in self.kernel_precisions() for e in (True, False) for pbc in (True, False)] + \
            self.md_expressions(potential)

    def data_expressions(self) -> dict[str, list[str]]:
        reals = sorted({m.cxx_compute for m in MODES.values()})
        return {"verlet.cu": [f"verlet_refresh<{r}>" for r in reals] + [f"verlet_build<{r}, {m}, {w}, false, {ad}>"
                                                                       for r in reals
                                                                       for m, w in BUILD_FLAGS
                                                                       for ad in ("false", "true")] +
                              [f"verlet_build<{r}, false, true, true, {ad}>" for r in reals
                               for ad in ("false", "true")] +
                              [f"verlet_build_cells<{r}, {m}>" for r in reals for m in ("false", "true")] +
                              [f"verlet_build_warp<{r}, {m}>" for r in reals for m in ("false", "true")] +
                              [f"verlet_build_tile<{r}, {gr}>" for r in reals for gr in TILE_GROUPS] +
                              ["verlet_banks", f"verlet_rotate<{ROTATE_BLOCK}>", "verlet_pack"] +
                              [f"verlet_prune<{r}, {fma}, {pbc}, {pk}>" for r in reals for fma in ("true", "false")
                               for pbc in ("true", "false") for pk in ("false", "true") if pk == "false" or r == "float"] +
                              md_data_expressions(),
                "binning.cu": sorted({e for r in reals for e in Binning.expressions(r)}),
                "layout.cu": layout_expressions()}

    def _prepare(self, problem: Problem) -> Plan:
        return VerletPlan(self, problem)


class VerletPlan(DeviceListPlan):
    visits_per_pair = 2  # a full list: every pair from both sides

    def __init__(self, strategy: VerletThreadPadded, problem: Problem):
        n = problem.n
        self.tpp = strategy.launch.get("tpp", 1) or auto_tpp(n, AUTO_TPP_MOST, round_up=False)
        self.block = strategy.launch["block"]
        self.rows = self.row_count(strategy, problem)
        self.blocks = max(1, -(-(self.rows * self.tpp) // self.block))
        super().__init__(strategy, problem, nparts=self.blocks if n else 0)
        cp = self.cp
        self.skin = strategy.launch["skin"]
        self.rl = strategy.rlist(problem)
        self.dims = strategy.grid(problem)
        self.grid_struct = np.array([(*self.dims, pmask(problem))], dtype=GRID_DTYPE)
        self.inv_side = [self.real(self.dims[a] / problem.box.array[a]) for a in range(3)]
        self.pbc = any(problem.box.periodic)
        self.rc2 = self.real(problem.potential.cutoff ** 2)
        self.rlist2 = self.real(self.rl ** 2)
        self.half_skin2 = self.real((0.5 * self.skin) ** 2)
        # adapt: each particle's half-skin in its position's w (kernels/verlet.cu, verlet_build ADAPT), skin / 2
        # where no velocity is known; the triggers read the build's (half_skin2 < 0: per slot, refreshed). The
        # MD loop's plain steps hand the plan their integrator (use_velocities): a rebuild then writes each w
        # from the velocity (verlet_half_skins), as the fused steps' verlet_stage does
        self.adapt = getattr(strategy, "adapt", None)
        self.hcap = self.real(0.5 * self.skin)
        self.integ, self.k_half_skins = None, None
        if self.adapt is not None:
            self.host_pos[:, 3] = self.hcap
            self.half_skin2 = self.real(-1.0)
        self.binning = Binning(cp, self.real_t, n, self.dims, self.pos, self.box, self.grid_struct, self.inv_side,
                               write_pos=True)
        m = max(n, 1)
        # flag[0]: the rebuild trigger; flag[1]: the inner list's (prune); rebuilds: their counts
        # (kernels/verlet.cu, consume_flags)
        self.flag = cp.ones(2, np.int32)
        self.rebuilds = cp.zeros(2, np.uint32)
        self.overflow = cp.zeros(1, np.int32)
        self.ref = cp.zeros((m, 4), self.real)  # the build's positions, sorted order
        # the positions now, sorted order, unwrapped since the build; slot n: the phantom the rows are
        # padded with (kernels/verlet.cu, RowWriter), so far that no pair with it lies inside a cutoff
        self.cur = cp.zeros((m + 1, 4), self.real)
        self.cur[n, :3] = PHANTOM
        self.len = cp.zeros((max(self.rows, 1), 2), np.int32)  # per row: plain entries, image entries
        real_t = self.real_t
        self.k_check = kernel("verlet.cu", f"verlet_refresh<{real_t}>")
        # per-pair minimum image in the build only on a periodic axis of fewer than 3 cells; z-windows otherwise
        minimage = any(p and int(d) < 3 for d, p in zip(self.dims, problem.box.periodic))
        window = bool(strategy.launch.get("window", 1)) and not minimage
        self.margin = self.real(8 * np.finfo(np.float32).eps * (0.5 * float(problem.box.array.max()) + self.rl))
        self._force: dict[str, object] = {}
        self.banks = int(strategy.launch.get("banks", 0))
        if self.banks == 2 and self.tpp != 1:
            raise StrategyError(f"{strategy.name}: banks=2 orders each row for one thread per row, but this run "
                                f"takes tpp={self.tpp} ({n:,} particles): take tpp=1, or banks=0 or 1")
        self.entries = strategy.entries(self.tpp)
        self.k_banks = kernel("verlet.cu", {1: "verlet_banks", 2: f"verlet_rotate<{ROTATE_BLOCK}>"}[self.banks]) \
            if self.banks else None
        # first build: the binning method (and the fullest cell: the list build's), then the rows'
        # lengths (capacity 0), then the list
        if n:
            self.upload()
        counts = self.binning.choose()
        self.sms = cp.cuda.Device().attributes["MultiProcessorCount"]
        self._build_kernel(int(counts.max()) if counts.size else 0, minimage, window)
        self.cap = int(strategy.launch["cap"])
        self.nbr = cp.zeros(1, np.int32)
        if n and self.cap == 0:
            self._build_rows(0)
            longest = int(self.overflow.get()[0])
            self.overflow.fill(0)
            self.cap = cap_of(longest)
        rows = max(self.rows, 1)
        need = groups_of(self.cap) * 4 * rows * 4
        free = self._free_bytes()
        if need > free:
            raise StrategyError(f"{strategy.name}: the list needs {need / 2**30:.2f} GiB ({rows:,} rows x {self.cap} "
                                f"neighbours within {self.rl:g}) but the GPU has {free / 2**30:.2f} GiB free; take a "
                                "smaller skin")
        self.nbr = cp.empty(groups_of(self.cap) * 4 * rows, np.int32)
        self._prune_setup(need, free)
        if strategy.launch["layout"] == "packed":
            self.layout = PackedLayout(cp, n + 1, strategy.packed_reach(problem))
        else:
            self.layout = Layout(cp, strategy.launch["layout"], self.real_t, self.real, n + 1)  # the phantom too
        self.launch_info = {"cells": self.dims.tolist(), "rlist": self.rl, "skin": self.skin, "cap": self.cap,
                            "tpp": self.tpp, "block": self.block, "build": self.binning.method,
                            "list_build": self.build_kind + (f"/{strategy.launch['row_groups']}"
                                                             if self.build_kind == "tile" else ""),
                            "split": "entries" if self.entries else "groups",
                            "banks": self.banks,
                            "layout": self.layout.name,
                            "prune": self.inner_skin if self.inner_skin else "off",
                            "adapt": adapt_text(self.adapt),
                            "list_bytes": int(self.nbr.nbytes + self.len.nbytes + self.ref.nbytes
                                              + self.cur.nbytes + sum(a.nbytes for a in self._inner_arrays()))}

    def use_velocities(self, integ) -> None:
        """The MD loop's integrator (harness/md.py, plain steps; a GpuIntegrator on this plan), or anything
        with its v (N x 3, the accumulation type, on the device) and dt (a replay's FrameVelocities): with
        adapt, each rebuild sizes the half-skins from those velocities (verlet_half_skins) before the
        binning. None: no velocity known again, every half-skin skin / 2."""
        if self.adapt is None:
            return
        self.integ = integ
        if integ is None:
            self.k_half_skins = None
            if self.problem.n:
                self.pos[: self.problem.n, 3] = self.hcap
            return
        v_t = "double" if integ.v.dtype == np.float64 else "float"  # the integrator's Acc; a replay's own type
        self.k_half_skins = kernel("verlet.cu", f"verlet_half_skins<{self.real_t}, {v_t}>")

    def half_skin_args(self, dt) -> tuple:
        """The half-skins' constants (kernels/verlet.cu, adapt_half_skin) for time step dt, in Real: K dt, the
        margin and the cap; without adapt K dt < 0 (verlet_stage keeps ref's w). One place for the fused
        steps (verlet_stage) and the plain ones (verlet_half_skins), so both take the same h."""
        k_dt, margin = (-1.0, 0.0) if self.adapt is None else (self.adapt[1] * dt, self.adapt[0])
        return self.real(k_dt), self.real(margin), self.hcap

    def _before_binning(self, guard) -> None:
        if self.k_half_skins is None or not self.problem.n:
            return
        n = self.problem.n
        self.k_half_skins((max(1, min(-(-n // MD_BLOCK), GUARDED_BLOCKS_PER_SM * sm_count())),), (MD_BLOCK,),
                          (self.integ.v, np.int32(n), self.pos, guard if guard is not None else np.uint64(0),
                           *self.half_skin_args(self.integ.dt)))

    def _prune_setup(self, need: int, free: int) -> None:
        """The inner list (launch parameter prune; kernels/verlet.cu, verlet_prune): rows of the
        outer list's storage and capacity (a subset of its entries never overflows), their lengths,
        the positions of the last prune, and the kernel. Refused with the GiB both lists need where
        the GPU lacks them."""
        cp, n, strategy = self.cp, self.problem.n, self.strategy
        prune = strategy.launch.get("prune", "off")
        self.inner_skin = 0.0 if prune == "off" else float(prune)
        self.inner = self.ilen = self.pref = None
        self.half_inner2 = self.real(0.0)  # the prune trigger's (inner / 2)^2; 0 without an inner list
        if not self.inner_skin:
            return
        if 2 * need > free:
            raise StrategyError(f"{strategy.name}: the outer and inner lists need {2 * need / 2**30:.2f} GiB "
                                f"({max(self.rows, 1):,} rows x {self.cap} neighbours each) but the GPU has "
                                f"{free / 2**30:.2f} GiB free; take a smaller skin, or prune=off")
        rl_in = float(self.problem.potential.cutoff) + self.inner_skin
        self.rin2 = self.real(rl_in ** 2)
        self.half_inner2 = self.real((0.5 * self.inner_skin) ** 2)
        self.inner = cp.empty_like(self.nbr)
        self.ilen = cp.zeros_like(self.len)
        self.pref = cp.zeros((max(n, 1), 4), self.real)
        packed = strategy.launch["layout"] == "packed"
        fma = cbool(MODES[self.problem.precision].cxx_accumulate != "Fixed")
        self.k_prune = kernel("verlet.cu", f"verlet_prune<{self.real_t}, {fma}, {cbool(self.pbc)}, {cbool(packed)}>")

    def _inner_arrays(self) -> list:
        return [a for a in (self.inner, self.ilen, self.pref) if a is not None]

    def _prune(self, guard) -> None:
        """The inner rows from the outer ones at the positions of now (guard: flag[1:], set where a
        particle moved beyond inner/2 since the last prune, and by every rebuild; None: always)."""
        n = self.problem.n
        if not self.inner_skin or not n:
            return
        self.k_prune((-(-n // 128),), (128,), (self.cur, self.nbr, self.len, np.int32(n), np.int32(self.cap), self.box,
                                               self.rin2, self.inner, self.ilen, self.pref,
                                               guard if guard is not None else np.uint64(0), self._packed()))

    def build(self) -> None:
        super().build()
        self._prune(None)

    def update(self) -> None:
        super().update()
        if self.problem.n and self.strategy.launch["rebuild"] != "never":
            self._prune(self.flag[1:])

    def prune_count(self) -> int:
        """Prunes of the inner list the force phase has used since prepare (0 without one)."""
        return int(self.rebuilds.get()[1]) if self.inner_skin else 0

    def _rows_read(self) -> tuple:
        """The rows the force kernel reads: the inner list's where the plan keeps one."""
        return (self.inner, self.ilen) if self.inner_skin else (self.nbr, self.len)

    @staticmethod
    def row_count(strategy, problem: Problem) -> int:
        """Rows of the list: one per particle."""
        return problem.n

    def _build_kernel(self, fullest: int, minimage: bool, window: bool) -> None:
        """The list build (build_kind, k_build) for this run: an explicit choice or 'auto'
        (build_kind()), the strip build where a tile cannot take one image shift per run."""
        launch, real_t = self.strategy.launch, self.real_t
        self.build_kind = build_kind(launch["build"], self.problem.n, self.sms, fullest)
        if self.build_kind == "tile" and minimage:  # the tile build takes one image shift per run
            self.build_kind = "strip"
        if self.build_kind == "opposite" and (minimage or not window):  # its walk is over z-windows
            self.build_kind = "strip"
        adapt = self.adapt is not None
        if adapt and self.build_kind not in ("strip", "opposite"):  # the per-particle reach: the strip builds only
            self.build_kind = "strip"
        self.k_build = kernel("verlet.cu", {
            "cell": f"verlet_build_cells<{real_t}, {cbool(minimage)}>",
            "warp": f"verlet_build_warp<{real_t}, {cbool(minimage)}>",
            "tile": f"verlet_build_tile<{real_t}, {launch['row_groups']}>",
            "opposite": f"verlet_build<{real_t}, false, true, true, {cbool(adapt)}>",
        }.get(self.build_kind, f"verlet_build<{real_t}, {cbool(minimage)}, {cbool(window)}, false, {cbool(adapt)}>"))

    @property
    def device_bytes(self) -> int:
        own = [self.flag, self.rebuilds, self.overflow, self.ref, self.cur, self.len, self.nbr, *self._inner_arrays()]
        return (CudaPlan.device_bytes.fget(self) + self.binning.device_bytes + int(sum(a.nbytes for a in own))
                + self.layout.nbytes)

    def _build_rows(self, cap: int, guard=None) -> None:
        n = self.problem.n
        g = guard if guard is not None else np.uint64(0)
        b = self.binning
        rows = (self.nbr, self.len, self.ref, self.cur, self.overflow, g)
        if self.build_kind == "warp":  # 32 threads per row
            self.k_build((-(-n * 32 // 128),), (128,), (b.sorted, b.cell_sorted, b.start, np.int32(n), self.grid_struct,
                                                         self.box, self.rlist2, np.int32(cap), *rows))
            return
        if self.build_kind == "tile":
            blocks = max(1, min(-(-n // (32 * TILE_WARPS)), TILE_BLOCKS_PER_SM * self.sms))
            self.k_build((blocks,), (32 * TILE_WARPS,), (b.sorted, b.cell_sorted, b.start, np.int32(n),
                                                          self.grid_struct, self.box, self.rlist2, self.margin,
                                                          np.int32(cap), *rows))
            return
        if self.build_kind == "cell":
            ncells = int(np.prod(self.dims))
            self.k_build((ncells,), (32,), (b.sorted, b.start, np.int32(n), self.grid_struct, self.box, self.rlist2,
                                            np.int32(cap), *rows))
            return
        self.k_build((-(-n // 128),), (128,), (b.sorted, b.cell_sorted, b.start, np.int32(n), self.grid_struct,
                                               self.box, self.rlist2, self.margin, np.int32(cap), *rows,
                                               self.real(self.problem.potential.cutoff), self.hcap))

    def _check(self, flag=None) -> None:
        """The trigger (flag) and cur: the positions the MD loop moved, in the list's order."""
        n = self.problem.n
        pref = self.pref if self.pref is not None else np.uint64(0)
        self.k_check((-(-n // 256),), (256,), (self.pos, self.binning.order, self.ref, np.int32(n), self.box,
                                               self.half_skin2, self.cur, self.flag if flag is None else flag,
                                               self._packed(), pref, self.half_inner2))

    def _refresh(self) -> None:
        self._check(np.uint64(0))  # cur only: the list is kept whatever the displacement

    def _rows(self, guard) -> None:
        self._build_rows(self.cap, guard)
        n = self.problem.n
        if isinstance(self.layout, PackedLayout):  # the build wrote cur
            self.layout.pack(self.cur, n, guard)
        if self.banks == 2:  # each row permuted for the force kernel's gathers (kernels/verlet.cu, verlet_rotate)
            most = min(self.cap, ROTATE_MOST, ROTATE_SHARED // (3 * ROTATE_BLOCK))
            self.k_banks((-(-n // ROTATE_BLOCK),), (ROTATE_BLOCK,), (self.nbr, self.len, np.int32(n), np.int32(most),
                                                                  guard if guard is not None else np.uint64(0)),
                         shared_mem=3 * ROTATE_BLOCK * most)
        elif self.banks:  # the near groups reordered for the force kernel's gathers (kernels/verlet.cu, verlet_banks)
            groups = -(-self.cap // 8)
            self.k_banks((-(-groups * n // 256),), (256,), (self.nbr, self.len, np.int32(n), np.int32(groups),
                                                           np.int32(self.tpp), np.int32(self.entries),
                                                           guard if guard is not None else np.uint64(0)))

    def listed_pairs(self) -> int:
        """Entries of the list the force kernel reads (each pair twice; the inner list where the plan
        keeps one): the force phase's distance checks."""
        n = self.problem.n
        return int(self._rows_read()[1][:n].sum(dtype=np.int64).get()) if n else 0  # plain and image entries

    def _force_kernel(self):
        """The force kernel of this run's outputs (compiled once per flavour)."""
        fn = self._force.get(self.outputs)
        if fn is None:
            p = self.problem
            expr = self.strategy.force_expression(p.precision, p.potential, self.energy, self.pbc, self.tpp)
            fn = self._force[self.outputs] = kernel("verlet.cu", expr, p.potential)
        return fn

    def force(self) -> None:
        n = self.problem.n
        if not n:
            return
        self._launch_force(self._force_kernel(), self.cur, self.flag, self._no_md())

    def _launch_force(self, fn, cur, flag, md) -> None:
        """The force kernel on positions `cur`; flag: the trigger it clears (counting the rebuild
        the step's upkeep made); md: its MdStep (zero where it writes forces)."""
        n = self.problem.n
        self.layout.fill(cur, n + 1)  # aos3, soa: the positions of this step (and the phantom), copied
        fn((self.blocks,), (self.block,), (*self.layout.args(cur), self.binning.order, *self._rows_read(),
                                           np.int32(n), np.int32(self.cap), self.box, self.fparams, self.forces, self.partial,
                                           self.pcount, flag, self.rebuilds, md, self._packed()))

    def _packed(self) -> np.ndarray:
        """The kernels' PackedPositions (layout=packed: the plan's q now; zero otherwise)."""
        return self.layout.struct() if isinstance(self.layout, PackedLayout) else NO_PACKED

    def _no_md(self) -> np.ndarray:
        if getattr(self, "_md_zero", None) is None:
            self._md_zero = np.zeros(1, md_dtype(self.acc, self.real))
        return self._md_zero

    def md_steps(self, integ, forces, always: bool = False):
        """(VerletSteps, "on"): the MD loop's steps fused into the list's order, from the state of
        `integ` (a GpuIntegrator on this plan) and the forces of its positions (input order);
        or (None, why not). Not where a row takes more than FUSE_TPP_MOST threads (small systems),
        unless `always`."""
        if not self.problem.n:
            return None, "no particles"
        if not self.binning.guardable:
            return None, f"the {self.binning.method} binning cannot be skipped on the device"
        if self.tpp > FUSE_TPP_MOST and not always:
            return None, (f"{self.tpp} threads a row (small systems: one of them updates the particle after the "
                          "row's sum, and the plain steps measured faster)")
        return VerletSteps(self, integ, forces), "on"

    def output(self) -> Forces:
        out = super().output()
        out.checks = ((self.overflow, f"{self.strategy.name}: a particle has {{value}} neighbours within "
                                      f"{self.rl:g} (cutoff + skin), more than the list's capacity {self.cap}; the "
                                      f"list was not complete: give the launch parameter cap (>= {{value}}) or prepare "
                                      "again"),)
        return out


def md_dtype(acc, real) -> np.dtype:
    """kernels/verlet.cu's MdStep<Real, Acc>, passed by value: 9 pointers, 5 Acc, two Real, one float."""
    names = ["x", "v", "f", "ref", "next", "flag", "bad", "qnext", "pref", "half_dt_m", "dt", "lx", "ly", "lz",
             "half_skin2", "half_inner2", "inv_h"]
    return np.dtype({"names": names, "formats": [np.uint64] * 9 + [acc] * 5 + [real, real, np.float32]}, align=True)


def md_data_expressions() -> list[str]:
    """The fused MD steps' kernels besides the force kernel, for the float precision modes."""
    pairs = sorted({(MODES[p].cxx_compute, MODES[p].cxx_accumulate) for p in FLOAT_PRECISIONS})
    return ([f"verlet_open<{r}, {a}>" for r, a in pairs] + [f"verlet_unsort<{r}, {a}>" for r, a in pairs]
            + [f"verlet_stage<{r}, {a}>" for r, a in pairs] + [f"verlet_half_skins<{r}, {a}>" for r, a in pairs]
            + [f"verlet_resort<{a}>" for a in sorted({a for _, a in pairs})])


MD_BLOCK = 256
# The fused steps against the plain ones (H100, LJ fp32, harness md, ms per whole step, twenty-third
# session, reports/2026-11-26-h100/, s23-call4): 1M (tpp 1) 0.2549 / 0.2557 against 0.2869 / 0.2869;
# 32,000 (tpp 4) 0.0304 / 0.0302 against 0.0301 / 0.0301; 4,000 (tpp 16) 0.01373 / 0.01379 against
# 0.01350 / 0.01359: there the row's lane 0 updates the particle after the row's shuffle sum, a
# chain of dependent loads the plain steps' kick_drift spreads over a thread per coordinate.
FUSE_TPP_MOST = 4


class VerletSteps:
    """The MD loop's steps on a Verlet list with the state in the list's order (harness/md.py takes
    it where the plan offers one; `harness md --no-fuse` keeps the plain loop).

    The plain loop runs, per step, kick_drift over the particles in input order, the list's check
    (verlet_refresh: each position gathered into slot order, the image nearest its build
    position, the trigger), the guarded upkeep, the force kernel (forces scattered to input order)
    and the kick. Here x, v and the closing kick's forces stay in slot order (the binning's order of
    the last build) and a step is the guarded upkeep and one force kernel that ends with each row's
    particle's update (kernels/verlet.cu, MdStep): the closing half kick, the next step's opening
    one, the drift, the next step's positions (a second buffer: the kernel still gathers from the
    first) and trigger (a second flag). The last step of a run keeps the forces and closes only;
    the next run opens with verlet_open. A rebuild bins the positions in input order, as the plain
    loop does (verlet_stage writes them, with the state copied aside and the old order's inverse),
    and takes the state to the new order through that inverse (verlet_resort), so that the rows, the
    sums and every coordinate are the plain loop's bit for bit (tests/test_md_fused.py). x and v in
    input order (the integrator's, here the rebuild's scratch) are written where the loop reads them
    (kinetic, positions, velocities: verlet_unsort).
    """

    def __init__(self, plan: VerletPlan, integ, forces):
        cp = plan.cp
        n = plan.problem.n
        self.plan, self.integ, self.n, self.cp = plan, integ, n, cp
        self.name = plan.strategy.name
        order = plan.binning.order[:n]
        self.xs, self.vs = integ.x[order], integ.v[order]
        self.fs = cp.asarray(forces)[order]
        self.cur = (plan.cur, plan.cur.copy())  # the copy keeps the phantom slot
        packed = isinstance(plan.layout, PackedLayout)
        self.qs = (plan.layout.q, plan.layout.q.copy()) if packed else (None, None)  # cur's packed copies
        self.flags = (plan.flag, cp.zeros(2, np.int32))  # each: the rebuild's and the prune's triggers
        self.never = plan.strategy.launch["rebuild"] == "never"
        real_t, acc_t = plan.real_t, plan.acc_t
        self.k_open = kernel("verlet.cu", f"verlet_open<{real_t}, {acc_t}>")
        self.k_unsort = kernel("verlet.cu", f"verlet_unsort<{real_t}, {acc_t}>")
        self.k_stage = kernel("verlet.cu", f"verlet_stage<{real_t}, {acc_t}>")
        self.k_resort = kernel("verlet.cu", f"verlet_resort<{acc_t}>")
        self.inv = cp.empty(max(n, 1), np.int32)  # the old slot order's inverse, during a rebuild
        self.adapt_args = plan.half_skin_args(integ.dt)  # verlet_stage's half-skins (launch parameter adapt)
        self.dtype = md_dtype(plan.acc, plan.real)
        self.blocks = max(1, -(-n // MD_BLOCK))
        self.guarded_blocks = max(1, min(self.blocks, GUARDED_BLOCKS_PER_SM * sm_count()))
        self._fn: dict = {}
        for outputs, mode in (("forces", 2), ("forces", 1), ("all", 1)):  # compiled before any step is timed
            self._kernel(outputs, mode)
        self.q = 0

    def _md(self, nxt, flag, qnext) -> np.ndarray:
        i = self.integ
        ptr = [a.data.ptr for a in (self.xs, self.vs, self.fs, self.plan.ref, nxt)]
        ptr += [0 if flag is None else flag.data.ptr, i.bad.data.ptr, 0 if qnext is None else qnext.data.ptr]
        ptr += [0 if self.plan.pref is None or flag is None else self.plan.pref.data.ptr]
        inv_h = 1.0 / self.plan.layout.h if qnext is not None else 0.0
        return np.array([(*ptr, i.half, i.dt, *i.L_acc, self.plan.half_skin2, self.plan.half_inner2,
                          inv_h)], dtype=self.dtype)

    def _kernel(self, outputs: str, mode: int):
        p = self.plan
        key = (outputs, mode)
        if key not in self._fn:
            expr = p.strategy.force_expression(p.problem.precision, p.problem.potential, outputs == "all", p.pbc,
                                               p.tpp, mode)
            self._fn[key] = kernel("verlet.cu", expr, p.problem.potential)
        return self._fn[key]

    def open(self) -> None:
        """The opening half kick and drift of a run of steps (the forces the last step kept)."""
        self.q = 0
        md = self._md(self.cur[0], None if self.never else self.flags[0], self.qs[0])
        self.k_open((self.blocks,), (MD_BLOCK,), (md, self.plan.box, np.int32(self.n)))

    def step(self, outputs: str, last: bool) -> Forces:
        """The guarded upkeep and the force kernel that closes this step and, unless `last`, opens
        the next."""
        p = self.plan
        i = self.q & 1
        self.q += 1
        p.set_outputs(outputs)
        with nvtx_range(f"build/{self.name}"):
            self.upkeep(i)
        with nvtx_range(f"force/{self.name}"):
            self.force(i, 1 if last else 2)
        with nvtx_range(f"reduce/{self.name}"):
            p.reduce()
        return p.output()

    def upkeep(self, i: int) -> None:
        """The rebuild where flag i is set (skipped on the device otherwise): the positions to input
        order and the state aside (verlet_stage, into the integrator's x and v as scratch), the
        binning, the state to the new slot order (verlet_resort), the rows (their positions into cur
        i); then the inner list's prune where its trigger (flag i's second) is set."""
        p, n, flag = self.plan, self.n, self.flags[i]
        p.cur = self.cur[i]
        if self.qs[i] is not None:
            p.layout.q = self.qs[i]
        if self.never:
            return
        xt, vt, grid = self.integ.x, self.integ.v, (self.guarded_blocks,)
        with upkeep_if(flag):  # under capture: a conditional node's body (strategies/graphs.py)
            self.k_stage(grid, (MD_BLOCK,), (p.binning.order, self.xs, self.vs, p.ref, np.int32(n), xt, vt, p.pos,
                                             self.inv, flag, *self.adapt_args))
            p.binning.run(guard=flag)
            self.k_resort(grid, (MD_BLOCK,), (p.binning.order, self.inv, xt, vt, np.int32(n), self.xs, self.vs, flag))
            p._rows(flag)
        p._prune(flag[1:])  # the inner list (prune), where flag[1] is set: a moved particle or the rebuild

    def force(self, i: int, mode: int) -> None:
        """The force kernel on cur i, clearing flag i; mode 2 writes cur and flag i ^ 1."""
        md = self._md(self.cur[i ^ 1], None if self.never else self.flags[i ^ 1], self.qs[i ^ 1])
        self.plan._launch_force(self._kernel(self.plan.outputs, mode), self.cur[i], self.flags[i], md)

    def _unsort(self) -> None:
        """x, v (the integrator's, input order) and the plan's positions from the slot-order state."""
        i = self.integ
        self.k_unsort((self.blocks,), (MD_BLOCK,), (self.plan.binning.order, self.xs, self.vs, np.int32(self.n), i.x,
                                                    i.v, self.plan.pos))

    def kinetic(self):
        self._unsort()
        return self.integ.kinetic()

    def positions(self) -> np.ndarray:
        self._unsort()
        return self.integ.positions()

    def velocities(self) -> np.ndarray:
        self._unsort()
        return self.integ.velocities()

    def blown_up(self) -> bool:
        return self.integ.blown_up()


# Rows of two particles (verlet_thread_pairrows): each gathered partner serves two pairs. Modelled on
# uniform random points at the LJ density with r_list 2.8 in the binning's order (two consecutive
# slots of a cell, a column's particles sorted by z): the union of two rows holds 1.38 times one
# row's entries, so the gathers per interaction fall to 0.69 of a row per particle's (the L1 data
# pipe's wavefronts bound that kernel at 1M) while the distance checks rise 1.38 times (issue);
# rows of four would gather 0.44 as much but check 1.77 times as much.
# Measured (H200, LJ 1M, fp32, nineteenth session, reports/2026-11-26-h200/, s19-call1), with a built
# list, rows of two against rows of one: forces 0.1567 against 0.1513 ms, all outputs 0.2100
# against 0.1775; build 0.662 against 0.680; amortised per step 0.263 against 0.260 (forces) and
# 0.314 against 0.285 (all). ncu (forces): L1 data-pipe wavefronts 27.0M against 33.1M (-19%, not
# -31%: 9.27 per request against 8.94, and 25.0 lanes active against 26.9), but 107.8M warp
# instructions against 73.4M (+47%): issue 74% against 50%, so the kernel turns issue-bound and
# loses. 256,000: 0.0589 against 0.0530 (forces); 4,000: 0.0376 against 0.0091 (2,000 threads).
# The final form (a row of one masks its second particle, s19-call5): forces 0.1569 against 0.1519,
# all outputs 0.2141 against 0.1782; amortised 0.2623 against 0.2601 and 0.3163 against 0.2852.
# The strategy stays as the measured design point (GROMACS's i-clusters, two wide); it is not the
# list 'auto' or the MD loop takes.
# Tried and reverted (twenty-second session, commits 6265244 and 094e515, reverted in 6efba4e; H200, LJ
# 1M, reports/2026-11-26-h200/, s22-call2): the partners split in three classes, those within r_list
# of both particles (one gather, two pairs) and each particle's own (one gather, one pair, in a second
# storage), so that a row of two gathers as the union does at about the rows of one's arithmetic
# (80.0M distance checks against the union's 112.7M). With a built list 0.1812 / 0.2264 ms against the
# union's 0.1563 / 0.2145 (forces / all), build 0.786 against 0.591 (96 registers against 72). ncu:
# 18.9 lanes of 32 active against 25.0, 112M warp instructions against 106M, 46% more gather requests:
# each lane's classes differ in length, and a warp runs its longest shared list, then its longest
# exclusive one.


PAIR_AUTO_MINB = {False: 8, True: 8}
PAIR_AUTO_BATCH = {False: 8, True: 8}


@register
class VerletThreadPairrows(VerletThreadPadded):
    name = "verlet_thread_pairrows"
    description = ("CUDA Verlet list (cutoff + skin) in rows of two particles of one cell (the union of their "
                   "neighbours: one gather for two pairs), padded rows of 16-bit near and 32-bit far entries, a thread "
                   "per row; the displacement check and rebuild decided on the device every step")
    launch_defaults = {**VerletStrategy.launch_defaults, "block": 128, "layout": "aos4", "minb": "auto",
                       "batch": "auto"}
    launch_choices = {**VerletStrategy.launch_choices, "block": (64, 128, 256, 512), "layout": tuple(LAYOUTS),
                      "minb": MINB_CHOICES, "batch": BATCH_CHOICES}
    # two particles' sums per thread: 8 entries in flight under a cap of 8 blocks of 128 (64
    # registers) in both flavours (H200, LJ 1M, with a built list, s19-call1, ms at minb 0 / 8 / 10):
    # forces, batch 8: 0.1784 / 0.1567 / 0.1583, batch 16: 0.1724 / 0.1587 / 0.1929; all outputs,
    # batch 8: 0.2134 / 0.2100 / 0.2644, batch 16: 0.2316 / 0.2260 / 0.3490.
    auto_minb: ClassVar[dict] = PAIR_AUTO_MINB
    auto_batch: ClassVar[dict] = PAIR_AUTO_BATCH

    def entries(self, tpp: int) -> bool:
        return False

    def tpps(self) -> tuple[int, ...]:
        return (1,)

    def md_expressions(self, potential: Potential) -> list[str]:
        return []  # the MD loop runs its plain steps on rows of two (VerletPairPlan.md_steps)

    def force_expression(self, precision: str, potential: Potential, energy: bool, pbc: bool, tpp: int = 1) -> str:
        real, acc = ctypes(precision)
        return (f"verlet_force_pairs<{real}, {acc}, {potential.functor}, {cbool(energy)}, {cbool(pbc)}, "
                f"{self.launch['block']}, {LAYOUTS[self.launch['layout']]}, {self.register_cap(energy, acc)}, "
                f"{self.batch(energy)}>")

    def expressions(self, potential: Potential) -> list[str]:
        """Every block, layout, minb and batch, each flavour and precision."""
        variants = [{"block": b} for b in self.launch_choices["block"]] + [{"layout": lay} for lay in LAYOUTS] + \
            [{"minb": m} for m in MINB_CHOICES] + [{"batch": b} for b in BATCH_CHOICES]
        out: list[str] = []
        for v in variants:
            out += [e for e in VerletThreadPairrows(**v).default_expressions(potential) if e not in out]
        return out

    def data_expressions(self) -> dict[str, list[str]]:
        reals = sorted({m.cxx_compute for m in MODES.values()})
        return {"verlet.cu": [f"verlet_refresh<{r}>" for r in reals] + [f"verlet_build_pairs<{r}, {m}>" for r in reals
                                                                       for m in ("false", "true")] +
                             ["pair_rows_count", "pair_rows_place"],
                "binning.cu": sorted({e for r in reals for e in Binning.expressions(r)}),
                "layout.cu": layout_expressions()}

    def _prepare(self, problem: Problem) -> Plan:
        return VerletPairPlan(self, problem)


class VerletPairPlan(VerletPlan):
    """Rows of two (kernels/verlet.cu, verlet_build_pairs and verlet_force_pairs): the cells' rows
    numbered at each build on the device (pair_rows_count, the binning's scan, pair_rows_place)."""

    def __init__(self, strategy: VerletThreadPairrows, problem: Problem):
        super().__init__(strategy, problem)
        self.launch_info["rows"] = self.rows
        self.launch_info["list_bytes"] += int(self.row_slot.nbytes + self.row_of.nbytes)

    def md_steps(self, integ, forces, always: bool = False):
        return None, "rows of two have no fused step"

    @staticmethod
    def row_count(strategy, problem: Problem) -> int:
        """The most rows a build can make: (count + 1) / 2 per cell."""
        return (problem.n + int(np.prod(strategy.grid(problem)))) // 2 if problem.n else 0

    def _build_kernel(self, fullest: int, minimage: bool, window: bool) -> None:
        """The rows of two's own build and the kernels that number the rows, with their tables."""
        cp, n = self.cp, self.problem.n
        self.ncells = int(np.prod(self.dims))
        self.pcounts = cp.zeros(self.ncells, np.int32)
        self.rfirst = cp.zeros(self.ncells + 1, np.int32)
        self.ntiles = -(-self.ncells // SCAN_TILE)
        self.tiles = cp.zeros(self.ntiles, np.uint64)
        self.tickets = cp.zeros(2, np.uint32)
        self.row_slot = cp.zeros(max(self.rows, 1), np.int32)
        self.row_of = cp.zeros(max(n, 1), np.int32)
        self.build_kind = "pairs"
        self.k_build = kernel("verlet.cu", f"verlet_build_pairs<{self.real_t}, {cbool(minimage)}>")
        self.k_count = kernel("verlet.cu", "pair_rows_count")
        self.k_scan = kernel("binning.cu", "scan_counts")
        self.k_place = kernel("verlet.cu", "pair_rows_place")

    def _tables(self) -> list:
        return [self.pcounts, self.rfirst, self.tiles, self.tickets, self.row_slot, self.row_of]

    @property
    def device_bytes(self) -> int:
        return VerletPlan.device_bytes.fget(self) + int(sum(a.nbytes for a in self._tables()))

    def _build_rows(self, cap: int, guard=None) -> None:
        n = self.problem.n
        g = guard if guard is not None else np.uint64(0)
        b = self.binning
        self.k_count((-(-self.ncells // 256),), (256,), (b.start, np.int32(self.ncells), self.pcounts, g))
        self.k_scan((self.ntiles,), (256,), (self.pcounts, np.int32(self.ncells), self.rfirst, self.tiles, self.tickets,
                                             np.int32(self.ntiles), g))
        self.k_place((-(-n // 256),), (256,), (b.cell_sorted, b.start, self.rfirst, np.int32(n), self.row_slot,
                                               self.row_of, g))
        self.k_build((-(-self.rows // 128),), (128,), (b.sorted, b.cell_sorted, b.start, self.rfirst, self.row_slot,
                                                       self.row_of, np.int32(n), np.int32(self.rows), self.grid_struct,
                                                       self.box, self.rlist2, self.margin, np.int32(cap), self.nbr,
                                                       self.len, self.ref, self.cur, self.overflow, g))

    def listed_pairs(self) -> int:
        """Distance checks of the force phase: each entry against the row's one or two particles,
        and a row's own pair once."""
        if not self.problem.n:
            return 0
        rows = int(self.rfirst[self.ncells].get())
        two = (self.row_slot[:rows] & 1).astype(np.int64)
        entries = self.len[:rows].sum(axis=1, dtype=np.int64)
        return int((entries * (1 + two) + two).sum())

    def force(self) -> None:
        n = self.problem.n
        if not n:
            return
        fn = self._force_kernel()
        self.layout.fill(self.cur, n + 1)
        fn((self.blocks,), (self.block,), (*self.layout.args(self.cur), self.binning.order, self.row_slot,
                                           self.rfirst[self.ncells:], self.nbr, self.len, np.int32(n),
                                           np.int32(self.rows), np.int32(self.cap), self.box, self.fparams, self.forces,
                                           self.partial, self.pcount, self.flag, self.rebuilds))


# --- CPU ------------------------------------------------------------------------------------

@njit(parallel=True)
def _build_cpu(sorted_pos, order, cell_sorted, start, dims, per, box, rlist2, nbr, length, overflow, adapt, rc, hs):
    """Rows in sorted order s (particle order[s]); nbr (rows, cap) of particle indices. adapt: a pair listed
    where r < rc + hs[s] + hs[q] (each particle's half-skin, sorted order), else r^2 < rlist2."""
    n = sorted_pos.shape[0]
    cap = nbr.shape[1]
    for s in prange(n):
        c = cell_sorted[s]
        cz = c % dims[2]
        cy = (c // dims[2]) % dims[1]
        cx = c // (dims[2] * dims[1])
        xlo, xhi = _axis_range(cx, dims[0], per[0])
        ylo, yhi = _axis_range(cy, dims[1], per[1])
        zlo, zhi = _axis_range(cz, dims[2], per[2])
        m = 0
        for ox in range(xlo, xhi + 1):
            x = _wrapi(cx + ox, dims[0])
            for oy in range(ylo, yhi + 1):
                y = _wrapi(cy + oy, dims[1])
                for oz in range(zlo, zhi + 1):
                    nb = (x * dims[1] + y) * dims[2] + _wrapi(cz + oz, dims[2])
                    for q in range(start[nb], start[nb + 1]):
                        if q == s:
                            continue
                        _, _, _, r2 = separation(sorted_pos, s, q, box)
                        lim = rlist2
                        if adapt:
                            reach = rc + (hs[s] + hs[q])
                            lim = reach * reach
                        if r2 < lim:
                            if m < cap:
                                nbr[s, m] = order[q]
                            m += 1
        length[s] = min(m, cap)
        overflow[s] = m


@njit(parallel=True)
def _force_cpu(pair, conv, with_sums, pos, order, nbr, length, box, prm, rc2, zero, forces, sums, counts):
    n = nbr.shape[0]
    for s in prange(n):
        i = order[s]
        sm = (zero, zero, zero, zero, zero, zero, zero)
        fx = fy = fz = zero
        m = 0
        for k in range(length[s]):
            j = nbr[s, k]
            dx, dy, dz, r2 = separation(pos, i, j, box)
            if r2 < rc2:
                ax, ay, az, sm = pair_step(pair, conv, with_sums, sm, dx, dy, dz, r2, prm)
                fx += ax
                fy += ay
                fz += az
                m += 1
        forces[i, 0] = fx
        forces[i, 1] = fy
        forces[i, 2] = fz
        store_sums(sums[s], sm)
        counts[s] = m


@register
class VerletThreadCpu(VerletStrategy):
    name = "verlet_thread_cpu"
    backend = "cpu"
    storage = "padded"
    description = "numba Verlet list (cutoff + skin), padded rows, rebuilt when a particle moved more than skin/2"
    # adapt: verlet_thread_padded's per-particle skins on the CPU, from the MD loop's velocities in the plain steps
    # (harness/md.py gives the plan its integrator: use_velocities), so that CI exercises the per-pair reach and
    # the per-particle trigger; the uniform list where no velocity is known
    launch_defaults = {**VerletStrategy.launch_defaults, "adapt": "off"}

    def __init__(self, **launch):
        super().__init__(**launch)
        self.adapt = parse_adapt(self.name, self.launch["adapt"])

    def _prepare(self, problem: Problem) -> Plan:
        return _VerletCpuPlan(self, problem)


class _VerletCpuPlan(CpuPlan):
    def __init__(self, strategy: VerletThreadCpu, problem: Problem):
        super().__init__(strategy, problem)
        self.dims = strategy.grid(problem)
        self.per = np.array(problem.box.periodic, dtype=np.bool_)
        self.side = (problem.box.array / self.dims).astype(self.real)
        self.skin = strategy.launch["skin"]
        self.rl = strategy.rlist(problem)
        self.rlist2 = self.real(self.rl ** 2)
        self.cap = int(strategy.launch["cap"])
        self.rebuilds = 0
        self.ref: np.ndarray | None = None
        self.nbr = np.zeros((problem.n, max(self.cap, 1)), np.int64)
        self.length = np.zeros(problem.n, np.int64)
        self.overflow_len = 0
        # adapt: each particle's half-skin (input order) from the integrator's velocities at a build; skin / 2
        # where none is known
        self.adapt = getattr(strategy, "adapt", None)
        self.hcap = self.real(0.5 * self.skin)
        self.h = np.full(problem.n, self.hcap, self.real)
        self.integ = None
        self.launch_info = {"cells": self.dims.tolist(), "rlist": self.rl, "skin": self.skin,
                            "adapt": adapt_text(self.adapt)}

    def use_velocities(self, integ) -> None:
        """The MD loop's integrator (harness/md.py, plain steps), or anything with its v and dt (a replay's
        FrameVelocities): its velocities size adapt's half-skins at each build. None: skin / 2 again."""
        self.integ = integ

    def _half_skins(self) -> None:
        if self.adapt is None or self.integ is None:
            self.h.fill(self.hcap)
            return
        m, k = self.adapt
        v = np.asarray(self.integ.v, dtype=np.float64).reshape(-1, 3)
        speed = np.sqrt(np.einsum("ij,ij->i", v, v))
        self.h[:] = np.minimum(self.hcap, m + k * float(self.integ.dt) * speed).astype(self.real)

    def build(self) -> None:
        self.order, cell_sorted, start, sorted_pos = bin_cells(self.pos, self.problem.box.array, self.side, self.dims)
        n = self.problem.n
        dims = self.dims.astype(np.int64)
        full = np.zeros(n, np.int64)
        self._half_skins()
        hs = self.h[self.order]  # sorted order, as the rows
        adapt = self.adapt is not None
        rc = self.real(self.problem.potential.cutoff)
        if self.cap == 0:  # size the rows from a first pass
            probe = np.zeros((n, 0), np.int64)
            _build_cpu(sorted_pos, self.order, cell_sorted, start, dims, self.per, self.box, self.rlist2, probe,
                       self.length, full, adapt, rc, hs)
            self.cap = cap_of(int(full.max()) if n else 0)
            self.nbr = np.zeros((n, self.cap), np.int64)
        _build_cpu(sorted_pos, self.order, cell_sorted, start, dims, self.per, self.box, self.rlist2, self.nbr,
                   self.length, full, adapt, rc, hs)
        self.overflow_len = max(self.overflow_len, int(full.max()) if n and full.max() > self.cap else 0)
        self.ref = self.pos.copy()
        self.rebuilds += 1
        self.launch_info["cap"] = self.cap
        self.launch_info["list_bytes"] = int(self.nbr.nbytes + self.length.nbytes + self.ref.nbytes)

    def needs_rebuild(self, positions=None) -> bool:
        if self.ref is None:
            return True
        if self.strategy.launch["rebuild"] == "never":
            return False
        if self.adapt is not None:  # each particle its own half-skin, the build's
            return moved_beyond(self.pos, self.ref, self.problem.box.array, self.per, self.h)
        return moved_beyond(self.pos, self.ref, self.problem.box.array, self.per, 0.5 * self.skin)

    def rebuild_count(self) -> int:
        return self.rebuilds

    def listed_pairs(self) -> int:
        return int(self.length.sum())

    def force(self) -> None:
        if self.overflow_len:
            raise StrategyError(f"{self.strategy.name}: a particle has {self.overflow_len} neighbours within "
                                f"{self.rl:g} (cutoff + skin), more than the list's capacity {self.cap}; the list was "
                                f"not complete: give the launch parameter cap (>= {self.overflow_len}) or prepare again")
        _force_cpu(self.pair, self.conv, self.energy, self.pos, self.order, self.nbr, self.length, self.box, self.prm, self.rc2,
                   self.acc(0), self.forces, self.sums, self.counts)

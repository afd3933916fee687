"""Persistent warps on the Verlet list (launch persist=1; kernels/verlet.cu, ChunkQueues): the forces
flavour at a thread per row on a grid of the blocks that fit at once, each warp taking chunks of 32 rows
from its SM's region, then from a pool, then from any region left; the launch's last warp sets the
counters back to 0."""
from dataclasses import replace

import numpy as np
import pytest

import strategies
from harness import md, scenarios
from strategies.verlet import QUEUES_DTYPE, VerletThreadPadded


# --- CPU (CI) -------------------------------------------------------------------------------

def test_persist_is_a_launch_choice_and_off_by_default():
    assert VerletThreadPadded.launch_defaults["persist"] == 0
    assert VerletThreadPadded.launch_choices["persist"] == (0, 1)


@pytest.mark.parametrize("energy, tpp, expected", [(False, 1, True), (True, 1, False), (False, 4, False)])
def test_only_the_forces_flavour_at_a_thread_per_row_persists(energy, tpp, expected):
    assert VerletThreadPadded(persist=1).persists(energy, tpp) is expected
    assert VerletThreadPadded(persist=0).persists(energy, tpp) is False


def test_the_queues_struct_is_laid_out_as_the_kernel_reads_it():
    # struct ChunkQueues { int* count; int chunks, regions, per; }: 8 + 3 * 4 bytes, padded to 24
    assert QUEUES_DTYPE.itemsize == 24
    assert [QUEUES_DTYPE.fields[k][1] for k in ("count", "chunks", "regions", "per")] == [0, 8, 12, 16]


def test_the_persistent_kernels_are_their_own_specialisations():
    p = scenarios.make("lj_liquid", 4000, precision="fp32")
    on, off = VerletThreadPadded(persist=1), VerletThreadPadded(persist=0)
    for mode in (0, 1, 2):
        a = on.force_expression(p.precision, p.potential, False, True, 1, mode)
        b = off.force_expression(p.precision, p.potential, False, True, 1, mode)
        assert a.endswith(", true>") and a != b
    # energy and virial keep the block sums: no persistent form
    assert on.force_expression(p.precision, p.potential, True, True, 1) == \
        off.force_expression(p.precision, p.potential, True, True, 1)


# --- GPU --------------------------------------------------------------------------------------

def _forces(p, **launch):
    s = strategies.create("verlet_thread_padded", **launch)
    plan = s.prepare(p, "forces")
    return s.compute(plan).to_host(), s, plan


@pytest.mark.gpu
@pytest.mark.parametrize("precision", ["fp32", "mixed", "fixed"])
@pytest.mark.parametrize("n", [40, 1000, 8000, 30000])
def test_persistent_warps_give_the_same_bits_launch_after_launch(precision, n):
    """The same forces as one block per 128 rows; a second and third launch on the same plan too,
    so the counters are back at 0 after each (fewer chunks than warps at 40 and 1,000: every chunk from
    the pool; 8,000: a region per SM of one chunk, on 63 blocks, so that most regions are taken by
    warps of other SMs)."""
    p = scenarios.make("lj_liquid:density=0.1" if n == 30000 else "lj_liquid", n, seed=5, precision=precision)
    ref, _, _ = _forces(p, tpp=1, persist=0)
    out, s, plan = _forces(p, tpp=1, persist=1)
    assert np.array_equal(out.forces, ref.forces) and out.pairs == ref.pairs
    for _ in range(2):
        again = s.compute(plan).to_host()
        assert np.array_equal(again.forces, ref.forces)
    assert not plan.taken.get().any()  # every counter back at 0


@pytest.mark.gpu
@pytest.mark.parametrize("n", [30000, 250000])
def test_persistent_packed_forces_give_the_same_bits(n):
    p = scenarios.make("lj_liquid:density=0.1" if n == 30000 else "lj_liquid", n, seed=3, precision="fp32")
    ref, _, _ = _forces(p, tpp=1, layout="packed", persist=0)
    out, _, plan = _forces(p, tpp=1, layout="packed", persist=1)
    assert np.array_equal(out.forces, ref.forces)
    grid = max(plan._grids.values())
    assert grid == min(plan.blocks, 12 * plan.sms)  # the blocks that fit at once (packed forces: 12 an SM)


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["aos4", "packed"])
def test_persistent_fused_md_gives_the_same_trajectory(layout):
    """The fused MD steps (closing and opening kicks, drift, rebuilds in the graphs) with persistent
    warps: the same samples, bit for bit, and the same rebuilds."""
    p = scenarios.make("lj_liquid:density=0.1", 30000, seed=2, precision="fp32")
    p = replace(p, potential=replace(p.potential, shift=True))
    runs = [md.run(strategies.create("verlet_thread_padded", layout=layout, tpp=1, persist=k), p, steps=200,
                   dt=0.005, sample=50, fuse="always") for k in (0, 1)]
    assert runs[0].fused == "on" and runs[0].rebuilds >= 3
    assert runs[0].rebuilds == runs[1].rebuilds
    assert [vars(s) for s in runs[0].samples] == [vars(s) for s in runs[1].samples]

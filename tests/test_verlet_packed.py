"""layout=packed on the Verlet list (kernels/verlet_rows.cuh, PackedPositions; strategies/verlet/packed.py,
PackedLayout): the near entries' positions as 21/21/22-bit fixed point in 8 bytes, their
separations as differences modulo the period."""
from dataclasses import replace

import numpy as np
import pytest

import strategies
from harness import md, scenarios, verify
from mdcore import LennardJones, Problem
from strategies.verlet import PACKED_DTYPE, PACKED_EXPO, packed_step

import reference


# --- CPU (CI) -------------------------------------------------------------------------------

def test_the_grid_step_is_the_smallest_power_of_two_reaching_r_list_plus_skin():
    for reach in (3.1, 1.0, 4.0, 0.37, 12.5):
        h = packed_step(reach)
        assert h == 2.0 ** round(np.log2(h))
        assert 2 ** 20 * h >= reach > 2 ** 19 * h
    assert packed_step(3.1) == 2.0 ** -18  # LJ: cutoff 2.5, skin 0.3


def _pack(x: np.ndarray, h: float) -> np.ndarray:
    """pack_position's words for float32 positions x (N, 3): (word x, word y) as uint32."""
    q = np.rint(x.astype(np.float32).astype(np.float64) / h).astype(np.int64)
    qx, qy, qz = (q[:, 0] & 0x1FFFFF), (q[:, 1] & 0x1FFFFF), (q[:, 2] & 0x3FFFFF)
    return np.stack([(qx | (qy << 21)) & 0xFFFFFFFF, ((qy >> 11) | (qz << 10)) & 0xFFFFFFFF], 1).astype(np.uint32)


def _as_float(bits: np.ndarray) -> np.ndarray:
    return bits.astype(np.uint32).view(np.float32)


def _separation(qi: np.ndarray, qj: np.ndarray, h: float) -> np.ndarray:
    """packed_separation's d = r_i - r_j, step by step in float32 as the kernel computes it."""
    u32 = np.uint32
    cx = (qi[:, 0] & u32(0x1FFFFF)) + u32(1 << 20)
    cy = u32(1 << 20) - (((qi[:, 0] >> u32(21)) | (qi[:, 1] << u32(11))) & u32(0x1FFFFF))
    cz = u32(1 << 21) - (qi[:, 1] >> u32(10))
    yj = (qj[:, 0] >> u32(21)) | (qj[:, 1] << u32(11))  # __funnelshift_r(x, y, 21)
    mx = _as_float(((cx - qj[:, 0]) & u32(0x1FFFFF)) | u32(PACKED_EXPO))
    my = _as_float(((yj + cy) & u32(0x1FFFFF)) | u32(PACKED_EXPO))
    mz = _as_float((((qj[:, 1] >> u32(10)) + cz) & u32(0x3FFFFF)) | u32(PACKED_EXPO))
    hf = np.float32(h)
    # each step exact (a product by a power of two, then a difference representable in float)
    dx = mx * hf + np.float32(-9437184.0 * h)
    dy = my * -hf + np.float32(9437184.0 * h)
    dz = mz * -hf + np.float32(10485760.0 * h)
    return np.stack([dx, dy, dz], 1)


def test_a_packed_separation_is_the_exact_difference_of_the_grid_positions():
    """Pairs within 2^20 h on each axis, anywhere in a box of side 107 (the modulo's wrap falls
    between many of them): d is (Q_i - Q_j) h exactly, Q the positions rounded to the grid."""
    rng = np.random.default_rng(5)
    h = packed_step(3.1)
    xi = rng.uniform(-55.0, 55.0, (20000, 3)).astype(np.float32)
    xj = (xi + rng.uniform(-3.99, 3.99, xi.shape)).astype(np.float32)
    d = _separation(_pack(xi, h), _pack(xj, h), h)
    qi = np.rint(xi.astype(np.float64) / h)
    qj = np.rint(xj.astype(np.float64) / h)
    assert np.array_equal(d.astype(np.float64), (qi - qj) * h)
    assert np.abs(d - (xi - xj)).max() <= h  # each end within h / 2 of its float


def test_a_wrong_period_constant_would_show():
    """The model above is not blind: the constant of the x axis off by one period bit gives
    separations off by 2^19 h."""
    rng = np.random.default_rng(6)
    h = packed_step(3.1)
    xi = rng.uniform(-55.0, 55.0, (100, 3)).astype(np.float32)
    d = _separation(_pack(xi, h), _pack(xi, h), h)
    assert np.array_equal(d, np.zeros_like(d))
    assert np.float32(-8912896.0 * h) + np.float32(8388608.0 * h) != np.float32(-2 ** 20 * h)


def test_the_struct_is_laid_out_as_the_kernel_reads_it():
    assert PACKED_DTYPE.itemsize == 24
    assert [PACKED_DTYPE.fields[k][1] for k in ("q", "h", "inv_h", "expo")] == [0, 8, 12, 16]


def test_packed_is_a_launch_choice_with_float_kernels_only():
    s = strategies.create("verlet_thread_padded", layout="packed")
    ex = s.default_expressions(LennardJones())
    assert ex and all(", 3, " in e for e in ex)
    assert {e.split(",")[0].split("<")[1] for e in ex} == {"float"}
    assert all(e in strategies.create("verlet_thread_padded").expressions(LennardJones()) for e in ex)


def test_packed_is_not_applicable_in_fp64_or_where_it_would_lose_precision():
    s = strategies.create("verlet_thread_padded", layout="packed")
    ok, why = s.supports(scenarios.make("lj_liquid", 4000, precision="fp64"), check_device=False)
    assert not ok and why.startswith("layout=packed holds float coordinates in fixed point; fp64")
    ok, why = s.supports(scenarios.make("lj_liquid", 4000, precision="fp32"), check_device=False)
    assert not ok and "coarser than a float's spacing 9.54e-07 at the box's half-length 8.4" in why
    ok, why = s.supports(_dilute("fixed"), check_device=False)
    assert ok, why


def _dilute(precision="fp32", n=30000, seed=2):
    """LJ at density 0.1: a box of side 66.9, where a float's spacing at the half-length (2^-18)
    equals the LJ grid step."""
    p = scenarios.make("lj_liquid:density=0.1", n, seed=seed, precision=precision)
    return replace(p, potential=replace(p.potential, shift=True))


# --- GPU --------------------------------------------------------------------------------------

def _forces(p, outputs="all", **launch):
    s = strategies.create("verlet_thread_padded", **launch)
    plan = s.prepare(p, outputs)
    return s.compute(plan).to_host()


@pytest.mark.gpu
@pytest.mark.parametrize("precision", ["fp32", "mixed", "fixed"])
@pytest.mark.parametrize("n, density", [(30000, 0.1), (250000, 0.8442)])
def test_packed_forces_pass_verification(precision, n, density):
    p = scenarios.make(f"lj_liquid:density={density}", n, seed=3, precision=precision)
    ref = reference.compute(p)
    for outputs in ("all", "forces"):
        out = _forces(p, outputs, layout="packed", tpp=1)
        m = verify.compare(out, ref, p)
        assert m["failures"] == [], (outputs, m["failures"])


@pytest.mark.gpu
@pytest.mark.parametrize("launch", [{"tpp": 1}, {"tpp": 4, "split": "entries"}, {"tpp": 2, "split": "groups"}])
def test_packed_forces_are_repeatable_and_close_to_the_float_ones(launch):
    p = scenarios.make("lj_liquid:density=0.1", 30000, seed=4, precision="fp32")
    a = _forces(p, layout="packed", **launch)
    b = _forces(p, layout="packed", **launch)
    f = _forces(p, layout="aos4", **launch)
    assert np.array_equal(a.forces, b.forces) and a.energy == b.energy and np.array_equal(a.virial, b.virial)
    scale = np.sqrt((f.forces ** 2).sum(axis=1).mean())
    d = np.sqrt(((a.forces - f.forces) ** 2).sum(axis=1)) / scale
    # a different rounding, of float's size; the few particles of a pair that the two roundings put on
    # either side of the cutoff differ by |F(rc)|
    assert 0.0 < np.median(d) < 2e-5 and np.quantile(d, 0.999) < 2e-3
    assert abs(a.pairs - f.pairs) <= 2


@pytest.mark.gpu
@pytest.mark.parametrize("precision", ["fp32", "mixed"])
def test_packed_fused_steps_give_the_plain_loops_bits(precision):
    """The fused steps pack the next positions as the plain loop's force phase does."""
    p = _dilute(precision)
    runs = [md.run(strategies.create("verlet_thread_padded", layout="packed"), p, steps=200, dt=0.005, sample=50,
                   fuse=fuse) for fuse in (False, "always")]
    assert runs[0].fused == "off" and runs[1].fused == "on"
    assert runs[0].rebuilds >= 3
    assert [vars(s) for s in runs[0].samples] == [vars(s) for s in runs[1].samples]


def test_the_default_layout_is_packed_where_it_applies():
    """layout 'auto' (the default): packed in fp32 and mixed where the box is large enough for its grid
    (the measured fastest at 1M particles), else aos4: small boxes, fp64, and the fixed-point mode
    (whose same-bits-in-every-strategy claim rests on the Vec4 positions)."""
    s = strategies.create("verlet_thread_padded")
    assert s.launch["layout"] == "auto"
    L = np.full(3, 110.0)
    x = np.random.default_rng(1).uniform(0.0, 110.0, (2000, 3))
    for precision, want in (("fp32", "packed"), ("mixed", "packed"), ("fp64", "aos4"), ("fixed", "aos4")):
        assert s.layout_for(Problem.make(x, L, LennardJones(cutoff=2.5), precision)) == want, precision
    small = scenarios.make("lj_liquid", "small", precision="fp32")
    assert s.layout_for(small) == "aos4"
    assert strategies.create("verlet_thread_padded", layout="soa").layout_for(small) == "soa"
    # both kernels of 'auto' are compiled where it may take either
    ex = s.default_expressions(LennardJones())
    assert any(", 3, " in e for e in ex) and any(", 0, " in e for e in ex)

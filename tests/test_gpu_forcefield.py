"""Typed particles and charges (mdcore.potentials.pair_table) through the GPU strategies: float64 forces
as the reference's to 1e-12, the same bits in every strategy in fixed point, and the MD loop (skipped,
with the reason, without a device)."""
import numpy as np
import pytest

import reference
import strategies
from harness import scenarios, verify
from mdcore import Problem, forcefield
from mdcore.potentials.pair_table import potential

pytestmark = pytest.mark.gpu
GPU = strategies.select(backend="cuda")
SPECS = ("kob_andersen", "charged_lj", "charged_lj_ewald", "typed_lj:types=6")


def _shifted_typed_charged() -> Problem:
    """Two types with one shifted cutoff and charges: the table with four records and U(rc) per pair."""
    p = scenarios.make("lj_liquid", "small", seed=3)
    ff = forcefield.parse({"types": ["A", "B"], "lj": {"sigma": [1.0, 0.9], "epsilon": [1.0, 0.6], "cutoff": 2.5,
                                                       "shift": True},
                           "electrostatics": {"method": "reaction-field", "epsilon_rf": "inf", "cutoff": 2.5}})
    t = (np.arange(p.n) % 3 == 0).astype(np.int32)
    q = np.where(np.arange(p.n) % 2 == 0, 0.7, -0.7)
    return Problem.make(p.positions, p.box, potential(ff, t, q), label="typed shifted charged")


@pytest.fixture(scope="module")
def cases():
    cs = [verify.Case(s, scenarios.make(s, "small", seed=2)) for s in SPECS]  # 4 cells a side: c08 and parity too
    cs.append(verify.Case("typed_shifted_charged", _shifted_typed_charged()))
    for c in cs:
        c.ref = reference.compute(c.problem)
    return cs


@pytest.mark.parametrize("name", GPU)
def test_fp64_forces_are_the_references_to_1e_12(name, cases):
    s = strategies.create(name)
    for c in cases:
        p = c.problem.with_precision("fp64")
        ok, why = s.supports(p)
        assert ok, why  # every strategy runs typed and charged particles
        out = s.evaluate(p)
        scale = np.sqrt(np.mean(np.sum(c.ref.forces ** 2, axis=1)))
        err = np.abs(np.asarray(out.forces) - c.ref.forces).max() / scale
        assert err <= 1e-12, (c.scenario, err)
        assert out.energy == pytest.approx(c.ref.energy, rel=1e-12) and out.pairs == c.ref.pairs


def test_fixed_point_gives_the_same_bits_in_every_gpu_strategy(cases):
    rows = verify.run_matrix([strategies.create(n) for n in GPU], cases, ["fixed"])
    assert all(r["status"] == "pass" for r in rows), verify.table([r for r in rows if r["status"] != "pass"])
    for c in cases:
        digests = {r["digest"] for r in rows if r["scenario"] == c.scenario}
        assert len(digests) == 1, (c.scenario, len(digests))


@pytest.mark.parametrize("spec", ["charged_lj_ewald", "typed_lj:types=6"])
def test_md_with_fused_steps_is_the_plain_steps_bit_for_bit(spec):
    from harness import md

    p = scenarios.make(spec, "small", seed=4)
    runs = [md.run(strategies.create("verlet_thread_padded"), p, 60, 0.005, sample=20, fuse=f)
            for f in ("always", False)]
    a, b = ([(s.kinetic, s.potential) for s in r.samples] for r in runs)
    assert a == b and all(np.isfinite(a).ravel())


@pytest.mark.parametrize("name", ["allpairs_thread_naive", "allpairs_thread_tiled", "fullshell_thread_csr",
                                  "verlet_thread_padded"])
def test_float3_and_soa_with_the_words_beside_give_the_float4_results(name, cases):
    """The particle's word in an array of its own (aos3, soa) instead of the Vec4's fourth component:
    float64 forces as the reference's, and in fixed point the same bits as aos4."""
    for c in cases:
        outs = {}
        for layout in ("aos4", "aos3", "soa"):
            s = strategies.create(name, layout=layout)
            out = s.evaluate(c.problem.with_precision("fp64"))
            scale = np.sqrt(np.mean(np.sum(c.ref.forces ** 2, axis=1)))
            assert np.abs(np.asarray(out.forces) - c.ref.forces).max() / scale <= 1e-12, (c.scenario, layout)
            outs[layout] = s.evaluate(c.problem.with_precision("fixed"))
        for layout in ("aos3", "soa"):
            assert np.array_equal(np.asarray(outs[layout].forces), np.asarray(outs["aos4"].forces)), (c.scenario, layout)
            assert outs[layout].energy == outs["aos4"].energy


def test_md_reads_the_words_of_a_float3_copy_every_step():
    from harness import md

    p = scenarios.make("charged_lj", "small", seed=4)
    runs = [md.run(strategies.create("verlet_thread_padded", layout=lay), p, 60, 0.005, sample=20, fuse=False)
            for lay in ("aos4", "aos3")]
    a, b = ([(s.kinetic, s.potential) for s in r.samples] for r in runs)
    assert a == b and all(np.isfinite(a).ravel())

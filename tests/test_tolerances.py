"""The tolerance model itself: one set of coefficients for every precision mode, and cases that
stress each of its terms (a dense clump: close pairs and many partners; a large box: coordinates
far from the origin) passing in every precision with two CPU cell strategies (the GPU ones in
tests/test_gpu.py)."""
import numpy as np
import pytest

import reference
import strategies
from harness import scenarios, verify
from harness.tolerances import FLOORS, MODEL, TOLERANCES, accumulation, kappa
from mdcore import MODES


def test_mixed_limits_follow_from_fp32s_model():
    """mixed computes in float like fp32: the same coefficients and floors; only the accumulation
    term, from its double epsilon, differs. No number of its own."""
    assert TOLERANCES["mixed"] == TOLERANCES["fp32"]
    rng = np.random.default_rng(0)
    for _ in range(20):
        L, r_min, partners = rng.uniform(5, 500), rng.uniform(0.05, 1.0), rng.uniform(1, 5000)
        k32, k_mixed = kappa("fp32", [L] * 3, r_min), kappa("mixed", [L] * 3, r_min)
        assert k32 == k_mixed  # coordinates rounded to float in both
        a32, a_mixed = accumulation("fp32", partners), accumulation("mixed", partners)
        assert a_mixed == pytest.approx(a32 * np.finfo(np.float64).eps / np.finfo(np.float32).eps)
        lim32, lim_mixed = TOLERANCES["fp32"].values(k32, a32), TOLERANCES["mixed"].values(k_mixed, a_mixed)
        for metric, (c_kappa, c_accum) in MODEL.items():
            assert lim_mixed[metric] == max(FLOORS["fp32"][metric], c_kappa * k32 + c_accum * a_mixed)
            assert lim_mixed[metric] <= lim32[metric]
    assert all(getattr(TOLERANCES[p], m).kappa > 0 for p in MODES for m in MODEL)  # every metric sees rounding


def test_mixed_energy_limit_has_the_coordinate_term():
    """A dense clump's kappa sets mixed's energy limit above its floor."""
    k = kappa("mixed", [60.0] * 3, 0.2)
    lim = TOLERANCES["mixed"].values(k, accumulation("mixed", 800))
    assert lim["energy"] > 1.06e-5 and lim["virial"] > 1.06e-5
    assert lim["energy"] == pytest.approx(MODEL["energy"][0] * k, rel=1e-6)


@pytest.mark.parametrize("spec, size", [("clump", "medium"), ("clump:box=500", "small"), ("clump:sigma=3", "small"),
                                        ("uniform:density=0.05", "small")])
def test_hard_cases_pass_in_every_precision(spec, size):
    case = verify.Case(spec, scenarios.make(spec, size, seed=4))
    # two traversals that sum a particle's pairs in different orders (the tolerances are the
    # precision's, not the traversal's; every CPU strategy here took two minutes of CI)
    names = ["fullshell_thread_cpu", "c08_thread_cpu"]
    rows = verify.run_matrix([strategies.create(n) for n in names], [case], list(MODES))
    ran = [r for r in rows if r["status"] != "n/a"]
    assert all(r["status"] == "pass" for r in ran), verify.table(ran)
    modes: dict[str, set] = {}
    for r in ran:
        modes.setdefault(r["strategy"], set()).add(r["precision"])
    # at least two strategies, each in every mode (fixed point may find the input outside its range)
    assert len(modes) >= 2 and all(m >= set(MODES) - {"fixed"} for m in modes.values()), modes
    ref = case.ref
    assert ref.r_min < 0.9 and kappa("fp32", case.problem.box.array, ref.r_min) > 1e-6  # a hard case indeed


def test_clump_is_denser_than_the_default_scenarios():
    clump = reference.compute(scenarios.make("clump", "medium", seed=4))
    liquid = reference.compute(scenarios.make("lj_liquid", "medium", seed=4))
    assert clump.interactions_per_particle > 4 * liquid.interactions_per_particle

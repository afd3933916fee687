"""The comparison helpers and the matrix runner, including strategies that are wrong on purpose."""
import json
import math

import numpy as np
import pytest

import reference
import strategies
from harness import scenarios, verify
from mdcore import Forces
from harness.tolerances import TOLERANCES, accumulation, kappa
from strategies.allpairs import AllPairsThreadCpu, _CpuPlan


@pytest.fixture(scope="module")
def case():
    c = verify.Case("lj_liquid", scenarios.make("lj_liquid", "tiny"))
    c.ref = reference.compute(c.problem)
    return c


def as_forces(ref, **change):
    f = dict(forces=ref.forces.copy(), energy=ref.energy, virial=ref.virial.copy(), pairs=ref.pairs)
    f.update(change)
    return Forces(**f)


def test_reference_against_itself_passes_with_zero_error(case):
    m = verify.compare(as_forces(case.ref), case.ref, case.problem.with_precision("fp64"))
    assert m["failures"] == []
    assert m["force_rms"] == m["force_max"] == m["energy"] == m["virial"] == 0.0 and m["pairs_diff"] == 0


def test_compare_measures_known_perturbations(case):
    ref = case.ref
    f = ref.forces.copy()
    f[17] += [3e-3, 0.0, 4e-3]  # |dF| = 5e-3 on one particle
    out = as_forces(ref, forces=f, energy=ref.energy + 1e-3 * ref.energy_abs)
    m = verify.compare(out, ref, case.problem.with_precision("fp64"))
    rms = np.linalg.norm(ref.forces) / math.sqrt(len(f))
    assert m["force_rms"] == pytest.approx(5e-3 / np.linalg.norm(ref.forces))
    assert m["force_max"] == pytest.approx(5e-3 / rms) and m["worst_particle"] == 17
    assert m["energy"] == pytest.approx(1e-3)
    assert any(s.startswith("force_rms") for s in m["failures"])
    assert any("worst particle 17" in s for s in m["failures"])
    assert any(s.startswith("energy") for s in m["failures"])


def test_compare_flags_unwritten_and_nan(case):
    f = case.ref.forces.copy()
    f[5] = np.nan
    m = verify.compare(as_forces(case.ref, forces=f), case.ref, case.problem.with_precision("fp32"))
    assert any("non-finite or unwritten force, first index 5" in s for s in m["failures"])
    m = verify.compare(as_forces(case.ref, energy=float("nan")), case.ref, case.problem.with_precision("fp32"))
    assert any("energy is nan" in s for s in m["failures"])


def test_compare_pair_count_slack(case):
    m = verify.compare(as_forces(case.ref, pairs=case.ref.pairs + 1), case.ref, case.problem.with_precision("fp64"))
    assert m["pairs_allowed"] == case.ref.near("fp64")
    assert (m["failures"] != []) == (m["pairs_allowed"] < 1)


def test_compare_wrong_shape(case):
    m = verify.compare(as_forces(case.ref, forces=case.ref.forces[:-1]), case.ref, case.problem.with_precision("fp64"))
    assert "shape" in m["failures"][0]


def test_zero_reference_forces_relative_errors():
    assert verify._rel(0.0, 0.0) == 0.0 and verify._rel(1.0, 0.0) == math.inf and verify._rel(1.0, 4.0) == 0.25


def test_kappa_accumulation_and_tolerance_table():
    assert kappa("fp32", [10.0, 20.0, 5.0], 0.5) == pytest.approx(float(np.finfo(np.float32).eps) * 10.0 / 0.5)
    assert kappa("fp64", [10.0] * 3, math.inf) == 0.0
    assert accumulation("fp32", 100.0) == pytest.approx(10 * float(np.finfo(np.float32).eps))
    assert accumulation("mixed", 100.0) == pytest.approx(10 * float(np.finfo(np.float64).eps))  # double accumulators
    for p, t in TOLERANCES.items():
        lo, hi = t.values(0.0, 0.0), t.values(1e-3, 1e-3)
        assert all(hi[k] > lo[k] > 0 for k in lo)
    assert TOLERANCES["fp64"].force_rms.floor < TOLERANCES["fp32"].force_rms.floor


def _pair_at_cutoff():
    from mdcore import LennardJones, Problem
    rc = 2.5
    pos = np.array([[3.0, 3.0, 3.0], [3.0 + rc, 3.0, 3.0]])
    return Problem.make(pos, [8.0, 8.0, 8.0], LennardJones(cutoff=rc), precision="fp32")


def test_pair_within_rounding_of_the_cutoff_may_be_counted_in():
    """A kernel may see the pair at exactly rc as inside: forces, energy and pairs then
    differ by one pair's values at the cutoff, which the comparison excuses."""
    p = _pair_at_cutoff()
    ref = reference.compute(p)
    assert ref.pairs == 0 and ref.near("fp32") == 1
    fr, u = ref.cutoff_jump["force"], ref.cutoff_jump["energy"]
    inside = Forces(np.array([[fr, 0, 0], [-fr, 0, 0]]), -u, np.diag([-2.5 * fr, 0, 0]), 1)
    m = verify.compare(inside, ref, p)
    assert m["failures"] == [], m["failures"]
    twice = Forces(2 * inside.forces, -2 * u, 2 * inside.virial, 1)
    assert verify.compare(twice, ref, p)["failures"]
    assert verify.compare(Forces(inside.forces, -u, inside.virial, 2), ref, p)["failures"]


class _Broken(AllPairsThreadCpu):
    """Wrong on purpose: one particle's force is dropped."""
    name = "allpairs_broken"

    def _prepare(self, problem):
        plan = super()._prepare(problem)
        original = plan.force

        def force():
            original()
            plan.forces[3] = 0.0
        plan.force = force
        return plan


class _Lazy(AllPairsThreadCpu):
    """Wrong on purpose: never writes particle 0 (the poison must show)."""
    name = "allpairs_lazy"

    def _prepare(self, problem):
        plan = super()._prepare(problem)
        original = plan.force

        def force():
            keep = plan.forces[0].copy()
            original()
            plan.forces[0] = keep
        plan.force = force
        return plan


class _Raises(AllPairsThreadCpu):
    name = "allpairs_raises"

    def _prepare(self, problem):
        raise RuntimeError("kernel exploded")


def test_matrix_catches_broken_strategies(case):
    rows = verify.run_matrix([AllPairsThreadCpu(), _Broken(), _Lazy(), _Raises()], [case], ["fp32", "fp64"])
    status = {(r["strategy"], r["precision"]): r for r in rows}
    assert status["allpairs_thread_cpu", "fp32"]["status"] == "pass" and status["allpairs_thread_cpu", "fp64"]["status"] == "pass"
    broken = status["allpairs_broken", "fp64"]
    assert broken["status"] == "FAIL" and "worst particle 3" in broken["detail"]
    assert "reproduce: lj_liquid N=256 seed=1 fp64" in broken["detail"]
    assert status["allpairs_lazy", "fp32"]["status"] == "FAIL"
    assert "unwritten force, first index 0" in status["allpairs_lazy", "fp32"]["detail"]
    assert status["allpairs_raises", "fp32"]["status"] == "ERROR"
    assert "kernel exploded" in status["allpairs_raises", "fp32"]["detail"]
    assert not verify.summary(rows)["ok"]


def test_matrix_not_applicable_rows_carry_the_reason(case):
    rows = verify.run_matrix([strategies.create("allpairs_thread_cpu")], [case], ["fp32"], max_checks={"cpu": 10})
    assert rows[0]["status"] == "n/a" and "over the verify budget" in rows[0]["detail"]


def test_cpu_strategy_full_matrix_passes():
    cases = verify.build_cases(scenarios.DEFAULT_MATRIX, "tiny", seed=4)
    rows = verify.run_matrix([strategies.create("allpairs_thread_cpu")], cases, ["fp32", "mixed", "fp64"])
    bad = [r for r in rows if r["status"] != "pass"]
    assert not bad, verify.table(bad)


def test_reports_written(tmp_path, case):
    rows = verify.run_matrix([AllPairsThreadCpu(), _Broken()], [case], ["fp64"])
    meta = verify.meta(["verify", "--test"])
    paths = verify.write_reports(rows, meta, {"gpu": None, "cpu": "test", "cpu_cores": 1, "numba": "x", "numba_threads": 1, "python": "3", "numpy": "2", "commit": "abc"}, tmp_path / "out", tmp_path / "extra.json")
    names = {p.name for p in paths}
    assert names == {"verify.csv", "verify.json", "verify.md", "extra.json"}
    doc = json.loads((tmp_path / "extra.json").read_text())
    assert doc["summary"]["counts"] == {"pass": 1, "FAIL": 1, "ERROR": 0, "n/a": 0}
    assert set(doc["tolerances"]) == {"fp32", "mixed", "fp64", "fixed"} and "device" in doc and doc["schema_version"] == 2 and doc["kind"] == "verify"
    md = (tmp_path / "out" / "verify.md").read_text()
    assert "allpairs_broken" in md and "FAIL" in md
    import pandas as pd
    df = pd.read_csv(tmp_path / "out" / "verify.csv")
    assert list(df.columns[:5]) == ["strategy", "backend", "scenario", "n", "precision"] and len(df) == 2


def test_poisoned_plan_outputs_are_nan():
    p = scenarios.make("uniform", "tiny")
    plan = _CpuPlan(AllPairsThreadCpu(), p)
    plan.poison()
    assert np.isnan(plan.forces).all() and plan.result is None

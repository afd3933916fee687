"""Ewald's reciprocal part: the parameters (OpenMM's alpha and kmax from a tolerance), the float64
reference (rock salt's Madelung constant for two alphas, finite differences of the energy in the
positions and in the box), the CPU strategy against it, `forces` with the whole Ewald sum, verify's
kspace section, and bad input in one line (exit 2)."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from harness import kspace_check
from mdcore import InputError
from mdcore.ewald import Ewald, count_half_space, openmm_kmax
from mdcore.forcefield import ForceFieldError, parse
from reference import ewald as ref_ewald
from reference import forcefield as ref_ff
from strategies import kspace
from tests.inprocess import harness

M = kspace_check.MADELUNG_ROCKSALT


def _ff(**es):
    return parse({"types": ["Na", "Cl"], "electrostatics": {"method": "ewald", **es}})


def _ions(n=200, lengths=(5.0, 6.0, 7.0), seed=3):
    rng = np.random.default_rng(seed)
    x = rng.random((n, 3)) * np.array(lengths)
    q = rng.choice([-1.0, 1.0], n)
    q[: n // 5] = 0.0
    q[-1] -= float(np.sum(q))
    return x, q


def test_alpha_and_kmax_from_a_tolerance_are_openmms():
    ff = _ff(cutoff=1.0, tolerance=5e-4)
    assert ff.alpha == pytest.approx(math.sqrt(-math.log(1e-3)), rel=1e-15)  # 2.6283 per nm at a 1 nm cutoff
    e = Ewald.make(ff, (10.0, 10.0, 10.0), (True, True, True))
    assert openmm_kmax(10.0, ff.alpha, 5e-4) == 27  # OpenMM's K (|n| < K), made odd
    assert e.kmax == (26, 26, 26) and e.count == count_half_space((26, 26, 26)) == (53 ** 3 - 1) // 2
    # alpha given: the tolerance it implies with the cutoff gives the same kmax
    assert Ewald.make(_ff(cutoff=1.0, alpha=ff.alpha), (10.0,) * 3, (True,) * 3).kmax == (26, 26, 26)
    assert Ewald.make(_ff(cutoff=1.0, alpha=2.0, kmax=[3, 4, 5]), (10.0,) * 3, (True,) * 3).kmax == (3, 4, 5)


def test_the_half_space_holds_one_of_each_pair_of_wave_vectors():
    e = Ewald.make(_ff(cutoff=2.0, alpha=1.0, kmax=[2, 3, 1]), (4.0, 5.0, 6.0), (True,) * 3)
    n, k, a = e.vectors()
    assert len(n) == e.count == (5 * 7 * 3 - 1) // 2
    both = {tuple(v) for v in n} | {tuple(-v) for v in n}
    assert len(both) == 2 * len(n) and (0, 0, 0) not in both
    assert np.allclose(k, n * 2.0 * np.pi / np.array([4.0, 5.0, 6.0]))
    assert np.all(a > 0.0)


@pytest.mark.parametrize("alpha,kmax", [(1.375, 22), (1.6, 26)])
def test_the_reference_gives_rock_salts_madelung_constant(alpha, kmax):
    x, q, L = kspace_check.rocksalt()
    ff = _ff(cutoff=L / 2.0, alpha=alpha, kmax=kmax)
    e = Ewald.make(ff, (L,) * 3, (True,) * 3)
    real = ref_ff.compute(x, (L,) * 3, (True,) * 3, np.zeros(len(x), np.int64), q, ff, method="direct")
    total = ref_ewald.total(x, q, e, real)
    assert total["energy"] == pytest.approx(-0.5 * len(x) * M, rel=1e-12)
    assert np.max(np.abs(total["forces"])) < 1e-12  # every ion sits at a centre of symmetry


def test_reference_forces_and_virial_are_derivatives_of_its_energy():
    L = np.array([5.0, 6.0, 7.0])
    x, q = _ions(lengths=tuple(L))
    e = Ewald.make(_ff(cutoff=2.4, alpha=1.1, kmax=[7, 8, 9]), L, (True,) * 3)
    r = ref_ewald.reciprocal(x, q, e)
    h = 1e-6
    for j in (60, 120):
        for a in range(3):
            xp, xm = x.copy(), x.copy()
            xp[j, a] += h
            xm[j, a] -= h
            fd = -(ref_ewald.reciprocal(xp, q, e, False)["energy"] - ref_ewald.reciprocal(xm, q, e, False)["energy"]) / (2 * h)
            assert fd == pytest.approx(r["forces"][j, a], abs=1e-6 * np.abs(r["forces"]).max())
    for a in range(3):  # W_aa = -dE/d(strain_aa): positions and box stretched along a
        def energy(s):
            scale = np.ones(3)
            scale[a] += s
            stretched = Ewald(e.alpha, e.kmax, e.coulomb_constant, tuple(L * scale))
            return ref_ewald.reciprocal(x * scale, q, stretched, False)["energy"]
        fd = -(energy(h) - energy(-h)) / (2 * h)
        assert fd == pytest.approx(r["virial"][a, a], rel=1e-6)
    assert np.allclose(r["virial"], r["virial"].T)
    assert np.allclose(r["forces"][q == 0.0], 0.0)  # an uncharged particle feels nothing


def test_the_cpu_strategy_matches_the_reference():
    L = (5.0, 6.0, 7.0)
    x, q = _ions(lengths=L)
    e = Ewald.make(_ff(cutoff=2.4, alpha=1.1, kmax=[7, 8, 9]), L, (True,) * 3)
    ref = ref_ewald.reciprocal(x, q, e)
    got = kspace.create("kspace_thread_cpu").evaluate(x, q, e, "fp64")
    assert got.energy == pytest.approx(ref["energy"], rel=1e-13)
    assert np.max(np.abs(got.forces - ref["forces"])) <= 1e-12 * np.abs(ref["forces"]).max()
    assert np.max(np.abs(got.virial - ref["virial"])) <= 1e-12 * np.abs(ref["virial"]).max()
    assert not kspace.create("kspace_thread_cpu").supports("fp32")[0]
    assert "fixed point" in kspace.create("kspace_thread_cpu").supports("fixed")[1]


def test_the_kspace_checks_catch_a_wrong_reciprocal_part():
    """verify's kspace section fails a strategy whose energy is off by a part in a million."""
    class Off(kspace.KSpaceThreadCpu):
        name = "kspace_thread_off"

        def _prepare(self, charges, ewald, precision):
            plan = super()._prepare(charges, ewald, precision)
            run = plan.run

            def skewed():
                run()
                plan._energy *= 1.0 + 1e-6
            plan.run = skewed
            return plan

    built = kspace_check.cases()
    rows = [r for c in built for r in kspace_check.check(Off(), "fp64", c)]
    assert {r["check"] for r in rows if r["status"] == "FAIL"} >= {"madelung", "energy"}
    good = [r for c in built for r in kspace_check.check(kspace.create("kspace_thread_cpu"), "fp64", c)]
    assert all(r["status"] == "pass" for r in good) and {r["check"] for r in good} == \
        {"madelung", "energy", "forces", "virial", "fd"}


def _rocksalt_files(tmp_path, **es):
    x, q, L = kspace_check.rocksalt()
    np.savez(tmp_path / "nacl.npz", positions=x, box=np.array([L] * 3), types=(q < 0).astype(np.int64), charges=q)
    doc = {"types": ["Na", "Cl"], "electrostatics": {"method": "ewald", "cutoff": L / 2.0, **es}}
    (tmp_path / "nacl.json").write_text(json.dumps(doc))
    return tmp_path / "nacl.npz", tmp_path / "nacl.json", len(x)


@pytest.mark.parametrize("strategy", ["reference", "fullshell_thread_cpu"])
def test_forces_gives_the_whole_ewald_sum(tmp_path, strategy):
    conf, ff, n = _rocksalt_files(tmp_path, alpha=1.375, kmax=22)
    out = tmp_path / "f.npz"
    r = harness("forces", "--strategy", strategy, "--input", conf, "--forcefield", ff, "--precision", "fp64",
                "--out", out)
    assert r.returncode == 0, r.stderr
    assert "reciprocal" in r.stdout and "self" in r.stdout
    f = np.load(out)
    assert float(f["energy"]) == pytest.approx(-0.5 * n * M, rel=1e-12)
    parts = sum(float(f[k]) for k in ("energy_real", "energy_reciprocal", "energy_self", "energy_net_charge"))
    assert parts == pytest.approx(float(f["energy"]), rel=1e-14)


def test_verify_reports_the_kspace_checks(tmp_path):
    r = harness("verify", "--size", "tiny", "--strategies", "fullshell_thread_cpu", "--scenarios", "lj_liquid",
                "--precision", "fp64", "--kspace", "kspace_thread_cpu", "--quiet", "--out", tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads((tmp_path / "verify.json").read_text())
    rows = doc["kspace"]
    assert {x["check"] for x in rows} == {"madelung", "energy", "forces", "virial", "fd"}
    assert all(x["status"] == "pass" for x in rows)
    assert "Ewald reciprocal part" in (tmp_path / "verify.md").read_text()


@pytest.mark.parametrize("es,words", [
    ({"alpha": 1.0, "kmax": 0}, "kmax must be at least 1"),
    ({"alpha": 1.0, "kmax": [3, 4]}, "kmax must be an integer or a list of three"),
    ({"alpha": 1.0, "kmax": True}, "kmax must be an integer"),
    ({"alpha": 0.0}, "electrostatics.alpha must be finite and > 0"),
    ({"alpha": -1.0}, "electrostatics.alpha must be finite and > 0"),
    ({"alpha": 1.0, "kmax": 4000}, "bytes of k-space arrays"),
])
def test_bad_ewald_parameters_end_in_one_line(tmp_path, es, words):
    conf, ff, _ = _rocksalt_files(tmp_path, **es)
    r = harness("forces", "--strategy", "reference", "--input", conf, "--forcefield", ff, "--out", tmp_path / "f.npz")
    assert r.returncode == 2 and words in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "f.npz").exists()


def test_ewald_in_a_box_open_along_an_axis_is_refused(tmp_path):
    x, q, L = kspace_check.rocksalt(2)
    np.savez(tmp_path / "c.npz", positions=x, box=np.array([L] * 3), periodic=np.array([True, True, False]),
             types=(q < 0).astype(np.int64), charges=q)
    (tmp_path / "ff.json").write_text(json.dumps({"types": ["Na", "Cl"], "electrostatics": {
        "method": "ewald", "cutoff": 1.5, "alpha": 2.0}}))
    r = harness("forces", "--strategy", "reference", "--input", tmp_path / "c.npz", "--forcefield",
                tmp_path / "ff.json", "--out", tmp_path / "f.npz")
    assert r.returncode == 2 and "periodic in all three axes (open along z)" in r.stderr, r.stderr


def test_kspace_names_and_methods_are_checked(tmp_path):
    conf, ff, _ = _rocksalt_files(tmp_path, alpha=1.375, kmax=6)
    r = harness("forces", "--strategy", "reference", "--input", conf, "--forcefield", ff, "--kspace", "kspace_nope",
                "--out", tmp_path / "f.npz")
    assert r.returncode == 2 and "no such reciprocal strategy" in r.stderr
    (tmp_path / "rf.json").write_text(json.dumps({"types": ["Na", "Cl"], "electrostatics": {
        "method": "reaction-field", "cutoff": 3.0}}))
    r = harness("forces", "--strategy", "reference", "--input", conf, "--forcefield", tmp_path / "rf.json",
                "--kspace", "kspace_thread_cpu", "--out", tmp_path / "f.npz")
    assert r.returncode == 2 and "electrostatics.method must be ewald" in r.stderr
    with pytest.raises(ForceFieldError, match="without lj describes point charges"):
        parse({"types": ["A"]})
    with pytest.raises(ForceFieldError, match="kmax belongs to ewald"):
        parse({"types": ["A"], "electrostatics": {"method": "reaction-field", "cutoff": 2.0, "kmax": 3}})
    with pytest.raises(InputError, match="unknown launch parameter"):
        kspace.create("kspace_thread_kloop", block=64)
    with pytest.raises(InputError, match="recurrence='taylor'; take rotate or chebyshev"):
        kspace.create("kspace_thread_rows", recurrence="taylor")
    with pytest.raises(InputError, match="unknown launch parameter.*recurrence"):
        kspace.create("kspace_thread_kloop", recurrence="chebyshev")  # the rows kernels' choice only
    rows = kspace.create("kspace_thread_rows").expressions("fp32", rrun=14)
    assert rows[0].startswith("kspace_s_rows<float, float, 14, ") and rows[0].endswith(", true>")
    # the default: the three-term recurrence in every precision, n_z and -n_z from one phase where the sums
    # are double (fp64, mixed)
    double = kspace.create("kspace_thread_rows").expressions("fp64", run=9)
    assert double[0].startswith("kspace_s_mirror<double, double, 9, ") and double[0].endswith(", true>")
    assert kspace.create("kspace_thread_rows").expressions("mixed")[0].startswith("kspace_s_mirror<float, double, ")
    assert kspace.create("kspace_thread_rows").resolved("fp64") == {"charged": "only", "recurrence": "chebyshev", "mirror": "on"}
    assert kspace.create("kspace_thread_rows", mirror="off").expressions("fp64")[0].startswith("kspace_s_rows<double")
    rotate = kspace.create("kspace_thread_rows", recurrence="rotate", mirror="on").expressions("fp32")
    assert rotate[0].startswith("kspace_s_mirror<float, float, ") and rotate[0].endswith(", false>")
    every = kspace.expressions()
    for kernel in ("kspace_s_rows", "kspace_s_mirror", "kspace_f_rows"):
        for p in ("float, float", "float, double", "double, double"):
            for cheb in ("true", "false"):
                assert any(e.startswith(f"{kernel}<{p}, ") and e.endswith(f", {cheb}>") for e in every), (kernel, p, cheb)
    with pytest.raises(InputError, match="mirror='yes'; take auto, off or on"):
        kspace.create("kspace_thread_rows", mirror="yes")
    # the rows kernels' run: the one of 12, 14 and 16 n_z that pads a row least
    assert kspace.row_run(53) == 14 and kspace.row_run(21) == 12 and kspace.row_run(31) == 16 and kspace.mirror_run(26) == 9


def test_the_ewald_sweep_writes_rows_the_report_draws(tmp_path):
    r = harness("ewald", "--n", "200,400", "--precision", "fp64,fp32", "--strategies", "kspace_thread_cpu", "--cutoff", "0.5",
                "--repeat", "2", "--quiet", "--out", tmp_path, "--name", "ew")
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads((tmp_path / "ew.json").read_text())
    assert doc["kind"] == "ewald"
    ok = [x for x in doc["rows"] if x["status"] == "ok"]
    assert all(x["launch"] == {} for x in ok)
    r = harness("ewald", "--n", "200", "--strategies", "kspace_thread_cpu", "--launch", "recurrence=chebyshev",
                "--out", tmp_path, "--name", "refused")
    assert r.returncode == 2 and "unknown launch parameter(s) recurrence" in r.stderr
    assert not (tmp_path / "refused.json").exists()
    assert [x["n"] for x in ok] == [200, 400] and all(x["precision"] == "fp64" for x in ok)
    assert all(x["kvectors"] > 0 and x["total_ms"] > 0 and x["energy_error"] == 0.0 for x in ok)
    assert {x["status"] for x in doc["rows"] if x["precision"] == "fp32"} == {"n/a"}
    rep = harness("report", tmp_path / "ew.json", "--out", tmp_path, "--name", "rep")
    assert rep.returncode == 0, rep.stderr
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "## Ewald's reciprocal part" in md and "kspace_thread_cpu" in md
    assert (tmp_path / "rep" / "ewald-reciprocal.png").exists()


@pytest.mark.parametrize("args,words", [
    (["--n", "201"], "an even number of charges"),
    (["--n", "ten"], "a comma list of charge counts"),
    (["--n", "200", "--cutoff", "5"], "beyond half the box"),
    (["--n", "200", "--cutoff", "0.5", "--precision", "fp16"], "--precision 'fp16'"),
    (["--n", "200", "--cutoff", "0.5", "--peers", "gromacs"], "--peers 'gromacs'; known: openmm"),
    (["--n", "200", "--cutoff", "0.5", "--strategies", "kspace_nope"], "no such reciprocal strategy"),
])
def test_bad_ewald_sweeps_end_in_one_line(tmp_path, args, words):
    r = harness("ewald", *args, "--out", tmp_path, "--name", "ew")
    assert r.returncode == 2 and words in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "ew.json").exists()


def test_the_report_draws_the_dram_bound_of_a_gpu_row():
    """Each charge's (x, y, z, q) read by both passes and its force written; S written and read, A read,
    the weights written and read, per k-vector: at 100,000 charges and 74,438 k in fp32, 7.08 MB."""
    import importlib

    section = importlib.import_module("harness.report.sections.ewald")
    row = {"backend": "cuda", "precision": "fp32", "n": 100000, "kvectors": 74438}
    want = (100000 * (32 + 12) + 74438 * (16 + 4 + 16)) / 4814e9 * 1e3
    assert section.dram_floor_ms(row, {"peak_dram_gbs": 4814}) == pytest.approx(want)
    assert section.dram_floor_ms(dict(row, precision="fp64"), {"peak_dram_gbs": 4814}) == pytest.approx(
        (100000 * (64 + 24) + 74438 * (32 + 8 + 32)) / 4814e9 * 1e3)
    assert section.dram_floor_ms(dict(row, backend="cpu"), {"peak_dram_gbs": 4814}) is None
    assert section.dram_floor_ms(row, {}) is None


def test_the_openmm_peer_gives_an_ewald_and_a_pme_row(tmp_path):
    """--peers openmm: a row for OpenMM's Ewald and one for its PME per precision, each ok or n/a with its
    reason (no OpenMM, or no CUDA platform, here)."""
    r = harness("ewald", "--n", "200", "--precision", "fp64", "--strategies", "kspace_thread_cpu", "--cutoff", "0.5",
                "--peers", "openmm", "--repeat", "2", "--quiet", "--out", tmp_path, "--name", "p")
    assert r.returncode == 0, r.stdout + r.stderr
    rows = json.loads((tmp_path / "p.json").read_text())["rows"]
    peers = [x for x in rows if x["backend"] == "peer"]
    assert [x["strategy"] for x in peers] == ["openmm-ewald", "openmm-pme"]
    assert all(x["status"] == "ok" or (x["status"] == "n/a" and x["detail"]) for x in peers)

"""The CPU molecule traversals (strategies/molecules_cpu.py: the molecule-pair body in ls1-MarDyn's
PotForce form, all pairs and linked cells over the centres) against the float64 reference, which
derives the same terms another way: every site kind with its lever arm, each scenario, open and
periodic boxes, boxes of one and two cells a side; forces --molecules takes them by name."""
from __future__ import annotations

import numpy as np
import pytest

from harness import molecule_scenarios as S
from mdcore import Box
from mdcore import molecules as M
from reference import molecules as ref
from strategies import molecules_cpu

from tests.test_molecules import ALL_KINDS, _quat, check_derivatives


def _agree(got, want):
    scale = lambda x: max(float(np.abs(x).max()), 1e-300)  # noqa: E731
    np.testing.assert_allclose(got["forces"], want["forces"], rtol=0, atol=1e-10 * scale(want["forces"]))
    np.testing.assert_allclose(got["torques"], want["torques"], rtol=0, atol=1e-10 * scale(want["torques"]))
    np.testing.assert_allclose(got["virial"], want["virial"], rtol=0, atol=1e-10 * scale(want["virial"]))
    assert got["energy"] == pytest.approx(want["energy"], rel=1e-11, abs=1e-11 * scale(want["forces"]))
    assert got["pairs"] == want["pairs"]


def _all_kinds(m=64, L=9.0, periodic=True, seed=5, two=False):
    doc = ALL_KINDS
    if two:  # a second component: every pair of components mixed with its own xi and eta
        x = doc["components"]["X"]
        doc = {**doc, "components": {"X": x, "Y": {**x, "sites": x["sites"][::-1]}},
               "mixing": {"xi": {"X|Y": 0.9}, "eta": {"X|Y": 1.05}}}
    model = M.parse(doc)
    rng = np.random.default_rng(seed)
    side = int(np.ceil(m ** (1 / 3)))
    grid = np.array([(i, j, k) for i in range(side) for j in range(side) for k in range(side)][:m], np.float64)
    centres = (grid + 0.5) * (L / side) + rng.normal(scale=0.1, size=(m, 3))
    comps = (np.arange(m) % 2 if two else np.zeros(m)).astype(np.int32)
    return M.Molecules(centres, _quat(rng, m), comps, Box.make([L] * 3, periodic)), model


@pytest.mark.parametrize("name", molecule_cpu_names := molecules_cpu.TRAVERSALS)
@pytest.mark.parametrize("periodic, two", [(True, False), (False, False), (True, True)])
def test_every_site_kind_as_the_reference_has_it(name, periodic, two):
    mols, model = _all_kinds(periodic=periodic, two=two)
    _agree(molecules_cpu.evaluate(name, mols, model), ref.compute(mols, model))


@pytest.mark.parametrize("precision", ["fp32", "mixed"])
def test_float32_modes_agree_within_their_bound_and_compute_in_float32(precision):
    """fp32 and mixed on every site kind, two components, every traversal: within verify's bound of
    the reference, and not float64 in disguise (an error far above float64's); mixed sums in float64,
    so its energy differs from fp32's."""
    from harness import molecule_check

    mols, model = _all_kinds(two=True)
    want = ref.compute(mols, model)
    tol = molecule_check.tolerance(precision, mols, model)
    assert 1e-5 <= tol < 1e-3
    energies = set()
    for name in molecule_cpu_names:
        got = molecules_cpu.evaluate(name, mols, model, precision)
        errors = [float(np.abs(got[k] - want[k]).max() / np.abs(want[k]).max())
                  for k in ("forces", "torques", "virial")]
        errors.append(abs(got["energy"] - want["energy"]) / abs(want["energy"]))
        assert max(errors) <= tol, (name, errors)
        assert max(errors) > 1e-9, (name, errors)  # float32 arithmetic
        assert got["pairs"] == want["pairs"] and got["forces"].dtype == np.float64
        energies.add(got["energy"])
    fp32 = molecules_cpu.evaluate("fullshell_thread_cpu", mols, model, "fp32")["energy"]
    if precision == "mixed":
        assert fp32 not in energies
    with pytest.raises(ValueError, match="fixed"):
        molecules_cpu.evaluate("fullshell_thread_cpu", mols, model, "fixed")


@pytest.mark.parametrize("scenario", sorted(S.SCENARIOS))
def test_each_molecule_scenario_as_the_reference_has_it(scenario):
    mols, model = S.make(scenario, "tiny", seed=2)
    want = ref.compute(mols, model)
    for name in molecule_cpu_names:
        ok, why = molecules_cpu.applicable(name, mols, model)
        if name == "c08_thread_cpu":  # the tiny boxes hold 2 cells a side: c08 says why it does not apply
            assert not ok and "c08" in why and "3" in why
            continue
        _agree(molecules_cpu.evaluate(name, mols, model), want)


@pytest.mark.parametrize("L", [6.0, 9.0, 12.5, 15.0])  # 2, 3, 4 and 5 cells a side at the cutoff 3
def test_the_cells_find_every_pair_whatever_the_grid(L):
    mols, model = _all_kinds(m=100, L=L)
    want = ref.compute(mols, model)
    for name in ("fullshell_thread_cpu", "c08_thread_cpu", "verlet_thread_cpu"):
        if molecules_cpu.applicable(name, mols, model)[0]:
            _agree(molecules_cpu.evaluate(name, mols, model), want)
        else:
            assert name == "c08_thread_cpu" and L == 6.0


def test_c08_on_an_open_box_and_an_odd_grid():
    """Open axes start their bases at -1; 5 periodic cells need c08's third colour."""
    mols, model = _all_kinds(m=125, L=15.0, periodic=False)
    _agree(molecules_cpu.evaluate("c08_thread_cpu", mols, model), ref.compute(mols, model))


def test_the_same_bits_run_after_run():
    mols, model = S.make("spce_water", "tiny", seed=3)
    a = molecules_cpu.evaluate("fullshell_thread_cpu", mols, model)
    b = molecules_cpu.evaluate("fullshell_thread_cpu", mols, model)
    assert np.array_equal(a["forces"], b["forces"]) and np.array_equal(a["torques"], b["torques"])


def test_forces_takes_a_molecule_traversal_by_name(tmp_path, capsys):
    from harness import cli

    mols, model = S.make("stockmayer", "tiny", seed=1)
    S.write(tmp_path / "m.npz", mols, model)
    comps = tmp_path / "c.json"
    import json

    from mdcore import molecule_library

    comps.write_text(json.dumps(molecule_library.components_file("stockmayer")))
    args = ["forces", "--molecules", str(comps), "--input", str(tmp_path / "m.npz")]
    assert cli.main([*args, "--strategy", "fullshell_thread_cpu", "--out", str(tmp_path / "f.npz")]) == 0
    assert cli.main([*args, "--strategy", "reference", "--out", str(tmp_path / "r.npz")]) == 0
    with np.load(tmp_path / "f.npz") as f, np.load(tmp_path / "r.npz") as r:
        np.testing.assert_allclose(f["torques"], r["torques"], atol=1e-10 * np.abs(r["torques"]).max())
    capsys.readouterr()
    assert cli.main([*args, "--strategy", "clusterpair_thread_cpu", "--out", str(tmp_path / "x.npz")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "clusterpair_thread_cpu" in err[0] and "fullshell_thread_cpu" in err[0]
    assert cli.main([*args, "--strategy", "c08_thread_cpu", "--out", str(tmp_path / "x.npz")]) == 2
    err = capsys.readouterr().err.strip().splitlines()  # the tiny box: 2 cells a side
    assert len(err) == 1 and "c08" in err[0] and not (tmp_path / "x.npz").exists()
    assert cli.main([*args, "--strategy", "fullshell_thread_cpu", "--precision", "fixed",
                     "--out", str(tmp_path / "y.npz")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "fixed" in err[0] and "mixed" in err[0] and not (tmp_path / "y.npz").exists()


def test_md_of_molecules_conserves_energy_and_writes_its_summary(tmp_path, capsys):
    """md --scenario stockmayer: NO_SQUISH with the cell traversal's forces; a molecule system's energy
    stays within a small fraction of its kinetic energy (the cutoff's jumps included)."""
    import json

    from harness import cli

    out = tmp_path / "md.json"
    assert cli.main(["md", "--scenario", "stockmayer", "--n", "tiny", "--dt", "0.001", "--temperature", "1.35",
                     "--steps", "60", "--sample", "10", "--quiet", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    s = doc["summary"]
    assert doc["kind"] == "md-molecules" and doc["strategy"] == "fullshell_thread_cpu" and s["molecules"] == 216
    assert len(doc["samples"]) == 7 and s["degrees_of_freedom"] == 3 * 216 - 3 + 2 * 216
    kinetic = doc["samples"][0]["translational"] + doc["samples"][0]["rotational"]
    assert 0.0 < s["max_deviation_per_molecule"] * 216 < 0.05 * kinetic
    assert "per molecule per time unit" in capsys.readouterr().out


@pytest.mark.parametrize("extra, words", [
    ([], "take --dt"), (["--dt", "0.001", "--temperature", "1", "--strategy", "clusterpair_thread_cpu"],
                        "no molecule form for clusterpair_thread_cpu: its clusters of 8"),
    (["--dt", "0.001", "--temperature", "1", "--precision", "fixed"], "not fixed"),
    (["--dt", "0.001", "--temperature", "1", "--strategy", "reference", "--precision", "fp32"], "not fp32"),
    (["--dt", "0.001", "--temperature", "1", "--launch", "block=64"], "--launch"),
    (["--dt", "0.001", "--temperature", "1", "--launch", "upkeep=sometimes"], "upkeep=device|host"),
    (["--dt", "0.001", "--temperature", "1", "--input", "x.npz"], "not with the scenario"),
    (["--dt", "0.001", "--temperature", "1", "--strategy", "c08_thread_cpu"], "2x2x2")])
def test_md_of_molecules_refuses_what_does_not_apply_in_one_line(extra, words, capsys):
    from harness import cli

    assert cli.main(["md", "--scenario", "spce_water", "--n", "tiny", *extra]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0]


def test_every_strategy_without_a_molecule_form_says_why():
    from strategies import molecules, registry

    others = [n for n in registry.names(experimental=True) if n not in molecules.TRAVERSALS]
    assert others and "clusterpair_warp_newton3" in others
    fallback = molecules.why_not("no_such_strategy")
    assert all(molecules.why_not(n) != fallback for n in others), [n for n in others
                                                                   if molecules.why_not(n) == fallback]
    assert molecules.refuse(list(molecules.TRAVERSALS), "bench") is None
    assert molecules.refuse(["reference"], "md", reference=True) is None
    err = str(molecules.refuse(["verlet_thread_padded", "c08_warp_2d", "parity_warpblock_shared_mutex"], "bench"))
    assert err.startswith("bench: no molecule form for c08_warp_2d: a cell-view variant of c08_warp_csr")
    assert "parity_warpblock_shared_mutex: the port's global-mutex scheduler" in err
    assert "verlet_thread_padded:" not in err and "\n" not in err


@pytest.mark.parametrize("command, out", [
    (["bench", "--scenario", "spce_water", "--n", "tiny", "--strategies"], "--out"),
    (["tune", "--scenario", "spce_water", "--n", "tiny", "--strategies"], "--json"),
    (["verify", "--scenarios", "lj_liquid", "--size", "tiny", "--molecule-strategies"], "--out")])
def test_the_commands_refuse_a_strategy_without_a_molecule_form_with_the_reason(command, out, capsys, tmp_path):
    from harness import cli

    assert cli.main([*command, "fullshell_thread_nested", out, str(tmp_path / "o.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "fullshell_thread_nested: a cell-view variant of fullshell_thread_csr" in err[0]
    assert not (tmp_path / "o.json").exists()


def test_verify_checks_the_molecule_traversals_and_fails_a_wrong_torque(tmp_path, capsys, monkeypatch):
    import json

    from harness import cli
    from strategies import molecules_cpu as mc

    assert cli.main(["export", "--scenario", "spce_water", "--n", "tiny", "--out", str(tmp_path / "w.npz")]) == 0
    args = ["verify", "--molecules", str(tmp_path / "w.components.json"), "--input", str(tmp_path / "w.npz"),
            "--precision", "fp64", "--quiet"]
    assert cli.main([*args, "--out", str(tmp_path / "v")]) == 0
    doc = json.loads((tmp_path / "v" / "verify.json").read_text())
    from harness.molecule_check import ORACLE

    from strategies import molecules

    assert {r["strategy"] for r in doc["molecules"]} == set(molecules.TRAVERSALS) | {ORACLE}
    ran = [r for r in doc["molecules"] if r["status"] != "n/a"]
    assert ran and all(r["status"] == "pass" for r in ran)
    skipped = [r for r in doc["molecules"] if r["status"] == "n/a" and r["strategy"] in mc.TRAVERSALS]
    assert [r["strategy"] for r in skipped] == ["c08_thread_cpu"] and "2x2x2" in skipped[0]["detail"]
    real = mc.evaluate

    def tilted(name, mols, model, precision="fp64"):  # the CUDA port's fault: a torque term left out, here 1e-6
        out = real(name, mols, model, precision)
        out["torques"] = out["torques"] * (1.0 + 1e-6)
        return out
    monkeypatch.setattr(mc, "evaluate", tilted)
    assert cli.main([*args, "--out", str(tmp_path / "bad")]) == 1
    assert "torques  FAIL" in capsys.readouterr().out


@pytest.mark.parametrize("extra, words", [([], "needs --input"), (["--input", "w.npz", "--scenarios", "lj_liquid"],
                                                                   "--scenarios")])
def test_verify_molecules_refuses_what_does_not_apply(tmp_path, capsys, extra, words):
    from harness import cli

    assert cli.main(["verify", "--molecules", "c.json", *extra, "--out", str(tmp_path / "v")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0]


def test_md_equilibrates_to_the_temperature_then_runs_nve(tmp_path, capsys):
    import json

    from harness import cli

    out = tmp_path / "md.json"
    assert cli.main(["md", "--scenario", "two_centre_lj_quadrupole", "--n", "tiny", "--dt", "0.02", "--temperature",
                     "0.64", "--equilibrate", "40", "--steps", "20", "--sample", "10", "--quiet", "--json",
                     str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["summary"]["equilibrate_steps"] == 40
    assert doc["samples"][0]["temperature"] == pytest.approx(0.64, rel=1e-9)  # rescaled at the last of those steps
    assert cli.main(["md", "--strategy", "fullshell_thread_cpu", "--n", "tiny", "--equilibrate", "5"]) == 2
    assert "applies to molecules" in capsys.readouterr().err


def _switched(doc, rs):
    return {**doc, "switch": rs}


def test_the_switch_keeps_forces_and_torques_the_derivatives_of_the_energy():
    """A switch from 2 to the cutoff 3 on the centres' distance: most pairs lie in it; the reference's
    forces and torques are still minus the energy's derivatives, and every traversal agrees."""
    model = M.parse(_switched(ALL_KINDS, 2.0))
    mols, _ = _all_kinds(m=64, L=9.0)
    out = ref.compute(mols, model)
    plain = ref.compute(mols, M.parse(ALL_KINDS))
    assert abs(out["energy"] - plain["energy"]) > 1e-3 * abs(plain["energy"])  # the switch acts

    check_derivatives(mols, model, out, (0, 21, 40))
    for name in molecule_cpu_names:
        _agree(molecules_cpu.evaluate(name, mols, model), out)


def test_the_switch_conserves_the_energy_the_plain_cutoff_does_not(tmp_path):
    """The Stockmayer fluid's NVE drift with the plain cutoff, and with a switch from 2.0 to 2.5: the
    switch makes it far smaller (the plain cutoff's jumps are what drifts)."""
    import json

    from harness import cli
    from mdcore import molecule_library

    mols, model = S.make("stockmayer", "tiny", seed=1)
    S.write(tmp_path / "m.npz", mols, model)
    drift = {}
    for label, extra in (("plain", {}), ("switch", {"switch": 2.0})):
        comps = tmp_path / f"{label}.json"
        comps.write_text(json.dumps({**molecule_library.components_file("stockmayer"), **extra}))
        out = tmp_path / f"{label}.md.json"
        assert cli.main(["md", "--molecules", str(comps), "--input", str(tmp_path / "m.npz"), "--dt", "0.001",
                         "--temperature", "1.35", "--equilibrate", "100", "--steps", "200", "--sample", "10", "--quiet",
                         "--json", str(out)]) == 0
        drift[label] = json.loads(out.read_text())["summary"]["max_deviation_per_molecule"]
    assert drift["switch"] < 0.01 * drift["plain"], drift  # measured: 4.7e-5 against 8.4e-2


def test_the_nve_report_runs_each_precision_from_one_start(tmp_path, capsys):
    """md --nve-report on molecules: every traversal and precision from the same start (their first
    samples agree to the precision), a GPU traversal n/a with the reason where there is none."""
    import json

    from harness import cli
    from strategies.cuda import device_status

    out = tmp_path / "nve.json"
    assert cli.main(["md", "--scenario", "stockmayer", "--n", "tiny", "--nve-report", "--dt", "0.002",
                     "--temperature", "1.35", "--steps", "20", "--sample", "10", "--equilibrate", "10",
                     "--strategies", "fullshell_thread_cpu,fullshell_warp_csr", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["kind"] == "nve-molecules" and doc["molecules"] == 216
    rows = {(r["strategy"], r["precision"]): r for r in doc["rows"] if not r["strategy"].startswith("peer:")}
    assert set(rows) == {(s, p) for s in ("fullshell_thread_cpu", "fullshell_warp_csr")
                         for p in ("fp32", "mixed", "fp64")}
    assert any(r["strategy"] == "peer:openmm" for r in doc["rows"])  # OpenMM's rigid water, or why not
    cpu = [rows[("fullshell_thread_cpu", p)] for p in ("fp32", "mixed", "fp64")]
    assert all(r["status"] == "ok" and abs(r["max_deviation"]) < 0.05 for r in cpu)
    if not device_status()[0]:
        assert rows[("fullshell_warp_csr", "fp32")]["status"] == "n/a"
    assert "drift /molecule/time" in capsys.readouterr().out
    assert cli.main(["md", "--scenario", "stockmayer", "--n", "tiny", "--nve-report", "--dt", "0.002",
                     "--temperature", "1.35", "--precision", "fixed"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "fixed" in err[0]


def test_the_torque_on_j_follows_from_the_pair_s_conserved_angular_momentum():
    """tau_j = -tau_i - d x F_i for every molecule pair (every site kind, two components, the switch on):
    what the GPU's Newton3 traversal uses instead of a second pass through the sites."""
    import dataclasses

    mols, model = _all_kinds(two=True)
    model = dataclasses.replace(model, switch=0.8 * model.cutoff)
    first, count, kind, a, e, sigma, eps, mom = molecules_cpu._sites(mols, model)
    comp = np.asarray(mols.components, np.int64)
    c = np.asarray(mols.centres)
    checked = 0
    for i in range(len(c)):
        for j in range(i + 1, len(c)):
            d = c[i] - c[j]
            d -= mols.box.lengths * np.rint(d / mols.box.lengths)
            if d @ d >= model.cutoff ** 2:
                continue
            out = molecules_cpu._molecule_pair(i, j, *d, first, count, comp, kind, a, e, sigma, eps, mom, model.xi,
                                               model.eta, model.coulomb_constant, model.k_rf, model.c_rf,
                                               model.rf_dipoles)
            out = molecules_cpu._switch(c, *d, model.switch_start, model.cutoff, *out)
            f, ti, tj = np.array(out[0:3]), np.array(out[3:6]), np.array(out[6:9])
            scale = max(np.abs(ti).max(), np.abs(np.cross(d, f)).max(), 1e-300)
            np.testing.assert_allclose(tj, -ti - np.cross(d, f), rtol=0, atol=1e-12 * scale)
            checked += 1
    assert checked > 100


def test_the_replay_keeps_the_verlet_list_within_its_skin_and_catches_one_kept_too_long(monkeypatch, capsys):
    """verify --molecules --replay: the Verlet traversal keeps its list across the frames of a random
    walk and builds it again when a centre leaves the skin, every frame equal to the reference's; the
    same replay with the list never built again fails (the negative control)."""
    import json
    import tempfile
    from pathlib import Path

    from harness import cli, molecule_check

    mols, model = S.make("stockmayer", "tiny", seed=2)
    frames = molecule_check.walk(mols, model, 3, seed=4)
    step = np.linalg.norm(np.asarray(frames[1].centres) - np.asarray(frames[0].centres), axis=1)
    assert step.max() <= molecule_check.WALK_STEP * model.cutoff + 1e-12
    assert np.allclose(np.linalg.norm(frames[2].quaternions, axis=1), 1.0)
    case = {"case": "stockmayer", "mols": mols, "model": model}
    rows = molecule_check.replay("verlet_thread_cpu", "fp64", case, 16)
    assert all(r["status"] == "pass" for r in rows), rows
    builds = int(rows[0]["detail"].split()[0])
    assert 2 <= builds < 16  # kept across frames, and built again
    monkeypatch.setattr(molecules_cpu.VerletPlan, "_moved", lambda self, c, box: 0.0)
    bad = molecule_check.replay("verlet_thread_cpu", "fp64", case, 60)  # far enough for pairs to enter unseen
    assert any(r["status"] == "FAIL" for r in bad) and bad[0]["detail"] == "1 list build(s)"
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        assert cli.main(["export", "--scenario", "stockmayer", "--n", "tiny", "--out", str(t / "s.npz")]) == 0
        assert cli.main(["verify", "--molecules", str(t / "s.components.json"), "--input", str(t / "s.npz"),
                         "--replay", "60", "--precision", "fp64", "--molecule-strategies", "verlet_thread_cpu",
                         "--quiet", "--out", str(t / "v")]) == 1  # the list is still never built again
        doc = json.loads((t / "v" / "verify.json").read_text())
        assert any("replay of 60" in r["case"] and r["status"] == "FAIL" for r in doc["molecules"])
    capsys.readouterr()


def test_a_molecule_scenario_takes_a_switch_and_refuses_other_parameters(tmp_path, capsys):
    """'spce_water:switch=8': the model's switch starts at 8 (the molecules are the plain scenario's), the
    exported components file carries it, and md, bench and tune see a molecule scenario; a switch beyond the
    cutoff, an unknown key or a word ends in one line, exit 2, with nothing written."""
    import json

    from harness import cli

    plain, m0 = S.make("spce_water", "tiny", seed=3)
    mols, model = S.make("spce_water:switch=8", "tiny", seed=3)
    assert model.switch_start == 8.0 and m0.switch_start == m0.cutoff
    np.testing.assert_array_equal(mols.centres, plain.centres)
    assert S.named("spce_water:switch=8") and not S.named("lj_liquid")
    assert cli.main(["export", "--scenario", "spce_water:switch=8", "--n", "tiny", "--out", str(tmp_path / "w.npz")]) == 0
    assert json.loads((tmp_path / "w.components.json").read_text())["switch"] == 8.0
    capsys.readouterr()
    for spec, words in [("spce_water:switch=10", "below the cutoff"), ("spce_water:skin=1", "takes switch="),
                        ("spce_water:switch=soon", "not a number")]:
        out = tmp_path / "bad.npz"
        assert cli.main(["export", "--scenario", spec, "--n", "tiny", "--out", str(out)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and words in err[0], err
        assert not out.exists()

"""bench on rigid molecules (harness/molecule_bench.py): the molecule traversals timed per precision on
the molecule scenarios or the user's molecules, the pair counts they report, and what it refuses."""
from __future__ import annotations

import json

import numpy as np
import pytest

from harness import cli, molecule_bench
from reference import molecules as ref

from tests.test_molecules_cpu import _all_kinds


def test_bench_times_the_molecule_traversals_on_a_scenario(tmp_path, capsys):
    out = tmp_path / "b"
    assert cli.main(["bench", "--scenario", "stockmayer", "--n", "tiny", "--strategies",
                     "fullshell_thread_cpu,verlet_thread_cpu", "--precision", "fp64,fixed", "--repeat", "2",
                     "--min-time", "0", "--warmup", "1", "--amortised", "4", "--out", str(out), "--name", "m",
                     "--quiet"]) == 0
    doc = json.loads((out / "m.json").read_text())
    assert doc["kind"] == "bench-molecules" and (out / "m.csv").is_file()
    rows = {(r["strategy"], r["precision"]): r for r in doc["rows"]}
    assert set(rows) == {(s, p) for s in ("fullshell_thread_cpu", "verlet_thread_cpu") for p in ("fp64", "fixed")}
    from harness import molecule_scenarios

    mols, model = molecule_scenarios.make("stockmayer", "tiny", seed=1)
    pairs = ref.compute(mols, model)["pairs"]
    for s in ("fullshell_thread_cpu", "verlet_thread_cpu"):
        r = rows[(s, "fp64")]
        assert r["status"] == "ok" and r["repeats"] >= 2 and r["compute_ms"] > 0.0
        assert r["molecule_pairs"] == pairs and r["site_pairs"] == 2 * pairs  # one LJ centre, one dipole
        assert r["molecules"] == 216 and r["sites"] == 432
        assert r["molecules_per_s"] == pytest.approx(216 / (1e-3 * r["compute_ms"]))
        assert rows[(s, "fixed")]["status"] == "n/a"
        assert r["amortised_frames"] == 4 and r["amortised_ms"] > 0.0 and r["rebuilds"] >= 0
    text = capsys.readouterr().out
    assert "stockmayer:tiny fp64: " in text and "verlet_thread_cpu" in text


def test_a_molecule_point_timed_while_the_host_is_busy_says_so(monkeypatch):
    from harness import device, molecule_bench

    class Busy(device.HostLoad):
        def other_cores(self):
            return 1000.0
    monkeypatch.setattr(device, "HostLoad", Busy)
    cases = molecule_bench.scenario_cases(["spce_water"], ["tiny"], seed=1)
    timing = {"warmup": 0, "repeat": 2, "min_time": 0.0, "launch": {}}
    rows = molecule_bench.run(["fullshell_thread_cpu"], ["fp64"], cases, timing)
    assert rows[0]["status"] == "ok" and rows[0]["host_busy"] is True and rows[0]["host_other_cores"] == 1000.0
    assert "(host busy: other processes used 1000.0 cores)" in molecule_bench.table(rows)


def test_site_pairs_of_two_components_count_each_kind_with_its_own():
    """Two components with mirrored sites: the molecule pairs per pair of components add up to all
    pairs within the cutoff, and their site terms to LJ x LJ plus electrostatic x electrostatic."""
    mols, model = _all_kinds(two=True)
    by = molecule_bench._pairs_by_components(mols, model)
    assert by.shape == (2, 2) and by.sum() == ref.compute(mols, model)["pairs"]
    c = np.asarray(mols.centres)
    d = c[:, None, :] - c[None, :, :]
    d -= mols.box.lengths * np.rint(d / mols.box.lengths)
    within = (np.sum(d * d, axis=-1) < model.cutoff ** 2) & ~np.eye(len(c), dtype=bool)
    comp = np.asarray(mols.components)
    brute = np.zeros((2, 2), np.int64)
    for i, j in zip(*np.nonzero(np.triu(within))):
        brute[min(comp[i], comp[j]), max(comp[i], comp[j])] += 1
    assert np.array_equal(np.triu(by + by.T - np.diag(np.diag(by))), brute)
    lj = [sum(k == "lj" for k in cp.kinds) for cp in model.components]
    el = [len(cp.kinds) - x for cp, x in zip(model.components, lj)]
    want = sum(brute[a, b] * (lj[a] * lj[b] + el[a] * el[b]) for a in range(2) for b in range(2))
    assert molecule_bench.site_pairs(mols, model, by) == want


@pytest.mark.parametrize("extra, words", [
    (["--scenario", "spce_water", "--scenario", "lj_liquid"], "benchmarked apart"),
    (["--scenario", "spce_water", "--suite", "default"], "--suite"),
    (["--scenario", "spce_water", "--strategies", "clusterpair_warp_newton3"], "no molecule form for clusterpair_warp_newton3: its clusters"),
    (["--molecules", "c.json"], "needs --input"),
    (["--scenario", "spce_water", "--n", "huge"], "huge"),
    (["--scenario", "spce_water", "--launch", "lanes=3"], "one of 1, 2, 4, 8, 16, 32"),
    (["--scenario", "spce_water", "--launch", "block=128"], "molecules take lanes=K"),
    (["--scenario", "spce_water", "--launch", "spans=2"], "spans=2: one of 0, 1"),
    (["--scenario", "spce_water", "--launch", "unrolled=yes"], "unrolled=yes: one of 0, 1"),
    (["--scenario", "spce_water", "--launch", "counting=2"], "counting=2: one of 0, 1"),
    (["--scenario", "spce_water", "--launch", "lanes=many"], "lanes=many"),
])
def test_bench_molecules_refuses_in_one_line(tmp_path, capsys, extra, words):
    assert cli.main(["bench", *extra, "--out", str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0]
    assert not (tmp_path / "b").exists() or not any((tmp_path / "b").iterdir())


def _mrow(strategy, ms, q1, q3, precision="fp32", case="spce_water:small"):
    return {"strategy": strategy, "backend": "cpu", "scenario": case, "precision": precision, "status": "ok",
            "compute_ms": ms, "compute_q1_ms": q1, "compute_q3_ms": q3, "molecules": 1000, "site_pairs_per_s": 1e9}


def test_the_report_puts_the_molecule_order_beside_the_points_order():
    """The report's molecule section: its table, and a swap against the points' order said as a change
    where the interquartile ranges part, as a tie where they overlap; the molecule NVE rows beside."""
    from harness.report import render, sections as S

    points = [{"strategy": s, "scenario": "lj_liquid", "n": 4000, "precision": "fp32", "status": "ok",
               "compute_ms": t, "outputs": "all"}
              for s, t in (("fullshell_thread_cpu", 1.0), ("verlet_thread_cpu", 2.0), ("allpairs_thread_cpu", 9.0))]
    docs = [{"kind": "bench-molecules", "device": {}, "rows": [
        _mrow("allpairs_thread_cpu", 5.0, 4.9, 5.1), _mrow("fullshell_thread_cpu", 5.05, 5.0, 5.2),
        _mrow("verlet_thread_cpu", 7.0, 6.9, 7.1)]}]
    nve = [{"kind": "nve-molecules", "system": "spce_water", "molecules": 216, "rows": [
        {"strategy": "fullshell_thread_cpu", "precision": "fp32", "status": "ok", "drift": 4.9e-5,
         "max_deviation": 1.2e-3, "ms_per_step": 13.8}]}]
    sec = render.Section("molecules", "Rigid molecules")
    S.molecules(sec, docs, points, nve)
    text = " ".join(b["text"] for b in sec.blocks if b["kind"] == "text")
    tables = [b["md"] for b in sec.blocks if b["kind"] == "table"]
    assert "rank fullshell_thread_cpu, verlet_thread_cpu, allpairs_thread_cpu" in text
    assert "the lists already built, as the molecule bench times them" in text
    assert "the order changes from points: allpairs_thread_cpu ahead of verlet_thread_cpu" in text
    assert "allpairs_thread_cpu ahead of fullshell_thread_cpu within their interquartile ranges: a tie" in text
    assert len(tables) == 2 and "allpairs_thread_cpu (1)" in tables[0] and "+4.90e-05" in tables[1]
    assert "Measured at commit" not in text  # no commit recorded: none said
    dated = render.Section("molecules", "Rigid molecules")
    S.molecules(dated, [{**docs[0], "device": {"commit": "6aade6d"}}], points,
                [{**nve[0], "device": {"commit": "0e00b4c"}}])
    assert dated.blocks[0]["text"] == "Measured at commit 0e00b4c, 6aade6d."
    empty = render.Section("molecules", "Rigid molecules")
    S.molecules(empty, [], points, [])
    assert "No data for this section" in empty.blocks[0]["text"]


def test_tune_on_molecules_picks_a_verified_traversal_and_sets_a_wrong_one_aside(tmp_path, capsys, monkeypatch):
    from strategies import molecules_cpu

    out = tmp_path / "t.json"
    args = ["tune", "--scenario", "stockmayer", "--n", "tiny", "--budget", "1s", "--precision", "fp64",
            "--strategies", "allpairs_thread_cpu,fullshell_thread_cpu,c08_thread_cpu", "--json", str(out)]
    assert cli.main(args) == 0
    doc = json.loads(out.read_text())
    assert doc["kind"] == "tune-molecules" and doc["winner"] in ("allpairs_thread_cpu", "fullshell_thread_cpu")
    status = {c["strategy"]: c["status"] for c in doc["candidates"]}
    assert status["c08_thread_cpu"] == "n/a"  # 2 cells a side
    win = next(c for c in doc["candidates"] if c["strategy"] == doc["winner"])
    assert max(win["errors"].values()) <= doc["tolerance"] == 1e-10
    assert doc["checked_against"] == "the float64 reference" and doc["winner"] in capsys.readouterr().out
    real = molecules_cpu.evaluate

    def wrong(name, mols, model, precision="fp64"):  # every traversal's torques 1e-6 off
        o = real(name, mols, model, precision)
        o["torques"] = o["torques"] * (1.0 + 1e-6)
        return o
    monkeypatch.setattr(molecules_cpu, "evaluate", wrong)
    assert cli.main(args) == 1
    assert "failed the check" in capsys.readouterr().err


@pytest.mark.parametrize("extra, words", [(["--precision", "fixed"], "not fixed"),
                                          (["--strategies", "clusterpair_warp_newton3"], "no molecule form for clusterpair_warp_newton3: its clusters"),
                                          (["--cache", "c.json"], "--cache")])
def test_tune_on_molecules_refuses_in_one_line(capsys, extra, words):
    assert cli.main(["tune", "--scenario", "spce_water", "--n", "tiny", *extra]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0]


@pytest.mark.parametrize("offset, fp32, fp64", [(1e-9, 1, 0), (-1e-9, 1, 0), (1e-3, 0, 0), (1e-15, 1, 1)])
def test_pairs_at_the_cutoff_within_rounding_may_count_either_way(offset, fp32, fp64):
    """Two molecules whose centres are rc + offset apart in a 100-wide box: within float32's rounding of the
    cutoff (about 5e-5 here) the pair is ambiguous in fp32 and mixed, within float64's only for an offset
    of that size; a count off by one passes exactly where the pair is ambiguous."""
    from harness import molecule_check
    from mdcore import Box
    from mdcore import molecules as M

    _, model = _all_kinds()
    rc = model.cutoff
    centres = np.array([[50.0, 50.0, 50.0], [50.0 + rc + offset, 50.0, 50.0]])
    mols = M.Molecules(centres, np.tile([1.0, 0.0, 0.0, 0.0], (2, 1)), np.zeros(2, np.int32), Box.make([100.0] * 3,
                                                                                                       [True] * 3))
    assert molecule_check.near_cutoff(mols, rc, "fp32") == fp32
    assert molecule_check.near_cutoff(mols, rc, "mixed") == fp32
    assert molecule_check.near_cutoff(mols, rc, "fp64") == fp64
    want = int(offset < 0)
    assert molecule_check.pairs_agree(1 - want, want, mols, rc, "fp32") == bool(fp32)
    assert molecule_check.pairs_agree(1 - want, want, mols, rc, "fp64") == bool(fp64)
    assert molecule_check.pairs_agree(want, want, mols, rc, "fp64")


def test_lanes_per_molecule_follow_the_rows_and_the_molecules():
    """verlet_warp_padded's rule at the sizes it was measured on (SPC/E water, rows of about 136 entries):
    16 lanes at 1,000 and 32,768 molecules, 8 at a million; short rows take few lanes, long ones 32; a
    launch value is refused by the traversals without lanes."""
    from strategies import molecules_cuda as mc

    row = 0.033328 * 4.0 / 3.0 * np.pi * ((1.0 + mc.SKIN) * 9.0) ** 3
    assert [mc.pick_lanes(row, m) for m in (1000, 32768, 1_000_000)] == [16, 16, 8]
    assert mc.pick_lanes(10.0, 1000) == 4 and mc.pick_lanes(2000.0, 1000) == 32
    assert mc.pick_lanes(2000.0, 10_000_000) == 4
    rows = molecule_bench.run(["verlet_thread_cpu"], ["fp32"], [{"case": "x", "mols": _all_kinds()[0],
                                                                  "model": _all_kinds()[1]}],
                              {"warmup": 0, "repeat": 1, "min_time": 0.0, "launch": {"lanes": 8}})
    assert rows[0]["status"] == "n/a" and "verlet_warp_padded" in rows[0]["detail"]


def test_the_report_answers_the_port_processors_question():
    """The ls1-MarDyn port's processors get a sentence of their own: their order on points and on each
    molecule system, said as kept or not, and the two-pass form's time over the shared form's on both."""
    from harness.report import render, sections as S

    points = [{"strategy": s, "scenario": "lj_liquid", "n": 1048576, "precision": "fp32", "status": "ok",
               "compute_ms": t, "outputs": "all"}
              for s, t in (("parity_warpblock_twopass_atomic", 1.0), ("parity_warpblock_shared_atomic", 1.2),
                           ("parity_block_csr", 2.0))]
    docs = [{"kind": "bench-molecules", "device": {}, "rows": [
        _mrow("parity_warpblock_twopass_atomic", 3.0, 2.9, 3.1), _mrow("parity_warpblock_shared_atomic", 2.0, 1.9, 2.1),
        _mrow("parity_block_csr", 4.0, 3.9, 4.1)]}]
    sec = render.Section("molecules", "Rigid molecules")
    S.molecules(sec, docs, points, [])
    text = " ".join(b["text"] for b in sec.blocks if b["kind"] == "text")
    assert ("on points (lj_liquid N = 1,048,576, fp32) they rank parity_warpblock_twopass_atomic, "
            "parity_warpblock_shared_atomic, parity_block_csr; two-pass over shared 0.83x") in text
    assert ("parity_warpblock_shared_atomic, parity_warpblock_twopass_atomic, parity_block_csr (not their order on "
            "points); two-pass over shared 1.50x") in text


def test_the_points_order_times_the_lists_already_built_as_the_molecule_bench_does():
    """A list strategy's point row carries its from-scratch time and its time with the list built: the
    molecule bench times lists built, so the points' order beside it uses the latter."""
    import importlib

    M = importlib.import_module("harness.report.sections.molecules")

    points = [{"strategy": "fullshell_thread_csr", "scenario": "lj_liquid", "n": 1048576, "precision": "fp32",
               "status": "ok", "compute_ms": 0.59, "outputs": "all"},
              {"strategy": "verlet_thread_padded", "scenario": "lj_liquid", "n": 1048576, "precision": "fp32",
               "status": "ok", "compute_ms": 0.69, "with_list_graph_ms": 0.14, "outputs": "all"}]
    assert M._point_order(points, {"fullshell_thread_csr", "verlet_thread_padded"})[0] == [
        "verlet_thread_padded", "fullshell_thread_csr"]

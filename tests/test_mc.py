"""`harness mc`: Monte-Carlo moves in Ewald's reciprocal space on the CPU (kspace_thread_cpu): the
energy changes of a batch and of the Metropolis loop against full float64 recomputations, rigid
moves, the molecules' lists, a wrong energy change caught, and bad input in one line (exit 2)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from strategies import kspace_mc
from tests.inprocess import harness


def _water(tmp_path, nm=120, seed=2):
    rng = np.random.default_rng(seed)
    L = np.array([3.5, 4.0, 4.5])
    com = rng.random((nm, 3)) * L
    body = np.array([[0.0, 0.0, 0.0], [0.08, 0.06, 0.0], [-0.08, 0.06, 0.0]])
    x, q, ids = [], [], []
    for m in range(nm):
        rot = np.linalg.qr(rng.normal(size=(3, 3)))[0]
        for j, b in enumerate(body):
            x.append(com[m] + rot @ b)
            q.append((-0.8, 0.4, 0.4)[j])
            ids.append(m)
    x = np.array(x) % L
    np.savez(tmp_path / "w.npz", positions=x, box=L, charges=np.array(q), types=np.zeros(len(x), np.int64),
             mol=np.array(ids), bad=np.zeros(5, np.int64), neg=-np.ones(len(x), np.int64))
    ff = {"types": ["X"], "electrostatics": {"method": "ewald", "cutoff": 1.0, "alpha": 3.0, "kmax": [6, 7, 8]},
          "coulomb_constant": 138.935456}
    (tmp_path / "w.json").write_text(json.dumps(ff))
    return tmp_path / "w.npz", tmp_path / "w.json"


MC = ["mc", "--kspace", "kspace_thread_cpu", "--moves", "60", "--batch", "20", "--kT", "2.5"]


def test_moves_of_molecules_agree_with_full_recomputations(tmp_path):
    conf, ff = _water(tmp_path)
    r = harness(*MC, "--input", conf, "--forcefield", ff, "--molecules-from", "mol", "--check", "4", "--json",
                tmp_path / "mc.json")
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads((tmp_path / "mc.json").read_text())
    assert doc["kind"] == "mc" and doc["molecules"] == 120 and doc["kvectors"] > 0
    assert [c["what"] for c in doc["check"]] == ["batch dE (4 moves)", "loop dE (4 moves)", "loop's final S"]
    assert all(c["error"] < 1e-9 for c in doc["check"])
    assert 0.0 < doc["acceptance"] < 1.0  # some moves refused, some taken: the loop's S was updated
    assert doc["loop"] == "block" and doc["loop_blocks"] == 1  # a CPU strategy's own loop, without --loop


def test_single_ions_are_moved_without_molecule_ids(tmp_path):
    conf, ff = _water(tmp_path, nm=40)
    r = harness(*MC, "--input", conf, "--forcefield", ff, "--check", "3")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "120 ions moved" in r.stderr


def test_a_wrong_energy_change_fails_the_check(tmp_path, monkeypatch):
    conf, ff = _water(tmp_path, nm=40)
    real = kspace_mc.CpuMoves.batch
    monkeypatch.setattr(kspace_mc.CpuMoves, "batch", lambda self, moves: real(self, moves) * 1.001)
    r = harness(*MC, "--input", conf, "--forcefield", ff, "--molecules-from", "mol", "--check", "2")
    assert r.returncode == 1 and "FAIL" in r.stdout


def test_rigid_moves_keep_a_molecules_shape():
    rng = np.random.default_rng(1)
    L = np.array([2.0, 2.0, 2.0])
    x = np.array([[1.95, 1.0, 1.0], [0.05, 1.1, 1.0], [1.9, 0.9, 1.05]])  # across the periodic boundary
    moves = kspace_mc.draw(5, 1, 0.2, 1.0, True, 3)
    for rt in moves.rt:
        assert np.allclose(rt[:9].reshape(3, 3) @ rt[:9].reshape(3, 3).T, np.eye(3))
        y = kspace_mc.trial_positions(x, L, np.arange(3), rt)
        d0 = x[:, None] - x[None]
        d0 -= L * np.rint(d0 / L)
        d1 = y[:, None] - y[None]
        assert np.allclose(np.linalg.norm(d0, axis=-1), np.linalg.norm(d1, axis=-1))
    assert rng is not None


def test_molecule_lists_leave_uncharged_atoms_out_when_asked():
    q = np.array([1.0, 0.0, -1.0, 0.0])
    start, atoms = kspace_mc.molecules(4, np.array([0, 0, 1, 1]), q, charged_only=True)
    assert start.tolist() == [0, 1, 2] and atoms.tolist() == [0, 2]
    start, atoms = kspace_mc.molecules(4, np.array([0, 0, 1, 1]), q, charged_only=False)
    assert start.tolist() == [0, 2, 4] and atoms.tolist() == [0, 1, 2, 3]


@pytest.mark.parametrize("extra,words", [
    (["--moves", "0"], "--moves"),
    (["--molecules-from", "bad"], "must partition the atoms"),
    (["--molecules-from", "neg"], "molecule ids must be >= 0"),
    (["--molecules-from", "nothere"], "has no such key"),
    (["--check", "100"], "more than the moves to check"),
    (["--kspace", "kspace_nope"], "no such reciprocal strategy"),
    (["--precision", "fixed"], "fixed point"),
    (["--angle", "-1"], "--angle must be"),
    (["--loop", "ring"], "expected block, grid or grid:N"),
    (["--loop", "grid:0"], "N must be a whole number of blocks"),
    (["--loop", "block:4"], "expected block, grid or grid:N"),
    (["--kspace", "kspace_thread_cpu", "--loop", "grid"], "runs its loop on the CPU"),
])
def test_bad_mc_input_ends_in_one_line(tmp_path, extra, words):
    conf, ff = _water(tmp_path, nm=10)
    args = [*MC, "--input", conf, "--forcefield", ff, *extra]
    r = harness(*args)
    assert r.returncode == 2 and words in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_mc_needs_ewald_and_a_periodic_box(tmp_path):
    conf, _ = _water(tmp_path, nm=10)
    (tmp_path / "rf.json").write_text(json.dumps({"types": ["X"], "electrostatics": {"method": "reaction-field",
                                                                                     "cutoff": 1.0}}))
    r = harness(*MC, "--input", conf, "--forcefield", tmp_path / "rf.json")
    assert r.returncode == 2 and "must be ewald" in r.stderr
    x = np.load(conf)
    np.savez(tmp_path / "open.npz", positions=x["positions"], box=x["box"], charges=x["charges"],
             types=x["types"], periodic=np.array([True, False, True]))
    r = harness(*MC, "--input", tmp_path / "open.npz", "--forcefield", tmp_path / "w.json")
    assert r.returncode == 2 and "periodic in all three axes" in r.stderr


def _mc_doc(folder, name, kspace_name, us, charged="only", uncharged=0, gpu="NVIDIA H200", spread=0.01, iqr=None):
    doc = {"kind": "mc", "kspace": kspace_name, "precision": "fp64", "input": "w.npz", "atoms": 9000,
           "molecules": 3000, "kvectors": 5071, "batch": 1000, "batch_us_per_move": us, "batch_spread": spread,
           "uncharged": uncharged, "launch": {"charged": charged}, "device": {"gpu": gpu, "commit": "abc"},
           "meta": {"date": "2026-11-29"}}
    if iqr is not None:
        doc["batch_iqr"] = iqr
    (folder / f"{name}.json").write_text(json.dumps(doc))


def test_the_gomc_claims_read_mc_results(tmp_path):
    """the three GOMC claims get verdicts from mc result files: loop order and staging from one system,
    skipping uncharged atoms only where there are some; another GPU's results are not compared."""
    from harness import claims

    _mc_doc(tmp_path, "kloop", "kspace_thread_kloop", 0.16)
    _mc_doc(tmp_path, "atomic", "kspace_thread_atomic", 0.29)
    _mc_doc(tmp_path, "staged", "kspace_block_staged", 0.165)
    _mc_doc(tmp_path, "other-gpu", "kspace_thread_atomic", 0.01, gpu="another")
    rows = {r["claim"]: r for r in claims.evaluate(claims.load([tmp_path]))}
    assert rows["gomc-loop-order"]["verdict"] == claims.HOLDS and "1.81x" in rows["gomc-loop-order"]["measured"]
    assert rows["gomc-shared-staging"]["verdict"] == claims.FAILS  # 0.16 / 0.165: a tie, never faster
    assert rows["gomc-skip-uncharged"]["verdict"] == claims.UNMEASURED  # no system with uncharged atoms
    _mc_doc(tmp_path, "only", "kspace_block_staged", 0.10, charged="only", uncharged=3000)
    _mc_doc(tmp_path, "all", "kspace_block_staged", 0.15, charged="all", uncharged=3000)
    rows = {r["claim"]: r for r in claims.evaluate(claims.load([tmp_path]))}
    assert rows["gomc-skip-uncharged"]["verdict"] == claims.HOLDS


def test_a_gomc_claim_s_noise_band_is_the_batches_interquartile_range(tmp_path):
    """A 1.2x faster staged kernel: a tie where the results carry only the (max - min) spread of their batches
    (0.3, wider than the gap), faster where they carry the interquartile range (0.03)."""
    from harness import claims

    for iqr, verdict in ((None, claims.FAILS), (0.03, claims.HOLDS)):
        _mc_doc(tmp_path, "kloop", "kspace_thread_kloop", 0.18, spread=0.3, iqr=iqr)
        _mc_doc(tmp_path, "staged", "kspace_block_staged", 0.15, spread=0.3, iqr=iqr)
        rows = {r["claim"]: r for r in claims.evaluate(claims.load([tmp_path]))}
        assert rows["gomc-shared-staging"]["verdict"] == verdict, rows["gomc-shared-staging"]


@pytest.mark.parametrize("spec,words", [
    ("ice", "unknown system 'ice'"),
    ("water:molecules=0", "molecules must be a whole number"),
    ("water:molecules=2.5", "molecules must be a whole number"),
    ("water:box=1.5", "at least 2 (twice the cutoff)"),
    ("water:box=big", "box must be a side in nm"),
    ("water:size=3", "is not one of molecules=, box="),
])
def test_bad_built_in_systems_end_in_one_line(spec, words):
    r = harness("mc", "--system", spec, "--kspace", "kspace_thread_cpu", "--moves", "5", "--batch", "2")
    assert r.returncode == 2 and words in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_a_built_in_system_replaces_the_input_and_is_the_same_for_the_same_seed(tmp_path):
    from harness import mc_systems

    for extra, words in ((["--input", "x.npz"], "without --input"), ([], None)):
        r = harness("mc", "--system", "water4:molecules=40,box=2.5", *extra, "--kspace", "kspace_thread_cpu",
                    "--moves", "20", "--batch", "5", "--kT", "2.5", "--check", "2", "--json", tmp_path / "w.json")
        if words:
            assert r.returncode == 2 and words in r.stderr, r.stderr
            continue
        assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads((tmp_path / "w.json").read_text())
    assert doc["input"] == "water4:molecules=40,box=2.5" and doc["forcefield"] == "built in"
    assert doc["atoms"] == 160 and doc["molecules"] == 40 and doc["uncharged"] == 40
    assert all(c["error"] <= 1e-9 for c in doc["check"])
    name, keys = mc_systems.parse("water:molecules=30,box=3")
    a, b, c = (mc_systems.build(name, keys, seed) for seed in (1, 1, 2))
    assert all(np.array_equal(x, y) for x, y in zip(a, b)) and not np.array_equal(a[0], c[0])
    x, q, ids, L = a
    assert x.shape == (90, 3) and np.all((x >= 0) & (x < L)) and abs(q.sum()) < 1e-12
    for m in range(30):  # each molecule keeps its shape: O-H 0.1 nm, wrapped by minimum image
        d = x[ids == m][1:] - x[ids == m][0]
        d -= L * np.rint(d / L)
        assert np.allclose(np.linalg.norm(d, axis=1), 0.1, atol=1e-3)


def test_the_report_draws_the_moves_with_their_bounds(tmp_path):
    """harness report's MC section: a row per mc result (a CPU one without bounds, GPU ones with the
    float SFU bound of a sincos per moved atom and k, old and new, and the DRAM bound of S and A read once
    per move), and the figure."""
    import importlib

    section = importlib.import_module("harness.report.sections.mc")  # the module (the package exports its function)

    conf, ff = _water(tmp_path, nm=40)
    r = harness(*MC, "--input", conf, "--forcefield", ff, "--molecules-from", "mol", "--json", tmp_path / "cpu.json")
    assert r.returncode == 0, r.stdout + r.stderr
    cpu = json.loads((tmp_path / "cpu.json").read_text())
    assert section.bounds_us(cpu) == (None, None) and section.moved_atoms(cpu) == 3.0
    gpu = {"gpu": "NVIDIA H200", "sms": 132, "sm_clock_mhz": 1980.0, "peak_dram_gbs": 4814}
    for name, p, us in (("kspace_thread_kloop", "fp64", 0.09), ("kspace_thread_kloop", "fp32", 0.05)):
        doc = dict(cpu, kspace=name, precision=p, batch_us_per_move=us, device={**cpu["device"], **gpu})
        (tmp_path / f"{name}-{p}.json").write_text(json.dumps(doc))
    fp32 = json.loads((tmp_path / "kspace_thread_kloop-fp32.json").read_text())
    sfu, dram = section.bounds_us(fp32)
    k = fp32["kvectors"]
    assert sfu == pytest.approx(1e6 * 4 * 3 * k / (16 * 132 * 1980e6)) and dram == pytest.approx(1e6 * k * 12 / 4814e9)
    assert section.bounds_us(dict(fp32, precision="fp64"))[0] is None  # the SFU bound is float's
    assert section.bounds_us(dict(fp32, precision="fp64"))[1] == pytest.approx(1e6 * k * 24 / 4814e9)
    # water4-like: a quarter of the atoms uncharged; charged=only moves the other three, charged=all all four
    four = dict(fp32, atoms=160, uncharged=40, molecules=40)
    assert section.moved_atoms(four) == 3.0 and section.moved_atoms(dict(four, launch={"charged": "all"})) == 4.0
    rep = harness("report", *(tmp_path / f for f in ("cpu.json", "kspace_thread_kloop-fp64.json",
                                                     "kspace_thread_kloop-fp32.json")), "--out", tmp_path, "--name", "rep")
    assert rep.returncode == 0, rep.stderr
    md = (tmp_path / "rep" / "report.md").read_text()
    part = md.split("## Monte-Carlo moves in reciprocal space")[1].split("\n## ")[0]
    assert part.count("kspace_thread_kloop") == 2 and "kspace_thread_cpu" in part and "DRAM bound" in part
    assert (tmp_path / "rep" / "mc-moves.png").is_file()

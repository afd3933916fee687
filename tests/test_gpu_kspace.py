"""The GPU's reciprocal strategies (skipped without a GPU): verify's kspace checks (Madelung for two
alphas, the float64 reference, finite differences in fp64) in every precision they compute in, the
same bits run after run where a strategy says it is deterministic, charged=only equal to
charged=all, and `forces` with a GPU strategy giving the whole Ewald sum."""
from __future__ import annotations

import json

import numpy as np
import pytest

from harness import kspace_check
from strategies import kspace
from tests.inprocess import harness

pytestmark = pytest.mark.gpu
GPU = kspace.names("cuda")


@pytest.fixture(scope="module")
def cases():
    return kspace_check.cases()


@pytest.mark.parametrize("name", GPU)
@pytest.mark.parametrize("precision", ["fp32", "mixed", "fp64"])
def test_each_gpu_kspace_strategy_passes_the_checks(name, precision, cases):
    s = kspace.create(name)
    rows = [r for c in cases for r in kspace_check.check(s, precision, c)]
    bad = [r for r in rows if r["status"] != "pass"]
    assert not bad, kspace_check.table(bad)


ROWS_VARIANTS = [v for v in kspace.KSPACE["kspace_thread_rows"].variants if v]


@pytest.mark.parametrize("launch", ROWS_VARIANTS, ids=lambda v: ",".join(f"{k}={x}" for k, x in v.items()))
@pytest.mark.parametrize("precision", ["fp32", "mixed", "fp64"])
def test_the_rows_variants_pass_the_checks_and_follow_the_default(precision, launch, cases):
    """kspace_thread_rows with either recurrence, mirror on or off (n_z and -n_z from one phase): the
    Madelung, reference and finite-difference checks at the same tolerances, the forces within 1e-5
    (float) or 1e-12 (double) of the default's, and the same bits run after run."""
    s = kspace.create("kspace_thread_rows", **launch)
    rows = [r for c in cases for r in kspace_check.check(s, precision, c)]
    bad = [r for r in rows if r["status"] != "pass"]
    assert not bad, kspace_check.table(bad)
    ions = next(c for c in cases if c["kind"] == "ions")
    a = s.evaluate(ions["x"], ions["q"], ions["ewald"], precision)
    b = kspace.create("kspace_thread_rows").evaluate(ions["x"], ions["q"], ions["ewald"], precision)
    tol = 1e-12 if precision == "fp64" else 1e-5
    assert np.max(np.abs(a.forces - b.forces)) <= tol * np.abs(b.forces).max()
    assert a.energy == pytest.approx(b.energy, rel=tol)
    again = s.evaluate(ions["x"], ions["q"], ions["ewald"], precision)
    assert again.energy == a.energy and np.array_equal(again.forces, a.forces)


@pytest.mark.parametrize("name", [n for n in GPU if kspace.KSPACE[n].deterministic])
def test_deterministic_strategies_repeat_their_bits(name, cases):
    ions = next(c for c in cases if c["kind"] == "ions")
    plan = kspace.create(name).prepare(ions["q"], ions["ewald"], "fp32")
    plan.upload(ions["x"])
    plan.run()
    a = plan.output()
    plan.run()
    b = plan.output()
    assert a.energy == b.energy and np.array_equal(a.forces, b.forces) and np.array_equal(a.virial, b.virial)


@pytest.mark.parametrize("name", GPU)
def test_sending_only_the_charged_particles_changes_nothing(name, cases):
    ions = next(c for c in cases if c["kind"] == "ions")
    only = kspace.create(name, charged="only").evaluate(ions["x"], ions["q"], ions["ewald"], "fp64")
    every = kspace.create(name, charged="all").evaluate(ions["x"], ions["q"], ions["ewald"], "fp64")
    assert only.energy == pytest.approx(every.energy, rel=1e-13)
    assert np.max(np.abs(only.forces - every.forces)) <= 1e-12 * np.abs(every.forces).max()


def test_forces_with_a_gpu_strategy_gives_the_whole_ewald_sum(tmp_path):
    x, q, L = kspace_check.rocksalt()
    np.savez(tmp_path / "nacl.npz", positions=x, box=np.array([L] * 3), types=(q < 0).astype(np.int64), charges=q)
    (tmp_path / "ff.json").write_text(json.dumps({"types": ["Na", "Cl"], "electrostatics": {
        "method": "ewald", "cutoff": L / 2.0, "alpha": 1.375, "kmax": 22}}))
    r = harness("forces", "--strategy", "fullshell_thread_csr", "--input", tmp_path / "nacl.npz", "--forcefield",
                tmp_path / "ff.json", "--precision", "fp64", "--out", tmp_path / "f.npz")
    assert r.returncode == 0, r.stderr
    assert "kspace_thread_rows fp64" in r.stdout
    assert float(np.load(tmp_path / "f.npz")["energy"]) == pytest.approx(-0.5 * len(x) * kspace_check.MADELUNG_ROCKSALT,
                                                                          rel=1e-10)


@pytest.mark.parametrize("name", GPU)
@pytest.mark.parametrize("precision", ["fp32", "mixed", "fp64"])
def test_gpu_moves_agree_with_full_recomputations(tmp_path, name, precision):
    from tests.test_mc import _water

    conf, ff = _water(tmp_path)
    r = harness("mc", "--input", conf, "--forcefield", ff, "--molecules-from", "mol", "--kspace", name,
                "--precision", precision, "--moves", "300", "--batch", "64", "--kT", "2.5", "--check", "4",
                "--json", tmp_path / "mc.json")
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads((tmp_path / "mc.json").read_text())
    assert 0.0 < doc["acceptance"] < 1.0


def test_gpu_moves_of_single_ions_with_uncharged_atoms_sent_or_not(tmp_path):
    from tests.test_mc import _water

    conf, ff = _water(tmp_path, nm=60)
    for charged in ("only", "all"):
        r = harness("mc", "--input", conf, "--forcefield", ff, "--kspace", "kspace_block_staged", "--launch",
                    f"charged={charged}", "--moves", "100", "--batch", "32", "--check", "3")
        assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize("precision", ["fp32", "fp64"])
@pytest.mark.parametrize("loop", ["grid", "grid:3", "grid:1"])
def test_the_grid_loop_takes_the_block_loop_s_decisions(tmp_path, precision, loop):
    """The Metropolis loop on a grid of blocks against the one-block loop, on the same moves from the
    same state: the same decisions, energy changes within rounding, S and the atoms where the block
    loop leaves them; and `mc --loop` passes its float64 checks."""
    from mdcore.ewald import Ewald
    from mdcore.forcefield import load as load_ff
    from strategies import kspace_mc
    from tests.test_mc import _water

    conf, ff = _water(tmp_path, nm=80)
    x = np.load(conf)

    ewald = Ewald.make(load_ff(ff), tuple(x["box"]), (True, True, True))
    start, atoms = kspace_mc.molecules(len(x["charges"]), x["mol"], x["charges"])
    moves = kspace_mc.draw(200, len(start) - 1, 0.05, 0.5, True, seed=4)
    strategy = kspace.create("kspace_thread_rows")
    out = {}
    for form in ("block", loop):
        mover = kspace_mc.create(strategy, x["positions"], x["charges"], ewald, precision, start, atoms, form)
        de, ok = mover.loop(mover.upload_moves(moves), 200, 1.0 / 2.5)
        out[form] = (de.get().astype(np.float64), ok.get(), mover.structure(), mover.positions(), mover.loop_blocks)
    (de0, ok0, s0, x0, _), (de1, ok1, s1, x1, blocks) = out["block"], out[loop]
    assert blocks == int(loop.split(":")[1]) if ":" in loop else blocks >= 1
    assert 0 < ok0.sum() < len(ok0) and np.array_equal(ok0, ok1)
    tol = 1e-12 if precision == "fp64" else 1e-4
    scale = np.abs(de0).max()
    assert np.abs(de1 - de0).max() <= tol * scale
    assert np.abs(s1 - s0).max() <= tol * np.abs(s0).max()
    assert np.abs(x1 - x0).max() <= tol * 10.0
    r = harness("mc", "--input", conf, "--forcefield", ff, "--molecules-from", "mol", "--kspace", "kspace_thread_rows",
                "--precision", precision, "--loop", loop, "--moves", "200", "--batch", "16", "--kT", "2.5", "--check",
                "4", "--json", tmp_path / "mc.json")
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads((tmp_path / "mc.json").read_text())
    assert doc["loop"] == loop and doc["loop_blocks"] == blocks


def test_the_gpu_loop_runs_on_a_grid_without_loop(tmp_path):
    from strategies import cuda
    from tests.test_mc import _water

    conf, ff = _water(tmp_path, nm=30)
    r = harness("mc", "--input", conf, "--forcefield", ff, "--molecules-from", "mol", "--kspace", "kspace_thread_rows",
                "--moves", "40", "--batch", "8", "--check", "2", "--json", tmp_path / "mc.json")
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads((tmp_path / "mc.json").read_text())
    assert doc["loop"] == "grid" and 1 <= doc["loop_blocks"] <= cuda.sm_count()


def test_the_grid_loop_refuses_more_blocks_than_sms(tmp_path):
    from strategies import cuda
    from tests.test_mc import _water

    conf, ff = _water(tmp_path, nm=10)
    r = harness("mc", "--input", conf, "--forcefield", ff, "--kspace", "kspace_thread_rows", "--loop",
                f"grid:{cuda.sm_count() + 1}", "--moves", "10", "--batch", "4")
    assert r.returncode == 2 and "at most one block per SM" in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_openmm_s_ewald_and_pme_rows_beside_the_strategies(tmp_path):
    """ewald --peers openmm: OpenMM's Ewald and PME on the same charges in one run. OpenMM's structure-factor
    kernel runs n_x over 0 .. 2K - 2 where its forces stop at K - 1, so its energy (E_rec + E_self) is the
    strategies' plus those wave vectors' terms: in double it equals that sum, computed here in numpy, to
    1e-9, and the strategies' |n| < K sum to the tail's size (2e-6 at 10,000 charges, under 1e-5). PME's
    within its interpolation error at tolerance 5e-4 (5e-3)."""
    pytest.importorskip("openmm")
    from harness import ewald_bench
    from mdcore.ewald import Ewald

    r = harness("ewald", "--n", "2000", "--precision", "fp64,mixed", "--strategies", "kspace_thread_rows",
                "--peers", "openmm", "--repeat", "3", "--quiet", "--out", tmp_path, "--name", "peers")
    assert r.returncode == 0, r.stdout + r.stderr
    rows = json.loads((tmp_path / "peers.json").read_text())["rows"]
    peers = {(x["strategy"], x["precision"]): x for x in rows if x["backend"] == "peer"}
    assert set(peers) == {(f"openmm-{m}", p) for m in ("ewald", "pme") for p in ("fp64", "mixed")}
    if any(x["status"] != "ok" for x in peers.values()):
        pytest.skip("; ".join({x.get("detail", "") for x in peers.values() if x["status"] != "ok"}))
    assert peers[("openmm-ewald", "fp64")]["energy_error"] < 1e-5
    x, q, L = ewald_bench.system(2000, 100.0, 1)
    ours = ewald_bench.parameters(L, 1.0, 5e-4, None)
    K = ours.kmax[0] + 1
    wide = Ewald(ours.alpha, (2 * K - 2, K - 1, K - 1), ours.coulomb_constant, ours.lengths)
    _, k, a = wide.vectors()
    s = np.exp(1j * (k @ x.T)) @ q
    openmm_sum = float(np.sum(a * np.abs(s) ** 2)) + wide.self_energy(q)
    assert abs(peers[("openmm-ewald", "fp64")]["energy"] / openmm_sum - 1.0) < 1e-9
    assert peers[("openmm-pme", "fp64")]["energy_error"] < 5e-3
    assert all(x["total_ms"] > 0.0 for x in peers.values())

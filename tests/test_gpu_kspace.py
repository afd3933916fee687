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

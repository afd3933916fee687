"""The molecule reference against OpenMM's Reference platform (harness/molecule_peers.py): SPC/E water
as OpenMM point sites on an open cluster agrees to rounding; what OpenMM cannot hold is refused by
name; verify's oracle rows say n/a without OpenMM and FAIL when the reference is off."""
from __future__ import annotations

import numpy as np
import pytest

from harness import molecule_check, molecule_peers
from harness import molecule_scenarios as S
from mdcore import InputError


def test_the_oracle_rows_are_na_without_openmm(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "openmm" else real(name, *a))
    mols, model = S.make("spce_water", "tiny", seed=1)
    rows = molecule_check.oracle_rows({"case": "spce_water N=216", "mols": mols, "model": model})
    assert len(rows) == 1 and rows[0]["status"] == "n/a" and "openmm is not installed" in rows[0]["detail"]


def test_the_cluster_is_open_and_every_pair_interacts():
    mols, model = S.make("spce_water", "tiny", seed=1)
    sub, mdl = molecule_peers.cluster(mols, model, 30)
    c = np.asarray(sub.centres)
    d = np.sqrt(((c[:, None] - c[None]) ** 2).sum(-1)).max()
    assert len(c) == 30 and not any(sub.box.periodic) and mdl.cutoff > d and mdl.method == "none"


def test_openmm_agrees_with_the_reference_on_a_water_cluster_and_the_check_can_fail(monkeypatch):
    pytest.importorskip("openmm")
    mols, model = S.make("spce_water", "tiny", seed=1)
    sub, mdl = molecule_peers.cluster(mols, model, 40)
    got = molecule_peers.oracle(sub, mdl)
    assert got["sites"] == 160 and max(got["forces"], got["torques"], got["energy"]) < 1e-12
    from reference import molecules as ref

    real = ref.compute

    def off(m, mdl_):  # a torque 1e-8 off: the oracle's row fails
        out = real(m, mdl_)
        out["torques"] = out["torques"] * (1.0 + 1e-8)
        return out
    monkeypatch.setattr(ref, "compute", off)
    rows = molecule_check.oracle_rows({"case": "spce_water N=216", "mols": mols, "model": model})
    assert {r["check"]: r["status"] for r in rows} == {"forces": "pass", "torques": "FAIL", "energy": "pass"}


@pytest.mark.parametrize("scenario, words", [("stockmayer", "dipole"), ("two_centre_lj_quadrupole", "quadrupole")])
def test_what_openmm_cannot_hold_is_refused_by_name(scenario, words):
    pytest.importorskip("openmm")
    mols, model = S.make(scenario, "tiny", seed=1)
    sub, mdl = molecule_peers.cluster(mols, model, 8)
    with pytest.raises(InputError, match=words):
        molecule_peers.openmm_system(sub, mdl)
    with pytest.raises(InputError, match="open cluster"):
        molecule_peers.openmm_system(*S.make("spce_water", "tiny", seed=1))


def test_the_nve_report_runs_openmm_s_rigid_water_beside_and_says_why_not_elsewhere(monkeypatch):
    from harness import rigid_md

    mols, model = S.make("stockmayer", "tiny", seed=1)
    rows = rigid_md._openmm_rows(mols, model, ["fp64"], 0.002, 10, 1.35, 5, 1, 0, None)
    assert len(rows) == 1 and rows[0]["status"] == "n/a"  # dipoles, or no OpenMM at all
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "openmm" else real(name, *a))
    rows = rigid_md._openmm_rows(mols, model, ["fp64"], 0.002, 10, 1.35, 5, 1, 0, None)
    assert "openmm is not installed" in rows[0]["detail"]


def test_openmm_s_rigid_water_conserves_its_energy():
    pytest.importorskip("openmm")
    mols, model = S.make("spce_water", "tiny", seed=1)
    system, xyz, _ = molecule_peers.openmm_rigid_system(mols, model)
    assert system.getNumParticles() == 3 * 216 and system.getNumConstraints() == 3 * 216
    assert abs(sum(system.getParticleMass(k)._value for k in range(3)) - 18.0154) < 1e-9
    row = molecule_peers.openmm_rigid_nve(mols, model, 40, 0.005, 2.494, 10, 20)
    assert row["status"] == "ok" and row["ms_per_step"] > 0.0 and abs(row["max_deviation"]) < 0.5
    from mdcore import Box
    from mdcore import molecules as M

    two = M.parse({"components": {"X": {"mass": 2.0, "inertia": [0.0, 0.5, 0.5], "sites": [
        {"kind": "lj", "position": [0, 0, 0.5], "sigma": 1.0, "epsilon": 1.0},
        {"kind": "lj", "position": [0, 0, -0.5], "sigma": 1.0, "epsilon": 1.0}]}},
        "cutoff": 2.5, "coulomb_constant": molecule_peers.ANGSTROM_COULOMB})
    dimers = M.Molecules(np.array([[1.0, 1.0, 1.0], [4.0, 4.0, 4.0]]), np.array([[1.0, 0, 0, 0]] * 2),
                         np.zeros(2, np.int32), Box.make([8.0] * 3, True))
    with pytest.raises(InputError, match="three-atom"):
        molecule_peers.openmm_rigid_system(dimers, two)

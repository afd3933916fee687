"""Rigid molecules (mdcore.molecules) and their float64 reference (reference.molecules): the components
file checked by name, quaternions, and the reference's forces, torques and virial as derivatives of
its energy (in the centres, in small rotations, in the box), its energy unchanged by turning the whole
system, and single-site molecules reducing to mixed Lennard-Jones pairs."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from mdcore import Box, InputError
from mdcore import molecules as M
from reference import molecules as ref

SPCE = {"components": {"spce": {"mass": 18.015, "inertia": [0.6, 1.2, 1.8], "sites": [
    {"kind": "lj", "position": [0.0, 0.0, -0.0646], "sigma": 3.166, "epsilon": 0.650},
    {"kind": "charge", "position": [0.0, 0.0, -0.0646], "charge": -0.8476},
    {"kind": "charge", "position": [0.8165, 0.0, 0.5127], "charge": 0.4238},
    {"kind": "charge", "position": [-0.8165, 0.0, 0.5127], "charge": 0.4238}]}},
    "cutoff": 9.0, "electrostatics": {"method": "reaction-field", "epsilon_rf": "inf"}, "coulomb_constant": 1389.35456}


def _quat(rng, m):
    q = rng.normal(size=(m, 4))
    return q / np.linalg.norm(q, axis=1)[:, None]


def _water(m=40, L=20.0, periodic=True, seed=3):
    rng = np.random.default_rng(seed)
    side = int(math.ceil(m ** (1 / 3)))
    grid = np.array([(i, j, k) for i in range(side) for j in range(side) for k in range(side)][:m], np.float64)
    centres = (grid + 0.5) * (L / side) + rng.normal(scale=0.3, size=(m, 3))
    return M.Molecules(centres, _quat(rng, m), np.zeros(m, np.int32), Box.make([L] * 3, periodic))


def _turn(q, axis, angle):
    """q turned by `angle` about the lab-frame `axis` (the quaternion product r q)."""
    h = 0.5 * angle
    r = np.array([math.cos(h), *(math.sin(h) * np.asarray(axis))])
    w1, x1, y1, z1 = r
    w2, x2, y2, z2 = q
    return np.array([w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2, w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                     w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2, w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2])


def test_rotation_matrices_of_unit_quaternions():
    rng = np.random.default_rng(1)
    R = M.rotation(_quat(rng, 20))
    assert np.allclose(R @ R.transpose(0, 2, 1), np.eye(3)) and np.allclose(np.linalg.det(R), 1.0)
    assert np.allclose(M.rotation(np.array([1.0, 0, 0, 0]))[0], np.eye(3))
    half = M.rotation(np.array([math.cos(math.pi / 4), 0, 0, math.sin(math.pi / 4)]))[0]  # 90 degrees about z
    assert np.allclose(half @ [1.0, 0, 0], [0, 1.0, 0])
    q, off = M.unit_quaternions([[2.0, 0, 0, 0], [1.0, 0, 0, 0]])
    assert off == 1 and np.allclose(q[0], [1, 0, 0, 0])
    with pytest.raises(InputError, match="molecule 1 has the zero quaternion"):
        M.unit_quaternions([[1.0, 0, 0, 0], [0.0, 0, 0, 0]])


def test_forces_torques_and_virial_are_derivatives_of_the_energy():
    model = M.parse(SPCE)
    mols = _water()
    out = ref.compute(mols, model)
    assert out["pairs"] > 100
    h = 1e-6

    def energy(ms):
        return ref.compute(ms, model)["energy"]

    for i in (0, 7, 21):
        for a in range(3):
            cp, cm = mols.centres.copy(), mols.centres.copy()
            cp[i, a] += h
            cm[i, a] -= h
            fd = -(energy(M.Molecules(cp, mols.quaternions, mols.components, mols.box))
                   - energy(M.Molecules(cm, mols.quaternions, mols.components, mols.box))) / (2 * h)
            assert fd == pytest.approx(out["forces"][i, a], abs=1e-6 * np.abs(out["forces"]).max())
            axis = np.eye(3)[a]
            qp, qm = mols.quaternions.copy(), mols.quaternions.copy()
            qp[i], qm[i] = _turn(qp[i], axis, h), _turn(qm[i], axis, -h)
            fd = -(energy(M.Molecules(mols.centres, qp, mols.components, mols.box))
                   - energy(M.Molecules(mols.centres, qm, mols.components, mols.box))) / (2 * h)
            assert fd == pytest.approx(out["torques"][i, a], abs=1e-6 * np.abs(out["torques"]).max())
    L = np.asarray(mols.box.lengths)
    for a in range(3):  # W_aa = -dE/d(strain_aa): the centres and the box stretched, the molecules rigid
        def stretched(s):
            scale = np.ones(3)
            scale[a] += s
            return energy(M.Molecules(mols.centres * scale, mols.quaternions, mols.components, Box.make(L * scale)))
        fd = -(stretched(h) - stretched(-h)) / (2 * h)
        assert fd == pytest.approx(out["virial"][a, a], rel=1e-5, abs=1e-6 * np.abs(out["virial"]).max())
    assert np.allclose(out["forces"].sum(axis=0), 0.0, atol=1e-9 * np.abs(out["forces"]).max())


def test_turning_the_whole_open_system_changes_no_energy():
    model = M.parse(SPCE)
    mols = _water(m=20, L=15.0, periodic=False)
    e0 = ref.compute(mols, model)["energy"]
    axis = np.array([0.3, -0.5, 0.8]) / np.linalg.norm([0.3, -0.5, 0.8])
    R = M.rotation(_turn(np.array([1.0, 0, 0, 0]), axis, 0.7))[0]
    centre = mols.centres.mean(axis=0)
    turned = M.Molecules((mols.centres - centre) @ R.T + centre + 40.0, np.array([_turn(q, axis, 0.7)
                                                                                    for q in mols.quaternions]),
                         mols.components, Box.make([200.0] * 3, False))
    assert ref.compute(turned, model)["energy"] == pytest.approx(e0, rel=1e-12)


def test_single_site_molecules_are_mixed_lennard_jones_pairs():
    model = M.parse({"components": {
        "A": {"mass": 1.0, "inertia": [0, 0, 0], "sites": [{"kind": "lj", "position": [0, 0, 0], "sigma": 1.0,
                                                            "epsilon": 1.0}]},
        "B": {"mass": 1.0, "inertia": [0, 0, 0], "sites": [{"kind": "lj", "position": [0, 0, 0], "sigma": 0.8,
                                                            "epsilon": 0.5}]}},
        "mixing": {"xi": {"A|B": 1.2}, "eta": {"A|B": 0.95}}, "cutoff": 3.0})
    mols = M.Molecules(np.array([[1.0, 1.0, 1.0], [2.1, 1.0, 1.0]]), np.array([[1.0, 0, 0, 0]] * 2),
                       np.array([0, 1], np.int32), Box.make([10.0] * 3))
    out = ref.compute(mols, model)
    eps, sig, r = 1.2 * math.sqrt(0.5), 0.95 * 0.9, 1.1
    s6 = (sig / r) ** 6
    assert out["energy"] == pytest.approx(4 * eps * s6 * (s6 - 1), rel=1e-14)
    assert out["forces"][0, 0] == pytest.approx(-24 * eps * s6 * (2 * s6 - 1) / r, rel=1e-14)
    assert np.allclose(out["torques"], 0.0)


def _with(path, value):
    d = json.loads(json.dumps(SPCE))
    node = d
    *head, last = path
    for k in head:
        node = node[k]
    node[last] = value
    return d


@pytest.mark.parametrize("path,value,words", [
    (("components", "spce", "sites", 0, "kind"), "octupole", "kind 'octupole' is not one of"),
    (("components", "spce", "sites", 0, "sigma"), -1.0, "sigma must be > 0"),
    (("components", "spce", "sites", 1, "charge"), "big", "charge must be a number"),
    (("components", "spce", "mass"), 0.0, "mass must be > 0"),
    (("components", "spce", "inertia"), [1, 2], "inertia must be three numbers"),
    (("mixing",), {"xi": {"spce|ice": 1.0}}, "must name two components"),
    (("cutoff",), None, "cutoff must be a number"),
    (("electrostatics",), {"method": "reaction-field", "epsilon_rf": 0.5}, "epsilon_rf must be >= 1"),
    (("electrostatics",), {"method": "ewald"}, "electrostatics takes method"),
])
def test_bad_components_files_are_refused_by_name(path, value, words):
    with pytest.raises(InputError, match=words):
        M.parse(_with(path, value))


def test_dipole_sites_need_a_direction_and_the_reference_says_what_it_computes():
    d = _with(("components", "spce", "sites", 1), {"kind": "dipole", "position": [0, 0, 0], "direction": [0, 0, 0],
                                                   "moment": 1.0})
    with pytest.raises(InputError, match="direction is the zero vector"):
        M.parse(d)
    d["components"]["spce"]["sites"][1]["direction"] = [0, 0, 2.0]
    model = M.parse(d)
    assert np.allclose(model.components[0].direction[1], [0, 0, 1])
    with pytest.raises(InputError, match="does not compute yet"):
        ref.compute(_water(m=4), model)


def test_molecule_inputs_read_by_component_name(tmp_path):
    model = M.parse(SPCE)
    np.savez(tmp_path / "m.npz", positions=np.zeros((2, 3)) + [[1, 1, 1], [5, 5, 5]],
             quaternions=np.array([[2.0, 0, 0, 0], [1.0, 0, 0, 0]]), components=np.array(["spce", "spce"]),
             box=np.array([20.0, 20.0, 20.0]))
    mols = M.read(tmp_path / "m.npz", model)
    assert mols.normalised == 1 and mols.components.tolist() == [0, 0]
    np.savez(tmp_path / "bad.npz", positions=np.zeros((1, 3)), quaternions=np.array([[1.0, 0, 0, 0]]),
             components=np.array(["ice"]), box=np.array([20.0, 20.0, 20.0]))
    with pytest.raises(InputError, match="component 'ice', which the file does not name"):
        M.read(tmp_path / "bad.npz", model)
    np.savez(tmp_path / "small.npz", positions=np.zeros((1, 3)), quaternions=np.array([[1.0, 0, 0, 0]]),
             components=np.array(["spce"]), box=np.array([10.0, 20.0, 20.0]))
    with pytest.raises(InputError, match="cutoff 9 is beyond half the periodic side along x"):
        M.read(tmp_path / "small.npz", model)

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
    (("switch",), 9.0, "switch 9 must lie below the cutoff 9"), (("switch",), -1.0, "switch must be > 0"),
])
def test_bad_components_files_are_refused_by_name(path, value, words):
    with pytest.raises(InputError, match=words):
        M.parse(_with(path, value))


def test_dipole_sites_need_a_direction():
    d = _with(("components", "spce", "sites", 1), {"kind": "dipole", "position": [0, 0, 0], "direction": [0, 0, 0],
                                                   "moment": 1.0})
    with pytest.raises(InputError, match="direction is the zero vector"):
        M.parse(d)
    d["components"]["spce"]["sites"][1]["direction"] = [0, 0, 2.0]
    assert np.allclose(M.parse(d).components[0].direction[1], [0, 0, 1])


def _site(kind, pos, **kw):
    return {"kind": kind, "position": list(pos), **kw}


# every kind of site on one molecule, off its centre and tilted: each pair term with its lever arm
ALL_KINDS = {"components": {"X": {"mass": 1.0, "inertia": [1, 1, 1], "sites": [
    _site("lj", (0.1, 0.0, 0.0), sigma=1.0, epsilon=1.0),
    _site("charge", (0.0, 0.2, 0.0), charge=0.6),
    _site("charge", (0.0, -0.2, 0.1), charge=-0.6),
    _site("dipole", (0.1, 0.1, -0.1), direction=[0.3, 0.2, 1.0], moment=0.8),
    _site("quadrupole", (-0.1, 0.0, 0.1), direction=[1.0, -0.4, 0.2], moment=0.7)]}},
    "cutoff": 3.0, "electrostatics": {"method": "reaction-field", "epsilon_rf": 40.0}}


def check_derivatives(mols, model, out, which, h=1e-6):
    """The reference's forces and torques on molecules `which` against central differences of its energy
    in their centres and in small rotations about the lab axes."""
    def energy(c=None, q=None):
        return ref.compute(M.Molecules(mols.centres if c is None else c, mols.quaternions if q is None else q,
                                       mols.components, mols.box), model)["energy"]

    for i in which:
        for a in range(3):
            cp, cm = mols.centres.copy(), mols.centres.copy()
            cp[i, a] += h
            cm[i, a] -= h
            assert -(energy(c=cp) - energy(c=cm)) / (2 * h) == pytest.approx(
                out["forces"][i, a], abs=1e-6 * np.abs(out["forces"]).max())
            qp, qm = mols.quaternions.copy(), mols.quaternions.copy()
            qp[i], qm[i] = _turn(qp[i], np.eye(3)[a], h), _turn(qm[i], np.eye(3)[a], -h)
            assert -(energy(q=qp) - energy(q=qm)) / (2 * h) == pytest.approx(
                out["torques"][i, a], abs=1e-6 * np.abs(out["torques"]).max())


def test_every_site_kind_gives_forces_and_torques_that_are_derivatives_of_the_energy():
    model = M.parse(ALL_KINDS)
    rng = np.random.default_rng(5)
    m, L = 27, 7.0
    grid = np.array([(i, j, k) for i in range(3) for j in range(3) for k in range(3)], np.float64)
    mols = M.Molecules((grid + 0.5) * (L / 3) + rng.normal(scale=0.15, size=(m, 3)), _quat(rng, m),
                       np.zeros(m, np.int32), Box.make([L] * 3))
    out = ref.compute(mols, model)
    h = 1e-6

    check_derivatives(mols, model, out, (0, 13), h)
    assert np.allclose(out["forces"].sum(axis=0), 0.0, atol=1e-9 * np.abs(out["forces"]).max())


def _pair_energy(doc, e1, e2, r):
    """The energy of two molecules of doc's components A and B, A at the origin, B at r, oriented so that
    their body z axes point along e1 and e2 (open boundaries, no cutoff in reach)."""
    model = M.parse(doc)

    def quat(e):  # the rotation taking z to e
        e = np.asarray(e, float) / np.linalg.norm(e)
        axis = np.cross([0.0, 0.0, 1.0], e)
        s, c = np.linalg.norm(axis), e[2]
        if s < 1e-12:
            return np.array([1.0, 0, 0, 0]) if c > 0 else np.array([0.0, 1.0, 0, 0])
        return _turn(np.array([1.0, 0, 0, 0]), axis / s, math.atan2(s, c))

    mols = M.Molecules(np.array([[500.0, 500.0, 500.0], np.add([500.0, 500.0, 500.0], r)]),
                       np.array([quat(e1), quat(e2)]), np.array([0, 1], np.int32), Box.make([1000.0] * 3, False))
    return ref.compute(mols, model)["energy"]


MULTIPOLE = {"charge": lambda d: [_site("charge", (0, 0, 0), charge=1.3)],
             "dipole": lambda d: [_site("dipole", (0, 0, 0), direction=[0, 0, 1], moment=0.9)],
             "quadrupole": lambda d: [_site("quadrupole", (0, 0, 0), direction=[0, 0, 1], moment=0.7)]}
CHARGES = {"charge": lambda d: [_site("charge", (0, 0, 0), charge=1.3)],
           "dipole": lambda d: [_site("charge", (0, 0, d / 2), charge=0.9 / d), _site("charge", (0, 0, -d / 2),
                                                                                     charge=-0.9 / d)],
           "quadrupole": lambda d: [_site("charge", (0, 0, d), charge=0.35 / d ** 2),
                                    _site("charge", (0, 0, -d), charge=0.35 / d ** 2),
                                    _site("charge", (0, 0, 0), charge=-0.7 / d ** 2)]}


@pytest.mark.parametrize("a,b", [("charge", "dipole"), ("dipole", "charge"), ("dipole", "dipole"),
                                 ("charge", "quadrupole"), ("quadrupole", "charge"), ("dipole", "quadrupole"),
                                 ("quadrupole", "dipole"), ("quadrupole", "quadrupole")])
def test_each_multipole_term_is_the_far_field_of_its_point_charges(a, b):
    def doc(build, d):
        return {"components": {"A": {"mass": 1.0, "inertia": [1, 1, 1], "sites": build[a](d)},
                               "B": {"mass": 1.0, "inertia": [1, 1, 1], "sites": build[b](d)}}, "cutoff": 400.0}
    rng = np.random.default_rng(11)
    for _ in range(4):
        e1, e2, r = rng.normal(size=3), rng.normal(size=3), rng.normal(size=3)
        r *= 12.0 / np.linalg.norm(r)
        want = _pair_energy(doc(CHARGES, 0.02), e1, e2, r)  # (d / r)^2 ~ 3e-6; rounding of the charges' sum ~1e-6
        got = _pair_energy(doc(MULTIPOLE, 0.02), e1, e2, r)
        assert got == pytest.approx(want, rel=1e-4)


def test_the_dipoles_reaction_field_and_its_self_term():
    """Two dipoles inside the cutoff with a conducting reaction field: u = m m (G / r^3 - 3 A B / r^5 - G / rc^3)
    and the self terms -m^2 / (2 rc^3) each."""
    doc = {"components": {"A": {"mass": 1.0, "inertia": [1, 1, 1], "sites": MULTIPOLE["dipole"](0)},
                          "B": {"mass": 1.0, "inertia": [1, 1, 1], "sites": MULTIPOLE["dipole"](0)}},
           "cutoff": 5.0, "electrostatics": {"method": "reaction-field", "epsilon_rf": "inf"}}
    r = np.array([1.0, 2.0, 0.5])
    got = _pair_energy(doc, [0, 0, 1], [0, 0, 1], r)
    R = np.linalg.norm(r)
    m2, rc3 = 0.81, 125.0
    want = m2 * (1 / R ** 3 - 3 * 0.25 / R ** 5 - 1 / rc3) - 2 * m2 / (2 * rc3)
    assert got == pytest.approx(want, rel=1e-13)


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


def test_forces_writes_forces_and_torques_of_molecules(tmp_path):
    from tests.inprocess import harness

    (tmp_path / "spce.json").write_text(json.dumps(SPCE))
    mols = _water(m=30)
    np.savez(tmp_path / "w.npz", positions=mols.centres, quaternions=mols.quaternions * 2.0,
             components=np.array(["spce"] * 30), box=np.array(mols.box.lengths))
    r = harness("forces", "--strategy", "reference", "--molecules", tmp_path / "spce.json", "--input",
                tmp_path / "w.npz", "--out", tmp_path / "f.npz")
    assert r.returncode == 0, r.stderr
    assert "30 quaternion(s)" in r.stderr and "were normalised" in r.stderr
    got, want = np.load(tmp_path / "f.npz"), ref.compute(mols, M.parse(SPCE))
    assert np.allclose(got["torques"], want["torques"], rtol=0, atol=1e-12 * np.abs(want["torques"]).max())
    assert float(got["energy"]) == pytest.approx(want["energy"], rel=1e-13)
    r = harness("forces", "--strategy", "clusterpair_thread_cpu", "--molecules", tmp_path / "spce.json", "--input",
                tmp_path / "w.npz", "--out", tmp_path / "g.npz")
    assert r.returncode == 2 and not (tmp_path / "g.npz").exists()
    assert "no molecule form for clusterpair_thread_cpu: its clusters of 8" in r.stderr
    (tmp_path / "bad.json").write_text(json.dumps(_with(("components", "spce", "sites", 0, "kind"), "octupole")))
    r = harness("forces", "--strategy", "reference", "--molecules", tmp_path / "bad.json", "--input",
                tmp_path / "w.npz", "--out", tmp_path / "g.npz")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "octupole" in r.stderr


def test_sites_of_two_molecules_too_close_to_compute_are_refused_in_one_line(tmp_path):
    """Two molecules at one centre and orientation: every site of one on a site of the other (a pair with
    no direction: the CPU traversals stopped inside numba). Refused by the input's checks in every
    precision; two sites 0.005 apart (within float's Lennard-Jones overflow, 0.0105 for SPC/E's oxygens)
    only where the compute type is float."""
    from strategies import molecules as traversals
    from tests.inprocess import harness

    model = M.parse(SPCE)
    mols = _water(m=30)
    x, q = mols.centres.copy(), mols.quaternions.copy()
    x[7], q[7] = x[3], q[3]
    (tmp_path / "spce.json").write_text(json.dumps(SPCE))
    np.savez(tmp_path / "w.npz", positions=x, quaternions=q, components=np.array(["spce"] * 30),
             box=np.array(mols.box.lengths))
    for strategy in ("reference", "fullshell_thread_cpu"):
        r = harness("forces", "--strategy", strategy, "--molecules", tmp_path / "spce.json", "--input",
                    tmp_path / "w.npz", "--out", tmp_path / "f.npz")
        lines = r.stderr.strip().splitlines()
        assert r.returncode == 2 and len(lines) == 1, r.stderr
        assert "molecules 3 and 7: two of their sites coincide (distance 0)" in lines[0]
        assert not (tmp_path / "f.npz").exists()
    x[7] = x[3] + [0.005, 0.0, 0.0]
    near = M.Molecules(x, q, mols.components, mols.box)
    near.check(model)  # float64 computes it
    assert np.isfinite(traversals.evaluate("fullshell_thread_cpu", near, model, "fp64")["energy"])
    for precision in ("fp32", "mixed"):
        with pytest.raises(InputError, match=rf"molecules 3 and 7: two of their sites are 0.005 apart; closer than "
                                             rf"0.0105 .* float \({precision}\)"):
            traversals.evaluate("fullshell_thread_cpu", near, model, precision)

"""Rigid-molecule MD (mdcore.rigid, NO_SQUISH) with the float64 reference's forces and torques, and
the molecule scenarios: energy error second order in the step, time reversal back to the start, a
free rotor's invariants, a linear molecule's axis left alone; scenarios seeded, written and read
back, bad sizes refused in one line."""
import numpy as np
import pytest

from harness import molecule_scenarios as S
from mdcore import Box, InputError, molecule_library, molecules, rigid
from reference.molecules import compute


def _cluster(name, n=20, temperature=1.0, seed=3):
    """n molecules of a scenario's liquid around its middle, in an open box without cutoff."""
    mols, _ = S.make(name, "tiny", seed=seed)
    c = mols.centres
    pick = np.argsort(np.linalg.norm(c - c.mean(0), axis=1))[:n]
    model = molecules.parse(molecule_library.components_file(S.SCENARIOS[name].model, cutoff=1e3))
    box = Box.make([1e4] * 3, False)
    comps = mols.components[pick]
    comp = model.components[0]
    rng = np.random.default_rng(seed)
    p = rng.normal(0.0, np.sqrt(comp.mass * temperature), (n, 3))
    p -= p.mean(0)
    lb = rng.normal(0.0, 1.0, (n, 3)) * np.sqrt(comp.inertia * temperature)
    state = rigid.RigidState(c[pick], mols.quaternions[pick], p, lb, np.full(n, comp.mass),
                             np.tile(comp.inertia, (n, 1)))

    def forces(r, q):
        out = compute(molecules.Molecules(r, q, comps, box), model)
        return out["forces"], out["torques"], out["energy"]
    return state, forces


def _energy_error(name, temperature, dt, time):
    state, forces = _cluster(name, temperature=temperature)
    energies = []
    rigid.run(state, forces, dt, int(round(time / dt)), sample=5,
              on_sample=lambda step, u, kt, kr: energies.append(u + kt + kr))
    e = np.array(energies)
    return float(np.max(np.abs(e - e[0])))


def test_the_last_step_is_always_a_sample():
    """A run shorter than its sample interval still has two samples: the drift is measured, not 0."""
    from harness import molecule_scenarios as S
    from harness import rigid_md

    state, forces = _cluster("spce_water", temperature=2.5)
    steps = []
    rigid.run(state, forces, 0.01, 7, sample=3, on_sample=lambda step, u, kt, kr: steps.append(step))
    assert steps == [0, 3, 6, 7]
    mols, model = S.make("spce_water", "tiny", seed=4)
    out = rigid_md.run(mols, model, "fullshell_thread_cpu", 0.01, 5, 2.494, 100, 2, precision="fp64")
    assert [s["step"] for s in out["samples"]] == [0, 5]
    assert out["summary"]["drift_per_molecule_per_time"] != 0.0 and out["summary"]["max_deviation_per_molecule"] > 0.0


@pytest.mark.parametrize("name, temperature, dt", [("stockmayer", 1.0, 0.002), ("spce_water", 2.5, 0.01),
                                                   ("two_centre_lj_quadrupole", 0.6, 0.02)])
def test_the_energy_error_falls_with_the_square_of_the_step(name, temperature, dt):
    coarse = _energy_error(name, temperature, dt, 100 * dt)
    fine = _energy_error(name, temperature, dt / 2, 100 * dt)
    assert coarse > 0.0
    assert 3.0 < coarse / fine < 5.0  # second order: a wrong torque or kick breaks it


def test_reversing_the_momenta_runs_back_to_the_start():
    state, forces = _cluster("spce_water", temperature=2.5)
    r0, q0 = state.r.copy(), state.q.copy()
    rigid.run(state, forces, 0.005, 40)
    assert np.max(np.abs(state.r - r0)) > 1e-3  # it moved
    state.p *= -1.0
    state.pi *= -1.0
    rigid.run(state, forces, 0.005, 40)
    assert np.max(np.abs(state.r - r0)) < 1e-9
    assert np.max(np.abs(state.q - q0)) < 1e-9


def test_a_free_rotor_keeps_its_energy_and_its_angular_momentum_in_the_lab():
    rng = np.random.default_rng(5)
    q = S.random_quaternions(rng, 4)
    inertia = np.array([[1.0, 2.0, 3.0], [0.6, 1.9, 1.3], [2.0, 2.0, 0.5], [1.0, 1.0, 1.0]])
    state = rigid.RigidState(np.zeros((4, 3)), q, np.zeros((4, 3)), rng.normal(0, 1, (4, 3)), np.ones(4), inertia)
    lab = lambda: np.einsum("mij,mj->mi", molecules.rotation(state.q), rigid.body_angular_momentum(state.q, state.pi))
    e0, l0 = state.kinetic()[1], lab()
    zero = lambda r, q: (np.zeros((4, 3)), np.zeros((4, 3)), 0.0)
    rigid.run(state, zero, 0.01, 500)
    assert abs(state.kinetic()[1] - e0) < 1e-3 * e0  # the split rotor is not exact, its error bounded
    assert np.max(np.abs(lab() - l0)) < 1e-9  # each sub-rotation keeps L (to rounding)
    assert np.allclose(np.linalg.norm(state.q, axis=1), 1.0, atol=1e-12)


def test_a_linear_molecule_gets_no_spin_about_its_axis():
    state, forces = _cluster("two_centre_lj_quadrupole", temperature=0.6)
    rigid.run(state, forces, 0.02, 30)
    assert np.max(np.abs(rigid.body_angular_momentum(state.q, state.pi)[:, 2])) < 1e-12


def test_molecule_scenarios_are_seeded_and_read_back(tmp_path):
    a, model = S.make("spce_water", "tiny", seed=4)
    b, _ = S.make("spce_water", "tiny", seed=4)
    c, _ = S.make("spce_water", "tiny", seed=5)
    assert np.array_equal(a.centres, b.centres) and np.array_equal(a.quaternions, b.quaternions)
    assert not np.array_equal(a.centres, c.centres)
    assert len(a.centres) == S.SIZES["tiny"]
    assert np.allclose(np.linalg.norm(a.quaternions, axis=1), 1.0)
    S.write(tmp_path / "w.npz", a, model)
    back = molecules.read(tmp_path / "w.npz", model)
    assert np.array_equal(back.centres, a.centres) and np.array_equal(back.components, a.components)
    # the density asked for: 0.997 g/cm^3 of water
    assert abs(len(a.centres) / a.box.volume * 18.0154 / 0.602214076 - 0.997) < 1e-3


@pytest.mark.parametrize("name, size, words", [
    ("spce_water", 50, "shorter than twice the cutoff"), ("spce_water", "lots", "molecule count"),
    ("argon", "tiny", "unknown molecule scenario"), ("stockmayer", 1.5, "whole number")])
def test_bad_molecule_scenarios_are_refused_by_name(name, size, words):
    with pytest.raises(InputError, match=words):
        S.make(name, size)


def test_the_library_models_sit_on_their_principal_axes():
    for name in molecule_library.NAMES:
        comp = molecules.parse(molecule_library.components_file(name)).components[0]
        assert np.all(comp.inertia >= 0.0)
        if name != "stockmayer":  # atoms' masses: the sites' mass-weighted centre is the origin
            assert abs(comp.position[comp.kinds.index("lj")][2]) < 1.0


def test_export_writes_a_molecule_scenario_that_forces_reads_back(tmp_path, capsys):
    from harness import cli

    out = tmp_path / "w.npz"
    assert cli.main(["export", "--scenario", "two_centre_lj_quadrupole", "--n", "tiny", "--seed", "2",
                     "--out", str(out)]) == 0
    comps = tmp_path / "w.components.json"
    assert comps.is_file()
    assert cli.main(["forces", "--molecules", str(comps), "--input", str(out), "--strategy", "reference",
                     "--out", str(tmp_path / "f.npz")]) == 0
    mols, model = S.make("two_centre_lj_quadrupole", "tiny", seed=2)
    want = compute(mols, model)
    with np.load(tmp_path / "f.npz") as f:
        # the same molecules (read back, the quaternions normalised once more: to the last bits)
        np.testing.assert_allclose(f["torques"], want["torques"], rtol=1e-9, atol=1e-9 * np.abs(want["torques"]).max())
        assert float(f["energy"]) == pytest.approx(want["energy"], rel=1e-12)


@pytest.mark.parametrize("scenario, out, words", [
    ("spce_water", "w.xyz", "written as .npz"), ("stockmayer:mu=2", "w.npz", "takes switch="),
    ("spce_water", "w.npz", "shorter than twice the cutoff")])
def test_export_refuses_bad_molecule_requests_in_one_line(tmp_path, capsys, scenario, out, words):
    from harness import cli

    n = "20" if "cutoff" in words else "tiny"
    assert cli.main(["export", "--scenario", scenario, "--n", n, "--out", str(tmp_path / out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0]
    assert not any(tmp_path.iterdir())  # nothing half-written

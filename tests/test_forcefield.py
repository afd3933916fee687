"""The force-field file (mdcore.forcefield) and its float64 reference (reference.forcefield): every
bad value refused by name, the mixing rules and electrostatic constants, and the reference against
analytic pairs, finite differences, translations and the single-type Lennard-Jones reference."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

import reference
from mdcore import Box, LennardJones, Problem
from mdcore.forcefield import ForceFieldError, load, parse
from reference import forcefield as ref_ff

EXAMPLE = {"types": ["A", "B"],
           "lj": {"sigma": [1.0, 0.88], "epsilon": [1.0, 0.5], "mixing": "lorentz-berthelot", "cutoff": 2.5,
                  "shift": False},
           "electrostatics": {"method": "reaction-field", "epsilon_rf": 78.3, "cutoff": 2.5},
           "coulomb_constant": 1.0}
KOB_ANDERSEN = {"types": ["A", "B"],
                "lj": {"pair_sigma": [[1.0, 0.8], [0.8, 0.88]], "pair_epsilon": [[1.0, 1.5], [1.5, 0.5]],
                       "cutoff": 2.5, "cutoff_in_sigma": True, "shift": True}}


def _with(base: dict, path: str, value) -> dict:
    d = json.loads(json.dumps(base))
    *head, last = path.split(".")
    node = d
    for k in head:
        node = node[k]
    if value is _DROP:
        node.pop(last)
    else:
        node[last] = value
    return d


_DROP = object()


def test_the_example_mixes_lorentz_berthelot():
    ff = parse(EXAMPLE)
    assert ff.types == ("A", "B") and ff.method == "reaction-field"
    assert ff.pair_sigma[0, 1] == pytest.approx(0.94) and ff.pair_epsilon[0, 1] == pytest.approx(math.sqrt(0.5))
    e, rc = 78.3, 2.5
    assert ff.k_rf == pytest.approx((e - 1) / ((2 * e + 1) * rc ** 3))
    assert ff.c_rf == pytest.approx(1 / rc + ff.k_rf * rc ** 2)


def test_geometric_mixing_and_an_infinite_dielectric():
    ff = parse(_with(_with(EXAMPLE, "lj.mixing", "geometric"), "electrostatics.epsilon_rf", "inf"))
    assert ff.pair_sigma[0, 1] == pytest.approx(math.sqrt(0.88))
    assert ff.k_rf == pytest.approx(1 / (2 * 2.5 ** 3))


def test_kob_andersen_tables_and_cutoffs_in_sigma():
    ff = parse(KOB_ANDERSEN)
    assert ff.pair_epsilon[0, 1] == 1.5 and ff.pair_cutoff[0, 1] == pytest.approx(2.0)
    assert ff.pair_cutoff[1, 1] == pytest.approx(2.2) and ff.cutoff == pytest.approx(2.5)
    assert ff.lj_shift()[0, 1] == pytest.approx(4 * 1.5 * ((0.8 / 2.0) ** 12 - (0.8 / 2.0) ** 6))


def test_ewald_alpha_from_the_tolerance_as_openmm_chooses_it():
    ff = parse(_with(EXAMPLE, "electrostatics", {"method": "ewald", "cutoff": 1.2, "tolerance": 5e-4}))
    assert ff.alpha == pytest.approx(math.sqrt(-math.log(2 * 5e-4)) / 1.2)


@pytest.mark.parametrize("path, value, words", [
    ("lj.sigma", [-1.0, 0.88], "lj.sigma[0] must be finite and > 0"),
    ("lj.epsilon", [1.0], "lj.epsilon must list one value per type (2)"),
    ("lj.mixing", "arithmetic", "lj.mixing 'arithmetic'"),
    ("lj.cutoff", 0, "lj.cutoff must be finite and > 0"),
    ("lj.shift", "yes", "lj.shift must be true or false"),
    ("lj.width", 1, "lj: unknown key(s) width"),
    ("types", ["A", "A"], "type 'A' is listed twice"),
    ("types", [], "types must be a non-empty list"),
    ("colour", "red", "unknown key(s) colour"),
    ("electrostatics.method", "pme", "electrostatics.method 'pme'"),
    ("electrostatics.epsilon_rf", 0.5, "epsilon_rf must be >= 1"),
    ("electrostatics.cutoff", _DROP, "electrostatics.cutoff must be a number"),
    ("electrostatics.alpha", 3.0, "alpha and tolerance belong to ewald"),
    ("coulomb_constant", -1.0, "coulomb_constant must be finite and > 0"),
])
def test_each_bad_value_is_named(path, value, words):
    with pytest.raises(ForceFieldError, match=None) as e:
        parse(_with(EXAMPLE, path, value), source="ff.json")
    assert words in str(e.value) and str(e.value).startswith("force field ff.json: ")


@pytest.mark.parametrize("tables, words", [
    ({"pair_sigma": [[1.0, 0.8]], "pair_epsilon": [[1.0, 1.5], [1.5, 0.5]]}, "lj.pair_sigma must be a square table"),
    ({"pair_sigma": [[1.0, 0.8], [0.7, 0.88]], "pair_epsilon": [[1.0, 1.5], [1.5, 0.5]]},
     "lj.pair_sigma is not symmetric: [0][1] = 0.8 but [1][0] = 0.7"),
    ({"pair_sigma": [[1.0, 0.8], [0.8, 0.88]]}, "pair_sigma and pair_epsilon come together"),
    ({"pair_sigma": [[1.0, 0.8], [0.8, 0.88]], "pair_epsilon": [[1.0, 1.5], [1.5, 0.5]], "sigma": [1, 1]},
     "either per-type sigma and epsilon"),
])
def test_bad_tables_are_named(tables, words):
    with pytest.raises(ForceFieldError) as e:
        parse({"types": ["A", "B"], "lj": {"cutoff": 2.5, **tables}})
    assert words in str(e.value)


def test_ewald_takes_alpha_or_tolerance_not_both():
    for es in ({"method": "ewald", "cutoff": 1.0}, {"method": "ewald", "cutoff": 1.0, "alpha": 3, "tolerance": 1e-4}):
        with pytest.raises(ForceFieldError, match="one of alpha"):
            parse(_with(EXAMPLE, "electrostatics", es))
    with pytest.raises(ForceFieldError, match="tolerance must be in"):
        parse(_with(EXAMPLE, "electrostatics", {"method": "ewald", "cutoff": 1.0, "tolerance": 0.7}))


def test_files_that_cannot_be_read(tmp_path):
    with pytest.raises(ForceFieldError, match="no such file"):
        load(tmp_path / "none.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{\"types\": [")
    with pytest.raises(ForceFieldError, match="not valid JSON"):
        load(bad)
    good = tmp_path / "ff.json"
    good.write_text(json.dumps(EXAMPLE))
    assert load(good).source == str(good)


def test_particles_the_file_cannot_compute():
    ff = parse(EXAMPLE, source="ff.json")
    box, per = (10.0, 10.0, 10.0), (True, True, True)
    with pytest.raises(ForceFieldError, match="particle 1 has type 'C', which the file does not list"):
        ff.type_index(["A", "C"])
    with pytest.raises(ForceFieldError, match="needs charges"):
        ff.check_particles(np.array([0, 1]), None, box, per)
    lj_only = parse(_with(EXAMPLE, "electrostatics", {"method": "none"}))
    with pytest.raises(ForceFieldError, match="carry charges but electrostatics.method is none"):
        lj_only.check_particles(np.array([0, 1]), np.array([1.0, -1.0]), box, per)
    with pytest.raises(ForceFieldError, match="beyond half the periodic side along x"):
        ff.check_particles(np.array([0, 1]), np.array([1.0, -1.0]), (4.0, 10.0, 10.0), per)
    ew = parse(_with(EXAMPLE, "electrostatics", {"method": "ewald", "cutoff": 2.5, "alpha": 1.0}))
    with pytest.raises(ForceFieldError, match="net charge is 1"):
        ew.check_particles(np.array([0, 1]), np.array([1.0, 0.0]), box, per)
    parse(_with(_with(EXAMPLE, "electrostatics", {"method": "ewald", "cutoff": 2.5, "alpha": 1.0}),
                "allow_net_charge", True)).check_particles(np.array([0, 1]), np.array([1.0, 0.0]), box, per)
    ff.check_particles(np.array([0, 1]), np.array([1.0, -1.0]), box, per)


# --- the reference -------------------------------------------------------------------------------

def _two(r, ff, ta=0, tb=1, qa=1.0, qb=-1.0):
    x = np.array([[5.0, 5.0, 5.0], [5.0 + r, 5.0, 5.0]])
    return ref_ff.compute(x, (20.0, 20.0, 20.0), (True, True, True), np.array([ta, tb]), np.array([qa, qb]), ff)


@pytest.mark.parametrize("method", ["reaction-field", "ewald"])
def test_two_particles_give_the_formulas(method):
    es = {"method": method, "cutoff": 2.5, **({"epsilon_rf": 78.3} if method == "reaction-field" else {"alpha": 1.3})}
    ff = parse(_with(_with(EXAMPLE, "electrostatics", es), "coulomb_constant", 138.935456))
    r, k, s, e = 1.1, 138.935456, 0.94, math.sqrt(0.5)
    out = _two(r, ff)
    u_lj = 4 * e * ((s / r) ** 12 - (s / r) ** 6)
    f_lj = 24 * e * (2 * (s / r) ** 12 - (s / r) ** 6) / r
    if method == "reaction-field":
        u_c = -k * (1 / r + ff.k_rf * r * r - ff.c_rf)
        f_c = -k * (1 / r ** 2 - 2 * ff.k_rf * r)
    else:
        a = 1.3
        u_c = -k * math.erfc(a * r) / r
        f_c = -k * (math.erfc(a * r) / r ** 2 + 2 * a / math.sqrt(math.pi) * math.exp(-a * a * r * r) / r)
    assert out["energy"] == pytest.approx(u_lj + u_c, rel=1e-13)
    assert out["forces"][1, 0] == pytest.approx(f_lj + f_c, rel=1e-13)  # on the particle at +r: along +x
    assert out["forces"][0, 0] == -out["forces"][1, 0] and out["pairs"] == 1
    assert out["virial"][0, 0] == pytest.approx(r * (f_lj + f_c), rel=1e-13)


def test_reaction_field_energy_vanishes_at_its_cutoff():
    ff = parse(_with(_with(EXAMPLE, "lj.cutoff", 0.5), "electrostatics.cutoff", 2.0))
    assert abs(_two(2.0 - 1e-9, ff, 0, 0)["energy"]) < 1e-8
    assert _two(2.0 + 1e-9, ff, 0, 0)["pairs"] == 0


def _random_system(n=120, seed=5, L=8.0):
    rng = np.random.default_rng(seed)
    g = int(round(n ** (1 / 3))) + 1
    grid = np.stack(np.meshgrid(*[np.arange(g)] * 3, indexing="ij"), -1).reshape(-1, 3)[:n] * (L / g)
    x = grid + rng.uniform(-0.08, 0.08, grid.shape) * (L / g)
    types = rng.integers(0, 2, n)
    q = np.where(np.arange(n) % 2 == 0, 0.7, -0.7)
    return x % L, (L, L, L), types, q


@pytest.mark.parametrize("es", [{"method": "reaction-field", "epsilon_rf": 20.0, "cutoff": 2.5},
                                {"method": "ewald", "cutoff": 2.5, "alpha": 1.1}, {"method": "none"}])
def test_forces_are_minus_the_energy_gradient(es):
    ff = parse(_with(_with(EXAMPLE, "electrostatics", es), "lj.shift", True))
    x, L, t, q = _random_system()
    q = q if es["method"] != "none" else None
    out = ref_ff.compute(x, L, (True,) * 3, t, q, ff)
    h = 1e-6
    for i in (0, 17, 63):
        for a in range(3):
            xp, xm = x.copy(), x.copy()
            xp[i, a] += h
            xm[i, a] -= h
            du = ref_ff.compute(xp, L, (True,) * 3, t, q, ff)["energy"] - ref_ff.compute(xm, L, (True,) * 3, t, q,
                                                                                        ff)["energy"]
            assert -du / (2 * h) == pytest.approx(out["forces"][i, a], rel=2e-6, abs=2e-6)


def test_a_translation_changes_nothing_and_the_forces_sum_to_zero():
    ff = parse(_with(EXAMPLE, "electrostatics", {"method": "ewald", "cutoff": 2.5, "alpha": 1.1}))
    x, L, t, q = _random_system()
    a = ref_ff.compute(x, L, (True,) * 3, t, q, ff)
    b = ref_ff.compute((x + np.array([1.7, -3.2, 0.4])) % L[0], L, (True,) * 3, t, q, ff)
    assert np.allclose(a["forces"], b["forces"], rtol=1e-10, atol=1e-10)
    assert b["energy"] == pytest.approx(a["energy"], rel=1e-12) and a["pairs"] == b["pairs"]
    assert np.abs(a["forces"].sum(axis=0)).max() < 1e-9 * np.abs(a["forces"]).max()


def test_one_type_without_charges_is_the_lennard_jones_reference():
    """Two references written apart agree: the force-field one with a single type, and the
    Lennard-Jones one every strategy is verified against."""
    ff = parse({"types": ["Ar"], "lj": {"sigma": [1.0], "epsilon": [1.0], "cutoff": 2.5, "shift": True}})
    x, L, _, _ = _random_system(200, seed=9, L=9.0)
    out = ref_ff.compute(x, L, (True,) * 3, np.zeros(len(x), int), None, ff)
    lj = reference.compute(Problem.make(x, Box(L, (True,) * 3), LennardJones(cutoff=2.5, shift=True), "fp64"))
    assert np.allclose(out["forces"], lj.forces, rtol=1e-12, atol=1e-12)
    assert out["energy"] == pytest.approx(lj.energy, rel=1e-12) and out["pairs"] == lj.pairs
    assert np.allclose(out["virial"], lj.virial, rtol=1e-12)


# --- particles in files, and `forces --forcefield` -----------------------------------------------

def _typed_files(tmp_path, scenario="lj_liquid", size="tiny"):
    from harness import io, scenarios

    p = scenarios.make(scenario, size)
    species = ["A" if i % 5 else "B" for i in range(p.n)]
    q = np.where(np.arange(p.n) % 2 == 0, 0.5, -0.5)
    parts = io.Particles(p.positions, p.box, species=species, charges=q)
    for name in ("typed.xyz", "typed.npz"):
        io.write_configuration(tmp_path / name, p.positions, p.box, parts)
    (tmp_path / "ff.json").write_text(json.dumps(EXAMPLE))
    return p, species, q


def test_types_and_charges_round_trip_through_both_formats(tmp_path):
    from harness import io

    p, species, q = _typed_files(tmp_path)
    x = io.read_particles(tmp_path / "typed.xyz")
    z = io.read_particles(tmp_path / "typed.npz")
    assert x.names() == species == z.names() and np.array_equal(x.charges, q) and np.array_equal(z.charges, q)
    assert np.array_equal(x.positions, p.positions) and np.array_equal(z.positions, p.positions)


def test_an_ase_style_file_names_its_species_and_initial_charges(tmp_path):
    from harness import io

    f = tmp_path / "ase.extxyz"
    f.write_text('2\nLattice="10.0 0.0 0.0 0.0 10.0 0.0 0.0 0.0 10.0" Properties=species:S:1:pos:R:3:'
                 'initial_charges:R:1:masses:R:1 pbc="T T T"\nNa 1.0 1.0 1.0 1.0 22.99\nCl 3.5 1.0 1.0 -1.0 35.45\n')
    c = io.read_particles(f)
    assert c.species == ["Na", "Cl"] and c.charges.tolist() == [1.0, -1.0]


def test_forces_with_a_forcefield_file_match_the_reference_in_both_formats(tmp_path, capsys):
    from harness.cli import main

    p, species, q = _typed_files(tmp_path)
    for name in ("typed.xyz", "typed.npz"):
        assert main(["forces", "--strategy", "reference", "--forcefield", str(tmp_path / "ff.json"), "--input",
                     str(tmp_path / name), "--out", str(tmp_path / f"{name}.f.npz")]) == 0
    a, b = np.load(tmp_path / "typed.xyz.f.npz"), np.load(tmp_path / "typed.npz.f.npz")
    assert np.array_equal(a["forces"], b["forces"]) and float(a["energy"]) == float(b["energy"])
    ff = parse(EXAMPLE)
    types = ff.type_index(species)
    want = ref_ff.compute(p.positions, p.box.lengths, p.box.periodic, types, q, ff)
    assert np.array_equal(a["forces"], want["forces"]) and int(a["pairs"]) == want["pairs"]


@pytest.mark.parametrize("change, words", [
    (lambda d: d["types"].__setitem__(1, "C"), "particle 0 has type 'B', which the file does not list (types: A, C)"),
    (lambda d: d.__setitem__("electrostatics", {"method": "none"}), "carry charges but electrostatics.method is none"),
    (lambda d: d["lj"].__setitem__("sigma", [1.0, -2.0]), "lj.sigma[1] must be finite and > 0"),
])
def test_forces_refuses_a_bad_forcefield_in_one_line(tmp_path, capsys, change, words):
    from harness.cli import main

    _typed_files(tmp_path)
    d = json.loads(json.dumps(EXAMPLE))
    change(d)
    (tmp_path / "bad.json").write_text(json.dumps(d))
    code = main(["forces", "--strategy", "reference", "--forcefield", str(tmp_path / "bad.json"), "--input",
                 str(tmp_path / "typed.xyz"), "--out", str(tmp_path / "f.npz")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and words in err[0], err
    assert not (tmp_path / "f.npz").exists()


@pytest.mark.parametrize("name", ["allpairs_thread_cpu", "fullshell_thread_cpu", "c08_thread_cpu", "verlet_thread_cpu",
                                  "clusterpair_thread_cpu"])
def test_every_cpu_strategy_computes_a_forcefield_file_as_the_reference_does(tmp_path, name):
    from harness.cli import main

    p, species, q = _typed_files(tmp_path, "lj_liquid", 2048)
    args = ["--forcefield", str(tmp_path / "ff.json"), "--input", str(tmp_path / "typed.npz")]
    assert main(["forces", "--strategy", "reference", *args, "--out", str(tmp_path / "ref.npz")]) == 0
    assert main(["forces", "--strategy", name, "--precision", "fp64", *args, "--out", str(tmp_path / "s.npz")]) == 0
    ref, got = np.load(tmp_path / "ref.npz"), np.load(tmp_path / "s.npz")
    scale = np.sqrt(np.mean(np.sum(ref["forces"] ** 2, axis=1)))
    assert np.abs(got["forces"] - ref["forces"]).max() <= 1e-12 * scale
    assert float(got["energy"]) == pytest.approx(float(ref["energy"]), rel=1e-12)
    assert np.allclose(got["virial"], ref["virial"], rtol=1e-12, atol=1e-12 * np.abs(ref["virial"]).max())
    assert int(got["pairs"]) == int(ref["pairs"])


@pytest.mark.parametrize("command", [["verify", "--out", "o"], ["bench", "--dry-run", "--out", "o"], ["tune"],
                                     ["md", "--strategy", "fullshell_thread_cpu"]])
def test_a_forcefield_needs_the_particles_of_an_input_file(tmp_path, capsys, command):
    from harness.cli import main

    _typed_files(tmp_path)
    code = main([*command, "--forcefield", str(tmp_path / "ff.json")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "--forcefield needs --input" in err[0], err


def test_a_forcefield_and_a_potential_are_refused_together(tmp_path, capsys):
    from harness.cli import main

    _typed_files(tmp_path)
    code = main(["forces", "--strategy", "reference", "--forcefield", str(tmp_path / "ff.json"), "--input",
                 str(tmp_path / "typed.xyz"), "--potential", "lj:cutoff=2", "--out", str(tmp_path / "f.npz")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "give one" in err[0]


def test_bad_particle_arrays_in_an_npz(tmp_path):
    from harness import io

    base = {"positions": np.zeros((2, 3)) + [[1, 1, 1], [2, 2, 2]], "box": np.array([10.0, 10.0, 10.0])}
    for extra, words in (({"types": np.array([0.5, 1.0])}, "types must be 2 integers"),
                         ({"types": np.array([0, -1])}, "negative type index"),
                         ({"charges": np.array([1.0, np.nan])}, "charges must be 2 finite numbers"),
                         ({"types": np.array([0, 3]), "type_names": np.array(["A", "B"])}, "index 3 but type_names")):
        np.savez(tmp_path / "b.npz", **base, **extra)
        with pytest.raises(Exception) as e:
            io.read_particles(tmp_path / "b.npz")
        assert words in str(e.value)


def test_the_verlet_lists_shared_table_is_offered_where_there_is_a_table():
    import strategies
    from harness import scenarios

    s = strategies.create("verlet_thread_padded", table="shared")
    typed = scenarios.make("kob_andersen", "tiny")
    assert s.supports(typed, check_device=False) == (True, "")
    assert "PairTable_k1_m0_s0_shared" in s.force_expression("fp32", typed.potential, True, True, 1)
    ok, why = s.supports(scenarios.make("lj_liquid", "tiny"), check_device=False)
    assert not ok and "table=shared places a typed pair table" in why
    big = scenarios.make("typed_lj:types=256", "small").with_precision("fp64")  # 256 records, 2 MB of table
    ok, why = s.supports(big, check_device=False)
    assert not ok and "more than the 227 KB of shared memory" in why
    assert strategies.create("verlet_thread_padded").force_expression("fp32", typed.potential, True, True, 1) \
        .startswith("verlet_force<float, float, PairTable_k1_m0_s0,")


@pytest.mark.parametrize("spec", ["kob_andersen", "charged_lj_ewald", "typed_lj:types=3"])
@pytest.mark.parametrize("suffix", [".xyz", ".npz"])
def test_export_writes_types_charges_and_the_force_field_back(tmp_path, spec, suffix):
    """export of a scenario with types or charges: the particles carry them and the force field lies
    beside; --input with --forcefield gives the scenario's own reference forces."""
    import reference
    from harness import scenarios
    from harness.cli import main

    out = tmp_path / f"conf{suffix}"
    assert main(["export", "--scenario", spec, "--n", "tiny", "--out", str(out)]) == 0
    ff = tmp_path / "conf.forcefield.json"
    assert ff.is_file()
    assert main(["forces", "--strategy", "reference", "--input", str(out), "--forcefield", str(ff), "--precision",
                 "fp64", "--out", str(tmp_path / "f.npz")]) == 0
    problem = scenarios.make(spec, "tiny")
    want = reference.compute(problem)
    got = np.load(tmp_path / "f.npz")
    forces = want.forces
    if problem.potential.forcefield.method == "ewald":  # forces gives the whole Ewald sum
        from mdcore.ewald import Ewald
        from reference.ewald import reciprocal

        ewald = Ewald.make(problem.potential.forcefield, problem.box.lengths, problem.box.periodic)
        forces = forces + reciprocal(problem.positions, problem.potential.charges, ewald)["forces"]
        assert float(got["energy_real"]) == pytest.approx(want.energy, rel=1e-12)
    assert np.allclose(got["forces"], forces, rtol=0, atol=1e-12 * np.abs(forces).max())
    assert int(got["pairs"]) == want.pairs


def test_float3_and_soa_layouts_carry_the_word_and_packed_entries_do_not():
    """aos3 and soa keep a particle's type or charge in an array of their own beside the coordinates
    (kernels/layout.cuh): offered for typed and charged particles; the Verlet list's packed entries
    have no room for it and are refused by name."""
    import strategies
    from harness import scenarios

    charged = scenarios.make("charged_lj", "tiny")
    for name in ("allpairs_thread_tiled", "fullshell_thread_csr", "verlet_thread_padded"):
        for layout in ("aos3", "soa"):
            assert strategies.create(name, layout=layout).supports(charged, check_device=False) == (True, "")
    ok, why = strategies.create("verlet_thread_padded", layout="packed").supports(
        scenarios.make("charged_lj", "medium"), check_device=False)
    assert not ok and "layout=packed reads positions without their fourth component" in why
    assert "take layout aos4, aos3 or soa" in why

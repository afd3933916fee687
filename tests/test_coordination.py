"""PLUMED's coordination number as the second potential (the PLUMED CUDA coordination tutorial): the reference
against the tutorial's formula for two atoms (x = 1 exactly included) and finite differences, the CPU strategies
against the reference, and every traversal compiled with its functor."""
import numpy as np
import pytest

import reference
import strategies
from harness import verify
from mdcore import Box, InputError, Problem
from mdcore.potentials import Coordination, parse
from strategies import nvcc


def _s(r, r0, d0, n, m):
    """The tutorial's s(r), written out here once more."""
    if r <= d0:
        return 1.0
    x = (r - d0) / r0
    if abs(x - 1.0) < 1e-12:
        return n / m
    return (1.0 - x ** n) / (1.0 - x ** m)


@pytest.mark.parametrize("n, m, d0", [(6, 12, 0.0), (6, 10, 0.0), (8, 14, 0.3)])
@pytest.mark.parametrize("r", [0.5, 1.0, 1.3, 2.0, 2.49])
def test_two_atoms_give_the_stretched_switching_function(n, m, d0, r):
    pot = Coordination(r0=1.0, d0=d0, n=n, m=m, dmax=2.5)
    stretch = 1.0 / (1.0 - _s(2.5, 1.0, d0, n, m))
    want = stretch * (_s(r + d0 if r == 1.0 else r, 1.0, d0, n, m) - _s(2.5, 1.0, d0, n, m))
    rr = r + d0 if r == 1.0 else r  # x = 1 exactly: r = d0 + r0
    p = Problem.make([[1.0, 1.0, 1.0], [1.0 + rr, 1.0, 1.0]], Box.make([8.0, 8.0, 8.0], False), pot,
                     precision="fp64")
    ref = reference.compute(p)
    assert ref.energy == pytest.approx(want, rel=1e-12, abs=1e-15)
    assert ref.pairs == 1


def test_the_value_at_x_equal_one_is_the_limit():
    """At x = 1 numerator and denominator vanish; the special case gives n/m and the slope
    n (n - m) / (2 m), the limits of the neighbouring values."""
    pot = Coordination(r0=1.0, n=6, m=10, dmax=2.5)
    c = pot.reference_constants()
    fr1, u1 = pot.reference_pair(1.0, c)
    for h in (1e-4, -1e-4):
        frh, uh = pot.reference_pair((1.0 + h) ** 2, c)
        assert uh == pytest.approx(u1, abs=5e-4) and frh == pytest.approx(fr1, rel=5e-3)


def test_forces_and_virial_are_the_derivatives_of_the_coordination_number():
    rng = np.random.default_rng(4)
    pos = rng.random((40, 3)) * 5.0 + 1.0
    pot = Coordination(r0=1.0, n=6, m=12, dmax=2.5)
    box = Box.make([8.0, 8.0, 8.0], False)
    ref = reference.compute(Problem.make(pos, box, pot, precision="fp64"))
    h = 1e-6
    for i, a in ((0, 0), (7, 1), (21, 2)):
        plus, minus = pos.copy(), pos.copy()
        plus[i, a] += h
        minus[i, a] -= h
        ep = reference.compute(Problem.make(plus, box, pot, precision="fp64")).energy
        em = reference.compute(Problem.make(minus, box, pot, precision="fp64")).energy
        assert -(ep - em) / (2 * h) == pytest.approx(ref.forces[i, a], rel=1e-5, abs=1e-8)


@pytest.mark.parametrize("name", strategies.select(backend="cpu"))
def test_every_cpu_strategy_computes_it(name):
    rng = np.random.default_rng(9)
    pos = rng.random((1500, 3)) * 12.0
    p = Problem.make(pos, [12.0] * 3, parse("coordination:r0=1,n=6,m=12,dmax=2.5"), label="uniform coordination")
    case = verify.Case("uniform-coordination", p)
    rows = verify.run_matrix([strategies.create(name)], [case], ["fp32", "fp64"])
    assert all(r["status"] == "pass" for r in rows), verify.table(rows)


@pytest.mark.parametrize("spec, message", [("coordination:n=6,m=6", "m must differ from n"),
                                           ("coordination:d0=3,dmax=2", "dmax (2) must be beyond d0 (3)"),
                                           ("coordination:n=6.5", "n must be a whole number"),
                                           ("coordination:r0=-1", "r0 must be finite and > 0")])
def test_bad_parameters_are_named(spec, message):
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse(spec)


@pytest.mark.slow
@pytest.mark.skipif(nvcc.nvcc() is None, reason="nvcc not found on PATH")
def test_every_traversal_compiles_with_the_coordination_functor():
    """Every traversal kernel with the coordination functor, at each strategy's default launch in
    every output flavour, in fp32; and in fp64 in the all-pairs file (the functor is instantiated on the
    compute type, float or double, through one interface: mixed and fixed call it as fp32 does, with
    another accumulator, and the traversals call it alike in either type; the functor's interface does
    not depend on the launch parameters either: test_kernels compiles every variant, with Lennard-Jones)."""
    pot = Coordination()
    # the traversals (not the data kernels), every pair of two template arguments' values (nvcc.covering)
    units = {file: nvcc.covering([e for e in exprs if "Coordination" in e and ("<float, float," in e or (
                                  file == "allpairs.cu" and "<double, double," in e))])
             for file, (exprs, needs_functor) in nvcc.specialisations(pot, defaults=True).items() if needs_functor}
    assert any("<double, double," in e for e in units["allpairs.cu"])
    assert set(units) == {"allpairs.cu", "cells.cu", "clusterpair.cu", "parity.cu", "verlet_force.cu"}
    for file, (code, out, _) in nvcc.compile_units(units, potential=pot).items():
        assert code == 0, (file, out[:2000])
        mine = units[file]
        assert mine and sum("Coordination" in r.expression for r in nvcc.resources(out)) == len(mine), file


def test_verify_and_md_take_the_potential_on_the_command_line(tmp_path, capsys):
    from harness import cli

    rc = cli.main(["verify", "--strategies", "fullshell_thread_cpu,verlet_thread_cpu", "--scenarios", "uniform",
                   "--size", "small", "--precision", "fp32", "--potential", "coordination:r0=1,n=6,dmax=2.5",
                   "--quiet", "--out", str(tmp_path / "v")])
    out = capsys.readouterr().out
    assert rc == 0 and "uniform+coordination" in out and "FAIL:" not in out.replace("FAIL: 0", "")
    assert cli.main(["md", "--strategy", "fullshell_thread_cpu", "--n", "tiny", "--steps", "20", "--sample", "10",
                     "--potential", "coordination:r0=1,n=6,dmax=2.5", "--quiet"]) == 0
    assert cli.main(["verify", "--strategies", "fullshell_thread_cpu", "--scenarios", "uniform", "--size", "tiny",
                     "--potential", "coordination:n=6,m=6", "--out", str(tmp_path / "w")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "m must differ from n" in err[0]


def test_bench_and_forces_take_the_potential(tmp_path, capsys):
    import json

    from harness import cli

    assert cli.main(["bench", "--strategies", "fullshell_thread_cpu", "--scenario", "uniform", "--n", "1000",
                     "--potential", "coordination:r0=1,n=6,dmax=2.5", "--min-time", "0", "--repeat", "1",
                     "--amortised", "0", "--quiet", "--out", str(tmp_path / "b"), "--name", "c"]) == 0
    row = json.loads((tmp_path / "b" / "c.json").read_text())["rows"][0]
    assert row["status"] == "ok" and row["potential"].startswith("coordination:")
    conf = tmp_path / "conf.xyz"
    assert cli.main(["export", "--scenario", "uniform", "--n", "500", "--out", str(conf)]) == 0
    out = tmp_path / "f.npz"
    assert cli.main(["forces", "--strategy", "reference", "--input", str(conf), "--precision", "fp64",
                     "--potential", "coordination:r0=1,n=6,dmax=2.5", "--out", str(out)]) == 0
    import numpy as np

    got = np.load(out)
    assert 0 < float(got["energy"]) < 500 * 20  # a coordination number: a few neighbours per particle


def test_the_matrix_and_bench_take_a_potential_axis(tmp_path, capsys):
    """--potential repeated: every case (every point) with each potential, and the rows say which."""
    import json

    from harness import cli

    assert cli.main(["verify", "--strategies", "allpairs_thread_cpu", "--scenarios", "uniform,lj_liquid", "--size",
                     "tiny", "--precision", "fp64", "--potential", "lj", "--potential", "coordination:r0=1,n=6,dmax=2.5",
                     "--quiet", "--out", str(tmp_path / "v"), "--json", str(tmp_path / "v.json")]) == 0
    rows = json.loads((tmp_path / "v.json").read_text())["rows"]
    assert sorted(r["scenario"] for r in rows) == ["lj_liquid+coordination", "lj_liquid+lj", "uniform+coordination",
                                                  "uniform+lj"]
    assert all(r["status"] == "pass" for r in rows)
    assert cli.main(["bench", "--strategies", "allpairs_thread_cpu", "--scenario", "uniform", "--n", "300",
                     "--potential", "lj", "--potential", "coordination:r0=1,n=6,dmax=2.5", "--min-time", "0",
                     "--repeat", "1", "--amortised", "0", "--out", str(tmp_path / "b"), "--name", "p"]) == 0
    out = capsys.readouterr().out
    assert "2 points" in out and "coordination" in out
    rows = json.loads((tmp_path / "b" / "p.json").read_text())["rows"]
    assert sorted(r["potential"].partition(":")[0] for r in rows) == ["coordination", "lj"]
    conf = tmp_path / "conf.xyz"
    assert cli.main(["export", "--scenario", "uniform", "--n", "300", "--out", str(conf)]) == 0
    capsys.readouterr()
    assert cli.main(["bench", "--strategies", "allpairs_thread_cpu", "--input", str(conf), "--potential", "lj",
                     "--potential", "coordination", "--out", str(tmp_path / "c")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--input takes one --potential" in err[0]

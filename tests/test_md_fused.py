"""The MD loop's fused steps on the Verlet list (strategies/integrate_fused.py, FusedSteps): the state in
the list's order and the integrator at the end of the force kernel must give the plain loop's
bits: every sample, every rebuild, the last positions and velocities, the trajectory's frames."""
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

import strategies
from harness import cli, md, scenarios
from strategies import cuda, nvcc
from strategies.verlet import md_dtype


def _problem(precision="fp32", n=4000):
    p = scenarios.make("lj_liquid", n, seed=2, precision=precision)
    from dataclasses import replace

    return replace(p, potential=replace(p.potential, shift=True))


# --- CPU (CI) -------------------------------------------------------------------------------

@pytest.mark.parametrize("acc, real, itemsize", [(np.float32, np.float32, 104), (np.float64, np.float32, 128),
                                                 (np.float64, np.float64, 136)])
def test_md_struct_is_packed_as_the_kernel_reads_it(acc, real, itemsize):
    """MdStep<Real, Acc> by value: 9 pointers, then 5 Acc, two Real and one float, C's alignment."""
    d = md_dtype(acc, real)
    assert d.itemsize == itemsize
    assert [d.fields[k][1] for k in ("x", "bad", "qnext", "pref", "half_dt_m", "lz")] == \
        [0, 48, 56, 64, 72, 72 + 4 * np.dtype(acc).itemsize]


@pytest.mark.skipif(nvcc.nvcc() is None, reason="nvcc not found on PATH")
def test_md_struct_offsets_match_the_compiled_struct():
    """The offsets numpy gives the struct are the ones nvcc lays it out with (a static_assert per
    field and precision mode, compiled without a GPU)."""
    checks = []
    for k, (acc, real, ca, cr) in enumerate([(np.float32, np.float32, "float", "float"),
                                             (np.float64, np.float32, "double", "float"),
                                             (np.float64, np.float64, "double", "double")]):
        d = md_dtype(acc, real)
        t = f"Md{k}"
        checks.append(f"using {t} = MdStep<{cr}, {ca}>;")
        checks.append(f"static_assert(sizeof({t}) == {d.itemsize}, \"size\");")
        for name in d.names:
            checks.append(f"static_assert(offsetof({t}, {name}) == {d.fields[name][1]}, \"{name}\");")
    unit = '#include <cstddef>\n#include "lennard_jones.cuh"\n#include "verlet_force.cu"\n' + "\n".join(checks) + "\n"
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "u.cu"
        src.write_text(unit)
        r = subprocess.run([nvcc.nvcc(), f"-arch={nvcc.ARCH}", "-std=c++17", f"-I{cuda.KERNEL_DIR}", "-cubin", "-o",
                            str(Path(tmp) / "u.cubin"), str(src)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]


def test_the_cpu_loop_runs_the_plain_steps():
    r = md.run(strategies.create("verlet_thread_cpu"), _problem("fp64", 500), steps=5, dt=0.005, sample=5)
    assert r.fused == "off"


def test_no_fuse_is_an_md_option(capsys):
    assert cli.main(["md", "--strategy", "fullshell_thread_cpu", "--n", "tiny", "--steps", "2", "--sample", "1",
                     "--quiet", "--no-fuse"]) == 0
    assert "fused" not in capsys.readouterr().out


def test_md_expressions_cover_the_float_modes_for_the_fused_flavours():
    from mdcore import LennardJones

    s = strategies.create("verlet_thread_padded")
    ex = s.md_expressions(LennardJones())
    assert all(e.startswith("verlet_force<") and e.endswith((", 1>", ", 2>")) for e in ex)
    assert {e.split(",")[1].strip() for e in ex} == {"float", "double"}
    assert all(e in s.expressions(LennardJones()) for e in ex)
    assert strategies.create("verlet_thread_pairrows").md_expressions(LennardJones()) == []


# --- GPU --------------------------------------------------------------------------------------

def _same(a: md.MdResult, b: md.MdResult) -> None:
    assert [vars(s) for s in a.samples] == [vars(s) for s in b.samples]
    assert a.rebuilds == b.rebuilds


def _run(name, p, steps, fuse, graph=True, **launch):
    s = strategies.create(name, **launch)
    return md.run(s, p, steps=steps, dt=0.005, sample=50, graph=graph, fuse=fuse)


@pytest.mark.gpu
@pytest.mark.parametrize("precision", ["fp32", "mixed", "fp64"])
@pytest.mark.parametrize("launch", [{}, {"tpp": 1}, {"tpp": 4, "split": "groups"}, {"layout": "soa"},
                                    {"adapt": "0.02:4"}])
def test_fused_steps_give_the_plain_loops_bits(precision, launch):
    p = _problem(precision)
    plain = _run("verlet_thread_padded", p, 300, False, **launch)
    fused = _run("verlet_thread_padded", p, 300, "always", **launch)
    assert plain.fused == "off" and fused.fused == "on"
    assert fused.graph == "on"
    assert fused.rebuilds >= 5  # the lattice start melts: many rebuilds, each through the state's permutation
    _same(plain, fused)


@pytest.mark.gpu
@pytest.mark.parametrize("sample", [7, 1])
def test_fused_steps_without_graphs_and_the_last_state(sample):
    """Launched one by one, and with a sample every step (each step closes and reopens), the same
    bits as the plain loop; the last positions and velocities (read back through input order)
    equal."""
    p = _problem("fp32")
    runs = []
    for fuse, graph in [(False, True), ("always", False), ("always", True)]:
        s = strategies.create("verlet_thread_padded")
        runs.append(md.run(s, p, steps=63, dt=0.005, sample=sample, graph=graph, fuse=fuse))
    _same(runs[0], runs[1])
    _same(runs[0], runs[2])
    assert runs[1].fused == "on" and runs[1].graph == "off"


@pytest.mark.gpu
def test_fused_last_state_reads_back_in_input_order():
    """positions() and velocities() of the fused steps, through input order, are the plain ones."""
    import cupy

    p = _problem("mixed", 2000)
    got = []
    for fuse in (False, "always"):
        steps_, why = _steps(p, fuse)
        assert why == ("on" if fuse else "off")
        for _ in range(5):
            steps_.open()
            for q in range(9):
                steps_.step("forces", last=q == 8)
        got.append((steps_.positions(), steps_.velocities(), steps_.kinetic()[0]))
        cupy.cuda.Device().synchronize()
    assert np.array_equal(got[0][0], got[1][0]) and np.array_equal(got[0][1], got[1][1])
    assert got[0][2] == got[1][2]


@pytest.mark.gpu
def test_fused_trajectory_frames_equal_the_plain_ones(tmp_path):
    p = _problem("mixed", 2000)
    text = []
    for fuse in (False, "always"):
        out = tmp_path / f"t{int(bool(fuse))}.xyz"
        md.run(strategies.create("verlet_thread_padded"), p, steps=60, dt=0.005, sample=20, trajectory=out,
               frame_every=10, fuse=fuse)
        text.append(out.read_text())
    assert text[0] == text[1] and text[0].count("Properties=") == 7


@pytest.mark.gpu
def test_fused_rebuild_never_keeps_the_plain_loops_bits():
    p = _problem("fp32")
    plain = _run("verlet_thread_padded", p, 40, False, rebuild="never")
    fused = _run("verlet_thread_padded", p, 40, "always", rebuild="never")
    assert fused.fused == "on"
    _same(plain, fused)


def _steps(p, fuse, x0=None):
    """(the loop's steps on a fresh Verlet plan of p, why) from Maxwell-Boltzmann velocities, at
    positions x0 (default p's; the problem's checks do not see them)."""
    from strategies.integrate import Integrator

    s = strategies.create("verlet_thread_padded")
    plan = s.prepare(p, "all")
    v0 = md.maxwell_boltzmann(p.n, 0.72, np.random.default_rng(3))
    integ = Integrator.create(plan, p.positions if x0 is None else x0, v0, 0.005)
    out = md._evaluate(s, plan, "all")
    return md._stepper(s, plan, integ, out.forces, fuse)


@pytest.mark.gpu
def test_a_fused_blow_up_is_flagged_as_the_plain_one():
    """Two particles moved to one place (which Problem refuses as input): non-finite forces and
    coordinates after the first drift; both loops' blow-up flags are set (md.run stops at the next
    sample with one line)."""
    p = _problem("fp32", 2000)
    x = np.array(p.positions)
    x[1] = x[0]
    for fuse in (False, "always"):
        steps_, why = _steps(p, fuse, x)
        assert why == ("on" if fuse else "off")
        assert not steps_.blown_up()
        steps_.open()
        steps_.step("forces", last=True)
        assert steps_.blown_up()


@pytest.mark.gpu
def test_small_systems_keep_the_plain_steps_unless_asked():
    """Many threads a row (4,000 particles: 16): the plain steps measured faster, so the loop
    keeps them; a thread per row takes the fused ones."""
    p = _problem("fp32")
    assert _run("verlet_thread_padded", p, 10, True).fused.startswith("off: 16 threads a row")
    assert _run("verlet_thread_padded", p, 10, True, tpp=4).fused == "on"
    assert _run("verlet_thread_padded", p, 10, "always").fused == "on"


@pytest.mark.gpu
def test_rows_of_two_take_the_plain_steps():
    r = _run("verlet_thread_pairrows", _problem("fp32", 2000), 10, True)
    assert r.fused.startswith("off: rows of two")

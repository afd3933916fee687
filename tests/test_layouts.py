"""Position layouts: the launch parameter `layout` (aos4, aos3, soa) of the
full shell, the all-pairs kernels and the Verlet list changes how positions are read and nothing else, so every
layout gives the same bits; the MD loop's positions reach every layout."""
import numpy as np
import pytest

import strategies
from harness import md, scenarios
from mdcore import InputError

LAYOUT_STRATEGIES = ["fullshell_thread_csr", "allpairs_thread_tiled", "allpairs_thread_naive", "verlet_thread_padded"]


@pytest.mark.parametrize("name", LAYOUT_STRATEGIES)
def test_layout_is_a_launch_parameter_with_three_choices(name):
    """aos4, aos3 and soa everywhere; the Verlet list also packs its near entries' positions and by
    default takes them where they apply (layout=packed, auto: tests/test_verlet_packed.py; not the same
    bits, so not in the test below)."""
    s = strategies.create(name)
    verlet = name == "verlet_thread_padded"
    choices = (("auto",) if verlet else ()) + ("aos4", "aos3", "soa") + (("packed",) if verlet else ())
    assert s.launch["layout"] == ("auto" if verlet else "aos4") and s.launch_choices["layout"] == choices
    assert strategies.create(name, layout="soa").label == f"{name}[layout=soa]"
    with pytest.raises(InputError, match=r"layout='aos5' not in \("):
        strategies.create(name, layout="aos5")


def test_strategies_without_layouts_refuse_the_parameter_by_name():
    with pytest.raises(InputError, match="unknown launch parameter.*layout"):
        strategies.create("c08_warp_csr", layout="soa")


@pytest.mark.gpu
@pytest.mark.parametrize("name", LAYOUT_STRATEGIES)
@pytest.mark.parametrize("precision", ["fp32", "mixed", "fp64"])
@pytest.mark.parametrize("spec", ["lj_liquid", "lj_liquid_open"])
def test_gpu_every_layout_gives_the_same_bits(name, precision, spec):
    p = scenarios.make(spec, 3000, seed=5, precision=precision)
    base = strategies.create(name).evaluate(p)
    for layout in ("aos3", "soa"):
        got = strategies.create(name, layout=layout).evaluate(p)
        assert np.array_equal(got.forces, base.forces), layout
        assert got.energy == base.energy and got.pairs == base.pairs
        assert np.array_equal(got.virial, base.virial)


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["fullshell_thread_csr", "allpairs_thread_tiled", "verlet_thread_padded"])
def test_gpu_md_positions_reach_every_layout(name):
    """The layout's copy is made in the evaluation from the positions the integrator moved on the
    device: a run in soa follows the aos4 run to the bit."""
    from dataclasses import replace

    p = scenarios.make("lj_liquid", 2000, seed=3, precision="fp64")
    p = replace(p, potential=replace(p.potential, shift=True))
    a = md.run(strategies.create(name), p, steps=60, dt=0.005, sample=20, seed=2)
    b = md.run(strategies.create(name, layout="soa"), p, steps=60, dt=0.005, sample=20, seed=2)
    assert [s.total for s in a.samples] == [s.total for s in b.samples]


def test_a_launch_parameter_some_strategies_lack_leaves_them_n_a_with_the_reason():
    made = strategies.create_each(["fullshell_thread_csr", "c08_thread_cpu"], {"layout": "soa"})
    assert made[0].launch["layout"] == "soa" and made[0].refused == ""
    assert "launch parameter layout not implemented by c08_thread_cpu" in made[1].refused
    p = scenarios.make("lj_liquid", 500, seed=1)
    ok, why = made[1].supports(p, check_device=False)
    assert not ok and "layout not implemented" in why
    with pytest.raises(InputError, match="unknown launch parameter.*layuot: none of"):
        strategies.create_each(["fullshell_thread_csr", "c08_thread_cpu"], {"layuot": "soa"})


def test_verify_cli_reports_n_a_for_a_strategy_without_the_layout(tmp_path):
    import json
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    r = subprocess.run([sys.executable, "-m", "harness", "verify", "--strategies", "allpairs_thread_cpu,c08_thread_cpu",
                        "--scenarios", "lj_liquid", "--size", "tiny", "--precision", "fp64", "--launch", "layout=soa",
                        "--quiet", "--out", str(tmp_path), "--json", str(tmp_path / "v.json")],
                       capture_output=True, text=True, cwd=root)
    # neither CPU strategy has the parameter: refused as a typo would be
    assert r.returncode == 2 and "none of allpairs_thread_cpu, c08_thread_cpu has it" in r.stderr
    r = subprocess.run([sys.executable, "-m", "harness", "bench", "--strategies", "allpairs_thread_tiled,c08_thread_cpu",
                        "--scenario", "lj_liquid", "--n", "500", "--launch", "layout=soa", "--dry-run",
                        "--out", str(tmp_path)], capture_output=True, text=True, cwd=root)
    from strategies.cuda import device_status

    if not device_status()[0]:  # a dry run refuses what the run would: the GPU strategy named here
        assert r.returncode == 2 and "allpairs_thread_tiled cannot run on this machine" in r.stderr
        return
    assert r.returncode == 0, r.stderr
    assert "layout not implemented by c08_thread_cpu" in r.stdout + r.stderr

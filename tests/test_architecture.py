"""The layering, the registry's declarations and the selection by attribute."""
import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

import strategies
from mdcore import InputError
from strategies import registry

ROOT = Path(__file__).resolve().parent.parent
# package -> the project's packages it may import
ALLOWED = {"mdcore": set(), "reference": {"mdcore"}, "strategies": {"mdcore"},
           "harness": {"mdcore", "reference", "strategies"}}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.add(node.module.split(".")[0])
    return out


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_layers(package):
    """mdcore at the bottom; reference and strategies above it, each importing only mdcore;
    harness on top. Every import anywhere in a module counts (function-level ones too)."""
    project = set(ALLOWED)
    for path in (ROOT / package).rglob("*.py"):
        bad = (_imports(path) & project) - ALLOWED[package] - {package}
        assert not bad, f"{path.relative_to(ROOT)} imports {sorted(bad)}"


def test_layer_detector_itself(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("def f():\n    from harness import bench\nimport numpy\nfrom . import x\n")
    assert _imports(f) == {"harness", "numpy"}


def test_every_name_follows_the_grammar_and_every_attribute_is_declared():
    for name in strategies.ordered():
        cls = strategies.REGISTRY[name]
        attrs = strategies.attributes(cls)
        assert name.startswith(f"{attrs['traversal']}_{attrs['processor']}_"), name
        assert attrs["backend"] in ("cuda", "cpu") and attrs["storage"] in ("none", "csr", "2d", "nested", "padded")
        assert isinstance(attrs["newton3"], bool) and isinstance(attrs["deterministic"], bool)


def test_register_refuses_a_name_off_the_grammar():
    class Bad(strategies.Strategy):
        name = "fast_kernel"
        backend = "cpu"
        description = "x"
        traversal = "fullshell"
        processor = "thread"
    with pytest.raises(TypeError, match="<traversal>_<processor>_<variant>"):
        strategies.register(Bad)
    assert "fast_kernel" not in strategies.REGISTRY


def test_select_by_attributes():
    n3 = strategies.select(newton3=True)
    assert n3 and all(strategies.REGISTRY[n].newton3 for n in n3)
    assert "fullshell_thread_csr" not in n3 and "c08_warp_csr" in n3
    assert strategies.select(traversal="parity", processor="warpblock", newton3=False) == [
        "parity_warpblock_twopass_atomic", "parity_warpblock_twopass_mutex"]
    assert set(strategies.select(list_reuse=True)) == {"verlet_thread_padded", "verlet_thread_cpu",
                                                       "clusterpair_thread_cpu",
                                                       "clusterpair_warp_padded", "clusterpair_warp_newton3"}
    assert set(strategies.select(potentials="lj", experimental_too=True)) == set(strategies.ordered())
    with pytest.raises(InputError, match="unknown strategy attribute"):
        strategies.select(colour="red")


def test_resolve_names_aliases_prefixes_and_filters():
    assert strategies.resolve("tbp_parity") == ["parity_block_csr"]  # an old name: one release
    assert strategies.resolve("fullshell_") == strategies.select(traversal="fullshell")
    assert strategies.resolve("newton3=true+backend=cpu") == ["c08_thread_cpu"]
    assert strategies.resolve("cpu,allpairs_thread_cpu") == strategies.select(backend="cpu")
    with pytest.raises(InputError, match="no strategy has"):
        strategies.resolve("traversal=nothing")
    with pytest.raises(InputError, match="unknown strategy 'nope'"):
        strategies.resolve("nope")
    assert strategies.create("wbp_shared_atomic").name == "parity_warpblock_shared_atomic"
    assert all(strategies.canonical(old) in strategies.REGISTRY for old in registry.ALIASES)


def test_experimental_strategies_come_only_when_asked():
    """A measured design kept for comparison stays out of 'all', prefixes and filters; its name, an
    experimental=true filter or the experimental flag brings it back."""
    exp = [n for n in strategies.ordered() if strategies.REGISTRY[n].experimental]
    assert "verlet_thread_pairrows" in exp
    for spec in ("all", "cuda", "verlet_", "list_reuse=true", "traversal=verlet+backend=cuda"):
        assert not set(strategies.resolve(spec)) & set(exp), spec
        assert "verlet_thread_pairrows" in strategies.resolve(spec, experimental=True), spec
    assert strategies.resolve("verlet_thread_pairrows") == ["verlet_thread_pairrows"]
    assert strategies.resolve("experimental=true") == exp
    assert "verlet_thread_pairrows" not in strategies.names()
    assert set(strategies.names(experimental=True)) == set(strategies.ordered())


def test_internal_launch_parameters_are_accepted_by_name_and_mark_the_instance():
    s = strategies.create("verlet_thread_padded")
    assert set(s.launch_defaults) <= {"skin", "cap", "rebuild", "block", "layout", "adapt"}  # at most six public
    assert not s.is_experimental
    t = strategies.create("verlet_thread_padded", tpp=4)
    assert t.is_experimental and t.label == "verlet_thread_padded[tpp=4]"
    with pytest.raises(InputError, match="unknown launch parameter"):
        strategies.create("verlet_thread_padded", banks=1)
    with pytest.raises(InputError, match="did you mean verlet_thread_padded"):
        strategies.create("verlet_thread_padde")


def test_list_json_shows_the_attributes():
    r = subprocess.run([sys.executable, "-m", "harness", "list", "--json"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    rows = {s["name"]: s for s in doc["strategies"]}
    assert set(rows) == set(strategies.REGISTRY)
    assert rows["c08_warp_csr"]["newton3"] is True and rows["c08_warp_csr"]["processor"] == "warp"
    assert rows["parity_warpblock_shared_atomic"]["deterministic"] is False
    assert {p["name"] for p in doc["potentials"]} >= {"lj"} and doc["aliases"]["tbp_parity"] == "parity_block_csr"
    mols = {m["name"]: m for m in doc["molecule_scenarios"]}
    assert set(mols) == {"spce_water", "stockmayer", "two_centre_lj_quadrupole"}
    assert "fullshell_thread_cpu" in mols["spce_water"]["strategies"]


def test_plan_phases_and_the_rebuild_hook():
    """Strategies without a reusable list rebuild on every step; step() and compute() agree."""
    from harness import scenarios

    p = scenarios.make("uniform", "small", precision="fp64")  # 4 cells per axis: every CPU strategy applies
    for name in strategies.select(backend="cpu", list_reuse=False):
        s = strategies.create(name)
        assert s.supports(p) == (True, ""), name
        plan = s.prepare(p)
        plan.upload()
        assert plan.needs_rebuild() is True
        a = s.compute(plan).to_host()
        b = s.step(plan).to_host()
        assert (a.forces == b.forces).all() and a.energy == b.energy

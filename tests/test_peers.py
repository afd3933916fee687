"""Peers (OpenMM, JAX-MD) on the same problems, checked against the float64 reference; skipped
with the reason where a package is missing (they are optional: requirements/peers.txt)."""
import importlib.util

import pytest

import reference
from harness import cli, peers, scenarios
from mdcore import InputError


def test_parse_names_and_refuse_unknown():
    assert peers.parse("openmm, jaxmd") == ["openmm", "jaxmd"] and peers.parse(None) == []
    with pytest.raises(InputError, match="unknown peer"):
        peers.parse("gromacs")


def test_missing_package_is_a_row_with_the_reason(monkeypatch):
    monkeypatch.setattr(peers.importlib.util, "find_spec", lambda name: None)
    p = scenarios.make("lj_liquid", "tiny")
    row = peers.run("openmm", p, None)
    assert row["status"] == "n/a" and "openmm package is not installed" in row["detail"]


@pytest.mark.parametrize("spec, why", [("lj_liquid_open", "periodic boxes only"), ("allpairs_cube", "needs a cutoff")])
def test_problems_a_peer_cannot_run(spec, why, monkeypatch):
    monkeypatch.setattr(peers.importlib.util, "find_spec", lambda name: object())
    row = peers.run("openmm", scenarios.make(spec, "tiny"), None)
    assert row["status"] == "n/a" and why in row["detail"]


@pytest.mark.parametrize("name, module", [("openmm", "openmm"), ("jaxmd", "jax_md")])
@pytest.mark.parametrize("precision", ["fp32", "fp64"])
def test_peer_forces_match_the_reference(name, module, precision):
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed (optional: make setup EXTRAS=test,bench,peers)")
    p = scenarios.make("lj_liquid", "small", precision=precision)
    row = peers.run(name, p, reference.compute(p), min_time=0.0)
    assert row["status"] == "ok", row
    # OpenMM's CPU platform computes in single precision whatever the mode; JAX-MD follows it
    tol = 1e-12 if (precision == "fp64" and name == "jaxmd") else 1e-4
    assert row["force_rms_err"] < tol and row["energy_err"] < max(tol, 1e-6)
    assert row["force_ms"] > 0 and row["includes"]


def test_bench_cli_with_peers_prints_their_rows(tmp_path, capsys):
    code = cli.main(["bench", "--strategies", "allpairs_thread_cpu", "--scenario", "lj_liquid", "--n", "tiny", "--repeat",
                     "2", "--min-time", "0", "--peers", "openmm,jaxmd", "--out", str(tmp_path), "--name", "p"])
    assert code == 0
    out = capsys.readouterr().out
    assert out.count("peer:openmm") >= 1 and out.count("peer:jaxmd") >= 1


def test_a_peer_process_that_dies_is_an_error_row_not_a_crash(monkeypatch):
    """Out of memory kills the peer's child process (SIGKILL): the bench gets a row saying so."""
    import os

    monkeypatch.setattr(peers.importlib.util, "find_spec", lambda name: object())
    monkeypatch.setitem(peers.RUNNERS, "openmm", ("openmm", _killed))
    p = scenarios.make("lj_liquid", "tiny")
    row = peers.run("openmm", p, None)
    assert row["status"] == "error" and "killed by SIGKILL" in row["detail"] and "out-of-memory" in row["detail"]
    # the bench goes on: the next peer process runs and reports normally
    monkeypatch.setitem(peers.RUNNERS, "openmm", ("openmm", _reports))
    after = peers.run("openmm", p, None)
    assert after["status"] == "ok" and after["n"] == p.n and after["pid"] != os.getpid()


def _reports(problem, ref, min_time):
    import os

    return {"status": "ok", "pid": os.getpid()}


def _killed(problem, ref, min_time):
    import os
    import signal

    os.kill(os.getpid(), signal.SIGKILL)


@pytest.mark.parametrize("spec", ["kob_andersen", "typed_lj"])
def test_jaxmd_takes_typed_particles_through_its_species_tables(spec):
    if importlib.util.find_spec("jax_md") is None:
        pytest.skip("jax_md is not installed (optional: make setup EXTRAS=test,bench,peers)")
    p = scenarios.make(spec, "small", precision="fp64")
    row = peers.run("jaxmd", p, reference.compute(p), min_time=0.0)
    assert row["status"] == "ok", row
    assert row["force_rms_err"] < 1e-12 and row["energy_err"] < 1e-12


@pytest.mark.parametrize("spec, words", [("charged_lj", "no reaction-field pair term"),
                                         ("charged_lj_ewald", "no ewald pair term")])
def test_jaxmd_says_why_charges_are_not_applicable(spec, words, monkeypatch):
    monkeypatch.setattr(peers.importlib.util, "find_spec", lambda name: object())
    row = peers.run("jaxmd", scenarios.make(spec, "tiny"), None)
    assert row["status"] == "n/a" and words in row["detail"], row

"""harness sanitize's parsing of compute-sanitizer output (the GPU run itself is make sanitize)."""
import subprocess

import pytest

from harness import cli, sanitize

def test_every_report_of_the_process_is_the_strategys():
    text = """========= COMPUTE-SANITIZER
@@sanitize begin b
@@sanitize ran b fp32
@@sanitize end b
========= Invalid __global__ read of size 4 bytes
=========     at kern+0x10
=========     by thread (1,0,0) in block (0,0,0)
========= Error: Race reported between Write access at k+0x20 and Read access at k+0x30 [4 hazards]
========= ERROR SUMMARY: 2 errors
"""
    r = sanitize.parse("memcheck", "b", text)  # reports printed at exit, after the end marker
    assert r.ran and r.errors == 2 and not r.ok and "Invalid __global__ read" in r.line()


def test_clean_failed_and_not_run():
    clean = sanitize.parse("memcheck", "a", "@@sanitize begin a\n@@sanitize ran a fp32\n@@sanitize end a\n"
                                            "========= ERROR SUMMARY: 0 errors\n")
    assert clean.ok and clean.line().endswith("0 errors")
    idle = sanitize.parse("memcheck", "a", "@@sanitize begin a\n@@sanitize end a\n========= ERROR SUMMARY: 0 errors\n")
    assert not idle.ok and "NOT RUN: the strategy evaluated nothing" in idle.line()
    failed = sanitize.parse("memcheck", "c", "@@sanitize begin c\n@@sanitize fail c StrategyError: lost lock\n"
                                             "========= ERROR SUMMARY: 0 errors\n")
    assert not failed.ok and "StrategyError" in failed.line()
    died = sanitize.parse("memcheck", "d", "")
    assert not died.ok and "NOT RUN" in died.line()


def test_a_strategy_that_does_not_apply_is_na_with_its_reason_never_clean():
    text = ("@@sanitize begin c\n@@sanitize na c fp32: needs at least 3 cells along a periodic axis, x has 2\n"
            "@@sanitize na c fp64: needs at least 3 cells along a periodic axis, x has 2\n@@sanitize end c\n"
            "========= ERROR SUMMARY: 0 errors\n")
    r = sanitize.parse("memcheck", "c", text)
    assert not r.ok and r.not_applicable
    assert r.line().endswith("n/a: fp32: needs at least 3 cells along a periodic axis, x has 2; fp64: needs at least "
                             "3 cells along a periodic axis, x has 2")
    part = sanitize.parse("memcheck", "c", "@@sanitize begin c\n@@sanitize ran c fp32\n@@sanitize na c fp64: "
                                           "precision fp64 not implemented\n@@sanitize end c\n"
                                           "========= ERROR SUMMARY: 0 errors\n")
    assert part.ok and part.line().endswith("0 errors (n/a: fp64: precision fp64 not implemented)")


def test_the_inner_process_error_is_shown():
    text = "error: scenario gaussian: sigma (width) must be > 0, got '-1'\n========= ERROR SUMMARY: 0 errors\n"
    r = sanitize.parse("memcheck", "a", text)
    assert not r.ok and r.line().endswith("NOT RUN: error: scenario gaussian: sigma (width) must be > 0, got '-1'")


def test_the_default_problem_is_one_every_gpu_strategy_supports():
    """At size tiny (2 cells per axis) c08, parity and warp-block kernels never ran under the tools."""
    from harness import scenarios
    import strategies

    for precision in ("fp32", "fp64"):
        p = scenarios.make(sanitize.DEFAULT_SCENARIO, sanitize.DEFAULT_SIZE, seed=3, precision=precision)
        for name in strategies.select(backend="cuda"):
            assert strategies.create(name).supports(p, check_device=False) == (True, ""), name
    assert cli.parser().parse_args(["sanitize"]).size == sanitize.DEFAULT_SIZE


@pytest.mark.gpu
def test_every_gpu_strategy_runs_in_the_inner_process(capsys):
    import strategies

    names = strategies.select(backend="cuda")
    assert sanitize.inner(names, sanitize.DEFAULT_SCENARIO, sanitize.DEFAULT_SIZE) == 0
    out = capsys.readouterr().out
    for name in names:  # each strategy's part of the output, as one sanitizer process would print it
        part = out.split(f"@@sanitize begin {name}\n")[1].split(f"@@sanitize end {name}\n")[0]
        r = sanitize.parse("memcheck", name, f"@@sanitize begin {name}\n{part}========= ERROR SUMMARY: 0 errors\n")
        assert r.ok and not r.na, r.line()


def test_racecheck_summary_counts():
    text = "@@sanitize begin a\n@@sanitize ran a fp32\n@@sanitize end a\n========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n"
    assert sanitize.parse("racecheck", "a", text).ok


def test_no_summary_means_the_tool_did_not_attach():
    r = sanitize.parse("racecheck", "a", "@@sanitize begin a\n@@sanitize end a\n")
    assert not r.ok and "no summary" in r.line()


def test_missing_sanitizer_or_bad_tool_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(sanitize.shutil, "which", lambda exe: None)
    with pytest.raises(sanitize.InputError, match="compute-sanitizer not found"):
        sanitize.run(["allpairs_thread_tiled"], ["memcheck"])
    monkeypatch.setattr(sanitize.shutil, "which", lambda exe: "/bin/true")
    with pytest.raises(sanitize.InputError, match="unknown sanitizer tool"):
        sanitize.run(["allpairs_thread_tiled"], ["leakcheck"])


def test_cli_refuses_cpu_strategies(capsys):
    assert cli.main(["sanitize", "--strategies", "allpairs_thread_cpu"]) == 2
    assert "run on the CPU" in capsys.readouterr().err


def test_parallel_processes_report_in_the_fixed_order(tmp_path, monkeypatch):
    """--jobs runs sanitizer processes side by side; the lines still come in tool x strategy order,
    each from its own process (a fake compute-sanitizer that answers slowest for the first strategy)."""
    fake = tmp_path / "compute-sanitizer"
    fake.write_text("#!/bin/sh\n# args: --tool T ... --strategies NAME ...\nwhile [ $# -gt 0 ]; do\n"
                    "  case $1 in --tool) tool=$2; shift;; --strategies) name=$2; shift;; esac; shift\ndone\n"
                    "[ $name = a ] && sleep 0.3\n"
                    "echo \"@@sanitize begin $name\"; echo \"@@sanitize ran $name fp32\"; echo \"@@sanitize end $name\"\n"
                    "[ $name = b ] && [ $tool = racecheck ] && echo '========= Error: Race reported between x and y'\n"
                    "[ $tool = racecheck ] && echo '========= RACECHECK SUMMARY: 0 hazards displayed' || "
                    "echo '========= ERROR SUMMARY: 0 errors'\n")
    fake.chmod(0o755)
    monkeypatch.setattr(sanitize.shutil, "which", lambda exe: str(fake))
    lines: list[str] = []
    results = sanitize.run(["a", "b", "c"], ["memcheck", "racecheck"], jobs=4, say=lines.append)
    assert [(r.tool, r.strategy) for r in results] == [(t, s) for t in ("memcheck", "racecheck") for s in "abc"]
    assert [r.ok for r in results] == [True, True, True, True, False, True]
    assert lines[0].startswith("memcheck") and " a " in lines[0] and len(lines) == 6


def test_errors_are_shown_before_how_the_process_ended():
    """Under memcheck the planted overrun also makes the synchronisation raise: the line shows the
    error the tool found, then the failure."""
    text = ("@@sanitize begin p\n@@sanitize ran p fp32\n@@sanitize fail p CUDARuntimeError\n@@sanitize end p\n"
            "========= Invalid __global__ write of size 4 bytes\n========= ERROR SUMMARY: 1 error\n")
    r = sanitize.parse("memcheck", "p", text)
    assert not r.ok and r.line().endswith("1 error(s): Invalid __global__ write of size 4 bytes; then FAILED: "
                                          "CUDARuntimeError")


_RUN = subprocess.run


def _child_env(tmp_path, monkeypatch, var: str, tools, **run_kw) -> list[tuple[str, str | None]]:
    """(tool, the value of `var` in the inner process's environment) for each process sanitize.run
    starts, under a fake compute-sanitizer; `var` unset in this process first."""
    fake = tmp_path / "compute-sanitizer"
    fake.write_text("#!/bin/sh\nwhile [ $# -gt 0 ]; do\n  case $1 in --strategies) name=$2; shift;; esac; shift\ndone\n"
                    "echo \"@@sanitize begin $name\"; echo \"@@sanitize ran $name fp32\"\n"
                    "echo \"@@sanitize end $name\"; echo '========= ERROR SUMMARY: 0 errors'\n")
    fake.chmod(0o755)
    monkeypatch.setattr(sanitize.shutil, "which", lambda exe: str(fake))
    monkeypatch.delenv(var, raising=False)
    seen = []
    real = _RUN  # the module's own, not a spy an earlier call left in place

    def spy(cmd, **kw):
        seen.append((cmd[cmd.index("--tool") + 1], kw["env"].get(var)))
        return real(cmd, **kw)

    monkeypatch.setattr(sanitize.subprocess, "run", spy)
    sanitize.run(["a"], list(tools), say=lambda line: None, **run_kw)
    return seen


def test_every_tool_runs_the_guarded_upkeep(tmp_path, monkeypatch):
    """Under every tool the inner process gets MDFORCE_CONDITIONAL=0 (the tools do not follow
    conditional graph nodes: the guarded launches instead)."""
    seen = dict(_child_env(tmp_path, monkeypatch, "MDFORCE_CONDITIONAL", sanitize.TOOLS))
    assert seen == {"memcheck": "0", "racecheck": "0", "synccheck": "0", "initcheck": "0"}


def test_sanitize_passes_poisoning_to_its_processes(tmp_path, monkeypatch):
    from mdcore import poison

    on = _child_env(tmp_path, monkeypatch, poison.ENV, ["memcheck"], poison=True)
    off = _child_env(tmp_path, monkeypatch, poison.ENV, ["memcheck"])
    assert [v for _, v in on + off] == ["1", None]


def test_the_gpu_molecule_traversals_are_sanitizer_targets(capsys):
    """make sanitize covers the GPU molecule traversals (molecule:<name>), each checked by name; in the
    inner process one runs SPC/E water in fp32 and fp64, or says why it cannot."""
    from strategies import molecules_cuda
    from strategies.cuda import device_status

    assert sanitize.molecule_targets(None) == [f"molecule:{n}" for n in molecules_cuda.TRAVERSALS]
    assert sanitize.molecule_targets("allpairs_thread_tiled,molecule:c08_thread_csr") == ["molecule:c08_thread_csr"]
    with pytest.raises(sanitize.InputError, match="molecule:nope names no GPU molecule traversal"):
        sanitize.molecule_targets("molecule:nope")
    assert cli.main(["sanitize", "--strategies", "molecule:nope"]) == 2
    assert "names no GPU molecule traversal" in capsys.readouterr().err
    assert sanitize.inner(["molecule:fullshell_thread_csr"], sanitize.DEFAULT_SCENARIO, sanitize.DEFAULT_SIZE) == 0
    out = capsys.readouterr().out
    r = sanitize.parse("memcheck", "molecule:fullshell_thread_csr", out + "========= ERROR SUMMARY: 0 errors\n")
    if device_status()[0]:
        assert r.ok and "fp32" not in " ".join(r.na), r.line()
    else:
        assert r.started and not r.ok  # no GPU: the inner process reports why, never clean


def test_the_gpu_reciprocal_strategies_are_sanitizer_targets(capsys):
    """make sanitize covers the GPU reciprocal strategies (kspace:<name>), each checked by name; in the
    inner process one runs every launch variant in every precision and the MC moves, or says why it
    cannot."""
    from strategies import kspace
    from strategies.cuda import device_status

    assert sanitize.kspace_targets(None) == [f"kspace:{n}" for n in kspace.names("cuda")]
    assert "kspace:kspace_thread_cpu" not in sanitize.kspace_targets(None)
    assert sanitize.kspace_targets("c08_warp_csr,molecule:c08_thread_csr,kspace:kspace_thread_rows") == \
        ["kspace:kspace_thread_rows"]
    with pytest.raises(sanitize.InputError, match="kspace:kspace_thread_cpu names no GPU reciprocal strategy"):
        sanitize.kspace_targets("kspace:kspace_thread_cpu")
    assert cli.main(["sanitize", "--strategies", "kspace:nope"]) == 2
    assert "names no GPU reciprocal strategy" in capsys.readouterr().err
    assert sanitize.inner(["kspace:kspace_thread_rows"], sanitize.DEFAULT_SCENARIO, sanitize.DEFAULT_SIZE) == 0
    out = capsys.readouterr().out
    r = sanitize.parse("memcheck", "kspace:kspace_thread_rows", out + "========= ERROR SUMMARY: 0 errors\n")
    if device_status()[0]:
        assert r.ok and not r.na, r.line()
        # the default and its five variants, in three precisions; the moves' four forms
        assert out.count("kspace kspace_thread_rows ") == len(kspace.KSPACE["kspace_thread_rows"].variants) * 3 + 4 == 22
        assert "mirror=on" in out and "mirror=off" in out and "recurrence=rotate" in out
    else:
        assert r.started and not r.ok and r.failed  # no GPU: the inner process reports why, never clean

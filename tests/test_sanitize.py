"""The sanitize session's parsing of compute-sanitizer output (the GPU run itself is make sanitize)."""
import pytest

from harness import cli, sanitize

OUT = """========= COMPUTE-SANITIZER
@@sanitize begin a
@@sanitize end a
@@sanitize begin b
========= Invalid __global__ read of size 4 bytes
=========     at kern+0x10
=========     by thread (1,0,0) in block (0,0,0)
========= Error: Race reported between Write access at k+0x20 and Read access at k+0x30 [4 hazards]
@@sanitize end b
@@sanitize begin c
@@sanitize fail c StrategyError: a lock was not acquired
@@sanitize end c
========= ERROR SUMMARY: 3 errors
"""


def test_reports_are_attributed_to_the_strategy_that_was_running():
    res = {r.strategy: r for r in sanitize.parse("memcheck", ["a", "b", "c", "d"], OUT)}
    assert res["a"].ok and res["a"].line().endswith("0 errors")
    assert res["b"].errors == 2 and "Invalid __global__ read" in res["b"].line()
    assert res["c"].failed.startswith("StrategyError") and not res["c"].ok
    assert not res["d"].ran and "NOT RUN" in res["d"].line()
    extra = res["(outside strategies)"]
    assert extra.errors == 1 and not extra.ok  # the summary counts one more than the markers hold


def test_racecheck_summary_counts():
    text = "@@sanitize begin a\n@@sanitize end a\n========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n"
    assert sanitize.parse("racecheck", ["a"], text)[0].ok


def test_no_summary_means_the_tool_did_not_attach():
    res = sanitize.parse("racecheck", ["a"], "@@sanitize begin a\n@@sanitize end a\n")
    assert not res[0].ok and "no ERROR SUMMARY" in res[0].line()


def test_missing_sanitizer_or_bad_tool_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(sanitize.shutil, "which", lambda exe: None)
    with pytest.raises(sanitize.InputError, match="compute-sanitizer not found"):
        sanitize.run(["allpairs_tiled"], ["memcheck"])
    monkeypatch.setattr(sanitize.shutil, "which", lambda exe: "/bin/true")
    with pytest.raises(sanitize.InputError, match="unknown sanitizer tool"):
        sanitize.run(["allpairs_tiled"], ["leakcheck"])


def test_cli_refuses_cpu_strategies(capsys):
    assert cli.main(["sanitize", "--strategies", "allpairs_cpu"]) == 2
    assert "run on the CPU" in capsys.readouterr().err

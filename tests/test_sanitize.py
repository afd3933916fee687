"""The sanitize session's parsing of compute-sanitizer output (the GPU run itself is make sanitize)."""
import pytest

from harness import cli, sanitize

def test_every_report_of_the_process_is_the_strategys():
    text = """========= COMPUTE-SANITIZER
@@sanitize begin b
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
    clean = sanitize.parse("memcheck", "a", "@@sanitize begin a\n@@sanitize end a\n========= ERROR SUMMARY: 0 errors\n")
    assert clean.ok and clean.line().endswith("0 errors")
    failed = sanitize.parse("memcheck", "c", "@@sanitize begin c\n@@sanitize fail c StrategyError: lost lock\n"
                                             "========= ERROR SUMMARY: 0 errors\n")
    assert not failed.ok and "StrategyError" in failed.line()
    died = sanitize.parse("memcheck", "d", "")
    assert not died.ok and "NOT RUN" in died.line()


def test_racecheck_summary_counts():
    text = "@@sanitize begin a\n@@sanitize end a\n========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n"
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

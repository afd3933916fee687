"""Poisoned memory (mdcore.poison, --poison, MDFORCE_POISON=1): every new work array and device
allocation holds all bits set, so that a read of unwritten memory fails every time."""
from __future__ import annotations

import numpy as np
import pytest

import strategies
from harness import planted, sanitize, scenarios, verify
from harness.cli import main
from mdcore import PRECISIONS, poison


@pytest.fixture
def poisoned(monkeypatch):
    monkeypatch.setenv(poison.ENV, "1")  # restored after the test, whatever enable() sets meanwhile


@pytest.fixture
def clean(monkeypatch):
    monkeypatch.setenv(poison.ENV, "0")


def test_the_pattern_is_all_bits_set():
    assert np.isnan(poison.fill(np.empty(5, np.float32))).all()
    assert np.isnan(poison.fill(np.empty((2, 3), np.float64))).all()
    assert (poison.fill(np.empty(4, np.int64)) == -1).all()
    assert (poison.fill(np.empty(4, np.uint32)) == np.iinfo(np.uint32).max).all()


def test_work_arrays_are_filled_only_when_on(poisoned, monkeypatch):
    assert np.isnan(poison.empty((3, 3), np.float32)).all()
    monkeypatch.setenv(poison.ENV, "0")
    assert not poison.enabled()


def test_a_cpu_strategys_work_arrays_start_poisoned(poisoned):
    problem = scenarios.make("lj_liquid", "tiny", seed=1)
    plan = strategies.create("fullshell_thread_cpu").prepare(problem)
    assert np.isnan(plan.forces).all() and (plan.counts == -1).all()


def test_the_planted_read_is_caught(clean, capsys):
    """The self-test plants a read of an unwritten work array in a CPU strategy (and a GPU one where
    there is a device); with poisoning on, verify must fail it."""
    assert main(["verify", "--self-test"]) == 0
    out = capsys.readouterr().out
    assert "fullshell_thread_cpu: planted read of a host work array: caught (FAIL" in out


def test_the_planted_read_passes_unseen_without_poisoning(clean):
    """Why the mode exists: the same planted strategy passes verify where fresh memory holds zeros."""
    case = verify.build_cases(["lj_liquid"], "tiny", 1)[0]
    import reference

    case.ref = reference.compute(case.problem)
    s = planted.Planted(strategies.create("fullshell_thread_cpu"))
    zeros = np.zeros  # a work array that happens to hold zeros, as fresh memory often does
    orig = poison.empty
    poison.empty = lambda shape, dtype=np.float64: zeros(shape, dtype)
    try:
        row = verify.run_cell(s, case, "fp32", {})
    finally:
        poison.empty = orig
    assert row["status"] == "pass"


def test_every_cpu_strategy_passes_verify_with_poisoned_memory(poisoned):
    names = [n for n in strategies.resolve("cpu")]
    cases = verify.build_cases(["lj_liquid"], 500, 2)  # 3 cells of the cutoff a side: c08 applies
    rows = verify.run_matrix([strategies.create(n) for n in names], cases, PRECISIONS)
    bad = [(r["strategy"], r["precision"], r["detail"][:100]) for r in rows if r["status"] != "pass"]
    assert not bad and len(rows) == len(names) * len(PRECISIONS)


def test_repeat_tallies_clean_rounds(tmp_path, monkeypatch):
    """--repeat K: 'clean in k of K' per tool and strategy, the rounds that were not, and logs of
    those (a fake sanitizer that fails strategy b in its second round)."""
    fake = tmp_path / "compute-sanitizer"
    count = tmp_path / "count"
    count.write_text("0")
    fake.write_text("#!/bin/sh\nwhile [ $# -gt 0 ]; do\n  case $1 in --strategies) name=$2; shift;; esac; shift\ndone\n"
                    "echo \"@@sanitize begin $name\"; echo \"@@sanitize ran $name fp32\"; echo \"@@sanitize end $name\"\n"
                    f"if [ $name = b ]; then k=$(cat {count}); echo $((k + 1)) > {count}; fi\n"
                    f"if [ $name = b ] && [ $(cat {count}) = 2 ]; then echo '========= Invalid __global__ read'; "
                    "echo '========= ERROR SUMMARY: 1 error'; else echo '========= ERROR SUMMARY: 0 errors'; fi\n")
    fake.chmod(0o755)
    monkeypatch.setattr(sanitize.shutil, "which", lambda exe: str(fake))
    logs = tmp_path / "logs"
    logs.mkdir()
    results = sanitize.run(["a", "b"], ["memcheck"], say=lambda line: None, repeat=3, jobs=1, logs=str(logs))
    lines = sanitize.tally(results)
    assert lines[0].split()[1:] == ["a", "clean", "in", "3", "of", "3"]
    assert "b" in lines[1] and "clean in 2 of 3 (not clean in round 2; first: 1 error(s): Invalid __global__ read" \
        in lines[1]
    assert [p.name for p in logs.iterdir()] == ["memcheck-b-2.log"]


@pytest.mark.gpu
def test_device_allocations_are_poisoned_and_gpu_strategies_pass(poisoned):
    import cupy

    assert poison.device()
    assert np.isnan(cupy.empty(7, cupy.float32).get()).all()
    assert (cupy.empty(3, cupy.int32).get() == -1).all()
    names = strategies.resolve("cuda")
    cases = verify.build_cases(["lj_liquid"], "small", 2)
    rows = verify.run_matrix([strategies.create(n) for n in names], cases, ("fp32", "fixed"))
    bad = [(r["strategy"], r["precision"], r["detail"][:100]) for r in rows if r["status"] not in ("pass", "n/a")]
    assert not bad

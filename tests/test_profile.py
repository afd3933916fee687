"""The Nsight Compute summary, from raw-page CSV as `ncu --import R --csv --page raw` writes it."""
import pytest

from harness import cli, profile

RAW = '''"ID","Kernel Name","gpu__time_duration.sum","sm__warps_active.avg.pct_of_peak_sustained_active","launch__registers_per_thread","launch__shared_mem_per_block_static","lts__t_sector_hit_rate.pct","smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio","smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio","smsp__average_warps_issue_stalled_wait_per_issue_active.ratio"
"","","usecond","%","register/thread","Kbyte/block","%","ratio","ratio","ratio"
"0","cells_fullshell<float>","812.5","61.2","40","2.05","93.1","5.5","0","1.25"
"1","gather_forces<float>","20.0","80.0","16","0","50.0","0.2","","0.1"
'''


def test_summary_reads_kernels_units_and_stalls():
    s = profile.summarise(RAW)
    assert s["launches"] == 2
    assert s["total_duration_ms"] == pytest.approx(0.8325)
    k = s["kernels"][0]
    assert k["duration_ns"] == pytest.approx(812500.0) and k["registers_per_thread"] == 40
    assert k["shared_static_bytes_per_block"] == pytest.approx(2050.0)  # Kbyte/block in the export
    assert k["achieved_occupancy_pct"] == pytest.approx(61.2) and k["l2_hit_pct"] == pytest.approx(93.1)
    assert k["dram_throughput_pct"] is None  # not collected: None, not a crash
    assert [n for n, _ in k["top_stalls"]] == ["long_scoreboard", "wait"]  # zero stalls left out
    assert s["heaviest"]["kernel"] == "cells_fullshell<float>"


def test_short_units_are_read_and_unknown_ones_refused():
    """ncu writes "us" instead of "usecond" in some reports: the same scale; a unit it has never
    been seen to write is an error, not a factor of 1 (that read 2.4 ms of kernels as 2.4 us)."""
    short = RAW.replace('"usecond"', '"us"').replace('"Kbyte/block"', '"byte/block"')
    s = profile.summarise(short)
    assert s["total_duration_ms"] == pytest.approx(0.8325)
    assert s["kernels"][0]["shared_static_bytes_per_block"] == pytest.approx(2.05)
    assert profile.summarise(RAW.replace('"usecond"', '"ms"'))["total_duration_ms"] == pytest.approx(832.5)
    with pytest.raises(RuntimeError, match="unit 'fortnight' of gpu__time_duration.sum"):
        profile.summarise(RAW.replace('"usecond"', '"fortnight"'))


def test_empty_export_has_no_kernels():
    assert profile.summarise("==PROF== nothing\n")["launches"] == 0


def test_profile_refuses_cpu_strategies_and_unknown_names(capsys):
    assert cli.main(["profile", "--strategy", "c08_thread_cpu"]) == 2
    assert "runs on the CPU" in capsys.readouterr().err
    assert cli.main(["profile", "--strategy", "nope"]) == 2
    assert "unknown strategy 'nope'" in capsys.readouterr().err


def test_timeline_without_nsys_says_so(monkeypatch, capsys):
    import shutil
    monkeypatch.setattr(shutil, "which", lambda exe: None)
    assert cli.main(["timeline"]) == 0
    assert "Nsight Systems (nsys) is not on this machine" in capsys.readouterr().out


def test_a_hung_ncu_run_ends_in_one_line_and_leaves_no_process(tmp_path, monkeypatch):
    """A profiled process that never exits (ncu waits for it) is stopped at NCU_TIMEOUT with the process
    group it started, and the stage gets one line saying so instead of waiting for its budget."""
    import subprocess
    import time

    from harness import profile
    from mdcore import InputError

    marker = tmp_path / "child.pid"
    fake = tmp_path / "ncu"
    fake.write_text(f"#!/bin/sh\nsleep 60 &\necho $! > {marker}\nwait\n")
    fake.chmod(0o755)
    monkeypatch.setattr(profile, "NCU_TIMEOUT", 1.0)
    t0 = time.monotonic()
    with pytest.raises(InputError, match="did not finish within 1 s"):
        profile._ncu(str(fake), "force/x/", "none", tmp_path / "x", ["--strategy", "x"])
    assert time.monotonic() - t0 < 10
    pid = int(marker.read_text())
    time.sleep(0.2)
    alive = subprocess.run(["ps", "-o", "stat=", "-p", str(pid)], capture_output=True, text=True).stdout.strip()
    assert alive in ("", "Z", "Z+"), alive

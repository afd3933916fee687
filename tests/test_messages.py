"""What a new user meets first: selections that measure nothing, file-type mistakes, the md
command's output, the report's wording and tables, the bench table's peer rows."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from harness import sweep, verify
from harness.cli import main
from harness.report.render import markdown_table
from strategies.cuda import device_status

DATA = Path(__file__).parent / "data" / "h200"
NO_GPU = not device_status()[0]


def _one_line_refusal(capsys, argv, *words):
    code = main(argv)
    out, err = capsys.readouterr()
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, (code, out, err)
    for w in words:
        assert w in lines[0], lines[0]
    return out


@pytest.mark.parametrize("argv", [["bench", "--strategies", ""], ["bench", "--strategies", ","],
                                  ["verify", "--strategies", ""], ["verify", "--strategies", " , "]])
def test_an_empty_selection_is_an_error(capsys, argv):
    _one_line_refusal(capsys, argv, "names no strategy")


@pytest.mark.skipif(not NO_GPU, reason="what a machine without GPU does")
def test_plain_bench_without_a_gpu_times_a_cpu_strategy(tmp_path, capsys):
    assert main(["bench", "--n", "256", "--repeat", "3", "--out", str(tmp_path)]) == 0
    doc = json.loads(next(tmp_path.glob("*.json")).read_text())
    assert [(r["strategy"], r["status"]) for r in doc["rows"]] == [("fullshell_thread_cpu", "ok")]


@pytest.mark.skipif(not NO_GPU, reason="what a machine without GPU does")
def test_a_dry_run_refuses_what_the_run_would(capsys):
    _one_line_refusal(capsys, ["bench", "--strategies", "cuda", "--n", "256", "--dry-run"], "cannot run on this machine")


def test_a_text_file_is_not_an_npz_archive(tmp_path, capsys):
    bad = tmp_path / "t.npz"
    bad.write_text("hello\n")
    _one_line_refusal(capsys, ["forces", "--strategy", "reference", "--input", str(bad), "--out",
                               str(tmp_path / "f.npz")], "not an .npz archive")


def test_compare_names_itself_and_the_file_that_is_not_json(tmp_path, capsys):
    bad = tmp_path / "garbage.xyz"
    bad.write_text("3\nnot json\n")
    _one_line_refusal(capsys, ["compare", str(DATA / "bench-full.json"), str(bad)], "compare:", "not a JSON result file")


def test_md_refuses_before_its_banner(capsys):
    out = _one_line_refusal(capsys, ["md", "--strategy", "c08_thread_cpu", "--n", "256"], "c08 needs at least 3 cells")
    assert out == ""


def test_md_quiet_prints_the_summary_line_only(capsys):
    assert main(["md", "--strategy", "fullshell_thread_cpu", "--n", "tiny", "--steps", "4", "--sample", "2",
                 "--quiet"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("md fullshell_thread_cpu") and "ms per step" in lines[0]


def test_md_shift_and_no_shift_contradict(capsys):
    _one_line_refusal(capsys, ["md", "--strategy", "fullshell_thread_cpu", "--n", "tiny", "--shift", "--no-shift"],
                      "--shift and --no-shift")


def test_markdown_cells_keep_their_bars():
    text = markdown_table(pd.DataFrame({"detail": ["n/a: a | b"], "x": [1.0]}))
    assert "a \\| b" in text and all(line.count("|") - line.count("\\|") == 3 for line in text.splitlines())


def test_a_cpu_only_report_does_not_speak_of_a_gpu_and_lands_under_the_current_folder(tmp_path, monkeypatch,
                                                                                        capsys):
    assert main(["bench", "--strategies", "fullshell_thread_cpu", "--n", "256", "--repeat", "3", "--amortised", "0",
                 "--out", str(tmp_path / "b"), "--name", "cpu"]) == 0
    monkeypatch.chdir(tmp_path)  # no --out: reports/ under the current folder, not the checkout's
    assert main(["report", str(tmp_path / "b" / "cpu.json"), "--name", "r"]) == 0
    md = (tmp_path / "reports" / "r" / "report.md").read_text()
    assert "CUDA events" not in md and "on this GPU" not in md and "Copies beside this page" not in md
    assert "host clock" in md


def test_verify_groups_the_na_cells_by_reason(capsys, tmp_path):
    assert main(["verify", "--strategies", "allpairs_thread_cpu,c08_thread_cpu", "--scenarios", "lj_liquid,allpairs_cube",
                 "--size", "tiny", "--precision", "fp32,fp64", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    na = [line for line in out.splitlines() if line.startswith("n/a ")]
    assert na and len(na) == len({line.split(": ", 1)[1] for line in na})  # one line per reason
    assert not any("n/a:" in line and line.startswith("  ") for line in out.splitlines())
    rows = json.loads((tmp_path / "verify.json").read_text())["rows"]
    assert sum(r["status"] == "n/a" for r in rows) == sum(int(line.split()[1]) for line in na)


def test_grouped_na_lines_count_cells_and_name_strategies():
    rows = [{"status": "n/a", "detail": "no CUDA GPU found", "strategy": s} for s in ("a", "b", "a")]
    rows.append({"status": "pass", "detail": "", "strategy": "c"})
    ran, lines = verify.grouped(rows)
    assert [r["strategy"] for r in ran] == ["c"] and lines == ["n/a  3 cells (a, b): no CUDA GPU found"]


def test_the_bench_table_shows_peer_times_and_what_they_include():
    rows = [{"strategy": "peer:openmm", "name": "peer:openmm", "backend": "peer", "scenario": "lj_liquid", "n": 1000,
             "precision": "fp32", "status": "ok", "force_ms": 0.61, "force_min_ms": 0.6, "force_max_ms": 0.65,
             "step_ms": 0.9, "force_rms_err": 1e-6, "includes": "force_ms: getState(forces, energy)"}]
    text = sweep.terminal_table(rows)
    assert "peer:openmm lj_liquid N=1000 fp32: force 0.61 ms (min 0.6, max 0.65), step 0.9 ms" in text
    assert "includes: force_ms: getState(forces, energy)" in text


def test_counts_are_singular_for_one(tmp_path, capsys):
    assert main(["bench", "--strategies", "fullshell_thread_cpu", "--n", "256", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "1 point " in out and "1 points" not in out


def test_every_option_of_every_command_has_help_and_the_top_help_lists_every_command(capsys):
    import argparse

    from harness.cli import parser

    ap = parser()
    sub = next(a for a in ap._actions if isinstance(a, argparse._SubParsersAction))
    bare = [f"{name} {a.option_strings or a.dest}" for name, p in sub.choices.items() for a in p._actions
            if not a.help and not isinstance(a, argparse._HelpAction)]
    assert not bare
    with pytest.raises(SystemExit):
        main(["--help"])
    top = capsys.readouterr().out
    assert all(f"    {name}" in top for name in sub.choices), top


def test_a_misspelt_strategy_gets_the_closest_names_not_the_whole_list(capsys):
    err = _one_line_refusal(capsys, ["profile", "--strategy", "verlet_thread_pad"], "did you mean verlet_thread_padded")
    code = main(["bench", "--strategies", "clusterpair_warp_pad", "--dry-run"])
    line = capsys.readouterr().err.strip()
    assert code == 2 and "did you mean clusterpair_warp_padded" in line and len(line) < 400


def test_cpu_threads_beyond_numbas_are_refused(capsys):
    _one_line_refusal(capsys, ["bench", "--strategies", "fullshell_thread_cpu", "--n", "256", "--cpu-threads", "100000"],
                      "--cpu-threads 100000: numba has")


def test_noisy_cpu_points_say_how_to_time_them_steadier():
    import numba

    rows = [{"strategy": "allpairs_thread_cpu", "name": "allpairs_thread_cpu", "backend": "cpu", "scenario": "lj_liquid",
             "n": 256, "precision": "fp32", "status": "ok", "compute_ms": 4.0, "compute_spread": 0.9, "noisy": True}]
    text = sweep.terminal_table(rows)
    assert "noisy" in text and "numba thread" in text
    assert ("--cpu-threads 1" in text) == (numba.get_num_threads() > 1)

"""The research helpers: the ncu metrics summary, the per-instruction summary of ncu's source page, the
strip build's lane-balance model and the rebuild-trigger model."""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "research"))

import build_balance  # noqa: E402
import trigger_model  # noqa: E402
import ncu_metrics  # noqa: E402
import ncu_source  # noqa: E402


def _raw_csv(path: Path) -> Path:
    """ncu --page raw: a header of metric names, a row of units, then a row per kernel launch."""
    names = ["ID", "Kernel Name", "gpu__time_duration.sum", "smsp__inst_executed.sum",
             "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
             "l1tex__data_pipe_lsu_wavefronts.sum"]
    units = ["", "", "usecond", "inst", "", "sector", ""]
    rows = [["0", "void verlet_force<float, float, LennardJones, 0, 1, 1, 128, 0, 10, 16, 0>(...)", "151.90",
             "76,930,000", "3,702,000", "70,790,000", "32,950,000"],
            ["1", "bin_count<float>(...)", "12,610", "2,818,000", "32,770", "524,300", "483,600"]]
    path.write_text("\n".join(",".join(f'"{c}"' for c in r) for r in [names, units, *rows]) + "\n")
    return path


def test_ncu_metrics_per_request_figures(tmp_path, capsys):
    raw = _raw_csv(tmp_path / "p.csv")
    assert ncu_metrics.main([str(raw), "--match", "verlet"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 2 and out[1].startswith("void verlet_force<float")
    assert "us 151.9" in out[1] and "sect/req 19.12" in out[1] and "wf/req 8.90" in out[1]
    assert ncu_metrics.main([str(raw)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "bin_count" in out[2] and "us 1.261e+04" in out[2]  # a time in us as ncu gave it


def test_ncu_metrics_stalls_largest_first(tmp_path, capsys):
    stall = "smsp__average_warps_issue_stalled_{}_per_issue_active.ratio"
    names = ["ID", "Kernel Name", stall.format("long_scoreboard"), stall.format("wait"),
             stall.format("math_pipe_throttle"), stall.format("barrier")]
    rows = [["0", "void verlet_force<float>(...)", "4.49", "0.61", "1.20", "0.00"]]
    path = tmp_path / "s.csv"
    path.write_text("\n".join(",".join(f'"{c}"' for c in r) for r in [names, [""] * 6, *rows]) + "\n")
    assert ncu_metrics.main([str(path), "--stalls"]) == 0
    line = capsys.readouterr().out.splitlines()[1]
    assert line.endswith("stalls per issue: long_scoreboard 4.49, math_pipe_throttle 1.20, wait 0.61")
    assert ncu_metrics.main([str(path)]) == 0
    assert "per issue" not in capsys.readouterr().out


def test_ncu_metrics_missing_file_exits_2(tmp_path, capsys):
    assert ncu_metrics.main([str(tmp_path / "none.csv")]) == 2


def _source_csv(path: Path) -> Path:
    """ncu's source page as its CSV writes it: the kernel's name, the header, an instruction a row."""
    head = ["Address", "Source", "Warp Stall Sampling (All Samples)", "Warp Stall Sampling (Not-issued Samples)",
            "# Samples", "Instructions Executed", "Thread Instructions Executed"]
    sass = [("S2R R0, SR_TID.X", 100, 3200, 2), ("IMAD R1, R0, 4, RZ", 100, 3200, 0),  # set-up: 100 warps
            ("LDG.E R2, [R4.64]", 1000, 20000, 30), ("FADD R3, R3, R2", 1000, 20000, 50),  # a loop: 1,000 steps
            ("@P0 BRA 0x40", 1000, 20000, 8), ("EXIT", 100, 3200, 10)]
    rows = [["Kernel Name", "void verlet_build<float, 0, 1>(...)"], head]
    rows += [[f"0x{16 * i:x}", f"      {t}", str(st), "0", str(st), f"{w:,}", str(th)] for i, (t, w, th, st) in enumerate(sass)]
    with path.open("w", newline="") as fh:
        import csv
        csv.writer(fh, quoting=csv.QUOTE_ALL).writerows(rows)
    return path


def test_ncu_source_sums_the_straight_runs(tmp_path, capsys):
    page = _source_csv(tmp_path / "s.csv")
    kernel, instr = ncu_source.read(str(page))
    assert kernel.startswith("void verlet_build") and len(instr) == 6
    runs = ncu_source.runs(instr)
    assert [(r["first"], r["last"], r["count"], r["length"]) for r in runs] == [(0, 1, 100, 2), (2, 4, 1000, 3),
                                                                               (5, 5, 100, 1)]
    assert runs[1]["warp"] == 3000 and runs[1]["thread"] / runs[1]["warp"] == 20.0 and runs[1]["stall"] == 88
    assert ncu_source.main([str(page), "--min-share", "5", "--show", "2-3"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1].startswith("3,300 warp instructions, 6 SASS instructions, 100 stall samples")
    table = [line for line in out if "M " in line]
    assert len(table) == 2  # the 1-instruction EXIT run (3.0%) is below 5%
    assert "1,000" in table[1] and "90.9%" in table[1] and "20.0" in table[1] and "88.0%" in table[1]
    assert out[-2].split()[0] == "2" and out[-1].endswith("FADD R3, R3, R2")


def test_ncu_source_refuses_bad_input_in_one_line(tmp_path, capsys):
    assert ncu_source.main([str(tmp_path / "none.csv")]) == 2
    other = tmp_path / "raw.csv"
    other.write_text('"ID","Kernel Name","gpu__time_duration.sum"\n"0","k","1.0"\n')
    assert ncu_source.main([str(other)]) == 2
    assert ncu_source.main([str(_source_csv(tmp_path / "s.csv")), "--show", "9-2"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 3 and "not ncu's source page" in err[1] and "--show takes FIRST-LAST" in err[2]


def test_build_balance_models_the_strip_builds_walks(capsys):
    steps = build_balance.window_steps(4000, 2.8)
    assert steps.shape == (4000, 9) and (steps[:, 4] > 0).all()  # every row walks its own column's window
    assert (steps >= 0).all() and steps.sum(1).min() >= 5
    busy, now, paired, flat = build_balance.balance(steps)
    assert busy < flat <= paired < now  # a warp runs its longest lane: one stream, then pairs, then columns
    assert build_balance.main(["--n", "4000"]) == 0
    assert "with opposite columns paired" in capsys.readouterr().out
    assert build_balance.main(["--n", "10"]) == 2
    assert "--n must be at least 128" in capsys.readouterr().err


def test_build_balance_weighs_narrower_columns_and_the_union_walk(capsys):
    f = build_balance.alternatives(8000, 2.8)
    # a particle's neighbours within r_list: 4/3 pi 2.8^3 0.8442 = 77.6; every window holds them all
    assert 77.6 < f["candidates_2"] < f["candidates_1"] and f["columns_1"] <= 9 < f["columns_2"] <= 25
    # the same windows as window_steps, walked 8 a step: the longest lane per column, summed
    steps = build_balance.window_steps(8000, 2.8)
    w = len(steps) // 32
    assert f["longest_1"] == 8 * steps[: w * 32].reshape(w, 32, 9).max(1).sum(1).mean()
    assert f["union"] > f["longest_1"]  # a warp's lanes sit at different z: the union's windows are longer
    assert build_balance.main(["--n", "8000", "--alternatives"]) == 0
    assert "union of its lanes' windows" in capsys.readouterr().out


def test_trigger_model_cells_trigger_is_exact_and_never_rebuilds_more(capsys):
    """The per-cell trigger keeps every pair within the cutoff in the list (a brute-force check of
    each frame), and on these frames rebuilds no more often than skin/2."""
    r = trigger_model.model(2000, 16, 0.3, check=True, equilibrate=20)
    assert r["cells_a_side"] == 4 and r["by_cells"] <= r["at_half_skin"]
    assert trigger_model.main(["--n", "2000", "--frames", "1"]) == 2
    assert "--frames must be at least 2" in capsys.readouterr().err
    assert trigger_model.main(["--n", "50000", "--check"]) == 2
    assert trigger_model.main(["--n", "2000", "--side", "1.0"]) == 2
    assert "below r_list" in capsys.readouterr().err
    wide = trigger_model.model(2000, 16, 0.3, check=True, equilibrate=20, side=4.4)
    assert wide["cells_a_side"] == 3 and wide["side"] >= 4.4


def test_skin_model_uniform_and_per_particle(capsys):
    import skin_model

    assert skin_model.main(["--n", "500", "--frames", "4", "--sample", "50", "--policy", "0.15:u,0.05:8"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 2 and "uniform skin 0.3" in out[0] and "per particle m 0.05 K 8" in out[1]
    for line in out:
        rows = float(line.split("rows ")[1].split()[0])
        assert 30.0 < rows < 120.0  # about 4/3 pi (2.5 + ~0.3)^3 0.8442 partners within reach


def test_skin_model_bad_policy_exits_2(capsys):
    import skin_model

    assert skin_model.main(["--policy", "0.1:x"]) == 2
    assert skin_model.main(["--policy=-1:u"]) == 2
    assert skin_model.main(["--frames", "2"]) == 2
    assert "skin_model" in capsys.readouterr().err


def test_skin_model_since_build_starts_uniform(capsys):
    import skin_model

    assert skin_model.main(["--n", "500", "--frames", "4", "--sample", "50", "--since-build",
                            "--policy", "0.15:u,0.05:8"]) == 0
    uni, per = capsys.readouterr().out.splitlines()
    # no rebuild in 3 steps: both keep their first list, the uniform one of skin 0.3
    assert ": 0 rebuilds" in uni and ": 0 rebuilds" in per
    assert uni.split("rows ")[1] == per.split("rows ")[1]


def test_skin_model_caps_the_half_skins_at_half_the_skin(capsys):
    import skin_model

    assert skin_model.main(["--n", "500", "--frames", "4", "--sample", "50", "--skin", "0.1",
                            "--policy", "0.03:40"]) == 0
    line = capsys.readouterr().out.strip()
    assert abs(float(line.split("largest half-skin ")[1]) - 0.05) < 1e-12
    assert skin_model.main(["--skin", "0"]) == 2

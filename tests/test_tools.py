"""The device-call helpers in tools/: the bench table and the ncu metrics a call's log ends with."""
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import bench_table  # noqa: E402
import ncu_metrics  # noqa: E402


def _bench(path: Path) -> Path:
    rows = [
        {"strategy": "verlet_thread_padded[tpp=4]", "n": 32000, "outputs": "forces", "graph_ms": 0.1107,
         "with_list_graph_ms": 0.0144, "build_ms": 0.1052, "amortised_ms": 0.0294, "rebuilds": 21},
        {"strategy": "verlet_thread_padded", "n": 4000, "outputs": "all", "compute_ms": 0.05, "with_list_ms": 0.012,
         "build_ms": 0.04},
        {"strategy": "peer:openmm", "backend": "peer", "n": 4000, "status": "ok", "step_ms": 0.0601, "force_ms": 0.13},
        {"strategy": "c08_thread_2d", "n": 4000, "outputs": "forces", "error": "n/a: too few cells"},
    ]
    path.write_text(json.dumps({"kind": "bench", "rows": rows}))
    return path


def test_bench_table_gives_the_three_columns_and_the_peers_step(tmp_path, capsys):
    assert bench_table.main([str(_bench(tmp_path / "b.json"))]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"# {tmp_path / 'b.json'}"
    assert "scratch 0.1107 list 0.0144 build 0.1052 amort 0.0294 rebuilds 21" in out[1]
    assert "scratch 0.0500 list 0.0120 build 0.0400 amort - rebuilds -" in out[2]  # no graph replay: events
    assert "whole MD step 0.0601 ms" in out[3]
    assert "n/a: n/a: too few cells" in out[4]


def test_bench_table_refuses_what_is_not_a_bench_result_in_one_line(tmp_path):
    bad = tmp_path / "x.json"
    bad.write_text("not json")
    p = subprocess.run([sys.executable, str(ROOT / "tools" / "bench_table.py"), str(bad)], capture_output=True,
                       text=True)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and "not a bench result" in p.stderr
    p = subprocess.run([sys.executable, str(ROOT / "tools" / "bench_table.py")], capture_output=True, text=True)
    assert p.returncode == 2


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


def test_ncu_metrics_missing_file_exits_2(tmp_path, capsys):
    assert ncu_metrics.main([str(tmp_path / "none.csv")]) == 2


def test_the_device_call_scripts_parse():
    for script in ("gpu_run.sh", "gpu_benches.sh"):
        p = subprocess.run(["bash", "-n", str(ROOT / "tools" / script)], capture_output=True, text=True)
        assert p.returncode == 0, p.stderr

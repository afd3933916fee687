"""`harness compare`: a change counts only above the threshold and the noise of both sides."""
import json

import pytest

from harness import cli, compare, results
from mdcore import InputError

DEVICE = {"gpu": "NVIDIA H200", "commit": "abc"}


def row(strategy, median, q1=None, q3=None, status="ok", **extra):
    r = {"strategy": strategy, "name": strategy, "backend": "cuda", "scenario": "lj_liquid", "n": 4000,
         "precision": "fp32", "outputs": "all", "status": status}
    if status == "ok":
        r.update(compute_ms=median, compute_min_ms=median * 0.9, compute_max_ms=median * 1.5,
                 compute_q1_ms=q1 if q1 is not None else median * 0.99,
                 compute_q3_ms=q3 if q3 is not None else median * 1.01)
    return {**r, **extra}


def write(path, rows, device=DEVICE):
    path.write_text(json.dumps(results.document("bench", rows, device, {"command": "x"})))
    return path


@pytest.fixture
def pair(tmp_path):
    old = write(tmp_path / "old.json", [
        row("slower", 1.0), row("faster", 1.0), row("small_change", 1.0), row("noisy", 1.0, 0.85, 1.15),
        row("breaks", 1.0), row("gone", 1.0), row("fixed", 0, status="error", detail="lock lost")])
    new = write(tmp_path / "new.json", [
        row("slower", 1.2), row("faster", 0.7), row("small_change", 1.03), row("noisy", 1.1, 0.95, 1.25),
        row("breaks", 0, status="error", detail="lock lost"), row("added", 1.0), row("fixed", 1.0)],
        device={**DEVICE, "commit": "def"})
    return old, new


def test_verdicts(pair):
    changes, meta = compare.compare(*pair, threshold=0.05)
    got = {c.point.split()[0]: c.verdict for c in changes}
    assert got == {"slower": "regression", "faster": "improvement", "small_change": "same",
                   "noisy": "same",  # +10% inside a noise of 30% (interquartile / median)
                   "breaks": "regression", "gone": "gone", "added": "new", "fixed": "new"}
    slower = next(c for c in changes if c.point.startswith("slower"))
    assert slower.change == pytest.approx(0.2) and slower.noise == pytest.approx(0.02)
    assert meta["old_commit"] == "abc" and meta["new_commit"] == "def"
    assert "now error: lock lost" in next(c for c in changes if c.point.startswith("breaks")).note


def test_the_threshold_decides_above_the_noise(pair):
    changes, _ = compare.compare(*pair, threshold=0.25)
    assert {c.point.split()[0]: c.verdict for c in changes}["slower"] == "same"
    assert compare.parse_threshold("5%") == pytest.approx(0.05) and compare.parse_threshold("0.1") == 0.1
    for bad in ("abc", "-5%", "0"):
        with pytest.raises(InputError, match="--threshold"):
            compare.parse_threshold(bad)


def test_cli_exit_status_and_json(pair, tmp_path, capsys):
    old, new = pair
    assert cli.main(["compare", str(old), str(new), "--json", str(tmp_path / "c.json")]) == 1  # a regression
    out = capsys.readouterr().out
    assert "regression  slower lj_liquid N=4000 fp32 all  1 -> 1.2 ms  +20.0% (noise 2.0%)" in out
    doc = json.loads((tmp_path / "c.json").read_text())
    assert doc["kind"] == "compare" and len(doc["points"]) == 8
    same = write(tmp_path / "same.json", [row("slower", 1.0)])
    assert cli.main(["compare", str(old), str(same)]) == 0


def test_bad_inputs(pair, tmp_path, capsys):
    old, _ = pair
    other = write(tmp_path / "other.json", [row("slower", 1.0)], device={"gpu": "NVIDIA H100", "commit": "x"})
    assert cli.main(["compare", str(old), str(other)]) == 2
    assert "measured on NVIDIA H200" in capsys.readouterr().err
    assert cli.main(["compare", str(old), str(other), "--any-device"]) == 0
    disjoint = write(tmp_path / "d.json", [row("elsewhere", 1.0)])
    assert cli.main(["compare", str(old), str(disjoint)]) == 2
    assert "no point in common" in capsys.readouterr().err
    verify = tmp_path / "v.json"
    verify.write_text(json.dumps({"schema_version": 2, "kind": "verify", "rows": [], "tolerances": {}}))
    assert cli.main(["compare", str(old), str(verify)]) == 2
    assert "is not a bench result" in capsys.readouterr().err
    assert cli.main(["compare", str(old), str(tmp_path / "missing.json")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_older_results_without_quartiles_use_the_range(tmp_path):
    r = row("a", 1.0)
    for k in ("compute_q1_ms", "compute_q3_ms"):
        r.pop(k)
    old = write(tmp_path / "o.json", [r])
    new = write(tmp_path / "n.json", [row("a", 1.3)])
    (c,) = compare.compare(old, new)[0]
    assert c.noise == pytest.approx(0.6) and c.verdict == "same" and "min..max" in c.note


def test_two_real_bench_runs(tmp_path, capsys):
    args = ["bench", "--strategies", "allpairs_thread_cpu", "--scenario", "uniform", "--n", "tiny", "--repeat", "3",
            "--warmup", "1", "--min-time", "0", "--out", str(tmp_path), "--quiet"]
    for name in ("a", "b"):
        assert cli.main([*args, "--name", name]) == 0
    rows = json.loads((tmp_path / "a.json").read_text())["rows"]
    assert rows[0]["compute_q1_ms"] <= rows[0]["compute_ms"] <= rows[0]["compute_q3_ms"]
    capsys.readouterr()
    code = cli.main(["compare", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--threshold", "50%"])
    out = capsys.readouterr().out
    assert code in (0, 1) and "allpairs_thread_cpu uniform N=300 fp32 all" in out


def test_device_metric_takes_the_graph_replay_where_a_row_has_one(tmp_path):
    """--metric device: what the report's verdict ranks, the graph replay of a GPU row, the
    compute time of a row without one (CPU strategies)."""
    g = {"graph_ms": 0.5, "graph_q1_ms": 0.495, "graph_q3_ms": 0.505}
    old = write(tmp_path / "old.json", [row("gpu", 1.0, **g), row("cpu", 1.0, backend="cpu")])
    new = write(tmp_path / "new.json", [row("gpu", 1.0, **{**g, "graph_ms": 0.4}), row("cpu", 2.0, backend="cpu")])
    got = {c.point.split()[0]: c for c in compare.compare(old, new, metric="device")[0]}
    assert got["gpu"].verdict == "improvement" and got["gpu"].old_ms == 0.5 and got["gpu"].new_ms == 0.4
    assert got["cpu"].verdict == "regression" and got["cpu"].new_ms == 2.0
    same = {c.point.split()[0]: c.verdict for c in compare.compare(old, new, metric="compute")[0]}
    assert same["gpu"] == "same"  # the compute medians did not move

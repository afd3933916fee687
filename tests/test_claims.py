"""`python -m harness claims`: verdicts computed from result files (synthetic ones here, so that
each rule is seen to give each verdict), and bad input refused in one line."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness import claims

ROOT = Path(__file__).resolve().parent.parent


def _bench(path: Path, rows: list[dict], date="2026-11-24T10:00:00+00:00"):
    full = []
    for r in rows:
        t = r.pop("t")
        full.append({"status": "ok", "scenario": "lj_liquid", "n": 1000, "precision": "fp32", "outputs": "forces",
                     "potential": "lj", "with_list_graph_ms": t, "with_list_graph_q1_ms": 0.99 * t,
                     "with_list_graph_q3_ms": 1.01 * t, **r})
    path.write_text(json.dumps({"schema_version": 2, "kind": "bench", "meta": {"date": date}, "rows": full}))


def _layout_rows(name, times, **extra):
    return [{"strategy": f"{name}[layout={k}]" if k != "aos4" else name, "name": name,
             "launch_params": {"block": 128, "layout": k}, "t": t, **extra} for k, t in times.items()]


def _verdicts(folder):
    return {r["claim"]: r for r in claims.evaluate(claims.load([folder]))}


def test_layout_claims_follow_the_timings(tmp_path):
    # float3 30% faster everywhere, SoA a tie: float3 claim holds, SoA unnecessary holds, SoA better fails
    _bench(tmp_path / "a.json", _layout_rows("fullshell_thread_csr", {"aos4": 1.3, "aos3": 1.0, "soa": 1.31})
           + _layout_rows("allpairs_thread_naive", {"aos4": 2.6, "aos3": 2.0, "soa": 2.6}))
    v = _verdicts(tmp_path)
    assert v["float3-vs-float4"]["verdict"] == "holds"
    assert v["aos-soa-unnecessary"]["verdict"] == "holds"
    assert v["soa-cache-efficiency"]["verdict"] == "does not hold"
    assert "1.30x" in v["float3-vs-float4"]["measured"]


def test_layout_claims_depend_when_kernels_disagree(tmp_path):
    _bench(tmp_path / "a.json", _layout_rows("fullshell_thread_csr", {"aos4": 1.0, "aos3": 1.2, "soa": 1.2})
           + _layout_rows("allpairs_thread_naive", {"aos4": 1.5, "aos3": 1.0, "soa": 1.0}))
    v = _verdicts(tmp_path)
    assert v["float3-vs-float4"]["verdict"] == "depends"
    assert "allpairs_thread_naive" in v["float3-vs-float4"]["why"]


def test_the_charges_in_float4_claim_reads_only_charged_or_typed_points(tmp_path):
    ff = {"potential": "ff:charged_lj#61ab6d6e72", "scenario": "charged_lj"}
    # LJ points: float4 much faster (the float3 claim fails there) and no charged point: not measured
    _bench(tmp_path / "a.json", _layout_rows("fullshell_thread_csr", {"aos4": 1.0, "aos3": 1.5}))
    v = _verdicts(tmp_path)
    assert v["charges-in-float4"]["verdict"] == "not measured" and v["float3-vs-float4"]["verdict"] == "does not hold"
    # charged: float3 + array a tie at one point, faster at the other: packing is not beneficial
    _bench(tmp_path / "b.json", _layout_rows("fullshell_thread_csr", {"aos4": 1.0, "aos3": 1.001}, **ff)
           + _layout_rows("verlet_thread_padded", {"aos4": 1.2, "aos3": 1.0}, **ff))
    v = _verdicts(tmp_path)
    assert v["charges-in-float4"]["verdict"] == "holds" and "0 of 2" in v["charges-in-float4"]["why"]
    assert v["float3-vs-float4"]["verdict"] == "does not hold"  # the charged points do not enter it
    # packing faster at both charged points: it does not hold
    _bench(tmp_path / "b.json", _layout_rows("fullshell_thread_csr", {"aos4": 1.0, "aos3": 1.2}, **ff)
           + _layout_rows("verlet_thread_padded", {"aos4": 1.0, "aos3": 1.3}, **ff))
    v = _verdicts(tmp_path)["charges-in-float4"]
    assert v["verdict"] == "does not hold" and "verlet_thread_padded" in v["why"]


def test_rows_of_different_runs_or_launches_are_not_compared(tmp_path):
    # aos4 in one file, aos3 in another: no pair (different runs); different blocks: no pair
    _bench(tmp_path / "a.json", _layout_rows("fullshell_thread_csr", {"aos4": 1.3}))
    _bench(tmp_path / "b.json", _layout_rows("fullshell_thread_csr", {"aos3": 1.0}))
    rows = _layout_rows("allpairs_thread_tiled", {"aos4": 1.3, "aos3": 1.0})
    rows[1]["launch_params"]["block"] = 256
    _bench(tmp_path / "c.json", rows)
    assert _verdicts(tmp_path)["float3-vs-float4"]["verdict"] == "not measured"


def test_quantization_is_not_measured_without_fixed_results(tmp_path):
    _bench(tmp_path / "a.json", _layout_rows("fullshell_thread_csr", {"aos4": 1.0}))
    v = _verdicts(tmp_path)["quantization-speed"]
    assert v["verdict"] == "not measured" and "fixed" in v["why"]


def _precision_rows(name, times):
    return [{"strategy": name, "name": name, "launch_params": {"block": 128}, "precision": p, "t": t}
            for p, t in times.items()]


def test_quantization_verdict_follows_fixed_against_mixed(tmp_path):
    # fixed faster than mixed at both points: holds; fp32 shown beside it
    _bench(tmp_path / "a.json", _precision_rows("fullshell_thread_csr", {"fixed": 1.0, "mixed": 1.4, "fp32": 0.9})
           + _precision_rows("c08_warp_csr", {"fixed": 2.0, "mixed": 2.5, "fp32": 1.8}))
    v = _verdicts(tmp_path)["quantization-speed"]
    assert v["verdict"] == "holds" and "1.40x" in v["measured"] and "fp32 / fixed time" in v["measured"]
    assert "against fp32 fixed point is 0.90-0.90x as fast" in v["why"]
    # slower than mixed everywhere: does not hold
    _bench(tmp_path / "a.json", _precision_rows("fullshell_thread_csr", {"fixed": 1.5, "mixed": 1.0}))
    assert _verdicts(tmp_path)["quantization-speed"]["verdict"] == "does not hold"


def _nve(path: Path, drifts: dict, steps=200000):
    rows = [{"strategy": s, "precision": p, "n": 4000, "steps": steps, "dt": 0.005, "status": "ok", "drift": d,
             "max_deviation": abs(d) * 10} for (s, p), d in drifts.items()]
    path.write_text(json.dumps({"kind": "nve", "rows": rows}))


def test_single_precision_md_verdict_from_the_drifts(tmp_path):
    _nve(tmp_path / "a.json", {("fs", "fp32"): 2e-7, ("fs", "fp64"): -3e-7, ("vl", "fp32"): 1e-7, ("vl", "fp64"): 1e-7})
    assert _verdicts(tmp_path)["single-precision-md"]["verdict"] == "does not hold"
    _nve(tmp_path / "b.json", {("fs", "fp32"): 5e-4, ("fs", "fp64"): 1e-7}, steps=400000)  # a longer run wins
    v = _verdicts(tmp_path)["single-precision-md"]
    assert v["verdict"] == "holds" and "400,000 steps" in v["measured"]


def test_views_mutex_and_newton3_pairs(tmp_path):
    rows = [{"strategy": n, "name": n, "launch_params": {}, "t": t} for n, t in (
        ("c08_thread_2d", 1.0), ("c08_thread_nested", 1.3),
        ("parity_warpblock_shared_atomic", 1.0), ("parity_warpblock_twopass_atomic", 1.2),
        ("parity_warpblock_shared_mutex", 50.0), ("parity_warpblock_twopass_mutex", 80.0))]
    _bench(tmp_path / "a.json", rows)
    v = _verdicts(tmp_path)
    assert v["nested-vs-2d-views"]["verdict"] == "holds"
    assert v["shared-vs-twopass"]["verdict"] == "holds"
    assert v["global-mutex-cost"]["verdict"] == "holds" and "50.00x" in v["global-mutex-cost"]["measured"]


def test_cli_writes_markdown_and_json(tmp_path):
    _bench(tmp_path / "a.json", _layout_rows("fullshell_thread_csr", {"aos4": 1.3, "aos3": 1.0, "soa": 1.3}))
    out, js = tmp_path / "claims.md", tmp_path / "claims.json"
    r = subprocess.run([sys.executable, "-m", "harness", "claims", str(tmp_path), "--out", str(out), "--json", str(js)],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert "| claim | source |" in out.read_text() and "**holds**" in out.read_text()
    doc = json.loads(js.read_text())
    assert doc["kind"] == "claims" and len(doc["claims"]) == len(claims.CLAIMS)
    assert f"{len(claims.CLAIMS)} claims from 1 result files" in r.stderr


@pytest.mark.parametrize("args, message", [
    (["/nonexistent/folder"], "results folder /nonexistent/folder does not exist"),
    (["--out", "/tmp/claims-out.txt"], "--out: /tmp/claims-out.txt must end in .md"),
])
def test_cli_bad_input_one_line(args, message):
    r = subprocess.run([sys.executable, "-m", "harness", "claims", *args], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_cli_empty_folder_is_refused(tmp_path):
    r = subprocess.run([sys.executable, "-m", "harness", "claims", str(tmp_path)], capture_output=True, text=True,
                       cwd=ROOT)
    assert r.returncode == 2 and "no result files" in r.stderr


def test_the_on_chip_table_claim_compares_shared_with_global_tables(tmp_path):
    """table=shared against table=global at the same typed point: faster at a small table, slower at a large
    one: depends, naming both; single-type rows do not count."""
    def rows(scenario, glob, shared):
        base = {"name": "verlet_thread_padded", "scenario": scenario, "potential": f"ff:{scenario}#0123456789"}
        return [{**base, "strategy": "verlet_thread_padded", "launch_params": {"block": 128, "table": "global"},
                 "t": glob},
                {**base, "strategy": "verlet_thread_padded[table=shared]", "launch_params": {"block": 128,
                                                                                            "table": "shared"},
                 "t": shared}]
    lj = [{"name": "verlet_thread_padded", "strategy": "verlet_thread_padded", "potential": "lj",
           "launch_params": {"block": 128, "table": "global"}, "t": 1.0}]
    _bench(tmp_path / "a.json", rows("typed_lj", 0.20, 0.18) + rows("typed_lj:types=64", 0.25, 0.31) + lj)
    v = _verdicts(tmp_path)["table-on-chip"]
    assert v["verdict"] == "depends" and "1 faster, 0 tie, 1 slower of 2 points" in v["why"]
    assert "typed_lj N=1,000 fp32 1.11x" in v["measured"] and "types=64 N=1,000 fp32 0.81x" in v["measured"]

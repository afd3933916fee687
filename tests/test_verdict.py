"""The report's verdict (harness.report.verdict) on rows whose answer is known: winner, margin,
ties inside the noise, runs never mixed, two devices side by side, the why line from the data."""
import json

import pytest

from harness import cli
from harness.report import verdict as V


def _row(strategy, ms, n=1000, scenario="lj_liquid", q=0.01, amortised=None, run=0, gpu="GPU A", checks=None,
         precision="fp32", outputs="all", noisy=False):
    r = {"strategy": strategy, "name": strategy.split("[")[0], "backend": "cuda", "scenario": scenario, "n": n,
         "precision": precision, "outputs": outputs, "status": "ok", "compute_ms": ms * 1.5, "graph_ms": ms,
         "graph_q1_ms": ms * (1 - q / 2), "graph_q3_ms": ms * (1 + q / 2), "checks_per_interaction": checks,
         "_file": run, "_device": {"gpu": gpu}, "noisy": noisy}
    if amortised is not None:
        r.update(amortised_ms=amortised, amortised_spread=0.02)
    return r


def test_the_winner_and_its_margin_over_the_runner_up():
    rows = [_row("a", 1.0, checks=2.0), _row("b", 1.5, checks=7.0), _row("c", 3.0)]
    v = V.table(rows, [])
    assert len(v) == 1
    got = v.iloc[0]
    assert (got["winner"], got["runner-up"], got["margin"], got["verdict"]) == ("a", "b", "1.50x", "wins")
    assert got["why"] == "2.00 against 7.00 distance checks per interaction"


def test_a_margin_inside_the_noise_is_a_tie():
    # 4% apart with 1% quartiles: inside the 5% floor
    assert V.table([_row("a", 1.0), _row("b", 1.04)], []).iloc[0]["verdict"] == "tie"
    # 20% apart, but the runner-up's interquartile range is 30% of its median
    assert V.table([_row("a", 1.0), _row("b", 1.2, q=0.3)], []).iloc[0]["verdict"] == "tie"
    assert V.table([_row("a", 1.0), _row("b", 1.2)], []).iloc[0]["verdict"] == "wins"


def test_a_strategy_is_represented_by_its_fastest_label():
    rows = [_row("a[tpp=1]", 1.0), _row("a[tpp=8]", 0.5), _row("b", 0.8)]
    pts = V.points(rows)
    assert pts.iloc[0]["winner_label"] == "a[tpp=8]" and pts.iloc[0]["runner_up"] == "b"


def test_groups_by_size_range_count_the_points_won():
    rows = [_row("a", 1.0, n=n) for n in (1000, 4000, 8000)] + [_row("b", 2.0, n=n) for n in (1000, 4000)] + \
           [_row("b", 0.5, n=8000)] + [_row("a", 10.0, n=10 ** 6), _row("b", 5.0, n=10 ** 6)]
    v = V.table(rows, [])
    small, large = v.iloc[0], v.iloc[1]
    assert (small["sizes"], small["winner"], small["first at"], small["N"]) == ("< 20k", "a", "2 of 3", "1,000-8,000")
    assert (large["sizes"], large["winner"], large["margin"]) == (">= 300k", "b", "2.00x")


def test_rows_of_different_runs_are_never_compared():
    rows = [_row("a", 1.0, run=0), _row("b", 0.5, run=1)]  # each run timed one strategy: no verdict
    assert V.table(rows, []).empty


def test_runs_of_other_strategies_at_the_same_points_get_their_own_row():
    # run 0 timed the main strategies, run 1 a launch sweep of two others at the same point (like the
    # full suite's MarDyn part): neither run's winner is named over strategies it never met
    main = [_row("a", 1.0, run=0, n=10 ** 6), _row("b", 2.0, run=0, n=10 ** 6), _row("c", 3.0, run=0, n=10 ** 6)]
    sweep = [_row("p[w=1]", 5.0, run=1, n=10 ** 6), _row("p[w=8]", 4.0, run=1, n=10 ** 6), _row("q", 6.0, run=1, n=10 ** 6)]
    v = V.table(main + sweep, [])
    assert list(zip(v["winner"], v["compared"], v["first at"])) == [("a", 3, "1 of 1"), ("p", 2, "1 of 1")]
    # a run sharing two strategies with the first joins its comparison (their rankings can disagree)
    again = [_row("a", 1.1, run=2, n=2 * 10 ** 6), _row("b", 0.9, run=2, n=2 * 10 ** 6)]
    v = V.table(main + again, [])
    assert len(v) == 1 and v.iloc[0]["first at"] == "1 of 2" and v.iloc[0]["compared"] == 3


def test_per_md_step_only_where_every_strategy_has_it():
    both = [_row("a", 1.0, amortised=0.9), _row("b", 0.5, amortised=0.3)]
    v = V.table(both, [])
    assert set(v["time"]) == {V.STEP, V.SCRATCH}
    partial = [_row("a", 1.0, amortised=0.9), _row("b", 0.5), _row("c", 2.0, amortised=0.1)]
    assert set(V.table(partial, [])["time"]) == {V.SCRATCH}


def test_two_devices_side_by_side():
    rows = [_row("a", 1.0), _row("b", 2.0), _row("a", 1.0, run=1, gpu="GPU B"), _row("b", 0.5, run=1, gpu="GPU B")]
    v = V.table(rows, [])
    side = V.devices_side_by_side(v)
    assert list(side.columns[-2:]) == ["GPU A", "GPU B"]
    assert side.iloc[0]["GPU A"].startswith("a 2.00x") and side.iloc[0]["GPU B"].startswith("b 2.00x")
    assert V.devices_side_by_side(V.table(rows[:2], [])) is None


def test_the_why_line_names_each_bound_from_ncu():
    prof = [{"strategy": "a", "scenario": "lj_liquid", "n": 1000, "outputs": "all",
             "ncu": {"heaviest": {"issue_active_pct": 80.0, "achieved_occupancy_pct": 50.0}}},
            {"strategy": "b", "scenario": "lj_liquid", "n": 1000, "outputs": "all",
             "ncu": {"heaviest": {"issue_active_pct": 30.0, "top_stalls": [["long_scoreboard", 9.0]]}}},
            {"strategy": "b", "scenario": "lj_liquid", "n": 10 ** 6, "outputs": "all",  # far in N: not this point
             "ncu": {"heaviest": {"issue_active_pct": 99.0}}}]
    why = V.table([_row("a", 1.0), _row("b", 2.0)], prof).iloc[0]["why"]
    assert "a issue-bound (80% of issue slots, occupancy 50%)" in why
    assert "b latency-bound (long-scoreboard stalls, 30% of issue slots)" in why


def test_the_correctness_line():
    verify = [{"rows": [{"status": "pass"}] * 5 + [{"status": "n/a"}] * 2 + [{"status": "FAIL"}]}]
    assert V.correctness_line(verify).startswith("Correctness: 5 pass, 1 fail, 2 n/a (")
    # verify's negative control must fail: counted apart when it does, as a failure when it does not
    control = {"strategy": "verlet_thread_padded[rebuild=never]", "launch_params": {"rebuild": "never"},
               "scenario": "lj_liquid@replay"}
    static = dict(control, scenario="lj_liquid", status="pass")  # positions unchanged: the old list is right
    caught = [{"rows": [{"status": "pass"}] * 2 + [static, dict(control, status="FAIL")]}]
    line = V.correctness_line(caught)
    assert line.startswith("Correctness: 3 pass, 0 fail, 0 n/a; negative controls") and "1 of 1 failed as they must" in line
    missed = V.correctness_line([{"rows": [{"status": "pass"}] * 3 + [dict(control, status="pass")]}])
    assert missed.startswith("Correctness: 3 pass, 1 fail") and "1 passed (counted as failures)" in missed


@pytest.mark.parametrize("version", [0, 99, "2"])
def test_the_report_refuses_unknown_schema_versions(tmp_path, capsys, version):
    p = tmp_path / "b.json"
    p.write_text(json.dumps({"schema_version": version, "kind": "bench", "device": {}, "rows": []}))
    assert cli.main(["report", str(p), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert f"schema_version {version!r}" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_the_issue_bound_of_a_profile():
    from harness.report.sections import issue_bound_ms

    prof = {"device": {"sms": 132, "sm_clock_mhz": 1980.0},
            "ncu": {"kernels": [{"inst_executed": 1.0e8}, {"inst_executed": 0.5e8}]}}
    # 1.5e8 warp instructions at 4 x 132 issues per cycle, 1.98e9 cycles per second
    assert issue_bound_ms(prof) == pytest.approx(1.5e8 / (4 * 132 * 1.98e9) * 1e3)
    assert issue_bound_ms({"device": {}, "ncu": {"kernels": [{"inst_executed": 1.0}]}}) is None

"""harness results: the campaign's stages run in order as child processes, each marked done once it
ends with its expected status; a budget stops before a stage; a folder holding another commit's
campaign is refused unless restarted; stages that need a GPU wait for one."""
import json
from pathlib import Path

import pytest

from harness import campaign, cli, device
from mdcore import InputError

ROOT = Path(__file__).resolve().parent.parent


def _stages(monkeypatch, stages):
    monkeypatch.setattr(campaign, "stages", lambda: stages)


TINY = ("verify", "--strategies", "allpairs_thread_cpu", "--scenarios", "lj_liquid", "--size", "tiny",
        "--precision", "fp64", "--quiet", "--out", "{dir}/verify/tiny")
# a stage whose work does not matter, only when it starts and ends (no numba compile: half a second)
QUICK = ("list", "--json")


def test_stages_run_in_order_once_and_the_state_says_so(tmp_path, monkeypatch):
    _stages(monkeypatch, [campaign.Stage("list", ("list", "--json"), gpu=False),
                          campaign.Stage("verify-tiny", TINY, gpu=False)])
    said = []
    assert campaign.run(root=tmp_path, say=said.append) == 0
    folder = tmp_path / "reports" / device.machine_name()
    state = json.loads((folder / "campaign.json").read_text())
    assert list(state["stages"]) == ["list", "verify-tiny"] and state["commit"] == campaign.code_commit()
    assert (folder / "verify" / "tiny" / "verify.json").is_file()
    assert (folder / "logs" / "verify-tiny.log").is_file()
    said.clear()
    assert campaign.run(root=tmp_path, say=said.append) == 0  # nothing left: nothing runs again
    assert "2 of 2 stages done" in said[0] and not any("..." in s for s in said)


def test_a_stage_ending_otherwise_than_expected_stops_the_campaign(tmp_path, monkeypatch):
    bad = ("verify", "--strategies", "allpairs_thread_cpu", "--scenarios", "lj_liquid", "--size", "tiny",
           "--precision", "fp64", "--quiet", "--launch", "block=64", "--out", "{dir}/v")  # refused: exit 2
    _stages(monkeypatch, [campaign.Stage("refused", bad, gpu=False), campaign.Stage("list", ("list",), gpu=False)])
    said = []
    assert campaign.run(root=tmp_path, say=said.append) == 1
    assert any("refused: FAILED (exit 2, expected 0" in s for s in said)
    state = json.loads((tmp_path / "reports" / device.machine_name() / "campaign.json").read_text()) \
        if (tmp_path / "reports" / device.machine_name() / "campaign.json").exists() else {"stages": {}}
    assert "list" not in state["stages"]  # the campaign stopped at the failure
    # a negative control that must fail is done when it fails
    _stages(monkeypatch, [campaign.Stage("refused", bad, gpu=False, expect=2)])
    assert campaign.run(root=tmp_path, say=said.append) == 0


def test_the_budget_stops_before_a_stage_and_gpu_stages_wait_for_a_gpu(tmp_path, monkeypatch):
    from strategies.cuda import device_status

    _stages(monkeypatch, [campaign.Stage("gpu-only", ("list",)), campaign.Stage("list", ("list",), gpu=False)])
    said = []
    assert campaign.run(budget=5.0, root=tmp_path, say=said.append) == 0
    assert any("stopped at the budget" in s for s in said)
    if not device_status()[0]:
        said.clear()
        assert campaign.run(root=tmp_path, say=said.append) == 0
        assert any("gpu-only: skipped" in s for s in said)
        # the stage without a GPU (a report) runs on what there is, and is not marked done before the rest
        assert any("list: built in" in s and "1 before it still to run" in s for s in said)
        state = json.loads((tmp_path / "reports" / device.machine_name() / "campaign.json").read_text()) \
            if (tmp_path / "reports" / device.machine_name() / "campaign.json").exists() else {"stages": {}}
        assert "list" not in state["stages"]


def test_a_campaign_of_other_code_is_refused_unless_restarted(tmp_path, monkeypatch):
    _stages(monkeypatch, [campaign.Stage("list", ("list",), gpu=False)])
    folder = tmp_path / "reports" / device.machine_name()
    folder.mkdir(parents=True)
    (folder / "campaign.json").write_text(json.dumps({"commit": "0123456", "stages": {"list": {}}}))
    with pytest.raises(InputError, match="holds a campaign at commit 0123456"):
        campaign.run(root=tmp_path, say=lambda s: None)
    assert campaign.run(root=tmp_path, restart=True, say=lambda s: None) == 0
    assert json.loads((folder / "campaign.json").read_text())["commit"] == campaign.code_commit()


def test_the_command_line_refuses_unknown_stages_and_lists_the_rest(capsys):
    assert cli.main(["results", "--stages", "nope"]) == 2
    assert "unknown stage(s) nope" in capsys.readouterr().err
    assert cli.main(["results", "--machine", "Bad Name", "--dry-run"]) == 2
    assert cli.main(["results", "--machine", "nvidia-h200", "--dry-run", "--stages", "claims,report"]) == 0
    out = capsys.readouterr().out
    assert "claims" in out and "report" in out and "--readme" in out


def test_the_measured_code_names_every_module_that_measures():
    """CODE ties a campaign to the commit of what it measures: every path in it exists, and the modules
    behind the reciprocal strategies', the MC moves' and the molecules' stages are in it (a change to
    them starts a new campaign); the report, the claims and the other commands are not."""
    for path in campaign.CODE:
        assert (ROOT / path).exists(), path
    for path in ("harness/ewald_bench.py", "harness/cli/kspace.py", "harness/mc_systems.py", "harness/kspace_check.py",
                 "harness/molecule_bench.py", "harness/molecule_check.py", "harness/rigid_md.py"):
        assert path in campaign.CODE
    assert not any(p.startswith(("harness/report", "harness/claims")) for p in campaign.CODE)


def test_the_campaign_covers_every_suite_and_every_gpu_strategy():
    import strategies
    from harness import suites

    names = {s.name for s in campaign.stages()}
    assert {f"bench-{s}" for s in suites.SUITES if s != "full"} <= names
    assert {f"profile-{n}" for n in strategies.names("cuda")} <= names
    assert {"verify-small", "verify-medium", "nve", "claims", "report"} <= names
    from strategies import molecules_cuda

    mol = next(s for s in campaign.stages() if s.name == "bench-molecules")
    assert set(mol.argv[mol.argv.index("--strategies") + 1].split(",")) == set(molecules_cuda.TRAVERSALS)
    assert {"bench-molecules-large", "nve-molecules"} <= names
    assert all(s.alone for s in campaign.stages() if s.name.startswith("profile-"))
    never = next(s for s in campaign.stages() if s.name == "verify-never")
    assert never.expect == 1 and "rebuild=never" in never.argv


def test_the_generated_docs_match_the_code():
    """docs/strategies/*.md and docs/cli.md are written by `python -m harness docs`: a strategy or an
    option changed without its page fails here."""
    from harness import docs

    assert docs.run(ROOT / "docs", check=True) == []


def test_stages_side_by_side_wait_for_each_other_where_they_must(tmp_path, monkeypatch):
    """With two slots, two GPU stages run at once, and a stage without a GPU (the report: it reads
    the others' results) starts only after every stage before it ended. The GPUs are faked (the
    stages run CPU strategies)."""
    import strategies.cuda

    _stages(monkeypatch, [campaign.Stage("a", QUICK), campaign.Stage("b", QUICK), campaign.Stage("c", ("list",), gpu=False)])
    monkeypatch.setattr(campaign, "gpu_slots", lambda gpus: ["0", "1"])
    monkeypatch.setattr(strategies.cuda, "device_status", lambda: (True, ""))
    monkeypatch.setattr(device, "header", lambda: {"gpu": "faked"})
    said = []
    assert campaign.run(root=tmp_path, gpus=2, say=said.append) == 0
    at = {s.strip(): k for k, s in enumerate(said)}
    started = [k for k, s in enumerate(said) if s.strip() in ("a ... (GPU 0)", "b ... (GPU 1)")]
    ended = [k for k, s in enumerate(said) if s.strip().startswith(("a: done", "b: done"))]
    assert len(started) == 2 and len(ended) == 2 and max(started) < min(ended)  # side by side
    assert at["c ..."] > max(ended)  # the stage without a GPU after both
    state = json.loads((tmp_path / "reports" / device.machine_name() / "campaign.json").read_text())
    assert set(state["stages"]) == {"a", "b", "c"}


def test_gpus_is_refused_by_name_where_it_cannot_be_met(monkeypatch):
    from strategies.cuda import device_status

    if device_status()[0]:
        with pytest.raises(InputError, match="is not a count of GPUs"):
            campaign.gpu_slots("many")
        with pytest.raises(InputError, match="this machine has"):
            campaign.gpu_slots(4096)
    else:
        with pytest.raises(InputError, match="needs GPUs"):
            campaign.gpu_slots(2)
    assert campaign.gpu_slots(None) == [None] and campaign.gpu_slots(1) == [None]


def test_the_stages_join_one_dask_cluster(tmp_path, monkeypatch):
    """results --cluster local:2 starts one cluster and each bench or verify stage joins it at its
    address (a replayed verify runs alone); --gpus and --cluster are not taken together."""
    pytest.importorskip("distributed", reason="the cluster extra (dask, distributed) is not installed")
    bench = ("bench", "--strategies", "allpairs_thread_cpu", "--scenario", "uniform", "--n", "tiny", "--repeat", "2",
             "--min-time", "0", "--warmup", "1", "--amortised", "0", "--quiet", "--out", "{dir}/bench", "--name", "b")
    _stages(monkeypatch, [campaign.Stage("verify-tiny", TINY, gpu=False), campaign.Stage("bench-tiny", bench, gpu=False)])
    said = []
    assert campaign.run(root=tmp_path, cluster="local:2", say=said.append) == 0
    assert any(s.startswith("cluster: 2 CPU worker(s)") for s in said), said
    folder = tmp_path / "reports" / device.machine_name()
    rows = json.loads((folder / "bench" / "b.json").read_text())["rows"]
    assert rows and all("worker" in r for r in rows)  # measured on the cluster's workers
    assert all("worker" in r for r in json.loads((folder / "verify" / "tiny" / "verify.json").read_text())["rows"])
    with pytest.raises(InputError, match="not both"):
        campaign.run(root=tmp_path, cluster="local:2", gpus=2, say=said.append)


def test_a_stage_marked_alone_runs_with_nothing_beside_it(tmp_path, monkeypatch):
    """The profiles (Nsight Compute) run one at a time even where several GPUs take stages side by
    side: the stage before one ends before it starts, and the stage after it waits for it."""
    import strategies.cuda

    _stages(monkeypatch, [campaign.Stage("a", QUICK), campaign.Stage("p", QUICK, alone=True), campaign.Stage("b", QUICK)])
    monkeypatch.setattr(campaign, "gpu_slots", lambda gpus: ["0", "1"])
    monkeypatch.setattr(strategies.cuda, "device_status", lambda: (True, ""))
    monkeypatch.setattr(device, "header", lambda: {"gpu": "faked"})
    said = []
    assert campaign.run(root=tmp_path, gpus=2, say=said.append) == 0
    at = {s.strip().split(" ...")[0].split(":")[0] + (" start" if "..." in s else " end"): k for k, s in enumerate(said)
          if s.startswith("  ")}
    assert at["a end"] < at["p start"] < at["p end"] < at["b start"]


def test_under_a_budget_only_the_stages_that_fit_start(tmp_path, monkeypatch):
    """A --restart keeps the replaced campaign's stage times: under a budget, a stage that took longer
    than is left waits for the next run and a later one that fits goes first; a resumable stage (a
    bench suite, point by point) starts anyway, and one longer than the whole budget as a run's first;
    the report waits for every stage before it."""
    import strategies.cuda

    long_ = campaign.Stage("long", QUICK)
    _stages(monkeypatch, [campaign.Stage("short", QUICK), long_, campaign.Stage("short2", QUICK),
                          campaign.Stage("report", ("list",), gpu=False)])
    monkeypatch.setattr(strategies.cuda, "device_status", lambda: (True, ""))
    monkeypatch.setattr(device, "header", lambda: {"gpu": "faked"})
    folder = tmp_path / "reports" / device.machine_name()
    folder.mkdir(parents=True)
    (folder / "campaign.json").write_text(json.dumps({"commit": "0123456", "stages": {
        "short": {"seconds": 2.0}, "long": {"seconds": 150.0}, "report": {"seconds": 30.0}}}))
    said = []
    assert campaign.run(dry_run=True, root=tmp_path, say=said.append) == 0  # at other code: the times it would keep
    assert any(s.split()[:3] == ["long", "150", "s"] for s in said) and any("3 of 4 stages timed" in s for s in said)
    said.clear()
    assert campaign.run(budget=120.0, root=tmp_path, restart=True, say=said.append) == 0
    state = json.loads((folder / "campaign.json").read_text())
    assert list(state["stages"]) == ["short", "short2"] and state["expected"]["long"] == 150.0
    assert any("none of them fits the" in s and "long took 150 s" in s for s in said)
    said.clear()
    assert campaign.run(dry_run=True, root=tmp_path, say=said.append) == 0
    assert any(s.split()[:3] == ["long", "150", "s"] for s in said) and any("2 of 2 stages timed" in s for s in said)
    camp = campaign.Campaign(folder, state["commit"], "m")
    resumable = campaign.Stage("suite", ("bench", "--suite", "default", "--resume"))
    camp.ran_at_least(resumable, 600.0)
    assert campaign._fits(resumable, camp, 100.0) and not campaign._fits(long_, camp, 160.0)
    # longer than the whole budget: it starts only as a run's first stage
    assert campaign._fits(long_, camp, 120.0, 120.0, first=True) and not campaign._fits(long_, camp, 119.0, 120.0)
    assert campaign._fits(long_, camp, 170.0, 200.0)
    camp.state["expected"].pop("suite")
    camp.save()
    # a resumable stage stopped at the budget twice: its time, once done, is the three runs' sum
    camp.spent(resumable, 100.0)
    camp.spent(resumable, 50.0)
    assert camp.mark(resumable, 25.0, None) == 175.0 and camp.state["stages"]["suite"]["seconds"] == 175.0
    assert "spent" not in camp.state
    camp.state["stages"].pop("suite")
    camp.save()
    said.clear()
    assert campaign.run(root=tmp_path, say=said.append) == 0  # no budget: the rest, in order
    assert list(json.loads((folder / "campaign.json").read_text())["stages"]) == ["short", "short2", "long", "report"]

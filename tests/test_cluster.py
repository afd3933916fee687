"""bench --cluster: a sweep's points as tasks on Dask workers (a LocalCluster of processes with the
CPU strategies here) give the serial run's points, in its order, with the same statuses; every
worker takes points; a point whose worker dies is run once more elsewhere, then reported; bad
--cluster values and a missing Dask end in one line, exit 2."""
import json
import sys

import pytest

from harness import cli

distributed = pytest.importorskip("distributed", reason="the cluster extra (dask, distributed) is not installed")

BENCH = ["bench", "--strategies", "allpairs_thread_cpu", "--scenario", "uniform",
         "--scenario", "gaussian:sigma=4", "--n", "tiny,400", "--repeat", "2", "--min-time", "0", "--warmup", "1",
         "--amortised", "0", "--quiet"]


def _key(r):
    return (r["strategy"], r["scenario"], r["n"], r["precision"], r.get("potential"))


def test_a_cluster_sweep_gives_the_serial_points_and_every_worker_takes_some(tmp_path):
    assert cli.main([*BENCH, "--out", str(tmp_path), "--name", "serial"]) == 0
    assert cli.main([*BENCH, "--out", str(tmp_path), "--name", "cluster", "--cluster", "local:2"]) == 0
    serial = json.loads((tmp_path / "serial.json").read_text())
    clustered = json.loads((tmp_path / "cluster.json").read_text())
    assert [_key(r) for r in clustered["rows"]] == [_key(r) for r in serial["rows"]]
    assert [r["status"] for r in clustered["rows"]] == [r["status"] for r in serial["rows"]]
    assert [r.get("pairs") for r in clustered["rows"]] == [r.get("pairs") for r in serial["rows"]]
    workers = {r["worker"]["pid"] for r in clustered["rows"] if r["status"] == "ok"}
    assert all(r["worker"]["cpu_threads"] >= 1 for r in clustered["rows"] if r["status"] == "ok")
    assert len(workers) == 2  # both workers took points
    assert clustered["meta"]["cluster"]["workers"] == 2
    assert not (tmp_path / "cluster.partial.jsonl").exists()  # written as rows came, removed at the end


def _running_callbacks():
    from distributed import get_worker

    return sorted(n for n, pc in get_worker().periodic_callbacks.items() if pc.is_running())


def _noisy_after_quiet():
    import time

    from distributed import get_worker

    from harness.cluster import NOISY_CALLBACKS, quiet_worker

    quiet_worker()
    time.sleep(0.2)  # the stops run on the worker's event loop
    callbacks = get_worker().periodic_callbacks
    return sorted(n for n in NOISY_CALLBACKS if n in callbacks and callbacks[n].is_running())


def _threads_after_share(k):
    from harness.cluster import identity, share_cores

    before = identity()["cpu_threads"]
    share_cores(k)
    return before, identity()["cpu_threads"]


def test_a_timing_worker_stops_its_profiler_and_loop_monitors_and_takes_its_share_of_cores():
    import os

    from harness.cluster import Cluster, quiet_worker

    assert quiet_worker() == []  # outside a worker: nothing to stop
    cluster = Cluster("local:1")
    try:
        running = cluster.client.submit(_running_callbacks, pure=False).result(timeout=60)
        assert "profile" in running  # on by default: the test can fail
        assert cluster.client.submit(_noisy_after_quiet, pure=False).result(timeout=60) == []
        before, after = cluster.client.submit(_threads_after_share, 1, pure=False).result(timeout=60)
        assert before == (os.cpu_count() or 1) and after == 1  # one worker: every core; then the share
    finally:
        cluster.close()


def _die_once(marker):
    import os
    from pathlib import Path

    if not Path(marker).exists():
        Path(marker).write_text("died here once")
        os._exit(1)
    return {"status": "ok", "pid": os.getpid()}


def _die_always():
    import os

    os._exit(1)


def test_a_point_whose_worker_dies_runs_again_once_then_is_reported(tmp_path):
    import cloudpickle

    from harness import cluster

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the workers cannot import this test module
    c = cluster.Cluster("local:2")
    try:
        rows = {}
        lost = lambda k, why: {"status": "error", "detail": why}  # noqa: E731
        # one at a time: a point waiting on a worker that dies counts that loss too
        cluster.gather(c.client, [c.client.submit(_die_once, str(tmp_path / "marker"), pure=False)],
                       rows.__setitem__, lost)
        once = rows.pop(0)
        cluster.gather(c.client, [c.client.submit(_die_always, pure=False)], rows.__setitem__, lost)
    finally:
        c.close()
    assert once["status"] == "ok"  # run again on another (or a restarted) worker
    assert rows[0]["status"] == "error" and "lost 2 times" in rows[0]["detail"]


@pytest.mark.parametrize("where, words", [("nowhere", "take local, local:K or a scheduler address"),
                                          ("local:0", "the number of workers must be at least 1")])
def test_a_bad_cluster_is_refused_in_one_line(tmp_path, capsys, where, words):
    assert cli.main([*BENCH, "--out", str(tmp_path), "--cluster", where]) == 2
    err = capsys.readouterr().err
    assert words in err and len(err.strip().splitlines()) == 1
    assert not list(tmp_path.iterdir())


def test_without_dask_the_cluster_option_names_the_extra(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed now fails
    assert cli.main([*BENCH, "--out", str(tmp_path), "--cluster", "local:2"]) == 2
    assert "make setup EXTRAS=cluster" in capsys.readouterr().err


def test_a_cluster_verify_gives_the_serial_matrix(tmp_path):
    args = ["verify", "--strategies", "allpairs_thread_cpu,fullshell_thread_cpu", "--scenarios", "lj_liquid,uniform",
            "--size", "tiny", "--precision", "fixed", "--quiet"]  # fixed: the digests, the same-bits rule
    assert cli.main([*args, "--out", str(tmp_path / "serial")]) == 0
    assert cli.main([*args, "--out", str(tmp_path / "cluster"), "--cluster", "local:2"]) == 0
    serial = json.loads((tmp_path / "serial" / "verify.json").read_text())
    clustered = json.loads((tmp_path / "cluster" / "verify.json").read_text())
    key = lambda r: (r["strategy"], r["scenario"], r["precision"])  # noqa: E731
    assert [key(r) for r in clustered["rows"]] == [key(r) for r in serial["rows"]]
    assert [(r["status"], r.get("digest")) for r in clustered["rows"]] == \
        [(r["status"], r.get("digest")) for r in serial["rows"]]
    assert len({r["worker"]["pid"] for r in clustered["rows"]}) == 2
    assert cli.main([*args, "--out", str(tmp_path / "r"), "--cluster", "local:2", "--replay", "5"]) == 2


def test_a_cluster_run_resumes_an_interrupted_sweep(tmp_path):
    """The client keeps the partial file: --resume with --cluster takes the rows measured earlier as
    they are and sends only the others to the workers."""
    args = [*BENCH, "--out", str(tmp_path), "--name", "r"]
    assert cli.main(args) == 0
    doc = json.loads((tmp_path / "r.json").read_text())
    kept = [dict(row, compute_ms=12345.0) for row in doc["rows"][:2]]  # marked: must come back unchanged
    lines = [json.dumps({"device": doc["device"], "meta": doc["meta"]})] + [json.dumps(k) for k in kept]
    (tmp_path / "r.partial.jsonl").write_text("\n".join(lines) + "\n")
    assert cli.main([*args, "--resume", "--cluster", "local:2"]) == 0
    rows = json.loads((tmp_path / "r.json").read_text())["rows"]
    assert len(rows) == len(doc["rows"]) and [x["compute_ms"] for x in rows[:2]] == [12345.0, 12345.0]
    assert all(x["compute_ms"] != 12345.0 and "worker" in x for x in rows[2:])
    assert not (tmp_path / "r.partial.jsonl").exists()


def test_two_local_clusters_at_once_start_without_a_port_warning():
    """A second cluster on the node (another harness run, a notebook's) takes its own port for the
    scheduler's HTTP server instead of warning that 8787 is in use."""
    import warnings

    from harness import cluster

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        a = cluster.Cluster("local:1")
        try:
            b = cluster.Cluster("local:1")
            b.close()
        finally:
            a.close()
    assert not [w for w in caught if "already in use" in str(w.message)], [str(w.message) for w in caught]

"""Sweeps on Dask (`bench --cluster`): every point of a sweep is a task, run on whichever worker is
free, one point at a time per worker, so that a point's timing runs alone on its GPU.

  --cluster local      every GPU of this node, a worker each (dask-cuda's LocalCUDACluster pins
                       each with CUDA_VISIBLE_DEVICES); without a GPU, a worker per two cores
  --cluster local:K    K such workers
  --cluster tcp://H:P  an existing scheduler (dask-jobqueue's SLURMCluster, `dask scheduler` and
                       `dask cuda worker --nthreads 1` by hand, ...)

What the CPU does once per problem is done once, not per worker: the client builds each problem
and scatters it, and the trajectory of the amortised column is recorded by one task whose result
the problem's points share. The client writes each row to the partial file as it arrives (so
--resume works as without a cluster) and the result file in the sweep's order; each row names the
worker and its GPU (model, index, UUID). A worker lost in the middle of a point has the point run
again once elsewhere; lost twice, the point is an error row that says so (Dask counts the loss of a
worker against every point it held, the ones waiting their turn there too). The peers (OpenMM, ...)
run in the client.

Dask, distributed and (for GPUs) dask-cuda are the optional extra `cluster` (make setup
EXTRAS=cluster); without them --cluster says so in one line.
"""
from __future__ import annotations

import os
import re
import socket
from typing import Callable

from mdcore import InputError

HINT = "install the cluster extra (dask, distributed; dask-cuda for GPUs): make setup EXTRAS=cluster"
RETRIES = 1  # a point whose worker died is run once more elsewhere
# a local cluster's scheduler without its dashboard still serves health and metrics over HTTP, on
# port 8787 unless told otherwise: any free port, so that a second cluster on the node does not warn
QUIET = {"dashboard_address": ":0"}


def parse(spec: str) -> tuple[str, int | None]:
    """("local", K or None) or (address, None); bad text ends in one line."""
    m = re.fullmatch(r"local(?::(\d+))?", spec)
    if m:
        k = int(m.group(1)) if m.group(1) else None
        if k is not None and k < 1:
            raise InputError(f"--cluster {spec}: the number of workers must be at least 1")
        return "local", k
    if re.fullmatch(r"(tcp|tls|ucx|inproc)://[^\s/]+(:\d+)?", spec):
        return spec, None
    raise InputError(f"--cluster {spec!r}: take local, local:K or a scheduler address such as tcp://host:8786")


def _modules():
    try:
        import dask
        import distributed
    except ImportError:
        raise InputError(f"--cluster needs Dask: {HINT}") from None
    return dask, distributed


class Cluster:
    """A Dask client on the cluster --cluster names (started here for local; closed with close())."""

    def __init__(self, spec: str):
        where, k = parse(spec)
        dask, distributed = _modules()
        # a point lost with its worker is run once more elsewhere, then reported (KilledWorker)
        dask.config.set({"distributed.scheduler.allowed-failures": RETRIES})
        self._cluster = None
        self.threads = None  # numba threads per worker, where this process starts the workers
        if where == "local":
            from strategies.cuda import device_status

            if device_status()[0]:
                try:
                    from dask_cuda import LocalCUDACluster
                except ImportError:
                    raise InputError(f"--cluster local on a GPU node needs dask-cuda: {HINT}") from None
                import cupy

                ids = list(range(cupy.cuda.runtime.getDeviceCount()))
                if k is not None and k > len(ids):
                    raise InputError(f"--cluster local:{k}: this node has {len(ids)} GPU(s)")
                ids = ids[:k] if k else ids
                # the node's cores shared among its workers: CPU-side work (references, CPU strategies)
                # in two workers at once would otherwise each start a thread per core
                self.threads = max(1, (os.cpu_count() or 1) // len(ids))
                self._cluster = LocalCUDACluster(CUDA_VISIBLE_DEVICES=",".join(map(str, ids)), threads_per_worker=1,
                                                 dashboard_address=None, silence_logs=40, scheduler_kwargs=QUIET)
                self.what = f"{len(ids)} GPU worker(s) on this node"
            else:
                cores = os.cpu_count() or 1
                n = k or max(1, cores // 2)
                env = {"NUMBA_NUM_THREADS": str(max(1, cores // n))}
                self._cluster = distributed.LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                                                         dashboard_address=None, silence_logs=40, env=env,
                                                         scheduler_kwargs=QUIET)
                self.what = f"{n} CPU worker(s) on this node (no GPU here)"
            self.client = distributed.Client(self._cluster)
        else:
            try:
                self.client = distributed.Client(where, timeout="20s")
            except (OSError, TimeoutError) as e:
                raise InputError(f"--cluster {where}: no scheduler answers there ({type(e).__name__})") from None
            self.what = f"the scheduler at {where}"
        self.workers = len(self.client.scheduler_info().get("workers", {}))

    def close(self) -> None:
        try:
            self.client.close()
        finally:
            if self._cluster is not None:
                self._cluster.close()


def share_cores(threads: int | None) -> None:
    """Use `threads` of numba's threads in this task (its thread: numba's count is per thread)."""
    if threads:
        import numba

        numba.set_num_threads(max(1, min(int(threads), numba.config.NUMBA_NUM_THREADS)))


def identity() -> dict:
    """The worker a row was measured on: host, process, its numba threads, and its GPU (model, index,
    UUID) if any."""
    import numba

    out = {"host": socket.gethostname(), "pid": os.getpid(), "cpu_threads": numba.get_num_threads(), "gpu": None}
    try:
        from strategies.cuda import device_status

        if device_status()[0]:
            import cupy

            props = cupy.cuda.runtime.getDeviceProperties(0)
            uuid = props.get("uuid", b"")
            out.update(gpu=props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"]),
                       gpu_index=os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0],
                       gpu_uuid="GPU-" + bytes(uuid).hex() if uuid else None)
    except Exception:  # the identity is a label: a worker without CuPy still measures
        pass
    return out


# a worker's periodic callbacks that take the GIL many times a second: the statistical profiler
# (every 10 ms), the event-loop health checks (20 ms) and the system monitor (500 ms). While a point
# is timed they stall its host-side launch sequence by up to the interpreter's 5 ms switch interval:
# measured on an H200, points of 1,000 to 8,000 particles (0.03-0.1 ms) read up to twice the
# serial sweep's time with spreads of 300-1,000 %. Heartbeats and the memory monitor stay.
NOISY_CALLBACKS = ("profile", "profile-cycle", "tick", "ticks", "monitor")


def quiet_worker() -> list[str]:
    """Stop this worker's NOISY_CALLBACKS (from its event loop: tornado's callbacks are not
    thread-safe); the names stopped. Outside a Dask worker, nothing."""
    try:
        from distributed import get_worker

        worker = get_worker()
    except Exception:  # no Dask, or not in a worker (distributed raises ValueError, some versions wrapped)
        return []
    stopped = [name for name in NOISY_CALLBACKS
               if worker.periodic_callbacks.get(name) is not None and worker.periodic_callbacks[name].is_running()]
    for name in stopped:
        worker.loop.add_callback(worker.periodic_callbacks[name].stop)
    return stopped


def _point_task(name: str, lp: dict, problem, timing: dict, frames, threads: int | None = None) -> dict:
    from . import bench

    quiet_worker()
    share_cores(threads)
    row = bench.measure(bench.point_strategy(name, lp), problem, timing, frames)
    return {**row, "worker": identity()}


def _frames_task(problem, frames: int, threads: int | None = None):
    from . import bench

    share_cores(threads)
    return bench.trajectory(problem, frames)


def gather(client, futures: list, on_row: Callable[[int, dict], None], lost: Callable[[int, str], dict]) -> None:
    """Each future's row, as it ends, to on_row(index, row); a future whose worker was lost more
    than RETRIES times becomes lost(index, why)."""
    from distributed import as_completed
    from distributed.scheduler import KilledWorker

    index = {f.key: k for k, f in enumerate(futures)}
    for fut in as_completed(futures):
        k = index[fut.key]
        try:
            row = fut.result()
        except KilledWorker as e:
            row = lost(k, f"its worker was lost {RETRIES + 1} times while measuring it ({type(e).__name__})")
        on_row(k, row)
        fut.release()


class BenchRun:
    """bench.run on the cluster: add() each part of the sweep (submitting its points), then rows()
    gathers them all, in the sweep's order (the same rows as bench.run would give)."""

    def __init__(self, cluster: Cluster, timing: dict, done: dict | None, sink, progress, bar):
        self.client, self.timing, self.done, self.threads = cluster.client, timing, done, cluster.threads
        self.sink, self.progress, self.bar = sink, progress, bar
        self.slots: list = []  # the sweep's rows in order: a row, or the index of a future
        self.futures: list = []
        self.meta: list = []  # per future: its error row, the reason left to fill

    def add(self, names, scenario, sizes, precision: str, *, seed: int, launch, problem, sweep, potential,
            amortised: int, outputs: str, shard) -> None:
        from . import bench

        timing = {**self.timing, "outputs": outputs}
        for (p, outside), mine in bench.problems(names, scenario, sizes, precision, seed, launch, problem, sweep,
                                                 potential, shard):
            scattered = frames = None
            for name, lp in mine:
                s = bench.point_strategy(name, lp)
                key = (s.label, p.label.split(" ")[0], p.n, precision, outputs, p.potential.spec())
                if outside:
                    self._row(bench.outside_row(s, p, precision, outputs, outside, timing["max_checks"]))
                elif self.done and self.done.get(key):
                    self._row(self.done[key].pop(0))
                else:
                    if scattered is None:  # built once here, sent once to the workers that need it
                        scattered = self.client.scatter(p, hash=False)
                        if amortised:
                            frames = self.client.submit(_frames_task, scattered, amortised, self.threads,
                                                         pure=False)
                    self.futures.append(self.client.submit(_point_task, name, lp, scattered, timing, frames,
                                                           self.threads, pure=False))
                    self.meta.append(bench.error_row(s, p, precision, outputs, ""))  # not the problem itself
                    self.slots.append(len(self.futures) - 1)

    def _row(self, row: dict) -> None:
        self.slots.append(row)
        if self.bar is not None:
            self.bar.update(1)

    def rows(self) -> list[dict]:
        from . import bench

        results: dict[int, dict] = {}

        def on_row(k: int, row: dict) -> None:
            results[k] = row
            if self.sink is not None:
                self.sink(row)
            if self.bar is not None:
                self.bar.update(1)
            if self.progress:
                self.progress(bench.format_row(row))

        gather(self.client, self.futures, on_row, lambda k, why: {**self.meta[k], "detail": why})
        return [results[r] if isinstance(r, int) else r for r in self.slots]


def _reference_task(problem, threads: int | None = None):
    import reference

    share_cores(threads)
    return reference.compute(problem)


def _cell_task(strategy, scenario: str, problem, ref, precision: str, limits: dict,
               threads: int | None = None) -> dict:
    from .verify import Case, run_cell

    share_cores(threads)
    row = run_cell(strategy, Case(scenario, problem, ref), precision, limits)
    return {**row, "worker": identity()}


def verify_matrix(cluster: Cluster, strategy_list, cases, precisions, limits: dict, progress=None,
                  shard=None) -> list[dict]:
    """verify.run_matrix on the cluster: each case's reference computed once by a task, each cell a
    task; the same rows in the same order, the same-bits rule applied to all of them here."""
    from .verify import _row, same_bits

    client = cluster.client
    strategy_list, precisions = list(strategy_list), list(precisions)
    futures, meta = [], []
    for case in cases:
        mine = [(s, p) for s in strategy_list for p in precisions if shard is None or shard.take()]
        if not mine:
            continue
        problem = client.scatter(case.problem, hash=False)
        ref = client.submit(_reference_task, problem, cluster.threads, pure=False) if case.ref is None else case.ref
        for s, p in mine:
            futures.append(client.submit(_cell_task, s, case.scenario, problem, ref, p, limits, cluster.threads,
                                         pure=False))
            meta.append(_row(s, case, p))
    rows: dict[int, dict] = {}

    def on_row(k: int, row: dict) -> None:
        rows[k] = row
        if progress and row["status"] != "n/a":
            progress(f"  {row['strategy']:18s} {row['precision']:5s} {row['status']}")

    gather(client, futures, on_row, lambda k, why: {**meta[k], "status": "ERROR", "detail": why})
    out = [rows[k] for k in range(len(futures))]
    for r in same_bits(out):
        if progress:
            progress(f"  {r['strategy']:18s} fixed FAIL: {r['detail']}")
    return out

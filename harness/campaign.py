"""`python -m harness results` (`make results`): the canonical results of one GPU model, regenerated
by one command, in stages that each fit a time-limited job and resume where the last one stopped.

The results live in reports/<machine>/ (machine: harness.device.machine_name(), e.g. nvidia-h200),
one folder per GPU model, holding the latest campaign at the commit it names:

  campaign.json           what ran: the commit, the device, each stage done (when, how long)
  verify/<size>/          `harness verify` at small and medium (verify.json, .csv, .md)
  bench/<suite>.json      `harness bench --suite <suite>` (+ .csv), the three timing columns,
                          OpenMM beside the large LJ points
  md/nve.json             `harness md --nve-report`: energy drift per strategy and precision, OpenMM's
  profile/<point>.json    `harness profile`: Nsight Compute on each GPU strategy's force phase at the
                          large LJ liquid (+ .csv of the raw metrics)
  claims.md               `harness claims`: the source documents' claims, verdicts computed
  report/                 `harness report`: index.html, report.md and plots, built from all of the above

Each stage runs as a child process (`python -m harness ...`) with what is left of `--budget` as its
time limit (with --gpus N, N stages at once, each child seeing one GPU, the host's cores shared
among them: each stage times one GPU as it would alone, and the bench and verify stages take about
1/N of the time; the profiles run one at a time, as Nsight Compute allows): a bench stage stopped
there keeps every point it finished (its partial file) and the next run resumes it; a stage that ends
without error is marked done and not run again. Under a budget, a stage that cannot resume starts only
where its time in the campaign that --restart replaced (or its time before a budget stopped it) fits
what is left, a later stage that fits going first (one that took longer than the whole budget starts
only as a run's first). A campaign is tied
to the commit that last changed the measured code (CODE: the strategies, the reference and the
harness's measuring modules) and to one GPU model; a tree with other code starts a new campaign only
with --restart, so that results of two versions are never mixed.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from mdcore import InputError

ROOT = Path(__file__).resolve().parent.parent
SCHEMA_VERSION = 1
# what a campaign's measurements depend on: the strategies, the reference and the harness's measuring
# modules (a change to the report, the claims or the command line leaves the results valid)
CODE = ("mdcore", "reference", "strategies", "harness/bench.py", "harness/amortised.py", "harness/sweep.py",
        "harness/timing.py", "harness/gate.py", "harness/verify.py", "harness/tolerances.py", "harness/scenarios.py",
        "harness/md.py", "harness/peers.py", "harness/profile.py", "harness/suites.py", "harness/campaign.py",
        "harness/cluster.py",
        # the reciprocal strategies' and the MC moves' measurements (mc's timing sits in its command)
        "harness/ewald_bench.py", "harness/kspace_check.py", "harness/mc_systems.py", "harness/cli/kspace.py",
        # the molecules'
        "harness/molecule_bench.py", "harness/molecule_check.py", "harness/molecule_peers.py",
        "harness/molecule_scenarios.py", "harness/rigid_md.py")
# bench timing for the campaign: the median of at least 10 samples and 0.03 s of them per phase (a
# 0.1 ms kernel gives some 300 samples, a 1 ms one 30), and a phase of a slow point (a scheduler
# taking 80 ms, a c08 pass on a clustered gas 0.5 s) at most about 0.3 s, at least 3 samples:
# about 700 points in all must fit a few time-limited calls
TIMING = ["--repeat", "10", "--min-time", "0.03", "--max-time", "0.3", "--quiet"]
PROFILE_SIZE = "large"


@dataclass(frozen=True)
class Stage:
    """One step of the campaign: a `python -m harness` command line ({dir}: the campaign folder)."""

    name: str
    argv: tuple[str, ...]
    gpu: bool = True  # needs the GPU (skipped, and the campaign left incomplete, without one)
    note: str = ""
    expect: int = 0  # the exit status that means done (1 for a negative control, which must fail)
    outputs: tuple[str, ...] = field(default_factory=tuple)  # files it leaves (relative to {dir})
    # runs with no other stage beside it: Nsight Compute instances on one host wait on one lock, and
    # two at once left one report unreadable on a 2-GPU node
    alone: bool = False

    def command(self, folder: Path) -> list[str]:
        return [a.replace("{dir}", str(folder)) for a in self.argv]

    @property
    def resumes(self) -> bool:
        """Stopped at the budget, it keeps what it finished (a bench stage's partial file)."""
        return "--resume" in self.argv


def _bench(suite: str, *extra: str) -> Stage:
    return Stage(f"bench-{suite}", ("bench", "--suite", suite, "--name", suite, "--out", "{dir}/bench", "--resume",
                                    *TIMING, *extra), outputs=(f"bench/{suite}.json",))


def molecule_stages() -> list[Stage]:
    """Rigid molecules (docs/molecules.md): every GPU molecule traversal on the three molecule scenarios
    at 32,768 molecules in each float precision, the list traversals and the warp full shell at a million
    water molecules, and the NVE report on switched water beside OpenMM's rigid water."""
    from strategies import molecules_cuda

    gpu = ",".join(molecules_cuda.TRAVERSALS)
    return [Stage("bench-molecules", ("bench", "--scenario", "spce_water,stockmayer,two_centre_lj_quadrupole", "--n",
                                      "medium", "--precision", "fp32,mixed,fp64", "--strategies", gpu, "--name",
                                      "molecules", "--out", "{dir}/bench", *TIMING), outputs=("bench/molecules.json",)),
            Stage("bench-molecules-large", ("bench", "--scenario", "spce_water", "--n", "large", "--precision", "fp32",
                                            "--strategies", "verlet_warp_padded,verlet_thread_padded,fullshell_warp_csr",
                                            "--name", "molecules-large", "--out", "{dir}/bench", *TIMING),
                  outputs=("bench/molecules-large.json",)),
            Stage("nve-molecules", ("md", "--scenario", "spce_water:switch=8", "--n", "medium", "--nve-report", "--dt",
                                    "0.01", "--temperature", "2.494", "--equilibrate", "200", "--steps", "2000",
                                    "--sample", "100", "--strategies", "verlet_warp_padded,fullshell_thread_csr",
                                    "--json", "{dir}/md/nve-molecules.json"), outputs=("md/nve-molecules.json",),
                  note="SPC/E water, 2 ps of NVE at 1 fs in each precision, OpenMM's rigid water beside")]


def mc_stages() -> list[Stage]:
    """Monte-Carlo moves in reciprocal space (harness mc, docs/forcefield.md) on the built-in water systems,
    one result each under mc/, for the GOMC report's three claims: every GPU reciprocal strategy's batch and
    loop on three-site water in fp64 (the report's precision; the recurrence in fp32 beside it, and its
    loop in one block against the default grid), and on four-site water, whose oxygen carries no charge, the staged and
    per-k kernels with only the charged atoms sent and with all of them."""
    from strategies import kspace

    common = ("--moves", "2000", "--batch", "1000", "--kT", "2.5", "--check", "3")
    out = []

    def stage(tag: str, system: str, name: str, *extra: str) -> None:
        out.append(Stage(f"mc-{tag}", ("mc", "--system", system, "--kspace", name, *common, *extra, "--json",
                                       f"{{dir}}/mc/{tag}.json"), outputs=(f"mc/{tag}.json",)))

    for name in kspace.names("cuda"):
        stage(f"water-{name}", "water", name, "--precision", "fp64")
    stage("water-kspace_thread_rows-fp32", "water", "kspace_thread_rows", "--precision", "fp32")
    stage("water-kspace_thread_rows-block", "water", "kspace_thread_rows", "--precision", "fp64", "--loop", "block")
    for name in ("kspace_block_staged", "kspace_thread_kloop"):
        for charged in ("only", "all"):
            stage(f"water4-{name}-{charged}", "water4", name, "--precision", "fp64", "--launch", f"charged={charged}")
    return out


def stages() -> list[Stage]:
    """The campaign in the order it runs: correctness first, then the suites behind the report's
    sections (harness/suites.py), the NVE table, the molecules, the Monte-Carlo moves, the profiles, and
    the pages built from them."""
    import strategies

    out = [Stage("verify-small", ("verify", "--size", "small", "--quiet", "--out", "{dir}/verify/small"),
                 outputs=("verify/small/verify.json",)),
           Stage("verify-medium", ("verify", "--size", "medium", "--quiet", "--out", "{dir}/verify/medium"),
                 outputs=("verify/medium/verify.json",)),
           Stage("verify-replay", ("verify", "--strategies", "list_reuse=true", "--scenarios", "lj_liquid", "--size",
                                   "small", "--replay", "200", "--quiet", "--out", "{dir}/verify/replay"),
                 note="the list strategies along 200 frames of a recorded trajectory, every frame checked"),
           Stage("verify-never", ("verify", "--strategies", "list_reuse=true+backend=cuda", "--scenarios",
                                  "lj_liquid", "--size", "small", "--precision", "fp32", "--replay", "200",
                                  "--launch", "rebuild=never", "--quiet", "--out", "{dir}/verify/never"),
                 expect=1, note="the negative control: the same replay with the rebuild trigger off must fail")]
    out += [_bench("default"), _bench("large", "--outputs", "all,forces", "--peers", "openmm"),
            _bench("precision", "--amortised", "0"), _bench("bodies", "--amortised", "0", "--peers", "openmm")]
    out += [_bench(s, "--amortised", "0") for s in ("allpairs", "views", "one_per_cell", "nine_per_cell", "gaussian",
                                                    "mardyn", "claims")]
    out.append(Stage("ewald", ("ewald", "--n", "10000,100000", "--precision", "fp32,mixed,fp64", "--peers", "openmm",
                               "--out", "{dir}/ewald", "--name", "ewald", "--quiet"), outputs=("ewald/ewald.json",),
                     note="the reciprocal strategies on 10,000 and 100,000 charges, OpenMM's Ewald beside"))
    out.append(Stage("nve", ("md", "--nve-report", "--n", "4000", "--steps", "200000", "--sample", "2000",
                             "--strategies", "fullshell_thread_csr,verlet_thread_padded,clusterpair_warp_newton3",
                             "--json", "{dir}/md/nve.json"), outputs=("md/nve.json",),
                     note="1000 tau of NVE in each precision, OpenMM's VerletIntegrator beside"))
    out += molecule_stages()
    out += mc_stages()
    for name in strategies.names("cuda"):
        out.append(Stage(f"profile-{name}", ("profile", "--strategy", name, "--scenario", "lj_liquid", "--n",
                                             PROFILE_SIZE, "--outputs", "forces", "--out", "{dir}/profile"),
                         alone=True))
    out.append(Stage("claims", ("claims", "{dir}", "--out", "{dir}/claims.md", "--json", "{dir}/claims.json"),
                     gpu=False, outputs=("claims.md",)))
    out.append(Stage("report", ("report", "{inputs}", "--out", "{dir}", "--name", "report",
                                "--title", "mdforce: canonical results, {machine}", "--readme", "{root}/README.md"),
                     gpu=False, outputs=("report/index.html",),
                     note="also today's ranking in README.md (between its ranking markers)"))
    return out


def code_commit() -> str:
    """The commit that last changed the measured code (CODE; HARNESS_COMMIT where the tree has no usable
    .git: a copy sent to a GPU node), with "+dirty" where those paths hold uncommitted changes."""
    if os.environ.get("HARNESS_COMMIT"):
        return os.environ["HARNESS_COMMIT"]
    if not shutil.which("git") or not (ROOT / ".git").exists():
        return "unknown"

    def git(*args) -> str:
        r = subprocess.run(["git", *args], capture_output=True, text=True, cwd=ROOT)
        return r.stdout.strip() if r.returncode == 0 else ""
    rev = git("log", "-1", "--format=%h", "--abbrev=12", "--", *CODE)
    dirty = git("status", "--porcelain", "--untracked-files=no", "--", *CODE)
    return (rev + ("+dirty" if dirty else "")) or "unknown"


def folder_for(machine: str, root: Path = ROOT) -> Path:
    return root / "reports" / machine


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


FIT = 1.1  # a stage starts under a budget when 1.1 x its last time fits what is left


def _fits(stage: Stage, camp: "Campaign", remaining: float | None, budget: float | None = None,
          first: bool = False) -> bool:
    """Whether a stage may start with `remaining` seconds of the budget left: always without a budget,
    for a stage that resumes (a bench stage keeps its finished points) or one never timed here; one
    that took longer than the whole budget (the code may have sped it up since) as a run's first."""
    t = camp.expected(stage)
    if remaining is None or stage.resumes or t is None or FIT * t <= remaining:
        return True
    return first and budget is not None and FIT * t > budget


def _times(state: dict) -> dict:
    """A campaign state's stage times (seconds), those it expected for the stages it did not run
    included."""
    done = {k: v["seconds"] for k, v in state.get("stages", {}).items() if isinstance(v, dict) and "seconds" in v}
    return {**state.get("expected", {}), **done}


class Campaign:
    """The state file campaign.json of one results folder, and the stages left."""

    def __init__(self, folder: Path, commit: str, machine: str, restart: bool = False):
        self.folder, self.commit, self.machine = folder, commit, machine
        self.path = folder / "campaign.json"
        self.state = {"schema_version": SCHEMA_VERSION, "kind": "campaign", "commit": commit, "machine": machine,
                      "started": _now(), "stages": {}}
        if self.path.exists():
            try:
                old = json.loads(self.path.read_text())
            except (OSError, json.JSONDecodeError) as e:
                raise InputError(f"results: {self.path} is not a campaign file ({e}); remove it or take --restart")
            if not restart and old.get("commit") != commit:
                raise InputError(f"results: {folder} holds a campaign at commit {old.get('commit')}, and this tree's code "
                                 f"is at {commit}; --restart starts a new campaign there (its files are replaced)")
            if not restart:
                self.state = old
            else:  # the replaced campaign's stage times: a budget then starts only the stages that fit
                self.state["expected"] = _times(old)
        if restart and folder.exists():
            for sub in ("bench", "verify", "md", "ewald", "mc", "profile", "report"):
                shutil.rmtree(folder / sub, ignore_errors=True)
            for f in ("campaign.json", "claims.md", "claims.json"):
                (folder / f).unlink(missing_ok=True)

    def done(self, stage: Stage) -> bool:
        return stage.name in self.state["stages"]

    def expected(self, stage: Stage) -> float | None:
        """How long the stage took in the campaign this one replaced (or how long it ran before the
        budget stopped it, at least): None where it never ran in this folder."""
        return self.state.get("expected", {}).get(stage.name)

    def ran_at_least(self, stage: Stage, seconds: float) -> None:
        self.state.setdefault("expected", {})[stage.name] = max(seconds, self.expected(stage) or 0.0)
        self.save()

    def spent(self, stage: Stage, seconds: float) -> None:
        """A resumable stage stopped at the budget: the time it ran counts toward its time when it ends."""
        spent = self.state.setdefault("spent", {})
        spent[stage.name] = round(spent.get(stage.name, 0.0) + seconds, 1)
        self.save()

    def mark(self, stage: Stage, seconds: float, header: dict | None) -> float:
        """The stage is done: its time is this run's seconds plus what earlier runs of it spent (returned)."""
        seconds += self.state.get("spent", {}).pop(stage.name, 0.0)
        if not self.state.get("spent"):
            self.state.pop("spent", None)
        self.state["stages"][stage.name] = {"done": _now(), "seconds": round(seconds, 1)}
        if header and "device" not in self.state:
            self.state["device"] = header
        self.save()
        return seconds

    def save(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(self.state, indent=1) + "\n")
        tmp.replace(self.path)


def report_inputs(folder: Path) -> list[str]:
    """Every result file of a campaign folder that the report reads."""
    done = sorted((folder / "bench").glob("*.json"))
    files = [str(p) for p in done]
    # a suite still running: its rows so far (the report and the ranking say so)
    files += sorted(str(p) for p in (folder / "bench").glob("*.partial.jsonl")
                    if p.name[: -len(".partial.jsonl")] + ".json" not in {d.name for d in done})
    files += sorted(str(p) for p in (folder / "verify").glob("*/verify.json"))
    files += sorted(str(p) for p in (folder / "ewald").glob("*.json"))
    files += sorted(str(p) for p in (folder / "mc").glob("*.json"))
    files += sorted(str(p) for p in (folder / "md").glob("*.json"))
    files += sorted(str(p) for p in (folder / "profile").glob("*.json"))
    return files


def _argv(stage: Stage, folder: Path, machine: str, root: Path = ROOT) -> list[str]:
    out = []
    for a in stage.command(folder):
        if a == "{inputs}":
            out += report_inputs(folder)
        else:
            out.append(a.replace("{machine}", machine).replace("{root}", str(root)))
    return out


def _tidy(stage: Stage, folder: Path) -> None:
    """Nsight Compute's binary reports stay out of the results (the summary and raw metrics stay)."""
    if stage.name.startswith("profile-"):
        for p in (folder / "profile").glob("*.ncu-rep"):
            p.unlink()


def gpu_slots(gpus: str | int | None) -> list[str | None]:
    """The devices stages may run on at once: None (one, as the process finds it) or a list of
    CUDA_VISIBLE_DEVICES entries, one per concurrent stage. gpus: a count or "all"."""
    if gpus in (None, 1, "1"):
        return [None]
    from strategies.cuda import device_status

    ok, why = device_status()
    if not ok:
        raise InputError(f"results: --gpus {gpus} needs GPUs, and this machine has none ({why})")
    import cupy

    count = cupy.cuda.runtime.getDeviceCount()
    if gpus == "all":
        want = count
    else:
        try:
            want = int(gpus)
        except (TypeError, ValueError):
            raise InputError(f"results: --gpus {gpus!r} is not a count of GPUs or 'all'") from None
        if not 1 <= want <= count:
            raise InputError(f"results: --gpus {want}, but this machine has {count} GPU(s)")
    seen = [v.strip() for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
    ids = seen[:count] if len(seen) >= count else [str(i) for i in range(count)]
    return [None] if want == 1 else ids[:want]


@dataclass
class _Running:
    stage: Stage
    slot: str | None
    proc: subprocess.Popen
    log: Path
    t0: float
    deadline: float | None


def _last_line(path: Path) -> str:
    try:
        lines = [ln for ln in path.read_text(errors="replace").strip().splitlines() if ln.strip()]
    except OSError:
        return ""
    return lines[-1] if lines else ""


def run(budget: float | None = None, only: list[str] | None = None, restart: bool = False, root: Path = ROOT,
        dry_run: bool = False, machine: str | None = None, gpus: str | int | None = None,
        cluster: str | None = None, say=print) -> int:
    """Run the stages not done yet, in order, within `budget` seconds (None: no limit). only: stage
    names (or prefixes ending in '-') to run, in campaign order; machine: the results folder's GPU
    model (default: this machine's; another's for the stages without a GPU, claims and report);
    gpus: run that many GPU stages at once, each on a GPU of its own (a count or "all"; default one
    stage at a time). A stage without a GPU (claims, report: they read the others' results) waits
    for every stage before it. cluster: the bench and verify stages' points on Dask workers
    (harness.cluster: local, local:K or a scheduler's address; a local cluster is started once
    here and every stage joins it), the stages one after the other. Returns the exit status: 0 (done, or stopped at the budget: run
    again to continue), 1 (a stage failed), 2 (bad input)."""
    import re

    from . import device
    from strategies.cuda import device_status

    here = device.machine_name()
    if machine is not None and not re.fullmatch(r"[a-z0-9][a-z0-9-]*", machine):
        raise InputError(f"results: --machine {machine!r} is not a machine name such as nvidia-h200")
    machine = machine or here
    folder = folder_for(machine, root)
    all_stages = stages()
    if only:
        known = {s.name for s in all_stages}
        bad = [o for o in only if o not in known and not (o.endswith("-") and any(k.startswith(o) for k in known))]
        if bad:
            raise InputError(f"results: unknown stage(s) {', '.join(bad)}; known: {', '.join(s.name for s in all_stages)}")
        all_stages = [s for s in all_stages if any(s.name == o or (o.endswith("-") and s.name.startswith(o))
                                                   for o in only)]
    if cluster and gpus not in (None, 1, "1"):
        raise InputError("results: take --gpus (stages side by side) or --cluster (points on Dask), not both")
    if cluster:
        from .cluster import parse

        parse(cluster)
    slots = gpu_slots(gpus) if not dry_run else [None]
    commit = code_commit()
    try:
        camp = Campaign(folder, commit, machine, restart=restart and not dry_run)
    except InputError as e:
        if not dry_run:
            raise
        say(f"note: {str(e).removeprefix('results: ')}")
        camp = Campaign(folder / ".dry-run", commit, machine)  # a fresh campaign: every stage left
        try:  # with the times a --restart would keep
            camp.state["expected"] = _times(json.loads((folder / "campaign.json").read_text()))
        except (OSError, ValueError, AttributeError):
            pass
    gpu, why = device_status()
    if machine != here:
        gpu, why = False, f"this machine is {here}, not {machine}"
    left = [s for s in all_stages if not camp.done(s)]
    say(f"results: {folder.relative_to(root) if folder.is_relative_to(root) else folder} (commit {commit}), "
        f"{len(all_stages) - len(left)} of {len(all_stages)} stages done"
        + (f"; {len(slots)} stages at a time, GPUs {','.join(slots)}" if slots != [None] else ""))
    if dry_run:
        width = max((len(s.name) for s in left), default=0)
        for s in left:
            t = camp.expected(s)
            took = f"{t:6.0f} s" if t is not None else "     ? "
            ran = camp.state.get("spent", {}).get(s.name)
            so_far = f" (ran {ran:.0f} s so far)" if ran else ""
            say(f"  {s.name:{width}s} {took}  python -m harness {' '.join(_argv(s, folder, machine, root))}{so_far}")
        known = [camp.expected(s) for s in left if camp.expected(s) is not None]
        if known:
            say(f"  {len(known)} of {len(left)} stages timed before: {sum(known):.0f} s on one GPU")
        return 0
    on = address = None
    if cluster:
        from .cluster import Cluster, parse

        if parse(cluster)[0] == "local":
            on = Cluster(cluster)
            address = on.client.scheduler.address
            say(f"cluster: {on.what}, {on.workers} worker(s), at {address}")
        else:
            address = cluster
    try:
        return _stages(left, camp, folder, machine, root, budget, slots, gpu, why, address, say)
    finally:
        if on is not None:
            on.close()


def _joins(stage: Stage) -> bool:
    """A stage whose points a Dask cluster can take: bench, and verify without --replay."""
    return stage.argv[0] == "bench" or (stage.argv[0] == "verify" and "--replay" not in stage.argv)


def _stages(left: list[Stage], camp: Campaign, folder: Path, machine: str, root: Path, budget: float | None,
            slots: list, gpu: bool, why: str, address: str | None, say) -> int:
    """Run the stages left (run()'s loop): side by side on the slots, or each joining the cluster at
    `address`."""
    from . import device

    start = time.monotonic()
    pending = list(left)
    running: list[_Running] = []
    failed = stopped = False
    launched = 0
    threads = max(1, (os.cpu_count() or 1) // len(slots))

    def launch(s: Stage, slot: str | None) -> None:
        remaining = None if budget is None else budget - (time.monotonic() - start)
        (folder / "logs").mkdir(parents=True, exist_ok=True)
        log = folder / "logs" / f"{s.name}.log"
        env = {**os.environ, "HARNESS_COMMIT": camp.commit, "PYTHONUNBUFFERED": "1",
               "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
        if slot is not None:  # one GPU per stage, the host's cores shared among the stages
            env.update(CUDA_VISIBLE_DEVICES=slot, NUMBA_NUM_THREADS=str(threads))
        cmd = [sys.executable, "-m", "harness", *_argv(s, folder, machine, root)]
        if address and _joins(s):
            cmd += ["--cluster", address]
        say(f"  {s.name} ..." + (f" (GPU {slot})" if slot is not None else ""))
        with open(log, "w") as out:
            proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True)
        now = time.monotonic()
        running.append(_Running(s, slot, proc, log, now, None if remaining is None else now + remaining))

    def finish(r: _Running) -> None:
        nonlocal failed
        seconds = time.monotonic() - r.t0
        if r.proc.returncode != r.stage.expect:
            say(f"  {r.stage.name}: FAILED (exit {r.proc.returncode}, expected {r.stage.expect}, after {seconds:.0f} s): "
                f"{_last_line(r.log)}; log: {r.log}")
            failed = True
            return
        _tidy(r.stage, folder)
        last = _last_line(r.log)
        everything = stages()
        before = everything[:next((k for k, x in enumerate(everything) if x.name == r.stage.name), len(everything))]
        missing = [x for x in before if not camp.done(x)]
        if not r.stage.gpu and missing:  # claims, report: from what there is so far, built again at the end
            say(f"  {r.stage.name}: built in {seconds:.0f} s from the stages done so far ({len(missing)} before it "
                "still to run: it runs again then)")
            return
        total = camp.mark(r.stage, seconds, device.header() if r.stage.gpu else None)
        say(f"  {r.stage.name}: done in {seconds:.0f} s" + (f" ({total:.0f} s with its earlier runs)"
                                                         if total > seconds + 0.5 else "")
            + (f" ({last[:140]})" if last else ""))

    while pending or running:
        # start what may start: a GPU stage on a free slot; a stage without a GPU once nothing runs;
        # under a budget, the first stage that fits it (its time in the campaign this one replaced)
        while pending and not failed and not stopped:
            remaining = None if budget is None else budget - (time.monotonic() - start)
            if remaining is not None and remaining < 30.0:
                say(f"stopped at the budget: {len(pending) + len(running)} stage(s) left; the same command continues")
                stopped = True
                break
            if pending[0].gpu and not gpu:
                say(f"  {pending[0].name}: skipped ({why}); the campaign stays incomplete without a GPU")
                pending.pop(0)
                continue
            s = next((x for x in pending if not x.gpu or _fits(x, camp, remaining, budget, first=not launched)),
                     None)
            if s is None or (not s.gpu and s is not pending[0]):  # claims, report: after every stage before them
                if not running:
                    x = pending[0]
                    say(f"stopped at the budget: {len(pending)} stage(s) left, none of them fits the {remaining:.0f} s "
                        f"left ({x.name} took {camp.expected(x):.0f} s); the same command continues")
                    stopped = True
                break
            free = [x for x in slots if all(r.slot != x for r in running)]
            alone = (not s.gpu) or s.alone
            if not free or (alone and running) or any(not r.stage.gpu or r.stage.alone for r in running):
                break
            pending.remove(s)
            launch(s, free[0] if s.gpu else None)
            launched += 1
        if not running:
            break
        time.sleep(0.2)
        for r in list(running):
            if r.proc.poll() is not None:
                running.remove(r)
                finish(r)
            elif r.deadline is not None and time.monotonic() > r.deadline:
                try:
                    os.killpg(r.proc.pid, 9)
                except (ProcessLookupError, PermissionError):
                    r.proc.kill()
                r.proc.wait()
                running.remove(r)
                if not r.stage.resumes:  # its work is lost: a later budget starts it only where it fits
                    camp.ran_at_least(r.stage, time.monotonic() - r.t0)
                else:  # its points are kept: the time counts toward the stage's when it ends
                    camp.spent(r.stage, time.monotonic() - r.t0)
                last = _last_line(r.log)
                say(f"  {r.stage.name}: stopped at the budget after {time.monotonic() - r.t0:.0f} s"
                    + (f" (last: {last[:160]})" if last else "") + "; the same command continues it")
                stopped = True
    if failed:
        return 1
    if stopped:
        return 0
    done = sum(camp.done(s) for s in stages())
    say(f"results: {done} of {len(stages())} stages done" + ("; the campaign is complete" if done == len(stages())
                                                              else ""))
    return 0

"""`python -m harness sanitize`: compute-sanitizer over every GPU strategy, GPU molecule traversal and GPU
reciprocal strategy.

One sanitizer process per strategy and tool (memcheck, racecheck, synccheck, initcheck) runs
this module's inner mode, which evaluates the strategy (a list strategy also runs 24 MD steps,
its list rebuilt on the device as it goes stale) on a small periodic system (the LJ
liquid at size small, fp32 and fp64: a box of 5 cells per axis, which every GPU strategy
supports; at size tiny, 2 cells, the c08, parity and warp-block strategies do not apply).
Every report of that process is the strategy's (the sanitizer prints some reports only at
exit, so one process per strategy is what makes attribution certain).

A GPU molecule traversal (target molecule:<traversal>) runs on SPC/E water at size small, fp32 and fp64,
on the configuration and a few frames of a random walk through one plan (its list rebuilt as it goes
stale).

A GPU reciprocal strategy (target kspace:<name>) runs Ewald's reciprocal part on 1,000 charges (kmax
8, 9, 10) in each of its launch variants and in fp32, mixed and fp64, then Monte-Carlo moves of
three-atom groups: a batch and the Metropolis loop, on one block and on a grid, in fp32 and fp64.

Under every tool the MD steps record the list upkeep as guarded launches rather than conditional
graph nodes, which the tools do not follow (GUARDED_TOOLS; docs/decisions/sanitizer-conditional-nodes.md).

Prints one line per strategy and tool: clean only where the strategy ran under the tool; "n/a:
reason" where it does not apply to the problem (it never counts as clean); the inner process's
own error where it stopped before the strategy. Exits non-zero on any error, or when a
strategy's evaluation fails under the tool, or when nothing ran.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from mdcore import InputError
from mdcore.poison import ENV as POISON_ENV

TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")
# Tools whose MD steps keep the guarded upkeep launches (MDFORCE_CONDITIONAL=0, strategies/graphs.py)
# instead of conditional graph nodes: all four. Under racecheck and synccheck (CUDA 13) any kernel
# inside a conditional node's body is reported; under memcheck and initcheck the cluster-pair search
# inside one ends the process now and then with an illegal or misaligned address that the tool
# attributes to no kernel (about one run in three with twelve processes on the GPU; never with the
# search left uninstrumented, never without the tool). Outside the sanitizer the conditional steps
# give the guarded steps' bits (tests/test_graphs.py): docs/decisions/sanitizer-conditional-nodes.md.
GUARDED_TOOLS = TOOLS
MARK = "@@sanitize "
_RECORD = re.compile(r"^========= (?!ERROR SUMMARY|RACECHECK SUMMARY|COMPUTE-SANITIZER|Target application|\s)(.+)$")
# memcheck, synccheck, initcheck: "ERROR SUMMARY: N errors"; racecheck: "RACECHECK SUMMARY: N hazards"
_SUMMARY = re.compile(r"^========= (?:ERROR SUMMARY: (\d+) error|RACECHECK SUMMARY: (\d+) hazard)")


DEFAULT_SCENARIO, DEFAULT_SIZE = "lj_liquid", "small"


@dataclass
class Result:
    strategy: str
    tool: str
    errors: int = 0
    ran: bool = False        # the strategy evaluated at least one problem under the tool
    started: bool = False    # the inner process reached this strategy
    failed: str = ""
    na: list[str] = field(default_factory=list)  # "fp32: reason" for each problem it does not apply to
    stopped: str = ""        # the inner process's last error line, where it stopped early
    first: list[str] = field(default_factory=list)
    round: int = 0           # which round of a repeated run (run's repeat)

    @property
    def ok(self) -> bool:
        return self.ran and not self.errors and not self.failed

    @property
    def not_applicable(self) -> bool:
        return self.started and not self.ran and not self.failed and bool(self.na)

    def line(self) -> str:
        if self.not_applicable:
            state = "n/a: " + "; ".join(self.na)
        elif not self.started:
            state = "NOT RUN: " + (self.stopped or "the process stopped before this strategy, without a message")
        elif self.errors:  # what the tool found comes first, then how the process ended
            state = f"{self.errors} error(s): {self.first[0] if self.first else ''}"
            if self.failed:
                state += f"; then FAILED: {self.failed}"
        elif not self.ran and not self.failed:
            state = "NOT RUN: the strategy evaluated nothing"
        elif self.failed:
            state = f"FAILED: {self.failed}"
        else:
            state = "0 errors" if not self.errors else f"{self.errors} error(s): {self.first[0] if self.first else ''}"
            if self.na:
                state += " (n/a: " + "; ".join(self.na) + ")"
        return f"{self.tool:10s} {self.strategy:22s} {state}"


PLANTED = "(planted-faults)"
_PLANTED_SRC = r"""
extern "C" __global__ void planted(float* out, int n) {
  __shared__ float s[64];
  s[threadIdx.x % 64] = (float)threadIdx.x;   // threads t and t + 64 write one word: a race
  out[threadIdx.x] = s[(threadIdx.x + 1) % 64]; // read another warp's word, no barrier: a race
  if (threadIdx.x == 0) out[n] = 1.0f;          // one past the allocation: memcheck
}
"""


def planted() -> None:
    """A kernel with a shared-memory race and an out-of-bounds write: the self-test that the
    tools attach and report (memcheck and racecheck must flag it)."""
    import cupy

    n = 128
    ptr = cupy.cuda.runtime.malloc(4 * n)  # its own allocation, so one past the end is outside it
    try:
        fn = cupy.RawKernel(_PLANTED_SRC, "planted")
        fn((1,), (n,), (cupy.uint64(ptr), cupy.int32(n)))
        print(f"{MARK}ran {PLANTED} fp32", flush=True)  # launched; under memcheck the sync below raises
        cupy.cuda.runtime.deviceSynchronize()
    finally:
        cupy.cuda.runtime.free(ptr)


def inner(names: list[str], scenario: str, size: str, self_test: bool = False) -> int:
    """Run under the sanitizer: each strategy between markers, failures reported as markers."""
    import strategies
    from . import scenarios

    if self_test:
        print(f"{MARK}begin {PLANTED}", flush=True)
        try:
            planted()
        except Exception as e:
            print(f"{MARK}fail {PLANTED} {type(e).__name__}", flush=True)
        print(f"{MARK}end {PLANTED}", flush=True)
        return 0

    problems = [scenarios.make(scenario, size, seed=3, precision=p) for p in ("fp32", "fp64", "fixed")]
    for name in names:
        print(f"{MARK}begin {name}", flush=True)
        if name.startswith(MOLECULE) or name.startswith(KSPACE):
            (_inner_molecules if name.startswith(MOLECULE) else _inner_kspace)(name)
            print(f"{MARK}end {name}", flush=True)
            continue
        try:
            s = strategies.create(name)
            for p in problems:
                ok, why = s.supports(p)
                if ok:
                    s.evaluate(p)
                    if s.list_reuse and all(p.box.periodic) and p.precision != "fixed":  # the steps' list upkeep too:
                        # the guarded rebuild (the MD loop integrates in the float modes)
                        from . import md

                        res = md.run(s, p, steps=24, dt=0.005, sample=12, temperature=2.0)
                        print(f"md {name} {p.precision}: graphs {res.graph}, upkeep {res.upkeep or '-'}", flush=True)
                    print(f"{MARK}ran {name} {p.precision}", flush=True)
                else:
                    print(f"{MARK}na {name} {p.precision}: {why}", flush=True)
        except Exception as e:  # reported per strategy; the next one still runs
            print(f"{MARK}fail {name} {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}", flush=True)
        print(f"{MARK}end {name}", flush=True)
    return 0


MOLECULE = "molecule:"  # a GPU molecule traversal's sanitizer target: molecule:<traversal>
MOLECULE_FRAMES = 6
MOLECULE_STEPS = 4  # device MD steps after the frames


def _targets(spec: str | None, prefix: str, known: list[str], what: str) -> list[str]:
    """The targets <prefix><name> named in a --strategies list, each checked against `known`; all of
    them where the list is not given."""
    if spec is None:
        return [prefix + n for n in known]
    out = []
    for x in (v.strip() for v in spec.split(",") if v.strip().startswith(prefix)):
        if x[len(prefix):] not in known:
            raise InputError(f"sanitize: {x} names no {what}; they are {', '.join(prefix + n for n in known)}")
        out.append(x)
    return out


def molecule_targets(spec: str | None) -> list[str]:
    """The molecule traversals named in a --strategies list (molecule:<name>), checked by name; every GPU
    molecule traversal where the list is not given."""
    from strategies import molecules_cuda

    return _targets(spec, MOLECULE, list(molecules_cuda.TRAVERSALS), "GPU molecule traversal")


def _inner_molecules(name: str) -> None:
    """A GPU molecule traversal under the sanitizer: SPC/E water at size small (1,000 molecules, 3 cells
    a side), fp32 and fp64, on the configuration and MOLECULE_FRAMES frames of a random walk through one
    plan (the Verlet lists built again as they go stale), then MOLECULE_STEPS steps of the device MD
    (strategies.rigid_cuda.DeviceRigid: the fused kick and drift, the list's build behind the device flag, the
    steps' CUDA graphs, a settle)."""
    from strategies import molecules as traversals
    from strategies.molecules_cuda import MoleculePlan
    from strategies.rigid_cuda import DeviceRigid

    from . import molecule_check, molecule_scenarios, rigid_md

    traversal = name[len(MOLECULE):]
    mols, model = molecule_scenarios.make("spce_water", "small", seed=3)
    try:
        ok, why = traversals.applicable(traversal, mols, model)
        for p in ("fp32", "fp64"):
            if not ok:
                print(f"{MARK}na {name} {p}: {why}", flush=True)
                continue
            plan = traversals.Plan(traversal, mols, model, p)
            for frame in [mols] + molecule_check.walk(mols, model, MOLECULE_FRAMES, seed=5):
                plan.evaluate(frame)
            state = rigid_md.start(mols, model, 2.494, 1)
            dev = DeviceRigid(MoleculePlan(traversal, mols, model, p), state)
            dev.steps(0.01, MOLECULE_STEPS)  # one step, then replayed graphs of them where they capture
            dev.download(state)
            print(f"molecules {traversal} {p}: {MOLECULE_FRAMES + 1} frames, {plan.rebuilds} list build(s), "
                  f"{MOLECULE_STEPS} MD steps", flush=True)
            print(f"{MARK}ran {name} {p}", flush=True)
    except Exception as e:  # reported per traversal; the next one still runs
        print(f"{MARK}fail {name} {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}", flush=True)


KSPACE = "kspace:"  # a GPU reciprocal strategy's sanitizer target: kspace:<name>
KSPACE_MOVES = 16


def kspace_targets(spec: str | None) -> list[str]:
    """The reciprocal strategies named in a --strategies list (kspace:<name>), checked by name; every GPU
    reciprocal strategy where the list is not given."""
    from strategies import kspace

    return _targets(spec, KSPACE, kspace.names("cuda"), "GPU reciprocal strategy")


def _inner_kspace(name: str) -> None:
    """A GPU reciprocal strategy under the sanitizer: every launch variant in every precision on
    kspace_check.ions(), then KSPACE_MOVES moves of three-atom groups (the uncharged atoms left out) as
    a batch and through the Metropolis loop on one block and on a grid, in fp32 and fp64."""
    import numpy as np

    from strategies import kspace, kspace_mc

    from . import kspace_check

    strategy = name[len(KSPACE):]
    x, q, ewald = kspace_check.ions()
    try:
        for launch in kspace.KSPACE[strategy].variants:
            s = kspace.create(strategy, **launch)
            for p in kspace.PRECISIONS:
                s.evaluate(x, q, ewald, p)
                print(f"kspace {strategy} {','.join(f'{k}={v}' for k, v in s.resolved(p).items())} {p}", flush=True)
        start, atoms = kspace_mc.molecules(len(q), np.arange(len(q)) // 3, q)
        moves = kspace_mc.draw(KSPACE_MOVES, len(start) - 1, 0.3, 0.3, True, seed=5)
        for p in ("fp32", "fp64"):
            for loop in ("block", "grid"):
                mover = kspace_mc.create(kspace.create(strategy), x, q, ewald, p, start, atoms, loop)
                dev = mover.upload_moves(moves)
                mover.batch(dev, KSPACE_MOVES)
                mover.loop(dev, KSPACE_MOVES, 1.0)  # reads the grid barriers' flag: a synchronisation
                mover.structure()
                print(f"kspace {strategy} moves {p} loop={loop}: batch and loop of {KSPACE_MOVES}", flush=True)
        for p in kspace.PRECISIONS:
            print(f"{MARK}ran {name} {p}", flush=True)
    except Exception as e:  # reported per strategy; the next one still runs
        print(f"{MARK}fail {name} {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}", flush=True)


def parse(tool: str, name: str, text: str) -> Result:
    """The Result of one sanitizer process that ran strategy `name`."""
    r = Result(name, tool)
    summary = None
    records = 0
    errors = []  # the inner process's own "error: ..." lines (harness.cli prints bad input so)
    for line in text.splitlines():
        if line.startswith(MARK):
            kind, _, rest = line[len(MARK):].partition(" ")
            _, _, why = rest.partition(" ")
            if kind == "begin":
                r.started = True
            elif kind == "ran":
                r.ran = True
            elif kind == "na":
                r.na.append(why)
            elif kind == "fail":
                r.failed = why or "error"
            continue
        if line.startswith("error: ") or line.startswith("internal error") or line.startswith("python -m harness"):
            errors.append(line.strip())
        m = _SUMMARY.match(line)
        if m:
            summary = int(m.group(1) or m.group(2))
            continue
        m = _RECORD.match(line)
        if m:
            records += 1
            if len(r.first) < 3:
                r.first.append(m.group(1).strip())
    if not r.started:
        r.stopped = errors[-1] if errors else ""
    elif summary is None:  # the tool never reported: it did not attach, or the process died
        r.failed = r.failed or "no summary from compute-sanitizer (tool not attached, or the process died)"
    r.errors = max(records, summary or 0)
    return r


def run(names: list[str], tools: list[str], scenario: str = DEFAULT_SCENARIO, size: str = DEFAULT_SIZE,
        timeout: float = 600.0, say=print, self_test: bool = False, jobs: int = 1, repeat: int = 1,
        poison: bool = False, logs: str | None = None) -> list[Result]:
    """self_test: run only the planted-fault kernel; its results are ok when the tool flags it.
    jobs: sanitizer processes at once (each is one strategy under one tool, so attribution holds).
    repeat: each (tool, strategy) that many times, the rounds interleaved so that different
    strategies share the GPU (say gets one line per round and result). poison: the inner
    processes fill new allocations with all bits set (mdcore.poison). logs: a folder that gets
    the whole output of every process that was not clean, as TOOL-STRATEGY-ROUND.log."""
    exe = shutil.which("compute-sanitizer")
    if exe is None:
        raise InputError("compute-sanitizer not found on PATH (it ships with the CUDA toolkit)")
    bad = [t for t in tools if t not in TOOLS]
    if bad:
        raise InputError(f"unknown sanitizer tool(s) {', '.join(bad)}; known: {', '.join(TOOLS)}")
    work = [(k, tool, name) for k in range(repeat) for tool in tools
            for name in ([PLANTED] if self_test else names)]

    def one(job: tuple[int, str, str]) -> Result:
        k, tool, name = job
        cmd = [exe, "--tool", tool, "--print-limit", "100", "--error-exitcode", "0", sys.executable, "-m",
               "harness", "sanitize", "--inner", "--strategies", names[0] if self_test else name, "--scenario",
               scenario, "--size", size]
        if self_test:
            cmd.append("--self-test")
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        if tool in GUARDED_TOOLS:
            env["MDFORCE_CONDITIONAL"] = "0"
        if poison:
            env[POISON_ENV] = "1"
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
            text = p.stdout + "\n" + p.stderr
        except subprocess.TimeoutExpired as e:
            text = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
            text += f"\n{MARK}fail {name} timed out after {timeout:.0f} s\n"
        r = parse(tool, name, text)
        r.round = k
        if logs is not None and not r.ok and not r.not_applicable:
            safe = re.sub(r"[^A-Za-z0-9_.-]", "_", name)
            (Path(logs) / f"{tool}-{safe}-{k + 1}.log").write_text(" ".join(cmd) + "\n\n" + text)
        return r

    out: list[Result] = []
    # separate processes, so several can share the GPU; results are printed in the fixed order
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        for r in pool.map(one, work):
            say((f"[{r.round + 1}/{repeat}] " if repeat > 1 else "") + r.line())
            out.append(r)
    return out


def tally(results: list[Result]) -> list[str]:
    """One line per (tool, strategy) over the rounds of a repeated run: 'clean in k of K', the
    rounds that were not, and the first error line of the first of them."""
    groups: dict[tuple[str, str], list[Result]] = {}
    for r in results:
        groups.setdefault((r.tool, r.strategy), []).append(r)
    lines = []
    for (tool, name), rs in groups.items():
        clean = sum(r.ok for r in rs)
        na = sum(r.not_applicable for r in rs)
        line = f"{tool:10s} {name:26s} clean in {clean} of {len(rs)}"
        if na == len(rs):
            line = f"{tool:10s} {name:26s} n/a: {'; '.join(rs[0].na)}"
        elif clean + na < len(rs):
            first = next(r for r in rs if not r.ok and not r.not_applicable)
            rounds = [str(r.round + 1) for r in rs if not r.ok and not r.not_applicable]
            line += f" (not clean in round {', '.join(rounds)}; first: {first.line().split(None, 2)[2]})"
        lines.append(line)
    return lines

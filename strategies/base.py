"""The one force-strategy interface every plugin implements.

A strategy declares (name, backend, description, launch parameters) and says whether it
applies to a problem (`supports`); the harness decides what to run. `prepare` does the
one-off work (compile, allocate, upload); `compute` is the timed part and, on the GPU,
returns without waiting for the device. Phases carry NVTX ranges named
`<phase>/<strategy name>`: upload, bin (cell strategies), force, reduce, download.
"""
from __future__ import annotations

from typing import Any, ClassVar

from harness.problem import PRECISIONS, Forces, InputError, Problem, StrategyError
from harness.ranges import nvtx_range

__all__ = ["Plan", "Strategy", "StrategyError"]


class Plan:
    """Everything prepared for one problem. Subclasses implement the phases."""

    def __init__(self, strategy: "Strategy", problem: Problem):
        self.strategy = strategy
        self.problem = problem

    def upload(self) -> None:
        """Copy positions to where `force` reads them (no-op on the CPU)."""

    def bin(self) -> None:
        """Sort particles into cells (cell strategies; a no-op for the others)."""

    def force(self) -> None:
        raise NotImplementedError

    def reduce(self) -> None:
        """Fold per-block or per-particle partial sums into energy, virial and pairs."""

    def output(self) -> Forces:
        """The result of the last compute, possibly still on the device."""
        raise NotImplementedError

    def poison(self) -> None:
        """Fill every output with NaN / sentinels so an unwritten element cannot pass."""

    def synchronize(self) -> None:
        """Wait for the device (no-op on the CPU)."""


class Strategy:
    """Base class: subclasses set the class attributes and implement `_prepare`.

    name: stable id with a family prefix (allpairs_, cells_, c08_, parity_, tbp_, wbp_);
    backend: "cuda" or "cpu"; launch: launch parameters with their defaults, each checked
    against `launch_choices`.
    """

    name: ClassVar[str]
    backend: ClassVar[str]
    description: ClassVar[str]
    precisions: ClassVar[tuple[str, ...]] = PRECISIONS
    newton3: ClassVar[bool] = False
    launch_defaults: ClassVar[dict[str, Any]] = {}
    launch_choices: ClassVar[dict[str, tuple]] = {}

    def __init__(self, **launch: Any):
        unknown = set(launch) - set(self.launch_defaults)
        if unknown:
            known = ", ".join(self.launch_defaults) or "none"
            raise InputError(f"{self.name}: unknown launch parameter(s) {', '.join(sorted(unknown))}; known: {known}")
        self.launch = {**self.launch_defaults, **launch}
        for key, value in self.launch.items():
            choices = self.launch_choices.get(key)
            if choices is not None and value not in choices:
                raise InputError(f"{self.name}: launch parameter {key}={value!r} not in {choices}")

    @property
    def label(self) -> str:
        """Name plus non-default launch parameters, e.g. allpairs_tiled[block=128]."""
        extra = {k: v for k, v in self.launch.items() if v != self.launch_defaults.get(k)}
        return self.name + ("[" + ",".join(f"{k}={v}" for k, v in extra.items()) + "]" if extra else "")

    def available(self) -> tuple[bool, str]:
        """Whether this machine can run the strategy at all (a GPU for cuda strategies)."""
        return True, ""

    def supports(self, problem: Problem, check_device: bool = True) -> tuple[bool, str]:
        """(True, "") if the strategy applies to the problem, else (False, reason). With
        check_device=False only the problem is judged, not this machine (planning a sweep for a
        GPU on a machine without one)."""
        ok, why = self.available() if check_device else (True, "")
        if not ok:
            return False, why
        if problem.precision not in self.precisions:
            return False, f"precision {problem.precision} not implemented (has {', '.join(self.precisions)})"
        return True, ""

    def prepare(self, problem: Problem) -> Plan:
        ok, why = self.supports(problem)
        if not ok:
            raise StrategyError(f"{self.label} cannot run {problem.describe()}: {why}")
        return self._prepare(problem)

    def _prepare(self, problem: Problem) -> Plan:
        raise NotImplementedError

    def compute(self, plan: Plan) -> Forces:
        """Bin, force and reduce phases; asynchronous on the device."""
        with nvtx_range(f"bin/{self.name}"):
            plan.bin()
        with nvtx_range(f"force/{self.name}"):
            plan.force()
        with nvtx_range(f"reduce/{self.name}"):
            plan.reduce()
        return plan.output()

    def evaluate(self, problem: Problem) -> Forces:
        """prepare, upload, compute, download: the whole evaluation, result on the host."""
        plan = self.prepare(problem)
        with nvtx_range(f"upload/{self.name}"):
            plan.upload()
        out = self.compute(plan)
        with nvtx_range(f"download/{self.name}"):
            return out.to_host()

    def work(self, problem: Problem) -> dict:
        """Distance checks this strategy performs for the problem (for throughput figures);
        None where it depends on the data and is not known before running."""
        return {"distance_checks": None}

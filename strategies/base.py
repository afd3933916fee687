"""The one force-strategy interface every plugin implements.

A strategy declares what it is (the attributes below, listed by `harness list --json` and used
by tests, suites, reports and asv to select strategies) and says whether it applies to a problem
(`supports`); the harness decides what to run. `prepare` does the one-off work (compile,
allocate, upload); the phases of an evaluation are methods of the Plan it returns:

  upload    positions to where the kernels read them
  build     what the force phase traverses: cells (binning), or a neighbour list; `step` runs
            `update` instead, which builds only while `needs_rebuild` says the list is stale
  force     the pair loop
  reduce    partial sums to energy, virial and pair count
  download  `output().to_host()`

Each phase runs inside an NVTX range `<phase>/<strategy name>`. On the GPU, `compute` returns
without waiting for the device.

Besides the phases, a Plan answers what the harness asks of every strategy, with defaults for
those without a list: what it launched (launch_info, device_bytes) and, for the list strategies,
how the list fared (rebuild_count, prune_count, listed_pairs, visits_per_pair); the MD loop hands
it the integrator's velocities (use_velocities) and asks for fused steps (md_steps, a `Steps`).
"""
from __future__ import annotations

from typing import Any, ClassVar, Protocol

from mdcore import MODES, PRECISIONS, Forces, InputError, Problem, StrategyError
from mdcore.ranges import nvtx_range

__all__ = ["OUTPUTS", "Plan", "Steps", "Strategy", "StrategyError"]

# What an evaluation computes: forces only (an MD step's usual need; no energy, virial or pair
# count), or everything. Each kernel has both flavours (a template flag).
OUTPUTS = ("all", "forces")


def check_outputs(outputs: str) -> str:
    if outputs not in OUTPUTS:
        raise InputError(f"outputs must be one of {', '.join(OUTPUTS)}, got {outputs!r}")
    return outputs


# What each common launch parameter sets (the docs and `harness list --json` show it; a strategy's
# own launch_help overrides an entry)
LAUNCH_HELP = {
    "block": "threads per block of the force kernel",
    "layout": "how the positions the force kernel reads lie: aos4 (float4 / double4), aos3, soa",
    "cell_factor": "cell side as a multiple of the cutoff (>= 1; the CSR full shell down to 0.25)",
    "headroom": "room per cell beyond the fullest cell at the first binning, as a fraction of it (padded storages)",
    "slices": "splits of the j range over blockIdx.y (0: until the GPU is full)",
    "warps": "warps per block of the persistent warp-block kernel",
    "commit": "how a warp block's forces on cell B and the per-cell statistics are committed: atomic or lock",
    "skin": "list radius beyond the cutoff (sigma); the list is rebuilt when a particle moved more than skin / 2",
    "cap": "row capacity (0: 1.2 x the longest row of the first build + 8); a longer row is an error, never cut",
    "rebuild": "auto: the displacement trigger; never: keep the first list (verify's negative control)",
    "cluster": "particles per cluster (4 or 8)",
}


class Steps(Protocol):
    """MD steps a plan runs itself (md_steps), the state kept where its kernels read it: open() is a
    run's opening half kick and drift, step() one force evaluation and the closing kick (and, unless
    `last`, the next opening one); the rest reads the state in input order."""

    def open(self) -> None: ...
    def step(self, outputs: str, last: bool) -> Forces: ...
    def kinetic(self): ...
    def positions(self): ...
    def velocities(self): ...
    def blown_up(self) -> bool: ...


class Plan:
    """Everything prepared for one problem. Subclasses implement the phases."""

    visits_per_pair = 2  # how often the force phase meets each pair: 2 from both sides, 1 with Newton3
    inner_skin = 0.0  # the inner list's buffer, where a list plan keeps one (experimental)

    def __init__(self, strategy: "Strategy", problem: Problem):
        self.strategy = strategy
        self.problem = problem
        self.outputs = "all"
        self.launch_info: dict = {}  # what the plan chose (cells, threads per particle, list capacity...)

    def set_outputs(self, outputs: str) -> None:
        """'all' (forces, energy, virial, pair count) or 'forces' for the evaluations to come."""
        self.outputs = check_outputs(outputs)

    @property
    def energy(self) -> bool:
        """Whether energy, virial and pair count are computed."""
        return self.outputs == "all"

    def upload(self) -> None:
        """Copy positions to where `force` reads them (no-op on the CPU)."""

    def build(self) -> None:
        """Bin particles into cells, or build a neighbour list."""

    def needs_rebuild(self, positions=None) -> bool:
        """Whether build() must run before the next force(). Strategies without a reusable list
        rebuild always (True); list strategies compare the displacement since their build with
        half their skin."""
        return True

    def update(self) -> None:
        """An MD step's list upkeep: build() where needs_rebuild() says so. List strategies on the
        GPU override it to decide on the device (no host synchronisation per step)."""
        if self.needs_rebuild():
            self.build()

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

    @property
    def device_bytes(self) -> int | None:
        """Device memory the plan holds (None on the CPU)."""
        return None

    # --- list strategies (defaults: no list) ---------------------------------------------------

    def rebuild_count(self) -> int | None:
        """Builds the force phase has used since prepare (the first included); None without a list."""
        return None

    def prune_count(self) -> int | None:
        """Prunes of an inner list since prepare; None without one."""
        return None

    def listed_pairs(self) -> int | None:
        """Entries the force phase read at the last evaluation (its distance checks); None without a list."""
        return None

    # --- the MD loop ---------------------------------------------------------------------------

    def use_velocities(self, integ) -> None:
        """The integrator whose velocities (v, dt) a list sized from them reads at each rebuild (None:
        none known); ignored by plans that do not need them."""

    def md_steps(self, integ, forces, always: bool = False) -> tuple[Steps | None, str]:
        """(steps, "on") where the plan runs the MD loop's steps itself, else (None, why not)."""
        return None, "the strategy has no fused step"


class Strategy:
    """Base class: subclasses set the class attributes and implement `_prepare`.

    Attributes (what a strategy is; strategies.registry documents the naming grammar):
      name, backend ("cuda" | "cpu"), description
      traversal      allpairs | fullshell | c08 | parity
      processor      thread | warp | block | warpblock
      storage        none | csr | 2d | nested (where the cells keep their particles) | padded (a
                     neighbour list's rows, padded to one capacity)
      newton3        each pair computed once, its force added to both particles
      deterministic  the same input gives the same bits (no sums in scheduling order)
      list_reuse     builds a list that later evaluations reuse (needs_rebuild decides)
      potentials     names of the potentials it computes; None: any registered potential
      precisions     precision modes it implements
      experimental   a measured design kept for comparison: left out of `all`, the suites, `make verify`
                     and CI's compile-everything test unless asked for (by name, `experimental=true`,
                     `--experimental`); its record is under docs/decisions/
    launch_defaults: the public launch parameters with their defaults, each checked against launch_choices.
    launch_internal: parameters the code chooses (per GPU, size or input; 'auto') and research switches,
      accepted by name; any value but the default makes the instance experimental.
    """

    name: ClassVar[str]
    backend: ClassVar[str]
    description: ClassVar[str]
    traversal: ClassVar[str]
    processor: ClassVar[str]
    storage: ClassVar[str] = "none"
    newton3: ClassVar[bool] = False
    deterministic: ClassVar[bool] = True
    list_reuse: ClassVar[bool] = False
    potentials: ClassVar[tuple[str, ...] | None] = None
    precisions: ClassVar[tuple[str, ...]] = PRECISIONS
    launch_defaults: ClassVar[dict[str, Any]] = {}
    launch_internal: ClassVar[dict[str, Any]] = {}
    launch_choices: ClassVar[dict[str, tuple]] = {}
    launch_help: ClassVar[dict[str, str]] = {}  # what a parameter sets, where LAUNCH_HELP does not say it
    experimental: ClassVar[bool] = False
    # set by registry.create_each: why this instance does not run (a launch parameter it lacks)
    refused: str = ""

    def __init__(self, **launch: Any):
        unknown = [k for k in launch if not self.knows(k)]
        if unknown:
            known = ", ".join(self.launch_defaults) or "none"
            internal = f" (internal: {', '.join(self.launch_internal)})" if self.launch_internal else ""
            raise InputError(f"{self.name}: unknown launch parameter(s) {', '.join(sorted(unknown))}; known: "
                             f"{known}{internal}")
        self.launch = {**self.all_defaults(), **launch}
        for key, value in self.launch.items():
            choices = self.launch_choices.get(key)
            if choices is not None and value not in choices:
                raise InputError(f"{self.name}: launch parameter {key}={value!r} not in {choices}")

    @classmethod
    def knows(cls, key: str) -> bool:
        """Whether `key` is a launch parameter of this strategy, public or internal."""
        return key in cls.launch_defaults or key in cls.launch_internal

    @classmethod
    def all_defaults(cls) -> dict[str, Any]:
        """Every launch parameter's default, public ones first."""
        return {**cls.launch_defaults, **cls.launch_internal}

    @property
    def is_experimental(self) -> bool:
        """An experimental strategy, or an internal launch parameter set away from its default."""
        return self.experimental or any(self.launch[k] != v for k, v in self.launch_internal.items())

    @property
    def label(self) -> str:
        """Name plus non-default launch parameters, e.g. allpairs_thread_tiled[block=128]."""
        defaults = self.all_defaults()
        extra = {k: v for k, v in self.launch.items() if v != defaults.get(k)}
        return self.name + ("[" + ",".join(f"{k}={v}" for k, v in extra.items()) + "]" if extra else "")

    def available(self) -> tuple[bool, str]:
        """Whether this machine can run the strategy at all (a GPU for cuda strategies)."""
        return True, ""

    def supports(self, problem: Problem, check_device: bool = True) -> tuple[bool, str]:
        """(True, "") if the strategy applies to the problem, else (False, reason). With
        check_device=False only the problem is judged, not this machine (planning a sweep for a
        GPU on a machine without one)."""
        if self.refused:
            return False, self.refused
        ok, why = self.available() if check_device else (True, "")
        if not ok:
            return False, why
        if problem.precision not in self.precisions:
            return False, f"precision {problem.precision} not implemented (has {', '.join(self.precisions)})"
        pot = problem.potential.name
        if self.potentials is not None and pot not in self.potentials:
            return False, f"potential {pot} not implemented (has {', '.join(self.potentials)})"
        if problem.potential.per_particle:
            why = self.per_particle_refusal()
            if why:
                return False, why
        return True, ""

    # launch values whose kernels read positions without their fourth component, which carries a
    # particle's type or charge (mdcore.potentials.pair_table): name -> the values. aos3 and soa keep
    # it in an array of their own (kernels/layout.cuh); the Verlet list's packed entries have no room.
    NO_WORDS: ClassVar[dict] = {"layout": ("packed",)}

    def per_particle_refusal(self) -> str:
        """Why this strategy's launch cannot compute particles that carry a type or charge, or ""."""
        for key, values in self.NO_WORDS.items():
            if self.launch.get(key) in values:
                return (f"{key}={self.launch[key]} reads positions without their fourth component, where a "
                        "particle's type or charge travels (take layout aos4, aos3 or soa)")
        if str(self.launch.get("adapt", "off")) != "off":
            return "adapt keeps each particle's buffer in its position's fourth component, where a particle's type " \
                   "or charge travels"
        return ""

    def prepare(self, problem: Problem, outputs: str = "all") -> Plan:
        ok, why = self.supports(problem)
        if not ok:
            raise StrategyError(f"{self.label} cannot run {problem.describe()}: {why}")
        if MODES[problem.precision].fixed:  # the same pair terms in every traversal: mdcore.fixed
            from mdcore.fixed import snapped

            problem = snapped(problem)
        plan = self._prepare(problem)
        plan.set_outputs(outputs)
        return plan

    def _prepare(self, problem: Problem) -> Plan:
        raise NotImplementedError

    def compute(self, plan: Plan) -> Forces:
        """From scratch: build, force and reduce phases; asynchronous on the device."""
        with nvtx_range(f"build/{self.name}"):
            plan.build()
        return self.compute_built(plan)

    def compute_built(self, plan: Plan) -> Forces:
        """Force and reduce with what the last build made (positions unchanged since)."""
        with nvtx_range(f"force/{self.name}"):
            plan.force()
        with nvtx_range(f"reduce/{self.name}"):
            plan.reduce()
        return plan.output()

    def step(self, plan: Plan) -> Forces:
        """One MD step's evaluation on the positions the plan holds now: the list upkeep
        (plan.update: a build only where the list is stale), force and reduce."""
        with nvtx_range(f"build/{self.name}"):
            plan.update()
        return self.compute_built(plan)

    def evaluate(self, problem: Problem, outputs: str = "all") -> Forces:
        """prepare, upload, compute, download: the whole evaluation, result on the host."""
        plan = self.prepare(problem, outputs)
        with nvtx_range(f"upload/{self.name}"):
            plan.upload()
        out = self.compute(plan)
        with nvtx_range(f"download/{self.name}"):
            return out.to_host()

    def work(self, problem: Problem) -> dict:
        """Distance checks this strategy performs for the problem (for throughput figures);
        None where it depends on the data and is not known before running."""
        return {"distance_checks": None}

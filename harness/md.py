"""`python -m harness md`: the MD loop (velocity Verlet, NVE) around any strategy.

The thesis's loop (Decker's Kokkos MD thesis: calculateForces, calculateVelocitiesAndPositions, moveParticles)
as velocity Verlet: positions and velocities stay where the strategy computes (on the GPU for
CUDA strategies; strategies/integrate.py), every step is `kick_drift`, the strategy's `step`
(build where its list is stale, force) and `kick`, inside an NVTX range `md-step/<strategy>`.

Every `sample` steps the step computes energy and virial too (the all-outputs flavour) and the
host reads kinetic and potential energy, temperature and pressure; the other steps compute
forces only. On the GPU the forces-only steps are captured once as CUDA graphs (of GRAPH_SIZES
steps each) and replayed where the strategy allows (`graph` in the result says whether it did, or
why not).

Where the strategy's plan offers fused steps (`md_steps`: the Verlet list,
strategies/integrate_fused.py) the loop takes them: the state kept in the list's order and the integrator run at the
end of the force kernel, with the same bits as the plain steps (`fused` in the result; `--no-fuse`
keeps the plain ones).

Units are reduced LJ units (mass 1, k_B = 1, time tau). Temperature counts 3N - 3 degrees of
freedom (the start has zero total momentum). Pressure P = (2 K + tr W) / (3 V), W the virial.
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

import strategies
from mdcore import InputError, Problem
from mdcore.ranges import nvtx_range
from strategies import graphs as conditional
from strategies.integrate import Integrator, check_periodic


# the padded cell storages (2d, nested) get this much room per cell beyond the fullest cell at
# the start (their capacity is fixed at prepare; an overflow is reported, never written over)
HEADROOM = 1.0
# forces-only steps one CUDA graph replays: the host launches a graph in about the time a step of
# 4,000 particles takes. A run of forces-only steps takes the largest graphs that fit, then smaller
# ones: each graph opens its steps and closes the last, which the fused steps pay with a pass over
# the particles (docs/decisions/md-fused-steps.md).
GRAPH_SIZES = (64, 8, 1)
GRAPH_STEPS = GRAPH_SIZES[0]  # the most steps one replay runs


class BlowUp(InputError):
    """The run produced a non-finite coordinate or energy (usually a time step too large)."""


@dataclass
class Sample:
    step: int
    time: float
    kinetic: float
    potential: float
    total: float
    temperature: float
    pressure: float


@dataclass
class MdResult:
    strategy: str
    problem: str
    n: int
    precision: str
    steps: int
    dt: float
    temperature0: float
    samples: list[Sample] = field(default_factory=list)
    ms_per_step: float = math.nan
    graph: str = ""
    trajectory: str = ""
    frames: int = 0
    rebuilds: int | None = None  # list strategies: builds used over the run (the first included)
    prunes: int | None = None    # Verlet lists with an inner list (prune): its prunes over the run
    capture_ms: float = 0.0  # host time recording the CUDA graphs, before the clock starts
    upkeep: str = ""  # a list's skipped upkeep in the graphs: "conditional nodes", or "guarded launches (why)"
    fused: str = ""  # "on": the steps fused into the strategy's order (its plan's md_steps); else why not

    @property
    def drift(self) -> float:
        """Slope of the total energy per particle against time (per tau), least squares."""
        return drift_of([s.time for s in self.samples], [s.total for s in self.samples], self.n)

    @property
    def max_deviation(self) -> float:
        """Largest |E(t) - E(0)| per particle over the samples."""
        return deviation_of([s.total for s in self.samples], self.n)

    def to_json(self) -> dict:
        d = asdict(self)
        d["drift_per_particle_per_tau"] = self.drift
        d["max_deviation_per_particle"] = self.max_deviation
        return d


def drift_of(times, totals, n: int) -> float:
    """Least-squares slope of the total energy per particle against time."""
    if len(times) < 2:
        return math.nan
    return float(np.polyfit(np.asarray(times, float), np.asarray(totals, float) / n, 1)[0])


def deviation_of(totals, n: int) -> float:
    e = np.asarray(totals, float) / n
    return float(np.max(np.abs(e - e[0]))) if len(e) else math.nan


def maxwell_boltzmann(n: int, temperature: float, rng: np.random.Generator, mass: float = 1.0) -> np.ndarray:
    """(n, 3) velocities: Gaussian with variance T/m, total momentum removed, then scaled so the
    kinetic temperature (3N - 3 degrees of freedom) is exactly `temperature`."""
    if temperature < 0.0 or not math.isfinite(temperature):
        raise InputError(f"temperature must be a finite number >= 0, got {temperature!r}")
    v = rng.normal(0.0, math.sqrt(temperature / mass), (n, 3)) if temperature > 0.0 else np.zeros((n, 3))
    v -= v.mean(axis=0)
    dof = 3 * n - 3
    if temperature > 0.0 and dof > 0:
        v *= math.sqrt(temperature * dof / (mass * float(np.sum(v * v))))
    return v


def check_run(steps: int, dt: float, sample: int) -> None:
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 1:
        raise InputError(f"steps must be a whole number >= 1, got {steps!r}")
    if not (isinstance(dt, (int, float)) and math.isfinite(dt) and dt > 0.0):
        raise InputError(f"dt must be a finite number > 0, got {dt!r}")
    if isinstance(sample, bool) or not isinstance(sample, (int, np.integer)) or sample < 1:
        raise InputError(f"sample must be a whole number >= 1, got {sample!r}")


class _Trajectory:
    """Extended XYZ frames appended and flushed one by one (a blown-up run keeps what it wrote)."""

    def __init__(self, path: Path, problem: Problem):
        self.path, self.frames = path, 0
        path.parent.mkdir(parents=True, exist_ok=True)
        L = [repr(float(v)) for v in problem.box.lengths]
        self.lattice = f'Lattice="{L[0]} 0.0 0.0 0.0 {L[1]} 0.0 0.0 0.0 {L[2]}"'
        self.f = open(path, "w")

    def write(self, step: int, t: float, x: np.ndarray, v: np.ndarray, s: Sample | None) -> None:
        extra = f" energy={s.potential!r} kinetic={s.kinetic!r}" if s is not None else ""
        head = (f"{len(x)}\n{self.lattice} Properties=species:S:1:pos:R:3:vel:R:3 step={step} time={t!r}{extra} "
                f'pbc="T T T"\n')
        rows = np.concatenate([x, v], axis=1)
        self.f.write(head + "\n".join("Ar " + " ".join(repr(c) for c in r) for r in rows.tolist()) + "\n")
        self.f.flush()
        self.frames += 1

    def close(self) -> None:
        self.f.close()


def run(strategy: strategies.Strategy, problem: Problem, steps: int, dt: float, temperature: float = 0.72,
        sample: int = 100, seed: int = 1, trajectory: str | Path | None = None, frame_every: int | None = None,
        graph: bool = True, velocities: np.ndarray | None = None, say=None, fuse: bool | str = True) -> MdResult:
    """NVE velocity Verlet for `steps` steps; samples at step 0 and every `sample` steps (and the
    last). trajectory: an extended XYZ file, a frame every `frame_every` steps (default
    `sample`). velocities: a start other than Maxwell-Boltzmann at `temperature`. fuse: take the
    plan's fused steps where it offers them (the same bits; see _stepper); "always": also where the
    plan would keep the plain ones as faster (tests)."""
    check_run(steps, dt, sample)
    check_periodic(problem)
    if strategy.launch.get("headroom") == 0.0:  # cells of fixed capacity: room for what moves in
        strategy = type(strategy)(**{**strategy.launch, "headroom": HEADROOM})
    frame_every = sample if frame_every is None else frame_every
    check_run(steps, dt, frame_every)
    ok, why = strategy.supports(problem)
    if not ok:
        raise InputError(f"{strategy.label} cannot run {problem.describe()}: {why}")
    if velocities is None:
        velocities = maxwell_boltzmann(problem.n, temperature, np.random.default_rng(seed))
    velocities = np.asarray(velocities, dtype=np.float64)
    if velocities.shape != (problem.n, 3) or not np.all(np.isfinite(velocities)):
        raise InputError(f"velocities: expected {problem.n} finite rows of 3, got shape {velocities.shape}")
    gpu = strategy.backend == "cuda"
    plan = strategy.prepare(problem, "all")
    integ = Integrator.create(plan, problem.positions, velocities, dt)
    if gpu:  # set-up ran on the default stream; the loop's stream does not wait for it by itself
        import cupy

        cupy.cuda.Device().synchronize()
    res = MdResult(strategy.label, problem.label, problem.n, problem.precision, steps, dt, temperature)
    traj = _Trajectory(Path(trajectory), problem) if trajectory else None
    res.trajectory = str(trajectory or "")
    V = problem.box.volume
    name = strategy.name
    try:
        stream = _stream(gpu)
        with stream if stream is not None else _Null():
            out = _evaluate(strategy, plan, "all")  # step 0: forces of the start
            # the steps' flavour once before the clock starts, so that its first use (a kernel
            # compiled, a numba specialisation) is not timed; then the start's forces again
            _evaluate(strategy, plan, "forces")
            out = _evaluate(strategy, plan, "all")
            _sample(res, integ, out, 0, 0.0, V, traj, frame_every, say)
            steps_, res.fused = _stepper(strategy, plan, integ, out.forces, fuse if gpu else False)
            graphs, res.graph = {}, "cpu" if not gpu else ("off" if not graph else "")
            if gpu and graph:  # recorded, not run: the graphs start from the state the loop starts from
                c0 = time.perf_counter()
                nodes = dict(conditional.NODES)
                graphs, res.graph = _capture(steps_)
                res.capture_ms = 1e3 * (time.perf_counter() - c0)
                if graphs and strategy.list_reuse:
                    res.upkeep = conditional.recorded(nodes)
            t0 = _clock(gpu)
            step = 0
            try:
                while step < steps:
                    if (step + 1) % sample == 0 or step + 1 == steps:
                        step += 1
                        with nvtx_range(f"md-step/{name}"):
                            steps_.open()
                            out = steps_.step("all", last=True)
                        _sample(res, steps_, out, step, step * dt, V, traj, frame_every, say)  # writes its frame
                        continue
                    # forces-only steps up to (not including) the next sample, and up to the next frame
                    run = _forces_only_run(step, steps, sample, frame_every if traj is not None else None)
                    if graphs:  # replayed: the largest graph the run holds
                        k = next(k for k in GRAPH_SIZES if k <= run and k in graphs)
                        graphs[k]()
                        step += k
                    else:
                        step += 1
                        with nvtx_range(f"md-step/{name}"):
                            steps_.open()
                            steps_.step("forces", last=True)
                    if traj is not None and step % frame_every == 0:
                        traj.write(step, step * dt, steps_.positions(), steps_.velocities(), None)
            except (ZeroDivisionError, SystemError) as e:  # numba: a pair at distance 0 (thrown together)
                if not isinstance(e, ZeroDivisionError) and not isinstance(e.__cause__, ZeroDivisionError):
                    raise
                raise BlowUp(f"md: the run blew up at step {step} (t = {step * dt:g}): two particles met "
                             "(distance 0); "
                             f"dt = {dt:g} may be too large for this system"
                             + (f"; the trajectory up to the last frame is in {traj.path}" if traj else "")) from None
            res.ms_per_step = _elapsed_ms(gpu, t0) / steps
            res.rebuilds = plan.rebuild_count()
            res.prunes = plan.prune_count()
    finally:
        if traj is not None:
            traj.close()
            res.frames = traj.frames
    return res


class _Null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _stream(gpu: bool):
    if not gpu:
        return None
    import cupy

    return cupy.cuda.Stream(non_blocking=True)


def _clock(gpu: bool):
    if not gpu:
        return time.perf_counter()
    import cupy

    e = cupy.cuda.Event()
    e.record()
    return e


def _elapsed_ms(gpu: bool, t0) -> float:
    if not gpu:
        return 1e3 * (time.perf_counter() - t0)
    import cupy

    e = cupy.cuda.Event()
    e.record()
    e.synchronize()
    return float(cupy.cuda.get_elapsed_time(t0, e))


def _evaluate(strategy, plan, outputs: str):
    plan.set_outputs(outputs)
    return strategy.step(plan)


def _forces_only_run(step: int, steps: int, sample: int, frame_every: int | None) -> int:
    """How many forces-only steps follow `step` before the next sample step (or the last step),
    ending at the next frame where a trajectory is written: at least 1."""
    stop = min(steps, (step // sample + 1) * sample) - 1  # the last forces-only step before the sample
    if frame_every is not None:
        stop = min(stop, (step // frame_every + 1) * frame_every)
    return max(1, stop - step)


class _PlainSteps:
    """The loop's steps for any strategy: open() is kick_drift, step() the strategy's step (list
    upkeep, force, reduce) and the kick; inside a run of steps (last=False) the kick and the next
    step's kick_drift are one launch (kick_kick_drift: the same bits)."""

    def __init__(self, strategy, plan, integ: Integrator, forces):
        self.strategy, self.plan, self.integ, self.forces, self.n = strategy, plan, integ, forces, integ.n
        plan.use_velocities(integ)  # a list sized from the velocities (adapt) reads them at each rebuild

    def open(self) -> None:
        self.integ.kick_drift(self.forces)

    def step(self, outputs: str, last: bool):
        out = _evaluate(self.strategy, self.plan, outputs)
        (self.integ.kick if last else self.integ.kick_kick_drift)(out.forces)
        self.forces = out.forces
        return out

    def captured(self, forces) -> str:
        """Why a graph recorded from `forces` on cannot be replayed ("" where it can): the kernels
        must read the plan's one force buffer."""
        if self.forces.data.ptr != forces.data.ptr:
            return "not captured: the strategy returns its forces in a new buffer each step"
        return ""

    def kinetic(self):
        return self.integ.kinetic()

    def positions(self) -> np.ndarray:
        return self.integ.positions()

    def velocities(self) -> np.ndarray:
        return self.integ.velocities()

    def blown_up(self) -> bool:
        return self.integ.blown_up()


def _stepper(strategy, plan, integ: Integrator, forces, fuse: bool | str):
    """(the steps, what MdResult.fused says): the plan's fused steps where it offers them
    (Plan.md_steps; the Verlet list's: strategies/integrate_fused.py, the state in the list's order,
    the integrator in the force kernel, the same bits as the plain steps), else _PlainSteps. fuse
    "always": where the plan offers them at all."""
    if not fuse:
        return _PlainSteps(strategy, plan, integ, forces), "off"
    steps_, why = plan.md_steps(integ, forces, always=fuse == "always")
    if steps_ is None:
        return _PlainSteps(strategy, plan, integ, forces), f"off: {why}"
    return steps_, why


def _capture(steps_, stream=None):
    """CUDA graphs of forces-only steps (open, then the steps) on `stream` (default: the current
    one): one of each of GRAPH_SIZES steps (one host launch for them: at a few thousand particles a
    step takes about as long as the host needs to launch a graph). Returns ({steps: launch}, "on")
    or ({}, why not)."""
    if stream is None:
        import cupy

        stream = cupy.cuda.get_current_stream()
    graphs = {}
    try:
        for k in sorted(GRAPH_SIZES):
            before = getattr(steps_, "forces", None)
            stream.begin_capture()
            try:
                steps_.open()
                for q in range(k):
                    steps_.step("forces", last=q + 1 == k)
            finally:
                g = stream.end_capture()
                why = steps_.captured(before) if hasattr(steps_, "captured") else ""
                if before is not None:  # the recorded steps did not run: the loop goes on from the last one that did
                    steps_.forces = before
            if why:
                return {}, why
            graphs[k] = (lambda g=g: g.launch(stream))
        return graphs, "on"
    except Exception as e:
        return {}, f"not capturable: {type(e).__name__}: {str(e).splitlines()[0][:120] if str(e) else ''}"


def _sample(res: MdResult, integ, out, step: int, t: float, V: float, traj, frame_every: int,
            say) -> None:
    out.raise_checks()  # the forces stay on the device; only the sums come back
    pot = float(out.energy.get() if hasattr(out.energy, "get") else out.energy)
    w = np.asarray(out.virial.get() if hasattr(out.virial, "get") else out.virial, dtype=np.float64).reshape(3, 3)
    kin, _ = integ.kinetic()
    n = integ.n
    temp = 2.0 * kin / max(3 * n - 3, 1)
    press = (2.0 * kin + float(np.trace(w))) / (3.0 * V)
    s = Sample(step, t, kin, pot, kin + pot, temp, press)
    if integ.blown_up() or not all(math.isfinite(v) for v in (kin, pot)):
        if traj is not None:
            kept = f"; the trajectory up to the last frame is in {traj.path}"
        else:
            kept = ""
        raise BlowUp(f"md: the run blew up by step {step} (t = {t:g}): "
                     f"{'a coordinate' if integ.blown_up() else 'the energy'} is not finite; dt = {res.dt:g} may be "
                     f"too large for this system{kept}")
    res.samples.append(s)
    if traj is not None and step % frame_every == 0:
        traj.write(step, t, integ.positions(), integ.velocities(), s)
    if say is not None:
        say(s)


# --- a recorded trajectory, replayed by bench for the amortised cost of a step -----------------

FRAMES = 200        # frames replayed (the K >= 200)
EQUILIBRATE = 500   # steps run before the first frame (the lattice start melts fastest at first)
_RECORDED: dict = {}  # the last recording only: at 1M particles it is gigabytes


def driver_available_on_gpu() -> bool:
    """Whether the reference driver (the CSR full shell) runs on a GPU here."""
    return strategies.create("fullshell_thread_csr").available()[0]


def _driven(problem: Problem, dt: float, temperature: float, seed: int, steps: int, each=None) -> Integrator:
    """`steps` velocity-Verlet steps of `problem` from Maxwell-Boltzmann velocities with the
    reference driver: the CSR full shell in mixed precision on a GPU, else its numba counterpart
    in fp64. each(step, integ) runs after every step. Returns the integrator."""
    gpu = driver_available_on_gpu()
    s = strategies.create("fullshell_thread_csr" if gpu else "fullshell_thread_cpu")
    p = problem.with_precision("mixed" if gpu else "fp64")
    plan = s.prepare(p, "forces")
    integ = Integrator.create(plan, p.positions, maxwell_boltzmann(p.n, temperature, np.random.default_rng(seed)), dt)
    out = s.step(plan)
    for step in range(steps):
        integ.kick_drift(out.forces)
        out = s.step(plan)
        integ.kick(out.forces)
        if each is not None:
            each(step, integ)
    return integ


RECORD_DT = 0.005  # the recorded trajectories' time step (record): what a replay's frame velocities divide by


class FrameVelocities:
    """What a list with per-particle skins (launch parameter adapt: a plan's use_velocities) reads from an
    integrator, for a replay of recorded frames (bench's amortised column, verify's replayed frames): v, each
    particle's velocity at frame k as (x_k - x_{k-1}) / dt (the minimum image), which is velocity Verlet's
    half-step velocity, the one the MD loop's rebuild at that step sees; and dt. On the plan's device, in
    its accumulation type (the compute type where that is fixed point); set() copies a frame's in (GPU: a
    device array, so that a captured replay can)."""

    def __init__(self, plan, dt: float = RECORD_DT):
        acc = np.dtype(getattr(plan, "acc", np.float64))
        if acc.kind != "f":  # fixed point sums its forces in integers; a velocity is a float
            acc = np.dtype(plan.real)
        self.dt = acc.type(dt)
        self.xp = plan.cp if plan.strategy.backend == "cuda" else np
        self.v = self.xp.zeros((plan.problem.n, 3), acc)

    @staticmethod
    def of(frames, k: int, box_lengths, dt: float = RECORD_DT) -> np.ndarray:
        """Frame k's velocities (k >= 1), float64 on the host."""
        d = np.asarray(frames[k], np.float64) - np.asarray(frames[k - 1], np.float64)
        d -= box_lengths * np.rint(d / box_lengths)
        return d / dt

    def set(self, v) -> None:
        self.v[...] = v


def feeds_velocities(strategy, plan) -> bool:
    """Whether a replay should hand the plan its frames' velocities: a list sized from them (adapt)."""
    return getattr(strategy, "adapt", None) is not None


def record(problem: Problem, frames: int = FRAMES, equilibrate: int = EQUILIBRATE, dt: float = RECORD_DT,
           temperature: float = 0.72, seed: int = 1) -> np.ndarray:
    """(frames, N, 3) float64 positions in [0, L) of consecutive steps of an NVE run of
    `problem` (velocity Verlet from Maxwell-Boltzmann at `temperature`, after `equilibrate`
    steps), the same for every strategy that replays them: recorded once per problem with the
    CSR full shell (GPU, mixed precision) or its numba counterpart (fp64) and kept for the next
    caller."""
    check_periodic(problem)
    key = (problem.label, problem.n, problem.box, problem.potential.spec(), frames, equilibrate, dt, temperature, seed)
    if key in _RECORDED:
        return _RECORDED[key]
    _RECORDED.clear()
    got = np.empty((frames, problem.n, 3))

    def keep(step: int, integ: Integrator) -> None:
        if step >= equilibrate:
            got[step - equilibrate] = integ.positions()

    integ = _driven(problem, dt, temperature, seed, equilibrate + frames, keep)
    if integ.blown_up() or not np.all(np.isfinite(got[-1])):
        raise BlowUp(f"recording a trajectory of {problem.label}: the run blew up (dt = {dt:g})")
    _RECORDED[key] = got
    return got


# --- the NVE report: energy drift per precision, strategy and OpenMM on one start ----------------

def equilibrated(problem: Problem, steps: int = EQUILIBRATE, dt: float = 0.005, temperature: float = 0.72,
                 seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """(positions in [0, L), velocities), float64, after `steps` steps from the problem's positions
    and Maxwell-Boltzmann velocities, the velocities rescaled to `temperature` every 10 steps of
    the first three quarters and the last quarter free NVE (the CSR full shell, mixed on the GPU,
    else fp64)."""
    dof = max(3 * problem.n - 3, 1)

    def rescale(step: int, integ: Integrator) -> None:  # to the target temperature, then free NVE
        if step % 10 == 9 and step < steps * 3 // 4:
            kin, _ = integ.kinetic()
            if kin > 0.0 and temperature > 0.0:
                integ.v *= integ.acc(math.sqrt(temperature * dof / (2.0 * kin)))

    integ = _driven(problem, dt, temperature, seed, steps, rescale)
    if integ.blown_up():
        raise BlowUp(f"equilibrating {problem.label}: the run blew up (dt = {dt:g})")
    return integ.positions(), integ.velocities()


def nve_report(names: list[str], problem: Problem, steps: int = 10000, sample: int = 100, dt: float = 0.005,
               temperature: float = 0.72, precisions=("fp32", "mixed", "fp64"), peers: bool = True, seed: int = 1,
               say=None, equilibrate: int = 2000) -> list[dict]:
    """Rows (strategy or peer:openmm, precision, drift of the total energy per particle per tau,
    largest deviation, ms per step) of NVE runs from one equilibrated start, the potential shifted
    at the cutoff so that the energy is a constant of the motion."""
    from dataclasses import replace as _replace

    from . import peers as P

    check_run(steps, dt, sample)
    check_periodic(problem)
    pot = problem.potential
    if hasattr(pot, "shift") and not pot.shift:
        problem = _replace(problem, potential=_replace(pot, shift=True))
    x0, v0 = equilibrated(problem, equilibrate, dt=dt, temperature=temperature, seed=seed)
    rows = []
    for prec in precisions:
        start = Problem.make(x0, problem.box, problem.potential, prec, label=f"{problem.label} equilibrated")
        for name in names:
            s = strategies.create(name)
            row = {"strategy": s.label, "precision": prec, "n": start.n, "steps": steps, "dt": dt}
            ok, why = s.supports(start)
            if not ok:
                rows.append({**row, "status": "n/a", "detail": why})
                continue
            r = run(s, start, steps, dt, sample=sample, velocities=v0)
            rows.append({**row, "status": "ok", "drift": r.drift, "max_deviation": r.max_deviation,
                         "ms_per_step": r.ms_per_step, "temperature": r.samples[-1].temperature,
                         "rebuilds": r.rebuilds})
            if say:
                say(rows[-1])
        if peers:
            row = {"strategy": "peer:openmm", "precision": prec, "n": start.n, "steps": steps, "dt": dt}
            import importlib.util

            if importlib.util.find_spec("openmm") is None:
                rows.append({**row, "status": "n/a", "detail": "the openmm package is not installed"})
            elif start.potential.name != "lj":
                rows.append({**row, "status": "n/a", "detail": "OpenMM's NVE run is set up for the shifted "
                                                               "Lennard-Jones potential only"})
            else:
                out = P.in_child("openmm", P.openmm_nve, (start, v0, steps, sample, dt, prec))
                if out.get("status") == "ok":
                    t = [k * dt for k, _, _ in out["samples"]]
                    e = [kin + pot_ for _, kin, pot_ in out["samples"]]
                    n_ = start.n
                    rows.append({**row, "status": "ok", "drift": drift_of(t, e, n_), "max_deviation": deviation_of(e, n_),
                                 "ms_per_step": out["ms_per_step"], "platform": out["platform"],
                                 "precision_used": out["precision_used"],
                                 "temperature": 2.0 * out["samples"][-1][1] / (3 * n_ - 3)})
                else:
                    rows.append({**row, "status": out.get("status", "error"), "detail": out.get("detail", "")})
            if say:
                say(rows[-1])
    return rows

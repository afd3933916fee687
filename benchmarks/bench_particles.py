"""The workloads beside the point strategies, tracked by default: Ewald's reciprocal part per
reciprocal strategy and precision (`harness ewald`'s total), the Monte-Carlo moves' time per move in a
batch and in the Metropolis loop (`harness mc`), and each molecule traversal's evaluation on SPC/E
water (`harness bench --scenario spce_water`'s compute_ms, and forces_ms on the GPU).

On a machine with a GPU: the GPU strategies and traversals, 100,000 charges at OpenMM's tolerance
5e-4 (kmax 26), the built-in water of 3,000 molecules (5,071 wave vectors, batches of 1,000 moves) and
32,768 water molecules. Without one: the CPU ones, 2,000 charges, 300 water molecules (batches of 20)
and 1,000 water molecules. MDFORCE_ASV_STRATEGIES does not apply (it selects point strategies).
"""
from .common import ROOT  # noqa: F401  (the checkout on sys.path)

from harness import timing  # noqa: E402  (a module: asv would take time_* functions for benchmarks)
from strategies import kspace  # noqa: E402
from strategies import molecules as traversals  # noqa: E402

GPU = kspace.create("kspace_thread_rows").available()[0]
KSPACE = kspace.names("cuda") if GPU else kspace.names("cpu")
CHARGES = 100_000 if GPU else 2_000
WATER = {"molecules": 3000, "box": 4.5} if GPU else {"molecules": 300, "box": 2.1}
BATCH = 1000 if GPU else 20
MOLECULES = "medium" if GPU else "small"
TRAVERSALS = [n for n in traversals.TRAVERSALS if traversals.backend(n) == ("cuda" if GPU else "cpu")]


def _median(fn, gpu: bool) -> float:
    if gpu:
        return timing.time_gpu(fn, warmup=2, repeat=10, min_time=0.2).median
    return timing.time_cpu(fn, warmup=1, repeat=3, min_time=0.0).median


def _skip_unless(strategy, precision: str) -> None:
    ok, why = strategy.supports(precision)
    if not ok:
        raise NotImplementedError(why)


class Reciprocal:
    """Ewald's reciprocal part: structure factors, energy and forces of CHARGES charges ±1 at 100 per
    nm³, OpenMM's alpha and kmax for tolerance 5e-4 at a 1 nm cutoff."""

    params = (KSPACE, list(kspace.PRECISIONS))
    param_names = ["kspace", "precision"]
    timeout = 600
    number = 1

    def setup(self, name, precision):
        from harness import ewald_bench

        self.s = kspace.create(name)
        _skip_unless(self.s, precision)
        x, q, L = ewald_bench.system(CHARGES, 100.0, seed=1)
        self.plan = self.s.prepare(q, ewald_bench.parameters(L, 1.0, 5e-4, None), precision)
        self.plan.upload(x)
        self.plan.run()  # warm-up: kernels compiled, memory touched
        self.plan.synchronize()

    def track_total_ms(self, name, precision):
        return _median(self.plan.run, self.s.backend == "cuda")

    track_total_ms.unit = "ms"


class MonteCarlo:
    """Trial moves of one rigid water molecule in reciprocal space (the built-in `water` system): ΔE of
    a batch of BATCH independent moves per move, and on the GPU the Metropolis loop's time per move
    (ΔE, decision and S update on the device)."""

    params = (KSPACE, ["fp32", "fp64"])
    param_names = ["kspace", "precision"]
    timeout = 600
    number = 1

    def setup(self, name, precision):
        from harness import mc_systems
        from mdcore import forcefield
        from mdcore.ewald import Ewald
        from strategies import kspace_mc

        s = kspace.create(name)
        _skip_unless(s, precision)
        self.gpu = s.backend == "cuda"
        x, q, ids, L = mc_systems.build("water", dict(WATER), seed=1)
        ff = forcefield.parse({"types": ["X"], "coulomb_constant": mc_systems.COULOMB,
                               "electrostatics": {"method": "ewald", "cutoff": mc_systems.CUTOFF,
                                                  "alpha": mc_systems.ALPHA, "kmax": list(mc_systems.KMAX)}})
        ewald = Ewald.make(ff, tuple(L), (True, True, True))
        start, atoms = kspace_mc.molecules(len(q), ids, q)
        moves = kspace_mc.draw(BATCH, len(start) - 1, 0.05, 0.3, True, seed=2)
        self.mover = kspace_mc.create(s, x, q, ewald, precision, start, atoms)
        self.moves = self.mover.upload_moves(moves) if self.gpu else moves
        self.batch()  # warm-up
        if self.gpu:
            self.loop()
            self.mover.cp.cuda.get_current_stream().synchronize()

    def batch(self):
        return self.mover.batch(self.moves, BATCH) if self.gpu else self.mover.batch(self.moves)

    def loop(self):
        self.mover.loop(self.moves, BATCH, 1.0 / 2.5, check=False)

    def track_batch_us_per_move(self, name, precision):
        return 1e3 * _median(self.batch, self.gpu) / BATCH

    track_batch_us_per_move.unit = "us"

    def track_loop_us_per_move(self, name, precision):
        if not self.gpu:
            raise NotImplementedError("the loop is timed on the GPU (harness mc times the CPU's)")
        t = 1e3 * _median(self.loop, True) / BATCH
        self.mover.check_loop()
        return t

    track_loop_us_per_move.unit = "us"


class Molecules:
    """One evaluation of SPC/E water (reaction field, 9 Å cutoff) by each molecule traversal in fp32:
    on the GPU the kernels with energy and virial (compute) and forces and torques alone (forces, what
    an MD step runs), a list traversal over its list built before the samples; on the CPU the whole
    evaluation."""

    params = (TRAVERSALS, ["fp32"])
    param_names = ["traversal", "precision"]
    timeout = 900
    number = 1

    def setup(self, name, precision):
        from harness import molecule_scenarios

        mols, model = molecule_scenarios.make("spce_water", MOLECULES, seed=1)
        ok, why = traversals.applicable(name, mols, model)
        if not ok:
            raise NotImplementedError(why)
        self.gpu = traversals.backend(name) == "cuda"
        if self.gpu:
            from strategies.molecules_cuda import MoleculePlan

            self.plan = MoleculePlan(name, mols, model, precision)
            self.plan.upload(mols.centres, mols.quaternions)
            self.plan.run()
            self.plan.cp.cuda.get_current_stream().synchronize()
        else:
            self.once = lambda: traversals.evaluate(name, mols, model, precision)
            self.once()

    def track_compute_ms(self, name, precision):
        return _median(self.plan.run if self.gpu else self.once, self.gpu)

    track_compute_ms.unit = "ms"

    def track_forces_ms(self, name, precision):
        if not self.gpu:
            raise NotImplementedError("forces alone: the GPU traversals' MD-step kernels")
        return _median(lambda: self.plan.run(False), True)

    track_forces_ms.unit = "ms"


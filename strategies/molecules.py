"""The molecule traversals, CPU (molecules_cpu.py, numba) and GPU (molecules_cuda.py, CUDA), behind one
interface: names(), backend(), applicable(), evaluate(). A GPU traversal on a machine without a GPU is
not applicable, with the reason; every one computes in the precision modes of PRECISIONS."""
from __future__ import annotations

from . import molecules_cpu, molecules_cuda

PRECISIONS = tuple(molecules_cpu.PRECISIONS)
assert PRECISIONS == tuple(molecules_cuda.PRECISIONS)
TRAVERSALS = molecules_cpu.TRAVERSALS + molecules_cuda.TRAVERSALS


def why_not(name: str) -> str:
    """Why strategy `name` takes no molecules (the line a refusal prints)."""
    if name.startswith("clusterpair_"):
        return "its clusters of 8 and their interaction masks are laid out for points"
    if name.endswith("_mutex"):
        return ("the port's global-mutex scheduler and cell locks stay with the points: a warp holds both cells "
                "of a molecule job, so the lock-free form needs no locks")
    if name.endswith(("_2d", "_nested")):
        return (f"a cell-view variant of {name.rsplit('_', 1)[0]}_csr, the view the molecule traversals use "
                "(views change the points' cell storage, not the pair body)")
    if name == "allpairs_thread_tiled":
        return "its tiles stage points in shared memory; allpairs_thread_naive is the all-pairs molecule traversal"
    from . import registry

    if name in registry.names(experimental=True) and name not in registry.names():
        return "an experimental point strategy, kept to compare designs on points"
    return "no molecule traversal of that name"


def refuse(names, what: str, reference: bool = False):
    """InputError naming each of `names` that is not a molecule traversal and why, with those there are;
    None when all are (the reference too where `reference`)."""
    from mdcore import InputError

    bad = [n for n in names if n not in TRAVERSALS and not (reference and n == "reference")]
    if not bad:
        return None
    known = ("reference, " if reference else "") + ", ".join(TRAVERSALS)
    why = "; ".join(f"{n}: {why_not(n)}" for n in bad)
    return InputError(f"{what}: no molecule form for {why}. Molecules run in {known}")


def backend(name: str) -> str:
    return "cuda" if name in molecules_cuda.TRAVERSALS else "cpu"


def applicable(name: str, mols, model) -> tuple[bool, str]:
    """Whether traversal `name` runs these molecules here (the reason where not)."""
    if name in molecules_cuda.TRAVERSALS:
        return molecules_cuda.applicable(name, mols, model)
    return molecules_cpu.applicable(name, mols, model)


def evaluate(name: str, mols, model, precision: str = "fp64") -> dict:
    """forces and torques (M, 3), energy, virial (3, 3) and molecule pairs, float64 whatever the precision."""
    mols.check_precision(model, precision)
    if name in molecules_cuda.TRAVERSALS:
        return molecules_cuda.evaluate(name, mols, model, precision)
    return molecules_cpu.evaluate(name, mols, model, precision)


class Plan:
    """A traversal across the steps of a trajectory (md, verify's replay, bench's amortised column):
    evaluate(mols) on each frame. A GPU traversal keeps its buffers and kernels (molecules_cuda's
    MoleculePlan), the GPU's Verlet traversals their list too; the CPU's Verlet traversal keeps its list
    while the centres stay within the skin (molecules_cpu.VerletPlan); the others evaluate from scratch.
    `rebuilds` counts list builds (0 without a list)."""

    def __init__(self, name: str, template, model, precision: str = "fp64"):
        template.check_precision(model, precision)
        self.name, self.model, self.precision = name, model, precision
        self.rebuilds = 0
        self._verlet = molecules_cpu.VerletPlan(model, precision) if name == "verlet_thread_cpu" else None
        self._gpu = (molecules_cuda.MoleculePlan(name, template, model, precision)
                     if name in molecules_cuda.TRAVERSALS else None)

    def evaluate(self, mols) -> dict:
        if self._gpu is not None:
            self._gpu.upload(mols.centres, mols.quaternions)
            self._gpu.run()
            self.rebuilds = getattr(self._gpu, "rebuilds", 0)
            return self._gpu.result()
        if self._verlet is not None:
            out = self._verlet.evaluate(mols)
            self.rebuilds = self._verlet.rebuilds
            return out
        return molecules_cpu.evaluate(self.name, mols, self.model, self.precision)

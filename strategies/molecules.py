"""The molecule traversals, CPU (molecules_cpu.py, numba) and GPU (molecules_cuda.py, CUDA), behind one
interface: names(), backend(), applicable(), evaluate(). A GPU traversal on a machine without a GPU is
not applicable, with the reason; every one computes in the precision modes of PRECISIONS."""
from __future__ import annotations

from . import molecules_cpu, molecules_cuda

PRECISIONS = tuple(molecules_cpu.PRECISIONS)
assert PRECISIONS == tuple(molecules_cuda.PRECISIONS)
TRAVERSALS = molecules_cpu.TRAVERSALS + molecules_cuda.TRAVERSALS


def backend(name: str) -> str:
    return "cuda" if name in molecules_cuda.TRAVERSALS else "cpu"


def applicable(name: str, mols, model) -> tuple[bool, str]:
    """Whether traversal `name` runs these molecules here (the reason where not)."""
    if name in molecules_cuda.TRAVERSALS:
        return molecules_cuda.applicable(name, mols, model)
    return molecules_cpu.applicable(name, mols, model)


def evaluate(name: str, mols, model, precision: str = "fp64") -> dict:
    """forces and torques (M, 3), energy, virial (3, 3) and molecule pairs, float64 whatever the precision."""
    if name in molecules_cuda.TRAVERSALS:
        return molecules_cuda.evaluate(name, mols, model, precision)
    return molecules_cpu.evaluate(name, mols, model, precision)

"""`harness verify --self-test`: a planted read of unwritten memory, which poisoned memory must catch.

The planted strategy is a real one whose evaluation then adds a work array to its forces that
nothing ever wrote: on the host a CPU strategy's work array (mdcore.poison.empty), on the GPU a
fresh CuPy allocation read by a kernel. That is the bug class poisoning exists for: a buffer
assumed to hold zeros. Fresh memory often does hold zeros, and then the planted bug passes
unseen; with poisoning on it holds NaN, and the verify cell must fail. Each planted cell is run
through verify's own check (run_cell), in fp32.
"""
from __future__ import annotations

import strategies
from mdcore import poison

from . import verify

# a CPU and a GPU strategy to plant the read in (any would do: the read is added after them)
HOSTS = ("fullshell_thread_cpu", "fullshell_thread_csr")


class Planted:
    """`base` with one planted read: its forces plus an unwritten array of their shape."""

    def __init__(self, base: strategies.Strategy):
        self.base = base

    def __getattr__(self, name):
        return getattr(self.base, name)

    @property
    def label(self) -> str:
        return f"{self.base.label} + an unwritten work array"

    def compute(self, plan):
        out = self.base.compute(plan)
        if self.base.backend == "cuda":
            import cupy

            unwritten = cupy.empty(out.forces.shape, out.forces.dtype)  # poisoned by the pool's hook, or not
            out.forces += unwritten
        else:
            unwritten = poison.empty(out.forces.shape, out.forces.dtype)
            out.forces = out.forces + unwritten
        return out


def run(say=print) -> bool:
    """Each planted cell under poisoning: True where every one that could run failed verify."""
    poison.enable()
    import reference

    cases = verify.build_cases(["lj_liquid"], "tiny", 1)
    cases[0].ref = reference.compute(cases[0].problem)
    caught, ran = 0, 0
    for name in HOSTS:
        s = strategies.create(name)
        ok, why = s.available()
        if not ok:
            say(f"{name}: n/a ({why})")
            continue
        row = verify.run_cell(Planted(s), cases[0], "fp32", {})
        ran += 1
        where = "a device allocation" if s.backend == "cuda" else "a host work array"
        if row["status"] in ("FAIL", "ERROR"):
            caught += 1
            say(f"{name}: planted read of {where}: caught ({row['status']}: {str(row.get('detail', ''))[:120]})")
        else:
            say(f"{name}: planted read of {where}: NOT caught (verify says {row['status']})")
    return ran > 0 and caught == ran

"""verlet_thread_padded: the CUDA Verlet list, its launch choices and its kernel specialisations.
The plan (build, force, upkeep) is in plan.py; the MD loop's fused steps in ../integrate_fused.py."""
from __future__ import annotations

from typing import ClassVar

from mdcore import FLOAT_PRECISIONS, MODES, InputError, Potential, Problem

from ..base import Plan
from ..binning import Binning
from ..cuda import LAYOUTS, CudaStrategy, cbool, ctypes, layout_expressions
from ..registry import register
from . import tuning
from .common import VerletStrategy, parse_adapt
from .packed import packed_refusal

TPP_CHOICES = (0, 1, 2, 4, 8, 16, 32)
MINB_CHOICES = ("auto", 0, 8, 9, 10, 11, 12, 16)
BATCH_CHOICES = ("auto", 8, 16)
SPLIT_CHOICES = ("auto", "groups", "entries")
BUILD_CHOICES = ("auto", "strip", "opposite", "cell", "warp")
ADAPT_BUILDS = ("auto", "strip", "opposite")
VERLET_LAYOUTS = {**LAYOUTS, "packed": 3}
# layout 'auto': packed where it applies (float coordinates, a box large enough for its grid) in the
# precision modes whose sums are not fixed point (the fixed-point mode keeps the same bits in every
# strategy only with the Vec4 positions), else aos4. Packed was the fastest layout measured at
# LJ 1M (docs/decisions/verlet-packed-layout.md).
AUTO_PACKED_PRECISIONS = ("fp32", "mixed")
SHARED_TABLE_MOST = 227 * 1024  # the dynamic shared memory a block can have (compute capability 9.0)
# the build kernels (kernels/verlet_build.cu): (MINIMAGE, WINDOW) of the strip build
BUILD_FLAGS = (("false", "true"), ("true", "false"))


@register
class VerletThreadPadded(VerletStrategy, CudaStrategy):
    name = "verlet_thread_padded"
    storage = "padded"
    source_file = "verlet_force.cu"
    description = ("CUDA Verlet list (cutoff + skin): padded rows of 16-bit near and 32-bit far entries in cell order, "
                   "one to sixteen threads a row by size; the displacement check and rebuild decided on the device "
                   "every step; layout auto (packed 8-byte positions for the near entries where they apply, else aos4)")
    launch_defaults = {**VerletStrategy.launch_defaults, "block": 128, "layout": "auto", "adapt": "off"}
    # chosen by the code (tuning.py) unless set by name; prune: experimental (an inner list)
    # table: where a typed pair table lies (measured: docs/decisions/pair-table.md)
    launch_internal = {"tpp": 0, "build": "auto", "minb": "auto", "batch": "auto", "split": "auto", "prune": "off",
                       "table": "global"}
    launch_choices = {**VerletStrategy.launch_choices, "block": (64, 128, 256, 512), "tpp": TPP_CHOICES,
                      "build": BUILD_CHOICES, "layout": ("auto", *VERLET_LAYOUTS), "minb": MINB_CHOICES,
                      "batch": BATCH_CHOICES, "split": SPLIT_CHOICES, "table": ("global", "shared")}
    launch_help: ClassVar[dict] = {
        "layout": "positions the force kernel gathers: auto (packed where it applies, else aos4), aos4, aos3, soa, "
                  "packed (8-byte fixed point for the near entries)",
        "adapt": "off, or m:K: each particle's buffer m + K dt times its speed at a rebuild of the MD loop",
        "table": "where a typed pair table lies: global (read through the read-only cache) or shared (copied into "
                 "each block's shared memory first)",
    }

    def __init__(self, **launch):
        super().__init__(**launch)
        self.adapt = parse_adapt(self.name, self.launch.get("adapt", "off"))
        if self.adapt is not None:
            if self.launch.get("prune", "off") != "off":
                raise InputError(f"{self.name}: adapt sizes each particle's buffer from its speed; the inner list "
                                 "(prune) takes one buffer for all: take prune=off")
            if self.launch["build"] not in ADAPT_BUILDS:
                raise InputError(f"{self.name}: adapt needs the strip build (build=auto, strip or opposite), got "
                                 f"build={self.launch['build']}")
        minb, block = self.launch["minb"], self.launch["block"]
        if minb != "auto" and minb * block > tuning.MAX_THREADS_PER_SM:
            raise InputError(f"{self.name}: minb={minb} blocks of {block} threads do not fit on one SM "
                             f"({tuning.MAX_THREADS_PER_SM} threads): take minb <= {tuning.MAX_THREADS_PER_SM // block}")

    def layout_for(self, problem: Problem) -> str:
        """The positions' layout for this problem: the launch parameter's, 'auto' resolved."""
        layout = self.launch["layout"]
        if layout != "auto":
            return layout
        if problem.precision in AUTO_PACKED_PRECISIONS and problem.potential.cutoff is not None and \
                not problem.potential.per_particle and \
                not packed_refusal(self.packed_reach(problem), problem.box.array):
            return "packed"
        return "aos4"

    def supports(self, problem: Problem, check_device: bool = True) -> tuple[bool, str]:
        if self.launch.get("table") == "shared":
            pot = problem.potential
            if not pot.per_particle or pot.functor_shared is None:
                return False, "table=shared places a typed pair table; this problem's potential has none"
            size = pot.table_bytes(MODES[problem.precision].compute(0).itemsize)
            if size > SHARED_TABLE_MOST:
                return False, (f"table=shared: the pair table of {pot.records} records takes {size / 1024:.0f} KB, "
                               f"more than the {SHARED_TABLE_MOST // 1024} KB of shared memory a block can have")
        if self.launch["layout"] == "packed":
            if problem.potential.per_particle:  # the first reason: no room for the particle's word
                return False, self.per_particle_refusal()
            if problem.precision not in self.kernel_precisions("packed"):
                return False, (f"layout=packed holds float coordinates in fixed point; {problem.precision} computes in "
                               f"{MODES[problem.precision].cxx_compute} (take layout aos4 or soa)")
            if problem.potential.cutoff is not None:
                why = packed_refusal(self.packed_reach(problem), problem.box.array)
                if why:
                    return False, why
        return super().supports(problem, check_device)

    def packed_reach(self, problem: Problem) -> float:
        """The farthest a near pair can be while the list is valid (each end within skin / 2 of its
        build position): r_list + skin, what layout=packed's grid must span (packed_step)."""
        return self.rlist(problem) + self.launch["skin"]

    # --- kernel specialisations -----------------------------------------------------------------

    def force_expression(self, precision: str, potential: Potential, energy: bool, pbc: bool, tpp: int,
                         md: int = 0, layout: str | None = None) -> str:
        """The force kernel for threads per row `tpp` (the plan's) and a resolved layout (None: the
        launch's, aos4 for 'auto'); md 1 or 2: the fused MD step's (kernels/verlet_md.cuh)."""
        layout = layout or (self.launch["layout"] if self.launch["layout"] != "auto" else "aos4")
        real, acc = ctypes(precision)
        packed = layout == "packed"
        entries = self.entries(tpp)
        minb = self.register_cap(energy, acc, md, packed, tpp)
        if potential.per_particle and self.launch["minb"] == "auto":
            minb = 0  # the caps were measured on Lennard-Jones; a typed or charged pair spills under them
        batch = self.batch(energy, entries, md, packed, tpp)
        functor = potential.functor
        if self.launch.get("table") == "shared" and potential.per_particle and potential.functor_shared:
            functor = potential.functor_shared
        return (f"verlet_force<{real}, {acc}, {functor}, {cbool(energy)}, {cbool(pbc)}, "
                f"{tpp}, {self.launch['block']}, {VERLET_LAYOUTS[layout]}, {minb}, {batch}, "
                f"{cbool(entries)}" + (f", {md}>" if md else ">"))

    def register_cap(self, energy: bool, acc: str = "float", md: int = 0, packed: bool | None = None,
                     tpp: int = 1) -> int:
        """The force kernel's minimum blocks per SM (packed: the layout's; None: the launch's)."""
        packed = self.launch["layout"] == "packed" if packed is None else packed
        return tuning.register_cap(self.launch["minb"], self.launch["block"], energy, acc, packed, md, tpp)

    def batch(self, energy: bool, entries: bool = False, md: int = 0, packed: bool | None = None,
              tpp: int = 1) -> int:
        """Near entries in flight per thread (packed: the layout's; None: the launch's)."""
        packed = self.launch["layout"] == "packed" if packed is None else packed
        return tuning.batch(self.launch["batch"], energy, entries, packed, md, tpp)

    def entries(self, tpp: int) -> bool:
        """Whether the row's tpp lanes split it by entries (tuning.split_entries)."""
        return tuning.split_entries(self.launch["split"], tpp)

    def tpps(self) -> tuple[int, ...]:
        """The threads per row this launch may run with (tpp=0: every value the size rule may choose)."""
        t = self.launch["tpp"]
        return tuple(1 << k for k in range(tuning.table().tpp_most.bit_length())) if t == 0 else (t,)

    def default_tpps(self) -> tuple[int, ...]:
        """The tpps whose kernels CI checks one by one (spills, float64 in PTX): tpp=0's two ends;
        those between differ only in the rows' shuffle sum and compile with expressions()."""
        t = self.tpps()
        return (t[0], t[-1]) if len(t) > 1 else t

    def kernel_precisions(self, layout: str | None = None) -> tuple[str, ...]:
        """The precision modes a layout's kernels exist for: packed needs float coordinates."""
        layout = layout or self.launch["layout"]
        return tuple(p for p in MODES if layout != "packed" or MODES[p].cxx_compute == "float")

    def kernel_layouts(self, precision: str, potential: Potential | None = None) -> tuple[str, ...]:
        """The layouts this launch may run `precision` (and `potential`) with: 'auto' may take packed or
        aos4; a potential whose particles carry data takes none that drops the positions' w."""
        layout = self.launch["layout"]
        if layout != "auto":
            out: tuple[str, ...] = (layout,) if precision in self.kernel_precisions(layout) else ()
        else:
            out = ("aos4", "packed") if precision in AUTO_PACKED_PRECISIONS else ("aos4",)
        if potential is not None and potential.per_particle:
            out = tuple(lay for lay in out if lay not in self.NO_WORDS["layout"])
        return out

    def md_expressions(self, potential: Potential) -> list[str]:
        """The fused MD steps' force kernels (periodic boxes, the float precision modes): the
        closing kick with every output flavour, the closing and opening kicks forces only."""
        return [self.force_expression(p, potential, e, True, t, md, lay) for t in self.default_tpps()
                for p in FLOAT_PRECISIONS for lay in self.kernel_layouts(p, potential)
                for e, md in ((True, 1), (False, 1), (False, 2))]

    def default_expressions(self, potential: Potential) -> list[str]:
        return [self.force_expression(p, potential, e, pbc, t, layout=lay) for t in self.default_tpps()
                for p in MODES for lay in self.kernel_layouts(p, potential) for e in (True, False) for pbc in (True, False)] + \
            self.md_expressions(potential)

    def expressions(self, potential: Potential, experimental: bool = False) -> list[str]:
        """Every threads-per-row count the size rule chooses at the default block, every block and
        every layout; with `experimental`, also every internal value set by name (tpp 32, minb,
        batch, split)."""
        variants = [{"tpp": t} for t in self.tpps()] + [{"block": b} for b in self.launch_choices["block"]] + \
            [{"table": "shared"}] + \
            [{"layout": lay} for lay in VERLET_LAYOUTS]
        if experimental:
            variants += [{"tpp": 32}] + [{"minb": m} for m in MINB_CHOICES] + [{"batch": b} for b in BATCH_CHOICES] + \
                [{"tpp": t, "split": sp} for t in TPP_CHOICES[2:] for sp in ("groups", "entries")]
        out: list[str] = []
        for v in variants:
            s = type(self)(**v)
            out += [e for e in s.default_expressions(potential) if e not in out]
        return out

    def data_expressions(self, experimental: bool = False) -> dict[str, list[str]]:
        reals = sorted({m.cxx_compute for m in MODES.values()})
        build = [f"verlet_refresh<{r}>" for r in reals] + \
            [f"verlet_build<{r}, {m}, {w}, false, {ad}>" for r in reals for m, w in BUILD_FLAGS
             for ad in ("false", "true")] + \
            [f"verlet_build<{r}, false, true, true, {ad}>" for r in reals for ad in ("false", "true")] + \
            [f"verlet_build_cells<{r}, {m}>" for r in reals for m in ("false", "true")] + \
            [f"verlet_build_warp<{r}, {m}>" for r in reals for m in ("false", "true")] + ["verlet_pack"]
        out = {"verlet_build.cu": build, "verlet_steps.cu": md_data_expressions(),
               "binning.cu": sorted({e for r in reals for e in Binning.expressions(r)}),
               "layout.cu": layout_expressions()}
        if experimental:
            out["verlet_prune.cu"] = [f"verlet_prune<{r}, {fma}, {pbc}, {pk}>" for r in reals
                                      for fma in ("true", "false") for pbc in ("true", "false")
                                      for pk in ("false", "true") if pk == "false" or r == "float"]
        return out

    def _prepare(self, problem: Problem) -> Plan:
        from .plan import VerletPlan

        return VerletPlan(self, problem)


def md_data_expressions() -> list[str]:
    """The fused MD steps' kernels besides the force kernel, for the float precision modes."""
    pairs = sorted({(MODES[p].cxx_compute, MODES[p].cxx_accumulate) for p in FLOAT_PRECISIONS})
    return ([f"verlet_open<{r}, {a}>" for r, a in pairs] + [f"verlet_unsort<{r}, {a}>" for r, a in pairs]
            + [f"verlet_stage<{r}, {a}>" for r, a in pairs] + [f"verlet_half_skins<{r}, {a}>" for r, a in pairs]
            + [f"verlet_resort<{a}>" for a in sorted({a for _, a in pairs})])

"""CUDA plumbing shared by the GPU strategies: device detection, kernel compilation (CuPy
RawModule, one cached module per specialisation), device buffers and the reduce phase.

A traversal kernel is a template on the pair functor; its module's code is the potential's
functor header (strategies/kernels/<potential.cuda_header>, or the potential's own
cuda_source) followed by the kernel file, so any registered potential compiles into any
traversal without a change to either.

CuPy is imported lazily so that CPU-only machines can import every strategy module.
"""
from __future__ import annotations

import functools
import re
from pathlib import Path
import numpy as np

from mdcore import FIXED_SCALE, MODES, Forces, Potential, Problem, StrategyError, poison, poison_value
from mdcore.potentials import particle_words

from .base import Plan, Strategy

KERNEL_DIR = Path(__file__).resolve().parent / "kernels"
REDUCE_BLOCK = 256
COMPILE_OPTIONS = ("-std=c++17",)
# The fixed-point mode's kernels (Acc = Fixed): no fused multiply-adds, so that every kernel
# rounds a pair's r^2, force and energy one way (mdcore.fixed); NO_CONTRACTION tells the pair
# functors not to spell one out (kernels/lennard_jones.cuh).
FIXED_OPTIONS = ("--fmad=false", "-DNO_CONTRACTION")
_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"\s*$', re.M)


def _gpu_present() -> bool:
    """An NVIDIA driver device node or nvidia-smi: a GPU may be here even where CuPy is not."""
    import glob
    import shutil

    return bool(glob.glob("/dev/nvidia[0-9]*")) or shutil.which("nvidia-smi") is not None


@functools.cache
def device_status() -> tuple[bool, str]:
    """(True, "") when CuPy imports and sees a CUDA device, else (False, why not): "no CUDA GPU
    found" first where the machine has none, the CuPy problem where it has one."""
    try:
        import cupy
    except Exception as e:  # ImportError, or a broken CUDA install
        if not _gpu_present():
            return False, "no CUDA GPU found"
        return False, (f"a GPU is present but CuPy is not importable ({type(e).__name__}: {e}); "
                       "`make setup` installs it")
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:
        return False, f"no CUDA GPU found ({type(e).__name__}: {e})"
    if count == 0:
        return False, "no CUDA GPU found (the driver reports no device)"
    return True, ""


def source(name: str, _seen: set | None = None) -> str:
    """Kernel source with local "..." includes inlined. CuPy's compile cache is keyed on the
    code string, so a header edit must change that string (an -I include would not)."""
    seen = set() if _seen is None else _seen
    path = KERNEL_DIR / name
    if path in seen:
        return ""
    seen.add(path)
    return inline_includes(path.read_text(), seen)


def inline_includes(text: str, seen: set) -> str:
    """text with its local "..." includes (headers in KERNEL_DIR) inlined, each header once."""
    return _INCLUDE.sub(lambda m: source(m.group(1), seen), text).replace("#pragma once", "")


def functor_source(potential: Potential, seen: set | None = None) -> str:
    """The C++ text of a potential's pair functor (its header, includes inlined)."""
    seen = set() if seen is None else seen
    if potential.cuda_source is not None:
        return inline_includes(potential.cuda_source, seen)
    return source(potential.cuda_header, seen)


def module_code(file: str, potential: Potential | None = None) -> str:
    """The code of one kernel file's module: the potential's functor first (for the traversal
    kernels), then the file; each header once."""
    seen: set = set()
    head = functor_source(potential, seen) + "\n" if potential is not None else ""
    return head + source(file, seen)


def options(expression: str) -> tuple[str, ...]:
    """Compiler options of one specialisation: FIXED_OPTIONS added where it accumulates in Fixed."""
    return COMPILE_OPTIONS + (FIXED_OPTIONS if re.search(r"\bFixed\b", expression) else ())


@functools.cache
def _compiled(code: str, expression: str):
    import cupy

    module = cupy.RawModule(code=code, options=options(expression), name_expressions=(expression,))
    return module.get_function(expression)


def kernel(file: str, expression: str, potential: Potential | None = None):
    """Compiled kernel for one template specialisation, e.g.
    kernel("allpairs.cu", "allpairs_thread_tiled<float, double, LennardJones, 256, true>", lj);
    the module is cached per code and specialisation. `potential` for the traversal kernels
    (their functor's header goes first), None for kernels without a pair functor."""
    return _compiled(module_code(file, potential), expression)


def reduce_expression(acc: str) -> str:
    return f"reduce_partials<{acc}, {REDUCE_BLOCK}>"


def reduce_blocks(nparts: int, block: int = REDUCE_BLOCK) -> int:
    """reduce_partials's grid (kernels/reduce.cu): a block per `block` partials, at
    most `block` blocks (the last one sums theirs a thread each)."""
    return 1 if nparts <= 0 else min(-(-nparts // block), block)


def fold_expression(acc: str) -> str:
    return f"fold_slices<{acc}>"


CONVERT_EXPRESSION = "fixed_to_double"


@functools.cache
def sm_count() -> int:
    import cupy

    return int(cupy.cuda.Device().attributes["MultiProcessorCount"])


def auto_tpp(n: int, most: int, round_up: bool = True) -> int:
    """Threads per particle (or row) for about 1024 resident threads per SM, half of what an SM
    holds: a power of two from 1 to `most`, sms * 1024 / n rounded up (the full shell) or down
    (the Verlet list: at 32,000 particles 4 threads per row beat 8 by 1.26x, H200)."""
    if round_up:
        want = max(1, -(-sm_count() * 1024 // max(n, 1)))
        return min(most, 1 << (want - 1).bit_length())
    want = sm_count() * 1024 // max(n, 1)
    return min(most, 1 << (want.bit_length() - 1)) if want >= 1 else 1


def resident_blocks(fn, block: int) -> int:
    """Blocks of `block` threads of kernel `fn` that fit on one SM at once."""
    import cupy

    try:
        return max(1, int(cupy.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(fn.ptr, block, 0)))
    except Exception:  # older CuPy: estimate from threads and registers
        regs = max(1, int(getattr(fn, "num_regs", 32)))
        return max(1, min(2048 // block, 65536 // (regs * block), 32))


def box_struct(problem: Problem, real: type) -> np.ndarray:
    """Box<Real> by value: lengths, then inverse lengths (0 on open axes)."""
    L = problem.box.array
    inv = np.where(problem.box.periodic, 1.0 / L, 0.0)
    dtype = np.dtype({"names": ["lx", "ly", "lz", "ilx", "ily", "ilz"], "formats": [real] * 6})
    return np.concatenate([L, inv]).astype(real).view(dtype)


def centred_positions(problem: Problem, real: type) -> np.ndarray:
    """(N, 4) positions relative to the box centre: |x| <= L/2 halves the rounding of float
    coordinates compared with [0, L); minimum image is unaffected. The fourth component carries
    what each particle carries (its record or charge, mdcore.potentials.pair_table), else 0."""
    out = np.zeros((problem.n, 4), dtype=real)
    out[:, :3] = problem.positions - 0.5 * problem.box.array
    if problem.potential.per_particle:
        out[:, 3] = particle_words(problem)
    return out


def ctypes(precision: str) -> tuple[str, str]:
    """(C++ compute type, C++ accumulation type) of a precision mode."""
    m = MODES[precision]
    return m.cxx_compute, m.cxx_accumulate


def cbool(v: bool) -> str:
    return "true" if v else "false"


# Position layouts of the launch parameter `layout` (kernels/layout.cuh): name -> LAYOUT code.
LAYOUTS = {"aos4": 0, "aos3": 1, "soa": 2}


def layout_expressions(reals=("float", "double")) -> list[str]:
    """The relayout kernels (layout.cu) of the non-default layouts."""
    return [f"relayout<{r}, {c}>" for r in reals for c in (1, 2)]


class Layout:
    """The positions a kernel reads, in the layout a launch parameter names: aos4 reads the Vec4
    array it is given as it is; aos3 and soa read a copy (3 m Reals) that fill() makes from a
    Vec4 array on the device. words: the particles carry a type or charge in their fourth
    component, which the copy keeps in an array of its own after the coordinates (4 m Reals)."""

    def __init__(self, cp, name: str, real_t: str, real: type, m: int, words: bool = False):
        self.name, self.code = name, LAYOUTS[name]
        self.stride = max(int(m), 1)
        self.words = bool(words)
        self.data = None if self.code == 0 else cp.empty((4 if words else 3) * self.stride, real)
        self._k = None if self.code == 0 else kernel("layout.cu", f"relayout<{real_t}, {self.code}>")

    @property
    def nbytes(self) -> int:
        return 0 if self.data is None else int(self.data.nbytes)

    def fill(self, src, n: int) -> None:
        """The copy of src's first n positions (nothing to do for aos4)."""
        if self._k is not None and n:
            self._k((max(1, min(-(-n // 256), 8 * sm_count())),), (256,), (src, np.int32(n), self.data,
                                                                          np.int32(self.stride), self.words))

    def args(self, src) -> tuple:
        """(positions, stride) as the kernels take them: src itself for aos4, else the copy."""
        return (src if self.data is None else self.data), np.int32(self.stride)


class CudaStrategy(Strategy):
    """Base of the GPU strategies: availability from the device, types from the precision."""

    backend = "cuda"
    source_file: str = ""

    def available(self) -> tuple[bool, str]:
        return device_status()

    def expressions(self, potential: Potential, experimental: bool = False) -> list[str]:
        """Every template specialisation this strategy may launch with `potential` and its public
        launch parameters (CI compiles them all; with `experimental`, also those of its internal
        parameters set by name); the kernels without a pair functor come from data_expressions()."""
        raise NotImplementedError

    def default_expressions(self, potential: Potential) -> list[str]:
        """The specialisations of the default launch parameters, every precision and
        periodicity (CI checks them for spills and float64 in fp32)."""
        raise NotImplementedError

    def data_expressions(self, experimental: bool = False) -> dict[str, list[str]]:
        """Kernels without a pair functor this strategy launches, per file (binning, layouts)."""
        return {}


class CudaPlan(Plan):
    """Device buffers common to the GPU strategies, and the reduce and download phases.

    nparts: partial-sum slots the force kernels write (one per block for the all-pairs
    kernels). Subclasses implement force().
    """

    visits_per_pair = 2  # full-shell traversals see every pair from both sides

    def __init__(self, strategy: CudaStrategy, problem: Problem, nparts: int):
        super().__init__(strategy, problem)
        import cupy

        poison.device()  # MDFORCE_POISON=1: every allocation from here on filled with all bits set
        self.cp = cupy
        mode = MODES[problem.precision]
        self.real_t, self.acc_t = mode.cxx_compute, mode.cxx_accumulate
        self.real, self.acc = mode.compute, mode.accumulate
        n = problem.n
        self.host_pos = centred_positions(problem, self.real)
        self.box = box_struct(problem, self.real)
        self.pos = cupy.empty((max(n, 1), 4), dtype=self.real)
        self.fparams = cupy.asarray(problem.potential.params(), dtype=self.real)
        self.forces = cupy.empty((n, 3), dtype=self.acc)
        self.nparts = nparts
        self.partial = cupy.empty((max(nparts, 1), 7), dtype=self.acc)
        self.pcount = cupy.empty(max(nparts, 1), dtype=np.uint64)
        self.sums = cupy.empty(7, dtype=self.acc)
        # the reduction's second level: a block's sums each, and the ticket its last block resets
        self.level = cupy.empty((REDUCE_BLOCK, 7), dtype=self.acc)
        self.lcount = cupy.empty(REDUCE_BLOCK, dtype=np.uint64)
        self.ticket = cupy.zeros(1, dtype=np.uint32)
        self.out = cupy.empty(10, dtype=self.acc)  # energy, then the 3x3 virial
        self.count = cupy.empty(1, dtype=np.uint64)
        try:
            self._reduce = kernel("reduce.cu", reduce_expression(self.acc_t))
        except Exception as e:
            raise StrategyError(f"{strategy.name}: compiling the reduction failed: {e}") from e
        self.fixed = mode.fixed
        if self.fixed:  # the float64 results the fixed-point sums are converted into, once per evaluation
            self._conv = kernel("fixed.cu", CONVERT_EXPRESSION)
            self.forces_f64 = cupy.empty(self.forces.shape, np.float64)
            self.out_f64 = cupy.empty(self.out.shape, np.float64)

    @property
    def device_bytes(self) -> int:
        arrays = (self.pos, self.fparams, self.forces, self.partial, self.pcount, self.sums, self.level, self.lcount,
                  self.ticket, self.out, self.count)
        return int(sum(a.nbytes for a in arrays))

    def upload(self) -> None:
        if self.problem.n:
            self.pos[: self.problem.n].set(self.host_pos)

    def reduce(self) -> None:
        if not self.energy:
            return
        shift = np.int32(1 if self.visits_per_pair == 2 else 0)  # every pair seen twice: halve the totals
        self._reduce((reduce_blocks(self.nparts),), (REDUCE_BLOCK,),
                     (self.partial, self.pcount, np.int32(self.nparts), shift, self.level, self.lcount, self.ticket,
                      self.sums, self.out, self.count))

    def output(self) -> Forces:
        forces, out = self.forces, self.out
        if self.fixed:  # once at the end: the sums in float64
            forces, out = self._converted()
        if not self.energy:
            return Forces(forces, None, None, None)
        return Forces(forces, out[0], out[1:10], self.count[0])

    def _converted(self):
        """(forces, out) of the fixed-point sums as float64, converted on the device."""
        parts = [(self.forces, self.forces_f64)] + ([(self.out, self.out_f64)] if self.energy else [])
        for src, dst in parts:
            if src.size:
                self._conv((max(1, min(-(-src.size // 256), 4 * sm_count())),), (256,),
                           (src, np.int32(src.size), np.float64(1.0 / FIXED_SCALE), dst))
        return self.forces_f64, self.out_f64

    def poison(self) -> None:
        bad = poison_value(self.acc)
        self.forces.fill(bad)
        self.partial.fill(bad)
        self.out.fill(bad)
        self.pcount.fill(np.iinfo(np.uint64).max)
        self.count.fill(np.iinfo(np.uint64).max)
        if self.fixed:
            self.forces_f64.fill(np.nan)
            self.out_f64.fill(np.nan)

    def synchronize(self) -> None:
        self.cp.cuda.get_current_stream().synchronize()


"""The headline figures, tracked by default: each strategy's force with a built list, and for the list
strategies the amortised cost of an MD step on a recorded trajectory (`harness bench`'s columns
with_list_ms and amortised_ms), on the LJ liquid in fp32 at sizes small and large.

On a machine with a GPU: every non-experimental GPU strategy at small and large. Without one: the
CPU strategies at small. MDFORCE_ASV_STRATEGIES narrows the selection as for the other benchmarks.
"""
from .common import prepared, problem

import strategies  # noqa: E402
from harness import timing  # noqa: E402  (a module: asv would take time_* functions for benchmarks)
from harness import amortised  # noqa: E402  (a module: its time_amortised is no benchmark)
from harness.bench import trajectory  # noqa: E402

import os  # noqa: E402

FRAMES = 50  # recorded frames an amortised figure replays (harness bench takes 200; asv repeats it)


def _selection() -> tuple[list[str], list[str]]:
    gpu = strategies.create("allpairs_thread_tiled").available()[0]
    names = strategies.resolve(os.environ.get("MDFORCE_ASV_STRATEGIES") or ("cuda" if gpu else "cpu"))
    return names, (["small", "large"] if gpu else ["small"])


NAMES, SIZES = _selection()
LISTS = [n for n in NAMES if strategies.REGISTRY[n].list_reuse]


def _median(s, fn) -> float:
    if s.backend == "cuda":
        return timing.time_gpu(fn, warmup=3, repeat=20, min_time=0.2).median
    return timing.time_cpu(fn, warmup=1, repeat=5, min_time=0.0).median


class WithList:
    """The force phase with a built list (no list upkeep): compute_built, as bench's with_list_ms."""

    params = (NAMES, SIZES)
    param_names = ["strategy", "size"]
    timeout = 900
    number = 1

    def setup(self, name, size):
        self.s, self.p, self.plan = prepared(name, "lj_liquid", size, "fp32")

    def track_with_list_ms(self, name, size):
        return _median(self.s, lambda: self.s.compute_built(self.plan))

    track_with_list_ms.unit = "ms"


class Amortised:
    """A step of a list strategy on a recorded trajectory: list upkeep (checks, every rebuild), force
    and reduce, per frame, as bench's amortised_ms."""

    params = (LISTS or ["none"], SIZES)
    param_names = ["strategy", "size"]
    timeout = 1800
    number = 1
    repeat = 1  # the replay itself is timed several times (harness.amortised)

    def setup(self, name, size):
        if name == "none":
            raise NotImplementedError("no list strategy in the selection")
        self.s = strategies.create(name)
        self.p = problem("lj_liquid", size, "fp32")
        ok, why = self.s.supports(self.p)
        if not ok:
            raise NotImplementedError(why)
        frames = trajectory(self.p, FRAMES)
        if isinstance(frames, str):
            raise NotImplementedError(frames)
        self.frames = frames

    def track_amortised_ms(self, name, size):
        return amortised.time_amortised(self.s, self.p, self.frames)["amortised_ms"]

    track_amortised_ms.unit = "ms"

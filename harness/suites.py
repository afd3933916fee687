"""Named benchmark sweeps (`python -m harness bench --suite NAME`, `make bench SUITE=NAME`).

Each suite is a list of parts; a part is strategies x scenarios x sizes x precisions, with
optional launch-parameter sweeps. Strategies are chosen by what they are (attribute filters,
strategies.resolve: 'traversal=parity', 'newton3=true+backend=cuda') or by name. On a machine
without a GPU the GPU points are listed as n/a with the reason, and the CPU part runs.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from mdcore import PRECISIONS


@dataclass(frozen=True)
class Part:
    strategies: str
    scenarios: tuple[str, ...]
    sizes: tuple
    precisions: tuple[str, ...] = ("fp32",)
    sweep: dict = field(default_factory=dict)
    potential: str | None = None  # replaces the scenarios' potential (a spec, e.g. coordination:r0=1,n=6)
    outputs: tuple[str, ...] = ()  # the part's output flavours (empty: the command's --outputs)


SUITES: dict[str, tuple[str, list[Part]]] = {
    "default": ("every strategy on the LJ liquid and the Gaussian blob, small and medium, fp32", [
        Part("all", ("lj_liquid", "gaussian"), ("small", "medium")),
    ]),
    "large": ("the GPU's cell and list strategies at 1M on the LJ liquid and the sigma-12 Gaussian (the headline "
              "points; all-pairs at 1e12 checks and the mutex schedulers, seconds per evaluation, are left out)", [
        Part("backend=cuda+traversal=fullshell,backend=cuda+traversal=c08,parity_block_csr,parity_thread_csr,"
             "parity_warpblock_shared_atomic,parity_warpblock_twopass_atomic,backend=cuda+traversal=verlet,"
             "backend=cuda+traversal=clusterpair", ("lj_liquid", "gaussian:sigma=12"), ("large",)),
    ]),
    "allpairs": ("thesis fig. 10.1: all pairs without cutoff, 125 to 216,000 particles", [
        Part("traversal=allpairs", ("allpairs_cube",), (125, 1000, 8000, 27000, 64000, 125000, 216000)),
    ]),
    "views": ("thesis fig. 10.2: nested vs 2D views (and CSR), 1,000 to 1,000,000 particles at constant density", [
        Part("traversal=fullshell+backend=cuda,c08_warp_", ("uniform",), (1000, 8000, 64000, 216000, 512000, 1000000)),
    ]),
    "one_per_cell": ("thesis fig. 10.3: one particle per cell, 1,000 to 20,000,000 cells", [
        Part("fullshell_thread_csr,c08_warp_csr,c08_thread_csr,parity_block_csr,parity_warpblock_shared_atomic,"
             "parity_warpblock_twopass_atomic,backend=cpu+storage=csr", ("one_per_cell",),
             (1000, 8000, 64000, 512000, 1000000, 8000000, 20000000)),
    ]),
    "nine_per_cell": ("thesis fig. 10.4: 9 particles per cell, 125 to 2,200,000 particles", [
        Part("fullshell_thread_csr,c08_warp_csr,c08_thread_csr,parity_block_csr,parity_warpblock_shared_atomic,"
             "parity_warpblock_twopass_atomic,backend=cpu+storage=csr", ("k_per_cell",), (125, 1000, 8000, 64000, 512000, 2200000)),
    ]),
    "gaussian": ("thesis fig. 10.5: Gaussian blob, sigma 12 to 85 at 1,000,000 particles, box 120", [
        Part("fullshell_thread_csr,c08_warp_csr,parity_block_csr,parity_warpblock_shared_atomic,"
             "parity_warpblock_twopass_atomic,c08_thread_cpu",
             tuple(f"gaussian:sigma={s}" for s in (12, 20, 30, 40, 55, 70, 85)), ("large",)),
    ]),
    "mardyn": ("the MarDyn processors: block and warps-per-block sweeps, schedulers and commits on LJ 1M; "
               "processors against particles per cell (1 to 12) at 1M", [
        Part("parity_block_csr", ("lj_liquid",), ("large",), sweep={"block": [32, 64, 128, 256, 512]}),
        Part("parity_warpblock_shared_atomic,parity_warpblock_twopass_atomic", ("lj_liquid",), ("large",),
             sweep={"warps": [1, 2, 4, 8, 16], "commit": ["atomic", "lock"]}),
        # the mutex scheduler costs seconds per evaluation at 1 warp per block: the warps sweep only
        Part("parity_warpblock_shared_mutex,parity_warpblock_twopass_mutex", ("lj_liquid",), ("large",),
             sweep={"warps": [1, 2, 4, 8, 16]}),
        Part("parity_block_csr,parity_warpblock_shared_atomic,parity_warpblock_twopass_atomic,c08_warp_csr,"
             "fullshell_thread_csr",
             tuple(f"k_per_cell:k={k}" for k in (1, 2, 4, 9, 12)), (1000000,)),
    ]),
    "bodies": ("the GPU's cell and list strategies on heavier pair bodies at 1M: LJ, typed LJ (2, 8 and 64 types), "
               "Kob-Andersen, LJ with charges and a reaction field or Ewald's real-space term; OpenMM beside them", [
        Part("backend=cuda+traversal=fullshell,backend=cuda+traversal=c08,parity_block_csr,"
             "parity_warpblock_shared_atomic,parity_warpblock_twopass_atomic,backend=cuda+traversal=verlet,"
             "backend=cuda+traversal=clusterpair",
             ("lj_liquid", "typed_lj", "typed_lj:types=8", "typed_lj:types=64", "kob_andersen", "charged_lj",
              "charged_lj_ewald"), ("large",)),
    ]),
    "precision": ("every strategy in every precision mode on the LJ liquid, medium", [
        Part("all", ("lj_liquid",), ("medium",), PRECISIONS),
    ]),
    "claims": ("what the source documents' claims need beyond the suites above (harness claims): position layouts "
               "in fp32 and fp64, the cell strategies' views, c08 and the MarDyn schedulers on the liquid and two "
               "Gaussians at 1M, the coordination function's kernels, the precision modes at 1M, charges in float4 "
               "against float3 and an array, a typed pair "
               "table in shared against global memory, the Verlet list's default layout against aos4 at 256,000 and 1M", [
        Part("fullshell_thread_csr,verlet_thread_padded,allpairs_thread_tiled,allpairs_thread_naive", ("lj_liquid",),
             (32000,), ("fp32", "fp64"), sweep={"layout": ["aos4", "aos3", "soa"]}, outputs=("forces",)),
        Part("fullshell_thread_2d,fullshell_thread_nested,c08_thread_2d,c08_thread_nested,c08_warp_2d,c08_warp_nested,"
             "c08_thread_csr,c08_warp_csr,fullshell_thread_csr,traversal=parity+processor=warpblock",
             ("lj_liquid", "gaussian", "gaussian:sigma=40"), ("large",), outputs=("forces",)),
        Part("allpairs_thread_naive,allpairs_thread_tiled,fullshell_thread_csr,verlet_thread_padded", ("lj_liquid",),
             (4000, 32000), potential="coordination:r0=1,n=6,dmax=2.5"),
        Part("fullshell_thread_csr,clusterpair_warp_newton3,verlet_thread_padded", ("lj_liquid",), ("large",),
             ("fp32", "mixed", "fp64", "fixed")),
        # charges and types packed into the positions' fourth component against float3 beside a word array
        Part("fullshell_thread_csr,verlet_thread_padded", ("charged_lj", "typed_lj:types=8"), ("large",),
             sweep={"layout": ["aos4", "aos3", "soa"]}, outputs=("forces",)),
        Part("allpairs_thread_tiled,allpairs_thread_naive", ("charged_lj",), (32000,),
             sweep={"layout": ["aos4", "aos3", "soa"]}, outputs=("forces",)),
        # a typed pair table in shared memory against global memory (the MarDyn port's on-chip parameters)
        Part("verlet_thread_padded", ("typed_lj", "typed_lj:types=64", "kob_andersen"), ("large",),
             sweep={"table": ["global", "shared"]}),
        # the Verlet list's default layout (packed where it applies) against aos4 where 'auto' takes packed
        Part("verlet_thread_padded", ("lj_liquid",), (256000, "large"), sweep={"layout": ["auto", "aos4"]},
             outputs=("forces", "all")),
    ]),
}
# everything a full report shows, in one sweep (`make bench SUITE=full`, then `make report`)
SUITES["full"] = ("every suite above in one run: what `make report` needs for all its sections",
                  [part for name in ("default", "large", "allpairs", "views", "one_per_cell", "nine_per_cell", "gaussian",
                                     "mardyn", "bodies", "precision", "claims") for part in SUITES[name][1]])


def get(name: str) -> tuple[str, list[Part]]:
    from mdcore import InputError

    if name not in SUITES:
        raise InputError(f"unknown suite {name!r}; known: {', '.join(SUITES)}")
    return SUITES[name]

"""Rigid molecules on the GPU: the molecule-pair body (kernels/molecules.cuh, ls1-MarDyn's PotForce) in
the traversals of kernels/molecules.cu, named as the point strategies whose loops they follow:

  allpairs_thread_naive   a thread per molecule against every other (minimum image)
  fullshell_thread_csr    a thread per molecule, in cell order, over the 27 cells around its own
  fullshell_warp_csr      a warp per molecule, its lanes over those cells' molecules, a warp sum at the end
  c08_thread_csr          Newton3: the c08 colours of those cells (a launch per colour), a thread per base
                          over the 14 cell pairs of its block, each pair once; the torque on j from the
                          angular momentum the pair conserves (needs 3 cells along each periodic axis)
  c08_warp_csr            the same colours, a warp per base: for each molecule i of its cell pairs the lanes
                          split i's partners (written directly), then a warp sum of i's force and torque
  parity_thread_csr       Newton3 on the ls1-MarDyn port's parity-plane traverser (a launch per layer of cell
                          pairs, every cell in at most one pair of a launch): a thread per cell pair, the
                          port's reference processor
  parity_block_csr        the same layers, the port's thread-block processor: 32 threads per cell pair, A's
                          molecules in registers, B's staged in shared memory with their sums, the lanes
                          rotating over them
  parity_warpblock_twopass_atomic, parity_warpblock_shared_atomic
                          the same layers, the port's warp-block processor: a persistent kernel per layer,
                          warps taking jobs with one atomicAdd each (a cell pair, or one side of it, with all
                          its warp blocks); two-pass computes A->B and B->A, each writing its own side, shared
                          computes each pair once with B staged in the warp's shared slots
  verlet_thread_padded    a list over the centres within (1 + SKIN) rc, a padded row per molecule (built
                          by a warp per molecule), kept across evaluations while no centre has moved more
                          than SKIN rc / 2 since the build (upload() decides, or in MD the drift's flag:
                          rigid_cuda.DeviceRigid); a thread per molecule over its row
  verlet_warp_padded      the same list, a group of lanes of a warp per molecule over its row (4 to 32 lanes,
                          pick_lanes() from the rows and the molecules), then a sum over the group

An evaluation (MoleculePlan.run, all on the device, no host synchronisation): the sites turned by the
quaternions (molecule_sites), the centres' cells (molecule_cell_of, then a stable sort by cell and the
cell starts: CSR), the traversal, and the block sums of energy and virial. Each pair is visited from
both sides except in the Newton3 traversals (NEWTON3); energy and virial are halved on the host where it is. Precision modes as for points (fp32: float
compute and sums, mixed: float compute and double sums, fp64); the fixed-point mode is for points.
Every traversal calls one pair body (kernels/molecules.cuh pair_body). For one component of Lennard-Jones
centres and charges (site_shape: SPC/E's 1 centre and 3 charges) its loops are unrolled and molecule i's
sites held in registers for all its partners; otherwise its general loops take any sites.
The results match strategies/molecules_cpu.py's contract: float64 arrays of forces and torques, the
energy with the dipoles' reaction-field self term, the 3x3 centre-of-mass virial and the molecule pairs.
"""
from __future__ import annotations

import math

import numpy as np

from . import cuda
from .binning import SCAN_TILE

TRAVERSALS = ("allpairs_thread_naive", "fullshell_thread_csr", "fullshell_warp_csr", "c08_thread_csr",
              "c08_warp_csr", "parity_thread_csr", "parity_block_csr", "parity_warpblock_twopass_atomic",
              "parity_warpblock_shared_atomic", "verlet_thread_padded", "verlet_warp_padded")
C08 = ("c08_thread_csr", "c08_warp_csr")
WARPBLOCK = {"parity_warpblock_twopass_atomic": 0, "parity_warpblock_shared_atomic": 1}  # kernels' MODE
WARPBLOCK_WARPS = 4  # kMolWarps in molecules.cu
PARITY = ("parity_thread_csr", "parity_block_csr", *WARPBLOCK)
NEWTON3 = C08 + PARITY  # each pair visited once: j's force and torque written too
LISTS = ("verlet_thread_padded", "verlet_warp_padded")
WARP = ("fullshell_warp_csr", "verlet_warp_padded")  # a warp (or a group of its lanes) per molecule
SKIN = 0.1  # the Verlet list's skin, a fraction of the cutoff (as the CPU's, molecules_cpu.SKIN)
PRECISIONS = {"fp32": ("float", "float", np.float32, np.float32), "mixed": ("float", "double", np.float32, np.float64),
              "fp64": ("double", "double", np.float64, np.float64)}
KERNELS = {"allpairs_thread_naive": "molecule_allpairs_thread", "fullshell_thread_csr": "molecule_fullshell_thread",
           "fullshell_warp_csr": "molecule_fullshell_warp", "c08_thread_csr": "molecule_c08_thread",
           "c08_warp_csr": "molecule_c08_warp", "parity_thread_csr": "molecule_parity_thread",
           "parity_block_csr": "molecule_parity_block", "parity_warpblock_twopass_atomic": "molecule_parity_warpblock",
           "parity_warpblock_shared_atomic": "molecule_parity_warpblock",
           "verlet_thread_padded": "molecule_verlet_thread", "verlet_warp_padded": "molecule_verlet_warp"}
BLOCK = 128
SITE_BLOCK = 256
SUMS = 10
KIND = {"lj": 0, "charge": 1, "dipole": 2, "quadrupole": 3}
HEADER = 8


LANE_CHOICES = (4, 8, 16, 32)
ROW_PER_LANE = 16  # the mean row entries per lane verlet_warp_padded's lanes aim at
MANY_THREADS = 1 << 22  # above this many threads in flight, half as many lanes still hide the gathers' latency


def pick_lanes(mean_row: float, m: int) -> int:
    """verlet_warp_padded's lanes per molecule for m molecules whose rows hold `mean_row` entries on
    average: the fewest of LANE_CHOICES that leaves each lane at most ROW_PER_LANE entries (else 32),
    halved while m x lanes / 2 still exceeds MANY_THREADS. Fewer lanes leave fewer of them idle on a row's
    last stride and inside the cutoff test; more give a small system enough warps (measured on SPC/E
    water: docs/decisions/molecule-lanes.md); bench --launch lanes=K times another choice."""
    k = next((k for k in LANE_CHOICES if mean_row <= k * ROW_PER_LANE), LANE_CHOICES[-1])
    while k > LANE_CHOICES[0] and m * k // 2 > MANY_THREADS:
        k //= 2
    return k


SHAPED_SITES = 6  # the most sites per molecule the unrolled pair body keeps in registers (4 each)
GENERAL = (0, 0)  # the site shape of the general loops
SHIPPED_SHAPES = ((1, 3),)  # the shipped models' shapes besides GENERAL: SPC/E's (and TIP4P's) 1 centre, 3 charges


def site_shape(model) -> tuple[int, int]:
    """The pair body's site shape for `model`: (NL, NQ) for one component of NL Lennard-Jones centres and
    NQ charges (no dipoles or quadrupoles, at most SHAPED_SITES sites), whose loops every traversal kernel
    unrolls with molecule i's sites in registers for all its partners (kernels/molecules.cuh ShapedSites);
    GENERAL otherwise."""
    if len(model.components) != 1:
        return GENERAL
    kinds = list(model.components[0].kinds)
    nl, nq = kinds.count("lj"), kinds.count("charge")
    return (nl, nq) if nl + nq == len(kinds) and 0 < nl + nq <= SHAPED_SITES else GENERAL


def traversal_expression(name: str, real: str, acc: str, pbc: bool, energy: bool, shape=GENERAL) -> str:
    """The traversal kernel's specialisation: its block size in the template, except the parity processors
    that fix theirs (parity_block_csr a warp, the warp-block ones WARPBLOCK_WARPS warps, with their MODE),
    and the pair body's site shape (site_shape) last."""
    nl, nq = shape
    if name in WARPBLOCK:
        return f"{KERNELS[name]}<{real}, {acc}, {cuda.cbool(pbc)}, {cuda.cbool(energy)}, {WARPBLOCK[name]}, {nl}, {nq}>"
    block = "" if name == "parity_block_csr" else f"{BLOCK}, "
    return f"{KERNELS[name]}<{real}, {acc}, {block}{cuda.cbool(pbc)}, {cuda.cbool(energy)}, {nl}, {nq}>"


def expressions(name: str, precision: str) -> list[str]:
    """Every specialisation traversal `name` launches in `precision`: both periodicities, with and
    without energy, the general body and the shipped models' unrolled ones, and the site and cell
    kernels."""
    real, acc = PRECISIONS[precision][:2]
    out = [f"molecule_sites<{real}>"]
    if name != "allpairs_thread_naive":
        out += [f"molecule_cell_of<{real}>", f"molecule_bin_count<{real}>", "molecule_rank_in_cell"]
    if name in LISTS:
        out += [f"molecule_list_build{w}<{real}, {cuda.cbool(pbc)}>" for pbc in (True, False) for w in ("", "_warp")]
    out += [traversal_expression(name, real, acc, pbc, energy, shape) for shape in (GENERAL, *SHIPPED_SHAPES)
            for pbc in (True, False) for energy in (True, False)]
    return out


MD_FILE = "molecule_md.cu"  # the device MD step's kernels (strategies/rigid_cuda.py)


def md_expressions(precision: str) -> list[str]:
    """The device MD step's specialisations in `precision` (kernels/molecule_md.cu)."""
    real, acc = PRECISIONS[precision][:2]
    return [f"molecule_kick<{acc}, {acc}>", f"molecule_kick_drift<{real}, {acc}, {acc}>", f"molecule_list_mark<{acc}>"]


def _kind_order(comp) -> np.ndarray:
    """A component's sites in the body's order (kernels/molecules.cuh): its Lennard-Jones centres, its
    charges, then its dipoles and quadrupoles, each group in the file's order."""
    return np.argsort([KIND[k] for k in comp.kinds], kind="stable")


def params(model, real) -> np.ndarray:
    """The molecule body's constants in the compute type, in kernels/molecules.cuh's order: the header,
    xi and eta, and per component the ends of its Lennard-Jones centres, its charges and its sites."""
    C = len(model.components)
    head = [model.cutoff ** 2, model.switch_start, model.cutoff, model.coulomb_constant, model.k_rf, model.c_rf,
            model.rf_dipoles, float(C)]
    assert len(head) == HEADER
    ends = [(sum(k == "lj" for k in cp.kinds), sum(k in ("lj", "charge") for k in cp.kinds), len(cp.kinds))
            for cp in model.components]
    return np.concatenate([head, np.asarray(model.xi, np.float64).ravel(), np.asarray(model.eta, np.float64).ravel(),
                           np.asarray(ends, np.float64).ravel()]).astype(real)


def body_sites(mols, model, real):
    """Per site, expanded over the molecules: owner, body-frame (p, m) and (d, kind), or (sigma, sqrt(eps),
    0, kind) for a Lennard-Jones centre; per molecule its first site (M + 1 entries). A molecule's sites
    are in the body's order (_kind_order)."""
    comps = model.components
    per = []
    for cp in comps:
        A = np.zeros((len(cp.kinds), 4))
        E = np.zeros((len(cp.kinds), 4))
        for row, s in enumerate(_kind_order(cp)):
            kind = cp.kinds[s]
            A[row, :3] = cp.position[s]
            if kind == "lj":
                E[row] = (cp.sigma[s], math.sqrt(cp.epsilon[s]), 0.0, KIND["lj"])
            else:
                A[row, 3] = cp.charge[s] if kind == "charge" else cp.moment[s]
                E[row] = (*cp.direction[s], KIND[kind])
        per.append((A, E))
    comp = np.asarray(mols.components, np.int64)
    sizes = np.array([len(cp.kinds) for cp in comps], np.int64)
    count = sizes[comp] if len(comp) else np.zeros(0, np.int64)
    first = np.concatenate([[0], np.cumsum(count)]).astype(np.int32)
    owner = np.repeat(np.arange(len(comp), dtype=np.int32), count)
    A, E = np.zeros((int(count.sum()), 4)), np.zeros((int(count.sum()), 4))
    for k, (pa, pe) in enumerate(per):  # per component, vectorised: its molecules' sites in molecule order
        mine = np.nonzero(comp == k)[0]
        at = (first[mine][:, None] + np.arange(len(pa))[None, :]).ravel()
        A[at] = np.tile(pa, (len(mine), 1))
        E[at] = np.tile(pe, (len(mine), 1))
    return owner, A.astype(real), E.astype(real), first


def site_spans(first: np.ndarray, components, model) -> np.ndarray:
    """Per molecule (first, lj, q, end) as int32 (m, 4): its Lennard-Jones centres [first, lj), charges
    [lj, q), dipoles and quadrupoles [q, end) in body_sites' order (kernels/molecules.cuh molecule_span)."""
    comp = np.asarray(components, np.int64)
    ends = np.array([(sum(k == "lj" for k in cp.kinds), sum(k in ("lj", "charge") for k in cp.kinds))
                     for cp in model.components], np.int64).reshape(-1, 2)
    f = np.asarray(first, np.int64)
    out = np.stack([f[:-1], f[:-1] + ends[comp, 0], f[:-1] + ends[comp, 1], f[1:]], axis=1) if len(comp) else \
        np.zeros((0, 4), np.int64)
    return np.ascontiguousarray(out, np.int32)


def centred(centres, lengths, periodic) -> np.ndarray:
    """Centres relative to the box centre, wrapped into [-L/2, L/2) on periodic axes (float64)."""
    L = np.asarray(lengths, np.float64)
    c = np.asarray(centres, np.float64) - 0.5 * L
    for a in range(3):
        if periodic[a]:
            c[:, a] -= L[a] * np.floor(c[:, a] / L[a] + 0.5)
    return c


def cell_grid(centres: np.ndarray, lengths, periodic, cutoff: float):
    """Cells of side >= cutoff over the (centred) centres: (lo, side, dims) per axis, as
    molecules_cpu._cells chooses them."""
    lo, side, dims = [], [], []
    for a in range(3):
        if periodic[a]:
            L = float(lengths[a])
            n = max(1, int(L // cutoff))
            lo.append(-0.5 * L)
            side.append(L / n)
        else:
            x = centres[:, a]
            low = float(x.min()) if len(x) else 0.0
            extent = max(float(x.max() - low) if len(x) else 0.0, cutoff)
            n = max(1, int(extent // cutoff))
            lo.append(low)
            side.append(extent / n)
        dims.append(n)
    return lo, side, dims


def launch_pairs(dims, periodic) -> list[np.ndarray]:
    """The parity-plane traverser's launches (strategies/schedules.py parity_launches: the intra-cell pass,
    then per direction the even and odd layers) as (cell A, cell B) pairs, int32 (count, 2); within a
    launch every cell is in at most one pair."""
    from .schedules import layer_pairs, parity_launches

    out = []
    for layer in parity_launches(np.asarray(dims), periodic):
        pairs = np.array(layer_pairs(layer, np.asarray(dims), periodic), np.int32).reshape(-1, 2)
        if len(pairs):
            out.append(pairs)
    return out


class MoleculePlan:
    """One traversal and precision on one system of molecules: the device buffers, the kernels, and run()."""

    def __init__(self, name: str, mols, model, precision: str, lanes: int | None = None, spans: bool | None = None,
                 unrolled: bool | None = None, counting: bool | None = None, warp_build: bool | None = None):
        import cupy as cp

        if name not in TRAVERSALS:
            raise ValueError(name)
        if precision not in PRECISIONS:
            raise ValueError(f"molecules compute in {', '.join(PRECISIONS)}, not {precision}")
        self.cp, self.name, self.precision = cp, name, precision
        real_c, acc_c, self.real, self.acc = PRECISIONS[precision]
        self.model = model
        m = len(mols.centres)
        self.m = m
        self.periodic = tuple(bool(p) for p in mols.box.periodic)
        self.pbc = any(self.periodic)
        self.lengths = np.asarray(mols.box.lengths, np.float64)
        owner, A, E, first = body_sites(mols, model, self.real)
        self.nsites = len(owner)
        self.d_owner = cp.asarray(owner)
        self.d_bodyA, self.d_bodyE = cp.asarray(A), cp.asarray(E)
        self.d_A, self.d_E = cp.empty_like(self.d_bodyA), cp.empty_like(self.d_bodyE)
        # one component: no spans (the kernels count a molecule's sites from its index); `spans` True keeps them
        self.uniform = len(model.components) == 1 and not spans
        self.d_span = cp.asarray(site_spans(first, mols.components, model))
        self.d_comp = cp.asarray(np.asarray(mols.components, np.int32))
        self.d_params = cp.asarray(params(model, self.real))
        self.d_c = cp.zeros((m, 4), self.real)
        self.d_q = cp.zeros((m, 4), self.real)
        self.d_force = cp.zeros((m, 3), self.acc)
        self.d_torque = cp.zeros((m, 3), self.acc)
        self.threads = 32 if name == "parity_block_csr" else (32 * WARPBLOCK_WARPS if name in WARPBLOCK else BLOCK)
        self.lanes = 32 if name in WARP else 1  # lanes per molecule; verlet_warp_padded's follow its rows (below)
        if name == "verlet_warp_padded":  # `lanes` given: those (bench --launch lanes=K), else the rule's
            volume = float(np.prod(self.lengths))
            self.lanes = lanes if lanes is not None else pick_lanes(
                m / max(volume, 1e-300) * 4.0 / 3.0 * math.pi * ((1.0 + SKIN) * model.cutoff) ** 3, m)
        elif lanes is not None:
            raise ValueError(f"{name} takes no lanes; verlet_warp_padded does")
        self.grid = max(1, -(-(m * self.lanes) // BLOCK))
        self.visits = 1 if name in NEWTON3 else 2  # each pair from both sides, or once (Newton3)
        self.d_partial = cp.zeros((self.grid, SUMS), self.acc)
        self.d_count = cp.zeros(self.grid, np.uint64)
        self.launches: list = []  # Newton3: per launch (device bases or cell pairs, count, blocks, first slot)
        self.d_cell = cp.zeros(m, np.int32)
        box = np.concatenate([self.lengths, np.where(self.periodic, 1.0 / self.lengths, 0.0)]).astype(self.real)
        self.box = box.view(np.dtype({"names": ["lx", "ly", "lz", "ilx", "ily", "ilz"], "formats": [self.real] * 6}))
        self.fn_sites = cuda.kernel("molecules.cu", f"molecule_sites<{real_c}>")
        self.fn_cell = cuda.kernel("molecules.cu", f"molecule_cell_of<{real_c}>")
        # the centres' cells by the device counting sort (molecules.cu molecule_bin_count ...), or where
        # `counting` is False by CuPy's stable argsort (the same arrays; bench --launch counting=0)
        self.counting = counting is not False
        if self.counting and name != "allpairs_thread_naive":
            self.fn_bin = cuda.kernel("molecules.cu", f"molecule_bin_count<{real_c}>")
            self.fn_rank = cuda.kernel("molecules.cu", "molecule_rank_in_cell")
            self.fn_scan = cuda.kernel("binning.cu", "scan_counts")
            self.fn_place = cuda.kernel("binning.cu", "place")
            self.d_slot, self.d_order_tmp, self.d_order = (cp.empty(max(m, 1), np.int32) for _ in range(3))
            self.d_bins = None  # per cell: the counts, and the scan's tiles and tickets (sized with the grid)
        # the pair body: unrolled for a uniform system of Lennard-Jones centres and charges (site_shape) unless
        # `unrolled` is False (bench --launch unrolled=0 times the general loops on it)
        self.shape = site_shape(model) if self.uniform and unrolled is not False else GENERAL
        if unrolled and self.shape == GENERAL:
            raise ValueError(f"unrolled=1 needs one component of Lennard-Jones centres and charges (at most "
                             f"{SHAPED_SITES} sites) and no spans=1")
        self.fns = {e: cuda.kernel("molecules.cu", traversal_expression(name, real_c, acc_c, self.pbc, e, self.shape))
                    for e in (True, False)}
        self.cells = None
        if name in LISTS:  # the list: built at the first run and again once a centre leaves half the skin
            # a warp per molecule's row, or a thread's: the same rows. Unless `warp_build` says, a warp while
            # the warps' threads stay within MANY_THREADS (32,768 molecules: 0.35 against 0.43 ms), a thread
            # beyond (1,000,000: 7.1 against 9.1 ms; H200, docs/decisions/molecule-list-kernel.md)
            self.warp_build = warp_build if warp_build is not None else 32 * m <= MANY_THREADS
            self.fn_build = cuda.kernel("molecules.cu", f"molecule_list_build{'_warp' if self.warp_build else ''}"
                                                        f"<{real_c}, {cuda.cbool(self.pbc)}>")
            self.reach = (1.0 + SKIN) * model.cutoff
            volume = float(np.prod(self.lengths))
            self.cap = int(1.3 * m / max(volume, 1e-300) * 4.0 / 3.0 * math.pi * self.reach ** 3) + 32
            self.d_list = cp.zeros(m * self.cap, np.int32)
            self.d_counts = cp.zeros(m, np.int32)
            self.d_longest = cp.zeros(1, np.int32)  # the longest row, where one outgrew cap (else 0)
            self.list_at: np.ndarray | None = None
            self.stale = True
            self.rebuilds = 0  # builds the host asked for; DeviceRigid adds those its steps decided

    def upload(self, centres: np.ndarray, quaternions: np.ndarray) -> None:
        """Centres (relative to the box centre, wrapped into it on periodic axes) and quaternions; the
        cell grid follows from them (the extent of an open axis)."""
        c = centred(centres, self.lengths, self.periodic)
        host = np.zeros((self.m, 4), self.real)
        host[:, :3] = c
        self.d_c.set(host)
        self.d_q.set(np.asarray(quaternions, self.real))
        if self.name in LISTS:
            self.host_c = c
            if self.list_at is not None and len(self.list_at) == len(c):
                d = c - self.list_at
                per = np.asarray(self.periodic)
                d = np.where(per, d - self.lengths * np.rint(d / self.lengths), d)
                if float(np.sqrt(np.max(np.sum(d * d, axis=1)))) > 0.5 * SKIN * self.model.cutoff:
                    self.stale = True
            else:
                self.stale = True
        if self.name != "allpairs_thread_naive":
            cells = cell_grid(c, self.lengths, self.periodic, self.reach if self.name in LISTS else self.model.cutoff)
            if self.cells is None or cells[2] != self.cells[2]:
                self.d_start = self.cp.zeros(int(np.prod(cells[2])) + 1, np.int32)
                if self.name in NEWTON3:
                    self._launches(cells[2])
            self.cells = cells

    def _launches(self, dims) -> None:
        """The Newton3 traversals' launches on the device: c08's colours (their bases) or the parity-plane
        traverser's layers (their cell pairs, launch_pairs), and the partial-sum slots, launch after launch:
        a block's, or for the warp-block processors a job's (the same bits whichever warp takes it)."""
        from .schedules import c08_colours

        cp = self.cp
        self.launches, slot = [], 0
        launches = (launch_pairs(dims, self.periodic) if self.name in PARITY else
                    c08_colours(np.asarray(dims), self.periodic))
        for items in launches:
            if self.name in WARPBLOCK:  # persistent: a warp a job, no more blocks than run at once; a slot a job
                jobs = len(items) * (2 if WARPBLOCK[self.name] == 0 else 1)
                blocks = max(1, min(-(-jobs // WARPBLOCK_WARPS), 8 * cuda.sm_count()))
                slots = jobs
            else:
                per_item = 32 if self.name in ("c08_warp_csr", "parity_block_csr") else 1
                blocks = slots = max(1, -(-(len(items) * per_item) // self.threads))
            self.launches.append((cp.asarray(np.ascontiguousarray(items, np.int32)), len(items), blocks, slot))
            slot += slots
        self.d_counters = cp.zeros(max(1, len(self.launches)), np.int32)  # the warp-block schedulers
        self.d_partial = cp.zeros((slot, SUMS), self.acc)
        self.d_count = cp.zeros(slot, np.uint64)

    def run(self, energy: bool = True) -> None:
        """The evaluation, enqueued on the current stream (a list traversal's list built first where it is
        stale: upload() says)."""
        self.sites()
        if self.name in LISTS and self.stale:
            self._build(self._cells())
        self.traverse(energy)

    def sites(self) -> None:
        """The lab-frame sites from the quaternions (molecule_sites)."""
        if self.nsites:
            self.fn_sites((-(-self.nsites // SITE_BLOCK),), (SITE_BLOCK,),
                          (np.int32(self.nsites), self.d_owner, self.d_q, self.d_bodyA, self.d_bodyE, self.d_A, self.d_E))

    def upkeep(self, guard) -> None:
        """A list traversal's build decided on the device: the cells (counting sort) and the rows, every
        kernel run only where the device int32 `guard` is set (no host synchronisation; a row longer than
        cap is counted in d_longest, which the caller reads: strategies/rigid_cuda.py)."""
        if self.name not in LISTS or not self.counting:
            raise ValueError(f"{self.name}: the list's build is decided on the device only for a list traversal "
                             "with the counting sort")
        self._rows(self._cells(guard), guard)

    def traverse(self, energy: bool = True) -> None:
        """The traversal over the sites (and a list traversal's list) as they are."""
        common = model_args(self)
        if self.name == "allpairs_thread_naive":
            self.fns[energy]((self.grid,), (BLOCK,), (np.int32(self.m), self.d_c, self.box, *common))
            return
        if self.name in LISTS:
            self.fns[energy]((self.grid,), (BLOCK,), (np.int32(self.m), self.d_c, self.box, self.d_order,
                                                      self.d_list, self.d_counts, np.int32(self.cap),
                                                      *((np.int32(self.lanes),) if self.name in WARP else ()), *common))
            return
        grid = self._cells()
        if self.name in NEWTON3:
            self.d_force.fill(0)
            self.d_torque.fill(0)
            if self.name in WARPBLOCK:
                self.d_counters.fill(0)
            for k, (items, count, blocks, slot) in enumerate(self.launches):
                where = grid if self.name in C08 else ()  # c08 finds its cell pairs from the grid
                sched = (self.d_counters[k:k + 1],) if self.name in WARPBLOCK else ()
                self.fns[energy]((blocks,), (self.threads,), (np.int32(count), items, self.d_c, self.box,
                                                              self.d_start, self.d_order, *where, *common,
                                                              np.int32(slot), *sched))
            return
        self.fns[energy]((self.grid,), (BLOCK,), (np.int32(self.m), self.d_c, self.box, self.d_cell, self.d_start,
                                                  self.d_order, *grid, *common))

    def _cells(self, guard=None) -> tuple:
        """The centres' cells as CSR (d_cell, d_order: a stable sort by cell, d_start); returns the grid's
        kernel arguments (cells and periodicity per axis). `guard` (the counting sort only): a device int32
        the kernels run behind (None: always)."""
        cp = self.cp
        lo, side, dims = self.cells
        R = self.real
        geo = (R(lo[0]), R(lo[1]), R(lo[2]), R(side[0]), R(side[1]), R(side[2]), *(np.int32(d) for d in dims))
        grid = (*(np.int32(d) for d in dims), *(np.int32(p) for p in self.periodic))
        if not self.counting:
            if guard is not None:
                raise ValueError("the argsort of the cells runs on the host's decision only")
            self.fn_cell((max(1, -(-self.m // 256)),), (256,), (np.int32(self.m), self.d_c, *geo, self.d_cell))
            self.d_order = cp.argsort(self.d_cell, kind="stable").astype(np.int32)
            self.d_start[:] = cp.searchsorted(self.d_cell[self.d_order], cp.arange(len(self.d_start), dtype=np.int32))
            return grid
        ncells = len(self.d_start) - 1
        if self.d_bins is None or len(self.d_bins[0]) != ncells:
            ntiles = -(-ncells // SCAN_TILE)
            self.d_bins = (cp.zeros(ncells, np.int32), cp.zeros(ntiles, np.uint64), cp.zeros(2, np.uint32), ntiles)
        counts, tiles, tickets, ntiles = self.d_bins
        if self.m == 0:
            self.d_start.fill(0)
            return grid
        blocks = (max(1, min(-(-self.m // 256), 8 * cuda.sm_count())),)
        g = np.uint64(0) if guard is None else guard  # a null pointer: always run
        self.fn_bin(blocks, (256,), (np.int32(self.m), self.d_c, *geo, self.d_cell, self.d_slot, counts, g))
        self.fn_scan((ntiles,), (256,), (counts, np.int32(ncells), self.d_start, tiles, tickets, np.int32(ntiles), g))
        self.fn_place(blocks, (256,), (self.d_cell, self.d_slot, np.int32(self.m), self.d_start, self.d_order_tmp, g))
        self.fn_rank(blocks, (256,), (np.int32(self.m), self.d_order_tmp, self.d_cell, self.d_start, self.d_order, g))
        return grid

    def _rows(self, grid, guard=None) -> None:
        """The rows from the cells just made (d_cell, d_start, d_order; the traversal takes the molecules
        in that order), behind `guard` where given."""
        threads = self.m * (32 if self.warp_build else 1)
        self.fn_build((max(1, -(-threads // 256)),), (256,),
                      (np.int32(self.m), self.d_c, self.box, self.d_cell, self.d_start, self.d_order, *grid,
                       self.real(self.reach * self.reach), np.int32(self.cap), self.d_list, self.d_counts,
                       self.d_longest, np.uint64(0) if guard is None else guard))

    def widen(self, longest: int) -> None:
        """Rows for `longest` entries and a quarter more (the list must be built again)."""
        self.cap = int(1.25 * longest) + 8
        self.d_list = self.cp.zeros(self.m * self.cap, np.int32)
        self.d_longest.fill(0)
        self.stale = True

    def _build(self, grid) -> None:
        """The list from the cells just made, its rows widened and built again where one overflowed (the
        host reads the longest row: one synchronisation per build)."""
        while True:
            self._rows(grid)
            longest = int(self.d_longest.get()[0]) if self.m else 0
            if not longest:
                break
            self.widen(longest)
        self.list_at = self.host_c.copy()
        self.stale = False
        self.rebuilds += 1

    def result(self) -> dict:
        """forces, torques (float64), energy (with the dipoles' self term), virial and molecule pairs."""
        sums = self.d_partial.get().astype(np.float64).sum(0) if self.m else np.zeros(SUMS)
        pairs = int(self.d_count.get().sum()) // self.visits
        share = 1.0 / self.visits
        return {"forces": self.d_force.get().astype(np.float64), "torques": self.d_torque.get().astype(np.float64),
                "energy": share * float(sums[0]) + self_energy(self.model, self.d_bodyA, self.d_bodyE),
                "virial": share * sums[1:].reshape(3, 3), "pairs": pairs}


def model_args(plan) -> tuple:
    """The arguments every molecule kernel ends with, in the order of MOLECULE_ARGS in kernels/molecules.cu:
    the parameters, the site spans (a null pointer where one component lets the kernel count sites from the
    index), the components, the turned sites, the force, torque and partial-sum outputs, the pair counts."""
    span = np.uint64(0) if plan.uniform else plan.d_span
    return (plan.d_params, span, plan.d_comp, plan.d_A, plan.d_E, plan.d_force, plan.d_torque,
            plan.d_partial, plan.d_count)


def self_energy(model, bodyA, bodyE) -> float:
    """The dipoles' reaction-field self term, -k rf m^2 / 2 each."""
    A, E = bodyA.get(), bodyE.get()
    dip = E[:, 3].astype(np.int64) == KIND["dipole"]
    return -0.5 * model.coulomb_constant * model.rf_dipoles * float(np.sum(A[dip, 3].astype(np.float64) ** 2))


def applicable(name: str, mols, model) -> tuple[bool, str]:
    """A GPU here; for c08 and the parity-plane traverser, 3 cells or more along each periodic axis of the
    centres' cells."""
    if name in NEWTON3:
        from .schedules import c08_applicable, parity_applicable

        c = centred(mols.centres, mols.box.lengths, mols.box.periodic)
        dims = cell_grid(c, mols.box.lengths, mols.box.periodic, model.cutoff)[2]
        ok, why = (c08_applicable if name in C08 else parity_applicable)(np.asarray(dims), mols.box.periodic)
        if not ok:
            kind = "c08" if name in C08 else "the parity-plane traverser"
            return False, f"{kind} over the centres' cells ({'x'.join(map(str, dims))}): {why}"
    ok, why = cuda.device_status()
    return (True, "") if ok else (False, why)


def evaluate(name: str, mols, model, precision: str = "fp64") -> dict:
    """One evaluation by the GPU traversal `name` (the plan made, the molecules uploaded, run, read back)."""
    plan = MoleculePlan(name, mols, model, precision)
    plan.upload(mols.centres, mols.quaternions)
    plan.run()
    return plan.result()

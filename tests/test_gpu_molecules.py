"""The GPU molecule traversals (strategies/molecules_cuda.py, kernels/molecules.cu): every specialisation
compiles and fp32 computes in float32 (nvcc, no GPU needed); on a GPU, every traversal in every
precision agrees with the float64 reference within verify's bound on every site kind, two components,
open and periodic boxes, the same bits run after run, and the site kernel turns the sites as the host
does."""
import re

import numpy as np
import pytest

from harness import molecule_check
from mdcore import Box
from mdcore import molecules as M
from reference import molecules as ref
from strategies import molecules_cuda, nvcc, rigid_cuda

from tests.test_molecules_cpu import _all_kinds

needs_nvcc = pytest.mark.skipif(nvcc.nvcc() is None, reason="nvcc not found on PATH")


@needs_nvcc
@pytest.mark.parametrize("unit", ["molecules.cu", molecules_cuda.MD_FILE])
def test_every_molecule_kernel_compiles_and_fp32_has_no_float64(unit):
    # every pair of two template arguments' values that occurs (nvcc.covering, as tests/test_kernels.py
    # does for the point kernels); MDFORCE_COMPILE_ALL=1 compiles every specialisation
    import os

    if unit == molecules_cuda.MD_FILE:
        exprs = sorted({e for p in molecules_cuda.PRECISIONS for e in molecules_cuda.md_expressions(p)})
    else:
        exprs = sorted({e for name in molecule_cuda_names() for p in molecules_cuda.PRECISIONS
                        for e in molecules_cuda.expressions(name, p)})
    if os.environ.get("MDFORCE_COMPILE_ALL") != "1":
        exprs = nvcc.covering(exprs)
    code, out, ptx = nvcc.compile_unit(unit, exprs, keep_ptx=True)
    assert code == 0, out
    assert len(nvcc.resources(out)) == len(exprs)
    kernels = nvcc.entries(ptx)
    fp32 = [e for e in exprs if re.search(r"<float(>|, float[,>])", e)]
    assert fp32
    for e in fp32:
        assert e in kernels, e
        # sinf and cosf (the rotation of the MD step) reduce an argument beyond 105,615 by multiplying it
        # by pi/2 * 2^-64 in float64 (Payne-Hanek, libdevice's own code): allowed, nothing else is
        lines = [ln.strip() for ln in kernels[e].splitlines() if nvcc.f64_instructions(ln)]
        f64 = [ln for ln in lines if "0d3BF921FB54442D19" not in ln]
        assert not f64, (e, f64[:3])


def test_c08_needs_three_cells_along_each_periodic_axis():
    from harness import molecule_scenarios as S

    mols, model = S.make("spce_water", "tiny", seed=1)  # 18.6 A with a 9 A cutoff: 2 cells a side
    ok, why = molecules_cuda.applicable("c08_thread_csr", mols, model)
    assert not ok and "c08" in why and "2x2x2" in why


def molecule_cuda_names():
    return molecules_cuda.TRAVERSALS


def test_sites_reach_the_body_grouped_by_kind_with_their_ends_in_the_parameters():
    """The body's lean loops take [0, lj) as Lennard-Jones centres and [lj, q) as charges: a component
    whose file lists its sites in another order (Y: X's reversed) is regrouped, and params() says where
    each group ends."""
    mols, model = _all_kinds(two=True)
    owner, A, E, first = molecules_cuda.body_sites(mols, model, np.float64)
    p = molecules_cuda.params(model, np.float64)
    C = len(model.components)
    ends = p[molecules_cuda.HEADER + 2 * C * C:].reshape(C, 3).astype(int)
    for k, comp in enumerate(model.components):
        i = int(np.nonzero(np.asarray(mols.components) == k)[0][0])
        kinds = E[first[i]:first[i + 1], 3].astype(int)
        assert list(kinds) == sorted(kinds)
        assert list(ends[k]) == [int(np.sum(kinds == 0)), int(np.sum(kinds <= 1)), len(comp.kinds)]
        moments = sorted(A[first[i]:first[i + 1], 3])
        assert moments == sorted([comp.charge[s] if kind == "charge" else (comp.moment[s] if kind != "lj" else 0.0)
                                  for s, kind in enumerate(comp.kinds)])
    assert len(p) == molecules_cuda.HEADER + 2 * C * C + 3 * C
    span = molecules_cuda.site_spans(first, mols.components, model)  # what the device reads per molecule
    comps = np.asarray(mols.components)
    np.testing.assert_array_equal(span, np.stack([first[:-1], first[:-1] + ends[comps, 0], first[:-1] + ends[comps, 1],
                                                  first[1:]], axis=1))


@pytest.mark.gpu
@pytest.mark.parametrize("name", molecules_cuda.TRAVERSALS)
@pytest.mark.parametrize("precision", list(molecules_cuda.PRECISIONS))
@pytest.mark.parametrize("periodic, two", [(True, False), (False, False), (True, True)])
def test_gpu_traversals_agree_with_the_reference(name, precision, periodic, two):
    mols, model = _all_kinds(periodic=periodic, two=two)
    ok, why = molecules_cuda.applicable(name, mols, model)
    assert ok, why  # 3 cells a side: c08 applies too
    want = ref.compute(mols, model)
    got = molecules_cuda.evaluate(name, mols, model, precision)
    tol = molecule_check.tolerance(precision, mols, model)
    for k in ("forces", "torques", "virial"):
        err = float(np.abs(got[k] - want[k]).max() / np.abs(want[k]).max())
        assert err <= tol, (k, err, tol)
    assert abs(got["energy"] - want["energy"]) <= tol * abs(want["energy"])
    assert got["pairs"] == want["pairs"]


UNROLLED_CASES = ([(name, "fp32", (1, 3), True) for name in molecules_cuda.TRAVERSALS]
                  + [(name, "fp64", (2, 2), False) for name in molecules_cuda.TRAVERSALS]
                  + [(name, "mixed", (0, 2), True) for name in molecules_cuda.LISTS])


@pytest.mark.gpu
@pytest.mark.parametrize("name, precision, shape, periodic", UNROLLED_CASES)
def test_the_unrolled_pair_body_on_the_gpu_agrees_with_the_reference(name, precision, shape, periodic):
    """The unrolled body on the device (the default where the model has its shape) and the general loops
    (unrolled=False) in one process: each within verify's bound of the float64 reference, the same pairs.
    Every traversal in fp32 (SPC/E's shape, periodic) and fp64 (two centres and two charges, open), the
    lists in mixed too (charges alone): each specialisation compiles on first use."""
    mols, model = _shaped(*shape, periodic=periodic)
    ok, why = molecules_cuda.applicable(name, mols, model)
    assert ok, why
    want = ref.compute(mols, model)
    tol = molecule_check.tolerance(precision, mols, model)
    for unrolled in (None, False):
        plan = molecules_cuda.MoleculePlan(name, mols, model, precision, unrolled=unrolled)
        assert plan.shape == (molecules_cuda.GENERAL if unrolled is False else shape)
        plan.upload(mols.centres, mols.quaternions)
        plan.run()
        got = plan.result()
        for k in ("forces", "torques", "virial"):
            err = float(np.abs(got[k] - want[k]).max() / np.abs(want[k]).max())
            assert err <= tol, (unrolled, k, err, tol)
        assert abs(got["energy"] - want["energy"]) <= tol * abs(want["energy"])
        assert got["pairs"] == want["pairs"]


@pytest.mark.gpu
def test_bench_says_which_pair_body_ran_and_refuses_unrolled_where_it_does_not_apply(tmp_path):
    from harness import molecule_bench
    from harness import molecule_scenarios as S

    cases = [{"case": name, "mols": m, "model": mod} for name in ("spce_water", "stockmayer")
             for m, mod in [S.make(name, "tiny", seed=1)]]
    timing = {"warmup": 0, "repeat": 2, "min_time": 0.0}
    names = ["verlet_warp_padded", "fullshell_warp_csr"]
    rows = {(r["strategy"], r["scenario"], u): r for u in (0, 1)
            for r in molecule_bench.run(names, ["fp32"], cases, {**timing, "launch": {"unrolled": bool(u)}})}
    assert rows[("verlet_warp_padded", "spce_water", 1)]["body"] == "unrolled 1+3"
    assert rows[("verlet_warp_padded", "spce_water", 0)]["body"] == "general"
    assert rows[("verlet_warp_padded", "spce_water", 1)]["status"] == "ok"
    assert rows[("verlet_warp_padded", "stockmayer", 0)]["body"] == "general"
    assert rows[("verlet_warp_padded", "stockmayer", 1)]["status"] == "n/a"
    assert "one component of Lennard-Jones centres and charges" in rows[("verlet_warp_padded", "stockmayer", 1)]["detail"]
    assert rows[("fullshell_warp_csr", "spce_water", 0)]["body"] == "general"
    assert rows[("fullshell_warp_csr", "spce_water", 1)]["body"] == "unrolled 1+3"
    default = molecule_bench.run(["verlet_thread_padded", "fullshell_thread_csr"], ["fp32"], cases[:1], timing)
    assert [r["body"] for r in default] == ["unrolled 1+3"] * 2


@pytest.mark.gpu
@pytest.mark.parametrize("name", molecules_cuda.TRAVERSALS)
def test_gpu_traversals_give_the_same_bits_run_after_run(name):
    from harness import molecule_scenarios as S

    mols, model = S.make("spce_water", "small", seed=3)
    plan = molecules_cuda.MoleculePlan(name, mols, model, "fp32")
    plan.upload(mols.centres, mols.quaternions)
    plan.run()
    a = plan.result()
    for _ in range(3):
        plan.run()
        b = plan.result()
        assert np.array_equal(a["forces"], b["forces"]) and np.array_equal(a["torques"], b["torques"])
        assert a["energy"] == b["energy"] and np.array_equal(a["virial"], b["virial"])


@pytest.mark.gpu
def test_the_site_kernel_turns_the_sites_as_the_host_does():
    from mdcore.molecules import rotation

    mols, model = _all_kinds(two=True)
    plan = molecules_cuda.MoleculePlan("allpairs_thread_naive", mols, model, "fp64")
    plan.upload(mols.centres, mols.quaternions)
    plan.run()
    A, E = plan.d_A.get(), plan.d_E.get()
    owner, bodyA, bodyE, _ = molecules_cuda.body_sites(mols, model, np.float64)
    R = rotation(mols.quaternions)
    np.testing.assert_allclose(A[:, :3], np.einsum("sij,sj->si", R[owner], bodyA[:, :3]), atol=1e-14)
    lj = bodyE[:, 3] == molecules_cuda.KIND["lj"]
    np.testing.assert_array_equal(E[lj], bodyE[lj])
    np.testing.assert_allclose(E[~lj, :3], np.einsum("sij,sj->si", R[owner[~lj]], bodyE[~lj, :3]), atol=1e-14)


@pytest.mark.gpu
@pytest.mark.parametrize("name", molecules_cuda.LISTS)
def test_gpu_lists_are_kept_within_their_skin_along_a_walk(name):
    """verify's replay on the GPU's Verlet traversals: every frame of a random walk as the reference has
    it, the list built again as the centres leave half the skin, and not at every frame."""
    from harness import molecule_scenarios as S

    mols, model = S.make("stockmayer", "tiny", seed=2)
    rows = molecule_check.replay(name, "fp64", {"case": "stockmayer", "mols": mols, "model": model}, 16)
    assert all(r["status"] == "pass" for r in rows), rows
    builds = int(rows[0]["detail"].split()[0])
    assert 2 <= builds < 16


def _host_body(real: str, mols, model, pairs, tmp):
    """The GPU's molecule-pair body compiled for the host (tests/data/molecule_body_host.cu) on `pairs`
    ((i, j, d) rows): per pair the force and torque on i, the energy, and the torque on j."""
    import subprocess
    from pathlib import Path

    here = Path(__file__).resolve().parent
    exe = tmp / f"body_{real}"
    cmd = [nvcc.nvcc(), "-std=c++17", f"-DREAL={real}", f"-I{nvcc.KERNEL_DIR}", "-o", str(exe),
           str(here / "data" / "molecule_body_host.cu")]
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    dt = np.float32 if real == "float" else np.float64
    owner, bodyA, bodyE, first = molecules_cuda.body_sites(mols, model, dt)
    C = len(model.components)
    with open(tmp / "in.bin", "wb") as f:
        np.array([len(owner), len(mols.centres), len(pairs), C], np.int32).tofile(f)
        molecules_cuda.params(model, dt).tofile(f)
        first.astype(np.int32).tofile(f)
        np.asarray(mols.components, np.int32).tofile(f)
        owner.astype(np.int32).tofile(f)
        bodyA.tofile(f)
        bodyE.tofile(f)
        np.asarray(mols.quaternions, dt).tofile(f)
        for i, j, d in pairs:
            np.array([i, j], np.int32).tofile(f)
            np.asarray(d, dt).tofile(f)
    run = subprocess.run([str(exe), str(tmp / "in.bin"), str(tmp / "out.bin")], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    return np.fromfile(tmp / "out.bin", dt).reshape(len(pairs), 10).astype(np.float64)


@needs_nvcc
def test_the_gpu_body_compiled_for_the_host_equals_the_cpu_body(tmp_path):
    """molecules.cuh's molecule_pair, rotate and torque_on_j, compiled for the host, on every pair of a
    system with every site kind, two components and the switch: in double the CPU traversals' body to
    rounding (the torque on j as the CPU body sums it over the sites), in float within float32's bound."""
    import dataclasses

    from strategies import molecules_cpu

    mols, model = _all_kinds(two=True)
    model = dataclasses.replace(model, switch=0.8 * model.cutoff)
    first, count, kind, a, e, sigma, eps, mom = molecules_cpu._sites(mols, model)
    comp = np.asarray(mols.components, np.int64)
    c = np.asarray(mols.centres)
    pairs, want = [], []
    for i in range(len(c)):
        for j in range(len(c)):
            d = c[i] - c[j]
            d -= mols.box.lengths * np.rint(d / mols.box.lengths)
            if i == j or d @ d >= model.cutoff ** 2:
                continue
            o = molecules_cpu._molecule_pair(i, j, *d, first, count, comp, kind, a, e, sigma, eps, mom, model.xi,
                                             model.eta, model.coulomb_constant, model.k_rf, model.c_rf,
                                             model.rf_dipoles)
            o = molecules_cpu._switch(c, *d, model.switch_start, model.cutoff, *o)
            pairs.append((i, j, d))
            want.append([*o[0:6], o[9], *o[6:9]])
    want = np.array(want)
    assert len(pairs) > 200
    scale = np.abs(want).max(axis=0)
    got = _host_body("double", mols, model, pairs, tmp_path)
    assert np.all(np.abs(got - want) <= 1e-11 * scale), np.abs(got - want).max(axis=0) / scale
    got32 = _host_body("float", mols, model, pairs, tmp_path)
    err = np.abs(got32 - want).max(axis=0) / scale
    assert np.all(err <= molecule_check.tolerance("fp32", mols, model)), err
    assert err.max() > 1e-9  # float arithmetic


MODES = {"allpairs_thread_naive": 0, "fullshell_thread_csr": 1, "fullshell_warp_csr": 2, "c08_thread_csr": 3,
         "verlet_thread_padded": 4, "verlet_warp_padded": 5, "c08_warp_csr": 6, "parity_thread_csr": 7,
         "parity_block_csr": 8, "parity_warpblock_twopass_atomic": 9, "parity_warpblock_shared_atomic": 10}


@pytest.fixture(scope="module")
def kernels_on_host(tmp_path_factory):
    """tests/data/molecule_kernels_host.cu compiled once (double)."""
    import subprocess
    from pathlib import Path

    if nvcc.nvcc() is None:
        pytest.skip("nvcc not found on PATH")
    exe = tmp_path_factory.mktemp("host") / "kernels"
    src = Path(__file__).resolve().parent / "data" / "molecule_kernels_host.cu"
    done = subprocess.run([nvcc.nvcc(), "-std=c++17", "-DREAL=double", f"-I{nvcc.KERNEL_DIR}", "-o", str(exe),
                           str(src)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    return exe


def _run_on_host(exe, name: str, mols, model, tmp, cap: int = 0, unrolled: bool = False):
    """name's threads run on the host: (forces, torques, energy, virial, pairs, longest row) as
    MoleculePlan.result() would give them (halved where every pair is visited twice); `unrolled`: through
    the pair body unrolled for the model's site shape."""
    import subprocess

    from strategies import schedules

    m = len(mols.centres)
    per = tuple(bool(p) for p in mols.box.periodic)
    c = molecules_cuda.centred(mols.centres, mols.box.lengths, per)
    reach = (1.0 + molecules_cuda.SKIN) * model.cutoff if name in molecules_cuda.LISTS else model.cutoff
    lo, side, dims = molecules_cuda.cell_grid(c, mols.box.lengths, per, reach)
    colours = schedules.c08_colours(np.asarray(dims), per) if name in molecules_cuda.C08 else []
    if name in molecules_cuda.PARITY:  # the layers' cell pairs, as (a, b, 0) items
        colours = [np.column_stack([p, np.zeros(len(p), np.int32)]) for p in molecules_cuda.launch_pairs(dims, per)]
    owner, bodyA, bodyE, first = molecules_cuda.body_sites(mols, model, np.float64)
    L = np.asarray(mols.box.lengths, np.float64)
    with open(tmp / "k.bin", "wb") as f:
        np.array([len(owner), m, len(model.components), MODES[name], *dims, *per, cap or m, len(colours)],
                 np.int32).tofile(f)
        molecules_cuda.params(model, np.float64).tofile(f)
        np.concatenate([L, np.where(per, 1.0 / L, 0.0), lo, side, [reach * reach]]).tofile(f)
        first.astype(np.int32).tofile(f)
        np.asarray(mols.components, np.int32).tofile(f)
        owner.astype(np.int32).tofile(f)
        bodyA.tofile(f)
        bodyE.tofile(f)
        np.asarray(mols.quaternions, np.float64).tofile(f)
        np.column_stack([c, np.zeros(m)]).tofile(f)
        for bases in colours:
            np.array([len(bases)], np.int32).tofile(f)
            np.ascontiguousarray(bases, np.int32).tofile(f)
    run = subprocess.run([str(exe), str(tmp / "k.bin"), str(tmp / "k.out"), *(["unrolled"] if unrolled else [])],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    out = np.fromfile(tmp / "k.out", np.float64)
    share = 1.0 if name in molecules_cuda.NEWTON3 else 0.5
    tail = out[6 * m:]
    dip = bodyE[:, 3] == molecules_cuda.KIND["dipole"]
    self_term = -0.5 * model.coulomb_constant * model.rf_dipoles * float(np.sum(bodyA[dip, 3] ** 2))
    return {"forces": out[:3 * m].reshape(m, 3), "torques": out[3 * m:6 * m].reshape(m, 3),
            "energy": share * tail[0] + self_term, "virial": share * tail[1:10].reshape(3, 3),
            "pairs": int(round(tail[10] * share)), "longest": int(tail[11])}


def _host_equals_reference(exe, name, mols, model, tmp):
    """name's threads run on the host give the float64 reference's forces, torques, virial, energy (1e-11)
    and pairs."""
    want = ref.compute(mols, model)
    got = _run_on_host(exe, name, mols, model, tmp)
    for k in ("forces", "torques", "virial"):
        err = float(np.abs(got[k] - want[k]).max() / np.abs(want[k]).max())
        assert err <= 1e-11, (k, err)
    assert abs(got["energy"] - want["energy"]) <= 1e-11 * want["energy_scale"]
    assert got["pairs"] == want["pairs"]


@needs_nvcc
@pytest.mark.parametrize("name", molecules_cuda.TRAVERSALS)
@pytest.mark.parametrize("periodic, two, switch", [(True, False, False), (False, False, True), (True, True, True)])
def test_every_gpu_traversal_run_thread_by_thread_on_the_host_equals_the_reference(kernels_on_host, tmp_path, name,
                                                                                  periodic, two, switch):
    """The GPU traversals' per-thread code (cells, neighbour shells, c08 bases with the torque on j, the
    Verlet rows, the warp lanes' shares) compiled for the host and run thread after thread: forces,
    torques, energy, virial and pairs as the float64 reference has them (1e-11)."""
    import dataclasses

    mols, model = _all_kinds(periodic=periodic, two=two)
    if switch:
        model = dataclasses.replace(model, switch=0.8 * model.cutoff)
    _host_equals_reference(kernels_on_host, name, mols, model, tmp_path)


@needs_nvcc
def test_a_verlet_row_that_overflows_is_counted_and_the_wider_list_is_right(kernels_on_host, tmp_path):
    mols, model = _all_kinds()
    narrow = _run_on_host(kernels_on_host, "verlet_thread_padded", mols, model, tmp_path, cap=4)
    assert narrow["longest"] > 4  # counted beyond the row: the host widens it
    wide = _run_on_host(kernels_on_host, "verlet_thread_padded", mols, model, tmp_path, cap=narrow["longest"])
    want = ref.compute(mols, model)
    assert wide["pairs"] == want["pairs"]
    assert float(np.abs(wide["forces"] - want["forces"]).max() / np.abs(want["forces"]).max()) <= 1e-11


def _shaped(nl: int, nq: int, m: int = 64, L: float = 9.0, periodic: bool = True, seed: int = 7):
    """A uniform system of molecules of nl Lennard-Jones centres and nq charges, off the centre and
    tilted, neutral where nq is even."""
    from tests.test_molecules import _quat, _site

    rng = np.random.default_rng(seed)
    sites = [_site("lj", rng.normal(scale=0.2, size=3), sigma=1.0 + 0.1 * k, epsilon=1.0 - 0.2 * k) for k in range(nl)]
    sites += [_site("charge", rng.normal(scale=0.2, size=3), charge=(0.5 + 0.1 * k) * (-1) ** k) for k in range(nq)]
    model = M.parse({"components": {"W": {"mass": 1.0, "inertia": [1, 1, 1], "sites": sites}}, "cutoff": 3.0,
                     "electrostatics": {"method": "reaction-field", "epsilon_rf": 40.0}})
    side = int(np.ceil(m ** (1 / 3)))
    grid = np.array([(i, j, k) for i in range(side) for j in range(side) for k in range(side)][:m], np.float64)
    centres = (grid + 0.5) * (L / side) + rng.normal(scale=0.1, size=(m, 3))
    return M.Molecules(centres, _quat(rng, m), np.zeros(m, np.int32), Box.make([L] * 3, periodic)), model


@needs_nvcc
@pytest.mark.parametrize("name", molecules_cuda.TRAVERSALS)
@pytest.mark.parametrize("shape, periodic, switch", [((1, 3), True, False), ((1, 3), False, True),
                                                     ((1, 1), True, True), ((2, 0), False, False),
                                                     ((0, 2), True, False), ((2, 2), True, True)])
def test_the_unrolled_pair_body_gives_the_general_loops_bits(kernels_on_host, tmp_path, name, shape, periodic,
                                                             switch):
    """Every traversal's threads through the unrolled pair body (molecules_cuda.site_shape: molecule i's
    sites in registers, the loops of a uniform system of Lennard-Jones centres and charges unrolled), run
    on the host: the same bits as through the general loops, and the float64 reference's values (1e-11)."""
    import dataclasses

    mols, model = _shaped(*shape, periodic=periodic, m=64 if periodic else 60)
    if switch:
        model = dataclasses.replace(model, switch=0.8 * model.cutoff)
    assert molecules_cuda.site_shape(model) == shape
    general = _run_on_host(kernels_on_host, name, mols, model, tmp_path)
    unrolled = _run_on_host(kernels_on_host, name, mols, model, tmp_path, unrolled=True)
    for k in ("forces", "torques", "virial"):
        assert np.array_equal(unrolled[k], general[k]), k
    assert unrolled["energy"] == general["energy"] and unrolled["pairs"] == general["pairs"] > 0
    _host_equals_reference(kernels_on_host, name, mols, model, tmp_path)


def test_the_unrolled_body_takes_one_component_of_lennard_jones_centres_and_charges():
    from harness import molecule_scenarios as S

    assert molecules_cuda.site_shape(S.make("spce_water", "tiny", seed=1)[1]) == (1, 3)
    for name in ("stockmayer", "two_centre_lj_quadrupole"):  # a dipole, a quadrupole: the general loops
        assert molecules_cuda.site_shape(S.make(name, "tiny", seed=1)[1]) == molecules_cuda.GENERAL
    assert molecules_cuda.site_shape(_shaped(2, 2)[1]) == (2, 2)
    assert molecules_cuda.site_shape(_shaped(3, 4)[1]) == molecules_cuda.GENERAL  # beyond SHAPED_SITES
    assert molecules_cuda.site_shape(_all_kinds(two=True)[1]) == molecules_cuda.GENERAL
    for name in S.SCENARIOS:  # every shipped model's body is among those expressions() compiles
        assert molecules_cuda.site_shape(S.make(name, "tiny", seed=1)[1]) in (molecules_cuda.GENERAL,
                                                                             *molecules_cuda.SHIPPED_SHAPES), name


@needs_nvcc
@pytest.mark.parametrize("scenario", ["spce_water", "two_centre_lj_quadrupole"])
def test_the_device_integrator_compiled_for_the_host_is_mdcore_s(tmp_path, scenario):
    """kernels/rigid.cuh (the NO_SQUISH step a GPU traversal's MD runs on the device) compiled for the
    host: one step with given forces and torques equals mdcore.rigid's (to 1e-12), a linear molecule
    (nitrogen) included, the centres wrapped into the box."""
    import subprocess
    from pathlib import Path

    from harness import molecule_scenarios as S
    from harness import rigid_md

    mols, model = S.make(scenario, "tiny", seed=3)
    state = rigid_md.start(mols, model, 2.0 if scenario == "spce_water" else 0.7, seed=2)
    m = len(state.mass)
    rng = np.random.default_rng(1)
    f, tq = rng.normal(size=(m, 3)) * 50.0, rng.normal(size=(m, 3)) * 20.0
    state.r[0] = [1e-9, 0.0, state.box[2] - 1e-9]  # at the box's faces: the wrap is exercised
    dt = 0.01
    exe = tmp_path / "rigid"
    src = Path(__file__).resolve().parent / "data" / "rigid_host.cu"
    done = subprocess.run([nvcc.nvcc(), "-std=c++17", f"-I{nvcc.KERNEL_DIR}", "-o", str(exe), str(src)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    with open(tmp_path / "in.bin", "wb") as fh:
        np.array([m, *np.asarray(state.periodic, int)], np.int32).tofile(fh)
        np.array([*state.box, dt]).tofile(fh)
        np.column_stack([state.r, state.p, state.q, state.pi, state.mass, state.inertia, f, tq]).tofile(fh)
    run = subprocess.run([str(exe), str(tmp_path / "in.bin"), str(tmp_path / "out.bin")], capture_output=True)
    assert run.returncode == 0
    got = np.fromfile(tmp_path / "out.bin", np.float64).reshape(m, 14)
    state.kick(f, tq, 0.5 * dt)
    state.drift(dt)
    state.kick(f, tq, 0.5 * dt)
    want = np.column_stack([state.r, state.p, state.q, state.pi])
    err = np.abs(got - want) / np.maximum(np.abs(want).max(axis=0), 1e-300)
    assert err.max() <= 1e-12, (err.max(axis=0), np.unravel_index(err.argmax(), err.shape))
    assert np.all((got[:, :3] >= 0.0) & (got[:, :3] < state.box))


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["fullshell_thread_csr", "verlet_warp_padded"])
def test_the_md_step_on_the_device_follows_the_host_s(name):
    """md with a GPU traversal keeps the whole step on the device (DeviceRigid); in fp64 its energies
    along 45 steps are the host integrator's with the CPU traversal's forces (1e-9 of the energy scale),
    the list built again on the way; the last step is a sample on both."""
    from harness import molecule_scenarios as S
    from harness import rigid_md

    mols, model = S.make("spce_water", "small", seed=4)
    dev = rigid_md.run(mols, model, name, 0.01, 45, 2.494, 10, 2, precision="fp64")
    host = rigid_md.run(mols, model, "fullshell_thread_cpu", 0.01, 45, 2.494, 10, 2, precision="fp64")
    assert dev["summary"].get("on_device") and len(dev["samples"]) == len(host["samples"]) == 6
    assert dev["summary"]["graph"] == "on"  # the forces-only steps between samples replayed as CUDA graphs
    assert [s["step"] for s in dev["samples"]] == [0, 10, 20, 30, 40, 45]
    scale = max(abs(s["potential"]) for s in host["samples"])
    for a, b in zip(dev["samples"], host["samples"]):
        assert abs(a["total"] - b["total"]) <= 1e-9 * scale, (a, b)


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["fullshell_thread_csr", "c08_warp_csr", "parity_block_csr", "verlet_warp_padded"])
@pytest.mark.parametrize("periodic, two", [(True, False), (False, False), (True, True)])
def test_the_device_counting_sort_gives_the_stable_argsort_s_cells(name, periodic, two):
    """The centres' cells by the device counting sort (the default) and by CuPy's stable argsort
    (counting=False): the same order and cell starts, twice in a row (the counts and the scan's tiles are
    left clean for the next build), and the same forces."""
    mols, model = _all_kinds(periodic=periodic, two=two)
    plans = [molecules_cuda.MoleculePlan(name, mols, model, "fp64", counting=c) for c in (True, False)]
    got = []
    for plan in plans:
        plan.upload(mols.centres, mols.quaternions)
        for _ in range(2):
            plan._cells()
            got.append((plan.d_order.get(), plan.d_start.get(), plan.d_cell.get()))
        plan.run()
    for a in got[1:]:
        for x, y in zip(a, got[0]):
            assert np.array_equal(x, y)
    a, b = (p.result() for p in plans)
    assert np.array_equal(a["forces"], b["forces"]) and np.array_equal(a["torques"], b["torques"])


@pytest.mark.gpu
@pytest.mark.parametrize("periodic, two", [(True, False), (False, False), (True, True)])
def test_the_warp_list_build_writes_the_thread_build_s_rows(periodic, two):
    """The Verlet list built by a warp per molecule (the default) and by a thread per molecule: the same
    counts and the same rows entry by entry, also where a row overflows a narrow cap (held at it, the longest
    recorded)."""
    mols, model = _all_kinds(periodic=periodic, two=two)
    rows = []
    for warp in (True, False):
        plan = molecules_cuda.MoleculePlan("verlet_thread_padded", mols, model, "fp64", warp_build=warp)
        plan.upload(mols.centres, mols.quaternions)
        plan.run()
        counts = plan.d_counts.get()
        lists = plan.d_list.get().reshape(plan.m, plan.cap)
        assert counts.max() <= plan.cap
        assert int(plan.d_longest.get()[0]) == 0
        narrow = plan.d_counts.copy()
        plan.cap = 4
        plan.fn_build((max(1, -(-plan.m * (32 if warp else 1) // 256)),), (256,),
                      (np.int32(plan.m), plan.d_c, plan.box, plan.d_cell, plan.d_start, plan.d_order, *plan._cells(),
                       plan.real(plan.reach ** 2), np.int32(4), plan.d_list, narrow, plan.d_longest, np.uint64(0)))
        short = plan.d_list.get()[:plan.m * 4].reshape(plan.m, 4)
        assert int(plan.d_longest.get()[0]) == int(counts.max()) > 4  # the longest row recorded
        rows.append((counts, [lists[i, :counts[i]] for i in range(plan.m)], narrow.get(), short))
    (c1, l1, n1, s1), (c2, l2, n2, s2) = rows
    assert np.array_equal(c1, c2) and np.array_equal(n1, n2) and np.array_equal(n1, np.minimum(c1, 4))
    assert all(np.array_equal(a, b) for a, b in zip(l1, l2))
    assert np.array_equal(np.where(np.arange(4) < n1[:, None], s1, 0), np.where(np.arange(4) < n2[:, None], s2, 0))


@pytest.mark.gpu
def test_fused_kicks_give_the_unfused_steps():
    """DeviceRigid with a step's closing half kick fused into the next step's opening one (the default) and
    without: in fp64 the same state after 30 steps with list builds on the way (1e-10), the same builds."""
    from harness import molecule_scenarios as S
    from harness import rigid_md

    mols, model = S.make("spce_water", "small", seed=4)
    out = []
    for fused in (True, False):
        state = rigid_md.start(mols, model, 2.494, 2)
        plan = molecules_cuda.MoleculePlan("verlet_warp_padded", mols, model, "fp64")
        dev = rigid_cuda.DeviceRigid(plan, state, fused=fused)
        for _ in range(30):
            dev.step(0.02)
        dev.download(state)
        out.append((state, plan.rebuilds))
    (a, builds_a), (b, builds_b) = out
    assert builds_a == builds_b > 1
    for k in ("r", "p", "q", "pi"):
        x, y = getattr(a, k), getattr(b, k)
        assert float(np.abs(x - y).max()) <= 1e-10 * float(np.abs(y).max()), k


@pytest.mark.gpu
@pytest.mark.parametrize("precision", ["fp32", "fp64"])
@pytest.mark.parametrize("name", ["verlet_thread_padded", "verlet_warp_padded"])
def test_builds_decided_on_the_device_and_graphs_give_the_host_s_steps_bitwise(name, precision):
    """The list's build behind the drift's device flag (upkeep='device', the default) step by step, the same
    as replayed CUDA graphs of steps (steps()), and the host reading the flag each step (upkeep='host'): the
    same kernels in the same order, so the same bits after 60 steps with builds on the way, and the same
    builds."""
    from harness import molecule_scenarios as S
    from harness import rigid_md

    mols, model = S.make("spce_water", "small", seed=4)
    out = []
    for upkeep, graphs in (("host", False), ("device", False), ("device", True)):
        state = rigid_md.start(mols, model, 2.494, 2)
        plan = molecules_cuda.MoleculePlan(name, mols, model, precision)
        dev = rigid_cuda.DeviceRigid(plan, state, upkeep=upkeep)
        assert dev.device_upkeep is (upkeep == "device")
        if graphs:
            dev.capture(0.02)  # recorded before any step (nothing waiting yet), replayed after the first
            dev.steps(0.02, 60)
            assert dev.graph == "on"
        else:
            for _ in range(60):
                dev.step(0.02)
        dev.download(state)
        out.append((state, plan.rebuilds))
    assert out[0][1] == out[1][1] == out[2][1] > 1
    for state, _ in out[1:]:
        for k in ("r", "p", "q", "pi"):
            assert np.array_equal(getattr(state, k), getattr(out[0][0], k)), k


@pytest.mark.gpu
def test_a_row_outgrowing_the_list_at_a_device_build_is_reported():
    """A build the device decided with rows longer than the list's capacity (made narrow here): download()
    raises StrategyError naming the capacity, never a silently shorter list."""
    from harness import molecule_scenarios as S
    from harness import rigid_md
    from mdcore import StrategyError

    mols, model = S.make("spce_water", "small", seed=4)
    state = rigid_md.start(mols, model, 2.494, 2)
    plan = molecules_cuda.MoleculePlan("verlet_warp_padded", mols, model, "fp32")
    dev = rigid_cuda.DeviceRigid(plan, state)
    dev.step(0.01)
    dev.download(state)  # built once, nothing outgrown
    plan.cap = 4
    dev.at += plan.cp.asarray(0.37 * np.asarray(plan.lengths), dev.S)  # every centre far from its build place
    dev.steps(0.01, 3)
    with pytest.raises(StrategyError, match="capacity 4"):
        dev.download(state)


@needs_nvcc
@pytest.mark.parametrize("name", molecules_cuda.PARITY)
def test_parity_processors_with_cells_beyond_one_warp_block(kernels_on_host, tmp_path, name):
    """Water with a 12 A cutoff in a box of 3 x 3 x 3 cells: about 60 molecules a cell, so the thread-block
    processor cuts each cell into two blocks of 32 (block pairs across and within a cell, the diagonal's half
    steps) and the layers pair cells across the periodic faces; as the reference has it (1e-11)."""
    import dataclasses

    from harness import molecule_scenarios as S

    mols, model = S.make("spce_water", 1600, seed=4)
    model = dataclasses.replace(model, cutoff=12.0)
    c = molecules_cuda.centred(mols.centres, mols.box.lengths, mols.box.periodic)
    dims = molecules_cuda.cell_grid(c, mols.box.lengths, mols.box.periodic, model.cutoff)[2]
    assert list(dims) == [3, 3, 3] and len(mols.centres) / 27 > 32
    _host_equals_reference(kernels_on_host, name, mols, model, tmp_path)


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["fullshell_warp_csr", "parity_block_csr", "verlet_warp_padded"])
def test_one_component_sites_counted_from_the_index_equal_the_spans_bitwise(name):
    """With one component the kernels count a molecule's sites from its index and read a Lennard-Jones
    centre's parameters from molecule 0 (no spans passed); with spans=True they read them per molecule. The
    same site pairs in the same order: the same bits."""
    from harness import molecule_scenarios as S

    mols, model = S.make("spce_water", "small", seed=3)
    out = []
    for spans in (False, True):
        plan = molecules_cuda.MoleculePlan(name, mols, model, "fp32", spans=spans)
        assert plan.uniform is not spans
        plan.upload(mols.centres, mols.quaternions)
        plan.run()
        out.append(plan.result())
    np.testing.assert_array_equal(out[0]["forces"], out[1]["forces"])
    np.testing.assert_array_equal(out[0]["torques"], out[1]["torques"])
    assert out[0]["energy"] == out[1]["energy"]


@pytest.mark.parametrize("uniform", [False, True])
def test_the_host_passes_every_argument_molecule_args_names_in_its_order(uniform):
    import types
    from pathlib import Path

    src = (Path(molecules_cuda.__file__).parent / "kernels" / "molecules.cu").read_text()
    macro = re.search(r"#define MOLECULE_ARGS(.*?)\n\n", src, re.S).group(1).replace("\\", " ")
    names = [p.split()[-1].lstrip("*") for p in macro.split(",")]
    plan = types.SimpleNamespace(uniform=uniform, **{f"d_{n}": f"d_{n}" for n in names})
    got = molecules_cuda.model_args(plan)
    assert len(got) == len(names)
    for n, arg in zip(names, got):
        if n == "span" and uniform:
            assert arg == 0 and arg.dtype == np.uint64  # a null pointer, 8 bytes as the kernel reads it
        else:
            assert arg == f"d_{n}"

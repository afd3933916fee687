"""The GPU molecule traversals (strategies/molecules_cuda.py, kernels/molecules.cu): every specialisation
compiles and fp32 computes in float32 (nvcc, no GPU needed); on a GPU, every traversal in every
precision agrees with the float64 reference within verify's bound on every site kind, two components,
open and periodic boxes, the same bits run after run, and the site kernel turns the sites as the host
does."""
import re

import numpy as np
import pytest

from harness import molecule_check
from reference import molecules as ref
from strategies import molecules_cuda, nvcc

from tests.test_molecules_cpu import _all_kinds

needs_nvcc = pytest.mark.skipif(nvcc.nvcc() is None, reason="nvcc not found on PATH")


@needs_nvcc
def test_every_molecule_kernel_compiles_and_fp32_has_no_float64():
    exprs = sorted({e for name in molecule_cuda_names() for p in molecules_cuda.PRECISIONS
                    for e in molecules_cuda.expressions(name, p)})
    code, out, ptx = nvcc.compile_unit("molecules.cu", exprs, keep_ptx=True)
    assert code == 0, out
    assert len(nvcc.resources(out)) == len(exprs)
    kernels = nvcc.entries(ptx)
    fp32 = [e for e in exprs if re.search(r"<float(>|, float[,>])", e)]
    assert fp32
    for e in fp32:
        assert e in kernels, e
        assert not nvcc.f64_instructions(kernels[e]), (e, nvcc.f64_instructions(kernels[e])[:3])


def test_c08_needs_three_cells_along_each_periodic_axis():
    from harness import molecule_scenarios as S

    mols, model = S.make("spce_water", "tiny", seed=1)  # 18.6 A with a 9 A cutoff: 2 cells a side
    ok, why = molecules_cuda.applicable("c08_thread_csr", mols, model)
    assert not ok and "c08" in why and "2x2x2" in why


def molecule_cuda_names():
    return molecules_cuda.TRAVERSALS


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

"""Conditional graph nodes for a list's upkeep (strategies/graphs.py): the ctypes structures and
constants against CUDA's headers, the gate kernel, the self-test, and on the GPU that replayed
steps with the upkeep in conditional nodes give the guarded launches' bits and rebuilds."""
import ctypes
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

import strategies
from harness import md, scenarios
from strategies import graphs, nvcc


def _problem(precision="fp32", n=4000):
    from dataclasses import replace

    p = scenarios.make("lj_liquid", n, seed=2, precision=precision)
    return replace(p, potential=replace(p.potential, shift=True))


# --- CPU (CI) -------------------------------------------------------------------------------

def test_node_params_have_the_runtimes_size():
    """cudaGraphNodeParams is 256 bytes (type, 3 reserved ints, a 29-long-long union, one long
    long); the conditional parameters open the union."""
    assert ctypes.sizeof(graphs.NodeParams) == 256
    assert graphs.NodeParams.u.offset == 16
    assert [graphs.ConditionalParams.handle.offset, graphs.ConditionalParams.type.offset,
            graphs.ConditionalParams.size.offset, graphs.ConditionalParams.phGraph_out.offset] == [0, 8, 12, 16]


@pytest.mark.skipif(nvcc.nvcc() is None, reason="nvcc not found on PATH")
def test_structures_and_constants_match_the_cuda_headers():
    """Every size, offset and enum value graphs.py passes through ctypes, checked with static_asserts
    against the toolkit's own headers (compiled without a GPU)."""
    c = graphs
    checks = [
        f"static_assert(sizeof(cudaGraphNodeParams) == {ctypes.sizeof(c.NodeParams)}, \"size\");",
        f"static_assert(offsetof(cudaGraphNodeParams, conditional) == {c.NodeParams.u.offset}, \"union\");",
        f"static_assert(sizeof(cudaConditionalNodeParams) == {ctypes.sizeof(c.ConditionalParams)}, \"cond\");",
        f"static_assert(offsetof(cudaConditionalNodeParams, phGraph_out) == {c.ConditionalParams.phGraph_out.offset}, "
        "\"out\");",
        f"static_assert(offsetof(cudaConditionalNodeParams, size) == {c.ConditionalParams.size.offset}, \"n\");",
        f"static_assert(cudaStreamCaptureStatusActive == {c._CAPTURE_ACTIVE}, \"active\");",
        f"static_assert(cudaStreamCaptureModeRelaxed == {c._CAPTURE_RELAXED}, \"relaxed\");",
        f"static_assert(cudaStreamSetCaptureDependencies == {c._SET_DEPENDENCIES}, \"set\");",
        f"static_assert(cudaGraphNodeTypeConditional == {c._NODE_CONDITIONAL}, \"node\");",
        f"static_assert(cudaGraphNodeTypeGraph == {c._NODE_GRAPH}, \"child\");",
        f"static_assert(sizeof(cudaChildGraphNodeParams) == {ctypes.sizeof(c.ChildGraphParams)}, \"childsize\");",
        f"static_assert(offsetof(cudaChildGraphNodeParams, ownership) == {c.ChildGraphParams.ownership.offset}, "
        "\"own\");",
        f"static_assert(offsetof(cudaGraphNodeParams, graph) == {c.NodeParams.u.offset}, \"graphunion\");",
        f"static_assert(cudaGraphCondTypeIf == {c._COND_IF}, \"if\");",
        "static_assert(sizeof(cudaGraphConditionalHandle) == sizeof(unsigned long long), \"handle\");",
    ]
    # each ctypes signature against the header's declaration: the same parameter count
    for name, args in c._SIGNATURES.items():
        checks.append(f"template <typename R, typename... A> constexpr int arity_{name}(R (*)(A...)) "
                      "{ return sizeof...(A); }")
        checks.append(f"static_assert(arity_{name}(&{name}) == {len(args)}, \"{name}\");")
    unit = "#include <cstddef>\n#include <cuda_runtime_api.h>\n" + "\n".join(checks) + "\n"
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "u.cu"
        src.write_text(unit)
        r = subprocess.run([nvcc.nvcc(), "-std=c++17", "-c", "-o", str(Path(tmp) / "u.o"), str(src)],
                           capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]


@pytest.mark.skipif(nvcc.nvcc() is None, reason="nvcc not found on PATH")
def test_the_gate_compiles_without_relocatable_code():
    """graph_gate calls cudaGraphSetConditional, which the driver resolves at load: the kernel
    compiles to a plain cubin (no -rdc, no cudadevrt), as CuPy builds it."""
    code, out, ptx = nvcc.compile_unit("graph.cu", ["graph_gate<int>", "graph_tick<int>"], ptx=True)
    assert code == 0, out[:2000]
    assert "cudaGraphSetConditional" in ptx


def test_the_switch_turns_the_nodes_off_without_a_gpu(monkeypatch):
    monkeypatch.setenv(graphs.ENV, "0")
    assert graphs.conditional_status() == (False, f"{graphs.ENV}=0")


# --- GPU --------------------------------------------------------------------------------------

@pytest.mark.gpu
def test_the_self_test_passes_on_this_gpu():
    ok, why = graphs.conditional_status()
    assert ok, why


@pytest.mark.gpu
def test_a_replay_runs_each_body_only_where_its_flag_is_set():
    """Three gated bodies in one captured graph, each adding to its own counter; replayed under
    every combination of flags (set on the device between replays), the counters count exactly
    the replays whose flag was set."""
    import cupy

    assert graphs.conditional_status()[0]
    flags = [cupy.zeros(1, np.int32) for _ in range(3)]
    counts = cupy.zeros(3, np.int32)
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        for k in range(3):  # compiled before the capture
            counts[k:k + 1] += 1
        counts.fill(0)
        stream.begin_capture()
        try:
            for k in range(3):
                with graphs.upkeep_if(flags[k], least=1):
                    counts[k:k + 1] += 1
        finally:
            g = stream.end_capture()
        want = np.zeros(3, np.int64)
        for mask in range(8):
            for k in range(3):
                flags[k].fill(int(bool(mask >> k & 1)))
                want[k] += mask >> k & 1
            g.launch(stream)
        stream.synchronize()
    assert counts.get().tolist() == want.tolist()


@pytest.mark.gpu
def test_what_follows_a_conditional_node_waits_for_its_body():
    """The step's next launch (here a memset that clears the flag, as the force kernel clears the
    trigger) must not start before the body has finished: a body of 2,048 guarded blocks, each
    reading the flag, counts every block on each of 40 replays."""
    import cupy

    from strategies.cuda import kernel

    assert graphs.conditional_status()[0]
    tick = kernel("graph.cu", "graph_tick<int>")
    flag, count = cupy.ones(1, np.int32), cupy.zeros(1, np.int32)
    stream = cupy.cuda.Stream(non_blocking=True)
    blocks = 2048
    with stream:
        tick((1,), (256,), (count, flag))
        count.fill(0)
        stream.begin_capture()
        try:
            with graphs.upkeep_if(flag, least=1):
                tick((blocks,), (256,), (count, flag))
                tick((blocks,), (256,), (count, flag))
            flag.fill(0)
        finally:
            g = stream.end_capture()
        for _ in range(40):
            flag.fill(1)
            g.launch(stream)
        stream.synchronize()
    assert int(count.get()[0]) == 40 * 2 * blocks
    assert int(flag.get()[0]) == 0


@pytest.mark.gpu
def test_an_error_in_the_body_ends_its_capture():
    """An exception raised inside the block propagates as it is, and the side stream stops
    capturing: the next capture with a conditional body records and replays as it should."""
    import cupy

    from strategies.cuda import kernel

    assert graphs.conditional_status()[0]
    tick = kernel("graph.cu", "graph_tick<int>")
    flag, count = cupy.ones(1, np.int32), cupy.zeros(1, np.int32)
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        stream.begin_capture()
        try:
            with pytest.raises(RuntimeError, match="planted"):
                with graphs.upkeep_if(flag, least=1):
                    tick((1,), (32,), (count, flag))
                    raise RuntimeError("planted")
        finally:
            try:
                stream.end_capture()
            except Exception:
                pass
        stream.synchronize()
        count.fill(0)
        stream.begin_capture()
        try:
            with graphs.upkeep_if(flag, least=1):
                tick((1,), (32,), (count, flag))
        finally:
            g = stream.end_capture()
        g.launch(stream)
        stream.synchronize()
    assert int(count.get()[0]) == 1


@pytest.mark.gpu
def test_a_body_of_fewer_nodes_than_least_runs_in_line():
    """A body below `least` nodes is put in line (a child graph, no gate): an unguarded kernel in it
    runs on every replay whatever the flag; at `least` it becomes conditional."""
    import cupy

    from strategies.cuda import kernel

    assert graphs.conditional_status()[0]
    tick = kernel("graph.cu", "graph_tick<int>")
    flag, counts = cupy.zeros(1, np.int32), cupy.zeros(2, np.int32)
    none = np.uint64(0)
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        tick((1,), (32,), (counts, none))
        counts.fill(0)
        before = dict(graphs.NODES)
        stream.begin_capture()
        try:
            with graphs.upkeep_if(flag, least=3):  # two nodes: in line
                tick((1,), (32,), (counts, none))
                tick((1,), (32,), (counts, none))
            with graphs.upkeep_if(flag, least=2):  # two nodes: conditional
                tick((1,), (32,), (counts[1:], none))
                tick((1,), (32,), (counts[1:], none))
        finally:
            g = stream.end_capture()
        assert graphs.NODES["inline"] == before["inline"] + 1
        assert graphs.NODES["conditional"] == before["conditional"] + 1
        for f in (0, 1, 0):
            flag.fill(f)
            g.launch(stream)
        stream.synchronize()
    assert counts.get().tolist() == [6, 2]


@pytest.mark.gpu
@pytest.mark.parametrize("name, fuse, launch, n, way", [
    ("verlet_thread_padded", "always", {}, 4000, "conditional nodes"),  # unsort, small binning, sort, rows
    ("verlet_thread_padded", False, {}, 4000, "guarded launches (fewer"),  # small binning and rows: two
    ("verlet_thread_padded", False, {}, 16000, "conditional nodes"),  # counting binning (4) and rows
    ("verlet_thread_padded", "always", {"layout": "packed"}, 30000, "conditional nodes"),
    ("clusterpair_warp_padded", True, {}, 16000, "")])
def test_conditional_upkeep_gives_the_guarded_bits(monkeypatch, name, fuse, launch, n, way):
    """The MD loop under graph replay with the upkeep in conditional nodes where it has enough
    launches: every sample and the rebuild count equal those of the guarded launches and of the
    loop without graphs (the lattice start melts: many rebuilds, each through a conditional body).
    Strategies without atomics (clusterpair_warp_newton3 sums its j-forces with float atomics: not
    bitwise repeatable); layout=packed on the dilute liquid, where its grid is as fine as a float
    (test_verlet_packed)."""
    from dataclasses import replace

    p = _problem("fp32", n)
    if launch.get("layout") == "packed":
        p = scenarios.make("lj_liquid:density=0.1", n, seed=2, precision="fp32")
        p = replace(p, potential=replace(p.potential, shift=True))
    runs = {}
    for how in ("conditional", "guarded", "eager"):
        monkeypatch.setenv(graphs.ENV, "0" if how == "guarded" else "1")
        s = strategies.create(name, **launch)
        r = md.run(s, p, steps=300, dt=0.005, sample=50, graph=how != "eager", fuse=fuse)
        runs[how] = r
    assert runs["conditional"].upkeep.startswith(way)
    assert runs["conditional"].upkeep.startswith(("conditional nodes", "guarded launches (fewer"))
    assert runs["guarded"].upkeep == f"guarded launches ({graphs.ENV}=0)"
    assert runs["conditional"].rebuilds >= 3
    for other in ("guarded", "eager"):
        assert [vars(s) for s in runs[other].samples] == [vars(s) for s in runs["conditional"].samples], other
        assert runs[other].rebuilds == runs["conditional"].rebuilds, other


@pytest.mark.gpu
def test_the_amortised_column_says_how_the_upkeep_was_recorded(monkeypatch):
    """bench's amortised replay (one graph of every frame's step) records the plain steps' upkeep in
    conditional nodes where it has enough launches, and the same rebuilds as the guarded launches."""
    from harness import bench

    p = _problem("fp32", 16000)
    frames = md.record(p, frames=40, equilibrate=20)
    got = {}
    for cond in ("1", "0"):
        monkeypatch.setenv(graphs.ENV, cond)
        got[cond] = bench.time_amortised(strategies.create("verlet_thread_padded"), p, frames, "forces")
    assert got["1"]["amortised_upkeep"] == "conditional nodes"
    assert got["0"]["amortised_upkeep"] == f"guarded launches ({graphs.ENV}=0)"
    assert got["1"]["rebuilds"] == got["0"]["rebuilds"] >= 1
    assert got["1"]["listed_pairs"] == got["0"]["listed_pairs"]

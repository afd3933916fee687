"""Conditional nodes in captured CUDA graphs: a list's per-step upkeep skipped on the device.

A list strategy's step checks the displacement on the device and runs its upkeep (binning, sort,
rows) behind that flag. Without a conditional node every upkeep kernel is launched on every step
and returns at once where the flag is clear: at LJ 1M about 15 us a step on an H100 for eight
launches that do nothing. Under stream capture, `upkeep_if(flag)` records instead

    graph_gate (one thread: cudaGraphSetConditional(handle, *flag != 0))
      -> IF node (handle) whose body graph holds the block's launches

so that a replay runs the upkeep's kernels only on the steps whose flag is set. The block is first
captured on a side stream into a graph of its own; the IF node's body takes it as a child graph.
The gate and a skipped IF node cost about 5.4 us in a replay and a guarded launch that returns at
once 1.5-1.8 us (H100, research/conditional_probe.py), so a body of fewer than MIN_NODES nodes goes in
line instead, as a child graph without a gate. Outside a capture, or where conditional nodes are
unavailable, the block's launches run as they are and their own guards skip them on the device:
the same results every way (the body's kernels keep their guards).

CuPy 14 exposes neither conditional handles nor the node; the runtime API is called through ctypes
(CUDA 13 signatures, _SIGNATURES) in the libcudart that CuPy loaded. Before the first use, a
self-test captures a gate and an IF node around a memset and replays it with the flag clear and
set (conditional_status()).

MDFORCE_CONDITIONAL=0 in the environment keeps the guarded launches (for before/after timing).
"""
from __future__ import annotations

import contextlib
import ctypes
import functools
import os

import numpy as np

ENV = "MDFORCE_CONDITIONAL"
# Bodies of fewer nodes stay in line (guarded): the gate and a skipped node cost about as much as
# three or four guarded launches that return at once (docs/decisions/md-fused-steps.md).
MIN_NODES = 4
MIN_RUNTIME = 13000  # the ctypes signatures below are CUDA 13's (12.x names them _v2 / _v3)

# driver_types.h (CUDA 13.0)
_CAPTURE_ACTIVE = 1             # cudaStreamCaptureStatusActive
_CAPTURE_RELAXED = 2            # cudaStreamCaptureModeRelaxed
_SET_DEPENDENCIES = 1           # cudaStreamSetCaptureDependencies
_NODE_GRAPH = 0x04              # cudaGraphNodeTypeGraph
_NODE_CONDITIONAL = 0x0D        # cudaGraphNodeTypeConditional
_COND_IF = 0                    # cudaGraphCondTypeIf


class ConditionalParams(ctypes.Structure):
    """struct cudaConditionalNodeParams."""
    _fields_ = [("handle", ctypes.c_ulonglong), ("type", ctypes.c_int), ("size", ctypes.c_uint),
                ("phGraph_out", ctypes.POINTER(ctypes.c_void_p))]


class ChildGraphParams(ctypes.Structure):
    """struct cudaChildGraphNodeParams."""
    _fields_ = [("graph", ctypes.c_void_p), ("ownership", ctypes.c_int)]


class _NodeUnion(ctypes.Union):
    _fields_ = [("reserved1", ctypes.c_longlong * 29), ("graph", ChildGraphParams),
                ("conditional", ConditionalParams)]


class NodeParams(ctypes.Structure):
    """struct cudaGraphNodeParams: type, 3 reserved ints, a 232-byte union, a reserved long long."""
    _anonymous_ = ("u",)
    _fields_ = [("type", ctypes.c_int), ("reserved0", ctypes.c_int * 3), ("u", _NodeUnion),
                ("reserved2", ctypes.c_longlong)]


class ConditionalError(RuntimeError):
    pass


_P, _SZ, _U, _I = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint, ctypes.c_int
_SIGNATURES = {
    "cudaRuntimeGetVersion": (ctypes.POINTER(_I),),
    "cudaGetErrorName": (_I,),
    "cudaStreamGetCaptureInfo": (_P, ctypes.POINTER(_I), ctypes.POINTER(ctypes.c_ulonglong), ctypes.POINTER(_P),
                                 ctypes.POINTER(_P), ctypes.POINTER(_P), ctypes.POINTER(_SZ)),
    "cudaGraphConditionalHandleCreate": (ctypes.POINTER(ctypes.c_ulonglong), _P, _U, _U),
    "cudaGraphAddNode": (ctypes.POINTER(_P), _P, _P, _P, _SZ, ctypes.POINTER(NodeParams)),
    "cudaStreamUpdateCaptureDependencies": (_P, _P, _P, _SZ, _U),
    "cudaStreamEndCapture": (_P, ctypes.POINTER(_P)),
    "cudaStreamBeginCapture": (_P, _I),
    "cudaGraphGetNodes": (_P, _P, ctypes.POINTER(_SZ)),
    "cudaGraphAddChildGraphNode": (ctypes.POINTER(_P), _P, _P, _SZ, _P),
    "cudaGraphDestroy": (_P,),
}


def _loaded_cudart() -> list[str]:
    """Paths of the libcudart this process has mapped (CuPy's), first seen first."""
    try:
        with open("/proc/self/maps") as f:
            paths = [line.split()[-1] for line in f if "libcudart.so" in line]
    except OSError:
        return []
    return list(dict.fromkeys(p for p in paths if p.startswith("/")))


@functools.cache
def _cudart():
    """(the runtime library with the signatures set, "") or (None, why not)."""
    lib = None
    for name in _loaded_cudart() + ["libcudart.so.13"]:
        try:
            lib = ctypes.CDLL(name)
            break
        except OSError:
            continue
    if lib is None:
        return None, "no libcudart.so.13 to call the graph API through"
    try:
        for fn, args in _SIGNATURES.items():
            f = getattr(lib, fn)
            f.argtypes, f.restype = args, (ctypes.c_char_p if fn == "cudaGetErrorName" else _I)
    except AttributeError as e:
        return None, f"the CUDA runtime lacks {e.args[0].split()[-1] if e.args else 'a graph call'}"
    version = _I(0)
    lib.cudaRuntimeGetVersion(ctypes.byref(version))
    if version.value < MIN_RUNTIME:
        return None, (f"CUDA runtime {version.value // 1000}.{version.value % 1000 // 10}: conditional nodes are "
                      "called here in CUDA 13's form")
    return lib, ""


def _call(lib, name: str, *args) -> None:
    err = getattr(lib, name)(*args)
    if err:
        what = lib.cudaGetErrorName(err)
        raise ConditionalError(f"{name}: {what.decode() if what else err}")


def _capture_graph(lib, stream_ptr: int):
    """The graph the stream captures into, or None where it does not capture."""
    if not stream_ptr:  # the legacy default stream: CuPy captures on streams of its own
        return None
    status, graph = _I(0), _P()
    _call(lib, "cudaStreamGetCaptureInfo", _P(stream_ptr), ctypes.byref(status), None, ctypes.byref(graph), None,
          None, None)
    return graph if status.value == _CAPTURE_ACTIVE else None


@functools.cache
def _gate():
    from .cuda import kernel

    return kernel("graph.cu", "graph_gate<int>")


@functools.cache
def _side_stream(device: int):
    import cupy

    return cupy.cuda.Stream(non_blocking=True)


# nodes upkeep_if recorded in this process: conditional ones, and bodies put in line (md says which)
NODES = {"conditional": 0, "inline": 0}


def recorded(since: dict) -> str:
    """How the captures since the NODES snapshot `since` recorded a list's upkeep: "conditional
    nodes", or "guarded launches (why)"."""
    if NODES["conditional"] > since["conditional"]:
        return "conditional nodes"
    if NODES["inline"] > since["inline"]:
        return f"guarded launches (fewer than {MIN_NODES}: cheaper than a conditional node)"
    why = conditional_status()[1]
    return f"guarded launches ({why})" if why else "guarded launches"


def _enabled() -> bool:
    return os.environ.get(ENV, "1").strip() not in ("0", "off", "no", "false")


@contextlib.contextmanager
def upkeep_if(flag, least: int | None = None):
    """The launches of the block run only where the device int32 `flag` (a CuPy array of one) is
    non-zero. Under capture (where conditional nodes work) the block is recorded into a graph of
    its own first; where it holds at least `least` nodes (default MIN_NODES), that graph becomes the body of a
    conditional node behind the gate, else a child graph in line (its kernels' own guards decide,
    cheaper for a few launches). Outside a capture the launches run as they are."""
    import cupy

    stream = cupy.cuda.get_current_stream()
    ok = _enabled() and _STATUS[0] is not None and _STATUS[0][0]  # no self-test here: the stream may capture
    lib = _cudart()[0] if ok else None
    graph = _capture_graph(lib, stream.ptr) if lib is not None else None
    if graph is None:
        yield
        return
    with _record_if(lib, stream, graph, flag, MIN_NODES if least is None else least):
        yield


def _add_captured(lib, stream, graph, params: NodeParams):
    """A node added to `graph` after the capturing stream's current dependencies, which it then
    replaces (the stream's next launch depends on it)."""
    deps, edges, count = _P(), _P(), _SZ(0)
    _call(lib, "cudaStreamGetCaptureInfo", _P(stream.ptr), ctypes.byref(_I(0)), None, None, ctypes.byref(deps),
          ctypes.byref(edges), ctypes.byref(count))
    node = _P()
    _call(lib, "cudaGraphAddNode", ctypes.byref(node), graph, deps, edges, count, ctypes.byref(params))
    _call(lib, "cudaStreamUpdateCaptureDependencies", _P(stream.ptr), ctypes.byref(node), None, 1, _SET_DEPENDENCIES)
    return node


@contextlib.contextmanager
def _record_if(lib, stream, graph, flag, least: int):
    """The block captured on a side stream (made the current one) into a graph of its own, then
    added on `stream` (capturing into `graph`): behind the gate as an IF node's body where it has
    at least `least` nodes, else in line as a child graph."""
    import cupy

    side = _side_stream(cupy.cuda.Device().id)
    _call(lib, "cudaStreamBeginCapture", _P(side.ptr), _CAPTURE_RELAXED)
    body = _P()
    try:
        with side:
            yield
    except BaseException:
        lib.cudaStreamEndCapture(_P(side.ptr), ctypes.byref(body))  # the block's own error is the one to report
        if body.value:
            lib.cudaGraphDestroy(body)
        raise
    _call(lib, "cudaStreamEndCapture", _P(side.ptr), ctypes.byref(body))
    try:
        count = _SZ(0)
        _call(lib, "cudaGraphGetNodes", body, None, ctypes.byref(count))
        if count.value == 0:
            return
        if count.value < least:
            params = NodeParams()
            params.type = _NODE_GRAPH
            params.graph.graph = body  # cloned into the node
            _add_captured(lib, stream, graph, params)
            NODES["inline"] += 1
            return
        handle = ctypes.c_ulonglong(0)
        _call(lib, "cudaGraphConditionalHandleCreate", ctypes.byref(handle), graph, 0, 0)
        _gate()((1,), (1,), (np.uint64(handle.value), flag))
        params = NodeParams()
        params.type = _NODE_CONDITIONAL
        params.conditional.handle = handle.value
        params.conditional.type = _COND_IF
        params.conditional.size = 1
        _add_captured(lib, stream, graph, params)
        inner, child = params.conditional.phGraph_out[0], _P()
        _call(lib, "cudaGraphAddChildGraphNode", ctypes.byref(child), _P(inner), None, 0, body)
        NODES["conditional"] += 1
    finally:
        lib.cudaGraphDestroy(body)


_STATUS: list = [None]  # conditional_status()'s answer, once it has one


def conditional_status() -> tuple[bool, str]:
    """(True, "") where captured steps can skip their upkeep in conditional nodes, else (False, why
    not). Checked once per process on the GPU, outside any capture (the list plans ask when they
    are made; upkeep_if only reads the answer): a gate and an IF node around a memset, captured
    and replayed with the flag clear (the memset must not run) and set (it must)."""
    if not _enabled():
        return False, f"{ENV}=0"
    if _STATUS[0] is None:
        _STATUS[0] = _self_test()
    return _STATUS[0]


def _self_test() -> tuple[bool, str]:
    lib, why = _cudart()
    if lib is None:
        return False, why
    try:
        import cupy

        flag = cupy.zeros(1, np.int32)
        out = cupy.full(4, 7, np.int32)
        stream = cupy.cuda.Stream(non_blocking=True)
        with stream:
            _gate()  # compiled before the capture
            stream.begin_capture()
            try:
                graph = _capture_graph(lib, stream.ptr)
                if graph is None:
                    return False, "a CuPy stream capture is not seen by cudaStreamGetCaptureInfo"
                with _record_if(lib, stream, graph, flag, 1):
                    out.fill(0)
            finally:
                g = stream.end_capture()
            g.launch(stream)
            stream.synchronize()
            clear = out.get().tolist()
            flag.fill(1)
            g.launch(stream)
            stream.synchronize()
            set_ = out.get().tolist()
        if clear != [7] * 4 or set_ != [0] * 4:
            return False, f"the conditional node's self-test gave {clear} (flag clear) and {set_} (flag set)"
        return True, ""
    except Exception as e:  # an API the driver refuses: the guarded launches stay
        try:
            import cupy

            cupy.cuda.Device().synchronize()
        except Exception:
            pass
        return False, f"conditional nodes failed their self-test: {type(e).__name__}: {str(e).splitlines()[0][:160]}"

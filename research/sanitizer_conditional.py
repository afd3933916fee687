"""Does compute-sanitizer follow kernels inside a conditional graph node? A probe without any
force kernel: four small, correct kernels (gathers and scatters through a permutation, guarded by a
device flag, as a list's upkeep is) recorded by strategies/graphs.upkeep_if behind a gate, in a
graph of 8 steps whose flag alternates, replayed 100 times; the result is checked against the same
launches run without a graph.

    python3 research/sanitizer_conditional.py [--inline]
    compute-sanitizer --tool memcheck python3 research/sanitizer_conditional.py

--inline records the same body as a child graph in line (no conditional node): the control.
Prints "ok" or what differed; exits 1 where the results differ. Run several at once under a tool:
a fault the tool reports (or causes) in this probe is the tool's, not a force kernel's.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

N = 1 << 14
STEPS = 8
REPLAYS = 100
_SRC = r"""
extern "C" __global__ void toggle(int* flag, int step) { if (threadIdx.x == 0 && blockIdx.x == 0) *flag = step & 1; }
extern "C" __global__ void scatter(const float* x, const int* perm, float* y, int n, const int* guard) {
  if (*guard == 0) return;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[perm[i]] = x[i] + 1.0f;
}
extern "C" __global__ void staged(const float* y, const int* perm, float* x, int n, const int* guard) {
  extern __shared__ float s_stage[];  // dynamic shared memory, as the one-block binning uses
  if (*guard == 0) return;
  for (int i0 = blockIdx.x * blockDim.x; i0 < n; i0 += gridDim.x * blockDim.x) {
    const int i = i0 + threadIdx.x;
    s_stage[threadIdx.x] = i < n ? y[perm[i]] : 0.0f;
    __syncthreads();
    if (i < n) x[i] = 0.5f * s_stage[threadIdx.x];
    __syncthreads();
  }
}
extern "C" __global__ void gather(const float* y, const int* perm, float* x, int n, const int* guard) {
  if (*guard == 0) return;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) x[i] = 0.5f * y[perm[i]];
}
"""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--inline", action="store_true", help="the body as a child graph in line (no conditional node)")
    ap.add_argument("--staged", action="store_true",
                    help="the gather through dynamic shared memory, in blocks of --block threads")
    ap.add_argument("--block", type=int, default=256, help="threads per block of the body's kernels")
    args = ap.parse_args(argv)
    import cupy

    from strategies import graphs

    ok, why = graphs.conditional_status()
    if not ok and not args.inline:
        print(f"n/a: {why}")
        return 0
    mod = cupy.RawModule(code=_SRC)
    toggle, scatter, gather = (mod.get_function(k) for k in ("toggle", "scatter", "staged" if args.staged else "gather"))
    b = args.block
    smem = 4 * b if args.staged else 0
    rng = np.random.default_rng(1)
    perm = cupy.asarray(rng.permutation(N).astype(np.int32))
    x0 = rng.random(N, dtype=np.float32)

    def steps(x, y, flag, stream_capturing: bool):
        for s in range(STEPS):
            toggle((1,), (1,), (flag, np.int32(s)))
            body = graphs.upkeep_if(flag, least=10**6 if args.inline else 1) if stream_capturing else _null()
            with body:
                for _ in range(2):
                    scatter((64,), (b,), (x, perm, y, np.int32(N), flag))
                    gather((1 if args.staged else 64,), (b,), (y, perm, x, np.int32(N), flag), shared_mem=smem)

    # the expected result: the same launches without a graph, as many times
    x, y, flag = cupy.asarray(x0), cupy.zeros(N, np.float32), cupy.zeros(1, np.int32)
    for _ in range(REPLAYS):
        steps(x, y, flag, False)
    want = x.get()

    x, y, flag = cupy.asarray(x0), cupy.zeros(N, np.float32), cupy.zeros(1, np.int32)
    stream = cupy.cuda.Stream(non_blocking=True)
    cupy.cuda.Device().synchronize()
    with stream:
        stream.begin_capture()
        try:
            steps(x, y, flag, True)
        finally:
            g = stream.end_capture()
        for _ in range(REPLAYS):
            g.launch(stream)
        stream.synchronize()
    got = x.get()
    kind = ("inline" if args.inline else "conditional") + (f", staged in {b}" if args.staged else f", blocks of {b}")
    recorded = graphs.NODES
    if not np.array_equal(got, want):
        bad = int(np.sum(got != want))
        print(f"{kind}: {bad} of {N} values differ from the launches without a graph (nodes {recorded})")
        return 1
    print(f"{kind}: ok (nodes {recorded})")
    return 0


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


if __name__ == "__main__":
    raise SystemExit(main())

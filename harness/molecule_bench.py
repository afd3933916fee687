"""`python -m harness bench` on rigid molecules: each molecule traversal (strategies/molecules.py: the
CPU's numba loops and the GPU's kernels) timed in each precision on the molecule scenarios at the sizes asked (`--scenario spce_water --n
small,medium`) or on the user's molecules (`--molecules FILE.json --input F.npz`).

A point is one traversal, precision and system: the whole evaluation (the sites turned by the
quaternions, the cells or the list built, the molecule pairs, forces, torques, energy and virial)
after `warmup` untimed evaluations (the first compiles), the median of at least `repeat` samples and
`min_time` seconds of them: a CPU traversal's with the host clock (harness.timing.time_cpu), a GPU
traversal's with CUDA events around its kernels, the molecules already on the device (time_gpu); a GPU
traversal's `forces_ms` times the evaluation without energy and virial (forces and torques: what an MD
step runs between its samples). Rates: molecules per second and molecule pairs within the cutoff per second; `site_pairs` counts the site-site terms
those pairs hold (Lennard-Jones centres with Lennard-Jones centres, electrostatic sites with
electrostatic sites), the work of the pair body. With --amortised K, also the mean time per frame of K
frames of a random walk of the molecules through a plan kept across them (amortised()): the Verlet
traversal's list kept while the centres stay within its skin, its builds counted (`rebuilds`).
"""
from __future__ import annotations

import numpy as np

from mdcore import InputError

from . import device, molecule_check

COLUMNS = ["strategy", "backend", "scenario", "molecules", "sites", "precision", "status", "compute_ms",
           "compute_min_ms", "compute_max_ms", "compute_q1_ms", "compute_q3_ms", "spread", "repeats",
           "molecule_pairs", "site_pairs", "molecules_per_s", "molecule_pairs_per_s", "site_pairs_per_s",
           "forces_ms", "build_ms", "amortised_ms", "amortised_frames", "rebuilds", "energy", "body", "includes", "detail"]


# --launch on molecules: verlet_warp_padded's lanes per molecule (its rule picks otherwise); spans=1: every
# GPU traversal reads each molecule's site span from memory even with one component (where it counts them
# from the index otherwise), to compare the two; unrolled=0: the GPU traversals take the general loops where
# they would unroll the pair body (molecules_cuda.site_shape), unrolled=1 insists on the unrolled one;
# counting=0: the centres' cells sorted by CuPy's stable argsort instead of the device counting sort
LAUNCH = {"lanes": (1, 2, 4, 8, 16, 32), "spans": (0, 1), "unrolled": (0, 1), "counting": (0, 1)}
LAUNCH_HELP = ("molecules take lanes=K (verlet_warp_padded's lanes per molecule), spans=0|1, unrolled=0|1 (the "
               "pair body unrolled for its site shape or not) and counting=0|1 (the cells' sort)")


def parse_launch(spec: str | None) -> dict:
    """--launch on molecules: lanes=K (a power of two up to 32) for verlet_warp_padded, spans=0|1 for the GPU
    traversals; {} without it."""
    if not spec:
        return {}
    out = {}
    for item in (x.strip() for x in spec.split(",") if x.strip()):
        key, eq, value = item.partition("=")
        if key not in LAUNCH or not eq:
            raise InputError(f"--launch {item!r}: {LAUNCH_HELP}")
        try:
            k = int(value)
        except ValueError:
            k = None
        if k not in LAUNCH[key]:
            raise InputError(f"--launch {key}={value}: one of {', '.join(map(str, LAUNCH[key]))}")
        out[key] = bool(k) if key in ("spans", "unrolled", "counting") else k
    return out


def scenario_cases(names: list[str], sizes: list[str], seed: int) -> list[dict]:
    """Each molecule scenario at each size: {"case", "mols", "model"}."""
    from .molecule_scenarios import make

    return [{"case": f"{name}:{size}", "mols": m, "model": model}
            for name in names for size in sizes for m, model in [make(name, size, seed=seed)]]


def site_pairs(mols, model, pairs_by_components: np.ndarray) -> int:
    """The site-site terms of the molecule pairs within the cutoff: pairs_by_components[a, b] such pairs
    of components a and b, each holding lj_a lj_b + el_a el_b terms."""
    lj = np.array([sum(k == "lj" for k in c.kinds) for c in model.components], np.int64)
    el = np.array([len(c.kinds) for c in model.components], np.int64) - lj
    return int(np.sum(pairs_by_components * (np.outer(lj, lj) + np.outer(el, el))))


def _pairs_by_components(mols, model) -> np.ndarray:
    """Molecule pairs within the cutoff, per pair of components (from the molecule traversals' list
    builder over the centres, in float64)."""
    from strategies import molecules_cpu  # the CPU traversals' list builder

    comp = np.asarray(mols.components, np.int64)
    nc = len(model.components)
    start, idx = molecules_cpu.neighbours(mols, model.cutoff)
    i = np.repeat(np.arange(len(comp)), np.diff(start))
    once = i < idx  # each pair once
    out = np.zeros((nc, nc), np.int64)
    np.add.at(out, (comp[i[once]], comp[idx[once]]), 1)
    return out


def run(names: list[str], precisions: list[str], cases: list[dict], timing: dict, progress=None) -> list[dict]:
    """One row per (traversal, precision, case): status ok with the timings, or n/a or error with the reason."""
    from strategies import molecules as traversals
    from strategies.molecules_cuda import GENERAL, SHAPED_SITES, site_shape

    from .timing import time_cpu, time_gpu

    rows = []
    for case in cases:
        mols, model = case["mols"], case["model"]
        m = len(mols.centres)
        sites = int(sum(len(model.components[c].kinds) for c in mols.components))
        by = _pairs_by_components(mols, model)
        sp = site_pairs(mols, model, by)
        for name in names:
            for p in precisions:
                row = {"strategy": name, "backend": traversals.backend(name), "scenario": case["case"], "molecules": m,
                       "sites": sites, "precision": p, "molecule_pairs": int(by.sum()), "site_pairs": sp}
                if p not in traversals.PRECISIONS:
                    rows.append({**row, "status": "n/a",
                                 "detail": f"molecules compute in {', '.join(traversals.PRECISIONS)}"})
                    continue
                ok, why = traversals.applicable(name, mols, model)
                launch = timing.get("launch") or {}
                if ok and "lanes" in launch and name != "verlet_warp_padded":
                    ok, why = False, "--launch lanes= is verlet_warp_padded's"
                elif ok and launch and traversals.backend(name) != "cuda":
                    ok, why = False, "--launch applies to the GPU traversals"
                elif ok and launch.get("unrolled") and (launch.get("spans") or site_shape(model) == GENERAL):
                    ok, why = False, ("--launch unrolled=1: the unrolled body takes one component of Lennard-Jones "
                                      f"centres and charges (at most {SHAPED_SITES} sites), without spans=1")
                if not ok:
                    rows.append({**row, "status": "n/a", "detail": why})
                    continue
                out = {}
                load = device.HostLoad()
                try:
                    if traversals.backend(name) == "cuda":  # the device's time of an evaluation, CUDA events
                        from strategies import molecules_cuda
                        from strategies.molecules_cuda import MoleculePlan

                        plan = MoleculePlan(name, mols, model, p, **launch)
                        row["body"] = "general" if plan.shape == GENERAL else "unrolled {}+{}".format(*plan.shape)
                        plan.upload(mols.centres, mols.quaternions)
                        t = time_gpu(plan.run, warmup=max(1, timing["warmup"]), repeat=timing["repeat"],
                                     min_time=timing["min_time"], max_repeat=max(timing["repeat"], 1000))
                        out.update(plan.result())
                        row["includes"] = "sites, cells, traversal and block sums on the device (CUDA events)"
                        f = time_gpu(lambda: plan.run(False), warmup=1, repeat=timing["repeat"],
                                     min_time=timing["min_time"], max_repeat=max(timing["repeat"], 1000))
                        row["forces_ms"] = f.median  # forces and torques alone: the kernels an MD step runs
                        if name in molecules_cuda.LISTS:  # the samples reuse the list the warm-up built
                            def rebuilt():
                                plan.stale = True
                                plan.run()
                            b = time_gpu(rebuilt, warmup=1, repeat=max(3, timing["repeat"] // 4), min_time=0.0)
                            row["build_ms"] = max(0.0, b.median - t.median)
                            row["includes"] = ("sites and the traversal over the list built before the samples "
                                               "(CUDA events); build_ms: the cells and the list")
                    else:
                        def once():
                            out.update(traversals.evaluate(name, mols, model, p))
                        t = time_cpu(once, warmup=max(1, timing["warmup"]), repeat=timing["repeat"],
                                     min_time=timing["min_time"], max_repeat=max(timing["repeat"], 1000))
                        row["includes"] = "the whole evaluation on the host clock (sites, cells or list, traversal)"
                except Exception as e:  # a failing point is a row that says so; the sweep goes on
                    rows.append({**row, "status": "error", "detail": f"{type(e).__name__}: {e}"})
                    continue
                s = 1e-3 * t.median
                row.update(status="ok", compute_ms=t.median, compute_min_ms=t.min, compute_max_ms=t.max,
                           compute_q1_ms=t.q1, compute_q3_ms=t.q3, spread=t.spread, repeats=t.repeats,
                           molecules_per_s=m / s, molecule_pairs_per_s=row["molecule_pairs"] / s,
                           site_pairs_per_s=sp / s, energy=out["energy"])
                load.record(row, traversals.backend(name) == "cuda")
                if not molecule_check.pairs_agree(out["pairs"], row["molecule_pairs"], mols, model.cutoff, p):
                    row.update(status="error",
                               detail=f"{out['pairs']} molecule pairs, the count {row['molecule_pairs']}")
                elif timing.get("amortised"):
                    row.update(amortised(name, p, mols, model, timing["amortised"]))
                rows.append(row)
                if progress:
                    progress(f"  {name} {p} {case['case']}: {t}")
    return rows


def amortised(name: str, precision: str, mols, model, frames: int) -> dict:
    """The mean time per frame of `frames` frames of a random walk of the molecules (harness/molecule_check.walk)
    through a plan kept across them (strategies.molecules.Plan): the Verlet traversal's list upkeep and
    builds included, each frame's evaluation read back (a GPU traversal's device time and transfers with
    it: host clock). The walk's frames are made before the clock starts."""
    import time

    from strategies import molecules as traversals

    from .molecule_check import walk

    path = walk(mols, model, frames, seed=7)
    plan = traversals.Plan(name, mols, model, precision)
    plan.evaluate(mols)  # warm: compiled, buffers made, the first list built
    builds = plan.rebuilds
    t0 = time.perf_counter()
    for frame in path:
        plan.evaluate(frame)
    seconds = time.perf_counter() - t0
    return {"amortised_ms": 1e3 * seconds / frames, "amortised_frames": frames, "rebuilds": plan.rebuilds - builds}


def table(rows: list[dict]) -> str:
    head = (f"{'strategy':22s} {'prec':5s} {'system':28s} {'molecules':>9s} {'ms':>10s} {'spread':>7s} "
            f"{'forces ms':>10s} {'mol/s':>9s} {'site pair/s':>11s} {'amort. ms':>10s}  status")
    lines = [head]
    for r in rows:
        f = lambda k, w, fmt: (format(r[k], fmt) if isinstance(r.get(k), (int, float)) else "").rjust(w)  # noqa: E731
        lines.append(f"{r['strategy']:22s} {r['precision']:5s} {r['scenario'][:28]:28s} {r['molecules']:9d} "
                     f"{f('compute_ms', 10, '.4g')} {f('spread', 7, '.2f')} {f('forces_ms', 10, '.4g')} "
                     f"{f('molecules_per_s', 9, '.3g')} "
                     f"{f('site_pairs_per_s', 11, '.3g')} {f('amortised_ms', 10, '.4g')}  {r['status']}"
                     + (f" ({r['detail']})" if r.get("status") != "ok" and r.get("detail") else "")
                     + (f" (host busy: other processes used {r['host_other_cores']:.1f} cores)"
                        if r.get("host_busy") else ""))
    return "\n".join(lines)


def ranking(rows: list[dict]) -> list[str]:
    """Per system and precision, the traversals from fastest to slowest (ok rows only)."""
    out = []
    keys = sorted({(r["scenario"], r["precision"]) for r in rows if r["status"] == "ok"})
    for case, p in keys:
        ok = sorted((r for r in rows if r["status"] == "ok" and (r["scenario"], r["precision"]) == (case, p)),
                    key=lambda r: r["compute_ms"])
        best = ok[0]["compute_ms"]
        out.append(f"{case} {p}: " + ", ".join(f"{r['strategy']} {r['compute_ms']:.4g} ms"
                                               + ("" if r is ok[0] else f" ({r['compute_ms'] / best:.2f}x)")
                                               for r in ok))
    return out


def check_strategies(spec: str | None) -> list[str]:
    """--strategies with --molecules: the molecule traversals (default all)."""
    from strategies import molecules as traversals

    if spec in (None, "all"):
        return list(traversals.TRAVERSALS)
    names = [x.strip() for x in spec.split(",") if x.strip()]
    err = traversals.refuse(names, "bench")
    if err:
        raise err
    return names

"""The reciprocal-space commands.

`python -m harness ewald`: the reciprocal strategies timed on charges size by size, OpenMM's Ewald
beside them (harness/ewald_bench.py).

`python -m harness mc`: Monte-Carlo moves in Ewald's reciprocal space (strategies/kspace_mc.py), timed
per move one after another (the Metropolis loop) and per move in a batch of independent trials,
with `--check K` comparing K of the energy changes with a full float64 recomputation
(reference.ewald) and the loop's final S with the one its final positions give."""
from __future__ import annotations

import argparse
import json
import math
import tempfile
import time
from pathlib import Path

import numpy as np

from mdcore import InputError, check_precision

from .. import mc_systems, results
from ..timing import Stats
from .common import COUNT, NONNEG_INT, POSITIVE, forcefield_problem, launch_params, say

TOLERANCE = {"fp64": 1e-9, "mixed": 1e-4, "fp32": 1e-4}  # |dE - dE_ref| / sum_k A (2 |S| |dS| + |dS|^2)


def add_ewald(sub) -> None:
    p = sub.add_parser("ewald", help="the Ewald reciprocal strategies timed on charges, OpenMM's Ewald beside")
    p.add_argument("--strategies", default="all", help="kspace strategies (comma list) or all (those this machine runs)")
    p.add_argument("--launch", help="launch parameters of every strategy named, e.g. recurrence=rotate "
                                    "(kspace_thread_rows)")
    p.add_argument("--n", default="10000,100000", help="comma list of charge counts (even: +1 and -1 alternating)")
    p.add_argument("--precision", default="fp32,fp64", help="comma list of fp32, mixed, fp64, or all")
    p.add_argument("--density", type=POSITIVE, default=100.0, help="charges per unit volume (per nm^3 in OpenMM's units)")
    p.add_argument("--cutoff", type=POSITIVE, default=1.0, help="the real-space cutoff alpha and kmax are chosen for")
    p.add_argument("--tolerance", type=POSITIVE, default=5e-4, help="Ewald's error tolerance (OpenMM's choice of alpha "
                                                                     "and kmax)")
    p.add_argument("--kmax", type=COUNT, help="the largest |n| on every axis instead of the tolerance's")
    p.add_argument("--repeat", type=COUNT, default=5, help="timed evaluations per point (the median is reported)")
    p.add_argument("--peers", default="", help="openmm: OpenMM's Ewald and, for scale, its PME on the same charges (its CUDA platform)")
    p.add_argument("--seed", type=NONNEG_INT, default=1, help="the positions' random seed")
    p.add_argument("--out", default=str(Path("reports") / "ewald"), help="folder of the result files (default "
                                                                          "reports/ewald under the current folder)")
    p.add_argument("--name", default="ewald", help="the result files' name: NAME.json, NAME.csv")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.set_defaults(fn=cmd_ewald)


def cmd_ewald(args: argparse.Namespace) -> int:
    from .. import device, ewald_bench
    from ..verify import meta

    sizes = ewald_bench.check_sizes(args.n)
    precs = ewald_bench.precisions(args.precision)
    peers = [p.strip() for p in args.peers.split(",") if p.strip()]
    for p in peers:
        if p != "openmm":
            raise InputError(f"ewald: --peers {p!r}; known: openmm")
    from .. import kspace_check

    chosen = kspace_check.selection(args.strategies, launch_params(args.launch))
    results.check_dir(args.out, "--out")
    results.check_name(args.name)
    kmax = None if args.kmax is None else (args.kmax,) * 3
    for n in sizes:  # every size's parameters checked before any work
        ewald_bench.parameters(ewald_bench.system(n, args.density, args.seed)[2], args.cutoff, args.tolerance, kmax)
    rows = ewald_bench.run(chosen, sizes, precs, args.density, args.cutoff, args.tolerance, kmax, args.repeat, peers,
                           args.seed, progress=None if args.quiet else say)
    doc = results.document("ewald", rows, device.header(), meta(args.argv))
    paths = results.write(doc, args.out, args.name, ewald_bench.COLUMNS)
    print(ewald_bench.table(rows))
    print(f"results: {', '.join(map(str, paths))}")
    return 1 if any(r["status"] == "error" for r in rows) else 0


def add_mc(sub) -> None:
    p = sub.add_parser("mc", help="Monte-Carlo moves in Ewald's reciprocal space: time per move, checked")
    p.add_argument("--input", help="the charges: .npz or extended XYZ (positions, box, charges)")
    p.add_argument("--forcefield", help="a force-field file with electrostatics.method ewald")
    p.add_argument("--system", help="a built-in system in place of --input and --forcefield: water or water4 (four "
                                    "sites, the oxygen uncharged), with molecules=M,box=L (nm), e.g. "
                                    "water:molecules=3000,box=4.5 (harness/mc_systems.py)")
    p.add_argument("--molecules-from", metavar="KEY", help="the .npz key of one integer molecule id per atom: moves "
                                                          "translate and rotate those molecules (default: every atom "
                                                          "a molecule of its own, translated)")
    p.add_argument("--moves", type=COUNT, default=1000, help="moves of the Metropolis loop")
    p.add_argument("--batch", type=COUNT, default=1000, help="independent trial moves from one state, timed together")
    p.add_argument("--kspace", help="the reciprocal strategy (default kspace_thread_rows with a GPU, "
                                    "kspace_thread_cpu without)")
    p.add_argument("--launch", help="its launch parameters, e.g. charged=all")
    p.add_argument("--precision", default="fp64", help="fp32, mixed or fp64 (default fp64, the GOMC report's choice)")
    p.add_argument("--loop", help="the Metropolis loop on the GPU: grid (each move's wave vectors over a grid of "
                                  "blocks, at most a block per SM; the default), grid:N (N blocks) or block (one "
                                  "block runs every move); a CPU strategy runs its own loop")
    p.add_argument("--kT", type=POSITIVE, default=1.0, help="the Metropolis test's temperature in energy units")
    p.add_argument("--step", type=POSITIVE, help="the largest shift along each axis (default a tenth of the mean "
                                                 "spacing, (V/N)^(1/3) / 10)")
    p.add_argument("--angle", type=float, default=0.5, help="the largest rotation of a molecule, radians")
    p.add_argument("--check", type=NONNEG_INT, default=0, help="compare this many energy changes of the batch and of "
                                                               "the loop with a full float64 recomputation")
    p.add_argument("--repeat", type=COUNT, default=21, help="timed batches (the median is reported, the "
                                                              "interquartile range as the noise)")
    p.add_argument("--seed", type=NONNEG_INT, default=1, help="the moves' random seed")
    p.add_argument("--json", help="also write the results here")
    p.set_defaults(fn=cmd_mc)


def _molecule_ids(args, n: int):
    if not args.molecules_from:
        return None
    if Path(args.input).suffix.lower() != ".npz":
        raise InputError(f"--molecules-from {args.molecules_from}: molecule ids come from a key of an .npz input, "
                         f"not {Path(args.input).suffix}")
    with np.load(args.input) as f:
        if args.molecules_from not in f:
            raise InputError(f"--molecules-from {args.molecules_from}: {args.input} has no such key "
                             f"(keys: {', '.join(f.files)})")
        ids = f[args.molecules_from]
    if ids.shape != (n,) or ids.dtype.kind not in "iu":
        raise InputError(f"--molecules-from {args.molecules_from}: expected one integer molecule id per atom ({n}), got "
                         f"shape {ids.shape} dtype {ids.dtype}: the ids must partition the atoms")
    if ids.size and ids.min() < 0:
        raise InputError(f"--molecules-from {args.molecules_from}: molecule ids must be >= 0 (atom "
                         f"{int(np.argmin(ids))} has {int(ids.min())})")
    return ids


def cmd_mc(args: argparse.Namespace) -> int:
    from strategies import kspace_mc

    check_precision(args.precision)
    kspace_mc.loop_form(args.loop)  # checked before any work
    if args.system is not None:
        if args.input or args.forcefield or args.molecules_from:
            raise InputError("--system builds its own charges and force field: give it without --input, --forcefield "
                             "and --molecules-from")
        with tempfile.TemporaryDirectory() as tmp:
            name, keys = mc_systems.parse(args.system)
            args.input, args.forcefield = map(str, mc_systems.write(name, keys, args.seed, Path(tmp)))
            args.molecules_from, args.system = "mol", mc_systems.label(name, keys)
            return _run_mc(args)
    if not args.input or not args.forcefield:
        raise InputError("mc: give --input and --forcefield, or --system (a built-in system)")
    return _run_mc(args)


def _run_mc(args: argparse.Namespace) -> int:
    from mdcore.ewald import Ewald
    from strategies import kspace, kspace_mc

    if args.json:
        results.check_file(args.json, "--json", (".json",))
    if args.check > min(args.moves, args.batch):
        raise InputError(f"--check {args.check}: more than the moves to check ({min(args.moves, args.batch)})")
    if not math.isfinite(args.angle) or args.angle < 0.0:
        raise InputError(f"--angle must be a finite angle >= 0 in radians, got {args.angle}")
    from strategies.cuda import device_status

    name = args.kspace
    if name is None:
        name = kspace.DEFAULT_GPU if device_status()[0] else kspace.DEFAULT_CPU
    strategy = kspace.create(name, **launch_params(args.launch))
    if args.loop is None:
        args.loop = kspace_mc.default_loop(strategy)
    if strategy.backend == "cpu" and kspace_mc.loop_form(args.loop)[0] != "block":
        raise InputError(f"--loop {args.loop}: {name} runs its loop on the CPU; the grid form is the GPU's")
    if strategy.backend == "cuda" and device_status()[0]:
        kspace_mc.check_grid_blocks(args.loop)  # before the first line of output
    ok, why = strategy.supports(args.precision)
    if not ok:
        raise InputError(f"--kspace {name} ({args.precision}): {why}")
    if strategy.backend == "cuda" and args.batch > 65535:
        raise InputError(f"--batch {args.batch}: a GPU batch takes at most 65,535 moves (a block each)")
    problem = forcefield_problem(args, args.precision)
    pot = problem.potential
    if pot.forcefield.method != "ewald":
        raise InputError(f"mc: the force field's electrostatics.method must be ewald, not {pot.forcefield.method}")
    ewald = Ewald.make(pot.forcefield, problem.box.lengths, problem.box.periodic)
    n = len(problem.positions)
    ids = _molecule_ids(args, n)
    only = strategy.launch.get("charged", "only") == "only"
    start, atoms = kspace_mc.molecules(n, ids, pot.charges, charged_only=only)
    nmol = len(start) - 1
    if nmol == 0:
        raise InputError(f"mc: {args.input} has no charged atom to move")
    step = args.step or (problem.box.volume / n) ** (1.0 / 3.0) / 10.0
    rigid = ids is not None
    loop_moves = kspace_mc.draw(args.moves, nmol, step, args.angle, rigid, args.seed)
    batch_moves = kspace_mc.draw(args.batch, nmol, step, args.angle, rigid, args.seed + 1)
    say(f"mc: {n} atoms, {nmol} {'molecules' if rigid else 'ions'} moved, {ewald.describe()}, {name} {args.precision}")

    mover = kspace_mc.create(strategy, problem.positions, pot.charges, ewald, args.precision, start, atoms, args.loop)
    if strategy.backend == "cuda" and hasattr(mover, "batch_bytes") and mover.batch_bytes(args.batch) > 2 << 30:
        raise InputError(f"--batch {args.batch}: {name}'s atomics need {mover.batch_bytes(args.batch):,} bytes of "
                         "scratch; take a smaller batch")
    t, batch_de = _time_batch(mover, strategy, batch_moves, args)
    batch_ms, batch_spread = t.median, t.spread
    batch_iqr = (t.q3 - t.q1) / t.median if t.median > 0 else 0.0
    loop_ms, loop_de, accepted = _time_loop(mover, strategy, loop_moves, args)
    out = {"kspace": name, "precision": args.precision, "input": args.system or Path(args.input).name,
           "forcefield": "built in" if args.system else Path(args.forcefield).name, "atoms": n, "molecules": nmol,
           "kvectors": ewald.count,
           "kmax": list(ewald.kmax), "alpha": ewald.alpha, "moves": args.moves, "batch": args.batch,
           "uncharged": int(np.sum(pot.charges == 0.0)), "batch_ms": batch_ms, "batch_spread": batch_spread,
           "batch_iqr": batch_iqr, "batch_repeats": t.repeats,
           "batch_us_per_move": 1e3 * batch_ms / args.batch,
           "loop_ms": loop_ms, "loop_us_per_move": 1e3 * loop_ms / args.moves,
           "acceptance": float(np.mean(accepted)), "launch": strategy.launch, "loop": args.loop,
           "loop_blocks": getattr(mover, "loop_blocks", 1)}
    print(f"batch: {args.batch} trial moves in {batch_ms:.4g} ms, {out['batch_us_per_move']:.4g} us per move")
    print(f"loop:  {args.moves} moves in {loop_ms:.4g} ms, {out['loop_us_per_move']:.4g} us per move "
          f"({args.loop}, {out['loop_blocks']} block{'s' if out['loop_blocks'] != 1 else ''}), "
          f"{100.0 * out['acceptance']:.1f} % accepted")
    failed = False
    if args.check:
        checks = _check(problem.positions, pot.charges, ewald, start, atoms, batch_moves, batch_de, loop_moves, loop_de,
                        accepted, mover, args)
        out["check"] = checks
        tol = TOLERANCE[args.precision]
        for c in checks:
            good = c["error"] <= tol
            failed |= not good
            print(f"check {c['what']:28s} error {c['error']:.2e} (tolerance {tol:.0e}) {'pass' if good else 'FAIL'}")
    if args.json:
        from .. import device

        doc = {"schema_version": results.SCHEMA_VERSION, "kind": "mc", "device": device.header(),
               "meta": {"command": "python -m harness " + " ".join(args.argv or []),
                        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z")}, **out}
        Path(args.json).write_text(json.dumps(doc, indent=1, default=str) + "\n")
    return 1 if failed else 0


def _time_batch(mover, strategy, moves, args):
    """The times of --repeat batches (ms; a Stats: the median, and the noise as the interquartile range over
    it) and the batch's dE (float64)."""
    if strategy.backend == "cpu":
        times = []
        for _ in range(max(1, min(args.repeat, 3))):
            t0 = time.perf_counter()
            de = mover.batch(moves)
            times.append(1e3 * (time.perf_counter() - t0))
        return Stats.of(times), de
    cp = mover.cp
    dev = mover.upload_moves(moves)
    de = mover.batch(dev, args.batch)  # warm-up (module load)
    times = []
    for _ in range(args.repeat):
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record()
        de = mover.batch(dev, args.batch)
        b.record()
        b.synchronize()
        times.append(cp.cuda.get_elapsed_time(a, b))
    return Stats.of(times), de.get().astype(np.float64)


def _time_loop(mover, strategy, moves, args):
    beta = 1.0 / args.kT
    if strategy.backend == "cpu":
        t0 = time.perf_counter()
        de, ok = mover.loop(moves, beta)
        return 1e3 * (time.perf_counter() - t0), de, ok
    cp = mover.cp
    dev = mover.upload_moves(moves)
    mover.loop(dev, 0, beta)  # warm-up: the module loaded, no move run
    a, b = cp.cuda.Event(), cp.cuda.Event()
    a.record()
    de, ok = mover.loop(dev, args.moves, beta, check=False)
    b.record()
    b.synchronize()
    mover.check_loop()  # after the timed region
    return cp.cuda.get_elapsed_time(a, b), de.get().astype(np.float64), ok.get()


def _check(x0, q, ewald, start, atoms, batch_moves, batch_de, loop_moves, loop_de, accepted, mover, args) -> list[dict]:
    """K energy changes of the batch and of the loop against full float64 recomputations, and the
    loop's final S against the one the final positions give."""
    from reference.ewald import reciprocal
    from strategies.kspace_mc import trial_positions

    _, _, a = ewald.vectors()
    L = np.asarray(ewald.lengths)

    def structure(x):
        return reciprocal(x, q, ewald, forces=False)["structure"]

    def error(x, mol, rt, de):
        at = atoms[start[mol]:start[mol + 1]]
        y = x.copy()
        y[at] = trial_positions(x, L, at, rt)
        s0, s1 = structure(x), structure(y)
        ds = s1 - s0
        want = float(np.sum(a * (np.abs(s1) ** 2 - np.abs(s0) ** 2)))
        scale = float(np.sum(a * (2.0 * np.abs(s0) * np.abs(ds) + np.abs(ds) ** 2))) or 1.0
        return abs(de - want) / scale, y

    x = np.array(x0, np.float64)
    K = args.check
    worst_b = max(error(x, batch_moves.mol[m], batch_moves.rt[m], batch_de[m])[0] for m in range(K))
    worst_l = 0.0
    for m in range(K):
        e, y = error(x, loop_moves.mol[m], loop_moves.rt[m], loop_de[m])
        worst_l = max(worst_l, e)
        if accepted[m]:
            x = y - L * np.floor(y / L)
    s_dev = mover.structure()
    s_ref = structure(mover.positions())
    return [{"what": f"batch dE ({K} moves)", "error": worst_b},
            {"what": f"loop dE ({K} moves)", "error": worst_l},
            {"what": "loop's final S", "error": float(np.max(np.abs(s_dev - s_ref)) / np.max(np.abs(s_ref)))}]

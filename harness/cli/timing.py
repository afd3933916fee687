"""The timing subcommands: bench, tune, md (and its NVE report), profile, timeline (on rigid molecules:
cli/molecules.py)."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


import strategies
from mdcore import FLOAT_PRECISIONS, InputError, LennardJones, check_precision
from strategies.base import check_outputs

from .. import results, scenarios
from .molecules import cmd_bench_molecules, cmd_md_molecules, cmd_tune_molecules, molecule_scenarios_named
from .common import (COUNT, check_forcefield, count, experimental_arg, poison_arg, NONNEG, NONNEG_INT, POSITIVE, ROOT, input_problem, launch_params, md_precision, parse_precisions,
                     potential_args, progress_bar, require_devices, size_arg, sweep_params)


def cmd_bench(args: argparse.Namespace) -> int:
    from .. import bench, device, peers, sweep

    results.check_name(args.name)
    if args.molecules or molecule_scenarios_named(args):
        return cmd_bench_molecules(args)
    check_forcefield(args)
    shard = bench.Shard.parse(args.shard)
    if args.cluster:
        from .. import cluster

        cluster.parse(args.cluster)  # bad text ends here, before any work
    bench.NOISE = args.noise
    if args.cpu_threads:
        import numba

        if args.cpu_threads > numba.config.NUMBA_NUM_THREADS:
            raise InputError(f"--cpu-threads {args.cpu_threads}: numba has {numba.config.NUMBA_NUM_THREADS} threads here")
        numba.set_num_threads(args.cpu_threads)
    peer_names = peers.parse(args.peers)
    if not args.dry_run:
        results.check_dir(args.out, "--out")
    if args.json:
        results.check_file(args.json, "--json", (".json",))
    pots = args.potential or [None]
    if args.potential:  # a bad spec ends here, before any work
        from mdcore import potentials

        for spec in args.potential:
            potentials.parse(spec)
        if args.input and len(args.potential) > 1:
            raise InputError("--input takes one --potential (the configuration is timed with it)")
    problem = scenarios.with_potential(input_problem(args), pots[0]) if args.input else None
    sw = sweep.plan_sweep(suite=args.suite, selection=args.strategies, specs=args.scenario,
                          sizes=[size_arg(s.strip()) for s in args.n.split(",")] if args.n else None,
                          precisions=parse_precisions(args.precision), sweep=sweep_params(args.sweep),
                          launch=launch_params(args.launch), problem=problem, dry_run=args.dry_run,
                          experimental=args.experimental)
    for line in device.header_lines(device.header()):
        print(line)
    sw.potentials = list(pots) if not args.input else [None]
    total = sw.points(len([o for o in args.outputs.split(",") if o.strip()]))
    print(count(total, "point") + (f" (share {shard}: {shard.share(total)} of them)" if shard else "")
          + (" (dry run: planned, not timed)" if args.dry_run else ""))
    bar = progress_bar(shard.share(total) if shard else total)
    outputs = [check_outputs(o.strip()) for o in args.outputs.split(",") if o.strip()]
    timing = {"seed": args.seed, "warmup": args.warmup, "repeat": args.repeat, "min_time": args.min_time,
              "max_time": args.max_time,
              "l2": args.l2, "graph": not args.no_graph, "outputs": outputs,
              "amortised": 200 if args.amortised is None else args.amortised,
              "potentials": sw.potentials}
    on = None
    if args.cluster and not args.dry_run:
        from ..cluster import Cluster

        on = Cluster(args.cluster)
        print(f"cluster: {on.what}, {on.workers} worker(s)")
    try:
        rows, paths = sweep.run_sweep(sw, Path(args.out), args.name, resume=args.resume, dry_run=args.dry_run,
                                      timing=timing, max_checks={"cpu": args.max_checks_cpu,
                                                                 "cuda": args.max_checks_gpu},
                                      peer_names=peer_names, argv=args.argv, progress=None if args.quiet else print,
                                      bar=bar, json_copy=Path(args.json) if args.json else None, shard=shard,
                                      cluster=on)
    finally:
        if bar is not None:
            bar.close()
        if on is not None:
            on.close()
    if args.dry_run:
        planned = [r for r in rows if r["status"] == "planned"]
        checks = sum(r.get("distance_checks") or 0 for r in planned)
        print(f"\n{len(planned)} of {count(len(rows), 'point')} would be timed ({len(rows) - len(planned)} n/a), "
              f"{checks:.3g} distance checks per evaluation in all")
        if not sw.gpu and any(r.get("backend") == "cuda" for r in planned):
            print("no GPU here: its points are planned without the device's own checks (device memory)")
        return 0
    print()
    print(sweep.terminal_table(rows))
    print(f"\nwrote {', '.join(map(str, paths))}")
    return 0


def cmd_tune(args: argparse.Namespace) -> int:
    from .. import molecule_scenarios, tune

    if args.molecules or molecule_scenarios.named(args.scenario):
        return cmd_tune_molecules(args)
    check_forcefield(args)
    budget = tune.parse_budget(args.budget)
    if args.json:
        results.check_file(args.json, "--json", (".json",))
    cache = Path(args.cache) if args.cache else tune.default_cache()
    if cache is not None:  # read and written: refused before any work where it cannot be
        results.check_file(cache, "--cache", (".json",))
    if args.frames < 2:
        raise InputError(f"--frames must be at least 2 (a step needs a frame after the first), got {args.frames}")
    precision = check_precision(args.precision)
    if args.input:
        problem = input_problem(args, precision)
    else:
        problem = scenarios.make(args.scenario, size_arg(args.n), seed=args.seed, precision=precision)
    problem = scenarios.with_potential(problem, args.potential)
    if args.strategies:
        names = strategies.resolve(args.strategies, args.experimental)
        require_devices(names)
    else:  # the GPU's strategies where there is one, else the CPU's
        from strategies.cuda import device_status

        names = strategies.names("cuda" if device_status()[0] else "cpu", experimental=args.experimental)
    say = None if args.quiet else (lambda s: print(s, file=sys.stderr, flush=True))
    doc = tune.tune(problem, names, budget, args.outputs, cache, use_cache=not args.no_cache, progress=say,
                    bar_factory=None if args.quiet else lambda n: progress_bar(n, "tune", "candidate"), frames=args.frames,
                    metric=args.metric)
    if doc.get("cached"):
        print(f"(from the cache: an earlier tune of a similar input on this machine, {doc['cached_input']})")
    else:
        ranked = sorted((c for c in doc["candidates"] if c["status"] == "timed" and c["median_ms"] is not None),
                        key=lambda c: c["median_ms"])
        if not args.quiet:
            print(f"{'candidate':48s} {'median ms':>10s} {'samples':>8s} {'spread':>7s}")
            for c in ranked[:8]:
                print(f"{c['label']:48s} {c['median_ms']:10.4f} {len(c['samples_ms']):8d} {c['spread']:7.0%}")
            pruned = sum(c["status"] == "pruned" for c in doc["candidates"])
            print(f"{count(len(doc['candidates']), 'candidate')}, {pruned} pruned early, {count(doc['rounds'], 'round')} on the close "
                  f"ones, {doc['seconds']:.1f} s; the winner verified against the float64 reference")
    print(doc["answer"])
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(doc, indent=1, default=str) + "\n")
    return 0


def cmd_nve_report(args: argparse.Namespace) -> int:
    from .. import device, md

    check_forcefield(args)
    if args.json:
        results.check_file(args.json, "--json", (".json",))
    if args.out:
        raise InputError("--out (a trajectory) belongs to a single run; the NVE report writes --json")
    gpu = md.driver_available_on_gpu()
    names = strategies.resolve(args.strategies or ("fullshell_thread_csr,verlet_thread_padded" if gpu
                                                   else "fullshell_thread_cpu,verlet_thread_cpu"))
    require_devices(names)
    steps = args.steps or 10000
    md.check_run(steps, args.dt, args.sample)
    problem = input_problem(args) if args.input else scenarios.make(args.scenario, size_arg(args.n), seed=args.seed)
    precisions = [md_precision(p) for p in parse_precisions(args.precision)] if args.precision else list(FLOAT_PRECISIONS)
    print(f"NVE report: {problem.describe()}, {steps} steps of dt {args.dt:g} from one equilibrated start "
          f"(T0 {args.temperature:g}), "
          + ("LJ shifted at the cutoff" if problem.potential.name == "lj" else problem.potential.describe())
          + f", a sample every {args.sample}")
    head = f"{'strategy':34s} {'precision':9s} {'drift /particle/tau':>20s} {'max |E-E0| /particle':>21s} {'ms/step':>9s}  T"

    def say(r: dict) -> None:
        if r["status"] != "ok":
            print(f"{r['strategy']:34s} {r['precision']:9s} {r['status']}: {r.get('detail', '')}", flush=True)
            return
        where = f"  ({r['platform']}, {r['precision_used']})" if "platform" in r else ""
        print(f"{r['strategy']:34s} {r['precision']:9s} {r['drift']:+20.3e} {r['max_deviation']:21.3e} "
              f"{r['ms_per_step']:9.4f}  {r['temperature']:.3f}{where}", flush=True)

    print(head)
    rows = md.nve_report(names, problem, steps, args.sample, args.dt, args.temperature, precisions,
                         peers=not args.no_peers, seed=args.seed, say=say)
    if args.json:
        doc = {"schema_version": results.SCHEMA_VERSION, "kind": "nve", "device": device.header(),
               "problem": problem.label, "steps": steps, "dt": args.dt,
               "sample": args.sample, "temperature0": args.temperature, "rows": rows}
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(doc, indent=1, default=str) + "\n")
    return 0


def cmd_md(args: argparse.Namespace) -> int:
    from dataclasses import replace as _replace

    from .. import md, molecule_scenarios

    if args.molecules or molecule_scenarios.named(args.scenario):
        return cmd_md_molecules(args)
    if args.equilibrate:
        raise InputError("md --equilibrate applies to molecules (--molecules or a molecule scenario)")
    args.dt = 0.005 if args.dt is None else args.dt
    args.temperature = 0.72 if args.temperature is None else args.temperature
    check_forcefield(args)
    if args.nve_report:
        return cmd_nve_report(args)
    if not args.strategy:
        raise InputError("md needs --strategy (or --nve-report)")
    args.steps = args.steps or 1000
    if args.out:
        results.check_file(args.out, "--out", (".xyz", ".extxyz"))
    if args.json:
        results.check_file(args.json, "--json", (".json",))
    if args.shift and args.no_shift:
        raise InputError("--shift and --no-shift contradict each other: give one")
    name = strategies.canonical(args.strategy)
    require_devices([name])
    strategy = strategies.create(name, **launch_params(args.launch))
    precision = md_precision(args.precision or "fp32")
    md.check_run(args.steps, args.dt, args.sample)
    if args.input:
        problem = input_problem(args, precision)
    else:
        problem = scenarios.make(args.scenario, size_arg(args.n), seed=args.seed, precision=precision)
    problem = scenarios.with_potential(problem, args.potential)
    if not args.no_shift and isinstance(problem.potential, LennardJones) and not problem.potential.shift:
        problem = _replace(problem, potential=_replace(problem.potential, shift=True))
    ok, why = strategy.supports(problem)  # refused before the banner
    if not ok:
        raise InputError(f"{strategy.label} cannot run {problem.describe()}: {why}")
    head = f"{'step':>8s} {'time':>9s} {'kinetic':>14s} {'potential':>15s} {'total':>15s} {'T':>8s} {'P':>9s}"
    ewald = problem.potential.per_particle and problem.potential.forcefield.method == "ewald"
    if not args.quiet:  # --quiet: the summary line only
        print(f"md {strategy.label} {problem.describe()} {problem.potential.spec()}: {args.steps} steps of dt "
              f"{args.dt:g}, T0 {args.temperature:g}, a sample every {args.sample}"
              + ("; Ewald: the real-space term alone moves the particles (the reciprocal part, harness forces and "
                 "the kspace strategies, is not in the MD loop)" if ewald else ""))
        print(head)

    def say(s: "md.Sample") -> None:
        if not args.quiet:
            print(f"{s.step:8d} {s.time:9.3f} {s.kinetic:14.6f} {s.potential:15.6f} {s.total:15.8f} "
                  f"{s.temperature:8.4f} {s.pressure:9.4f}", flush=True)

    res = md.run(strategy, problem, args.steps, args.dt, temperature=args.temperature, sample=args.sample,
                 seed=args.seed, trajectory=args.out, frame_every=args.frame_every, graph=not args.no_graph, say=say,
                 fuse=not args.no_fuse)
    rebuilt = f"; list built {res.rebuilds} times" if res.rebuilds is not None else ""
    rebuilt += f", its inner list pruned {res.prunes} times" if res.prunes is not None else ""
    fused = f"; fused steps: {res.fused}" if res.fused != "off" else ""
    fused += f"; list upkeep in the graphs: {res.upkeep}" if res.upkeep else ""
    who = f"md {strategy.label} {problem.label} {problem.precision}: " if args.quiet else ""
    frames = f"; {res.frames} frame{'s' if res.frames != 1 else ''} -> {args.out}" if args.out else ""
    print(f"{who}{res.ms_per_step:.4f} ms per step ({args.steps} steps, samples included; CUDA graph: {res.graph}"
          f"{f', up to {md.GRAPH_STEPS} steps per replay, recorded in {res.capture_ms:.0f} ms before the clock' if res.graph == 'on' else ''}"
          f"{fused}{rebuilt}); "
          f"energy drift {res.drift:+.3e} per particle per tau, largest |E - E0| {res.max_deviation:.3e} per particle"
          + frames)
    if args.json:
        from .. import device

        doc = {"schema_version": results.SCHEMA_VERSION, "kind": "md", "device": device.header(), "machine": device.machine_name(),
               "potential": problem.potential.spec(), **res.to_json()}
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(doc, indent=1, default=str) + "\n")
    return 0


def cmd_profile(args: argparse.Namespace) -> int:
    from .. import profile

    if args.resummarise:
        for path in args.resummarise:
            for line in profile.lines(profile.resummarise(Path(path))):
                print(line)
        return 0
    if args.peer:
        from .. import peers

        peers.parse(args.peer)
        scenarios.parse_spec(args.scenario)
        if args.inner:
            return profile.inner_peer(args.peer, args.scenario, size_arg(args.n), args.precision)
        results.check_dir(args.out, "--out")
        doc = profile.run_peer(args.peer, args.scenario, size_arg(args.n), check_precision(args.precision), Path(args.out),
                               cache=args.cache)
        for line in profile.lines(doc):
            print(line)
        return 0
    name = strategies.canonical(args.strategy)
    if name not in strategies.REGISTRY:
        raise strategies.registry.unknown_strategy(name)
    if strategies.REGISTRY[name].backend != "cuda":
        raise InputError(f"profile: {name} runs on the CPU; Nsight Compute profiles GPU strategies")
    scenarios.parse_spec(args.scenario)
    launch = launch_params(args.launch)
    size = size_arg(args.n)
    outputs = check_outputs(args.outputs)
    if args.inner:
        return profile.inner(name, args.scenario, size, args.precision, launch, outputs)
    results.check_dir(args.out, "--out")
    require_devices([name])
    doc = profile.run(name, args.scenario, size, check_precision(args.precision), launch, Path(args.out),
                      cache=args.cache, outputs=outputs, phase=args.phase)
    for line in profile.lines(doc):
        print(line)
    print(f"report: {Path(args.out) / doc['report']} (and .csv, .json beside it)")
    return 0


def cmd_timeline(args: argparse.Namespace) -> int:
    import shutil
    import subprocess

    results.check_dir(args.out, "--out")
    exe = shutil.which("nsys")
    if exe is None:
        print("Nsight Systems (nsys) is not on this machine: no timeline. NVTX ranges are still emitted; "
              "`make profile` (Nsight Compute) selects them.")
        return 0
    out = Path(args.out) / f"{args.strategy}-{args.scenario.replace(':', '-')}-{args.n}-timeline"
    out.parent.mkdir(parents=True, exist_ok=True)
    cmd = [exe, "profile", "-t", "cuda,nvtx", "-f", "true", "-o", str(out), sys.executable, "-m", "harness",
           "profile", "--inner", "--strategy", args.strategy, "--scenario", args.scenario, "--n", args.n,
           "--precision", args.precision]
    r = subprocess.run(cmd)
    print(f"timeline: {out}.nsys-rep" if r.returncode == 0 else f"nsys failed with exit {r.returncode}")
    return r.returncode


def cmd_results(args: argparse.Namespace) -> int:
    from .. import campaign
    from ..tune import parse_budget

    budget = parse_budget(args.budget) if args.budget else None
    only = [x.strip() for x in args.stages.split(",") if x.strip()] if args.stages else None
    if args.stages is not None and not only:
        raise InputError("results: --stages names no stage")
    return campaign.run(budget=budget, only=only, restart=args.restart, dry_run=args.dry_run, machine=args.machine,
                        gpus=args.gpus, cluster=args.cluster)


def suite_names() -> list[str]:
    from ..suites import SUITES

    return list(SUITES)


def add_bench(sub) -> None:
    p = sub.add_parser("bench", help="time strategies: sweeps over strategies, scenarios, sizes, precisions, launch")
    p.add_argument("--suite", help="a named sweep (harness/suites.py): " + ", ".join(suite_names()))
    p.add_argument("--strategies", help="comma list of names, family prefixes or attribute filters such as "
                                            "newton3=true+backend=cuda (default allpairs_thread_tiled, fullshell_thread_cpu without a GPU)")
    experimental_arg(p)
    p.add_argument("--scenario", action="append", help="scenario spec, repeatable (default lj_liquid)")
    p.add_argument("--n", help="comma list of particle counts or size names (default medium)")
    p.add_argument("--precision", default="fp32", help="comma list or all")
    p.add_argument("--seed", type=NONNEG_INT, default=1, help="random seed of the scenarios")
    p.add_argument("--warmup", type=NONNEG_INT, default=3, help="untimed evaluations before the samples")
    p.add_argument("--repeat", type=COUNT, default=20, help="samples per phase at least")
    p.add_argument("--min-time", type=NONNEG, default=0.3, help="seconds of samples per phase at least")
    p.add_argument("--max-time", type=POSITIVE, help="seconds a phase's warm-up and samples should take at most: a "
                                                     "slower point takes fewer samples (at least 3; default: no limit)")
    p.add_argument("--launch", help="launch parameters for every point, e.g. block=128")
    p.add_argument("--shard", metavar="I/N", help="time only share I of N of the sweep's points (round robin; the "
                                                  "peers with share 1), for a job array; `harness merge` joins the files")
    p.add_argument("--cluster", metavar="WHERE", help="the points as tasks on Dask workers, one point at a time each: "
                                                      "local (a worker per GPU of this node), local:K, or a scheduler "
                                                      "address tcp://host:port (the cluster extra)")
    p.add_argument("--sweep", action="append", help="launch-parameter sweep, e.g. warps=1:2:4:8:16 (repeatable; "
                                                     "applied to the strategies that have the parameter)")
    p.add_argument("--l2", choices=("flush", "warm"), default="flush",
                   help="flush the L2 before every GPU sample (default) or leave it warm")
    p.add_argument("--no-graph", action="store_true", help="skip the CUDA-graph replay timing")
    p.add_argument("--outputs", default="all", help="what each evaluation computes: all (forces, energy, virial, "
                                                     "pairs), forces (forces only), or all,forces for both (default all)")
    p.add_argument("--noise", type=POSITIVE, default=0.25,
                   help="flag points whose compute spread (max - min) / median exceeds this (default 0.25)")
    p.add_argument("--cpu-threads", type=COUNT,
                   help="numba threads for the CPU strategies (default: numba's, one per core); on a machine of few "
                        "cores 1 times them far steadier")
    p.add_argument("--max-checks-cpu", type=POSITIVE, help="skip CPU points with more distance checks (default 2e10)")
    p.add_argument("--max-checks-gpu", type=POSITIVE, help="skip GPU points with more distance checks (default 2e13)")
    p.add_argument("--peers", help="also time peers on the same problems: openmm, jaxmd (optional packages)")
    p.add_argument("--input", help="time on this configuration (.xyz or .npz)")
    p.add_argument("--molecules", metavar="FILE.json", help="rigid molecules: a components file, with --input the "
                                                             "molecules' .npz; times the molecule traversals on them "
                                                             "(docs/molecules.md); or --scenario spce_water and --n")
    p.add_argument("--amortised", type=NONNEG_INT,
                   help="frames of a recorded NVE trajectory replayed for the amortised cost of a step "
                        "(list upkeep and rebuilds included; periodic problems; 0: off; default 200); with "
                        "molecules, frames of a random walk of them (default 0: off)")
    p.add_argument("--out", default=str(Path("reports") / "bench"), help="folder for CSV and JSON (default reports/bench under the current folder)")
    p.add_argument("--name", help="file name stem (default <suite or bench>-<UTC time>)")
    p.add_argument("--json", help="also write the JSON here")
    p.add_argument("--resume", action="store_true",
                   help="continue the interrupted run of this --name: points in <out>/<name>.partial.jsonl "
                        "(written as each point ends) are kept, the rest are timed")
    p.add_argument("--dry-run", action="store_true",
                   help="list the points with their distance checks and n/a reasons; time nothing")
    p.add_argument("--quiet", action="store_true", help="no line per point, only the table at the end")
    potential_args(p)
    p.add_argument("--potential", action="append",
                   help="replace the potential: e.g. 'coordination:r0=1,n=6,m=12,d0=0,dmax=2.5' (PLUMED's "
                        "coordination number) or 'lj:cutoff=3'; repeatable: every point with each")
    poison_arg(p)
    p.set_defaults(fn=cmd_bench)


def add_tune(sub) -> None:
    p = sub.add_parser("tune", help="the fastest strategy and launch parameters for your particles (verified)")
    p.add_argument("--input", help="your configuration (.xyz or .npz); or --scenario and --n")
    p.add_argument("--scenario", default="lj_liquid", help="scenario spec, e.g. gaussian:sigma=20")
    p.add_argument("--n", default="medium", help="size name or particle count (with --scenario)")
    p.add_argument("--seed", type=NONNEG_INT, default=1, help="random seed of the scenarios")
    p.add_argument("--potential", help="e.g. 'coordination:r0=1,n=6,dmax=2.5' or 'lj:cutoff=3'")
    p.add_argument("--precision", default="fp32", help="fp32, mixed, fp64 or fixed")
    p.add_argument("--outputs", choices=("forces", "all"), default="forces",
                   help="what a step computes: forces only (default, an MD step's usual need) or all")
    p.add_argument("--strategies", help="candidates (default: every strategy of this machine's GPU, else the CPU's)")
    experimental_arg(p)
    p.add_argument("--budget", default="60s", help="time to spend: 60, 60s, 2m (default 60s; the first sample of "
                                                   "every strategy is always taken)")
    p.add_argument("--frames", type=int, default=40, help="trajectory frames a step is timed on (default 40)")
    p.add_argument("--metric", choices=("auto", "step", "scratch"), default="auto",
                   help="what is timed: ms per MD step on a short trajectory (list upkeep included), ms per "
                        "evaluation from scratch (as the sweep), or auto (default: per step where the MD loop "
                        "applies: a periodic box and a cutoff)")
    p.add_argument("--cache", help="results cache (default ~/.cache/md-harness/tune.json)")
    p.add_argument("--no-cache", action="store_true", help="measure even if a similar input is in the cache (the "
                                                            "cache is updated)")
    p.add_argument("--json", help="the answer and every candidate's samples as JSON")
    p.add_argument("--quiet", action="store_true", help="the answer line only")
    p.add_argument("--molecules", metavar="FILE.json", help="rigid molecules: a components file, with --input the "
                                                             "molecules' .npz; the fastest verified molecule traversal "
                                                             "(docs/molecules.md); or --scenario spce_water and --n")
    potential_args(p)
    p.set_defaults(fn=cmd_tune)


def add_md(sub) -> None:
    p = sub.add_parser("md", help="molecular dynamics (velocity Verlet, NVE) with any strategy's forces")
    p.add_argument("--strategy", help="the strategy whose forces drive the run")
    p.add_argument("--nve-report", action="store_true",
                   help="the NVE drift report: --strategies in each precision and OpenMM's VerletIntegrator from one "
                        "equilibrated start (default 10,000 steps)")
    p.add_argument("--strategies", help="for --nve-report (default: the CSR full shell and the Verlet list)")
    p.add_argument("--no-peers", action="store_true", help="--nve-report without OpenMM")
    p.add_argument("--launch", help="launch parameters key=value,... (molecules: upkeep=device|host, how a list "
                                    "traversal's device step decides its builds)")
    p.add_argument("--scenario", default="lj_liquid", help="a periodic scenario (default lj_liquid), or a molecule "
                                                           "scenario")
    p.add_argument("--equilibrate", type=NONNEG_INT, default=0, help="molecules: this many steps of velocity "
                                                                     "rescaling to --temperature before the NVE steps")
    p.add_argument("--n", default="small", help="size name or particle count")
    p.add_argument("--input", help="start from this configuration (.xyz or .npz) instead of a scenario")
    p.add_argument("--seed", type=NONNEG_INT, default=1, help="positions (scenario) and velocities")
    p.add_argument("--precision", default=None, help="fp32, mixed or fp64 (--nve-report: a comma list, default all)")
    p.add_argument("--steps", type=COUNT, default=None, help="default 1000 (--nve-report: 10000)")
    p.add_argument("--dt", type=POSITIVE, default=None, help="time step in tau (default 0.005; molecules: required, "
                                                              "in the components file's time unit)")
    p.add_argument("--temperature", type=NONNEG, default=None, help="Maxwell-Boltzmann start (default 0.72; molecules: "
                                                                   "required, k_B T in the file's energy unit)")
    p.add_argument("--molecules", metavar="FILE.json", help="rigid molecules: a components file, with --input the "
                                                             "molecules' .npz (or --scenario spce_water, stockmayer, "
                                                             "two_centre_lj_quadrupole); NO_SQUISH with --strategy "
                                                             "reference or any molecule traversal (harness list): "
                                                             "a GPU one integrates on the device")
    p.add_argument("--sample", type=COUNT, default=100, help="energy, temperature and pressure every M steps and at the last")
    p.add_argument("--out", help="extended XYZ trajectory (positions and velocities)")
    p.add_argument("--frame-every", type=COUNT, help="a trajectory frame every M steps (default: --sample)")
    p.add_argument("--json", help="samples and summary as JSON")
    p.add_argument("--no-shift", action="store_true",
                   help="keep LJ truncated without the shift to zero at the cutoff (energy then jumps)")
    p.add_argument("--no-graph", action="store_true", help="launch every step (no CUDA-graph replay)")
    p.add_argument("--no-fuse", action="store_true",
                   help="the plain steps (kick_drift, the strategy's step, kick in input order) where the strategy "
                        "offers fused ones (the Verlet list: the state in the list's order, the integrator in its "
                        "force kernel; the same bits); molecules: each step's closing half kick apart, not "
                        "with the next step's opening one")
    p.add_argument("--quiet", action="store_true", help="only the summary line")
    potential_args(p)
    p.add_argument("--potential", help="replace each scenario's potential: e.g. "
                                       "'coordination:r0=1,n=6,m=12,d0=0,dmax=2.5' (PLUMED's coordination number) or "
                                       "'lj:cutoff=3'")
    poison_arg(p)
    p.set_defaults(fn=cmd_md)


def add_profile(sub) -> None:
    p = sub.add_parser("profile", help="Nsight Compute on one point's force phase, summary and timing cross-check")
    p.add_argument("--strategy", default="allpairs_thread_tiled", help="the GPU strategy")
    p.add_argument("--scenario", default="lj_liquid", help="scenario spec, e.g. gaussian:sigma=20")
    p.add_argument("--n", default="large", help="size name or particle count (default large)")
    p.add_argument("--precision", default="fp32", help="fp32, mixed, fp64 or fixed")
    p.add_argument("--launch", help="launch parameters, e.g. block=128")
    p.add_argument("--outputs", default="all", help="all (forces, energy, virial, pairs) or forces")
    p.add_argument("--peer", help="profile a peer's force kernels instead of a strategy: openmm")
    p.add_argument("--phase", default="force", choices=("force", "build"),
                   help="the phase whose kernels ncu profiles (default force; build: the binning or list)")
    p.add_argument("--out", default=str(Path("reports") / "profile"), help="folder for the outputs (default reports/profile under the current folder)")
    p.add_argument("--cache", choices=("none", "all"), default="none",
                   help="ncu --cache-control: none (default: kernels share L2 as in a step) or all (each starts cold)")
    p.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--resummarise", nargs="+", metavar="JSON",
                   help="rebuild stored profiles' summaries and cross-checks from the raw CSV beside each JSON "
                        "(no GPU needed)")
    p.set_defaults(fn=cmd_profile)


def add_timeline(sub) -> None:
    p = sub.add_parser("timeline", help="Nsight Systems timeline of one evaluation's NVTX phases, where nsys exists")
    p.add_argument("--strategy", default="allpairs_thread_tiled", help="the GPU strategy")
    p.add_argument("--scenario", default="lj_liquid", help="scenario spec, e.g. gaussian:sigma=20")
    p.add_argument("--n", default="medium", help="size name or particle count")
    p.add_argument("--precision", default="fp32", help="fp32, mixed, fp64 or fixed")
    p.add_argument("--out", default=str(Path("reports") / "profile"), help="folder for the outputs (default reports/profile under the current folder)")
    p.set_defaults(fn=cmd_timeline)


def add_results(sub) -> None:
    p = sub.add_parser("results", help="regenerate this GPU model's canonical results (reports/<gpu>/) in resumable "
                                       "stages: verify, the suites, NVE, profiles, claims, report")
    p.add_argument("--budget", help="stop before running past this much time (60, 540s, 9m), so that a time-limited "
                                    "job ends cleanly; the same command continues (default: no limit). A stage "
                                    "that cannot resume starts only where its time in the campaign a --restart "
                                    "replaced fits what is left")
    p.add_argument("--stages", help="only these stages (comma list; a name ending in '-' takes every stage it "
                                    "begins, e.g. bench-,profile-)")
    p.add_argument("--restart", action="store_true",
                   help="start a new campaign (the folder holds one at other code): its files are replaced")
    p.add_argument("--machine", help="the GPU model's folder to work on (default: this machine's, e.g. nvidia-h200); "
                                     "another's for the stages that need no GPU (claims, report)")
    p.add_argument("--gpus", help="run this many GPU stages at once, each on a GPU of its own (a count or 'all'; "
                                  "default 1): a node with several GPUs of one model finishes the campaign sooner")
    p.add_argument("--cluster", metavar="WHERE", help="the bench and verify stages' points on Dask workers: local, "
                                                      "local:K (started once, every stage joins it) or a scheduler's "
                                                      "address (the cluster extra)")
    p.add_argument("--dry-run", action="store_true", help="list the stages left and their commands; run nothing")
    p.set_defaults(fn=cmd_results)

"""python -m harness {list, verify, bench, compare, profile, timeline, sanitize, report, forces, md, export}

Exit codes: 0 success; 1 a check failed (a verification cell, a sanitizer finding, a regression in
compare); 2 bad input, one line naming it; 3 an unexpected error (a bug: the traceback, then one
line).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import traceback
from pathlib import Path

import numpy as np

import strategies
from strategies import StrategyError

from . import results, scenarios
from mdcore import FLOAT_PRECISIONS, MODES, PRECISIONS, InputError, LennardJones, Problem, check_precision, parse_value
from strategies.base import check_outputs

ROOT = Path(__file__).resolve().parent.parent


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _md_precision(name: str) -> str:
    """A precision the MD loop integrates in (the float modes)."""
    p = check_precision(name)
    if MODES[p].fixed:
        raise InputError(f"md: precision {p} is for force evaluations (verify, bench, forces); the MD loop integrates "
                         f"in {', '.join(FLOAT_PRECISIONS)}")
    return p


def _precisions(text: str) -> list[str]:
    if text == "all":
        return list(PRECISIONS)
    return [check_precision(p.strip()) for p in text.split(",") if p.strip()]


class _Parser(argparse.ArgumentParser):
    """argparse that reports a bad command line in one line (and exit 2), not the usage block."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (--help shows the options)\n")


def _cutoff(text: str) -> float | None:
    if text.strip().lower() in ("none", "inf"):
        return None
    try:
        v = float(text)
    except ValueError:
        v = math.nan
    if not (math.isfinite(v) and v > 0.0):
        raise argparse.ArgumentTypeError(f"cutoff must be a number > 0 or 'none', got {text!r}")
    return v


def _number(kind: type, low: float, low_ok: bool = True, what: str = "a number"):
    """argparse type: a `kind` value >= low (> low unless low_ok), with a message naming the range."""
    def parse(text: str):
        try:
            v = kind(text)
        except ValueError:
            v = None
        if v is None or not math.isfinite(v) or not (v >= low if low_ok else v > low):
            raise argparse.ArgumentTypeError(f"expected {what} {'>=' if low_ok else '>'} {low:g}, got {text!r}")
        return v
    parse.__name__ = what
    return parse


_COUNT = _number(int, 1, what="a whole number")
_NONNEG_INT = _number(int, 0, what="a whole number")
_NONNEG = _number(float, 0.0)
_POSITIVE = _number(float, 0.0, low_ok=False)


def _potential_args(ap: argparse.ArgumentParser) -> None:
    g = ap.add_argument_group("potential (with --input)")
    g.add_argument("--cutoff", type=_cutoff, default=2.5, help="cutoff radius, or 'none' (default 2.5)")
    g.add_argument("--epsilon", type=_POSITIVE, default=1.0)
    g.add_argument("--sigma", type=_POSITIVE, default=1.0)
    g.add_argument("--shift", action="store_true", help="shift the pair energy to zero at the cutoff")


def _input_problem(args: argparse.Namespace, precision: str = "fp32") -> Problem:
    from .io import read_configuration

    pos, box = read_configuration(args.input)
    lj = LennardJones(epsilon=args.epsilon, sigma=args.sigma, cutoff=args.cutoff, shift=args.shift)
    return Problem.make(pos, box, lj, precision=precision, label=f"input:{Path(args.input).name} N={len(pos)}")


def _require_devices(names: list[str]) -> None:
    """Strategies named explicitly must be able to run here."""
    for name in names:
        ok, why = strategies.create(name).available()
        if not ok:
            raise InputError(f"strategy {name} cannot run on this machine: {why}")


def _launch(text: str | None) -> dict:
    out: dict = {}
    for item in filter(None, (text or "").split(",")):
        key, eq, val = item.partition("=")
        if not eq:
            raise InputError(f"--launch: {item!r} is not key=value")
        out[key] = parse_value(val)
    return out


def cmd_list(args: argparse.Namespace) -> int:
    from mdcore import potentials

    strat = [{"name": n, **strategies.attributes(c), "description": c.description, "launch": c.launch_defaults}
             for n, c in ((n, strategies.REGISTRY[n]) for n in strategies.ordered())]
    scen = [{"name": s.name, "description": s.description, "sizes": s.sizes, "params": s.defaults}
            for s in scenarios.SCENARIOS.values()]
    pots = [{"name": n, "functor": c.functor, "spec": c().spec(), "description": (c.__doc__ or "").strip().splitlines()[0]}
            for n, c in potentials.REGISTRY.items()]
    precs = {p: m.help for p, m in MODES.items()}
    if args.json:
        print(json.dumps({"strategies": strat, "aliases": strategies.ALIASES, "scenarios": scen, "potentials": pots,
                          "precisions": precs}, indent=1))
        return 0
    print("strategies (<traversal>_<processor>_<variant>):")
    for s in strat:
        ok, why = strategies.create(s["name"]).available()
        flags = ",".join(k for k in ("newton3", "list_reuse") if s[k]) + ("" if s["deterministic"] else ",nondeterministic")
        print(f"  {s['name']:32s} {s['backend']:5s} {s['storage']:6s} {flags.strip(','):18s} {s['description']}"
              + ("" if ok else f"  [unavailable: {why}]"))
    print("old names (aliases for one release): " + ", ".join(f"{a} -> {b}" for a, b in strategies.ALIASES.items()))
    print("scenarios:")
    for s in scen:
        sizes = ", ".join(f"{k} {v}" for k, v in s["sizes"].items())
        print(f"  {s['name']:18s} {s['description']}\n  {'':18s} sizes: {sizes}")
    print("potentials:")
    for p in pots:
        print(f"  {p['name']:18s} {p['spec']}  (functor {p['functor']})")
    print("precisions:")
    for p, h in precs.items():
        print(f"  {p:18s} {h}")
    return 0


def _size(text: str) -> str | int:
    from .bench import size_of

    return size_of(text)


def cmd_verify(args: argparse.Namespace) -> int:
    from . import verify

    names = strategies.resolve(args.strategies)
    if args.strategies:
        _require_devices(names)
    precisions = _precisions(args.precision)
    pots = args.potential or []
    if pots:  # a bad spec ends here, before any scenario is built
        from mdcore import potentials

        for spec in pots:
            potentials.parse(spec)
    results.check_dir(args.out, "--out")
    if args.json:
        results.check_file(args.json, "--json", (".json",))
    if args.input:
        cases = [verify.Case(f"input:{Path(args.input).name}", _input_problem(args))]
    else:
        specs = args.scenarios.split(",") if args.scenarios else list(scenarios.DEFAULT_MATRIX)
        for spec in specs:
            scenarios.check(spec, args.size)  # bad names, parameters and sizes fail before any work
        _say(f"building {len(specs)} scenario(s) at size {args.size}")
        cases = verify.build_cases(specs, _size(args.size), args.seed)
    if pots:  # the potential axis of the matrix: every case with each potential named
        cases = [verify.Case(f"{c.scenario}+{spec.partition(':')[0]}", scenarios.with_potential(c.problem, spec))
                 for c in cases for spec in pots]
    budgets = {k: v for k, v in (("cpu", args.max_checks_cpu), ("cuda", args.max_checks_gpu)) if v is not None}
    # a launch parameter some of the strategies lack leaves those n/a (the reason in each cell)
    chosen = strategies.create_each(names, _launch(args.launch)) if args.launch else \
        [strategies.create(n) for n in names]
    rows = verify.run_matrix(chosen, cases, precisions, budgets, progress=None if args.quiet else _say)
    if args.replay:  # the list strategies along a recorded trajectory: every frame against the reference
        rows += verify.run_replay(chosen, cases, precisions, args.replay + 1, args.replay_every,
                                  progress=None if args.quiet else _say)
    meta = verify.meta(sys.argv[1:] if args.argv is None else args.argv)
    from . import device

    paths = verify.write_reports(rows, meta, device.header(), Path(args.out), Path(args.json) if args.json else None)
    print(verify.table(rows))
    s = verify.summary(rows)
    print("\n" + "  ".join(f"{k}: {v}" for k, v in s["counts"].items()) + f"   reports: {', '.join(map(str, paths))}")
    for p, w in s["worst_by_precision"].items():
        print(f"worst {p:5s} " + "  ".join(f"{k} {v:.2e}" for k, v in w.items()))
    for backend, a in s["fixed_same_bits"].items():
        print(f"fixed point, {backend}: {len(a['strategies'])} strategies gave the same bits in {a['cases']} case(s)")
    if not s["ok"]:
        return 1
    if s["counts"]["pass"] == 0:  # a matrix that checked nothing is no pass
        reasons = sorted({r["detail"] for r in rows if r["status"] == "n/a"})
        _say(f"error: no cell of this matrix ran, every one is n/a ({'; '.join(reasons)[:300]})")
        return 2
    return 0


def _sweep(items: list[str] | None) -> dict[str, list]:
    """--sweep key=v1:v2:v3 (repeatable) -> {key: [v1, v2, v3]}."""
    out: dict[str, list] = {}
    for item in items or []:
        key, eq, vals = item.partition("=")
        if not eq or not vals:
            raise InputError(f"--sweep: {item!r} is not key=value:value:...")
        out[key] = [parse_value(v) for v in vals.split(":")]
    return out


def _progress_bar(total: int, desc: str = "bench", unit: str = "point"):
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, leave=False, disable=not sys.stderr.isatty())


def cmd_bench(args: argparse.Namespace) -> int:
    from . import bench, device, peers

    bench.NOISE = args.noise
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
    problem = scenarios.with_potential(_input_problem(args), pots[0]) if args.input else None
    sw = bench.plan_sweep(suite=args.suite, selection=args.strategies, specs=args.scenario,
                          sizes=[_size(s.strip()) for s in args.n.split(",")] if args.n else None,
                          precisions=_precisions(args.precision), sweep=_sweep(args.sweep),
                          launch=_launch(args.launch), problem=problem, dry_run=args.dry_run)
    for line in device.header_lines(device.header()):
        print(line)
    sw.potentials = list(pots) if not args.input else [None]
    total = sw.points(len([o for o in args.outputs.split(",") if o.strip()]))
    print(f"{total} points" + (" (dry run: planned, not timed)" if args.dry_run else ""))
    bar = _progress_bar(total)
    outputs = [check_outputs(o.strip()) for o in args.outputs.split(",") if o.strip()]
    timing = {"seed": args.seed, "warmup": args.warmup, "repeat": args.repeat, "min_time": args.min_time,
              "l2": args.l2, "graph": not args.no_graph, "outputs": outputs, "amortised": args.amortised,
              "potentials": sw.potentials}
    try:
        rows, paths = bench.run_sweep(sw, Path(args.out), args.name, resume=args.resume, dry_run=args.dry_run,
                                      timing=timing, max_checks={"cpu": args.max_checks_cpu,
                                                                 "cuda": args.max_checks_gpu},
                                      peer_names=peer_names, argv=args.argv, progress=None if args.quiet else print,
                                      bar=bar, json_copy=Path(args.json) if args.json else None)
    finally:
        if bar is not None:
            bar.close()
    if args.dry_run:
        planned = [r for r in rows if r["status"] == "planned"]
        checks = sum(r.get("distance_checks") or 0 for r in planned)
        print(f"\n{len(planned)} of {len(rows)} points would be timed ({len(rows) - len(planned)} n/a), "
              f"{checks:.3g} distance checks per evaluation in all")
        if not sw.gpu:
            print("no GPU here: its points are planned without the device's own checks (device memory)")
        return 0
    print()
    print(bench.terminal_table(rows))
    print(f"\nwrote {', '.join(map(str, paths))}")
    return 0


def cmd_forces(args: argparse.Namespace) -> int:
    results.check_file(args.out, "--out", (".npz",))
    if args.strategy != "reference":
        _require_devices([strategies.canonical(args.strategy)])
    problem = scenarios.with_potential(_input_problem(args, check_precision(args.precision)), args.potential)
    if args.strategy == "reference":
        import reference

        ref = reference.compute(problem)
        forces, energy, virial, pairs = ref.forces, ref.energy, ref.virial, ref.pairs
    else:
        out = strategies.create(args.strategy).evaluate(problem)
        forces, energy, virial, pairs = out.forces, out.energy, out.virial, out.pairs
    np.savez(args.out, forces=forces, energy=np.float64(energy), virial=virial, pairs=np.int64(pairs))
    print(f"{args.strategy} {problem.describe()}: energy {energy:.10g}, pairs {pairs} -> {args.out}")
    return 0


def cmd_nve_report(args: argparse.Namespace) -> int:
    from . import device, md

    if args.json:
        results.check_file(args.json, "--json", (".json",))
    if args.out:
        raise InputError("--out (a trajectory) belongs to a single run; the NVE report writes --json")
    gpu = md.driver_available_on_gpu()
    names = strategies.resolve(args.strategies or ("fullshell_thread_csr,verlet_thread_padded" if gpu
                                                   else "fullshell_thread_cpu,verlet_thread_cpu"))
    _require_devices(names)
    steps = args.steps or 10000
    md.check_run(steps, args.dt, args.sample)
    problem = _input_problem(args) if args.input else scenarios.make(args.scenario, _size(args.n), seed=args.seed)
    precisions = [_md_precision(p) for p in _precisions(args.precision)] if args.precision else list(FLOAT_PRECISIONS)
    print(f"NVE report: {problem.describe()}, {steps} steps of dt {args.dt:g} from one equilibrated start "
          f"(T0 {args.temperature:g}), LJ shifted at the cutoff, a sample every {args.sample}")
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


def cmd_tune(args: argparse.Namespace) -> int:
    from . import tune

    budget = tune.parse_budget(args.budget)
    if args.json:
        results.check_file(args.json, "--json", (".json",))
    cache = Path(args.cache) if args.cache else tune.default_cache()
    if cache is not None and cache.is_dir():
        raise InputError(f"--cache: {cache} is a folder; name a file (.json)")
    if args.frames < 2:
        raise InputError(f"--frames must be at least 2 (a step needs a frame after the first), got {args.frames}")
    precision = check_precision(args.precision)
    if args.input:
        problem = _input_problem(args, precision)
    else:
        problem = scenarios.make(args.scenario, _size(args.n), seed=args.seed, precision=precision)
    problem = scenarios.with_potential(problem, args.potential)
    if args.strategies:
        names = strategies.resolve(args.strategies)
        _require_devices(names)
    else:  # the GPU's strategies where there is one, else the CPU's
        from strategies.cuda import device_status

        names = strategies.select(backend="cuda" if device_status()[0] else "cpu")
    say = None if args.quiet else (lambda s: print(s, file=sys.stderr, flush=True))
    doc = tune.tune(problem, names, budget, args.outputs, cache, use_cache=not args.no_cache, progress=say,
                    bar_factory=None if args.quiet else lambda n: _progress_bar(n, "tune", "candidate"), frames=args.frames,
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
            print(f"{len(doc['candidates'])} candidates, {pruned} pruned early, {doc['rounds']} rounds on the close "
                  f"ones, {doc['seconds']:.1f} s; the winner verified against the float64 reference")
    print(doc["answer"])
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(doc, indent=1, default=str) + "\n")
    return 0


def cmd_md(args: argparse.Namespace) -> int:
    from dataclasses import replace as _replace

    from . import md

    if args.nve_report:
        return cmd_nve_report(args)
    if not args.strategy:
        raise InputError("md needs --strategy (or --nve-report)")
    args.steps = args.steps or 1000
    if args.out:
        results.check_file(args.out, "--out", (".xyz", ".extxyz"))
    if args.json:
        results.check_file(args.json, "--json", (".json",))
    name = strategies.canonical(args.strategy)
    _require_devices([name])
    strategy = strategies.create(name, **_launch(args.launch))
    precision = _md_precision(args.precision or "fp32")
    md.check_run(args.steps, args.dt, args.sample)
    if args.input:
        problem = _input_problem(args, precision)
    else:
        problem = scenarios.make(args.scenario, _size(args.n), seed=args.seed, precision=precision)
    problem = scenarios.with_potential(problem, args.potential)
    if not args.no_shift and isinstance(problem.potential, LennardJones) and not problem.potential.shift:
        problem = _replace(problem, potential=_replace(problem.potential, shift=True))
    head = f"{'step':>8s} {'time':>9s} {'kinetic':>14s} {'potential':>15s} {'total':>15s} {'T':>8s} {'P':>9s}"
    print(f"md {strategy.label} {problem.describe()} {problem.potential.spec()}: {args.steps} steps of dt {args.dt:g}, "
          f"T0 {args.temperature:g}, a sample every {args.sample}")
    if not args.quiet:
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
    print(f"{res.ms_per_step:.4f} ms per step ({args.steps} steps, samples included; CUDA graph: {res.graph}"
          f"{f', up to {md.GRAPH_STEPS} steps per replay, recorded in {res.capture_ms:.0f} ms before the clock' if res.graph == 'on' else ''}"
          f"{fused}{rebuilt}); "
          f"energy drift {res.drift:+.3e} per particle per tau, largest |E - E0| {res.max_deviation:.3e} per particle"
          + (f"; {res.frames} frames -> {args.out}" if args.out else ""))
    if args.json:
        from . import device

        doc = {"schema_version": results.SCHEMA_VERSION, "kind": "md", "device": device.header(), "machine": device.machine_name(),
               "potential": problem.potential.spec(), **res.to_json()}
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(doc, indent=1, default=str) + "\n")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from .io import write_configuration

    results.check_file(args.out, "--out", (".xyz", ".extxyz", ".npz"))
    p = scenarios.make(args.scenario, _size(args.n), seed=args.seed)
    write_configuration(args.out, p.positions, p.box)
    print(f"{p.describe()} -> {args.out}")
    return 0


def cmd_sanitize(args: argparse.Namespace) -> int:
    from . import sanitize

    names = strategies.resolve(args.strategies or "cuda")
    cpu = [n for n in names if strategies.REGISTRY[n].backend != "cuda"]
    if cpu:
        raise InputError(f"sanitize checks GPU strategies; {', '.join(cpu)} run on the CPU")
    scenarios.check(args.scenario, args.size)
    if args.inner:
        return sanitize.inner(names, args.scenario, args.size, self_test=args.self_test)
    _require_devices(names)
    tools = [t.strip() for t in args.tools.split(",") if t.strip()]
    if args.self_test:  # the tools must flag the planted race (racecheck) and overrun (memcheck)
        results = sanitize.run(names, tools, self_test=True, jobs=args.jobs)
        want = {"memcheck", "racecheck"} & set(tools)
        caught = {r.tool for r in results if r.errors}
        print(f"\nself-test: planted faults flagged by {', '.join(sorted(caught)) or 'no tool'}; "
              f"expected {', '.join(sorted(want))}")
        return 0 if want <= caught else 1
    results = sanitize.run(names, tools, args.scenario, args.size, jobs=args.jobs)
    clean = [r for r in results if r.ok]
    na = [r for r in results if r.not_applicable]
    bad = [r for r in results if not r.ok and not r.not_applicable]
    print(f"\n{len(clean)} clean, {len(na)} n/a (the strategy does not apply to this problem), {len(bad)} with "
          f"errors, failures or not run ({len(names)} strategies x {len(tools)} tools, {args.scenario} {args.size}, "
          f"fp32 and fp64)")
    if not clean:
        print("nothing ran under the tools: no strategy was checked")
    return 1 if bad or not clean else 0


def cmd_profile(args: argparse.Namespace) -> int:
    from . import profile

    if args.resummarise:
        for path in args.resummarise:
            for line in profile.lines(profile.resummarise(Path(path))):
                print(line)
        return 0
    if args.peer:
        from . import peers

        peers.parse(args.peer)
        scenarios.parse_spec(args.scenario)
        if args.inner:
            return profile.inner_peer(args.peer, args.scenario, _size(args.n), args.precision)
        results.check_dir(args.out, "--out")
        doc = profile.run_peer(args.peer, args.scenario, _size(args.n), check_precision(args.precision), Path(args.out),
                               cache=args.cache)
        for line in profile.lines(doc):
            print(line)
        return 0
    name = strategies.canonical(args.strategy)
    if name not in strategies.REGISTRY:
        raise InputError(f"unknown strategy {name!r}; known: {', '.join(strategies.REGISTRY)}")
    if strategies.REGISTRY[name].backend != "cuda":
        raise InputError(f"profile: {name} runs on the CPU; Nsight Compute profiles GPU strategies")
    scenarios.parse_spec(args.scenario)
    launch = _launch(args.launch)
    size = _size(args.n)
    outputs = check_outputs(args.outputs)
    if args.inner:
        return profile.inner(name, args.scenario, size, args.precision, launch, outputs)
    _require_devices([name])
    results.check_dir(args.out, "--out")
    doc = profile.run(name, args.scenario, size, check_precision(args.precision), launch, Path(args.out),
                      cache=args.cache, outputs=outputs, phase=args.phase)
    for line in profile.lines(doc):
        print(line)
    print(f"report: {Path(args.out) / doc['report']} (and .csv, .json beside it)")
    return 0


def cmd_timeline(args: argparse.Namespace) -> int:
    import shutil
    import subprocess

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


def cmd_report(args: argparse.Namespace) -> int:
    from . import report

    paths = [Path(p) for p in (args.inputs or [])] or report.default_inputs(ROOT)
    if not paths:
        raise InputError("report: no inputs; run make bench / make verify first, or name JSON files")
    for p in paths:
        if not p.exists():
            raise InputError(f"report: {p} does not exist")
    before = [Path(p) for p in (args.before or [])]
    for p in before:
        if not p.is_file():
            raise InputError(f"report: --before {p} does not exist")
    out = results.check_dir(Path(args.out) / args.name, "--out/--name")
    index, md = report.build(paths, out, args.title or f"mdforce report: {args.name}", before=before)
    print(f"wrote {index} and {md} (from {len(paths)} result files)")
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from . import compare

    threshold = compare.parse_threshold(args.threshold)
    if args.json:
        results.check_file(args.json, "--json", (".json",))
    changes, meta = compare.compare(Path(args.old), Path(args.new), threshold, args.metric, args.any_device)
    print(compare.report(changes, meta))
    if args.json:
        compare.write_json(Path(args.json), changes, meta)
    return 1 if any(c.verdict == "regression" for c in changes) else 0


def cmd_claims(args: argparse.Namespace) -> int:
    from . import claims

    folders = [Path(f) for f in (args.folders or ["reports"])]
    if args.json:
        results.check_file(args.json, "--json", (".json",))
    if args.out:
        results.check_file(args.out, "--out", (".md",))
    data = claims.load(folders)
    if data.files == 0:
        raise InputError(f"no result files (bench, NVE or verify JSON) under {', '.join(map(str, folders))}")
    rows = claims.evaluate(data)
    text = claims.markdown(rows, root=Path.cwd())
    if args.out:
        Path(args.out).write_text(text)
    else:
        print(text, end="")
    if args.json:
        Path(args.json).write_text(json.dumps({"kind": "claims", "schema_version": 1, "folders": [str(f) for f in folders],
                                               "files_read": data.files, "claims": rows}, indent=1))
    counts = {}
    for r in rows:
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    print(f"{len(rows)} claims from {data.files} result files: "
          + ", ".join(f"{k} {v}" for k, v in counts.items()), file=sys.stderr)
    return 0


def _suite_names() -> list[str]:
    from .suites import SUITES

    return list(SUITES)


def parser() -> argparse.ArgumentParser:
    ap = _Parser(prog="python -m harness", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)

    p = sub.add_parser("list", help="registered strategies, scenarios and precision modes")
    p.add_argument("--json", action="store_true")
    p.set_defaults(fn=cmd_list)

    p = sub.add_parser("verify", help="correctness matrix against the float64 reference")
    p.add_argument("--strategies", help="comma list of names, family prefixes (fullshell_) or attribute filters "
                                            "(traversal=c08, newton3=true+backend=cuda) (default: all)")
    p.add_argument("--scenarios", help=f"comma list, 'name:key=value' for parameters (default: {','.join(scenarios.DEFAULT_MATRIX)})")
    p.add_argument("--precision", default="all", help="comma list of fp32, mixed, fp64, fixed, or all")
    p.add_argument("--size", default="small", help="tiny, small, medium, large, or a particle count")
    p.add_argument("--seed", type=_NONNEG_INT, default=1)
    p.add_argument("--input", help="verify on this configuration instead of the scenarios (.xyz or .npz)")
    p.add_argument("--json", help="also write the JSON report here")
    p.add_argument("--launch", help="launch parameters key=value,... for every strategy named (e.g. rebuild=never: "
                                    "the list strategies' negative control)")
    p.add_argument("--replay", type=_NONNEG_INT, default=0,
                   help="list strategies: also replay this many frames of a recorded NVE trajectory of each periodic "
                        "scenario, the list kept and rebuilt by its own trigger, frames checked against the reference")
    p.add_argument("--replay-every", type=_COUNT, default=1, help="check every M-th replayed frame (default every one)")
    p.add_argument("--out", default=str(ROOT / "reports" / "verify"), help="report folder (default reports/verify)")
    p.add_argument("--max-checks-cpu", type=_POSITIVE, help="skip CPU cells with more distance checks (default 4e9)")
    p.add_argument("--max-checks-gpu", type=_POSITIVE, help="skip GPU cells with more distance checks (default 4e12)")
    p.add_argument("--quiet", action="store_true")
    _potential_args(p)
    p.add_argument("--potential", action="append",
                   help="replace each scenario's potential: e.g. 'coordination:r0=1,n=6,m=12,d0=0,dmax=2.5' "
                        "(PLUMED's coordination number) or 'lj:cutoff=3'; repeatable: the matrix gains a potential "
                        "axis (every case with each)")
    p.set_defaults(fn=cmd_verify)

    p = sub.add_parser("bench", help="time strategies: sweeps over strategies, scenarios, sizes, precisions, launch")
    p.add_argument("--suite", help="a named sweep (harness/suites.py): " + ", ".join(_suite_names()))
    p.add_argument("--strategies", help="comma list of names, family prefixes or attribute filters such as "
                                            "newton3=true+backend=cuda (default allpairs_thread_tiled)")
    p.add_argument("--scenario", action="append", help="scenario spec, repeatable (default lj_liquid)")
    p.add_argument("--n", help="comma list of particle counts or size names (default medium)")
    p.add_argument("--precision", default="fp32", help="comma list or all")
    p.add_argument("--seed", type=_NONNEG_INT, default=1)
    p.add_argument("--warmup", type=_NONNEG_INT, default=3)
    p.add_argument("--repeat", type=_COUNT, default=20)
    p.add_argument("--min-time", type=_NONNEG, default=0.3, help="seconds of samples per phase at least")
    p.add_argument("--launch", help="launch parameters for every point, e.g. block=128")
    p.add_argument("--sweep", action="append", help="launch-parameter sweep, e.g. warps=1:2:4:8:16 (repeatable; "
                                                     "applied to the strategies that have the parameter)")
    p.add_argument("--l2", choices=("flush", "warm"), default="flush",
                   help="flush the L2 before every GPU sample (default) or leave it warm")
    p.add_argument("--no-graph", action="store_true", help="skip the CUDA-graph replay timing")
    p.add_argument("--outputs", default="all", help="what each evaluation computes: all (forces, energy, virial, "
                                                     "pairs), forces (forces only), or all,forces for both (default all)")
    p.add_argument("--noise", type=_POSITIVE, default=0.25,
                   help="flag points whose compute spread (max - min) / median exceeds this (default 0.25)")
    p.add_argument("--max-checks-cpu", type=_POSITIVE, help="skip CPU points with more distance checks (default 2e10)")
    p.add_argument("--max-checks-gpu", type=_POSITIVE, help="skip GPU points with more distance checks (default 2e13)")
    p.add_argument("--peers", help="also time peers on the same problems: openmm, jaxmd (optional packages)")
    p.add_argument("--input", help="time on this configuration (.xyz or .npz)")
    p.add_argument("--amortised", type=_NONNEG_INT, default=200,
                   help="frames of a recorded NVE trajectory replayed for the amortised cost of a step "
                        "(list upkeep and rebuilds included; periodic problems; 0: off; default 200)")
    p.add_argument("--out", default=str(ROOT / "reports" / "bench"), help="folder for CSV and JSON (reports/bench)")
    p.add_argument("--name", help="file name stem (default <suite or bench>-<UTC time>)")
    p.add_argument("--json", help="also write the JSON here")
    p.add_argument("--resume", action="store_true",
                   help="continue the interrupted run of this --name: points in <out>/<name>.partial.jsonl "
                        "(written as each point ends) are kept, the rest are timed")
    p.add_argument("--dry-run", action="store_true",
                   help="list the points with their distance checks and n/a reasons; time nothing")
    p.add_argument("--quiet", action="store_true", help="no line per point, only the table at the end")
    _potential_args(p)
    p.add_argument("--potential", action="append",
                   help="replace the potential: e.g. 'coordination:r0=1,n=6,m=12,d0=0,dmax=2.5' (PLUMED's "
                        "coordination number) or 'lj:cutoff=3'; repeatable: every point with each")
    p.set_defaults(fn=cmd_bench)

    p = sub.add_parser("compare", help="regressions between two bench results: median change against the "
                                       "threshold and the noise of both")
    p.add_argument("old", help="the earlier bench JSON")
    p.add_argument("new", help="the later bench JSON")
    p.add_argument("--threshold", default="5%", help="smallest change that counts, e.g. 5%% or 0.05 (default 5%%)")
    p.add_argument("--metric", default="compute", choices=("compute", "graph", "with_list", "force", "device"),
                   help="the phase compared (default compute: from scratch, events)")
    p.add_argument("--any-device", action="store_true", help="compare results of two different devices anyway")
    p.add_argument("--json", help="also write the comparison here")
    p.set_defaults(fn=cmd_compare)

    p = sub.add_parser("claims", help="the seed documents' claims, answered from results on disk (verdicts computed)")
    p.add_argument("folders", nargs="*", help="folders (or files) of bench, NVE and verify JSON results (default reports/)")
    p.add_argument("--out", help="write the markdown table here (.md) instead of printing it")
    p.add_argument("--json", help="also write the verdicts as JSON")
    p.set_defaults(fn=cmd_claims)

    p = sub.add_parser("sanitize", help="compute-sanitizer (memcheck, racecheck, synccheck, initcheck) per GPU strategy")
    p.add_argument("--strategies", help="comma list or family prefixes (default: every GPU strategy)")
    p.add_argument("--tools", default=",".join(("memcheck", "racecheck", "synccheck", "initcheck")))
    p.add_argument("--scenario", default="lj_liquid", help="a small periodic system (default lj_liquid)")
    p.add_argument("--size", default="small", help="default small: 5 cells per axis, which every GPU strategy supports")
    p.add_argument("--self-test", action="store_true",
                   help="run a kernel with a planted race and overrun instead; pass when the tools flag it")
    p.add_argument("--jobs", type=_COUNT, default=min(4, os.cpu_count() or 1),
                   help="sanitizer processes at once (default min(4, CPUs)); each checks one strategy under one tool")
    p.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    p.set_defaults(fn=cmd_sanitize)

    p = sub.add_parser("profile", help="Nsight Compute on one point's force phase, summary and timing cross-check")
    p.add_argument("--strategy", default="allpairs_thread_tiled")
    p.add_argument("--scenario", default="lj_liquid")
    p.add_argument("--n", default="large", help="size name or particle count (default large)")
    p.add_argument("--precision", default="fp32")
    p.add_argument("--launch", help="launch parameters, e.g. block=128")
    p.add_argument("--outputs", default="all", help="all (forces, energy, virial, pairs) or forces")
    p.add_argument("--peer", help="profile a peer's force kernels instead of a strategy: openmm")
    p.add_argument("--phase", default="force", choices=("force", "build"),
                   help="the phase whose kernels ncu profiles (default force; build: the binning or list)")
    p.add_argument("--out", default=str(ROOT / "reports" / "profile"))
    p.add_argument("--cache", choices=("none", "all"), default="none",
                   help="ncu --cache-control: none (default: kernels share L2 as in a step) or all (each starts cold)")
    p.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--resummarise", nargs="+", metavar="JSON",
                   help="rebuild stored profiles' summaries and cross-checks from the raw CSV beside each JSON "
                        "(no GPU needed)")
    p.set_defaults(fn=cmd_profile)

    p = sub.add_parser("timeline", help="Nsight Systems timeline of one evaluation's NVTX phases, where nsys exists")
    p.add_argument("--strategy", default="allpairs_thread_tiled")
    p.add_argument("--scenario", default="lj_liquid")
    p.add_argument("--n", default="medium")
    p.add_argument("--precision", default="fp32")
    p.add_argument("--out", default=str(ROOT / "reports" / "profile"))
    p.set_defaults(fn=cmd_timeline)

    p = sub.add_parser("report", help="HTML and markdown report from bench, verify and profile results")
    p.add_argument("inputs", nargs="*", help="result JSON files (default: the newest reports/bench/*.json, "
                                             "reports/verify/verify.json, reports/profile/*.json)")
    p.add_argument("--name", default="latest", help="report folder under --out (default latest)")
    p.add_argument("--out", default=str(ROOT / "reports"))
    p.add_argument("--title")
    p.add_argument("--before", action="append", metavar="BENCH_JSON",
                   help="an earlier bench result (repeatable): the section 'Before and after' compares every point it "
                        "shares with the inputs (harness compare's rule: above 5%% and above the noise)")
    p.set_defaults(fn=cmd_report)

    p = sub.add_parser("tune", help="the fastest strategy and launch parameters for your particles (verified)")
    p.add_argument("--input", help="your configuration (.xyz or .npz); or --scenario and --n")
    p.add_argument("--scenario", default="lj_liquid")
    p.add_argument("--n", default="medium", help="size name or particle count (with --scenario)")
    p.add_argument("--seed", type=_NONNEG_INT, default=1)
    p.add_argument("--potential", help="e.g. 'coordination:r0=1,n=6,dmax=2.5' or 'lj:cutoff=3'")
    p.add_argument("--precision", default="fp32")
    p.add_argument("--outputs", choices=("forces", "all"), default="forces",
                   help="what a step computes: forces only (default, an MD step's usual need) or all")
    p.add_argument("--strategies", help="candidates (default: every strategy of this machine's GPU, else the CPU's)")
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
    _potential_args(p)
    p.set_defaults(fn=cmd_tune)

    p = sub.add_parser("forces", help="forces, energy, virial and pairs of one configuration")
    p.add_argument("--strategy", required=True, help="a registered strategy, or 'reference' (float64 CPU)")
    p.add_argument("--input", required=True)
    p.add_argument("--precision", default="fp32")
    p.add_argument("--out", required=True, help="output .npz")
    _potential_args(p)
    p.add_argument("--potential", help="replace the potential: e.g. 'coordination:r0=1,n=6,m=12,d0=0,dmax=2.5' "
                                       "(PLUMED's coordination number) or 'lj:cutoff=3'")
    p.set_defaults(fn=cmd_forces)

    p = sub.add_parser("md", help="molecular dynamics (velocity Verlet, NVE) with any strategy's forces")
    p.add_argument("--strategy", help="the strategy whose forces drive the run")
    p.add_argument("--nve-report", action="store_true",
                   help="the NVE drift report: --strategies in each precision and OpenMM's VerletIntegrator from one "
                        "equilibrated start (default 10,000 steps)")
    p.add_argument("--strategies", help="for --nve-report (default: the CSR full shell and the Verlet list)")
    p.add_argument("--no-peers", action="store_true", help="--nve-report without OpenMM")
    p.add_argument("--launch", help="launch parameters key=value,...")
    p.add_argument("--scenario", default="lj_liquid", help="a periodic scenario (default lj_liquid)")
    p.add_argument("--n", default="small", help="size name or particle count")
    p.add_argument("--input", help="start from this configuration (.xyz or .npz) instead of a scenario")
    p.add_argument("--seed", type=_NONNEG_INT, default=1, help="positions (scenario) and velocities")
    p.add_argument("--precision", default=None, help="fp32, mixed or fp64 (--nve-report: a comma list, default all)")
    p.add_argument("--steps", type=_COUNT, default=None, help="default 1000 (--nve-report: 10000)")
    p.add_argument("--dt", type=_POSITIVE, default=0.005, help="time step in tau (default 0.005)")
    p.add_argument("--temperature", type=_NONNEG, default=0.72, help="Maxwell-Boltzmann start (default 0.72)")
    p.add_argument("--sample", type=_COUNT, default=100, help="energy, temperature and pressure every M steps")
    p.add_argument("--out", help="extended XYZ trajectory (positions and velocities)")
    p.add_argument("--frame-every", type=_COUNT, help="a trajectory frame every M steps (default: --sample)")
    p.add_argument("--json", help="samples and summary as JSON")
    p.add_argument("--no-shift", action="store_true",
                   help="keep LJ truncated without the shift to zero at the cutoff (energy then jumps)")
    p.add_argument("--no-graph", action="store_true", help="launch every step (no CUDA-graph replay)")
    p.add_argument("--no-fuse", action="store_true",
                   help="the plain steps (kick_drift, the strategy's step, kick in input order) where the strategy "
                        "offers fused ones (the Verlet list: the state in the list's order, the integrator in its "
                        "force kernel; the same bits)")
    p.add_argument("--quiet", action="store_true", help="only the summary line")
    _potential_args(p)
    p.add_argument("--potential", help="replace each scenario's potential: e.g. "
                                       "'coordination:r0=1,n=6,m=12,d0=0,dmax=2.5' (PLUMED's coordination number) or "
                                       "'lj:cutoff=3'")
    p.set_defaults(fn=cmd_md)

    p = sub.add_parser("export", help="write a scenario's configuration to .xyz or .npz")
    p.add_argument("--scenario", required=True)
    p.add_argument("--n", default="small", help="size name or particle count")
    p.add_argument("--seed", type=_NONNEG_INT, default=1)
    p.add_argument("--out", required=True)
    p.set_defaults(fn=cmd_export)
    return ap


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    args.argv = argv
    try:
        return args.fn(args)
    except (InputError, StrategyError) as e:
        _say(f"error: {e}")
        return 2
    except MemoryError as e:
        _say(f"error: out of host memory ({e or 'MemoryError'}); take a smaller N")
        return 2
    except KeyboardInterrupt:
        _say("interrupted")
        return 130
    except Exception as e:  # a bug: its traceback, and a status that no check result uses
        traceback.print_exc()
        _say(f"internal error (a bug in the harness, please report it with the traceback above): "
             f"{type(e).__name__}: {e}")
        return 3

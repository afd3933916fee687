"""bench, tune and md on rigid molecules (docs/molecules.md): the commands cli/timing.py hands over to when
--molecules or a molecule scenario is given."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from mdcore import InputError

from .. import results
from .common import parse_precisions


def molecule_scenarios_named(args: argparse.Namespace) -> bool:
    """Whether --scenario names molecule scenarios (every one of them, or refused in one line)."""
    from .. import molecule_scenarios

    specs = [x.strip() for spec in (args.scenario or []) for x in spec.split(",") if x.strip()]
    mol = [x for x in specs if molecule_scenarios.named(x)]
    if mol and len(mol) != len(specs):
        raise InputError(f"bench: {', '.join(x for x in specs if x not in mol)} and {', '.join(mol)}: point and "
                         "molecule scenarios are benchmarked apart")
    return bool(mol)


def cmd_bench_molecules(args: argparse.Namespace) -> int:
    """bench on rigid molecules (harness/molecule_bench.py): --molecules FILE with --input, or molecule scenarios."""
    from mdcore import molecules

    from .. import device, molecule_bench, molecule_scenarios
    from ..verify import meta

    bad = [o for o, v in (("--suite", args.suite), ("--forcefield", args.forcefield), ("--potential", args.potential),
                          ("--sweep", args.sweep), ("--shard", args.shard), ("--cluster", args.cluster), ("--peers", args.peers), ("--resume", args.resume),
                          ("--dry-run", args.dry_run)) if v]
    if bad:
        raise InputError(f"bench: {', '.join(bad)} do(es) not apply to molecules yet")
    names = molecule_bench.check_strategies(args.strategies)
    launch = molecule_bench.parse_launch(args.launch)
    precisions = parse_precisions(args.precision)
    results.check_dir(args.out, "--out")
    if args.json:
        results.check_file(args.json, "--json", (".json",))
    if args.molecules:
        if not args.input:
            raise InputError("bench --molecules FILE needs --input (the molecules' .npz)")
        if args.scenario:
            raise InputError("bench --molecules FILE times --input's molecules; --scenario names scenarios instead")
        model = molecules.load(args.molecules)
        mols = molecules.read(args.input, model)
        cases = [{"case": f"input:{Path(args.input).name}", "mols": mols, "model": model}]
    else:
        if args.input:
            raise InputError("bench: --input holds molecules with --molecules FILE, not with molecule scenarios")
        sizes = [x.strip() for x in (args.n or "small").split(",") if x.strip()]
        for size in sizes:
            molecule_scenarios.parse_size(size)  # a bad size ends here, before any work
        specs = [x.strip() for spec in args.scenario for x in spec.split(",") if x.strip()]
        cases = molecule_bench.scenario_cases(specs, sizes, args.seed)
    for line in device.header_lines(device.header()):
        print(line)
    timing = {"warmup": args.warmup, "repeat": args.repeat, "min_time": args.min_time,
              "amortised": args.amortised or 0, "launch": launch}
    rows = molecule_bench.run(names, precisions, cases, timing, progress=None if args.quiet else print)
    doc = results.document("bench-molecules", rows, device.header(), meta(args.argv))
    paths = results.write(doc, args.out, args.name or "molecules", molecule_bench.COLUMNS,
                          copy_to=Path(args.json) if args.json else None)
    print()
    print(molecule_bench.table(rows))
    for line in molecule_bench.ranking(rows):
        print(line)
    print(f"\nwrote {', '.join(map(str, paths))}")
    return 1 if any(r["status"] == "error" for r in rows) else 0


def cmd_tune_molecules(args: argparse.Namespace) -> int:
    """tune on rigid molecules (harness/molecule_tune.py): the fastest verified molecule traversal."""
    from mdcore import molecules
    from strategies import molecules as traversals
    from strategies.cuda import device_status

    from .. import device, molecule_scenarios, molecule_tune, tune

    bad = [o for o, v in (("--forcefield", args.forcefield), ("--potential", args.potential),
                          ("--cache", args.cache), ("--experimental", args.experimental)) if v]
    if bad:
        raise InputError(f"tune: {', '.join(bad)} do(es) not apply to molecules")
    budget = tune.parse_budget(args.budget)
    if args.json:
        results.check_file(args.json, "--json", (".json",))
    if args.precision not in traversals.PRECISIONS:
        raise InputError(f"tune: molecules compute in {', '.join(traversals.PRECISIONS)}, not {args.precision}")
    if args.strategies:
        names = [x.strip() for x in args.strategies.split(",") if x.strip()]
        err = traversals.refuse(names, "tune")
        if err:
            raise err
    else:  # the GPU's traversals where there is one, else the CPU's
        want = "cuda" if device_status()[0] else "cpu"
        names = [n for n in traversals.TRAVERSALS if traversals.backend(n) == want]
    if args.molecules:
        if not args.input:
            raise InputError("tune --molecules FILE needs --input (the molecules' .npz)")
        model = molecules.load(args.molecules)
        mols = molecules.read(args.input, model)
        what = f"{args.input} ({', '.join(model.names)})"
    else:
        if args.input:
            raise InputError(f"tune: --input holds molecules with --molecules FILE, not with the scenario "
                             f"{args.scenario}")
        mols, model = molecule_scenarios.make(args.scenario, args.n, seed=args.seed)
        what = f"{args.scenario} seed={args.seed}"
    say = None if args.quiet else (lambda s: print(s, file=sys.stderr, flush=True))
    doc = molecule_tune.tune(mols, model, names, args.precision, budget, progress=say)
    doc.update(system=what, device=device.header())
    ranked = sorted((c for c in doc["candidates"] if c.get("median_ms") is not None and c["status"] != "n/a"),
                    key=lambda c: c["median_ms"])
    if not args.quiet:
        print(f"{'traversal':24s} {'backend':7s} {'median ms':>10s} {'samples':>8s}  status")
        for c in ranked:
            print(f"{c['strategy']:24s} {c['backend']:7s} {c['median_ms']:10.4f} {len(c['samples_ms']):8d}  "
                  f"{c['status']}" + (f" ({c['detail']})" if c["status"] == "failed" else ""))
        for c in doc["candidates"]:
            if c["status"] == "n/a":
                print(f"{c['strategy']:24s} {c['backend']:7s} {'':>10s} {'':>8s}  n/a ({c['detail']})")
    if doc["winner"] is None:
        say_err = "tune: every timed molecule traversal failed the check against " + doc["checked_against"]
        print(say_err, file=sys.stderr)
        return 1
    win = next(c for c in doc["candidates"] if c["strategy"] == doc["winner"])
    doc["answer"] = (f"{doc['winner']} ({win['backend']}, {args.precision}): {win['median_ms']:.4g} ms per evaluation "
                     f"of {len(mols.centres)} molecules of {what}; checked against {doc['checked_against']} "
                     f"(largest error {max(win['errors'].values()):.1e}, bound {doc['tolerance']:.1e})")
    print(doc["answer"])
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(doc, indent=1, default=str) + "\n")
    return 0


def _molecule_run_setup(args: argparse.Namespace):
    """What md on molecules checks before any work: (steps, molecules, model, a description)."""
    from mdcore import molecules

    from .. import md, molecule_scenarios

    bad = [o for o, v in (("--forcefield", args.forcefield), ("--potential", args.potential),
                          ("--out", args.out)) if v]
    if bad:
        raise InputError(f"md: {', '.join(bad)} do(es) not apply to molecules")
    if args.dt is None or args.temperature is None:
        raise InputError("md: molecules take --dt (time unit: length * sqrt(mass / energy) of the components file, "
                         "0.1 ps in angstrom, amu and kJ/mol) and --temperature (k_B T in its energy unit)")
    if args.json:
        results.check_file(args.json, "--json", (".json",))
    steps = args.steps or 1000
    md.check_run(steps, args.dt, args.sample)
    if args.molecules:
        if not args.input:
            raise InputError("md --molecules FILE needs --input (the molecules' .npz)")
        model = molecules.load(args.molecules)
        mols = molecules.read(args.input, model)
        return steps, mols, model, f"{args.input} ({', '.join(model.names)})"
    if args.input:
        raise InputError(f"md: --input holds molecules with --molecules FILE, not with the scenario {args.scenario}")
    mols, model = molecule_scenarios.make(args.scenario, args.n, seed=args.seed)
    return steps, mols, model, f"{args.scenario} seed={args.seed}"


UPKEEP_HELP = "md on molecules takes --launch upkeep=device|host (how a list traversal's device step decides a build)"


def _device_step_options(args: argparse.Namespace) -> dict:
    """The device MD step's choices (strategies.rigid_cuda.DeviceRigid): CUDA graphs (--no-graph: a launch a
    step), fused kicks (--no-fuse) and --launch upkeep=device|host; InputError for any other launch key."""
    upkeep = None
    for item in (args.launch or "").split(","):
        if not item.strip():
            continue
        key, _, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if key != "upkeep" or value not in ("device", "host"):
            raise InputError(f"md: --launch {item.strip()!r}: {UPKEEP_HELP}")
        upkeep = value
    return {"graph": not getattr(args, "no_graph", False), "fused": not getattr(args, "no_fuse", False),
            "upkeep": upkeep}


def _nve_report_molecules(args: argparse.Namespace) -> int:
    """md --nve-report on molecules: NVE drift per traversal and precision from one start."""
    from strategies import molecules as traversals

    from .. import device, rigid_md

    from strategies.cuda import device_status

    gpu = device_status()[0]
    names = [x.strip() for x in (args.strategies or ("fullshell_thread_cpu,fullshell_thread_csr" if gpu
                                                     else "fullshell_thread_cpu")).split(",") if x.strip()]
    err = traversals.refuse(names, "md --nve-report", reference=True)
    if err:
        raise err
    precisions = parse_precisions(args.precision) if args.precision else list(traversals.PRECISIONS)
    wrong = [p for p in precisions if p not in traversals.PRECISIONS]
    if wrong:
        raise InputError(f"md --nve-report: molecules compute in {', '.join(traversals.PRECISIONS)}, not "
                         f"{', '.join(wrong)}")
    steps, mols, model, what = _molecule_run_setup(args)
    options = _device_step_options(args)
    print(f"NVE report: {len(mols.centres)} molecules of {what}, cutoff {model.cutoff:g}"
          + (f" (switch from {model.switch:g})" if model.switch is not None else " (plain cutoff)")
          + (f", {args.equilibrate} steps rescaled to k_B T {args.temperature:g} first" if args.equilibrate else "")
          + f", {steps} steps of dt {args.dt:g}, a sample every {args.sample}")
    print(f"{'strategy':24s} {'precision':9s} {'drift /molecule/time':>21s} {'max |E-E0| /molecule':>21s} "
          f"{'ms/step':>9s}  k_B T")

    def say(r: dict) -> None:
        if r["status"] != "ok":
            print(f"{r['strategy']:24s} {r['precision']:9s} {r['status']}: {r.get('detail', '')}", flush=True)
            return
        where = f"  ({r['platform']}, {r['precision_used']})" if "platform" in r else ""
        print(f"{r['strategy']:24s} {r['precision']:9s} {r['drift']:+21.3e} {r['max_deviation']:21.3e} "
              f"{r['ms_per_step']:9.3f}  " + (f"{r['temperature']:.4g}" if "temperature" in r else "") + where,
              flush=True)

    rows = rigid_md.nve_report(mols, model, names, precisions, args.dt, steps, args.temperature, args.sample,
                               args.seed, equilibrate_steps=args.equilibrate, say=say, peers=not args.no_peers,
                               **options)
    if args.json:
        doc = {"schema_version": results.SCHEMA_VERSION, "kind": "nve-molecules", "device": device.header(),
               "system": what, "molecules": len(mols.centres), "steps": steps, "dt": args.dt, "sample": args.sample,
               "temperature0": args.temperature, "equilibrate_steps": args.equilibrate, "rows": rows}
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(doc, indent=1, default=str) + "\n")
    return 0


def cmd_md_molecules(args: argparse.Namespace) -> int:
    """md of rigid molecules (harness/rigid_md.py): --molecules FILE with --input, or a molecule scenario."""
    from strategies import molecules as traversals

    from .. import device, rigid_md

    if args.nve_report:
        return _nve_report_molecules(args)
    strategy = args.strategy or "fullshell_thread_cpu"
    err = traversals.refuse([strategy], "md", reference=True)
    if err:
        raise err
    precision = args.precision or "fp64"
    if precision not in traversals.PRECISIONS or (strategy == "reference" and precision != "fp64"):
        offered = "fp64" if strategy == "reference" else ", ".join(traversals.PRECISIONS)
        raise InputError(f"md: molecule forces come in {offered} from {strategy}, not {precision}")
    steps, mols, model, what = _molecule_run_setup(args)
    options = _device_step_options(args)
    if not args.quiet:
        print(f"md {strategy} {precision} {len(mols.centres)} molecules of {what}, cutoff {model.cutoff:g}: "
              + (f"{args.equilibrate} steps rescaled to k_B T {args.temperature:g}, then " if args.equilibrate else "")
              + f"{steps} steps of dt {args.dt:g} (NO_SQUISH, NVE), k_B T0 {args.temperature:g}, a sample every "
              f"{args.sample}")
    res = rigid_md.run(mols, model, strategy, args.dt, steps, args.temperature, args.sample, args.seed,
                       progress=None if args.quiet else print, equilibrate_steps=args.equilibrate, precision=precision,
                       **options)
    s = res["summary"]
    how = (f" (on the device: graphs {s['graph']}, list upkeep {s['upkeep']}, kicks {'fused' if s['fused'] else 'apart'})"
           if s.get("on_device") else "")
    print(f"md {strategy} {precision} {s['molecules']} molecules: {1e3 * s['seconds_per_step']:.3f} ms per step{how}; "
          "energy drift "
          f"{s['drift_per_molecule_per_time']:+.3e} per molecule per time unit, largest |E - E0| "
          f"{s['max_deviation_per_molecule']:.3e} per molecule, mean k_B T {s['temperature_mean']:.4g}")
    if args.json:
        doc = {"schema_version": results.SCHEMA_VERSION, "device": device.header(), "machine": device.machine_name(),
               **res}
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(doc, indent=1, default=str) + "\n")
    return 0

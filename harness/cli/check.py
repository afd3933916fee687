"""The correctness subcommands: list, verify, sanitize, forces, export."""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np

import strategies
from mdcore import MODES, InputError, check_precision

from .. import molecule_scenarios, results, scenarios
from .common import (COUNT, check_forcefield, experimental_arg, poison_arg, NONNEG_INT, POSITIVE, ROOT, input_problem, launch_params, parse_precisions, potential_args,
                     require_devices, say, size_arg)


def cmd_list(args: argparse.Namespace) -> int:
    from mdcore import potentials

    strat = [{"name": n, **strategies.attributes(c), "description": c.description, "launch": c.launch_defaults,
              "launch_internal": c.launch_internal}
             for n, c in ((n, strategies.REGISTRY[n]) for n in strategies.ordered())]
    scen = [{"name": s.name, "description": s.description, "sizes": s.sizes, "params": s.defaults}
            for s in scenarios.SCENARIOS.values()]
    pots = [{"name": n, "functor": c.functor, "spec": c().spec(), "description": (c.__doc__ or "").strip().splitlines()[0]}
            for n, c in potentials.REGISTRY.items()]
    pots.append({"name": "ff", "functor": "PairTable", "spec": "--forcefield FILE.json --input CONF",
                 "description": "typed Lennard-Jones with a pair table and point charges (reaction field, Ewald real "
                                "space) from a force-field file (docs/forcefield.md)"})
    precs = {p: m.help for p, m in MODES.items()}
    from strategies import molecules as traversals

    mols = [{"name": s.name, "description": s.description, "sizes": molecule_scenarios.SIZES,
             "strategies": list(traversals.TRAVERSALS)} for s in molecule_scenarios.SCENARIOS.values()]
    if args.json:
        print(json.dumps({"strategies": strat, "aliases": strategies.ALIASES, "scenarios": scen, "potentials": pots,
                          "precisions": precs, "molecule_scenarios": mols}, indent=1))
        return 0
    for title, group in (("strategies (<traversal>_<processor>_<variant>):", [s for s in strat if not s["experimental"]]),
                         ("experimental strategies (by name, experimental=true or --experimental):",
                          [s for s in strat if s["experimental"]])):
        print(title)
        for s in group:
            ok, why = strategies.create(s["name"]).available()
            flags = ",".join(k for k in ("newton3", "list_reuse") if s[k]) + ("" if s["deterministic"] else ",nondeterministic")
            print(f"  {s['name']:32s} {s['backend']:5s} {s['storage']:6s} {flags.strip(','):18s} {s['description']}"
                  + ("" if ok else f"  [unavailable: {why}]"))
    print("old names (aliases for one release): " + ", ".join(f"{a} -> {b}" for a, b in strategies.ALIASES.items()))
    print("scenarios:")
    for s in scen:
        sizes = ", ".join(f"{k} {v}" for k, v in s["sizes"].items())
        print(f"  {s['name']:18s} {s['description']}\n  {'':18s} sizes: {sizes}")
    print(f"molecule scenarios (docs/molecules.md; fp64 in reference, {', '.join(traversals.TRAVERSALS)}):")
    for m in mols:
        print(f"  {m['name']:26s} {m['description']}")
    print(f"  {'':26s} parameters (name:key=value): "
          + "; ".join(f"{k}: {v}" for k, v in molecule_scenarios.PARAMETERS.items()))
    print("potentials:")
    for p in pots:
        print(f"  {p['name']:18s} {p['spec']}  (functor {p['functor']})")
    print("precisions:")
    for p, h in precs.items():
        print(f"  {p:18s} {h}")
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    from .. import verify

    from ..bench import Shard

    check_forcefield(args)
    shard = Shard.parse(args.shard)
    if args.cluster:
        from .. import cluster

        cluster.parse(args.cluster)
        if args.replay:
            raise InputError("--cluster runs the matrix's cells, not --replay yet: replay without --cluster")
    if args.self_test:  # a planted read of unwritten memory, which poisoning must catch
        from .. import planted

        ok = planted.run()
        print(f"\nself-test: the planted read of unwritten memory was {'caught' if ok else 'NOT caught'} "
              "with poisoned memory")
        return 0 if ok else 1
    if args.molecules:
        return _verify_molecules(args)
    names = strategies.resolve(args.strategies, args.experimental)
    if args.strategies:
        require_devices(names)
    from .. import kspace_check, molecule_check

    # the reciprocal strategies' checks: with the whole default matrix (make verify; in a sharded run, share
    # 1), or where --kspace names them
    whole = not (args.input or args.replay or args.scenarios) and (shard is None or shard.index == 1)
    kspaces = kspace_check.selection(args.kspace) if args.kspace else (kspace_check.selection(None) if whole else [])
    # the molecule traversals' checks on the molecule scenarios: the same rule
    mols_named = None if args.molecule_strategies == "none" else args.molecule_strategies
    mol_names = (molecule_check.selection(mols_named) if mols_named or (whole and args.molecule_strategies is None)
                 else [])
    precisions = parse_precisions(args.precision)
    pots = args.potential or []
    if pots:  # a bad spec ends here, before any scenario is built
        from mdcore import potentials

        for spec in pots:
            potentials.parse(spec)
    results.check_dir(args.out, "--out")
    if args.json:
        results.check_file(args.json, "--json", (".json",))
    if args.input:
        cases = [verify.Case(f"input:{Path(args.input).name}", input_problem(args))]
    else:
        specs = args.scenarios.split(",") if args.scenarios else list(scenarios.DEFAULT_MATRIX)
        for spec in specs:
            scenarios.check(spec, args.size)  # bad names, parameters and sizes fail before any work
        say(f"building {len(specs)} scenario(s) at size {args.size}")
        cases = verify.build_cases(specs, size_arg(args.size), args.seed)
    if pots:  # the potential axis of the matrix: every case with each potential named
        cases = [verify.Case(f"{c.scenario}+{spec.partition(':')[0]}", scenarios.with_potential(c.problem, spec))
                 for c in cases for spec in pots]
    budgets = {k: v for k, v in (("cpu", args.max_checks_cpu), ("cuda", args.max_checks_gpu)) if v is not None}
    # a launch parameter some of the strategies lack leaves those n/a (the reason in each cell)
    chosen = strategies.create_each(names, launch_params(args.launch)) if args.launch else \
        [strategies.create(n) for n in names]
    if args.cluster:
        from ..cluster import Cluster, verify_matrix
        from ..gate import budgets as limits

        on = Cluster(args.cluster)
        say(f"cluster: {on.what}, {on.workers} worker(s)")
        try:
            rows = verify_matrix(on, chosen, cases, precisions, limits("verify", budgets),
                                 progress=None if args.quiet else say, shard=shard)
        finally:
            on.close()
    else:
        rows = verify.run_matrix(chosen, cases, precisions, budgets, progress=None if args.quiet else say,
                                 shard=shard)
    if args.replay:  # the list strategies along a recorded trajectory: every frame against the reference
        rows += verify.run_replay(chosen, cases, precisions, args.replay + 1, args.replay_every,
                                  progress=None if args.quiet else say, shard=shard)
    meta = verify.meta(sys.argv[1:] if args.argv is None else args.argv)
    if shard is not None:
        meta["shard"] = str(shard)
    from .. import device

    krows = kspace_check.run(kspaces, precisions, progress=None if args.quiet else say) if kspaces else []
    mrows = molecule_check.run(mol_names, precisions, molecule_check.scenario_cases(size_arg(args.size), args.seed),
                               progress=None if args.quiet else say) if mol_names else []
    paths = verify.write_reports(rows, meta, device.header(), Path(args.out), Path(args.json) if args.json else None,
                                 kspace_rows=krows, molecule_rows=mrows)
    ran, na_lines = verify.grouped(rows)  # the n/a cells one line per reason (the reports keep each)
    if ran:
        print(verify.table(ran))
    for line in na_lines:
        print(line)
    s = verify.summary(rows)
    print("\n" + "  ".join(f"{k}: {v}" for k, v in s["counts"].items()) + f"   reports: {', '.join(map(str, paths))}")
    for p, w in s["worst_by_precision"].items():
        print(f"worst {p:5s} " + "  ".join(f"{k} {v:.2e}" for k, v in w.items()))
    for backend, a in s["fixed_same_bits"].items():
        print(f"fixed point, {backend}: {len(a['strategies'])} strategies gave the same bits in {a['cases']} case(s)")
    if krows:
        print("\nEwald reciprocal part (kspace strategies):\n" + kspace_check.table(krows))
        k = {st: sum(r["status"] == st for r in krows) for st in ("pass", "FAIL", "n/a")}
        print("kspace " + "  ".join(f"{st}: {v}" for st, v in k.items()))
        if k["FAIL"]:
            return 1
    if mrows and _molecule_summary(mrows):
        return 1
    if not s["ok"]:
        return 1
    if s["counts"]["pass"] == 0:  # a matrix that checked nothing is no pass
        reasons = sorted({r["detail"] for r in rows if r["status"] == "n/a"})
        say(f"error: no cell of this matrix ran, every one is n/a ({'; '.join(reasons)[:300]})")
        return 2
    return 0


def _molecule_summary(rows: list[dict]) -> int:
    """Print the molecule section's table and counts; the number of FAIL rows."""
    from .. import molecule_check

    print("\nRigid molecules (molecule traversals against the float64 reference):\n" + molecule_check.table(rows))
    k = {st: sum(r["status"] == st for r in rows) for st in ("pass", "FAIL", "n/a")}
    print("molecules " + "  ".join(f"{st}: {v}" for st, v in k.items()))
    return k["FAIL"]


def _verify_molecules(args: argparse.Namespace) -> int:
    """verify --molecules FILE --input F: the molecule traversals on the user's molecules."""
    from mdcore import molecules

    from .. import device, molecule_check, verify

    if not args.input:
        raise InputError("verify --molecules FILE needs --input (the molecules' .npz)")
    bad = [o for o, v in (("--scenarios", args.scenarios), ("--strategies", args.strategies),
                          ("--forcefield", args.forcefield), ("--potential", args.potential),
                          ("--cluster", args.cluster), ("--shard", args.shard), ("--kspace", args.kspace),
                          ("--launch", args.launch)) if v]
    if bad:
        raise InputError(f"verify --molecules: {', '.join(bad)} do(es) not apply to molecules "
                         "(--molecule-strategies picks the traversals)")
    names = molecule_check.selection(None if args.molecule_strategies in (None, "none") else args.molecule_strategies)
    precisions = parse_precisions(args.precision)
    results.check_dir(args.out, "--out")
    if args.json:
        results.check_file(args.json, "--json", (".json",))
    model = molecules.load(args.molecules)
    mols = molecules.read(args.input, model)
    if mols.normalised:
        say(f"note: {mols.normalised} quaternion(s) of {args.input} were not of unit length and were normalised")
    case = molecule_check.input_case(mols, model, f"input:{Path(args.input).name} N={len(mols.centres)}")
    mrows = molecule_check.run(names, precisions, [case], progress=None if args.quiet else say)
    if args.replay:  # each traversal along a random walk of the molecules, its plan kept across the frames
        for name in names:
            for p in precisions:
                mrows += molecule_check.replay(name, p, case, args.replay, seed=1)
    meta = verify.meta(sys.argv[1:] if args.argv is None else args.argv)
    paths = verify.write_reports([], meta, device.header(), Path(args.out), Path(args.json) if args.json else None,
                                 molecule_rows=mrows)
    fails = _molecule_summary(mrows)
    print(f"reports: {', '.join(map(str, paths))}")
    if fails:
        return 1
    if not any(r["status"] == "pass" for r in mrows):
        say("error: no molecule check ran, every one is n/a (the molecule traversals compute in fp32, mixed and "
            "fp64)")
        return 2
    return 0


def cmd_sanitize(args: argparse.Namespace) -> int:
    from .. import sanitize

    molecule_targets = sanitize.molecule_targets(args.strategies) + sanitize.kspace_targets(args.strategies)
    points = None if args.strategies is None else ",".join(
        x.strip() for x in args.strategies.split(",")
        if x.strip() and not x.strip().startswith((sanitize.MOLECULE, sanitize.KSPACE)))
    names = strategies.resolve(points or "cuda", args.experimental) if points != "" else []
    cpu = [n for n in names if strategies.REGISTRY[n].backend != "cuda"]
    if cpu:
        raise InputError(f"sanitize checks GPU strategies; {', '.join(cpu)} run on the CPU")
    names = names + molecule_targets
    scenarios.check(args.scenario, args.size)
    if args.inner:
        return sanitize.inner(names, args.scenario, args.size, self_test=args.self_test)
    if args.logs:
        results.check_dir(args.logs, "--logs").mkdir(parents=True, exist_ok=True)
    require_devices([n for n in names if not n.startswith((sanitize.MOLECULE, sanitize.KSPACE))])
    if molecule_targets:
        from strategies.cuda import device_status

        ok, why = device_status()
        if not ok:
            raise InputError(f"the GPU molecule traversals and reciprocal strategies cannot run on this machine: {why}")
    tools = [t.strip() for t in args.tools.split(",") if t.strip()]
    args.jobs = args.jobs or min(4, os.cpu_count() or 1)
    if args.self_test:  # the tools must flag the planted race (racecheck) and overrun (memcheck)
        planted = sanitize.run(names, tools, self_test=True, jobs=args.jobs)
        want = {"memcheck", "racecheck"} & set(tools)
        caught = {r.tool for r in planted if r.errors}
        print(f"\nself-test: planted faults flagged by {', '.join(sorted(caught)) or 'no tool'}; "
              f"expected {', '.join(sorted(want))}")
        return 0 if want <= caught else 1
    found = sanitize.run(names, tools, args.scenario, args.size, jobs=args.jobs, repeat=args.repeat,
                         poison=args.poison, logs=args.logs)
    if args.repeat > 1:
        print(f"\n{args.repeat} rounds" + (", poisoned memory" if args.poison else "") + ":")
        for line in sanitize.tally(found):
            print(line)
    clean = [r for r in found if r.ok]
    na = [r for r in found if r.not_applicable]
    bad = [r for r in found if not r.ok and not r.not_applicable]
    print(f"\n{len(clean)} clean, {len(na)} n/a (the strategy does not apply to this problem), {len(bad)} with "
          f"errors, failures or not run ({len(names)} strategies x {len(tools)} tools, {args.scenario} {args.size}, "
          f"fp32 and fp64)")
    if not clean:
        print("nothing ran under the tools: no strategy was checked")
    return 1 if bad or not clean else 0


def cmd_forces(args: argparse.Namespace) -> int:
    results.check_file(args.out, "--out", (".npz",))
    if args.precision is None:
        args.precision = "fp64" if args.molecules else "fp32"
    if args.molecules:
        return _molecule_forces(args)
    check_forcefield(args)
    kspace = _kspace_choice(args)
    if args.strategy != "reference":
        require_devices([strategies.canonical(args.strategy)])
    problem = scenarios.with_potential(input_problem(args, check_precision(args.precision)), args.potential)
    pot = problem.potential
    ewald = None
    if pot.per_particle and pot.forcefield.method == "ewald":
        from mdcore.ewald import Ewald

        ewald = Ewald.make(pot.forcefield, problem.box.lengths, problem.box.periodic)
    elif args.kspace:
        raise InputError("--kspace computes Ewald's reciprocal part: the force field's electrostatics.method must be "
                         "ewald")
    if args.strategy == "reference":
        import reference

        ref = reference.compute(problem)
        forces, energy, virial, pairs = ref.forces, ref.energy, ref.virial, ref.pairs
    else:
        out = strategies.create(args.strategy).evaluate(problem)
        forces, energy, virial, pairs = out.forces, out.energy, out.virial, out.pairs
    extra: dict = {}
    part = ""
    if ewald is not None:
        rec, used = _reciprocal(problem, ewald, kspace, args)
        e_self, e_net = ewald.self_energy(pot.charges), ewald.net_charge_energy(pot.charges)
        extra = {"energy_real": np.float64(energy), "energy_reciprocal": np.float64(rec.energy),
                 "energy_self": np.float64(e_self), "energy_net_charge": np.float64(e_net)}
        forces = forces + rec.forces
        virial = virial + rec.virial + e_net * np.eye(3)
        energy = energy + rec.energy + e_self + e_net
        part = (f" (Ewald: real {float(extra['energy_real']):.10g} + reciprocal {rec.energy:.10g} [{used}, "
                f"{ewald.describe()}] + self {e_self:.10g}" + (f" + net charge {e_net:.10g}" if e_net else "") + ")")
    if not np.all(np.isfinite(forces)):
        raise InputError(f"{args.input}: the forces are not finite (two particles closer than the potential can "
                         "compute)")
    np.savez(args.out, forces=forces, energy=np.float64(energy), virial=virial, pairs=np.int64(pairs), **extra)
    print(f"{args.strategy} {problem.describe()} ({pot.describe()}): energy {energy:.10g}{part}, "
          f"pairs {pairs} -> {args.out}")
    return 0


def _molecule_forces(args: argparse.Namespace) -> int:
    """--molecules: rigid molecules from --input (.npz: positions, quaternions, components, box) with
    the components file's sites; forces, torques, energy and virial per molecule system. The float64
    float64 reference computes them, or a CPU molecule traversal (strategies/molecules_cpu.py) in fp32, mixed or
    fp64."""
    from mdcore import molecules
    from strategies import molecules as traversals

    if args.forcefield or args.potential:
        raise InputError("--molecules names the interactions: give it without --forcefield or --potential")
    err = traversals.refuse([args.strategy], "--molecules", reference=True)
    if err:
        raise err
    check_precision(args.precision)
    if args.strategy != "reference" and args.precision not in traversals.PRECISIONS:
        raise InputError(f"--molecules: molecules compute in {', '.join(traversals.PRECISIONS)}, not "
                         f"{args.precision} (the point strategies' mode)")
    model = molecules.load(args.molecules)
    mols = molecules.read(args.input, model)
    if mols.normalised:
        say(f"note: {mols.normalised} quaternion(s) of {args.input} were not of unit length and were normalised")
    if args.strategy == "reference":
        from reference.molecules import compute

        out = compute(mols, model)
    else:
        ok, why = traversals.applicable(args.strategy, mols, model)
        if not ok:
            raise InputError(f"--molecules: {args.strategy} cannot run {args.input}: {why}")
        out = traversals.evaluate(args.strategy, mols, model, args.precision)
    np.savez(args.out, forces=out["forces"], torques=out["torques"], energy=np.float64(out["energy"]),
             virial=out["virial"], pairs=np.int64(out["pairs"]))
    print(f"{args.strategy} {len(mols.centres)} molecules ({', '.join(model.names)}), box {mols.box.describe()}, cutoff "
          f"{model.cutoff:g}: energy {out['energy']:.10g}, molecule pairs {out['pairs']} -> {args.out}")
    return 0


def _kspace_choice(args: argparse.Namespace) -> str | None:
    """--kspace, checked by name before any work (None: the default for the strategy named)."""
    if not args.kspace:
        return None
    from strategies import kspace

    if args.kspace != "reference":
        kspace.create(args.kspace)  # an unknown name ends here, in one line
    return args.kspace


def _reciprocal(problem, ewald, kspace: str | None, args: argparse.Namespace):
    """The reciprocal part of an Ewald problem: the float64 reference with --strategy reference (or
    --kspace reference), else the kspace strategy named (default: the GPU's with a GPU strategy, the
    CPU's otherwise), in the precision asked where it computes in it, else fp64."""
    from strategies import kspace as ks

    charges = problem.potential.charges
    if kspace == "reference" or (kspace is None and args.strategy == "reference"):
        from reference.ewald import reciprocal

        r = reciprocal(problem.positions, charges, ewald)
        return ks.Result(r["energy"], r["forces"], r["virial"]), "float64 reference"
    gpu = args.strategy != "reference" and strategies.REGISTRY[strategies.canonical(args.strategy)].backend == "cuda"
    name = kspace or (ks.DEFAULT_GPU if gpu else ks.DEFAULT_CPU)
    s = ks.create(name)
    ok, why = s.available()
    if not ok:
        raise InputError(f"--kspace {name}: {why}")
    precision = args.precision if s.supports(args.precision)[0] else "fp64"
    return s.evaluate(problem.positions, charges, ewald, precision), f"{name} {precision}"


def cmd_export(args: argparse.Namespace) -> int:
    from ..io import write_configuration

    results.check_file(args.out, "--out", (".xyz", ".extxyz", ".npz"))
    if molecule_scenarios.named(args.scenario):
        return _export_molecules(args)
    p = scenarios.make(args.scenario, size_arg(args.n), seed=args.seed)
    pot = p.potential
    if not pot.per_particle:
        write_configuration(args.out, p.positions, p.box)
        print(f"{p.describe()} -> {args.out}")
        return 0
    # types and charges go with the positions, the force field beside them: --input and --forcefield read both
    from mdcore import forcefield

    from ..io import Particles

    out = Path(args.out)
    ff_path = out.with_name(out.stem + ".forcefield.json")
    doc = forcefield.to_json(pot.forcefield)
    names = [pot.forcefield.types[t] for t in pot.types]
    write_configuration(out, p.positions, p.box, Particles(p.positions, p.box, species=names, charges=pot.charges))
    ff_path.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"{p.describe()} ({pot.describe()}) -> {out}, its force field -> {ff_path}")
    return 0


def _export_molecules(args: argparse.Namespace) -> int:
    """A molecule scenario: the molecules (.npz: positions, quaternions, components, box, periodic) and
    their components file beside them (--input and --molecules read both)."""
    name = args.scenario.partition(":")[0]
    doc = molecule_scenarios.components_doc(args.scenario)  # with the spec's switch, if any
    out = Path(args.out)
    if out.suffix.lower() != ".npz":
        raise InputError(f"--out {out}: molecules are written as .npz (positions, quaternions, components, box)")
    mols, model = molecule_scenarios.make(args.scenario, args.n, seed=args.seed)
    comp_path = out.with_name(out.stem + ".components.json")
    molecule_scenarios.write(out, mols, model)
    comp_path.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"{name} {len(mols.centres)} molecules seed={args.seed}, box {mols.box.describe()} -> {out}, its "
          f"components -> {comp_path}")
    return 0


def add_list(sub) -> None:
    p = sub.add_parser("list", help="registered strategies, scenarios and precision modes")
    p.add_argument("--json", action="store_true", help="the same as JSON: attributes, launch parameters, scenarios, potentials")
    p.set_defaults(fn=cmd_list)


def add_verify(sub) -> None:
    p = sub.add_parser("verify", help="correctness matrix against the float64 reference")
    p.add_argument("--strategies", help="comma list of names, family prefixes (fullshell_) or attribute filters "
                                            "(traversal=c08, newton3=true+backend=cuda) (default: all)")
    p.add_argument("--scenarios", help=f"comma list, 'name:key=value' for parameters (default: {','.join(scenarios.DEFAULT_MATRIX)})")
    experimental_arg(p)
    p.add_argument("--precision", default="all", help="comma list of fp32, mixed, fp64, fixed, or all")
    p.add_argument("--size", default="small", help="tiny, small, medium, large, or a particle count")
    p.add_argument("--seed", type=NONNEG_INT, default=1, help="random seed of the scenarios")
    p.add_argument("--input", help="verify on this configuration instead of the scenarios (.xyz or .npz)")
    p.add_argument("--json", help="also write the JSON report here")
    p.add_argument("--launch", help="launch parameters key=value,... for every strategy named (e.g. rebuild=never: "
                                    "the list strategies' negative control)")
    p.add_argument("--replay", type=NONNEG_INT, default=0,
                   help="list strategies: also replay this many frames of a recorded NVE trajectory of each periodic "
                        "scenario, the list kept and rebuilt by its own trigger, frames checked against the reference")
    p.add_argument("--replay-every", type=COUNT, default=1, help="check every M-th replayed frame (default every one)")
    p.add_argument("--shard", metavar="I/N", help="run only share I of N of the matrix's cells (round robin), for a "
                                                  "job array; `harness merge` joins the files")
    p.add_argument("--kspace", help="the Ewald reciprocal strategies to check (Madelung, the float64 reference, finite "
                                    "differences): all, none or a comma list; default all with the whole default "
                                    "matrix (no --scenarios, --input or --replay; in share 1 of a sharded run)")
    p.add_argument("--molecules", metavar="FILE.json", help="rigid molecules: a components file, with --input the "
                                                             "molecules' .npz; checks the molecule traversals on them "
                                                             "instead of the point matrix")
    p.add_argument("--molecule-strategies", help="the molecule traversals to check against the float64 reference on "
                                                 "the molecule scenarios (at --size, at most small): all, none or a "
                                                 "comma list; default all with the whole default matrix")
    p.add_argument("--cluster", metavar="WHERE", help="the matrix's cells as tasks on Dask workers: local, local:K or "
                                                      "tcp://host:port (bench --cluster says more; not with --replay)")
    p.add_argument("--out", default=str(Path("reports") / "verify"), help="report folder (default reports/verify under the current folder)")
    p.add_argument("--max-checks-cpu", type=POSITIVE, help="skip CPU cells with more distance checks (default 4e9)")
    p.add_argument("--max-checks-gpu", type=POSITIVE, help="skip GPU cells with more distance checks (default 4e12)")
    p.add_argument("--quiet", action="store_true", help="no line per cell while it runs, only the table and summary")
    potential_args(p)
    p.add_argument("--potential", action="append",
                   help="replace each scenario's potential: e.g. 'coordination:r0=1,n=6,m=12,d0=0,dmax=2.5' "
                        "(PLUMED's coordination number) or 'lj:cutoff=3'; repeatable: the matrix gains a potential "
                        "axis (every case with each)")
    p.add_argument("--self-test", action="store_true",
                   help="plant a read of unwritten memory in a CPU and a GPU strategy and check that poisoned "
                        "memory (--poison, on for the self-test) makes verify fail it")
    poison_arg(p)
    p.set_defaults(fn=cmd_verify)


def add_sanitize(sub) -> None:
    p = sub.add_parser("sanitize", help="compute-sanitizer (memcheck, racecheck, synccheck, initcheck) per GPU strategy")
    p.add_argument("--strategies", help="comma list or family prefixes, molecule:<traversal> for a GPU molecule "
                                        "traversal and kspace:<name> for a GPU reciprocal strategy (default: every "
                                        "GPU strategy, GPU molecule traversal and GPU reciprocal strategy)")
    experimental_arg(p)
    p.add_argument("--tools", default=",".join(("memcheck", "racecheck", "synccheck", "initcheck")),
                   help="comma list of compute-sanitizer tools")
    p.add_argument("--scenario", default="lj_liquid", help="a small periodic system (default lj_liquid)")
    p.add_argument("--size", default="small", help="default small: 5 cells per axis, which every GPU strategy supports")
    p.add_argument("--self-test", action="store_true",
                   help="run a kernel with a planted race and overrun instead; pass when the tools flag it")
    p.add_argument("--jobs", type=COUNT, default=None,
                   help="sanitizer processes at once (default min(4, CPUs)); each checks one strategy under one tool")
    p.add_argument("--repeat", type=COUNT, default=1,
                   help="run every strategy under every tool this many times, several at once (--jobs), and say "
                        "'clean in k of K' for each: a fault that comes and goes with what shares the GPU")
    p.add_argument("--logs", help="a folder for the whole output of each sanitizer process that was not clean")
    p.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    poison_arg(p)
    p.set_defaults(fn=cmd_sanitize)


def add_forces(sub) -> None:
    p = sub.add_parser("forces", help="forces, energy, virial and pairs of one configuration")
    p.add_argument("--strategy", required=True, help="a registered strategy, or 'reference' (float64 CPU)")
    p.add_argument("--input", required=True, help="the configuration: .xyz or .npz")
    p.add_argument("--precision", help="fp32, mixed, fp64 or fixed (default fp32; with --molecules fp64)")
    p.add_argument("--out", required=True, help="output .npz")
    potential_args(p)
    p.add_argument("--potential", help="replace the potential: e.g. 'coordination:r0=1,n=6,m=12,d0=0,dmax=2.5' "
                                       "(PLUMED's coordination number) or 'lj:cutoff=3'")
    p.add_argument("--molecules", metavar="FILE.json", help="rigid molecules: a components file (sites, mixing, "
                                                             "cutoff); --input then holds the molecules (.npz: "
                                                             "positions, quaternions, components, box); writes forces, "
                                                             "torques, energy and virial (--strategy reference, "
                                                             "allpairs_thread_cpu or fullshell_thread_cpu)")
    p.add_argument("--kspace", help="with an Ewald force field: the strategy of the reciprocal part (kspace_..., "
                                    "python -m harness list; or reference); default the GPU's kspace_thread_rows "
                                    "beside a GPU strategy, kspace_thread_cpu otherwise, the float64 reference beside "
                                    "--strategy reference")
    p.set_defaults(fn=cmd_forces)


def add_export(sub) -> None:
    p = sub.add_parser("export", help="write a scenario's configuration to .xyz or .npz")
    p.add_argument("--scenario", required=True, help="scenario spec, e.g. lj_liquid or gaussian:sigma=20; or a molecule "
                                                     "scenario (spce_water, stockmayer, two_centre_lj_quadrupole): "
                                                     ".npz, its components file beside it")
    p.add_argument("--n", default="small", help="size name or particle (molecule) count")
    p.add_argument("--seed", type=NONNEG_INT, default=1, help="random seed of the scenarios")
    p.add_argument("--out", required=True, help="the file to write: .xyz, .extxyz or .npz")
    p.set_defaults(fn=cmd_export)

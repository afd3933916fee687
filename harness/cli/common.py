"""What the subcommands share: argument types that refuse bad values in one line, the input
configuration, launch parameters and sweeps, and the device check for named strategies."""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

import strategies
from mdcore import FLOAT_PRECISIONS, MODES, PRECISIONS, InputError, LennardJones, Problem, check_precision, parse_value

ROOT = Path(__file__).resolve().parent.parent.parent


def say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def md_precision(name: str) -> str:
    """A precision the MD loop integrates in (the float modes)."""
    p = check_precision(name)
    if MODES[p].fixed:
        raise InputError(f"md: precision {p} is for force evaluations (verify, bench, forces); the MD loop integrates "
                         f"in {', '.join(FLOAT_PRECISIONS)}")
    return p


def parse_precisions(text: str) -> list[str]:
    if text == "all":
        return list(PRECISIONS)
    return [check_precision(p.strip()) for p in text.split(",") if p.strip()]


class Parser(argparse.ArgumentParser):
    """argparse that reports a bad command line in one line (and exit 2), not the usage block."""

    def error(self, message: str):  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (--help shows the options)\n")


def cutoff_type(text: str) -> float | None:
    if text.strip().lower() in ("none", "inf"):
        return None
    try:
        v = float(text)
    except ValueError:
        v = math.nan
    if not (math.isfinite(v) and v > 0.0):
        raise argparse.ArgumentTypeError(f"cutoff must be a number > 0 or 'none', got {text!r}")
    return v


def number_type(kind: type, low: float, low_ok: bool = True, what: str = "a number"):
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


COUNT = number_type(int, 1, what="a whole number")
NONNEG_INT = number_type(int, 0, what="a whole number")
NONNEG = number_type(float, 0.0)
POSITIVE = number_type(float, 0.0, low_ok=False)


def potential_args(ap: argparse.ArgumentParser) -> None:
    g = ap.add_argument_group("potential (with --input)")
    g.add_argument("--cutoff", type=cutoff_type, default=2.5, help="cutoff radius, or 'none' (default 2.5)")
    g.add_argument("--epsilon", type=POSITIVE, default=1.0, help="LJ well depth")
    g.add_argument("--sigma", type=POSITIVE, default=1.0, help="LJ length scale")
    g.add_argument("--shift", action="store_true", help="shift the pair energy to zero at the cutoff")
    g.add_argument("--forcefield", metavar="FILE.json",
                   help="instead of the four above: particle types with a Lennard-Jones pair table and point charges "
                        "with reaction field or Ewald real space, from a force-field file (docs/forcefield.md); the "
                        "types and charges come with --input")


def input_problem(args: argparse.Namespace, precision: str = "fp32") -> Problem:
    """The configuration of --input with Lennard-Jones from --cutoff, --epsilon, --sigma, --shift, or
    with the force-field file of --forcefield (the particles' types and charges from the input)."""
    from harness.io import read_configuration

    if getattr(args, "forcefield", None):
        return forcefield_problem(args, precision)
    pos, box = read_configuration(args.input)
    lj = LennardJones(epsilon=args.epsilon, sigma=args.sigma, cutoff=args.cutoff, shift=args.shift)
    return Problem.make(pos, box, lj, precision=precision, label=f"input:{Path(args.input).name} N={len(pos)}")


def check_forcefield(args: argparse.Namespace) -> None:
    """--forcefield comes with --input and without --potential: refused in one line before any work."""
    if not getattr(args, "forcefield", None):
        return
    if not getattr(args, "input", None):
        raise InputError("--forcefield needs --input: the particles' types and charges come with the configuration "
                         "(.npz keys types and charges, or extended XYZ's species and charge columns)")
    if getattr(args, "potential", None):
        raise InputError("--forcefield and --potential both name the interactions: give one")


def forcefield_problem(args: argparse.Namespace, precision: str = "fp32") -> Problem:
    """--input's particles with --forcefield's types, pair table and charges (mdcore.forcefield)."""
    from mdcore import forcefield
    from mdcore.potentials.pair_table import potential

    from harness.io import read_particles

    check_forcefield(args)
    ff = forcefield.load(args.forcefield)
    c = read_particles(args.input)
    n = len(c.positions)
    names = c.names()
    if names is not None:
        types = ff.type_index(names)
    elif c.types is not None:
        types = np.asarray(c.types, np.int32)
    elif ff.ntypes == 1:
        types = np.zeros(n, np.int32)
    else:
        raise InputError(f"{args.input}: the particles carry no types, and the force field lists {ff.ntypes} "
                         f"({', '.join(ff.types)})")
    ff.check_particles(types, c.charges, c.box.lengths, c.box.periodic)
    pot = potential(ff, types, c.charges)
    return Problem.make(c.positions, c.box, pot, precision=precision,
                        label=f"input:{Path(args.input).name}+{Path(args.forcefield).name} N={n}")


def require_devices(names: list[str]) -> None:
    """Strategies named explicitly must be able to run here."""
    for name in names:
        ok, why = strategies.create(name).available()
        if not ok:
            raise InputError(f"strategy {name} cannot run on this machine: {why}")


def launch_params(text: str | None) -> dict:
    out: dict = {}
    for item in filter(None, (text or "").split(",")):
        key, eq, val = item.partition("=")
        if not eq:
            raise InputError(f"--launch: {item!r} is not key=value")
        out[key] = parse_value(val)
    return out


def size_arg(text: str) -> str | int:
    from harness import scenarios

    return scenarios.parse_size(text)


def sweep_params(items: list[str] | None) -> dict[str, list]:
    """--sweep key=v1:v2:v3 (repeatable) -> {key: [v1, v2, v3]}."""
    out: dict[str, list] = {}
    for item in items or []:
        key, eq, vals = item.partition("=")
        if not eq or not vals:
            raise InputError(f"--sweep: {item!r} is not key=value:value:...")
        out[key] = [parse_value(v) for v in vals.split(":")]
    return out


def progress_bar(total: int, desc: str = "bench", unit: str = "point"):
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, leave=False, disable=not sys.stderr.isatty())


def count(n: int, word: str, plural: str | None = None) -> str:
    """'1 point', '3 points'."""
    return f"{n} {word if n == 1 else (plural or word + 's')}"


def poison_arg(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--poison", action="store_true",
                    help="fill every new device allocation and CPU work array with all bits set (NaN, -1), so "
                         "that a read of unwritten memory fails every time (also MDFORCE_POISON=1)")


def experimental_arg(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--experimental", action="store_true",
                    help="also the experimental strategies (measured designs kept for comparison) in 'all', family "
                         "prefixes and filters")

"""python -m harness: the command line.

  list, verify, sanitize, forces, export   (check.py)
  bench, tune, md, profile, timeline       (timing.py)
  report, compare, claims                  (reading.py)
  mc, ewald                                (kspace.py)

Exit codes: 0 success; 1 a check failed (a verification cell, a sanitizer finding, a regression in
compare); 2 bad input, one line naming it; 3 an unexpected error (a bug: the traceback, then one
line).
"""
from __future__ import annotations

import argparse
import traceback

from mdcore import InputError
from strategies import StrategyError

from . import check, kspace, reading, timing
from .common import Parser, say

DESCRIPTION = """Benchmark and verification harness for short-range GPU molecular-dynamics force strategies.

Exit codes: 0 success; 1 a check failed (a verification cell, a sanitizer finding, a regression in
compare); 2 bad input, one line naming it; 3 an unexpected error (a bug: the traceback, then one
line)."""
COMMANDS = (check.add_list, check.add_verify, timing.add_bench, reading.add_compare, reading.add_claims,
            check.add_sanitize, timing.add_profile, timing.add_timeline, reading.add_report, timing.add_tune,
            check.add_forces, timing.add_md, check.add_export, timing.add_results, reading.add_merge,
            reading.add_docs, kspace.add_mc, kspace.add_ewald)


def parser() -> argparse.ArgumentParser:
    ap = Parser(prog="python -m harness", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True, metavar="command")
    for add in COMMANDS:
        add(sub)
    return ap


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    args.argv = argv
    if getattr(args, "poison", False):
        from mdcore import poison

        poison.enable()
    try:
        return args.fn(args)
    except (InputError, StrategyError) as e:
        say(f"error: {e}")
        return 2
    except MemoryError as e:
        say(f"error: out of host memory ({e or 'MemoryError'}); take a smaller N")
        return 2
    except KeyboardInterrupt:
        say("interrupted")
        return 130
    except Exception as e:  # a bug: its traceback, and a status that no check result uses
        traceback.print_exc()
        say(f"internal error (a bug in the harness, please report it with the traceback above): "
             f"{type(e).__name__}: {e}")
        return 3

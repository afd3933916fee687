"""Shared set-up for the asv suite: the project runs in place from the repository root.

A small grid by default (every strategy on the LJ liquid, small, fp32); MDFORCE_ASV_FULL=1
runs the full sweep; MDFORCE_ASV_STRATEGIES selects strategies by name or attributes (the
harness's --strategies syntax, e.g. "newton3=true+backend=cuda"). A point a strategy cannot run (no GPU here, no cutoff, too few cells)
raises NotImplementedError in setup, which asv records as skipped.
"""
import functools
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# in place from the checkout in the existing environment; an environment asv built for a commit
# (virtualenv, conda) has that commit installed, and the checkout's code must not shadow it
if os.environ.get("ASV_ENV_TYPE") not in ("virtualenv", "conda", "mamba", "rattler") and str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import mdcore  # noqa: E402
import reference  # noqa: E402
import strategies  # noqa: E402
from harness import scenarios  # noqa: E402

FULL = os.environ.get("MDFORCE_ASV_FULL") == "1"

STRATEGIES = strategies.resolve(os.environ.get("MDFORCE_ASV_STRATEGIES") or "all")
SCENARIOS = ["lj_liquid", "gaussian", "one_per_cell", "allpairs_cube"] if FULL else ["lj_liquid"]
SIZES = ["small", "medium", "large"] if FULL else ["small"]
PRECISIONS = list(mdcore.PRECISIONS) if FULL else ["fp32"]


@functools.lru_cache(maxsize=8)
def problem(scenario, size, precision):
    return scenarios.make(scenario, size, seed=1, precision=precision)


@functools.lru_cache(maxsize=4)
def ref(scenario, size):
    return reference.compute(problem(scenario, size, "fp64"))


def prepared(name, scenario, size, precision):
    """(strategy, problem, plan) warmed up, or NotImplementedError (asv: skipped) with the reason."""
    s = strategies.create(name)
    p = problem(scenario, size, precision)
    ok, why = s.supports(p)
    if not ok:
        raise NotImplementedError(why)
    plan = s.prepare(p)
    plan.upload()
    for _ in range(2):  # compilation and first launches stay out of the timings
        s.compute(plan)
    plan.synchronize()
    return s, p, plan

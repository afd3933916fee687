"""Whether a point runs: the strategy applies to the problem, and its distance checks fit the
budget (O(N^2) work at large N would otherwise run for hours). verify and bench both ask here;
a point that does not run carries the reason as its n/a detail."""
from __future__ import annotations

import math

from mdcore import Problem

# distance checks per evaluation above which a point is n/a: verify runs one evaluation per
# cell, bench several per point (one evaluation of the CPU bench budget takes about half a
# minute on 16 cores; a timed point runs about seven)
BUDGETS = {"verify": {"cpu": 4e9, "cuda": 4e12}, "bench": {"cpu": 2e10, "cuda": 2e13}}
FLAGS = {"cpu": "--max-checks-cpu", "cuda": "--max-checks-gpu"}


def budgets(what: str, overrides: dict | None = None) -> dict:
    """The budgets of `what` (verify or bench), with command-line overrides per backend."""
    return {**BUDGETS[what], **{k: v for k, v in (overrides or {}).items() if v is not None}}


def gate(strategy, problem: Problem, budget: dict, what: str, check_device: bool = True):
    """(runs, reason, distance checks or None). check_device=False judges the problem only (a
    sweep planned for a GPU on a machine without one)."""
    ok, why = strategy.supports(problem, check_device)
    if not ok:
        return False, why, None
    checks = strategy.work(problem).get("distance_checks")
    limit = budget.get(strategy.backend, math.inf)
    if checks is not None and checks > limit:
        return False, (f"{checks:.2g} distance checks per evaluation, over the {what} budget of {limit:.2g} for "
                       f"{strategy.backend} strategies ({FLAGS.get(strategy.backend, '--max-checks')})"), checks
    return True, "", checks

"""The report's sections, each a function of the loaded results (harness.report.load) that fills one
render.Section; strategies are picked by their attributes (traversal, processor, storage), never by
name prefix.

  answer.py   verdict, correctness, wins, the three timing columns, before and after
  thesis.py   the thesis's figures, CPU against GPU, the MarDyn processors, precision
  context.py  NVE drift, peers, roofline, every strategy against the fastest, claims, method
  bodies.py   the ranking as the pair body gets heavier (types, charges)
  ewald.py    Ewald's reciprocal part: the kspace strategies against (charge, k) pairs, OpenMM beside
"""
from .answer import before_after, changes, correctness, repeat_check, timings, verdict, wins
from .bodies import bodies
from .common import SECTIONS
from .ewald import ewald
from .mc import mc
from .molecules import molecules
from .context import _against_fastest, claims, drift, issue_bound_ms, method, peers, roofline
from .thesis import cpu_gpu, parity, precision, thesis

__all__ = ["SECTIONS", "_against_fastest", "before_after", "bodies", "changes", "claims", "correctness", "cpu_gpu", "drift",
           "ewald", "issue_bound_ms", "mc", "method", "molecules", "parity", "peers", "precision", "repeat_check", "roofline", "thesis", "timings",
           "verdict", "wins"]

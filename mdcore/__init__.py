"""The core beneath the reference, the strategies and the harness: the problem (box,
positions, potential, precision), what a strategy returns, the potentials, the precision
record, the two error types and NVTX ranges. It imports nothing of the project's other
packages.

Layers: mdcore at the bottom; reference and strategies above it (each importing only mdcore);
harness on top (scenarios, verify, bench, profile, report, CLI).
"""
from .errors import InputError, StrategyError
from .potentials import LennardJones, Potential
from .precision import FIXED_SCALE, FLOAT_PRECISIONS, MODES, PRECISIONS, Precision, check_precision, poison_value
from .problem import AXES, Box, Forces, Problem, parse_value

__all__ = ["AXES", "Box", "FIXED_SCALE", "FLOAT_PRECISIONS", "Forces", "InputError", "LennardJones", "MODES",
           "PRECISIONS", "Potential", "Precision", "Problem", "StrategyError", "check_precision", "parse_value",
           "poison_value"]

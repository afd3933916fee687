"""nvcc.covering: the launch variants CI compiles, every pair of two template arguments' values."""
from itertools import product

from strategies import nvcc


def test_every_pair_of_values_is_covered_by_fewer_specialisations():
    exprs = [f"k<{a}, {b}, {c}, {d}>" for a, b, c, d in product(("float", "double"), (1, 2, 4), (0, 1, 2), ("true", "false"))]
    picked = nvcc.covering(exprs)
    assert len(picked) < len(exprs) / 2 and set(picked) <= set(exprs)
    want = set().union(*(nvcc._pairs(e) for e in exprs))
    assert set().union(*(nvcc._pairs(e) for e in picked)) == want


def test_kept_and_argumentless_expressions_stay():
    exprs = ["convert_fixed", "k<float, 1>", "k<float, 2>", "k<double, 1>", "j<3>"]
    picked = nvcc.covering(exprs, keep=["k<float, 2>"])
    assert {"convert_fixed", "k<float, 2>", "j<3>"} <= set(picked)
    assert picked == [e for e in exprs if e in picked]  # in the given order


def test_template_arguments_split_at_the_top_level():
    assert nvcc._template_args("f<float, Vec<int, 2>, 3>") == ("f", ["float", "Vec<int, 2>", "3"])

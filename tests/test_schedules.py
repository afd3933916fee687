"""Traversal schedules, exhaustively: every neighbouring cell pair exactly once, colours disjoint."""
import itertools
from collections import Counter

import numpy as np
import pytest

from strategies import schedules as S

SHAPES = [
    ((3, 3, 3), (True, True, True)),
    ((4, 4, 4), (True, True, True)),
    ((3, 4, 7), (True, True, True)),   # odd and even, non-cubic
    ((5, 6, 3), (True, False, True)),
    ((4, 3, 5), (False, False, False)),
    ((1, 2, 6), (False, False, False)),
    ((3, 3, 2), (True, True, False)),  # slab
    ((6, 5, 1), (True, True, False)),
]


def true_neighbour_pairs(n, periodic):
    """Unordered pairs of distinct cells that touch (distance <= 1 per axis, images
    included), and every cell with itself: what a traversal must visit once."""
    pairs = set()
    for c in itertools.product(*[range(k) for k in n]):
        for d in itertools.product((-1, 0, 1), repeat=3):
            e = []
            for a in range(3):
                k = c[a] + d[a]
                if periodic[a]:
                    k %= n[a]
                elif not 0 <= k < n[a]:
                    break
                e.append(k)
            else:
                pairs.add(frozenset((S.linear(c, n), S.linear(e, n))))
    return pairs


@pytest.mark.parametrize("n, periodic", SHAPES)
def test_c08_visits_every_neighbour_pair_exactly_once(n, periodic):
    seen = Counter()
    for colour in S.c08_colours(n, periodic):
        for base in colour:
            for a, b in S.c08_cell_pairs(base, n, periodic):
                seen[frozenset((a, b))] += 1
    want = true_neighbour_pairs(n, periodic)
    assert set(seen) == want
    assert max(seen.values()) == 1, [p for p, k in seen.items() if k > 1][:5]


@pytest.mark.parametrize("n, periodic", SHAPES)
def test_c08_bases_of_one_colour_touch_disjoint_cells(n, periodic):
    colours = S.c08_colours(n, periodic)
    assert 8 <= len(colours) <= 27 or min(n) == 1
    total = 0
    for colour in colours:
        touched = Counter()
        for base in colour:
            cells = {c for pair in S.c08_cell_pairs(base, n, periodic) for c in pair}
            touched.update(cells)
        assert max(touched.values(), default=1) == 1
        total += len(colour)
    # every base appears once: n per periodic axis, n + 1 per open axis
    assert total == np.prod([k if p else k + 1 for k, p in zip(n, periodic)])


@pytest.mark.parametrize("n, periodic", SHAPES)
def test_fullshell_neighbours_cover_each_pair_from_both_sides(n, periodic):
    seen = Counter()
    for c in itertools.product(*[range(k) for k in n]):
        cells = S.neighbour_cells(c, n, periodic)
        assert len(cells) == len(set(cells)) and S.linear(c, n) in cells
        for e in cells:
            seen[(S.linear(c, n), e)] += 1
    assert {frozenset(p) for p in seen} == true_neighbour_pairs(n, periodic)
    assert all(seen[(b, a)] == 1 for (a, b) in seen)  # symmetric, once each way


@pytest.mark.parametrize("n", [(2, 4, 4), (4, 1, 4)])
def test_c08_refuses_fewer_than_three_periodic_cells(n):
    ok, why = S.c08_applicable(n, (True, True, True))
    assert not ok and "at least 3 cells" in why
    with pytest.raises(ValueError, match="at least 3 cells"):
        S.c08_colours(n, (True, True, True))
    assert S.c08_applicable(n, (False, False, False))[0]


def test_c08_table_is_self_plus_thirteen_directions():
    d = {tuple(b - a) for a, b in S.C08_PAIRS[1:]}
    assert len(d) == 13 and not any(tuple(-np.array(v)) in d for v in d) and (0, 0, 0) not in d
    assert tuple(S.C08_PAIRS[0, 0]) == tuple(S.C08_PAIRS[0, 1]) == (0, 0, 0)


@pytest.mark.parametrize("n, periodic", SHAPES)
def test_work_counts_match_enumeration(rng, n, periodic):
    counts = rng.integers(0, 5, size=int(np.prod(n)))
    full = sum(counts[c] * counts[e] for c in range(len(counts))
               for e in S.neighbour_cells(np.unravel_index(c, n), n, periodic)) - counts.sum()
    assert S.fullshell_checks(counts, n, periodic) == full
    if S.c08_applicable(n, periodic)[0]:
        c08 = sum(counts[a] * (counts[a] - 1) // 2 if a == b else counts[a] * counts[b]
                  for colour in S.c08_colours(n, periodic) for base in colour
                  for a, b in S.c08_cell_pairs(base, n, periodic))
        assert S.c08_checks(counts, n, periodic) == c08


@pytest.mark.parametrize("L, rc, factor, want", [(10.0, 2.5, 1.0, 4), (7.5, 2.5, 1.0, 3), (9.99, 2.5, 1.0, 3),
                                                 (10.0, 2.5, 1.5, 2), (2.0, 2.5, 1.0, 1)])
def test_grid_dims(L, rc, factor, want):
    n = S.grid_dims([L] * 3, rc, factor)
    assert list(n) == [want] * 3 and (L / n[0] >= rc * factor or n[0] == 1)


def test_grid_dims_rounding_edge():
    """L = k * rc computed in floating point can make floor(L / rc) one too large."""
    rc = 0.1
    L = 3 * rc  # 0.30000000000000004
    n = S.grid_dims([L, L, L], rc)
    assert np.all(L / n >= rc)
    assert list(S.grid_dims([1.0] * 3, 0.1, 0.5)) == [20] * 3  # cells of half the cutoff
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="factor must be a positive number"):
            S.grid_dims([1.0] * 3, 0.1, bad)


# --- parity-plane traverser -------------------------------------------------------------

PARITY_SHAPES = SHAPES + [((5, 5, 5), (True, True, True)), ((3, 3, 3), (False, True, False)),
                          ((2, 7, 3), (False, True, True)), ((1, 1, 1), (False, False, False))]


@pytest.mark.parametrize("n, periodic", PARITY_SHAPES)
def test_parity_visits_every_neighbour_pair_exactly_once(n, periodic):
    seen = Counter()
    for layer in S.parity_launches(n, periodic):
        for a, b in S.layer_pairs(layer, n, periodic):
            seen[frozenset((a, b))] += 1
    assert set(seen) == true_neighbour_pairs(n, periodic)
    assert max(seen.values()) == 1, [tuple(p) for p, k in seen.items() if k > 1][:5]


@pytest.mark.parametrize("n, periodic", PARITY_SHAPES)
def test_parity_no_cell_in_two_pairs_of_one_launch(n, periodic):
    launches = S.parity_launches(n, periodic)
    assert launches[0]["dx"] == launches[0]["dy"] == launches[0]["dz"] == 0  # the intra-cell pass
    for layer in launches:
        pairs = S.layer_pairs(layer, n, periodic)
        assert pairs, "empty launches are left out"
        touched = Counter(c for a, b in pairs for c in {a, b})
        assert max(touched.values()) == 1, layer
    # 13 directions, 2 launches each, a third along odd periodic layer axes (without empties)
    assert len(launches) <= 1 + 13 * 3


def test_parity_launch_parameters_follow_the_document():
    """Host-side parameters for +x on a 4x3x5 periodic grid: start cell, the 2D grid of a layer
    (y by z), grid offsets (one step in y, in z, and two layers in x) and the direction."""
    n = (4, 3, 5)
    launches = S.parity_launches(n, (True, True, True))
    px = [L for L in launches if (L["dx"], L["dy"], L["dz"]) == (1, 0, 0)]
    assert [int(L["start"]) for L in px] == [0, 15]  # layers x = 0, 2 and x = 1, 3
    for L in px:
        assert (L["du"], L["dv"], L["nl"]) == (3, 5, 2)
        assert (L["gu"], L["gv"], L["gl"]) == (5, 1, 30)
    odd = S.parity_launches((5, 3, 3), (True, True, True))
    assert sum((L["dx"], L["dy"], L["dz"]) == (1, 0, 0) for L in odd) == 3  # boundary layer x = 4


def test_parity_directions_are_one_half_space():
    d = {tuple(v) for v in S.PARITY_DIRECTIONS}
    assert len(d) == 13 and not any(tuple(-np.array(v)) in d for v in d)
    for v in itertools.product((-1, 0, 1), repeat=3):
        if any(v):
            assert (v in d) != (tuple(-np.array(v)) in d), v  # each of the 26 offsets, one way


@pytest.mark.parametrize("n", [(2, 4, 4), (4, 4, 1)])
def test_parity_refuses_fewer_than_three_periodic_cells(n):
    ok, why = S.parity_applicable(n, (True, True, True))
    assert not ok and "at least 3 cells" in why
    with pytest.raises(ValueError, match="at least 3 cells"):
        S.parity_launches(n, (True, True, True))


@pytest.mark.parametrize("n, periodic", [((3, 3, 3), (True,) * 3), ((4, 3, 5), (True, False, True)),
                                         ((3, 4, 3), (False,) * 3)])
@pytest.mark.parametrize("mode", ["twopass", "shared"])
def test_wbp_job_table_bound_holds_for_crowded_and_empty_cells(rng, n, periodic, mode):
    """The warp-block job table is sized on the host before any count is known: the bound must
    hold for any occupancy (empty cells, one crowded cell, many cells over 32)."""
    from strategies.parity import job_table_bound, warp_blocks

    cells = int(np.prod(n))
    for counts in (rng.integers(0, 70, cells), np.eye(1, cells, 4, dtype=np.int64)[0] * 5000,
                   np.full(cells, 33), np.zeros(cells, np.int64)):
        layers = S.parity_launches(n, periodic)
        jobs = sum(int(L["du"] * L["dv"] * L["nl"]) * (2 if mode == "twopass" and (L["dx"] or L["dy"] or L["dz"])
                                                        else 1) for L in layers)
        assert warp_blocks(counts, n, periodic, mode) <= job_table_bound(jobs, int(counts.sum()))

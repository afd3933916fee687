"""research/l1_model.py (CPU): the quarter-warp rule as research/l1_probe.py measured it, and the row
orders it compares, each a permutation of every row."""
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "research"))
import l1_model  # noqa: E402


def _warp(slots):
    """One warp of 32 rows of one entry each."""
    nbr = np.asarray(slots, np.int64).reshape(32, 1)
    return nbr, np.ones(32, np.int64)


def test_the_rule_counts_distinct_chunks_per_bank_group_per_quarter_warp():
    lanes = np.arange(32)
    assert l1_model.wavefronts(*_warp(8 * lanes + (lanes % 8))) == (4, 1)  # distinct groups: the floor
    assert l1_model.wavefronts(*_warp(8 * lanes)) == (32, 1)  # one group, a chunk per lane
    assert l1_model.wavefronts(*_warp(np.repeat([5, 13, 21, 29], 8))) == (4, 1)  # a quarter reads one chunk
    assert l1_model.wavefronts(*_warp(8 * lanes + (lanes % 4))) == (8, 1)  # two lanes a group
    nbr, ln = _warp(8 * lanes + (lanes % 8))
    ln[:8] = 0  # a quarter with no entry left costs nothing
    assert l1_model.wavefronts(nbr, ln) == (3, 1)


@pytest.fixture(scope="module")
def rows():
    nbr, ln = l1_model.rows_of("lj_liquid", 2048)
    return nbr[:1024], ln[:1024]


def test_rows_are_the_list_within_r_list(rows):
    nbr, ln = rows
    assert 60 < ln.mean() < 90  # 4/3 pi 2.8^3 0.8442 = 77.6 partners at the LJ density
    for s in range(0, 1024, 97):
        row = nbr[s, :ln[s]]
        assert s not in row and len(set(row.tolist())) == len(row)
        assert (nbr[s, ln[s]:] == -1).all()


def test_every_order_permutes_each_row_and_the_joint_orders_gather_cheaper(rows):
    nbr, ln = rows
    cost = {}
    for name, order in l1_model.ORDERS.items():
        out = order(nbr, ln)
        for s in range(len(ln)):
            assert sorted(out[s, :ln[s]].tolist()) == sorted(nbr[s, :ln[s]].tolist()), (name, s)
        w, r = l1_model.wavefronts(out, ln)
        cost[name] = w / r
    assert cost["broadcast"] < cost["colour"] < cost["built"]
    assert cost["rotate"] < cost["built"] and cost["anchor"] < cost["built"]
    assert cost["broadcast"] >= 4.0  # the floor: a wavefront per quarter-warp
    assert cost["rotate"] < cost["group_place"] < cost["built"]  # a row-wide order beats any group's

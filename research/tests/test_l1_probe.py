"""research/l1_probe.py's orders (CPU): the schedules it replays on the GPU are what they claim."""
import sys
from pathlib import Path

import numpy as np
import pytest

from strategies import nvcc

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "research"))
import l1_probe  # noqa: E402


def test_colour_gives_each_step_distinct_bank_groups_and_keeps_every_entry():
    rng = np.random.default_rng(4)
    rows = [sorted(rng.choice(5000, size=int(rng.integers(40, 90)), replace=False).tolist()) for _ in range(8)]
    out = l1_probe.colour(rows)
    assert len({len(r) for r in out}) == 1
    for t in range(len(out[0])):
        groups = [r[t] % 8 for r in out if r[t] >= 0]
        assert len(groups) == len(set(groups)), t
    for a, b in zip(rows, out, strict=True):
        assert sorted(q for q in b if q >= 0) == sorted(a)
    # no more steps than the larger of the longest row and the fullest bank group
    lower = max(max(len(r) for r in rows), max(sum(q % 8 == g for r in rows for q in r) for g in range(8)))
    assert len(out[0]) <= lower + 2


def test_bank_groups_permutes_inside_whole_groups_only():
    row = list(range(100, 180, 3))  # 27 entries: 3 whole groups and a partial one
    got = l1_probe.bank_groups(5, row)
    assert got[24:] == row[24:]
    for g in range(0, 24, 8):
        assert sorted(got[g:g + 8]) == row[g:g + 8]
        assert sum((q - 5) % 8 == p for p, q in enumerate(got[g:g + 8])) >= sum(
            (q - 5) % 8 == p for p, q in enumerate(row[g:g + 8]))


def test_table_pads_to_an_even_number_of_steps_with_empty_ones():
    """The texture replay takes two steps a turn: an odd longest row gets one empty step (-1)."""
    idx, steps = l1_probe.table([[[1, 2, 3]] + [[4]] * 31])
    assert steps == 4 and idx.shape == (1, 4, 32)
    assert idx[0, :, 0].tolist() == [1, 2, 3, -1] and (idx[0, 1:, 1:] == -1).all()


def test_an_unknown_load_path_is_one_line_and_exit_2(capsys):
    assert l1_probe.main(["--paths", "ldg,lds"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["l1_probe: unknown path 'lds' (ldg, ldg8, ldg4, tex, mix)"]


@pytest.mark.skipif(nvcc.nvcc() is None, reason="nvcc not found on PATH")
def test_the_probe_kernels_compile_for_each_path():
    """research/l1_probe.py's five kernels (ldg of 16, 8 and 4 bytes, tex, mix) compile as it names them,
    none spilling."""
    code, out, _ = nvcc.compile_unit("l1probe.cu", ["l1_replay<float4>", "l1_replay<float2>", "l1_replay<float>",
                                                  "l1_replay_tex<false>", "l1_replay_tex<true>"],
                                     include=(str(Path(__file__).resolve().parents[1]),))
    assert code == 0, out
    reports = nvcc.resources(out)
    assert len(reports) == 5 and all(r.spill_stores == 0 for r in reports)

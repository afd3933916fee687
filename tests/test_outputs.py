"""Every output option of every subcommand alike: a missing folder is created, an unwritable place
is refused in one line naming the option (exit 2) before any work."""
from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli import main

DATA = Path(__file__).parent / "data" / "h200"
BENCH, VERIFY = str(DATA / "bench-full.json"), str(DATA / "verify-replay-never.json")
CPU = "fullshell_thread_cpu"

# (command with {path} where the output goes, the option's name, the file or folder the path names)
OUTPUTS = [
    (["verify", "--strategies", CPU, "--scenarios", "uniform", "--size", "tiny", "--precision", "fp32", "--quiet",
      "--out", "{path}"], "--out", "folder"),
    (["verify", "--strategies", CPU, "--scenarios", "uniform", "--size", "tiny", "--precision", "fp32", "--quiet",
      "--out", "{tmp}", "--json", "{path}.json"], "--json", "file"),
    (["bench", "--strategies", CPU, "--n", "256", "--repeat", "3", "--out", "{path}"], "--out", "folder"),
    (["bench", "--strategies", CPU, "--n", "256", "--repeat", "3", "--out", "{tmp}", "--json", "{path}.json"],
     "--json", "file"),
    (["export", "--scenario", "lj_liquid", "--n", "tiny", "--out", "{path}.xyz"], "--out", "file"),
    (["forces", "--strategy", "reference", "--input", "{input}", "--out", "{path}.npz"], "--out", "file"),
    (["report", VERIFY, "--out", "{path}"], "--out", "folder"),  # a small input: the folder is the point
    (["compare", BENCH, BENCH, "--json", "{path}.json"], "--json", "file"),
    (["claims", "--out", "{path}.md"], "--out", "file"),
    (["claims", "--json", "{path}.json"], "--json", "file"),
    (["docs", "--out", "{path}"], "--out", "folder"),
    (["md", "--strategy", CPU, "--n", "tiny", "--steps", "4", "--sample", "2", "--quiet", "--out", "{path}.xyz"],
     "--out", "file"),
    (["md", "--strategy", CPU, "--n", "tiny", "--steps", "4", "--sample", "2", "--quiet", "--json", "{path}.json"],
     "--json", "file"),
    (["tune", "--n", "tiny", "--strategies", CPU, "--budget", "1s", "--frames", "3", "--quiet",
      "--cache", "{path}.json"], "--cache", "file"),
    (["tune", "--n", "tiny", "--strategies", CPU, "--budget", "1s", "--frames", "3", "--quiet", "--no-cache",
      "--json", "{path}.json"], "--json", "file"),
]
# commands that need a GPU for their work: only the refusal is checked here
REFUSED_ONLY = [
    (["sanitize", "--logs", "{path}"], "--logs"),
    (["profile", "--out", "{path}"], "--out"),
    (["timeline", "--out", "{path}"], "--out"),
]


def _argv(cmd, path: str, input_file: str = "", tmp: str = "") -> list[str]:
    """{path}: the output under test; {input}: a configuration file; {tmp}: where another output goes."""
    return [a.replace("{path}", path).replace("{input}", input_file).replace("{tmp}", tmp) for a in cmd]


@pytest.fixture(scope="module")
def input_file(tmp_path_factory) -> str:
    p = tmp_path_factory.mktemp("in") / "in.npz"
    assert main(["export", "--scenario", "lj_liquid", "--n", "tiny", "--out", str(p)]) == 0
    return str(p)


@pytest.mark.parametrize("cmd, option", [(c, o) for c, o, _ in OUTPUTS] + REFUSED_ONLY,
                         ids=lambda v: v if isinstance(v, str) else "-".join(v[:1] + [a for a in v if a.startswith("--") and a in ("--out", "--json", "--cache", "--logs")]))
def test_an_unwritable_place_is_refused_in_one_line(cmd, option, capsys, input_file, tmp_path):
    code = main(_argv(cmd, "/proc/x/out", input_file, str(tmp_path / "other")))
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2, err
    assert len(lines) == 1 and "Traceback" not in err and option in lines[0] and "/proc/x" in lines[0], err


@pytest.mark.parametrize("cmd, option, kind", OUTPUTS, ids=lambda v: v if isinstance(v, str) else v[0])
def test_a_missing_folder_is_created(cmd, option, kind, tmp_path, input_file, capsys):
    path = tmp_path / "missing" / "deeper" / "out"
    argv = _argv(cmd, str(path), input_file, str(tmp_path / "other"))
    assert main(argv) == 0, capsys.readouterr().err
    named = Path(argv[argv.index(option) + 1])
    assert named.is_dir() if kind == "folder" else named.is_file(), named
    if kind == "folder":
        assert any(named.iterdir())


def test_the_readme_of_a_ranking_must_exist(tmp_path, capsys):
    """--readme rewrites the ranking between the markers of an existing file: a missing one is refused."""
    code = main(["report", BENCH, "--out", str(tmp_path / "r"), "--readme", str(tmp_path / "no" / "README.md")])
    err = capsys.readouterr().err
    assert code == 2 and "--readme" in err and "no such file" in err
    assert not (tmp_path / "r").exists()


def test_a_box_of_three_cutoffs_runs_c08_and_parity(tmp_path):
    """Cells of side at least the cutoff: a periodic box of exactly three cutoffs holds three a side."""
    import numpy as np

    import strategies
    from mdcore import Box, LennardJones, Problem

    pos = np.random.default_rng(1).random((300, 3)) * 7.5
    p = Problem.make(pos, Box((7.5, 7.5, 7.5), (True, True, True)), LennardJones(cutoff=2.5))
    for name in ("c08_thread_cpu", "c08_thread_csr", "parity_thread_csr", "parity_warpblock_shared_mutex"):
        assert strategies.create(name).supports(p, check_device=False) == (True, ""), name
    p2 = Problem.make(pos * 0.99, Box((7.425,) * 3, (True, True, True)), LennardJones(cutoff=2.5))
    ok, why = strategies.create("c08_thread_cpu").supports(p2)
    assert not ok and "floor(7.425 / 2.5) = 2" in why

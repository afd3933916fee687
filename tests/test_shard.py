"""bench and verify --shard i/n (a job array's shares of one sweep) and `harness merge`: the shares
together hold the whole run's points in its order, each once; bad shares and bad merges end in one
line, exit 2."""
import json

import pytest

from harness import bench, cli

BENCH = ["bench", "--strategies", "allpairs_thread_cpu,c08_thread_cpu", "--scenario", "uniform", "--scenario",
         "gaussian:sigma=4", "--n", "tiny,400", "--repeat", "2", "--min-time", "0", "--warmup", "1", "--amortised", "0",
         "--quiet"]
VERIFY = ["verify", "--strategies", "allpairs_thread_cpu,c08_thread_cpu,fullshell_thread_cpu", "--scenarios",
          "lj_liquid,uniform", "--size", "tiny", "--precision", "fp64,fixed", "--quiet"]


def _key(r):
    return (r["strategy"], r["scenario"], r["n"], r["precision"], r.get("potential"))


def test_bench_shares_merge_into_the_whole_sweep(tmp_path):
    assert cli.main([*BENCH, "--out", str(tmp_path), "--name", "whole"]) == 0
    for i in (1, 2, 3):
        assert cli.main([*BENCH, "--out", str(tmp_path), "--name", f"s{i}", "--shard", f"{i}/3"]) == 0
    shares = [json.loads((tmp_path / f"s{i}.json").read_text()) for i in (1, 2, 3)]
    assert all(len(s["rows"]) > 0 for s in shares) and shares[1]["meta"]["shard"] == "2/3"
    assert cli.main(["merge", *(str(tmp_path / f"s{i}.json") for i in (3, 1, 2)), "--out", str(tmp_path),
                     "--name", "merged"]) == 0
    whole = json.loads((tmp_path / "whole.json").read_text())
    merged = json.loads((tmp_path / "merged.json").read_text())
    assert [_key(r) for r in merged["rows"]] == [_key(r) for r in whole["rows"]]
    assert [r["status"] for r in merged["rows"]] == [r["status"] for r in whole["rows"]]
    assert "--shard" not in merged["meta"]["command"] and len(merged["meta"]["merged"]) == 3


def test_verify_shares_merge_into_the_whole_matrix(tmp_path):
    assert cli.main([*VERIFY, "--out", str(tmp_path / "whole")]) == 0
    for i in (1, 2):
        assert cli.main([*VERIFY, "--out", str(tmp_path / f"s{i}"), "--shard", f"{i}/2"]) == 0
    assert cli.main(["merge", str(tmp_path / "s1" / "verify.json"), str(tmp_path / "s2" / "verify.json"),
                     "--out", str(tmp_path / "merged")]) == 0
    whole = json.loads((tmp_path / "whole" / "verify.json").read_text())
    merged = json.loads((tmp_path / "merged" / "verify.json").read_text())
    key = lambda r: (r["strategy"], r["scenario"], r["precision"])  # noqa: E731
    assert sorted(map(key, merged["rows"])) == sorted(map(key, whole["rows"]))
    assert {key(r): r["status"] for r in merged["rows"]} == {key(r): r["status"] for r in whole["rows"]}
    assert {key(r): r.get("digest") for r in merged["rows"]} == {key(r): r.get("digest") for r in whole["rows"]}
    assert merged["summary"]["counts"] == whole["summary"]["counts"]


def test_a_share_takes_every_nth_point():
    s = bench.Shard(2, 3)
    assert [s.take() for _ in range(7)] == [False, True, False, False, True, False, False]
    assert bench.Shard(2, 3).share(7) == 2 and bench.Shard(1, 3).share(7) == 3


@pytest.mark.parametrize("shard, words", [("3/2", "--shard 3/2: the share must be 1 to 2"),
                                          ("two", "--shard 'two' is not i/n"), ("0/4", "the share must be 1 to 4")])
def test_a_bad_shard_is_refused_in_one_line(tmp_path, capsys, shard, words):
    assert cli.main([*BENCH, "--out", str(tmp_path), "--shard", shard]) == 2
    assert words in capsys.readouterr().err
    assert cli.main([*VERIFY, "--out", str(tmp_path), "--shard", shard]) == 2
    assert words in capsys.readouterr().err
    assert not list(tmp_path.iterdir())  # nothing written


def test_bad_merges_are_refused_by_name(tmp_path, capsys):
    def share(name, shard, command="python -m harness bench --strategies a", gpu="NVIDIA H200", commit="abc"):
        doc = {"kind": "bench", "device": {"gpu": gpu, "commit": commit},
               "meta": {"command": f"{command} --shard {shard} --name {name}", **({"shard": shard} if shard else {})},
               "rows": [{"strategy": "a", "scenario": "s", "n": 1, "precision": "fp32", "status": "ok"}]}
        (tmp_path / f"{name}.json").write_text(json.dumps(doc))
        return str(tmp_path / f"{name}.json")

    out = ["--out", str(tmp_path / "m")]
    cases = [([share("a", "1/3"), share("b", "2/3")], "share(s) 3/3 missing"),
             ([share("c", "1/2"), share("d", "1/2")], "share 1/2 given twice"),
             ([share("e", "1/2"), share("f", "2/2", command="python -m harness bench --strategies b")],
              "shares of different commands"),
             ([share("g", "1/2"), share("h", "2/2", gpu="NVIDIA A100")], "ran on different devices"),
             ([share("i", "1/2"), share("j", "2/2", commit="def")], "at different commits"),
             ([share("k", ""), share("l", "2/2")], "is not a share (made without --shard)"),
             ([share("o", "1/2")], "name the files of every share")]
    for files, words in cases:
        assert cli.main(["merge", *files, *out]) == 2
        err = capsys.readouterr().err
        assert words in err and len(err.strip().splitlines()) == 1, err
    (tmp_path / "bad.json").write_text("{")
    assert cli.main(["merge", str(tmp_path / "bad.json"), share("p", "2/2"), *out]) == 2
    assert "is not a result file" in capsys.readouterr().err

"""`python -m harness merge`: the shares of one sweep, run as a job array (`bench --shard i/n`,
`verify --shard i/n`), joined into the one result file the whole run would have written.

Every share must be there once, of the same command (but --shard, --name, --out, --json), the same
commit and the same GPU model; the rows come back in the sweep's order (share i holds points
i - 1, i - 1 + n, ...). A verify merge checks the fixed-point same-bits rule again across all the
shares' rows, which no single share could.
"""
from __future__ import annotations

import json
import shlex
from pathlib import Path

from mdcore import InputError

_OWN = ("--shard", "--name", "--out", "--json")  # what differs between the shares of one sweep


def _load(path: Path) -> dict:
    try:
        doc = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise InputError(f"merge: {path} is not a result file ({e.__class__.__name__})") from None
    if not isinstance(doc, dict) or doc.get("kind") not in ("bench", "verify") or not isinstance(doc.get("rows"), list):
        raise InputError(f"merge: {path} is not a bench or verify result (JSON with kind and rows)")
    return doc


def _sweep_of(command: str) -> str:
    """The command without the options that tell the shares apart."""
    words, out, skip = shlex.split(command), [], False
    for w in words:
        if skip:
            skip = False
            continue
        key = w.split("=", 1)[0]
        if key in _OWN:
            skip = "=" not in w
            continue
        out.append(w)
    return " ".join(out)


def _share(doc: dict, path: Path) -> tuple[int, int]:
    text = (doc.get("meta") or {}).get("shard")
    if not text:
        raise InputError(f"merge: {path} is not a share (made without --shard)")
    try:
        i, n = (int(v) for v in str(text).split("/"))
    except ValueError:
        raise InputError(f"merge: {path} names its share {text!r}, not i/n") from None
    return i, n


def merge(paths: list[Path]) -> dict:
    """The merged document (kind, device, meta, rows) of the shares in `paths`."""
    if len(paths) < 2:
        raise InputError("merge: name the files of every share (at least two)")
    docs = [(p, _load(p)) for p in paths]
    kinds = {d["kind"] for _, d in docs}
    if len(kinds) > 1:
        raise InputError(f"merge: the files hold different kinds of results ({', '.join(sorted(kinds))})")
    gpus = {str((d.get("device") or {}).get("gpu")) for _, d in docs}
    if len(gpus) > 1:
        raise InputError(f"merge: the shares ran on different devices ({', '.join(sorted(gpus))}); results of two "
                         "devices are kept apart")
    commits = {str((d.get("device") or {}).get("commit")) for _, d in docs}
    if len(commits) > 1:
        raise InputError(f"merge: the shares ran at different commits ({', '.join(sorted(commits))})")
    shares = {}
    for p, d in docs:
        i, n = _share(d, p)
        if i in shares and shares[i][0] == n:
            raise InputError(f"merge: share {i}/{n} given twice ({shares[i][1]} and {p})")
        shares[i] = (n, p, d)
    counts = {n for n, _, _ in shares.values()}
    if len(counts) > 1:
        raise InputError(f"merge: the files are shares of different splits ({', '.join(f'/{n}' for n in sorted(counts))})")
    n = counts.pop()
    missing = [f"{i}/{n}" for i in range(1, n + 1) if i not in shares]
    if missing:
        raise InputError(f"merge: share(s) {', '.join(missing)} missing; have {', '.join(f'{i}/{n}' for i in sorted(shares))}")
    sweeps = {_sweep_of((d.get("meta") or {}).get("command", "")) for _, _, d in shares.values()}
    if len(sweeps) > 1:
        raise InputError("merge: the files are shares of different commands: " + " | ".join(sorted(sweeps)))
    ordered = [shares[i][2] for i in range(1, n + 1)]
    # share 1 may end with the peers' rows (bench --peers: they run with share 1 only)
    points = [[r for r in d["rows"] if r.get("backend") != "peer"] for d in ordered]
    peers = [r for d in ordered for r in d["rows"] if r.get("backend") == "peer"]
    rows = []
    for k in range(max(map(len, points))):
        rows += [share[k] for share in points if k < len(share)]
    rows += peers
    first = ordered[0]
    meta = {k: v for k, v in (first.get("meta") or {}).items() if k != "shard"}
    meta["command"] = sweeps.pop()
    meta["merged"] = [str(shares[i][1]) for i in range(1, n + 1)]
    return {"kind": first["kind"], "device": first.get("device") or {}, "meta": meta, "rows": rows}


def write(doc: dict, out: Path, name: str) -> list[Path]:
    """The merged result as the whole run would have written it (bench: <name>.json and .csv;
    verify: verify.json, .csv and .md in out, name unused)."""
    from . import sweep, verify

    rows = doc["rows"]
    if doc["kind"] == "verify":
        for r in rows:  # the same-bits rule again, across every share's cells
            if r.get("status") == "FAIL" and str(r.get("detail", "")).startswith("fixed point: not the same bits as"):
                r["status"], r["detail"] = "pass", ""
        verify.same_bits(rows)
        return verify.write_reports(rows, doc["meta"], doc["device"], out)
    return sweep.write(rows, doc["device"], doc["meta"], out, name)

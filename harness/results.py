"""One writer for every result file (verify, bench): <name>.csv (one row per cell or point,
nested fields as JSON text) and <name>.json (schema version, kind, device header, meta, rows
and what else the kind carries), optionally a markdown file and a copy of the JSON elsewhere.

Schema versions: 1 (no version field, before the core refactor: old strategy names, `bin_ms`),
2 (kind field, registry names, `build_ms`). harness.report reads both.
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from mdcore import InputError

SCHEMA_VERSION = 2
KINDS = ("verify", "bench", "ewald", "bench-molecules")


def _creatable(p: Path, what: str) -> None:
    """p can be created: its nearest existing ancestor is a directory a file can be created in. Tried
    with a file of its own (removed at once): permissions do not say it for root, nor for a read-only
    or virtual file system (/proc), where os.access answers yes and the creation then fails."""
    a = p.parent
    while not a.exists() and a != a.parent:
        a = a.parent
    if not a.is_dir():
        raise InputError(f"{what}: cannot create {p}: {a} is not a directory")
    if not os.access(a, os.W_OK | os.X_OK):
        raise InputError(f"{what}: cannot create {p}: no permission to write in {a}")
    _probe(a, p, what)


def _probe(a: Path, p: Path, what: str) -> None:
    """A file created in folder a and removed at once, or one line saying why a cannot take p."""
    try:
        fd, probe = tempfile.mkstemp(dir=a, prefix=".write-probe-")
    except OSError as e:
        where = f"cannot write in {p}" if a == p else f"cannot create {p}: {a} takes no new file"
        raise InputError(f"{what}: {where} ({e.strerror})") from None
    os.close(fd)
    os.unlink(probe)


def check_name(name, what: str = "--name"):
    """A result file's name stem (NAME.json, NAME.csv in the --out folder): refused before any work
    where it would name another folder or a hidden file. None passes (the command's default)."""
    if name is None:
        return None
    if not name or name.startswith(".") or "/" in name or "\\" in name or "\0" in name:
        raise InputError(f"{what} {name!r}: a file name without folders (NAME.json and NAME.csv go in --out)")
    return name


def check_dir(path, what: str) -> Path:
    """A folder results will be written into (created when missing): refused before any work when
    it is a file or cannot be written."""
    p = Path(path)
    if p.exists():
        if not p.is_dir():
            raise InputError(f"{what}: {p} is a file, not a folder")
        if not os.access(p, os.W_OK | os.X_OK):
            raise InputError(f"{what}: no permission to write in {p}")
        _probe(p, p, what)
    else:
        _creatable(p, what)
    return p


def check_file(path, what: str, suffixes: tuple[str, ...]) -> Path:
    """A file a result will be written to: the suffix says its format (refused otherwise, so
    that the file written is the one named), and it can be written; its folder is created
    where it is missing (every output option alike), before any work."""
    p = Path(path)
    if p.is_dir():
        raise InputError(f"{what}: {p} is a folder; name a file ({' or '.join(suffixes)})")
    if p.suffix.lower() not in suffixes:
        raise InputError(f"{what}: {p} must end in {' or '.join(suffixes)} (the format written)")
    if p.exists():
        try:  # opened for appending, as it is, and closed: os.access does not say it for root
            open(p, "ab").close()
        except OSError:
            raise InputError(f"{what}: no permission to overwrite {p}") from None
    else:
        _creatable(p, what)
        p.parent.mkdir(parents=True, exist_ok=True)
    return p


def _default(o):
    return o.item() if hasattr(o, "item") else str(o)


def frame(rows: list[dict], first: list[str] | None = None):
    """The rows as a pandas DataFrame (nested fields as JSON text), `first` columns first."""
    import pandas as pd

    flat = [{k: (json.dumps(v, default=_default) if isinstance(v, (dict, list)) else v) for k, v in r.items()}
            for r in rows]
    df = pd.DataFrame(flat)
    for c in first or []:
        if c not in df:
            df[c] = None
    lead = [c for c in first or [] if c in df.columns]
    return df[lead + [c for c in df.columns if c not in lead]]


def document(kind: str, rows: list[dict], device: dict, meta: dict, **extra) -> dict:
    if kind not in KINDS:
        raise ValueError(f"unknown result kind {kind!r}")
    return {"schema_version": SCHEMA_VERSION, "kind": kind, "device": device, "meta": meta, **extra, "rows": rows}


def write(doc: dict, folder, name: str, columns: list[str], drop: tuple = (), markdown: str | None = None,
          copy_to=None) -> list[Path]:
    """Write doc (from document()) as <folder>/<name>.csv and .json (+ .md); returns the paths."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    csv, js = folder / f"{name}.csv", folder / f"{name}.json"
    df = frame(doc["rows"], columns)
    df[[c for c in df.columns if c not in drop]].to_csv(csv, index=False)
    text = json.dumps(doc, indent=1, default=_default)
    js.write_text(text)
    paths = [csv, js]
    if copy_to is not None:
        copy_to = Path(copy_to)
        copy_to.parent.mkdir(parents=True, exist_ok=True)
        copy_to.write_text(text)
        paths.append(copy_to)
    if markdown is not None:
        md = folder / f"{name}.md"
        md.write_text(markdown)
        paths.append(md)
    return paths

"""Reading result files for the report: classify them (bench, verify, profile), and bring
older results to the current schema.

Schema 1 (results written before the core refactor) named strategies by their first-release
names (tbp_parity, cells_fullshell_csr, ...), called the build phase `bin_ms` and kept the
verify device header inside meta. Those names are aliases for one release (strategies.ALIASES):
this loader maps them to the registry's names and says so in the report's method section.
"""
from __future__ import annotations

import glob
import json
from pathlib import Path

import strategies
from mdcore import InputError, parse_value

from ..results import SCHEMA_VERSION


def _strategy_attrs(name: str) -> dict:
    cls = strategies.REGISTRY.get(name)
    if cls is None:
        return {}
    return {a: v for a, v in strategies.attributes(cls).items() if a not in ("backend", "precisions")}


def _rename_label(label: str, renamed: dict) -> str:
    base, bracket, rest = label.partition("[")
    new = strategies.canonical(base)
    if new != base:
        renamed[base] = new
    return new + bracket + rest


def normalise_row(r: dict, renamed: dict) -> dict:
    """A result row in the current schema (a copy): registry names, build_ms, attributes,
    launch parameters."""
    r = dict(r)
    if r.get("backend") == "peer":
        return r
    if "strategy" in r:
        r["strategy"] = _rename_label(r["strategy"], renamed)
    r["name"] = strategies.canonical(r.get("name") or r.get("strategy", "").split("[")[0])
    for old, new in (("bin_ms", "build_ms"),):
        if old in r and new not in r:
            r[new] = r.pop(old)
    for k, v in _strategy_attrs(r["name"]).items():
        r.setdefault(k, v)
    if "launch_params" not in r:  # older results: the label names the non-default ones
        label = r.get("strategy", "")
        inner = label[label.index("[") + 1:-1] if "[" in label else ""
        r["launch_params"] = {k: parse_value(v) for k, _, v in (i.partition("=") for i in inner.split(",") if i)}
    if isinstance(r.get("launch"), dict) and "layout" in r["launch"] and "storage" not in r["launch"]:
        r["launch"] = {("storage" if k == "layout" else k): v for k, v in r["launch"].items()}
    return r


def load(paths: list[Path], command: str = "report") -> dict:
    """Classify result JSON files: bench, verify, profile; rows normalised to the current
    schema. 'renamed' lists the old names mapped. command: the subcommand its errors name."""
    out: dict = {"bench": [], "verify": [], "profile": [], "nve": [], "ewald": [], "mc": [], "molecules": [],
                 "nve_molecules": [], "files": [], "bench_files": [], "renamed": {}, "schemas": set()}
    for p in paths:
        try:
            doc = partial_bench(Path(p)) if str(p).endswith(".partial.jsonl") else json.loads(Path(p).read_text())
        except OSError as e:
            raise InputError(f"{command}: cannot read {p}: {e.strerror or e}") from None
        except ValueError as e:  # JSON's own message says where it stopped parsing
            raise InputError(f"{command}: {p} is not a JSON result file ({e})") from None
        if not isinstance(doc, dict):
            raise InputError(f"{command}: {p} is not a result file (a JSON object)")
        version = doc.get("schema_version", 1)
        if version not in (1, SCHEMA_VERSION):
            raise InputError(f"{command}: {p} has schema_version {version!r}; this harness reads 1 and {SCHEMA_VERSION}")
        out["schemas"].add(version)
        if "ncu" in doc:
            doc = dict(doc, strategy=strategies.canonical(doc.get("strategy", "")))
            out["profile"].append(doc)
        elif doc.get("kind") == "verify" or ("tolerances" in doc and "rows" in doc):
            _check_rows(p, doc)
            device = doc.get("device") or doc.get("meta", {}).get("device", {})
            out["verify"].append(dict(doc, device=device,
                                      rows=[normalise_row(r, out["renamed"]) for r in doc["rows"]]))
        elif doc.get("kind") == "mc":  # harness mc: its section, and the claims (the GOMC report's)
            out["mc"].append(doc)
        elif doc.get("kind") == "ewald":  # the reciprocal strategies (harness ewald): their own section
            _check_rows(p, doc)
            out["ewald"].append(doc)
        elif doc.get("kind") == "bench-molecules":  # the molecule traversals (bench --scenario spce_water ...)
            _check_rows(p, doc)
            out["molecules"].append(doc)
        elif doc.get("kind") == "nve-molecules":  # md --nve-report on molecules
            _check_rows(p, doc)
            out["nve_molecules"].append(doc)
        elif doc.get("kind") == "nve":  # NVE drift runs: the drift section and the claims
            _check_rows(p, doc)
            bad = next((r for r in doc["rows"] if not isinstance(r.get("strategy"), str)
                        or not isinstance(r.get("precision"), str)), None)
            if bad is not None:
                raise InputError(f"report: {p}: an NVE row without its strategy and precision: {str(bad)[:120]}")
            out["nve"].append(doc)
        elif doc.get("kind") == "bench" or ("rows" in doc and "device" in doc):
            _check_rows(p, doc)
            out["bench"].append(dict(doc, rows=[normalise_row(r, out["renamed"]) for r in doc["rows"]]))
            out["bench_files"].append(str(p))
        else:
            raise InputError(f"{command}: {p} is neither a bench, a verify nor a profile result")
        out["files"].append(str(p))
    return out


def partial_bench(path: Path) -> dict:
    """A sweep still running or cut short (harness bench's <name>.partial.jsonl: a header line with the
    device and the command, then a row per point measured) as a bench result marked partial."""
    lines = path.read_text().splitlines()
    head = json.loads(lines[0]) if lines else {}
    if not isinstance(head, dict) or "device" not in head:
        raise ValueError("not a partial bench file (no device header on its first line)")
    rows = []
    for line in lines[1:]:
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:  # the last line, cut off where the sweep stopped
            break
    meta = dict(head.get("meta") or {}, partial=True)
    return {"schema_version": SCHEMA_VERSION, "kind": "bench", "device": head["device"], "meta": meta, "rows": rows}


def _check_rows(path, doc: dict) -> None:
    rows = doc.get("rows")
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise InputError(f"report: {path}: 'rows' must be a list of objects, got {type(rows).__name__}")


def default_inputs(root: Path) -> list[Path]:
    """The newest bench JSON, reports/verify/verify.json and every profile summary."""
    bench = sorted(glob.glob(str(root / "reports" / "bench" / "*.json")), key=lambda f: Path(f).stat().st_mtime)
    out = [Path(bench[-1])] if bench else []
    v = root / "reports" / "verify" / "verify.json"
    if v.exists():
        out.append(v)
    out += [Path(f) for f in sorted(glob.glob(str(root / "reports" / "profile" / "*.json")))]
    return out

"""A compact table of bench results, one line per point: the three timing columns (from scratch,
with a built list, amortised per MD step; graph replay where measured), the build and the list's
rebuilds. For the end of a device call's log, where only the last lines come back:

    python3 tools/bench_table.py reports/bench/*.json
"""
from __future__ import annotations

import json
import sys


def _ms(row: dict, *keys: str) -> str:
    for k in keys:
        v = row.get(k)
        if isinstance(v, (int, float)):
            return f"{v:.4f}"
    return "-"


def lines(path: str) -> list[str]:
    with open(path) as fh:
        data = json.load(fh)
    out = []
    for r in data.get("rows", []):
        if r.get("error") or r.get("skipped"):
            out.append(f"{r.get('strategy', '?')[:64]:64s} {r.get('n', '?'):>8} {r.get('outputs') or '':6s} "
                       f"n/a: {str(r.get('error') or r.get('skipped'))[:60]}")
            continue
        if r.get("backend") == "peer":
            out.append(f"{r.get('strategy', '?')[:64]:64s} {r.get('n', '?'):>8} {r.get('status', '')}: "
                       f"whole MD step {_ms(r, 'step_ms')} ms, forces to the host {_ms(r, 'force_ms')} ms")
            continue
        out.append(f"{r.get('strategy', '?')[:64]:64s} {r.get('n', '?'):>8} {r.get('outputs') or '':6s} "
                   f"scratch {_ms(r, 'graph_ms', 'compute_ms')} "
                   f"list {_ms(r, 'with_list_graph_ms', 'with_list_ms')} build {_ms(r, 'build_ms')} "
                   f"amort {_ms(r, 'amortised_ms')} rebuilds {r.get('rebuilds', '-')}")
    return out


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    for path in argv:
        try:
            rows = lines(path)
        except (OSError, ValueError, AttributeError) as e:
            print(f"{path}: not a bench result ({type(e).__name__}: {e})", file=sys.stderr)
            return 2
        print(f"# {path}")
        print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

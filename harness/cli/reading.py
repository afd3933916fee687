"""The subcommands that read results: report, compare, claims."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


from mdcore import InputError

from .. import results
from .common import (ROOT)


def cmd_report(args: argparse.Namespace) -> int:
    from .. import report

    paths = [Path(p) for p in (args.inputs or [])] or report.default_inputs(Path.cwd())
    if not paths:
        raise InputError("report: no inputs; run make bench / make verify first, or name JSON files")
    for p in paths:
        if not p.exists():
            raise InputError(f"report: {p} does not exist")
    before = [Path(p) for p in (args.before or [])]
    for p in before:
        if not p.is_file():
            raise InputError(f"report: --before {p} does not exist")
    readme = Path(args.readme) if args.readme else None
    if readme is not None:
        from ..report import ranking

        ranking.check(readme)
    out = results.check_dir(Path(args.out) / args.name, "--out/--name")
    index, md = report.build(paths, out, args.title or f"mdforce report: {args.name}", before=before, readme=readme)
    print(f"wrote {index} and {md} (from {len(paths)} result files)")
    return 0


def cmd_docs(args: argparse.Namespace) -> int:
    from .. import docs

    out = Path(args.out)
    if not args.check:
        results.check_dir(out, "--out")
    stale = docs.run(out, check=args.check)
    if args.check:
        if stale:
            print(f"docs: {len(stale)} generated page(s) out of date under {out}: {', '.join(stale)} "
                  "(python -m harness docs writes them)")
            return 1
        print(f"docs: every generated page under {out} matches the code")
        return 0
    print(f"docs: wrote {len(docs.pages())} pages under {out}")
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from .. import compare

    threshold = compare.parse_threshold(args.threshold)
    if args.json:
        results.check_file(args.json, "--json", (".json",))
    changes, meta = compare.compare(Path(args.old), Path(args.new), threshold, args.metric, args.any_device)
    print(compare.report(changes, meta))
    if args.json:
        compare.write_json(Path(args.json), changes, meta)
    return 1 if any(c.verdict == "regression" for c in changes) else 0


def cmd_merge(args: argparse.Namespace) -> int:
    from .. import merge

    out = results.check_dir(args.out, "--out")
    results.check_name(args.name)
    doc = merge.merge([Path(f) for f in args.files])
    paths = merge.write(doc, out, args.name)
    print(f"merged {len(args.files)} shares, {len(doc['rows'])} rows: {', '.join(map(str, paths))}")
    return 0


def cmd_claims(args: argparse.Namespace) -> int:
    from .. import claims

    folders = [Path(f) for f in (args.folders or ["reports"])]
    if args.json:
        results.check_file(args.json, "--json", (".json",))
    if args.out:
        results.check_file(args.out, "--out", (".md",))
    data = claims.load(folders)
    if data.files == 0:
        raise InputError(f"no result files (bench, NVE or verify JSON) under {', '.join(map(str, folders))}")
    rows = claims.evaluate(data)
    text = claims.markdown(rows, root=Path.cwd())
    if args.out:
        Path(args.out).write_text(text)
    else:
        print(text, end="")
    if args.json:
        Path(args.json).write_text(json.dumps({"kind": "claims", "schema_version": 1, "folders": [str(f) for f in folders],
                                               "files_read": data.files, "claims": rows}, indent=1))
    counts = {}
    for r in rows:
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    print(f"{len(rows)} claims from {data.files} result files: "
          + ", ".join(f"{k} {v}" for k, v in counts.items()), file=sys.stderr)
    return 0


def add_report(sub) -> None:
    p = sub.add_parser("report", help="HTML and markdown report from bench, verify and profile results")
    p.add_argument("inputs", nargs="*", help="result JSON files (default: the newest reports/bench/*.json, "
                                             "reports/verify/verify.json, reports/profile/*.json)")
    p.add_argument("--name", default="latest", help="report folder under --out (default latest)")
    p.add_argument("--out", default="reports", help="folder the report folder goes in (default reports under the current folder)")
    p.add_argument("--title", help="the page's title (default: mdforce report: NAME)")
    p.add_argument("--before", action="append", metavar="BENCH_JSON",
                   help="an earlier bench result (repeatable): the section 'Before and after' compares every point it "
                        "shares with the inputs (harness compare's rule: above 5%% and above the noise)")
    p.add_argument("--readme", metavar="FILE",
                   help="also write today's ranking (one row per scenario family and size range) between the "
                        "ranking markers of this file (the README)")
    p.set_defaults(fn=cmd_report)


def add_compare(sub) -> None:
    p = sub.add_parser("compare", help="regressions between two bench results: median change against the "
                                       "threshold and the noise of both")
    p.add_argument("old", help="the earlier bench JSON")
    p.add_argument("new", help="the later bench JSON")
    p.add_argument("--threshold", default="5%", help="smallest change that counts, e.g. 5%% or 0.05 (default 5%%)")
    p.add_argument("--metric", default="compute", choices=("compute", "graph", "with_list", "force", "device"),
                   help="the phase compared (default compute: from scratch, events)")
    p.add_argument("--any-device", action="store_true", help="compare results of two different devices anyway")
    p.add_argument("--json", help="also write the comparison here")
    p.set_defaults(fn=cmd_compare)


def add_merge(sub) -> None:
    p = sub.add_parser("merge", help="join the shares of a job array (bench or verify --shard i/n) into one result")
    p.add_argument("files", nargs="+", help="the JSON file of every share")
    p.add_argument("--out", required=True, help="folder the merged result goes in")
    p.add_argument("--name", default="merged", help="bench: the merged file's name (default merged); verify writes "
                                                    "verify.json")
    p.set_defaults(fn=cmd_merge)


def add_claims(sub) -> None:
    p = sub.add_parser("claims", help="the source documents' claims, answered from results on disk (verdicts computed)")
    p.add_argument("folders", nargs="*", help="folders (or files) of bench, NVE and verify JSON results (default reports/)")
    p.add_argument("--out", help="write the markdown table here (.md) instead of printing it")
    p.add_argument("--json", help="also write the verdicts as JSON")
    p.set_defaults(fn=cmd_claims)


def add_docs(sub) -> None:
    p = sub.add_parser("docs", help="write the pages generated from the code: docs/strategies/*.md (each strategy's "
                                    "declaration and launch parameters) and docs/cli.md (every option)")
    p.add_argument("--out", default=str(ROOT / "docs"), help="the documentation folder")
    p.add_argument("--check", action="store_true", help="compare instead of writing: exit 1 if a page is out of date")
    p.set_defaults(fn=cmd_docs)

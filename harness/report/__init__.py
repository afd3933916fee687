"""`python -m harness report`: bench, verify and profile results -> reports/<name>/index.html and
report.md, with PNG plots (and SVG) beside them and every input linked (copied into data/ where
it lies outside the report's results folder): the page works offline, its raw data one click away.

  load.py      read and classify result files (schema versions checked); older results mapped
  verdict.py   the answer: winner, margin, noise and why per scenario family and size range
  sections.py  one function per section
  render.py    jinja2 templates (templates/), pandas Styler and to_markdown for the tables

The page opens with the verdict and the correctness line. Sections (each present in every
report; one without data says which command produces it): verdict, correctness, wins, timings
(three columns), before and after (--before: earlier bench results), thesis, cpu_gpu, parity
processors, precision, pair bodies (types and charges), Ewald's reciprocal part, rigid molecules (the
molecule traversals' order beside the points', their NVE drift), NVE drift (the NVE report's table), the source documents' claims, peers, roofline (with every strategy against the
fastest at the largest LJ liquid point), method.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

from mdcore import InputError

from . import render, sections as S
from .load import default_inputs, load
from .sections import SECTIONS

__all__ = ["SECTIONS", "build", "default_inputs", "load"]



def bench_rows(docs: list[dict]) -> list[dict]:
    """Every bench row with its file's index (_file) and device (_device); a row measured on a
    cluster's worker (bench --cluster) carries its worker's GPU model, so that points of two models
    stay apart as two devices."""
    out = []
    for i, d in enumerate(docs):
        for r in d["rows"]:
            dev = d["device"]
            gpu = (r.get("worker") or {}).get("gpu")
            if gpu and gpu != dev.get("gpu"):
                dev = {**dev, "gpu": gpu}
            out.append(dict(r, _file=i, _device=dev))
    return out

def build(paths: list[Path], out_dir: Path, title: str, before: list[Path] | None = None,
          readme: Path | None = None) -> tuple[Path, Path]:
    """before: earlier bench results for the section 'Before and after'; readme: a file whose ranking
    block (ranking.START ... ranking.END) gets today's ranking from these results."""
    data = load(paths)  # refuses bad input before anything is written
    if not any(data[k] for k in ("bench", "verify", "profile", "nve", "ewald", "mc", "molecules", "nve_molecules")):
        raise InputError("report: no results given (bench, verify, profile, NVE, ewald, mc or molecule JSON)")
    old = load(list(before or []))
    if len(old["bench"]) != len(before or []):
        raise InputError("report: --before takes bench results (the JSON of `harness bench`)")
    found = S.before_after(data["bench"], data["bench_files"], old["bench"], old["bench_files"])
    out_dir.mkdir(parents=True, exist_ok=True)
    plots = render.Plots(out_dir)
    bench = bench_rows(data["bench"])
    devices = [d["device"] for d in data["bench"]]
    sections = {k: render.Section(k, t) for k, t in S.SECTIONS}
    headline = S.verdict(sections["verdict"], bench, data["profile"], data["verify"])
    links = _copy_inputs(data["files"], out_dir)
    S.correctness(sections["correctness"], plots, data["verify"])
    S.wins(sections["wins"], bench)
    S.timings(sections["timings"], bench)
    S.changes(sections["changes"], found, bool(before))
    S.thesis(sections["thesis"], plots, bench)
    S.cpu_gpu(sections["cpu_gpu"], bench)
    S.parity(sections["parity"], plots, bench)
    S.precision(sections["precision"], plots, bench, data["verify"])
    S.bodies(sections["bodies"], plots, bench)
    S.ewald(sections["ewald"], plots, data["ewald"])
    S.mc(sections["mc"], plots, data["mc"])
    S.molecules(sections["molecules"], data["molecules"], bench, data["nve_molecules"])
    S.drift(sections["drift"], data["nve"])
    S.claims(sections["claims"], data["files"])
    S.peers(sections["peers"], bench)
    S.roofline(sections["roofline"], plots, bench, devices, data["profile"])
    S.method(sections["method"], data, bench, links)
    sections["verdict"].link_list("Raw data (the inputs of this page)", links)
    if readme is not None:
        from . import ranking
        from .verdict import table

        ranking.write(readme, ranking.markdown(table(bench, data["profile"]), _source(data, out_dir, readme)))
    index = out_dir / "index.html"
    index.write_text(render.page(title, list(sections.values()), headline))
    md = out_dir / "report.md"
    md.write_text(render.markdown(title, list(sections.values()), headline))
    return index, md


def _source(data: dict, out_dir: Path, readme: Path) -> str:
    """The line above the ranking: the devices, commits and dates of the bench results, the command
    that makes them, and where the whole report lies (relative to the README)."""
    devs, commits, dates, partial = set(), set(), set(), []
    for d in data["bench"]:
        if (d.get("meta") or {}).get("partial"):
            partial.append(f"{(d.get('meta') or {}).get('suite') or 'a sweep'} ({len(d['rows'])} points so far)")
        dev = d.get("device") or {}
        devs.add(f"{dev['gpu']} ({dev.get('sms')} SMs, driver {dev.get('driver')}, CuPy {dev.get('cupy')})"
                 if dev.get("gpu") else f"CPU {dev.get('cpu', '?')}")
        commits.add(str(dev.get("commit", "?")))
        dates.add(str((d.get("meta") or {}).get("date", "?"))[:10])
    where = os.path.relpath(out_dir.resolve() / "report.md", readme.resolve().parent)
    note = f" Still running: {', '.join(partial)}; the rest of the campaign follows." if partial else ""
    return (f"Measured on {', '.join(sorted(devs))}; commit {', '.join(sorted(commits))}; "
            f"{', '.join(sorted(dates))}; `make results` (fp32, all outputs). "
            f"The whole report: [{where}]({where}).{note}")


def _copy_inputs(files: list[str], out_dir: Path) -> list[tuple[str, str]]:
    """Links to every input JSON, and to the CSV written beside it where there is one: a relative
    link where the input lies in the report folder's parent (a results folder such as
    reports/<run>/ with the report in reports/<run>/<name>/: the page moves with it), else a copy
    in out_dir/data/ (names made unique). Returns (text, link) pairs."""
    links, used = [], set()
    base = out_dir.resolve()
    for f in files:
        src = Path(f)
        for p in dict.fromkeys((src, src.with_suffix(".csv"))):  # the JSON, and a CSV beside it
            if not p.is_file():
                continue
            rel = Path(os.path.relpath(p.resolve(), base))
            if rel.parts[:2] != ("..", "..") and not rel.is_absolute():
                links.append((p.name, rel.as_posix()))
                continue
            data = out_dir / "data"
            data.mkdir(exist_ok=True)
            name, k = p.name, 1
            while name in used:
                k += 1
                name = f"{p.stem}-{k}{p.suffix}"
            used.add(name)
            shutil.copyfile(p, data / name)
            links.append((name, f"data/{name}"))
    return links

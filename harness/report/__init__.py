"""`python -m harness report`: bench, verify and profile results -> reports/<name>/index.html and
report.md, with PNG plots beside them (the page works offline).

  load.py      read and classify result files; older results mapped to the current schema
  sections.py  one function per section
  render.py    HTML and markdown

Sections (each present in every report; one without data says which command produces it):
correctness, wins, timings (three columns), thesis, cpu_gpu, parity processors, precision, the seeds'
claims, peers, roofline, method.
"""
from __future__ import annotations

from pathlib import Path

from mdcore import InputError

from . import render, sections as S
from .load import default_inputs, load
from .sections import SECTIONS

__all__ = ["SECTIONS", "build", "default_inputs", "load"]


def build(paths: list[Path], out_dir: Path, title: str) -> tuple[Path, Path]:
    data = load(paths)  # refuses bad input before anything is written
    if not data["bench"] and not data["verify"] and not data["profile"] and not data["nve"]:
        raise InputError("report: no results given (bench, verify, profile or NVE JSON)")
    out_dir.mkdir(parents=True, exist_ok=True)
    plots = render.Plots(out_dir)
    bench = []
    for i, d in enumerate(data["bench"]):
        for r in d["rows"]:
            bench.append(dict(r, _file=i, _device=d["device"]))
    devices = [d["device"] for d in data["bench"]]
    sections = {k: render.Section(k, t) for k, t in S.SECTIONS}
    S.correctness(sections["correctness"], plots, data["verify"])
    S.wins(sections["wins"], bench)
    S.timings(sections["timings"], bench)
    S.thesis(sections["thesis"], plots, bench)
    S.cpu_gpu(sections["cpu_gpu"], bench)
    S.parity(sections["parity"], plots, bench)
    S.precision(sections["precision"], plots, bench, data["verify"])
    S.claims(sections["claims"], data["files"])
    S.peers(sections["peers"], bench)
    S.roofline(sections["roofline"], plots, bench, devices, data["profile"])
    S.method(sections["method"], data, bench)
    index = out_dir / "index.html"
    index.write_text(render.page(title, list(sections.values())))
    md = out_dir / "report.md"
    md.write_text(render.markdown(title, list(sections.values())))
    return index, md

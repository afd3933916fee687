"""Today's ranking for the README: the report's verdict (verdict.table) cut to one row per scenario
family and size range, written between the README's ranking markers by `harness report --readme`.

A row is the fp32 verdict with all outputs: per MD step where every strategy at its points has that
time (a trajectory replayed, list upkeep included), from scratch otherwise; of several comparisons
in a group, the one with the most strategies. The bound is the report's "why" for that row.
"""
from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from mdcore import InputError

from . import verdict as V

START, END = "<!-- ranking:start -->", "<!-- ranking:end -->"


def rows(table: pd.DataFrame) -> pd.DataFrame:
    """One row per (device, scenario family, size range) of a verdict table."""
    if table.empty:
        return table
    t = table[(table["precision"] == "fp32") & (table["outputs"] == "all")]
    if t.empty:
        return t
    t = t.assign(_step=(t["time"] == V.STEP).astype(int))
    t = t.sort_values(["_step", "compared"], ascending=[False, False], kind="stable")
    t = t.groupby(["device", "scenario", "sizes"], sort=False, as_index=False).first()
    order = {label: i for i, (_, _, label) in enumerate(V.SIZES)}
    t = t.assign(_size=t["sizes"].map(order)).sort_values(["device", "scenario", "_size"], kind="stable")
    return t.drop(columns=["_step", "_size"])


def markdown(table: pd.DataFrame, source: str) -> str:
    """The ranking block: a line naming the device, commit, date and command, then the table."""
    r = rows(table)
    if r.empty:
        return f"No ranking yet: {source} holds no fp32 bench results with two strategies at one point."
    show = pd.DataFrame({
        "scenario": r["scenario"], "N": r["N"], "time": r["time"], "winner": "`" + r["winner"] + "`",
        "runner-up": "`" + r["runner-up"] + "`", "margin": r["margin"],
        "noise": r["noise (winner / runner-up)"], "verdict": r["verdict"],
        "why (checks per interaction; bound from ncu)": r["why"].str.replace("|", "/", regex=False)})
    return f"{source}\n\n" + show.to_markdown(index=False)


def check(readme: Path) -> None:
    """Refuse, before any work, a README that cannot be read or has no ranking markers."""
    if not readme.is_file():
        raise InputError(f"report: --readme {readme}: no such file (the README whose ranking markers are rewritten)")
    try:
        text = readme.read_text()
        open(readme, "a").close()  # writable as well, before any work
    except OSError as e:
        raise InputError(f"report: --readme {readme}: {e.strerror or e}") from None
    if START not in text or END not in text or text.index(START) > text.index(END):
        raise InputError(f"report: --readme {readme} has no ranking markers ({START} ... {END})")


def write(readme: Path, block: str) -> None:
    """Replace what lies between the ranking markers of `readme` with `block`."""
    try:
        text = readme.read_text()
    except OSError as e:
        raise InputError(f"report: --readme {readme}: {e.strerror or e}") from None
    pattern = re.compile(re.escape(START) + r".*?" + re.escape(END), re.S)
    if not pattern.search(text):
        raise InputError(f"report: --readme {readme} has no ranking markers ({START} ... {END})")
    readme.write_text(pattern.sub(lambda _: f"{START}\n{block}\n{END}", text, count=1))

"""Rendering the report: sections of blocks (paragraphs, tables, figures, collapsed details),
written as one HTML page and one markdown file through the jinja2 templates beside this module
(templates/page.html.j2, templates/report.md.j2). Tables are pandas DataFrames: the page's
through Styler (the winner's rows highlighted, every column sortable with a click), the
markdown's through DataFrame.to_markdown. Plots are PNG (shown) with an SVG beside each (linked).
"""
from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

import pandas as pd

TEMPLATES = Path(__file__).parent / "templates"
HIGHLIGHT = "background-color:#dff0d8;font-weight:bold"
NOISY = "color:#a94442"


def _unique(header: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for h in header:
        seen[h] = seen.get(h, 0) + 1
        out.append(h if seen[h] == 1 else f"{h} ({seen[h]})")
    return out


def frame(header: list[str], rows: list[list]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=_unique([str(h) for h in header]))


def styled(df: pd.DataFrame, highlight=None, noisy=None, winner=None) -> str:
    """HTML of a table: columns starting with '_' hidden; where `highlight` (a boolean Series on
    df's index) is true, the `winner` column's cell highlighted (the whole row without one);
    cells of the `noisy` column that are true in red."""
    shown = [c for c in df.columns if not str(c).startswith("_")]
    view = df.reset_index(drop=True)
    sty = view.style.hide(axis="index").set_table_attributes('class="sortable"')
    if highlight is not None:
        mask = pd.Series(highlight).reset_index(drop=True).astype(bool)
        cols = [winner] if winner in view.columns else None
        sty = sty.apply(lambda row: [HIGHLIGHT if mask.get(row.name, False) else "" for _ in row], axis=1,
                        subset=cols)
    if noisy is not None and noisy in view.columns:
        sty = sty.map(lambda v: NOISY if v in (True, "yes") else "", subset=[noisy])
    # identifiers (strategy labels, scenario names: no spaces, underscores) may break anywhere, so a
    # wide table fits the page without breaking numbers
    sty = sty.map(lambda v: WRAP if isinstance(v, str) and "_" in v and " " not in v else "")
    sty = sty.format(_cell, na_rep="")
    hidden = [c for c in view.columns if c not in shown]
    if hidden:
        sty = sty.hide(axis="columns", subset=hidden)
    return sty.to_html()


def _cell(v) -> str:
    if isinstance(v, bool):
        return "yes" if v else ""
    if isinstance(v, float):
        return f"{v:.4g}"
    return "" if v is None else str(v)


def markdown_table(df: pd.DataFrame, as_text: bool = False) -> str:
    """as_text: cells as written (a signed '+1.5e-06' stays signed), not parsed back into numbers."""
    shown = df[[c for c in df.columns if not str(c).startswith("_")]]
    shown = shown.rename(columns=lambda c: _md_escape(str(c)))
    return shown.map(lambda v: _md_escape(_cell(v))).to_markdown(index=False, disable_numparse=as_text)


def _md_escape(text: str) -> str:
    """A cell's text safe inside a markdown table: '|' escaped, line breaks as spaces."""
    return text.replace("|", "\\|").replace("\n", " ")


class Section:
    def __init__(self, key: str, title: str):
        self.key, self.title = key, title
        self.blocks: list[dict] = []
        self._target = self.blocks

    def text(self, s: str) -> None:
        self._target.append({"kind": "text", "text": s})

    def table(self, header_or_df, rows: list[list] | None = None, highlight=None, noisy: str | None = None,
              winner: str | None = None, as_text: bool = False) -> None:
        """A table from a DataFrame, or from a header and rows; nothing when it has no rows. as_text: the
        Markdown's cells as written (markdown_table)."""
        df = header_or_df if isinstance(header_or_df, pd.DataFrame) else frame(header_or_df, rows or [])
        if df.empty:
            return
        self._target.append({"kind": "table", "html": styled(df, highlight, noisy, winner),
                             "md": markdown_table(df, as_text)})

    def image(self, file: str | tuple[str, str], alt: str) -> None:
        png, svg = file if isinstance(file, tuple) else (file, None)
        self._target.append({"kind": "image", "png": png, "svg": svg, "alt": alt})

    def link_list(self, label: str, links: list[tuple[str, str]]) -> None:
        self._target.append({"kind": "links", "label": label, "links": links})

    @contextmanager
    def details(self, summary: str):
        """Blocks added inside go behind a <details> that the reader opens."""
        block = {"kind": "details", "summary": summary, "blocks": []}
        self._target.append(block)
        outer, self._target = self._target, block["blocks"]
        try:
            yield
        finally:
            self._target = outer

    def empty(self, how: str) -> None:
        self.text(f"No data for this section in this run. {how}")


class Plots:
    def __init__(self, folder: Path):
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        self.plt, self.folder, self.files = plt, folder, []

    def save(self, fig, name: str) -> tuple[str, str]:
        """PNG (on the page) and SVG (linked) of the figure; returns both file names."""
        png, svg = f"{name}.png", f"{name}.svg"
        fig.tight_layout()
        fig.savefig(self.folder / png, dpi=110)
        fig.savefig(self.folder / svg)
        self.plt.close(fig)
        self.files += [png, svg]
        return png, svg


WRAP = "overflow-wrap:anywhere"
CSS = ("body{font-family:sans-serif;max-width:1280px;margin:1.5em auto;color:#222;padding:0 1em}"
       "table{border-collapse:collapse;font-size:12px;margin:0.5em 0}td,th{border:1px solid #ccc;padding:2px 6px}"
       "th{background:#eee;cursor:pointer}img{max-width:100%}figure{margin:1em 0}"
       "figcaption{font-size:12px;color:#555}nav a{margin-right:1em}details{margin:0.5em 0}"
       "summary{cursor:pointer;font-weight:bold}.headline{font-size:16px}.verdict td{font-size:13px}")

# Marks every image data-loaded="1" once the browser has decoded it ("0" if it failed): a
# headless browser's --dump-dom then shows whether the page works (tests/test_report.py).
LOAD_CHECK = ("window.addEventListener('load',function(){for(const i of document.images){"
              "i.setAttribute('data-loaded',(i.complete&&i.naturalWidth>0)?'1':'0');}"
              "document.body.setAttribute('data-images-checked',String(document.images.length));});")

# Click a column header of a table.sortable to sort by it (numbers as numbers), again to reverse.
SORT = ("document.querySelectorAll('table.sortable th').forEach(function(th){th.addEventListener('click',function(){"
        "const t=th.closest('table'),b=t.tBodies[0],i=Array.from(th.parentNode.children).indexOf(th),"
        "d=th.dataset.dir==='asc'?-1:1;th.dataset.dir=d>0?'asc':'desc';"
        "const key=function(r){const s=(r.children[i]||{}).textContent||'';const x=parseFloat(s.replace(/,/g,''));"
        "return isNaN(x)?s:x;};Array.from(b.rows).sort(function(a,c){const x=key(a),y=key(c);"
        "return (typeof x===typeof y?(x<y?-1:x>y?1:0):(typeof x==='number'?-1:1))*d;})"
        ".forEach(function(r){b.appendChild(r);});});});")


def _env():
    import jinja2

    import markupsafe

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)),
                             autoescape=lambda name: bool(name) and name.endswith(".html.j2"),
                             trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
                             undefined=jinja2.StrictUndefined)
    env.filters["safe_html"] = markupsafe.Markup  # the tables' HTML, made by pandas' Styler
    return env


def page(title: str, sections: list, headline: list[str] | None = None) -> str:
    return _env().get_template("page.html.j2").render(title=title, sections=sections, css=CSS, load_check=LOAD_CHECK,
                                                      sort_js=SORT, headline=headline or [])


def markdown(title: str, sections: list, headline: list[str] | None = None) -> str:
    return _env().get_template("report.md.j2").render(title=title, sections=sections, headline=headline or [])

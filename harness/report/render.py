"""Rendering the report: sections of paragraphs, tables and figures, written as one HTML page and
one markdown file (plots as PNG beside them; the page works offline)."""
from __future__ import annotations

import html
from pathlib import Path


def _md_table(header: list[str], rows: list[list]) -> str:
    line = lambda cells: "| " + " | ".join(str(c) for c in cells) + " |"  # noqa: E731
    return "\n".join([line(header), line(["---"] * len(header))] + [line(r) for r in rows])


def _html_table(header: list[str], rows: list[list]) -> str:
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


class Section:
    def __init__(self, key: str, title: str):
        self.key, self.title = key, title
        self.html: list[str] = []
        self.md: list[str] = []

    def text(self, s: str) -> None:
        self.html.append(f"<p>{html.escape(s)}</p>")
        self.md.append(s)

    def table(self, header: list[str], rows: list[list]) -> None:
        if rows:
            self.html.append(_html_table(header, rows))
            self.md.append(_md_table(header, rows))

    def image(self, file: str, alt: str) -> None:
        self.html.append(f'<figure><img src="{html.escape(file)}" alt="{html.escape(alt)}">'
                         f"<figcaption>{html.escape(alt)}</figcaption></figure>")
        self.md.append(f"![{alt}]({file})")

    def empty(self, how: str) -> None:
        self.text(f"No data for this section in this run. {how}")


class Plots:
    def __init__(self, folder: Path):
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        self.plt, self.folder, self.files = plt, folder, []

    def save(self, fig, name: str) -> str:
        file = f"{name}.png"
        fig.tight_layout()
        fig.savefig(self.folder / file, dpi=110)
        self.plt.close(fig)
        self.files.append(file)
        return file


CSS = ("body{font-family:sans-serif;max-width:1200px;margin:2em auto;color:#222}table{border-collapse:collapse;"
       "font-size:12px;margin:0.5em 0}td,th{border:1px solid #ccc;padding:2px 6px}th{background:#eee}"
       "img{max-width:100%}figure{margin:1em 0}figcaption{font-size:12px;color:#555}nav a{margin-right:1em}")


# Marks every image data-loaded="1" once the browser has decoded it ("0" if it failed): a
# headless browser's --dump-dom then shows whether the page works (tests/test_report.py).
LOAD_CHECK = ("window.addEventListener('load',function(){for(const i of document.images){"
              "i.setAttribute('data-loaded',(i.complete&&i.naturalWidth>0)?'1':'0');}"
              "document.body.setAttribute('data-images-checked',String(document.images.length));});")


def page(title: str, sections: list) -> str:
    nav = "".join(f'<a href="#{s.key}">{html.escape(s.title)}</a>' for s in sections)
    body = "".join(f'<section id="{s.key}"><h2>{html.escape(s.title)}</h2>{"".join(s.html)}</section>'
                   for s in sections)
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{CSS}</style></head><body><h1>{html.escape(title)}</h1><nav>{nav}</nav>{body}"
            f"<script>{LOAD_CHECK}</script></body></html>")


def markdown(title: str, sections: list) -> str:
    return f"# {title}\n\n" + "\n\n".join(f"## {s.title}\n\n" + "\n\n".join(s.md) for s in sections) + "\n"

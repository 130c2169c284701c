"""A handout as one self-contained HTML file: no script, no font or style sheet from the internet.

The numbers, the sentences of why and the shading are all in the file. The formulas are written as their LaTeX
source (typesetting them needs KaTeX or MathJax, which this file does not fetch): the file says so at the top.
Every text goes through html.escape, so a sentence typed by a student stays text.

>>> from attention_core import Config
>>> from attention_core.labs.handout import make_handout
>>> page = to_html(make_handout("scores", Config()))
>>> page.startswith("<!DOCTYPE html>") and "<script" not in page and "http" not in page.split("</head>")[0]
True
"""
from __future__ import annotations

import html

import numpy as np

from .document import Handout, Section, Table, note_sentence, number_text

CSS = """
body { font-family: Georgia, 'Times New Roman', serif; color: #000; background: #fff; max-width: 60rem;
       margin: 1.5rem auto; padding: 0 1rem; }
h1 { font-size: 1.5rem; margin-bottom: .25rem; } h2 { font-size: 1.1rem; margin: 0 0 .4rem; }
section { border: 1px solid #999; border-radius: 4px; padding: .6rem .8rem; margin: .8rem 0; break-inside: avoid; }
.tex { font-family: 'DejaVu Sans Mono', Menlo, monospace; background: #f4f4f4; padding: .3rem .5rem;
       white-space: pre-wrap; display: block; }
.small { color: #444; font-size: .85rem; }
table { border-collapse: collapse; font: 10pt 'DejaVu Sans Mono', Menlo, monospace; margin-top: .4rem; }
td, th { border: 1px solid #bbb; padding: 2px 6px; text-align: right; } th { background: #eee; font-weight: normal; }
* { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
@media print { body { margin: 0; max-width: none; } }
"""


def shade(v: float, t: Table) -> str:
    """The cell's tint: blue below 0, red above (a 0..1 scale: blue), strength |v| over the step's largest."""
    if not np.isfinite(v):
        return "#dddddd"
    if t.hi == t.lo:                                                    # one value (a scalar): nothing to compare
        return "#ffffff"
    if t.scale in ("sequential", "mask"):
        a = 0.65 * (v - t.lo) / ((t.hi - t.lo) or 1.0)
        rgb = (40, 80, 160)
    else:
        a = 0.65 * abs(v) / (max(abs(t.lo), abs(t.hi)) or 1.0)
        rgb = (200, 40, 40) if v > 0 else (40, 80, 200)
    mix = [round(255 - a * (255 - c)) for c in rgb]                     # the tint over white, as one colour
    return "#" + "".join(f"{c:02x}" for c in mix)


def table_html(t: Table) -> str:
    """The numbers as an HTML table, each cell tinted like the heatmap (printable in black and white), every label
    escaped; the note of what was cut under it."""
    e = html.escape
    head = "<tr><th></th>" + "".join(f"<th>{e(c)}</th>" for c in t.cols) + "</tr>"
    body = "".join("<tr><th>" + e(r) + "</th>" + "".join(
        f'<td style="background:{shade(v, t)}">{number_text(v)}</td>' for v in row) + "</tr>"
        for r, row in zip(t.rows, t.values))
    note = f'<p class="small">{e(note_sentence(t.note))}</p>' if t.note else ""
    return f"<table>{head}{body}</table>{note}"


def _section(s: Section, i: int) -> str:
    e = html.escape
    shape = e(s.shape) + (f" · {e(s.head_note)}" if s.head_note else "")
    formula = f'<code class="tex">{e(s.formula)}</code>' if s.formula else ""
    why = f"<p>{e(s.why)}</p>" if s.why else ""
    return (f"<section><h2>{i + 1} · {e(s.title)}</h2>{formula}<p class=\"small\">Shape: {shape}</p>{why}"
            f"{table_html(s.table)}</section>")


def to_html(doc: Handout, link: str = "") -> str:
    """The whole handout as one HTML page (UTF-8); `link`: the live view's address, written out when given."""
    e = html.escape
    settings = "; ".join(doc.settings) if doc.settings else "the defaults"
    controls = f"<p><b>On the page:</b> {e('; '.join(doc.controls))}</p>" if doc.controls else ""
    notes = "".join(f'<p class="small">{e(n)}</p>' for n in doc.notes)
    if link:
        notes += f'<p class="small">The live view: <a href="{e(link)}">{e(link)}</a></p>'
    sections = "".join(_section(s, i) for i, s in enumerate(doc.sections))
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{e(doc.title)} · handout</title>'
            f"<style>{CSS}</style></head><body><h1>{e(doc.title)}</h1>"
            f"<p><b>Sentence:</b> {e(doc.sentence)}</p><p><b>Tokens:</b> {e(doc.tokens)}</p>"
            f"<p><b>Settings:</b> {e(settings)}</p>{controls}{notes}"
            '<p class="small">The formulas are written as LaTeX source (this file needs no internet and carries no '
            "typesetter); the Handout page's Print or save as PDF shows them typeset.</p>"
            f"{sections}</body></html>\n")

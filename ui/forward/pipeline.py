"""The Overview's pipeline: the forward pass's boxes (each a link to its page) as a Graphviz drawing, twice: five
boxes a row for a wide screen, two a row for a phone (ui/phone.py's CSS shows one), so a phone never shrinks the
boxes' words to an unreadable size."""
from __future__ import annotations

import streamlit as st

from .. import nav


def dot_label(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def dot(boxes, url_query: str, per_row: int) -> str:
    """boxes: (key, title, shape, page file or None) in order, `per_row` a row, rows top to bottom."""
    lines = ['digraph { rankdir=TB; nodesep=0.3; ranksep=0.45; '
             'node [shape=box, style="rounded,filled", fillcolor="#eef2ff", color="#3b5bdb", '
             'fontname="sans-serif", fontsize=13, margin="0.15,0.08"]; edge [color="#868e96"];']
    for key, title, shape, page in boxes:
        link = ""
        if page:   # a click on a box opens its page (same tab)
            path = nav.url_path_of(page)
            link = f', URL="./{path}{"?" + url_query if url_query else ""}", target="_self"'
        lines.append(f'{key} [label="{dot_label(title)}\\n{dot_label(shape)}"{link}];')
    rows = [[b[0] for b in boxes[k:k + per_row]] for k in range(0, len(boxes), per_row)]
    for row in rows:
        if len(row) > 1:
            lines.append("{ rank=same; " + " -> ".join(row) + "; }")
    for above, below in zip(rows, rows[1:]):
        lines.append(f"{above[0]} -> {below[0]} [style=invis];")          # the next row sits below
        lines.append(f"{above[-1]} -> {below[0]} [constraint=false];")
    lines.append("}")
    return "\n".join(lines)


def pipeline(boxes, url_query: str) -> None:
    for name, per_row in (("wide", 5), ("tall", 2)):
        with st.container(key=f"pipeline-{name}"):
            st.graphviz_chart(dot(boxes, url_query, per_row), width="content")

"""The arithmetic behind one number: shown when a heatmap cell is clicked."""
from __future__ import annotations

import streamlit as st

from attention_core.explanations import Explanation

from .text import md_escape


def explanation(e: Explanation, stored: float | None = None) -> None:
    """Its title and formula as one Markdown, its notes as one caption: it stays on the page
    while the student moves a setting, and every element costs each rerun."""
    with st.container(border=True):
        cell = e.text.split(" = ", 1)[0]              # the cell in the notation: Ŝ_1[0,2], dL/dW_Q[0,1]
        st.markdown(f"**How {md_escape(cell)} was made**\n\n$$\n{e.latex}\n$$")
        notes = [e.note] if e.note else []
        listed = r"\boxed{" in e.substituted            # a row looked up (one entry boxed), not a sum
        if e.n_elided and listed:
            notes.append(f"The row has {e.n_terms} entries; {e.n_elided} of them are left out above.")
        elif e.n_elided:
            notes.append(f"{e.n_terms} terms in all; the middle {e.n_elided} are left out above (the total uses all).")
        if stored is not None:
            same = abs(e.value - stored) <= 1e-9 * max(1.0, abs(stored)) or e.value == stored
            source = ("read back from the trace" if not e.independent else
                      "recomputed from the terms above" if e.reads else "made again from its formula or source")
            notes.append(f"{'✓' if same else '✗'} {source}: {e.value:.10g}; the cell holds {stored:.10g}.")
        notes.append("Click another cell to explain it; double-click the chart to clear.")
        st.caption("  \n".join(notes))

"""Heads by what they do: every head's previous-token, induction and sink score (training/real/head_roles.py) on
repeated random tokens, the strongest head of each kind, and a button that steps through it on the heads page."""
from __future__ import annotations

import numpy as np
import streamlit as st

from ..text import md_escape
from ..views import step_boxes

HEADS_PAGE = "app_pages/71_real_heads.py"
WHAT = {"prev_token": "previous-token head", "induction": "induction head", "sink": "attention sink"}


def sequence_text(roles) -> str:
    f, tokens = roles.facts, roles.tokens
    half, start = f["half"], len(f["ids"]) - 2 * f["half"]
    shown = " ".join(md_escape(t) for t in tokens[start:start + 8])
    return (f"The previous-token and induction scores are measured as the small model's induction page measures "
            f"them (Olsson et al. 2022), the sink score alongside: on {half} random tokens of the vocabulary, then the "
            f"same {half} again"
            + (f", after “{md_escape(tokens[0])}”, which the tokenizer puts first" if start else "")
            + f" ({len(tokens)} tokens: {shown} … and again)"
            + (f"; each score the mean over {f['sequences']} such sequences, the ones the induction page measures on"
               if f.get("sequences", 1) > 1 else "")
            + ". Random tokens mean nothing, so a head that scores "
            "here does its job without the meaning of the words. In the repeat, a model with induction heads can "
            "predict each token after the first: it looks up what followed the same token the first time.")


def strongest(roles) -> list[tuple[str, int, int, float]]:
    """(role, layer, head, score) of the highest-scoring head of each role."""
    out = []
    for key in WHAT:
        v = roles[key].value
        l, h = np.unravel_index(int(np.argmax(v)), v.shape)
        out.append((key, int(l), int(h), float(v[l, h])))
    return out


def strongest_buttons(roles) -> None:
    """The strongest head of each kind in words, with a button to step through it on the heads page."""
    for col, (key, l, h, score) in zip(st.columns(3), strongest(roles)):
        with col.container(border=True):
            st.markdown(f"**The strongest {WHAT[key]}**: layer {l}, head {h}, score {score:.2f}.")
            if st.button(f"Step through layer {l}, head {h}", key=f"real.go.{key}", icon=":material/arrow_forward:"):
                st.session_state["p.real.layer"], st.session_state["p.real.head"] = l, h
                st.switch_page(HEADS_PAGE)


def scores(roles) -> None:
    """The three (layer, head) tables as heatmaps, a cell's value on a click."""
    step_boxes(roles, ("prev_token", "induction", "sink"), key_prefix="real.roles.")

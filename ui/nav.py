"""The navigation: pages in sections, drawn by every page in its own sidebar."""
from __future__ import annotations

from pathlib import Path

import streamlit as st

ROOT = Path(__file__).resolve().parents[1]

# (section, [(file, label, icon)]); a page appears once its file exists.
SECTIONS = [
    ("Forward pass", [
        ("app.py", "Overview", ":material/home:"),
        ("pages/1_embeddings.py", "1 · Tokens & embeddings", ":material/text_fields:"),
        ("pages/2_positional.py", "2 · Positional encoding", ":material/pin:"),
        ("pages/3_qkv.py", "3 · Queries, keys, values", ":material/key:"),
        ("pages/4_scores.py", "4 · Scores & scaling", ":material/functions:"),
        ("pages/5_softmax.py", "5 · Masking & softmax", ":material/percent:"),
        ("pages/6_context.py", "6 · Context vectors", ":material/merge:"),
        ("pages/7_multi_head.py", "7 · Multi-head", ":material/view_column:"),
    ]),
    ("Training", [
        ("pages/10_training_step.py", "One training step", ":material/undo:"),
        ("pages/11_train.py", "Train a classifier", ":material/model_training:"),
    ]),
    ("Attention variants", [
        ("pages/20_score_functions.py", "Score functions", ":material/compare:"),
        ("pages/21_alignment.py", "Bahdanau alignment", ":material/sort:"),
        ("pages/22_grid.py", "Cross-attention on a grid", ":material/grid_on:"),
        ("pages/23_pytorch_mha.py", "Multi-head in PyTorch", ":material/code:"),
    ]),
    ("Labs", [
        ("pages/30_pitfalls.py", "Pitfalls lab", ":material/bug_report:"),
        ("pages/31_quiz.py", "Predict, then reveal", ":material/quiz:"),
        ("pages/32_export.py", "Share & export", ":material/download:"),
    ]),
]

FORWARD = [f for f, _, _ in SECTIONS[0][1]]


def existing(section_pages):
    return [(f, label, icon) for f, label, icon in section_pages if (ROOT / f).exists()]


def label_of(page_file: str) -> str:
    for _, pages in SECTIONS:
        for f, label, _ in pages:
            if f == page_file:
                return label
    raise KeyError(page_file)


def draw_navigation(query: dict[str, str] | None = None) -> None:
    """Sections of page links; the links carry the settings so a page opens as you left it."""
    for section, pages in SECTIONS:
        pages = existing(pages)
        if not pages:
            continue
        st.markdown(f"**{section}**")
        for f, label, icon in pages:
            st.page_link(f, label=label, icon=icon, query_params=query or None)


def step_nav(current: str, query: dict[str, str] | None = None) -> None:
    """'← previous step / next step →' along the forward pass."""
    pages = [f for f, _, _ in existing(SECTIONS[0][1])]
    i = pages.index(current)
    st.divider()
    left, _, right = st.columns([2, 1, 2])
    if i > 0:
        with left:
            st.page_link(pages[i - 1], label=f"← {label_of(pages[i - 1])}", query_params=query or None)
    nxt = pages[i + 1] if i + 1 < len(pages) else next(
        (f for f, _, _ in existing(SECTIONS[1][1])), None)
    if nxt:
        with right:
            st.page_link(nxt, label=f"{label_of(nxt)} →", query_params=query or None)

"""The navigation: pages in sections, one st.navigation call in app.py (the router).

The page files live in app_pages/, not pages/: with a folder named pages/, a fresh server
answers its first deep link by running the page file alone (Streamlit's legacy mechanism).
"""
from __future__ import annotations

import copy
import functools
from pathlib import Path

import streamlit as st

ROOT = Path(__file__).resolve().parents[1]

# (section, [(file, label, icon, url path)]); a page appears once its file exists.
SECTIONS = [
    ("Forward pass", [
        ("app_pages/overview.py", "Overview", ":material/home:", ""),
        ("app_pages/1_embeddings.py", "1 · Tokens & embeddings", ":material/text_fields:", "embeddings"),
        ("app_pages/2_positional.py", "2 · Positional encoding", ":material/pin:", "positional"),
        ("app_pages/3_qkv.py", "3 · Queries, keys, values", ":material/key:", "qkv"),
        ("app_pages/4_scores.py", "4 · Scores & scaling", ":material/functions:", "scores"),
        ("app_pages/5_softmax.py", "5 · Masking & softmax", ":material/percent:", "softmax"),
        ("app_pages/6_context.py", "6 · Context vectors", ":material/merge:", "context"),
        ("app_pages/7_multi_head.py", "7 · Multi-head", ":material/view_column:", "multi_head"),
    ]),
    ("Training", [
        ("app_pages/10_training_step.py", "One training step", ":material/undo:", "training_step"),
        ("app_pages/11_train.py", "Train a classifier", ":material/model_training:", "train"),
    ]),
    ("Attention variants", [
        ("app_pages/20_score_functions.py", "Score functions", ":material/compare:", "score_functions"),
        ("app_pages/21_alignment.py", "Bahdanau alignment", ":material/sort:", "alignment"),
        ("app_pages/22_grid.py", "Cross-attention on a grid", ":material/grid_on:", "grid"),
        ("app_pages/23_pytorch_mha.py", "Multi-head in PyTorch", ":material/code:", "pytorch_mha"),
    ]),
    ("Today's attention", [
        ("app_pages/40_rope.py", "RoPE: rotary positions", ":material/rotate_right:", "rope"),
        ("app_pages/41_masks.py", "Masks & biases", ":material/filter_alt:", "masks"),
        ("app_pages/42_kv_cache.py", "KV cache & decoding", ":material/memory:", "kv_cache"),
        ("app_pages/43_online_softmax.py", "FlashAttention's online softmax", ":material/bolt:", "online_softmax"),
    ]),
    ("Inside a transformer", [
        ("app_pages/50_block.py", "The transformer block", ":material/stacks:", "block"),
        ("app_pages/51_next_token.py", "The next token", ":material/arrow_forward:", "next_token"),
        ("app_pages/52_induction_heads.py", "Induction heads", ":material/content_copy:", "induction_heads"),
        ("app_pages/53_block_gradients.py", "Gradients through a block", ":material/call_split:", "block_gradients"),
    ]),
    ("A real model", [
        ("app_pages/70_real_tokens.py", "Tokens in, the next token out", ":material/token:", "real_tokens"),
        ("app_pages/71_real_heads.py", "Every head, one by one", ":material/grid_view:", "real_heads"),
        ("app_pages/72_real_roles.py", "Heads by what they do", ":material/psychology:", "real_roles"),
    ]),
    ("Labs", [
        ("app_pages/30_pitfalls.py", "Pitfalls lab", ":material/bug_report:", "pitfalls"),
        ("app_pages/31_quiz.py", "Predict, then reveal", ":material/quiz:", "quiz"),
        ("app_pages/32_export.py", "Share & export", ":material/download:", "export"),
    ]),
    ("Classroom", [
        ("app_pages/60_room.py", "A room for the class", ":material/co_present:", "room"),
        ("app_pages/61_lessons.py", "Lessons", ":material/list_alt:", "lessons"),
        ("app_pages/62_handout.py", "Handout", ":material/print:", "handout"),
    ]),
]

# Each section's folder in ui/, holding the views of that section's pages only (what several sections use
# stays at ui/'s top). tests/test_house.py: one folder a section, and no other.
FOLDERS = {"Forward pass": "forward", "Training": "training", "Attention variants": "variants",
           "Today's attention": "today", "Inside a transformer": "transformer", "A real model": "real",
           "Labs": "labs", "Classroom": "classroom"}
# Sections whose pages have no handout: the Classroom's show no Steps; a real model's are a checkpoint's, not the
# sidebar's Trace (ui/classroom/handout_view.py lists the others).
NO_HANDOUT = ("Classroom", "A real model")

FORWARD = [f for f, _, _, _ in SECTIONS[0][1]]
HOME = FORWARD[0]
# Measured (docs/layout.md): in the sidebar the 17 links of the time pushed the sentence box to y≈905 px
# (to 512 px with expanded=8); in the top bar the sidebar starts with the settings (142 px).
POSITION = "top"


def existing(section_pages):
    return [entry for entry in section_pages if (ROOT / entry[0]).exists()]


def entry(page_file: str) -> tuple[str, str, str, str]:
    """(file, label, icon, url path) of a page file."""
    for _, pages in SECTIONS:
        for e in pages:
            if e[0] == page_file:
                return e
    raise KeyError(page_file)


def label_of(page_file: str) -> str:
    return entry(page_file)[1]


def url_path_of(page_file: str) -> str:
    return entry(page_file)[3]


@functools.lru_cache(maxsize=1)
def _pages() -> tuple[tuple[str, tuple], ...]:
    """The st.Page objects, built once per process (each resolves its path and hashes it)."""
    out = []
    for section, pages in SECTIONS:
        found = existing(pages)
        if found:
            out.append((section, tuple(st.Page(f, title=label, icon=icon, url_path=path or None, default=f == HOME)
                                       for f, label, icon, path in found)))
    return tuple(out)


def navigation():
    """The one navigation message: every page, in its section; returns the page to run.

    Each run gets its own shallow copies of the cached pages: st.navigation marks the page it
    returns as callable (a flag on the object), and sessions run in parallel threads."""
    return st.navigation({section: [copy.copy(p) for p in pages] for section, pages in _pages()},
                         position=POSITION)


def where(page_file: str) -> str:
    """'Forward pass › 7 · Multi-head': the section and the page (the top bar shows sections only)."""
    for section, pages in SECTIONS:
        for f, label, _, _ in pages:
            if f == page_file:
                return f"{section} › {label}"
    raise KeyError(page_file)


def order() -> list[str]:
    """Every page of the navigation, section after section: the path previous/next links follow."""
    return list(_order())


@functools.lru_cache(maxsize=1)
def _order() -> tuple[str, ...]:
    """Read once per process, like the st.Page objects (_pages): a page file's existence is a disk call, and a
    call that gives up the GIL waits to get it back behind every busy session (30 students switching page
    at once after a push: about 60 of them a run)."""
    return tuple(entry[0] for _, pages in SECTIONS for entry in existing(pages))


def section_of(page_file: str) -> str:
    return next(section for section, pages in SECTIONS if any(e[0] == page_file for e in pages))


def md_link(page_file: str, text: str, query: dict[str, str] | None = None) -> str:
    """A Markdown link to a page, relative to the app's root (so it works behind a proxy's path), with the
    settings: for a mention of another page inside a sentence."""
    from urllib.parse import quote, urlencode
    url = "./" + url_path_of(page_file) + ("?" + urlencode(query, quote_via=quote, safe=",") if query else "")
    return f"[{text}]({url})"


def step_nav(current: str, query: dict[str, str] | None = None) -> None:
    """'← previous / next →' along the whole navigation, at the end of every page: the forward pass leads on
    into the next section, and so on to the last page. Crossing into another section, a link names it. The
    links carry the settings, so one opened in a new tab (a new session) shows the same numbers."""
    pages = order()
    if current not in pages:
        return
    i = pages.index(current)
    prev = pages[i - 1] if i > 0 else None
    nxt = pages[i + 1] if i + 1 < len(pages) else None
    st.divider()
    # one row, the links at its two ends: 3 elements (the columns it replaced made 6)
    row = st.container(horizontal=True, horizontal_alignment="distribute" if prev and nxt else
                       "left" if prev else "right")
    here = section_of(current)
    name = lambda f: label_of(f) if section_of(f) == here else f"{section_of(f)} › {label_of(f)}"
    if prev:
        row.page_link(prev, label=f"← {name(prev)}", query_params=query or None)
    if nxt:
        row.page_link(nxt, label=f"{name(nxt)} →", query_params=query or None)

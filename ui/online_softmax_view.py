"""The online-softmax page's views: the running state as a clickable table, the final division, the torch check."""
from __future__ import annotations

import functools

import numpy as np
import streamlit as st

from attention_core import ConfigError, Trace
from attention_core.explain import explain, fmt
from attention_core.lesson_online_softmax import check_block_size

KEY_B, KEY_b, GOOD_B = "online_softmax.block_size", "online_softmax.block", "online_softmax.good_block_size"

RECURRENCE = (
    "$$\n\\begin{aligned} m_i' &= \\max\\big(m_i,\\ \\max_{j \\in b} (S_b)_{ij}\\big) \\\\ "
    "\\ell_i' &= e^{m_i - m_i'}\\, \\ell_i + \\textstyle\\sum_{j \\in b} e^{(S_b)_{ij} - m_i'} \\\\ "
    "o_i' &= e^{m_i - m_i'}\\, o_i + \\textstyle\\sum_{j \\in b} e^{(S_b)_{ij} - m_i'}\\, v_j \\end{aligned}"
    "\\qquad \\begin{aligned} &m_i = -\\infty,\\ \\ell_i = 0,\\ o_i = 0 \\text{ before block 0} \\\\ "
    "&C_i = o_i / \\ell_i \\text{ after the last block} \\\\ &m_i + \\log \\ell_i = \\log \\textstyle\\sum_j e^{\\hat S_{ij}} "
    "\\end{aligned}\n$$\n\n"
    ":small[FlashAttention-2's recurrence (Dao, 2023, Algorithm 1) in this app's notation: (S_b)_ij = q_i · k_j / √d_k "
    "for the keys j of block b, −∞ where the mask hides key j from query i; a prime is the value after the block. "
    "The paper's line 10 writes diag(e^(m − m′))**⁻¹** O: that ⁻¹ is a typo (flash-attention issue #991); the "
    "factor multiplies, as here, and the code on this page and in the paper's own kernels does not invert it.]")



def block_size_slider(where, n: int) -> int:
    """B from 1 to n. A stored B that is no block size (0, −1, text: a tampered session) gets a message and the
    last good B back; a B larger than n (the sentence got shorter) is kept: one block, and the page says so."""
    raw = st.session_state.get(KEY_B)
    if raw is not None:
        try:
            raw = check_block_size(raw, n)
        except ConfigError as err:
            st.error(f"{err} The last good block size is kept.", icon=":material/error:")
            raw = st.session_state[KEY_B] = st.session_state.get(GOOD_B, 1)
    top = max(n, 2, raw or 0)
    B = where.slider("Block size B (keys per block)", 1, top, 1, key=KEY_B,
                     help="How many keys are read at a time. FlashAttention picks it to fit a tile in on-chip memory.")
    st.session_state[GOOD_B] = B
    return B


def block_slider(where, n_blocks: int) -> int:
    """b from 0 to n_blocks − 1 (a stored b beyond the last block moves to the last); one block: no slider."""
    raw = st.session_state.get(KEY_b, 0)
    if not isinstance(raw, int) or isinstance(raw, bool) or not 0 <= raw < n_blocks:
        st.session_state[KEY_b] = max(0, min(n_blocks - 1, raw if isinstance(raw, int) else 0))
    if n_blocks == 1:
        where.markdown(":small[One key block: b = 0.]")
        return 0
    return where.slider("Key block b", 0, n_blocks - 1, min(1, n_blocks - 1), key=KEY_b,
                        help="Step through the blocks: the table shows every row's m, ℓ and o after block b.")


def _cells(values) -> list[str]:
    return [fmt(v, 3, latex=False).replace("-inf", "−∞") for v in values]


def _state_columns(lesson: Trace) -> list[tuple[str, str, object]]:
    d_v = lesson["o"].shape[1]
    return ([("m_i before", "m_prev", None), ("m_i′", "m", None), ("e^(m_i − m_i′)", "rescale", None),
             ("ℓ_i′", "l", None)] + [(f"o_i′[{c}]", "o", c) for c in range(d_v)])


def _final_columns(lesson: Trace) -> list[tuple[str, str, object]]:
    d_v = lesson["context"].shape[1]
    return ([("ℓ_i", "l_final", None)] + [(f"C_i[{c}] = o_i[{c}] / ℓ_i", "context", c) for c in range(d_v)]
            + [("m_i + log ℓ_i", "lse", None), ("logsumexp_j Ŝ_ij (plain)", "logsumexp", None)])


@functools.lru_cache(maxsize=128)
def _table(lesson: Trace, which: str):
    """(columns, pyarrow Table of text cells, column config), once per cached lesson: a pyarrow Table goes to
    the browser as is (a pandas frame is converted on every rerun, a Styler costs ~0.03 ms per cell). In the
    state table ▲ marks a running maximum that rose and ▼ its factor < 1, ⤼ a row whose tile was skipped."""
    import pyarrow as pa
    f = lesson.facts
    columns = _state_columns(lesson) if which == "state" else _final_columns(lesson)
    data = {f"c{n}": _cells(lesson[k].value if c is None else lesson[k].value[:, c]) for n, (_, k, c) in enumerate(columns)}
    if which == "state":
        for i in f["rescaled"]:
            data["c1"][i], data["c2"][i] = f"▲ {data['c1'][i]}", f"▼ {data['c2'][i]}"
        for i in f["skipped_here"]:
            data["c1"][i] = f"⤼ {data['c1'][i]}"
    table = pa.table({"query": [f"{i}: {w}" for i, w in enumerate(lesson.tokens)], **data})
    config = {"query": st.column_config.TextColumn("query i", pinned=True),
              **{f"c{n}": st.column_config.TextColumn(label) for n, (label, _, _) in enumerate(columns)}}
    return columns, table, config


def _clickable(lesson: Trace, which: str, key: str) -> None:
    """The lesson's numbers as a table, one row per query; a selected cell's arithmetic under it."""
    columns, table, config = _table(lesson, which)
    state = st.dataframe(table, column_config=config, key=key, on_select="rerun", selection_mode="single-cell",
                         width="content", hide_index=True)
    cells = list(state.selection.cells) if "selection" in state else []
    if cells and str(cells[0][1]).startswith("c"):
        from .explain_view import explanation
        row, name = cells[0]
        _, step, c = columns[int(str(name)[1:])]
        cell = (int(row),) if c is None else (int(row), c)
        explanation(explain(lesson, step, cell), float(lesson[step].value[cell]))


@st.fragment
def block_panel(lesson: Trace, title: str) -> None:
    """S_b and the tile map as heatmaps, then the state table, in one fragment: a click in any of them reruns
    these three (not the page), and a page run pays for one fragment instead of three."""
    from .views import explained_heatmap_box
    b = lesson.facts["block"]
    c1, c2 = st.columns([3, 2])
    with c1:
        explained_heatmap_box(lesson, lesson["s_b"], key="online_softmax.hm.s_b", max_w=360, title=title)
    with c2:
        explained_heatmap_box(lesson, lesson["tiles"], key="online_softmax.hm.tiles", max_w=240,
                              title=f"B × B tiles: 1 computed, 0 skipped (now: column b={b})")
    state_table(lesson)


def state_table(lesson: Trace) -> None:
    """m_i before, then m_i′, e^(m_i − m_i′), ℓ_i′ and o_i′ after block b, one row per query."""
    f = lesson.facts
    _clickable(lesson, "state", "online_softmax.state")
    legend = (["▲ the running maximum rose in this block, ▼ the factor < 1 that first multiplied ℓ_i and o_i"]
              if f["rescaled"] else []) + (["⤼ the row's tile was skipped"] if f["skipped_here"] else [])
    st.caption("; ".join(legend + ["−∞: no key seen yet. Select a number for its arithmetic."]))


@st.fragment
def final_table(lesson: Trace) -> None:
    """ℓ_i and C_i = o_i / ℓ_i after the last block, m_i + log ℓ_i and the plain logsumexp beside it."""
    _clickable(lesson, "final", "online_softmax.final")


def torch_check(lesson: Trace) -> None:
    """The same head through torch: SDPA with the explicit bool mask, and torch.logsumexp of the masked scores."""
    import torch
    q, k, v = (torch.tensor(lesson[name].value) for name in ("q", "k", "v"))
    mask = torch.tensor(lesson["mask"].value.astype(bool)) if "mask" in lesson else None
    ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask).numpy()
    s = q @ k.T / lesson.facts["d_k"] ** 0.5
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    lse = torch.logsumexp(s, dim=-1).numpy()
    seen = np.isfinite(lse)                                        # a row that sees no key: left out below
    c_gap = np.abs(lesson["context"].value[seen] - ref[seen]).max() if seen.any() else 0.0
    l_gap = np.abs(lesson["lse"].value[seen] - lse[seen]).max() if seen.any() else 0.0
    empty = np.flatnonzero(~seen)
    torch_gives = "NaN" if np.isnan(ref[empty]).any() else "0"
    st.markdown(
        f"`torch.nn.functional.scaled_dot_product_attention(Q, K, V{', attn_mask=M' if mask is not None else ''})` "
        f"in float64: max |C − torch| = **{c_gap:.1e}**.  \n`torch.logsumexp(Ŝ, dim=-1)`: max |(m_i + log ℓ_i) − "
        f"torch| = **{l_gap:.1e}**."
        + ("" if seen.all() else f"  \n:small[Rows {', '.join(map(str, empty))} see no key: torch {torch.__version__} "
                                  f"gives {torch_gives} there, this app 0; logsumexp is −∞ on both sides. They are "
                                  "left out of the two maxima.]"))

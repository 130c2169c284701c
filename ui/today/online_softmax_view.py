"""The online-softmax page's views: its own controls, the block's scores and the running state as clickable
charts and tables, the final division, and what the page is checked against."""
from __future__ import annotations

import functools

import numpy as np
import streamlit as st

from attention_core import ConfigError, Trace
from attention_core.forward.claims import say
from attention_core.explanations import explain, fmt
from attention_core.lessons.online_softmax import Controls, check_block_size, recurrence_parts

from .. import page_state
from ..room import hide as room_hide
from ..settings_state import presenting

KEY_B, KEY_b, KEY_h = "online_softmax.block_size", "online_softmax.block", "online_softmax.head"
GOOD_B = "online_softmax.good_block_size"


def _keep(key: str, lo: int, hi: int) -> int:
    """A slider's value kept within lo … hi and set again before it is drawn: a slider whose bounds change (a
    new B changes the number of blocks) is a new widget to Streamlit, which would start it at its minimum."""
    page_state.fit(key, lo, hi)
    value = page_state.value(key)
    st.session_state[key] = value
    return value


def head_value(n_heads: int) -> int:
    """The head h in force (0 … H − 1), before its slider is drawn (the text above it names the head)."""
    return int(_keep(KEY_h, 0, n_heads - 1))


def controls(n: int, n_heads: int) -> tuple[int, int, int]:
    """The page's own controls, B, b and (with several heads) h, drawn with their declared keys and no default
    of their own (ui/page_state.py declares them). A stored B that is no block size (0, −1, text: a tampered
    session) gets a message and the last good B back; a B larger than n (the sentence got shorter) is kept:
    one block, and the page says so."""
    cols = st.columns(3 if n_heads > 1 else 2)
    raw = st.session_state.get(KEY_B)
    if raw is not None:
        try:
            raw = check_block_size(raw, n)
        except ConfigError as err:
            st.error(f"{err} The last good block size is kept.", icon=":material/error:")
            raw = st.session_state[KEY_B] = st.session_state.get(GOOD_B, 1)
    top = max(n, 2, raw or 0)
    _keep(KEY_B, 1, top)
    B = cols[0].slider("Block size B_c (keys per block)", 1, top, key=KEY_B,
                       help="How many keys are read at a time (FlashAttention's B_c; its query blocks B_r are as many "
                            "rows here). FlashAttention picks it to fit a tile in on-chip memory.")
    st.session_state[GOOD_B] = B
    n_blocks = -(-n // B)
    _keep(KEY_b, 0, n_blocks - 1)
    if n_blocks == 1:
        cols[1].markdown(":small[One key block: b = 0.]")
        b = 0
    else:
        b = cols[1].slider("Key block b", 0, n_blocks - 1, key=KEY_b,
                           help="Step through the blocks: the table shows every row's m, ℓ and o after block b.")
    h = head_value(n_heads)
    if n_heads > 1:
        h = cols[2].slider("Head h", 0, n_heads - 1, key=KEY_h,
                           help="Which of the sidebar's heads the blocks compute (each head has its own scores).")
    page_state.sync()                                  # the link with the values kept inside their bounds
    return B, b, h


def score_note(c: Controls) -> None:
    """An additive or bilinear score: said in sight, with one click to FlashAttention's own score."""
    words = say("os_any_score", c, score=c.config.score)
    if words:
        st.markdown(f":small[{words}.]")
        from ..settings import sidebar_button
        sidebar_button("Use the scaled dot product (FlashAttention's score)", {"score": "scaled_dot"},
                       key="online_softmax.use_scaled_dot", help="Sets the sidebar's score function.")


def recurrence(config, heads: bool) -> None:
    """The updates and the start/end formulas side by side where the page is wide enough, one under the other
    where it is not (a presenter's 1024 px), then the caption."""
    updates, ends, caption = recurrence_parts(config, heads)
    row = st.container(horizontal=True, gap="large", horizontal_alignment="center")
    row.markdown(f"$$\n{updates}\n$$", width="content")
    row.markdown(f"$$\n{ends}\n$$", width="content")
    st.markdown(caption)


def _cells(values) -> list[str]:
    return [fmt(v, 3, latex=False).replace("-inf", "−∞") for v in values]


def _state_columns(lesson: Trace) -> list[tuple[str, str, object]]:
    d_v = lesson["o"].shape[1]
    return ([("m_i before", "m_prev", None), ("m_i′", "m", None), ("e^(m_i − m_i′)", "rescale", None),
             ("ℓ_i′", "l", None)] + [(f"o_i′[{c}]", "o", c) for c in range(d_v)])


def _final_columns(lesson: Trace, short: bool = False) -> list[tuple[str, str, object]]:
    """short (presenter mode): C_i[c] alone over its column, the division said once above the table."""
    d_v = lesson["context"].shape[1]
    return ([("ℓ_i", "l_final", None)] + [(f"C_i[{c}]" if short else f"C_i[{c}] = o_i[{c}] / ℓ_i", "context", c)
                                          for c in range(d_v)]
            + [("m_i + log ℓ_i", "lse", None), (f"{lesson['logsumexp'].title} (whole row)", "logsumexp", None)])


@functools.lru_cache(maxsize=128)
def _table(lesson: Trace, which: str, short: bool = False):
    """(columns, pyarrow Table of text cells, column config), once per cached lesson: a pyarrow Table goes to
    the browser as is (a pandas frame is converted on every rerun, a Styler costs ~0.03 ms per cell). In the
    state table ▲ marks a running maximum that rose and ▼ its factor < 1, ⤼ a row whose tile was skipped."""
    import pyarrow as pa
    f = lesson.facts
    columns = _state_columns(lesson) if which == "state" else _final_columns(lesson, short)
    data = {f"c{n}": _cells(lesson[k].value if c is None else lesson[k].value[:, c]) for n, (_, k, c) in enumerate(columns)}
    if which == "state":
        for i in f["rescaled"]:
            data["c1"][i], data["c2"][i] = f"▲ {data['c1'][i]}", f"▼ {data['c2'][i]}"
        if f["block"] > 0:
            for i in f["first_seen"]:
                data["c1"][i] = f"● {data['c1'][i]}"
        for i in f["skipped_here"]:
            data["c1"][i] = f"⤼ {data['c1'][i]}"
    table = pa.table({"query": [f"{i}: {w}" for i, w in enumerate(lesson.tokens)], **data})
    config = {"query": st.column_config.TextColumn("query i", pinned=True),
              **{f"c{n}": st.column_config.TextColumn(label) for n, (label, _, _) in enumerate(columns)}}
    return columns, table, config


def _hidden(columns, table, config):
    """The table as this screen may show it: a lesson stop's hidden numbers (a student's screen, the projector's,
    before the reveal) become "?"; out of a room, or with nothing hidden, the cached table as it is."""
    flags = {n: [room_hide.hidden(k, None, i, 0 if c is None else c) for i in range(table.num_rows)]
             for n, (_, k, c) in enumerate(columns) if room_hide.any_hidden(k)}
    for n, hid in flags.items():
        if any(hid):
            import pyarrow as pa
            name = f"c{n}"
            cells = table.column(name).to_pylist()
            table = table.set_column(table.schema.get_field_index(name), name,
                                     pa.array([room_hide.HIDDEN_SAYS if h else x for x, h in zip(cells, hid)]))
    return columns, table, config


def _clickable(lesson: Trace, which: str, key: str) -> None:
    """The lesson's numbers as a table, one row per query; a selected cell's arithmetic under it. The selected
    cell is the link's cell (as a heatmap's is), and a link's cell is explained again when the page opens."""
    columns, table, config = _hidden(*_table(lesson, which, presenting()))
    state = st.dataframe(table, column_config=config, key=key, on_select="rerun", selection_mode="single-cell",
                         width="content", hide_index=True)
    cells = list(state.selection.cells) if "selection" in state else []
    cell = None
    if cells and str(cells[0][1]).startswith("c"):
        cell = (int(cells[0][0]), int(str(cells[0][1])[1:]))
    page_state.click(key, cell)
    if cell is None:
        cell = page_state.restored(key)
        if cell is not None and not (cell[0] < lesson.n and cell[1] < len(columns)):
            cell = None                                   # a link's cell outside this table: none opened
    if cell is not None:
        from ..explain_view import explanation
        _, step, c = columns[cell[1]]
        at = (cell[0],) if c is None else (cell[0], c)
        if room_hide.hidden(step, None, cell[0], 0 if c is None else c):
            st.info(f"{columns[cell[1]][0]} of row {cell[0]} is hidden until your teacher reveals it: predict it first.",
                    icon=":material/visibility_off:")
            return
        explanation(explain(lesson, step, at), float(lesson[step].value[at]), table=True)


@st.fragment
def block_panel(lesson: Trace, title: str) -> None:
    """S_b and the tile map as heatmaps, then the state table, in one fragment: a click in any of them reruns
    these three (not the page), and a page run pays for one fragment instead of three. The charts' titles are
    Markdown above them (they wrap; a chart's own title is cut to the chart's width)."""
    from ..views import explained_heatmap_box
    b = lesson.facts["block"]
    c1, c2 = st.columns([3, 2])
    with c1:
        st.markdown(f"**{title}**")
        explained_heatmap_box(lesson, lesson["s_b"], key="online_softmax.hm.s_b", max_w=360)
    with c2:
        f = lesson.facts
        tiles = ("**Which tiles are computed**" if f["n_tiles"] > 1 else "**Is the one tile computed**") + (
            f" (B_r × B_c = {f['block_size']} × {f['block_size']} scores each, B_r = B_c here)"
            if f["block_size"] < lesson.n else f" (all {lesson.n} × {lesson.n} scores, as B_c ≥ n)")
        st.markdown(f"{tiles}: a cell is 1 if its tile is computed, 0 if it is skipped. "
                    f"Rows are query blocks, columns key blocks; this block is column b = {b}.")
        explained_heatmap_box(lesson, lesson["tiles"], key="online_softmax.hm.tiles", max_w=240)
    state_table(lesson)


def block_note(lesson: Trace, keys: str) -> str:
    """What S_b is in this block: made only now, or never computed when every score of it is masked."""
    f = lesson.facts
    b = f["block"]
    if f["all_skipped"]:
        return f"S_{b} is never computed: every score in it is masked."
    part = (" (the rows of its skipped tiles are never computed: −∞ there)" if f["skipped_here"] else "")
    return f"S_{b} holds {keys.replace('key', 'column')} of {f['reads_text']}, made only now{part}."


def memory_text(lesson: Trace) -> str:
    """How many scores exist at once, for this block size (B_c ≥ n: one block, one tile)."""
    f, n = lesson.facts, lesson.n
    B = f["block_size"]
    if B < n:
        held = f"n_q × B_c = {n} × {B}"
        row = "every query row against one block of keys"
        tile = f"one B_r × B_c tile (B_r = B_c = {B} here: {B} × {B} = {B * B} score{'s' if B > 1 else ''})"
    else:
        held = f"n_q × n_k = {n} × {n}"
        row = (f"B_c = {B} {'is more than' if B > n else 'equals'} the n_k = {n} keys, so they all fit in one block: "
               "every query row against all of them")
        tile = f"one tile (all {n} × {n} = {n * n} scores here, as B_c ≥ n)"
    return (f"At most **{held} = {f['held']}** score {'entry exists' if f['held'] == 1 else 'entries exist'} at a time "
            f"({row}); the plain softmax holds all **n_q × n_k = {f['full']}**. FlashAttention also cuts the queries "
            f"into blocks, so {tile} sits in the GPU's fast on-chip memory; the n × n matrix is never written to its "
            "main memory, which is what makes it fast and long contexts fit.")


def state_table(lesson: Trace) -> None:
    """m_i before, then m_i′, e^(m_i − m_i′), ℓ_i′ and o_i′ after block b, one row per query."""
    f = lesson.facts
    _clickable(lesson, "state", "online_softmax.state")
    legend = ((["▲ the running maximum rose in this block, ▼ the factor < 1 that first multiplied ℓ_i and o_i"]
              if f["rescaled"] and not room_hide.waits("m", "rescale") else []) + (["● the row's first keys"] if f["block"] > 0 and f["first_seen"] else [])
              + (["⤼ the row's tile was skipped"] if f["skipped_here"] else []))
    st.caption("; ".join(legend + ["−∞: no key seen yet. Select a number for its arithmetic."]))


@st.fragment
def final_table(lesson: Trace) -> None:
    """ℓ_i and C_i = o_i / ℓ_i after the last block, m_i + log ℓ_i and the whole row's logsumexp beside it."""
    if presenting():                  # the columns' headers are short on a projector: the division said here
        st.markdown("$C_i[c] = o_i[c]\\,/\\,\\ell_i$ for each column c of $o_i$:")
    _clickable(lesson, "final", "online_softmax.final")


def v_symbol(lesson: Trace) -> str:
    f = lesson.facts
    if f["n_heads"] == 1:
        return "V"
    return "V_⌊h/g⌋" if f["config"].kv_heads < f["n_heads"] else "V_h"


def checks(lesson: Trace) -> str:
    """What the page's numbers were checked against, in words (the closed box; torch runs only when it opens)."""
    import torch
    f = lesson.facts
    config = f["config"]
    x, a = f["reads_text"], "A_h" if f["n_heads"] > 1 else "A"
    q, k, v = (torch.tensor(lesson[name].value) for name in ("q", "k", "v"))
    mask = torch.tensor(lesson["mask"].value.astype(bool)) if "mask" in lesson else None
    reads = torch.tensor(lesson["reads"].value)
    if config.score in ("dot", "scaled_dot"):
        scale = (1 / q.shape[1] ** 0.5 if config.score == "scaled_dot" else 1.0) / config.temperature
        bias = None
        if f["slope"] is not None:
            i = torch.arange(lesson.n, dtype=torch.float64)
            bias = -f["slope"] * (i[:, None] - i[None, :]).abs() / config.temperature
        attn = bias if mask is None else (mask if bias is None else bias.masked_fill(~mask, float("-inf")))
        ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=attn, scale=scale).numpy()
        how = ("PyTorch's own attention function, in 64-bit floats, on the same queries, keys and values"
               + (", ALiBi's bias" if bias is not None else "") + (" and mask" if mask is not None else "")
               + f", with the scale {'1/(T√d_k)' if config.score == 'scaled_dot' else '1/T'}")
    else:
        ref = (torch.softmax(reads, dim=-1) @ v).numpy()                  # NaN for a row of −∞
        how = (f"PyTorch's softmax over the forward pass's whole rows of {x}, times {v_symbol(lesson)} (its attention "
               f"function computes only dot-product scores)")
    lse = torch.logsumexp(reads, dim=-1).numpy()
    seen = np.isfinite(lse)                                        # a row that sees no key: left out below
    c_gap = np.abs(lesson["context"].value[seen] - ref[seen]).max() if seen.any() else 0.0
    l_gap = np.abs(lesson["lse"].value[seen] - lse[seen]).max() if seen.any() else 0.0
    empty = np.flatnonzero(~seen)
    gives = "NaN" if np.isnan(ref[empty]).any() else "0"
    lines = [
        f"- **Each block's scores.** S_{f['block']} holds the same numbers as the forward pass's {x} in "
        f"those columns (the forward pass makes whole rows at once): max |difference| = {f['s_diff']:.1e}, −∞ in "
        f"{'the same' if f['s_same_mask'] else 'DIFFERENT'} places.",
        f"- **The result.** C after the last block against the forward pass's {a} {v_symbol(lesson)}: max |difference| "
        f"= {f['max_diff']:.1e}; m_i + log ℓ_i against each row's logsumexp computed in one go: {f['lse_diff']:.1e}.",
        f"- **PyTorch, live.** {how}: max |C − PyTorch| = {c_gap:.1e}. PyTorch's logsumexp of the same whole rows: "
        f"max |(m_i + log ℓ_i) − PyTorch| = {l_gap:.1e}."
        + ("" if seen.all() else f" Rows {', '.join(map(str, empty))} see no key: PyTorch {torch.__version__} gives "
                                 f"{gives} there, this page 0; both logsumexps are −∞. They are left out of the two "
                                 "maxima."),
        "- **Every number you click** is made again from its terms, one by one (a value carried over from an earlier "
        "block, from that block's), and compared with the cell (✓).",
        "- **The app's tests** run the recurrence on random queries, keys, values and masks against "
        "PyTorch for every block size; check that this page's C is the forward pass's under RoPE, ALiBi, grouped "
        "key/value heads, windows, padding that hides every key, temperatures and every score function; and walk "
        "the page under such settings to check that each sentence on it is shown only where it holds.",
    ]
    return "\n".join(lines)

import numpy as np
import pyarrow as pa
import streamlit as st

import ui
from ui.room import hide as room_hide
from ui.text import md_escape

PAGE = "app_pages/6_context.py"


@st.fragment
def one_word(trace, n_heads: int) -> None:
    """One output row as a weighted sum of value rows; picking another word reruns only this part."""
    i = ui.one_word_picker(trace, "Output row for")
    w, v, c = trace["weights"].value, trace["v"].value, trace["context"].value
    if n_heads > 1:
        st.caption("With several heads each head mixes its own value columns; this shows head 0.")
        w, v, c = w[0], trace["v_heads"].value[0], c[0]
    st.latex(rf"c_{{{i}}} = \sum_j A_{{{i},j}}\, v_j")
    labels = trace.token_labels()
    d_v, shown = v.shape[1], min(v.shape[1], 8)
    terms = w[i][:, None] * v[:, :shown]                              # (n_k, shown): A[i, j] v[j, m]
    # one row per key j, then the sums over j (none for the value columns, which are not summed);
    # a pyarrow table: Streamlit sends it as is (a pandas frame costs a conversion on every rerun)
    columns = {"key j": labels + ["Σ over j"], f"A[{i}, j]": np.append(w[i], w[i].sum())}
    gaps = tuple(f"v[j,{m}]" for m in range(d_v))                         # their Σ cell stays empty
    columns |= {g: ui.views.gapped_column(np.append(v[:, m], np.nan), 3) for m, g in enumerate(gaps)}
    columns |= {f"A·v[j,{m}]": np.append(terms[:, m], terms[:, m].sum()) for m in range(shown)}
    config = ui.views.number_columns(tuple(columns)[1:], 3, gaps)
    secret = _hidden_here(trace, i, n_heads, len(labels), d_v, shown)
    if secret:                        # a lesson stop's hidden numbers (a student's screen, before the reveal): "?"
        config = dict(config)
        for name, flags in secret.items():
            values = columns[name] if name not in gaps else np.append(v[:, int(name[4:-1])], np.nan)
            columns[name], _ = room_hide.column(values, 3, flags)
            config[name] = st.column_config.TextColumn(alignment="right")
    st.dataframe(pa.table(columns), hide_index=True, width="content", column_config=config)
    st.caption(f"Each A·v[j, m] is A[{i}, j] times v[j, m]. The last row adds each column over the keys j: "
               f"under A·v it is c_{i}, the context row of **{md_escape(trace.tokens[i])}**, repeated below "
               f"(under A[{i}, j], the weights' sum, {w[i].sum():.3f}).")
    ui.vector_row(c[i][:8], [f"c[{i},{m}]" for m in range(min(d_v, 8))],
                  hidden=[m for m in range(min(d_v, 8)) if room_hide.hidden("context", head_of(n_heads), i, m)])
    if secret:
        st.caption(room_hide.STUDENT_CAPTION)


def head_of(n_heads: int):
    return None if n_heads == 1 else 0


def _hidden_here(trace, i: int, n_heads: int, n: int, d_v: int, shown: int) -> dict[str, list[bool]]:
    """The table's columns with a hidden number in them (each entry's flag, the Σ row last): a weight A[i, j], a
    value v[j, m], a product made from either, a sum that is a hidden context number or is made from one."""
    h = head_of(n_heads)
    v_key = "v" if n_heads == 1 else "v_heads"
    if not any(room_hide.any_hidden(k) for k in ("weights", v_key, "context")):
        return {}
    a = [room_hide.hidden("weights", h, i, j) for j in range(n)]
    v = [[room_hide.hidden(v_key, h, j, m) for j in range(n)] for m in range(d_v)]
    out = {f"A[{i}, j]": a + [any(a)]}
    out |= {f"v[j,{m}]": v[m] + [False] for m in range(d_v)}
    for m in range(shown):
        terms = [a[j] or v[m][j] for j in range(n)]
        out[f"A·v[j,{m}]"] = terms + [any(terms) or room_hide.hidden("context", h, i, m)]
    return {name: flags for name, flags in out.items() if any(flags)}


@st.fragment
def all_words(trace, n_heads: int) -> None:
    """A and V side by side, then C = A V; one fragment for the three boxes (a click or a table
    toggle reruns them, not the page)."""
    c1, c2 = st.columns(2)
    with c1:                 # half-width cards: charts sized for half the page
        ui.views.step_box(trace, "weights", max_w=300)
    with c2:
        ui.views.step_box(trace, "v_heads" if n_heads > 1 else "v", max_w=300)
    ui.views.step_box(trace, "context")


config, trace = ui.page(PAGE, "Context vectors")
ui.notices(trace)
word = md_escape(trace.tokens[0])      # a word of this sentence, whatever it is
st.markdown("Each token's new representation is a **weighted average of the value rows**, mixed by its "
            f"row of attention weights: C = A V. A token that puts most of its weight on “{word}” takes on mostly "
            f"the value row of “{word}”.")

ui.views.word_tabs("context.tab", lambda: one_word(trace, config.n_heads),      # only the open tab runs
                   lambda: all_words(trace, config.n_heads))

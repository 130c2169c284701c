"""The KV cache page's views: the cache per KV head, the decoding panels in one fragment, the head-sharing
table and the cache-size calculator (chart specs and tables cached per content)."""
from __future__ import annotations

import contextlib
import functools

import numpy as np
import streamlit as st

from attention_core import lesson_kv_cache as kv
from attention_core.claims import say
from attention_core.explain import can_explain, explain

from .explain_view import explanation
from .views import _explain_cell, badge_text, click_hint, heatmap


def _charts_of(trace, key: str, new_rows: list[int]):
    """(step, head, title, highlight) per heatmap of a step: one per KV head for the cache, else one."""
    s, f = trace[key], trace.facts
    if s.axes[0] != "KV head":
        return [(s, None, s.title, None)]
    g = f["g"]
    outline = [(r, c) for r in new_rows for c in range(s.shape[2])]
    return [(s, h, f"KV head {h} (query head{'s' if g > 1 else ''} "
             + ", ".join(str(q) for q in range(h * g, (h + 1) * g)) + ")", outline) for h in range(s.shape[0])]


def group_box(trace, keys: tuple[str, ...], title: str, note: str, new_rows: list[int] = (), stack: bool = False,
              lead: str = "") -> None:
    """Several steps in one card: one Markdown for the title, shapes and formulas, one caption, their heatmaps
    side by side (the cache: one per KV head, the rows added at this step outlined, one colour scale per
    step), a clicked cell's arithmetic under them. Fewer elements than a step box each."""
    steps = [trace[k] for k in keys]
    with st.container(border=True):
        st.markdown(f"##### {title}\n\n" + (f"{lead}\n\n" if lead else "") + " &nbsp; ".join(f"{s.title.split(' ·')[0]} {badge_text(s)}" for s in steps)
                    + "\n\n$$\n" + r" \qquad ".join(s.formula for s in steps) + "\n$$")
        st.caption(f"{note} " + click_hint(all(can_explain(trace, k) for k in keys)))
        charts = [c for k in keys for c in _charts_of(trace, k, list(new_rows))]
        rows = ([[c] for c in charts] if stack else [charts] if len(charts) <= 4
                else [[c for c in charts if c[0].key == k] for k in keys])
        clicked = None
        for row in rows:                     # a wrapping horizontal container: one block, not a column each
            with st.container(horizontal=True, gap="medium") if len(row) > 1 else contextlib.nullcontext():
                for s, h, name, outline in row:
                    finite = s.value[np.isfinite(s.value)]
                    bound = float(np.abs(finite).max()) if finite.size and s.scale == "diverging" else 0.0
                    cell = heatmap(trace, s, h, title=name if len(charts) > 1 else None, key=f"kv_cache.hm.{s.key}.{h}",
                                   max_w=900 if len(row) == 1 else 280, highlight=outline,
                                   domain=(-bound, bound) if bound > 0 else None)
                    if cell is not None:
                        clicked = (s.key, h, cell)
        if clicked is not None:
            _explain_cell(trace, clicked[0], clicked[1:], anchor=f"kv_cache.{'.'.join(keys)}")


def decode_panels(trace, status: str, proof: str) -> None:
    """The live proof, what step t does, q_t, the K and V caches, the score row and its weights, the context
    and output rows. Not a fragment: a fragment costs ~0.7 ms on every page run, and here the step slider
    (a whole-page rerun) is moved far more often than a cell is clicked."""
    f = trace.facts
    new_rows = [r for r, p in enumerate(f["positions"]) if (p < f["settings"].prefill if f["prefill"] else p == f["t"])]
    group_box(trace, ("q_t",), f"Step t = {f['t']}: “{trace.tokens[f['t']]}”", trace["q_t"].why,
              lead=f"{proof}\n\n{status}")
    group_box(trace, ("kv_cache",), "The cache: K and V, a row per cached token", trace["kv_cache"].why
              + f" Outlined: the row{'s' if len(new_rows) > 1 else ''} added at this step.", new_rows)
    group_box(trace, ("scores_t", "weights_t"), f"q_{f['t']} against the cache: scores and weights", trace["scores_t"].why)
    group_box(trace, ("context_t", "output_t"), f"The output row of token {f['t']}", trace["output_t"].why, stack=True)


def status_text(trace) -> str:
    """What step t does, in one Markdown line."""
    f = trace.facts
    t, s, positions = f["t"], f["settings"], f["positions"]
    word = trace.tokens[t]
    kept = (f"the cache holds tokens {positions[0]} … {positions[-1]} ({len(positions)} rows)" if len(positions) > 1
            else f"the cache holds token {positions[0]} (1 row)")
    if f["prefill"]:
        if s.prefill == 1:
            return f"**t = 0 “{word}”** is in the prompt, a prompt of one token: {kept}."
        return (f"**t = {t} “{word}”** is in the prompt: tokens 0 … {s.prefill - 1} went through together "
                f"(prefill), their K and V rows entered the cache at once, and row {t} of the prompt's scores is "
                f"masked after token {t}; {kept}.")
    out = (f" and token {t - s.window}'s row falls out (older than the window)" if s.window is not None and t >= s.window
           else "")
    return (f"**t = {t} “{word}”** is decoded alone: x_{t} W_Q, x_{t} W_K and x_{t} W_V are this step's only "
            f"projections, one row is appended{out}; {kept}.")


def sentence(text: str) -> str:
    """A claim's words as a sentence: first letter up, a full stop ('' stays '')."""
    return text[:1].upper() + text[1:] + "." if text else ""


def proof_text(check: dict, s: kv.KVSettings) -> str:
    mask = "causal_mask(n)" if s.window is None else f"sliding_window_mask(n, {s.window})"
    return (f":green-background[:material/check_circle: **Decoding = the full pass.**] "
            f"max |o_decoded − o_full| = **{check['outputs']:.2g}** over all "
            f"{s.n} output rows; max |a_t − A_full[t]| = **{check['weights']:.2g}** over every step's weights. "
            f":small[Checked live against grouped_query_attention(X, X, W_Q, W_K, W_V, W_O, H={s.n_heads}, "
            f"H_kv={s.n_kv_heads}, mask={mask}): the whole sentence at once, no cache.]")


def torch_text(result: dict, s: kv.KVSettings) -> str:
    lines = [f"torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=M, enable_gqa=True), M the "
             f"explicit bool {'causal' if s.window is None else f'window-{s.window}'} mask: max |torch − decoded| = "
             f"**{result['mask']:.2g}**"]
    if result["is_causal"] is not None:
        lines.append(f"the same with is_causal=True: **{result['is_causal']:.2g}**")
    return ";  \n".join(lines) + (f"  \n:small[q (1, {s.n_heads}, n, d_head), k and v (1, {s.n_kv_heads}, n, d_head): "
                                  "torch repeats each KV head for its g query heads, as ⌊h/g⌋ here.]")


# ---- who shares which KV head ---------------------------------------------------------------------------

def shapes_table(s: kv.KVSettings, d_head: int):
    """MHA, the page's setting and MQA side by side: H_kv, the cache's shape, values kept, vs MHA."""
    import pandas as pd
    rows = {}
    for name, h_kv in (("MHA", s.n_heads), ("GQA" if 1 < s.n_kv_heads < s.n_heads else None, s.n_kv_heads),
                       ("MQA", 1)):
        if name is None or name in rows:
            continue
        rows[name] = {"H_kv": h_kv, "K and V cache, each": f"({h_kv}, {s.kept}, {d_head})",
                      "values per token (K + V)": 2 * h_kv * d_head, f"values after {s.n} tokens": 2 * h_kv * s.kept * d_head,
                      "× smaller than MHA": s.n_heads // h_kv, "yours": "←" if h_kv == s.n_kv_heads else ""}
    return pd.DataFrame(rows.values(), index=list(rows))


def sharing_claims(s: kv.KVSettings) -> str:
    words = [say(k, s, g=s.g, n_kv_heads=s.n_kv_heads, n_heads=s.n_heads)
             for k in ("kv_mha_own_heads", "kv_mqa_one_head", "kv_gqa_smaller")]
    return "Here " + "; ".join(w for w in words if w) + "."


# ---- the calculator -------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=32)
def memory_chart(bytes_per_value: int, max_tokens: int, chosen: str) -> dict:
    """Memory against context length, one line per preset, the chosen one bold with its MHA twin dashed."""
    import altair as alt
    rows = [r for r in kv.memory_curves(bytes_per_value, max_tokens) if r["cache"] != "MHA" or r["preset"] == chosen]
    chosen_test = alt.datum.preset == chosen
    spec = alt.Chart(alt.Data(values=rows)).mark_line().encode(
        x=alt.X("tokens:Q", title="context length (tokens)", scale=alt.Scale(domain=[0, max_tokens])),
        y=alt.Y("GiB:Q", title="KV cache, GiB (one sequence)"),
        color=alt.Color("preset:N", title=None, sort=list(kv.PRESETS), legend=alt.Legend(orient="right"),
                        scale=alt.Scale(scheme="tableau10")),
        strokeDash=alt.StrokeDash("cache:N", title=None, sort=["as published", "MHA"]),
        strokeWidth=alt.condition(chosen_test, alt.value(3), alt.value(1.5)),
        opacity=alt.condition(chosen_test, alt.value(1.0), alt.value(0.45)),
        tooltip=["preset:N", "cache:N", alt.Tooltip("tokens:Q", format=","), alt.Tooltip("GiB:Q", format=".3f")],
    ).properties(width="container", height=300).to_dict()
    return spec


def calculator_table(trace):
    import pandas as pd
    b = trace["cache_bytes"].value
    rows = []
    for p, (per, now, mha) in zip(kv.PRESETS.values(), b):
        heads = "latent 512 + 64" if p.latent else f"{p.n_heads} / {p.n_kv_heads}"
        window = "—" if p.window is None else (f"{p.window:,}" if p.local_layers == p.layers
                                                else f"{p.window:,}, {p.local_layers} of {p.layers} layers")
        tokens = f"{trace.facts['tokens']:,}"
        rows.append({"layers": p.layers, "H / H_kv": heads, "d_head": p.d_head, "window": window,
                     "per token": kv.human(per), f"at {tokens} tokens": kv.human(now),
                     f"MHA at {tokens}": kv.human(mha)})
    return pd.DataFrame(rows, index=list(kv.PRESETS))


NUMBERS = ("per token", "at ", "MHA at ")        # the explained columns: bytes per token, at L tokens, as MHA


@st.fragment
def calculator_cells(trace) -> None:
    """The presets' table; a selected cell's arithmetic (bytes per token, at L tokens, as MHA) under it."""
    state = st.dataframe(calculator_table(trace), key="kv_cache.calc.table", on_select="rerun",
                         selection_mode="single-cell", width="content",
                         column_config={"window": st.column_config.TextColumn(width="medium")})
    cells = list(state.selection.cells) if state is not None and "selection" in state else []
    if not cells:
        st.caption(":material/touch_app: Select a number in the table to see its arithmetic.")
        return
    row, name = cells[0]
    quantity = next((q for q, start in reversed(list(enumerate(NUMBERS))) if str(name).startswith(start)), 0)
    e = explain(trace, "cache_bytes", (int(row), quantity))
    explanation(e, float(trace["cache_bytes"].value[e.cell]))


def calculator_claims(p: kv.Preset) -> str:
    words = [say(k, p, window=p.window or 0) for k in ("kv_calc_window", "kv_calc_half_window", "kv_calc_latent")]
    return "; ".join(w for w in words if w)


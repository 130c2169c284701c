"""The KV cache page's views: what differs from the sidebar (said in sight, one click to match), the decoding
panels, the head-sharing table, the cache-size calculator and the page's "How this page is checked" box."""
from __future__ import annotations

import contextlib
import functools

import numpy as np
import streamlit as st

from attention_core.lessons import kv_cache as kv
from attention_core.forward.claims import say
from attention_core.explanations import can_explain, explain

from ..room import hide as room_hide
from ..colours import SERIES
from ..explain_view import explanation
from ..page_state import KV_CACHE_TABS
from ..settings import MASK_LABELS, SCORE_LABELS, sidebar_button
from ..views import badge_text, click_hint, explain_cell, heatmap

TABS = KV_CACHE_TABS
POSITION_WORDS = {"rope": "RoPE", "alibi": "ALiBi", "sinusoidal": "sinusoidal", "learned": "a learned table",
                  "index": "the index feature", "none": "no positional encoding"}


def differences(config) -> str:
    """What this page decodes that is not the sidebar's forward pass, said in sight with a one-click button
    to make the sidebar match; returns the words naming the pass the page compares with."""
    used = kv.decoding_config(config)
    score = f" and its score {SCORE_LABELS['scaled_dot'].split('  ')[0]}" if config.score != used.score else ""
    if config.mask in ("none", "padding"):
        keys = sorted(set(config.padding))
        hidden = (f" (hiding key{'s' if len(keys) > 1 else ''} {', '.join(map(str, keys))})"
                  if config.mask == "padding" and keys else "")
        words, button = st.columns([5, 2], vertical_alignment="center")
        with words:
            st.info(f"The sidebar's mask is **{MASK_LABELS[config.mask].split(' (')[0]}**{hidden}. Decoding sees only "
                    "earlier tokens, so it equals the forward pass **with the causal mask**: the pass this page "
                    f"decodes and checks against. With the sidebar's mask Causal{score}, these are pages 5–7's numbers.",
                    icon=":material/info:")
        with button:
            sidebar_button("Set the sidebar's mask to Causal", {"mask": "causal"}, key="kv_cache.use_causal",
                           help="Pages 5–7 then show the same forward pass this page decodes"
                                + (" once the score is the scaled dot product too (the button below)." if score else "."))
    if config.score != used.score:
        words, button = st.columns([5, 2], vertical_alignment="center")
        with words:
            st.warning(f"The sidebar's score is **{SCORE_LABELS[config.score]}**: this page decodes the scaled dot "
                       "product q·k/√d_k instead (an additive or bilinear score is not decoded here), so its numbers "
                       "are not pages 4–7's.", icon=":material/warning:")
        with button:
            sidebar_button("Set the score to scaled dot", {"score": "scaled_dot"}, key="kv_cache.use_scaled",
                           help="Sets the sidebar's score function to the scaled dot product QKᵀ/√d_k.")
    changed = [w for w, on in (("the causal mask", used.mask != config.mask),
                               ("the scaled dot product", used.score != config.score)) if on]
    return "the forward pass of pages 5–7" + (f", with {' and '.join(changed)}" if changed else
                                              " (the sidebar's settings)")


def window_text(config, n: int) -> str:
    """The sidebar's window in the first paragraph: the cache as a rolling buffer of W rows ('' without a window)."""
    s = kv.settings_for(config, 0, 0, n)
    words = [say(k, s, window=s.window, w_back=(s.window or 1) - 1) for k in ("kv_rolling_buffer", "kv_window_of_one")]
    return "".join(f"{w}. " for w in words if w)


def in_force(config) -> str:
    """The sidebar's settings this page decodes with, in one line."""
    c = kv.decoding_config(config)
    h, h_kv = c.n_heads, c.kv_heads
    heads = f"H = {h} query head{'s' if h > 1 else ''}, H_kv = {h_kv} KV head{'s' if h_kv > 1 else ''}" + (
        "" if h == 1 else " (MHA)" if h_kv == h else " (MQA)" if h_kv == 1 else " (GQA)")
    position = POSITION_WORDS[c.positional] + (f" (base {c.pe_base:,g})" if c.positional == "rope" else "")
    window = f"window W = {c.window}" if c.mask == "sliding_window" else "causal, no window"
    score = "scaled dot" if c.score == "scaled_dot" else "dot (not scaled)"
    return (f":material/tune: From the sidebar: **{heads}**, d_k = {c.d_k}, d_v = {c.d_v}, **{position}**, "
            f"**{window}**, {score}, T = {c.temperature:g}, W_Q, W_K, W_V {'trained' if c.weights == 'trained' else 'seeded'}"
            f"{', biases on' if c.bias else ''}. Change them in the sidebar.")


# ---- decoding ---------------------------------------------------------------------------------------------

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
        st.markdown(f"##### {title}\n\n" + (f"{lead}\n\n" if lead else "")
                    + " &nbsp; ".join(f"{s.title.split(' ·')[0]} {badge_text(s)}" for s in steps)
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
                                   domain=(-bound, bound) if bound > 0 else None, keys=True)
                    if cell is not None:
                        clicked = (s.key, h, cell)
        if clicked is not None:
            explain_cell(trace, clicked[0], clicked[1:], anchor=f"kv_cache.{'.'.join(keys)}")


def decode_panels(trace, status: str, proof: str) -> None:
    """The live proof, what step t does, q_t, the K and V caches, the score row and its weights, the context
    and output rows. Not a fragment: a fragment costs ~0.7 ms on every page run, and here the step slider
    (a whole-page rerun) is moved far more often than a cell is clicked."""
    f = trace.facts
    s = f["settings"]
    new_rows = [r for r, p in enumerate(f["positions"]) if (p < s.prefill if f["prefill"] else p == f["t"])]
    group_box(trace, ("q_t",), f"Step t = {f['t']}: “{trace.tokens[f['t']]}”", trace["q_t"].why,
              lead=f"{proof}\n\n{status}")
    group_box(trace, ("kv_cache",), "The cache: K and V, a row per cached token", trace["kv_cache"].why
              + f" Outlined: the row{'s' if len(new_rows) > 1 else ''} added at this step.", new_rows)
    scores = ("scores_t", "alibi_t", "logits_t", "weights_t") if f["alibi"] else ("scores_t", "weights_t")
    group_box(trace, scores, f"q{'^R' if f['rope'] else ''}_{f['t']} against the cache: scores and weights",
              " ".join(trace[k].why for k in scores if trace[k].why))
    group_box(trace, ("context_t", "output_t"), f"The output row of token {f['t']}", trace["output_t"].why, stack=True)


def _span(positions: list[int]) -> str:
    return (f"tokens {positions[0]} … {positions[-1]} ({len(positions)} rows)" if len(positions) > 1
            else f"token {positions[0]} (1 row)")


def status_text(trace) -> str:
    """What step t does, in one Markdown paragraph, with the cache's growth under this window."""
    f = trace.facts
    t, s, positions = f["t"], f["settings"], f["positions"]
    word = trace.tokens[t]
    kept = f"the cache holds {_span(positions)}"
    biases = " plus their biases" if "b_q" in trace else ""
    rope = f", q_{t} and k_{t} then turned by position {t} as RoPE does" if f["rope"] else ""
    if s.together:
        masks = ([f"after token {t}"] if t < s.prefill - 1 else []) + (
            [f"before token {t - s.window + 1} (the window)"] if s.window is not None and t >= s.window else [])
        seen = f"is masked {' and '.join(masks)}" if masks else "sees every prompt token"
        line = (f"**t = {t} “{word}”** is in the prompt: tokens 0 … {s.prefill - 1} went through together "
                f"(prefill), their K and V rows entered the cache at once, and row {t} of the prompt's scores "
                f"{seen}; {kept}.")
    else:
        prompt = (" the prompt of one token," if s.prefill == 1 and t == 0 else "")
        out = (f"token {t - s.window}'s row falls out (older than the window) and "
               if s.window is not None and t >= s.window else "")
        line = (f"**t = {t} “{word}”** is{prompt} decoded alone: q_{t}, k_{t} and v_{t}, row {t} of X times W_Q, "
                f"W_K, W_V{biases}, are this step's only projections{rope}; {out}one row is appended; {kept}.")
    tokens = f"{s.window} token{'s' if s.window != 1 else ''}" if s.window is not None else ""
    prompt_rows = f" (the prompt's {s.prefill} rows enter at once)" if s.prefill > 1 else ""
    growth = [say(k, s, window=s.window, window_tokens=tokens, prefill=s.prefill, n_tokens=kv.count(s.n, "token"),
                  prompt_rows=prompt_rows)
              for k in ("kv_grows", "kv_stops_growing", "kv_prompt_beyond_window", "kv_window_covers")]
    return line + " " + " ".join(sentence(w) for w in growth if w)


def sentence(text: str) -> str:
    """A claim's words as a sentence: first letter up, a full stop ('' stays '')."""
    return text[:1].upper() + text[1:] + "." if text else ""


def proof_text(check: dict, n: int, against: str) -> str:
    return (f":green-background[:material/check_circle: **Decoding = the full pass.**] "
            f"max |o_decoded − O| = **{check['outputs']:.2g}** over {'all ' if n > 1 else ''}{kv.count(n, 'output row')}; "
            f"max |a_t − A[t]| = **{check['weights']:.2g}** over every step's weights. "
            f":small[O and A: {against}, the whole sentence at once, no cache.]")


# ---- who shares which KV head ---------------------------------------------------------------------------

def shapes_table(s: kv.KVSettings, d_k: int, d_v: int):
    """MHA, the sidebar's setting and MQA side by side: H_kv, the cache's shape, values kept, vs MHA."""
    import pandas as pd
    rows = {}
    for name, h_kv in (("MHA", s.n_heads), ("GQA" if 1 < s.n_kv_heads < s.n_heads else None, s.n_kv_heads),
                       ("MQA", 1)):
        if name is None or name in rows or any(r["H_kv"] == h_kv for r in rows.values()):
            continue
        rows[name] = {"H_kv": h_kv, "K cache": f"({h_kv}, {s.kept}, {d_k})", "V cache": f"({h_kv}, {s.kept}, {d_v})",
                      "values per token (K + V)": h_kv * (d_k + d_v),
                      f"values after {s.n} tokens": h_kv * s.kept * (d_k + d_v),
                      "× smaller than MHA": s.n_heads // h_kv, "yours": "←" if h_kv == s.n_kv_heads else ""}
    return pd.DataFrame(rows.values(), index=list(rows))


def sharing_text(s: kv.KVSettings) -> str:
    if s.n_heads == 1:
        return ("With the sidebar's one head (Heads = 1) there is one query head and one K and V head: nothing to "
                "share. Set Heads to 2 or more in the sidebar, then its KV heads, to see GQA and MQA shrink the cache.")
    words = [say(k, s, g=s.g, n_kv_heads=s.n_kv_heads, n_heads=s.n_heads,
                 kv_heads_words=kv.count(s.n_kv_heads, "KV head"))
             for k in ("kv_mha_own_heads", "kv_mqa_one_head", "kv_gqa_smaller")]
    return (f"With the sidebar's H = {s.n_heads} query heads and H_kv = {s.n_kv_heads} KV "
            f"head{'s' if s.n_kv_heads > 1 else ''}, g = H / H_kv = {s.g}: query head h reads KV head ⌊h / {s.g}⌋. "
            "Here " + "; ".join(w for w in words if w) + ".")


# ---- the calculator -------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=32)
def memory_chart(bytes_per_value: int, max_tokens: int, chosen: str, waiting: tuple = ()) -> dict:
    """Memory against context length, one line per preset, the chosen one bold with its MHA twin dashed; the
    presets in `waiting` (a lesson stop's hidden byte counts, before the reveal) are left out."""
    import altair as alt
    rows = [r for r in kv.memory_curves(bytes_per_value, max_tokens)
            if (r["cache"] != "MHA" or r["preset"] == chosen) and r["preset"] not in waiting]
    chosen_test = alt.datum.preset == chosen
    spec = alt.Chart(alt.Data(values=rows)).mark_line().encode(
        x=alt.X("tokens:Q", title="context length (tokens)", scale=alt.Scale(domain=[0, max_tokens])),
        y=alt.Y("GiB:Q", title="KV cache, GiB (one sequence)"),
        color=alt.Color("preset:N", title=None, sort=list(kv.PRESETS), legend=alt.Legend(orient="right"),
                        scale=alt.Scale(range=SERIES)),
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
        width = f"K {p.d_head + 64}, V {p.d_head}" if p.latent else str(p.d_head)   # K: 128 + RoPE's 64
        r = len(rows)             # a lesson stop's hidden byte counts (a student's screen, before the reveal): "?"
        shown = [room_hide.HIDDEN_SAYS if room_hide.hidden("cache_bytes", None, r, q) else kv.human(x)
                 for q, x in enumerate((per, now, mha))]
        rows.append({"layers": p.layers, "H / H_kv": heads, "d_head": width, "window": window,
                     "max positions": f"{p.context:,}", "per token": shown[0], f"at {tokens} tokens": shown[1],
                     f"MHA at {tokens}": shown[2]})
    return pd.DataFrame(rows, index=list(kv.PRESETS))


NUMBERS = ("per token", "at ", "MHA at ")        # the explained columns: bytes per token, at L tokens, as MHA


@st.fragment
def calculator_cells(trace) -> None:
    """The presets' table; a selected cell's arithmetic (bytes per token, at L tokens, as MHA) under it."""
    state = st.dataframe(calculator_table(trace), key="kv_cache.calc.table", on_select="rerun",
                         selection_mode="single-cell", width="content",
                         column_config={"window": st.column_config.TextColumn(width="medium"),
                                        "d_head": st.column_config.TextColumn(width=92)})
    cells = list(state.selection.cells) if state is not None and "selection" in state else []
    name = str(cells[0][1]) if cells else ""
    quantity = next((q for q, start in reversed(list(enumerate(NUMBERS))) if name.startswith(start)), None)
    if quantity is None:
        st.caption(":material/touch_app: Select a byte count in the table (per token, at the context length, as "
                   "MHA) to see its arithmetic.")
        return
    if room_hide.hidden("cache_bytes", None, int(cells[0][0]), quantity):
        st.info("This byte count is hidden until your teacher reveals it: predict it first.",
                icon=":material/visibility_off:")
        return
    e = explain(trace, "cache_bytes", (int(cells[0][0]), quantity))
    explanation(e, float(trace["cache_bytes"].value[e.cell]), table=True)


def calculator_text(s: kv.CalcSettings, per_value: int) -> str:
    p, tokens = s.preset, s.tokens
    words = [say("kv_calc_window", s, window=p.window or 0),
             say("kv_calc_some_global", s, n_global=p.global_layers, layers=p.layers, window=p.window or 0,
                 n_local=p.local_layers),
             say("kv_calc_latent", s),
             say("kv_calc_beyond_context", s, tokens=tokens, name=p.name, context=p.context)]
    claims = " ".join(sentence(w) for w in words if w)
    return (f"**{p.name}:** {kv.human(kv.bytes_per_token(p, per_value))} per token, "
            f"**{kv.human(kv.cache_bytes(p, tokens, per_value))}** at {tokens:,} tokens "
            f"(MHA: {kv.human(kv.cache_bytes(p, tokens, per_value, mha=True))}). {claims}"
            f"  \n:small[:gray[{p.source}.]]")


# ---- how this page is checked -----------------------------------------------------------------------------

def checked_text(config, prefill: int) -> str:
    """The page's checks in words: live where they are cheap, torch when the box is opened."""
    check = kv.check_against_full_pass(config, prefill)
    torch = kv.torch_check(config, prefill)
    c = kv.decoding_config(config)
    rotated = "rotated " if c.positional == "rope" else ""
    matrix = ("the window" if c.mask == "sliding_window" else "the causal mask") + (
        " and ALiBi's bias" if c.positional == "alibi" else "")
    flag = (f" PyTorch's causal flag instead of the mask matrix gives **{torch['is_causal']:.2g}** too."
            if torch["is_causal"] is not None else "")
    return (
        "**Decoding against the forward pass, live.** Every output row the cache gives is compared with the forward "
        f"pass's output O (max |o_decoded − O| = {check['outputs']:.2g}), every step's weights with the same entries "
        f"of A ({check['weights']:.2g}), every query row with the forward pass's {rotated}Q "
        f"({check['queries']:.2g}) and every cached key and value row with its {rotated}K and V ({check['keys']:.2g}, "
        f"{check['values']:.2g}). The tests repeat this under trained and seeded weights, biases, RoPE, ALiBi, MHA, "
        "GQA and MQA, windows shorter and longer than the prompt, one-token "
        "sentences, prompt lengths from 0 (every token alone) to n (the whole sentence as the prompt).\n\n"
        f"**Against PyTorch, live.** The forward pass's {rotated}Q, {rotated}K and V go through PyTorch's own "
        "attention, with its grouped-query option repeating each KV head for its g query heads (⌊h/g⌋ here), the "
        f"{matrix} as one matrix: max |torch − decoded| = **{torch['mask']:.2g}**.{flag}"
        "\n\n**Each clicked number** is recomputed from the numbers it is made of (the sums, the rotation, the "
        "softmax), and X, W_Q, W_K, W_V, W_O are made again by a fresh forward pass; the tests compare every cell's "
        "recomputed value with the one drawn.\n\n"
        "**The cache's shapes** in the head-sharing table are the shapes of the decoder's own final cache, and "
        "the decoded cache is g = H / H_kv times smaller than MHA's (tests).\n\n"
        "**The calculator** is checked by hand in the tests (Llama 3 8B: 2 · 32 · 8 · 128 · 2 = 131,072 bytes = "
        "128 KiB per token); each preset's layers, heads, KV heads, head width, window and maximum positions (and "
        "DeepSeek-V3's latent width 512 and RoPE key width 64) are the values of its published configuration file; "
        "Gemma 2's alternation of local and global layers is from its report. A selected "
        "cell's arithmetic recomputes the table's number.")

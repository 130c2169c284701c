"""The next-token page's views: its controls, the probabilities as bars (before and after T, the kept set,
renormalised), the sample, the tokens generated one at a time, and the layer-1 heads of the last position."""
from __future__ import annotations

import streamlit as st

from attention_core import ConfigError, Trace
from attention_core.lessons.next_token import MAX_NEW, next_token_trace
from attention_core.math.sampling import softmax_t
from attention_core.training.lm.model import ARCH, N_CTX, N_HEADS, VOCAB

from .. import nav
from ..colours import SERIES
from ..room import hide as room_hide
from ..text import md_escape as md_safe

EXAMPLE = "the cat sat on the mat and the cat sat on the"
KEYS = ("next_token.temperature", "next_token.k", "next_token.p", "next_token.seed", "next_token.n_new")
GOOD = "next_token.good"
SHOWN = 15                                        # bars drawn: the most probable tokens
PROBABILITIES = ("probs", "renormalised")         # a lesson stop that hides them: the bars and p′ wait too


def token_text(f: dict, j: int) -> str:
    """Token j as the page names it: its word, or ⟨token j⟩ for a token no word of the sentence was given."""
    return f["labels"][j] if j < len(f["words"]) else f"⟨token {j}⟩"


def quoted(f: dict, j: int) -> str:
    """Token j in running text: “its word”, or ⟨token j⟩ (markdown-safe)."""
    return f"“{md_safe(f['labels'][j])}”" if j < len(f["words"]) else f"⟨token {j}⟩"


def intro() -> None:
    st.markdown(
        "A language model reads a sentence and, at its **last position**, gives one logit z_j per token of its "
        f"vocabulary. Softmax turns the logits into probabilities, and the next token is **drawn** from them. The "
        f"model here is small ({ARCH.n_layers} layers of attention, {N_HEADS} heads each, {VOCAB} tokens, a context "
        f"of {N_CTX}) and was trained on one task only: **copying**, on random tokens in which a stretch repeats. "
        "What it learned does not depend on which token is which, so each distinct word of the sidebar's sentence "
        "becomes one of its tokens, in order of first appearance. A sentence with a repeated phrase can then be "
        "continued by copying: after “the”, look at what followed “the” before. :small[:gray[Of the sidebar, only the "
        "sentence is read here: the model brings its own embeddings, learned positions and causal attention; the "
        "other settings are the attention pages'.]]")


def controls() -> tuple[float, int, float, int, int]:
    """T, top-k, top-p, the seed and the tokens generated, drawn with their declared keys."""
    a, b, c, d, e = st.columns([1.2, 1, 1.2, 1, 1.2])
    T = a.slider("Temperature T", 0.0, 3.0, step=0.05, key=KEYS[0],
                 help="The logits are divided by T before softmax. T < 1 sharpens, T > 1 flattens, T = 0 is argmax.")
    k = b.number_input("top-k", 0, VOCAB, step=1, key=KEYS[1],
                       help=f"Keep only the k tokens with the largest logits (the k most probable; a token tied with the "
                            f"k-th is kept too), k at most the vocabulary's {VOCAB}. 0 or {VOCAB}: off.")
    p = c.slider("top-p", 0.0, 1.0, step=0.05, key=KEYS[2],
                 help="Keep the fewest most probable tokens whose probabilities add up to p_top, this threshold "
                      "(equal probabilities: the lower token number first; at least one token). 1: off.")
    seed = d.number_input("Seed", 0, 2 ** 31 - 1, step=1, key=KEYS[3],
                          help="Seeds the uniform draws u: the same seed draws the same tokens.")
    n_new = e.slider("Tokens to generate", 0, MAX_NEW, key=KEYS[4],
                     help="Each token is appended and the model run again on the longer input.")
    return float(T), int(k), float(p), int(seed), int(n_new)


def lesson(sentence: str, T: float, k: int, p: float, seed: int, n_new: int) -> Trace | None:
    """The Trace, or the last good one with the message (a sentence the model cannot read, a bad setting)."""
    try:
        trace = next_token_trace(sentence, T, k, p, seed, n_new)
    except ConfigError as err:
        good = st.session_state.get(GOOD)
        st.error(f"{err} " + ("Showing the last settings that worked." if good else ""), icon=":material/error:")
        return next_token_trace(*good) if good else None
    st.session_state[GOOD] = (sentence, T, k, p, seed, n_new)
    return trace


def example_button(trace: Trace) -> None:
    """One click to a sentence with a repeated phrase (it sets the sidebar's sentence), shown while the sentence
    has no repeat of its last word."""
    from ..settings import sidebar_button
    if not trace.facts["targets"]:
        st.info(f"“{md_safe(trace.tokens[-1])}”, the last word, does not occur earlier in the words the model "
                "reads, so there is nothing earlier to copy: the model, trained only to copy, has no good guess.",
                icon=":material/info:")
    if " ".join(trace.tokens) != EXAMPLE:
        sidebar_button(f"Use a sentence with a repeat: “{EXAMPLE}”", {"sentence": EXAMPLE},
                       key="next_token.example", help="Sets the sidebar's sentence (every page then uses it).")


def notes(trace: Trace) -> None:
    for n in trace.notices:
        st.warning(n, icon=":material/content_cut:")
    for n in trace.facts["notes"]:
        st.info(n, icon=":material/info:")


def _bars(trace: Trace, renormalised: bool = True) -> dict:
    """Grouped bars of the SHOWN most probable tokens: softmax(z), softmax(z / T), and p′ (the kept set; left out
    with renormalised=False: a lesson stop still hides it); a Vega-Lite spec written out (altair's validation cost
    more than the rest of the page's rerun)."""
    f, z = trace.facts, trace["logits"].value
    p1, pT, q, kept = softmax_t(z, 1.0), trace["probs"].value, trace["renormalised"].value, trace["kept"].value
    order = sorted(range(z.size), key=lambda j: (-pT[j], -z[j]))[:SHOWN]
    T = f"{f['temperature']:g}"
    names = ("1 · softmax(z)  (T = 1)", f"2 · softmax(z / T)  (T = {T})" if f["temperature"] else
             "2 · T = 0: argmax (1 on the largest z)", "3 · p′: kept, renormalised")
    rows = []
    for rank, j in enumerate(order):
        label = f"{token_text(f, j)}{' ✓' if kept[j] else ''}"
        for name, v in list(zip(names, (p1[j], pT[j], q[j])))[:3 if renormalised else 2]:
            rows.append({"token": label, "rank": rank, "series": name, "probability": float(v),
                         "kept": "kept" if kept[j] else "dropped"})
    top = max(r["probability"] for r in rows)
    nominal = lambda field: {"field": field, "type": "nominal"}
    return {"data": {"values": rows}, "mark": {"type": "bar"}, "width": max(420, 46 * len(order)), "height": 210,
            "encoding": {
                "x": {**nominal("token"), "sort": {"field": "rank"}, "title": None,
                      "axis": {"labelAngle": -40, "labelOverlap": False, "labelLimit": 90}},
                "xOffset": nominal("series"),
                "y": {"field": "probability", "type": "quantitative", "scale": {"domain": [0, min(1, top * 1.1)]}},
                "color": {**nominal("series"), "scale": {"range": SERIES}, "title": None,
                          "legend": {"orient": "top", "direction": "horizontal", "labelLimit": 260}},
                "opacity": {"condition": {"test": "datum.kept === 'kept'", "value": 1.0}, "value": 0.35},
                "tooltip": [nominal("token"), nominal("series"),
                            {"field": "probability", "type": "quantitative", "format": ".4f"}, nominal("kept")]},
            "autosize": {"type": "pad", "contains": "padding"}}


def bars(trace: Trace) -> None:
    from ..views import chart
    if room_hide.waits("probs"):                      # the bars are p themselves
        st.caption(room_hide.WAITS)
        return
    f = trace.facts
    n_kept = int(trace["kept"].value.sum())
    later = room_hide.waits("renormalised")          # p shown (its stop revealed), p′ still a later stop's answer
    st.markdown(f"The {SHOWN} most probable of the {trace['logits'].shape[0]} tokens after T. ✓ marks a token "
                f"kept by top-k and top-p (faded: dropped; **{n_kept}** of the {trace['logits'].shape[0]} "
                f"{'is' if n_kept == 1 else 'are'} kept); " +
                ("bar 3, p′, what the sample is drawn from, waits for your teacher's reveal." if later else
                 "bar 3 is what the sample is drawn from."))
    chart(_bars(trace, renormalised=not later))
    if f["temperature"] and f["temperature"] != 1:
        st.caption("T divides the logits before softmax, so bars 1 and 2 differ; dividing the probabilities after "
                   "softmax and renormalising would give bars 1 back: T would change nothing.")


def sample(trace: Trace) -> None:
    f, q, F = trace.facts, trace["renormalised"].value, trace["cdf"].value
    j = f["token"]
    if room_hide.waits(*PROBABILITIES, "cdf"):        # u's stretch F_{j−1} … F_j is p′_j
        st.caption(room_hide.WAITS)
        return
    before = F[j - 1] if j > 0 else 0.0
    if f["temperature"] == 0:
        st.markdown(f"T = 0: the next token is the argmax, **{quoted(f, j)}** (p′ = 1), whatever the "
                    f"draw u = {f['u']:.4f}.")
        return
    st.markdown(
        f"Seeded with {f['seed']}, numpy's generator draws **u = {f['u']:.4f}**. Laying the kept tokens' p′ end to end "
        f"in token order (F_j = p′_0 + … + p′_j), u falls in the stretch of {quoted(f, j)}{f' (token {j})' if j < len(f['words']) else ''}, "
        f"{before:.4f} ≤ u < {F[j]:.4f}: the next token is **{quoted(f, j)}** (p′ = {q[j]:.4f}). "
        "The same seed draws the same u, so the same token.")


def every_number(trace: Trace) -> None:
    from ..views import step_boxes
    box = st.expander("Every number of this next token, clickable: z, z / T, p, kept, p′, F", key="next_token.numbers",
                      on_change="rerun")              # lazy: drawn only while open
    if box.open:
        with box:
            step_boxes(trace, ["logits", "scaled", "probs", "kept", "renormalised", "cdf"], key_prefix="nt:")


def generated(trace: Trace) -> None:
    f = trace.facts
    gen = f["generated"]
    if not gen:
        st.caption("No tokens generated (the slider is at 0).")
        return
    words = " ".join(md_safe(w) for w in trace.tokens)
    new = " ".join(f"**{md_safe(token_text(f, g['token']))}**" for g in gen)
    kv = nav.md_link("app_pages/42_kv_cache.py", "the KV cache page", st.session_state.get("s.query") or None)
    cut = any(g["cut"] for g in gen)
    same = ("the earlier positions' keys and values come out the same every time. Keeping them instead of "
            "recomputing them is what makes generation cheap" if not cut else
            f"until the input fills the model's {N_CTX} positions, the earlier positions' keys and values come out "
            "the same every time; after that the oldest token is dropped and every token moves one learned position "
            "back, so they all change and this model must recompute them. Keeping them is what makes generation "
            "cheap")
    how = ("Each token is the argmax as above (T = 0: its u, in the table, changes nothing)" if f["temperature"] == 0
           else "Each token is drawn as above with its own u")
    st.markdown(f"{words} {new}  \n:small[{how}, appended, and the whole "
                f"model run again on the longer input: {same}: see {kv}.]")
    import pyarrow as pa
    st.dataframe(pa.table({"step": [g["t"] + 1 for g in gen], "u": [round(g["u"], 4) for g in gen],
                           "token drawn": [token_text(f, g["token"]) for g in gen],
                           **({} if room_hide.waits(*PROBABILITIES) else {"its p′": [round(g["p"], 4) for g in gen]}),
                           "tokens kept": [g["n_kept"] for g in gen], "argmax": [token_text(f, g["argmax_id"]) for g in gen]}),
                 hide_index=True, width="content")
    n_words = len(f["words"])
    if any(g["token"] >= n_words or g["argmax_id"] >= n_words for g in gen):
        st.caption(f"⟨token k⟩: one of the model's {VOCAB} tokens that no word of the sentence was given, so it "
                   "stands for no word; the sentence's distinct words are " +
                   ("token 0." if n_words == 1 else f"tokens 0 to {n_words - 1}."))
    if cut:
        st.caption(f"The input reached the model's context: only the last {N_CTX} tokens "
                   "are read at each step after that.")


def heads(trace: Trace) -> None:
    """The layer-1 heads' attention of the last position, and where the induction targets are."""
    from ..views import step
    f, tok = trace.facts, trace.tokens
    targets = f["targets"]
    if targets:
        where = ", ".join(f"{j} (“{md_safe(tok[j])}”)" for j in targets)
        many = len(targets) > 1
        st.markdown(f"The last word, “{md_safe(tok[-1])}”, appeared before; the token{'s' if many else ''} right "
                    f"after its earlier occurrence{'s are at positions' if many else ' is at position'} {where}. An "
                    "induction head looks there, and copies what it finds.")
    prev = f["previous"]
    if trace.n > 1 and room_hide.waits("previous"):   # a lesson stop asks which head is the previous-token head
        st.caption(room_hide.WAITS)
    elif trace.n == 2:
        st.markdown("In layer 0, " + ", ".join(f"head {h} puts **{w:.2f}**" for h, w in enumerate(prev)) + " of the "
                    "second word's attention on the first. With two words the token just before is also the first "
                    "token, so a previous-token head cannot be told from a head that looks at the first token: "
                    "type a longer sentence to see which head looks one token back.")
    elif trace.n > 2:
        best = max(range(len(prev)), key=prev.__getitem__)
        others = ", ".join(f"head {h} {w:.2f}" for h, w in enumerate(prev) if h != best)
        st.markdown(f"In layer 0, head {best} puts on average **{prev[best]:.2f}** of each position's attention on "
                    f"the token just before it (the others: {others}): the previous-token head.")
    if room_hide.waits("heads"):                     # a lesson stop asks which head copies: its weights wait
        st.caption(room_hide.WAITS)
        step(trace, "heads", key_prefix="nt:")
        return
    lines = []
    for h in f["heads"]:
        on = f" ({h['on_targets']:.2f} in all on those positions)" if targets else ""
        lines.append(f"head {h['head']}: {h['weight']:.2f} on position {h['top']} (“{md_safe(tok[h['top']])}”){on}")
    st.markdown("Where each head of layer 1 looks most from the last position: " + "; ".join(lines) + ".")
    step(trace, "heads", key_prefix="nt:")

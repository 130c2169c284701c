import streamlit as st

import ui
from attention_core.lessons.torch_mha import score_costs
from ui.variants.score_costs import cost_chart, cost_table
from attention_core.forward.claims import say
from ui.variants.score_panels import score_panel, scores_symbol, softmax_text

PAGE = "app_pages/20_score_functions.py"
config, trace = ui.page(PAGE, "Score functions")
ui.notices(trace)
SCORES = ("dot", "scaled_dot", "additive", "bilinear")
NAMES = {"dot": "Dot product", "scaled_dot": "Scaled dot product", "additive": "Additive (Bahdanau)",
         "bilinear": "Bilinear (Luong's general)"}
PARAMS = {"dot": (), "scaled_dot": (), "additive": ("w_a_q", "w_a_k", "v_a"), "bilinear": ("w_b",)}
SYMBOL = {"w_a_q": "W_1", "w_a_k": "W_2", "v_a": "v", "w_b": "W"}
USED = {
    "dot": "Luong et al. (2015)'s “dot” score. No parameters, but queries and keys must have the same width, "
           "and unscaled the scores' spread grows with d_k: " + say("dot_variance_grows", config) + ".",
    "scaled_dot": "The Transformer's score (Vaswani et al., 2017), in nearly every model since: dividing by √d_k "
                  "keeps the scores' spread from growing with d_k (" + say("scaled_variance_one", config) + "), "
                  "so softmax does not saturate merely because d_k is large.",
    "additive": "Bahdanau et al. (2014)'s alignment model for translation: one small network applied to every "
                "(query, key) pair. It copes with queries and keys of different widths, but builds an "
                "n_q × n_k × d_a array.",
    "bilinear": "Luong's “general” score, used in reading-comprehension models such as the Stanford Attentive "
                "Reader and DrQA: a learned matrix lets every query dimension meet every key dimension.",
}


def number(v: int) -> str:
    """12345 -> '12{,}345' (a comma LaTeX does not space)."""
    return f"{v:,}".replace(",", "{,}")


H, n, d_k = config.n_heads, trace.n, config.d_k
d_a = d_k      # this app's additive score maps queries and keys to a hidden layer as wide as d_k
costs = {c["name"]: c for c in score_costs(n, n, d_k, d_a)}
PAIR = {name: c["score"] for name, c in costs.items()}     # S_ij per (query, key) pair, docs/notation.md
panels = {s: score_panel(config, s) for s in SCORES}     # (trace at temperature 1, weights now)

st.markdown(
    "Every attention first scores each (query, key) pair with one number, the **score** S_ij (tutorial 3 calls "
    "it the energy e); softmax turns each row of scores into the weights A; the weights average the values. Only "
    "the first step differs between the variants. Here are the four from tutorial 3, computed now on **the same "
    "sentence, the same Q and the same K**.")
st.info(f"Sizes now: n = {n} tokens, so n_q = n_k = {n}; d_k = {d_k}; d_a = {d_a} (the additive score's hidden "
        f"width, which this app sets to d_k); H = {H} head{'s' if H > 1 else ''}. Change them in the sidebar."
        + (f" With {H} heads each head h = 0 … {H - 1} scores its own Q_h and K_h (the additive and bilinear "
           f"scores with parameters of their own too); the pictures show head 0 and the costs are per head."
           if H > 1 else "") + ui.settings.sidebar_back(), icon=":material/straighten:")
extras = [w for w, on in (("mask", config.mask != "none"), (f"temperature T = {config.temperature:g}",
                                                           config.temperature != 1)) if on]
if extras:
    st.caption(f"The weights below include the sidebar's {' and '.join(extras)} (for the scaled dot product "
               f"A = {softmax_text(config.replace(score='scaled_dot'))}); the scores do not.")

for score in SCORES:
    (t, weights), c = panels[score], costs[score]
    head = 0 if H > 1 else None
    if PARAMS[score]:
        learns = (", ".join(f"{SYMBOL[k]} ({t[k].shape_text})" for k in PARAMS[score])
                  + ", shown at their seeded random start" + (" (only W_Q, W_K, W_V are trained here)"
                                                              if config.weights == "trained" else ""))
    else:
        learns = "nothing" + (f" (√d_k = {d_k ** 0.5:.3g} is a constant)" if score == "scaled_dot" else "")
    params = "" if c["params_formula"] == "0" else rf"{c['params_formula']} \\ &= "
    with st.container(border=True):
        text, left, right = st.columns([4, 3, 3])
        # the name, both formulas, what it learns and where it is used: one Markdown element, not five
        text.markdown(f"#### {NAMES[score]}\n\n$$\n{PAIR[score]}\n$$\n\n**Learns:** {learns}\n\n"
                      f":small[:gray[{USED[score]}]]\n\n"
                      "$$\n" rf"\begin{{aligned}} \text{{FLOPs}} &= {c['flops_formula']} \\ &= {number(c['flops'])} "
                      rf"\\[4pt] \text{{parameters}} &= {params}{number(c['params'])} \end{{aligned}}" "\n$$")
        with left:
            ui.heatmap(t, t["scaled_scores" if score == "scaled_dot" else "scores"], head=head,
                       title=f"{'scaled scores' if score == 'scaled_dot' else 'scores'} {scores_symbol(score)}"
                             + (" (head 0)" if H > 1 else ""), key=f"sf.hm.s.{score}", max_w=165)
        with right:
            ui.heatmap(t, weights, head=head, title=f"weights A = {softmax_text(config.replace(score=score))}"
                                                    + (" (head 0)" if H > 1 else ""),
                       key=f"sf.hm.w.{score}", max_w=165)

st.header("What each one costs")
st.markdown("A multiply and an add count one FLOP each (a length-d dot product is about 2d), a division or a "
            "tanh one. The count covers the scores only, per head, for all n_q × n_k pairs; the largest "
            "array is what the score has to hold in memory at once.")
st.dataframe(cost_table(n, d_k, d_a, H, tuple(NAMES.items())), hide_index=True, width="content", key="sf.costs")
cheap = min(SCORES, key=lambda s: costs[s]["flops"])
dear = max(SCORES, key=lambda s: costs[s]["flops"])
st.caption(f"At these sizes the {NAMES[dear]} score costs {costs[dear]['flops'] / costs[cheap]['flops']:.1f}× "
           f"the FLOPs of the {NAMES[cheap]} score. Every score is computed for all n² pairs, so all four "
           "grow with the square of the sentence length; the additive one multiplies that by d_a.")
ui.chart(cost_chart(d_k, d_a, tuple(NAMES.items())))

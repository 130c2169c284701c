import streamlit as st

import ui
from attention_core.torch_mha import score_costs
from ui.demo_charts import cost_chart, cost_table
from ui.score_panels import score_panel

PAGE = "app_pages/20_score_functions.py"
config, trace = ui.page(PAGE, "Score functions")
ui.notices(trace)
SCORES = ("dot", "scaled_dot", "additive", "bilinear")
NAMES = {"dot": "Dot product", "scaled_dot": "Scaled dot product", "additive": "Additive (Bahdanau)",
         "bilinear": "Bilinear (Luong's general)"}
# Per pair, in this app's row convention: q_i, k_j rows; W_1, W_2 (d_k, d_a); W (d_k, d_k).
PAIR = {"dot": r"e_{ij} = q_i \cdot k_j",
        "scaled_dot": r"e_{ij} = \frac{q_i \cdot k_j}{\sqrt{d_k}}",
        "additive": r"e_{ij} = v^\top \tanh\!\left(W_1^\top q_i + W_2^\top k_j\right)",
        "bilinear": r"e_{ij} = q_i^\top W k_j"}
PARAMS = {"dot": (), "scaled_dot": (), "additive": ("w_a_q", "w_a_k", "v_a"), "bilinear": ("w_b",)}
SYMBOL = {"w_a_q": "W_1", "w_a_k": "W_2", "v_a": "v", "w_b": "W"}
USED = {
    "dot": "Luong et al. (2015)'s “dot” score. No parameters, but queries and keys must have the same width, "
           "and the scores grow with d_k.",
    "scaled_dot": "The Transformer's score (Vaswani et al., 2017), in nearly every model since: dividing by √d_k "
                  "keeps the scores' spread near 1 whatever d_k is, so softmax does not saturate.",
    "additive": "Bahdanau et al. (2014)'s alignment model for translation: a small network per (query, key) "
                "pair. It copes with queries and keys of different widths, but builds an n_q × n_k × d_a array.",
    "bilinear": "Luong's “general” score, used in reading-comprehension models such as the Stanford Attentive "
                "Reader and DrQA: a learned matrix lets every query dimension meet every key dimension.",
}


def number(v: int) -> str:
    """12345 -> '12{,}345' (a comma LaTeX does not space)."""
    return f"{v:,}".replace(",", "{,}")


h, n, d_k = config.n_heads, trace.n, config.d_k
d_a = d_k      # this app's additive score maps queries and keys to a hidden layer as wide as d_k
costs = {c["name"]: c for c in score_costs(n, n, d_k, d_a)}
panels = {s: score_panel(config, s) for s in SCORES}     # (trace at temperature 1, weights now)

st.markdown(
    "Every attention first scores each (query, key) pair with one number, the **energy** e; softmax turns a "
    "row of energies into weights; the weights average the values. Only the first step differs between the "
    "variants. Here are the four from seed 002, computed now on **the same sentence, the same Q and the same K**.")
st.info(f"Sizes now: n = {n} tokens, so n_q = n_k = {n}; d_k = {d_k}; d_a = {d_a} (the additive score's hidden "
        f"width, which this app sets to d_k); {h} head{'s' if h > 1 else ''}. Change them in the sidebar."
        + (f" With {h} heads every head scores with its own parameters; the pictures show head 0 and the "
           f"costs are per head." if h > 1 else ""), icon=":material/straighten:")
if config.mask != "none" or config.temperature != 1:
    st.caption("The weights below include the sidebar's mask and temperature; the scores do not.")

for score in SCORES:
    (t, weights), c = panels[score], costs[score]
    head = 0 if h > 1 else None
    if PARAMS[score]:
        learns = ", ".join(f"{SYMBOL[k]} ({t[k].shape_text})" for k in PARAMS[score])
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
                       title="scores e" + (" (head 0)" if h > 1 else ""), key=f"sf.hm.s.{score}", max_w=165)
        with right:
            ui.heatmap(t, weights, head=head, title="weights softmax(e)" + (" (head 0)" if h > 1 else ""),
                       key=f"sf.hm.w.{score}", max_w=165)

st.header("What each one costs")
st.markdown("A multiply and an add count one FLOP each (a length-d dot product is about 2d), a division or a "
            "tanh one. The count covers the scores only, per head, for all n_q × n_k pairs; the largest "
            "array is what the score has to hold in memory at once.")
st.dataframe(cost_table(n, d_k, d_a, h, tuple(NAMES.items())), hide_index=True, width="content", key="sf.costs")
cheap = min(SCORES, key=lambda s: costs[s]["flops"])
dear = max(SCORES, key=lambda s: costs[s]["flops"])
st.caption(f"At these sizes the {NAMES[dear]} score costs {costs[dear]['flops'] / costs[cheap]['flops']:.1f}× "
           f"the FLOPs of the {NAMES[cheap]} score. Every score is computed for all n² pairs, so all four "
           "grow with the square of the sentence length; the additive one multiplies that by d_a.")
ui.chart(cost_chart(d_k, d_a, tuple(NAMES.items())))

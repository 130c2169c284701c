import numpy as np
import streamlit as st

import ui
from attention_core import ConfigError
from attention_core import classifier as clf
from attention_core.symbolic import scaled_dot_gradient, softmax_jacobian
from ui.training import model_controls, one_step, shipped_examples

PAGE = "app_pages/10_training_step.py"
ui.page(PAGE, "One training step, backwards", settings=False)
st.markdown("Seed 000's small sentiment classifier: **attention, a linear layer, a mean over the words, "
            "softmax, cross-entropy**. Pick a sentence and its label, run it forward, then walk **backwards** "
            "through every gradient, each checked live against PyTorch autograd, and take one step of "
            "gradient descent.")

with st.container(border=True):
    s = model_controls("ts_")
    examples = shipped_examples()
    c1, c2, c3, c4 = st.columns([3, 1, 1, 1])
    with c1:
        choice = st.selectbox("Sentence", ["(type your own)"] + [e.text for e in examples], index=1, key="ts_pick")
        if choice == "(type your own)":
            sentence = st.text_input("Your sentence", "the sound is great", key="ts_text")
            label = None
        else:
            sentence = choice
            label = next(e.label for e in examples if e.text == choice)
    with c2:
        label = st.selectbox("Label", clf.CLASSES, index=clf.CLASSES.index(label) if label else 2, key="ts_label",
                             disabled=choice != "(type your own)", help="The dataset's label for its sentences.")
    with c3:
        lr = st.number_input("Learning rate", 1e-5, 10.0, 0.05, format="%.4f", key="ts_lr")
    with c4:
        freeze = st.toggle("Freeze last layer", key="ts_freeze",
                           help="Keep W_O and b_o fixed: seed 000 trains only Q, K and V this way.")

try:
    params, x, loss, trace, grads, checks, new_params, loss_after, trace_after = one_step(
        s, sentence, label, float(lr), ("w_o", "b_o") if freeze else ())
except ConfigError as err:
    st.error(f"{err}", icon=":material/error:")
    st.stop()

st.header("Forward")
st.markdown("**Tokens:** " + " ".join(f"`{w}`" for w in trace.tokens))
ui.step(trace, "x")
c1, c2 = st.columns(2)
with c1:
    ui.step(trace, "weights", key_prefix="f:", max_w=300)
with c2:
    ui.step(trace, "f", key_prefix="f:", max_w=300)
c1, c2, c3 = st.columns(3)
c1.metric("Predicted", trace.facts["prediction"], help="the class with the highest probability")
c2.metric("True label", label)
c3.metric("Loss L = −log p_y", f"{loss:.4f}")
ui.step(trace, "p")

st.header("Backward, one gradient at a time")
st.markdown("Read from the loss back to the input. Each panel is a gradient ∂L/∂(something): **the same "
            "shape as the something**, because entry (i, j) says how L changes when that entry moves. "
            "The check compares the hand-written numbers with **torch autograd** and with **central finite "
            "differences** (L(θ+ε) − L(θ−ε))/2ε.")


def check_line(name: str) -> None:
    if name not in checks:
        return
    c = checks[name]
    ok = c["torch"] < 1e-9 and c["finite_differences"] < 1e-5
    st.caption(f"{'✓' if ok else '✗'} max relative error against autograd: {c['torch']:.1e} · against finite "
               f"differences (3 entries): {c['finite_differences']:.1e}")


ORDER = ["pooled", "f", "w_o", "b_o", "context", "weights", "v", "jacobian", "scores", "q", "k",
         "w_q", "b_q", "w_k", "b_k", "w_v", "b_v", "x"]
for name in ORDER:
    if name == "jacobian":
        jac = trace["dweights/dscores"]
        with st.container(border=True):
            st.markdown(f"##### {jac.title}")
            st.latex(jac.formula)
            st.caption(jac.why)
            i = ui.one_word_picker(trace, "Row (query word) whose Jacobian to show", key="ts_jac_row", default=0)
            row = trace.view(f"jac:{i}", f"J for row {i} ({trace.tokens[i]})", jac.value[i], ("n_k", "n_k"),
                             rf"J_{{{i}}} = \mathrm{{diag}}(a_{{{i}}}) - a_{{{i}}} a_{{{i}}}^\top")
            ui.heatmap(trace, row, key="hm:jac")
        continue
    key = f"dL/d{name}"
    ui.step(trace, key, key_prefix="b:")
    check_line(name)

st.header("One step of gradient descent")
st.latex(rf"\theta \leftarrow \theta - \eta\, \frac{{\partial L}}{{\partial \theta}},\qquad \eta = {lr:g}")
pick = st.selectbox("Parameter", [p for p in clf.PARAM_NAMES], key="ts_param")
before = trace[pick]
delta = trace.view(f"delta:{pick}:{lr}:{freeze}", f"−η ∂L/∂{pick}", new_params[pick] - params[pick], before.axes)
after = trace_after[pick]
c1, c2, c3 = st.columns(3)
for col, step, title in ((c1, before, "before"), (c2, delta, "the step −η ∂L/∂θ"), (c3, after, "after")):
    with col:
        st.markdown(f"**{pick} {title}**")
        ui.heatmap(trace if step is not after else trace_after, step, key=f"hm:sgd:{title}", max_w=180)
if freeze and pick in ("w_o", "b_o"):
    st.caption("Frozen: this parameter does not move.")
c1, c2 = st.columns(2)
c1.metric("Loss on this sentence before", f"{loss:.5f}")
c2.metric("after one step", f"{loss_after:.5f}", delta=f"{loss_after - loss:+.5f}", delta_color="inverse")

st.header("Derive it symbolically")
with st.expander("SymPy: the softmax Jacobian and the scaled-dot-product gradient", expanded=False):
    n = trace.n
    i = min(1, n - 1)
    scores = trace["scores"].value[i]
    row = scores if 2 <= n <= 3 else scores[:3] if n > 3 else np.array([scores[0], 0.0])
    exact = 2 <= n <= 3
    d = softmax_jacobian(row)
    st.markdown("**The softmax Jacobian**, differentiated by SymPy from aᵢ = e^{sᵢ}/Σⱼ e^{sⱼ}:")
    for line in d.latex:
        st.latex(line)
    st.caption(("These are the live scores of row " + str(i) + ", so the matrix below is exactly row "
                f"{i}'s Jacobian in the panel above. ") if exact else
               "The sentence has more than 3 words: the derivation uses the first 3 scores of row "
               f"{i} as a 3-key example. ")
    st.caption(f"SymPy: symbolic J − (diag(a) − a aᵀ) simplifies to 0: {'yes ✓' if d.identity_holds else 'no ✗'}. "
               f"Symbolic with the numbers substituted vs the numeric formula: max |difference| = "
               f"{d.max_abs_difference:.1e}.")
    st.dataframe(d.numeric_from_symbols, width="content")
    q = trace["q"].value[i][:2] if trace["q"].shape[1] >= 2 else np.array([trace["q"].value[i][0], 0.0])
    k = trace["k"].value[:2, :2] if trace["k"].shape[1] >= 2 and n >= 2 else np.eye(2)
    g = trace["dL/dweights"].value[i][:2] if n >= 2 else np.array([1.0, -1.0])
    g2 = scaled_dot_gradient(q, k, g)
    st.markdown("**The gradient of a scaled dot product with respect to the query**, for a 2-d query and two "
                "2-d keys (the first two dimensions of this sentence's q and k, the first two entries of "
                f"∂L/∂A for row {i}):")
    for line in g2.latex:
        st.latex(line)
    st.caption(f"SymPy: its derivative equals the chain-rule form: {'yes ✓' if g2.identity_holds else 'no ✗'}; "
               f"with the numbers: {np.array2string(g2.numeric_from_symbols, precision=6)} vs "
               f"{np.array2string(g2.numeric, precision=6)} (max |difference| {g2.max_abs_difference:.1e}).")

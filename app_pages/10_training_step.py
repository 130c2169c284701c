import streamlit as st

import ui
from attention_core import ConfigError
from attention_core import classifier as clf
from ui.settings import query_for
from ui.training.step_view import backward_walk, input_summary, step_controls, step_for, sympy_panel

PAGE = "app_pages/10_training_step.py"
ui.page(PAGE, "One training step, backwards", settings=False)
st.markdown("Tutorial 1's small sentiment classifier: **attention, a linear layer, a mean over the words, "
            "softmax, cross-entropy**, on **your sentence**. Choose its label, run it forward, then walk "
            "**backwards** through every gradient, a group at a time (the gradients of the parameters and of X "
            "checked live against PyTorch autograd), and take one step of gradient descent.")

config, label, lr, freeze = step_controls()
if config is None:
    st.stop()
if dict(st.query_params) != query_for(config):          # the address bar holds the settings, as on every page
    st.query_params.from_dict(query_for(config))
try:
    inp, params, loss, trace, checks, new_params, loss_after, trace_after = step_for(
        config, label, lr, ("w_o", "b_o") if freeze else ())
except ConfigError as err:
    st.error(f"{err}", icon=":material/error:")
    st.stop()

st.header("Forward")
input_summary(inp, config)
st.markdown("**Tokens:** " + " ".join(f"`{w}`" for w in trace.tokens))
ui.step(trace, "x", max_w=720)      # 9 words x 51 features: rows of 14 px keep their labels apart, in the box
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
st.markdown("Read from the loss back to the input, one group per tab. Each panel is a gradient ∂L/∂(something): "
            "**the same shape as the something**, because entry (i, j) says how L changes when that entry moves. "
            "The check compares the hand-written numbers with **torch autograd** and with **central finite "
            "differences** (L(θ+ε) − L(θ−ε))/2ε.")
backward_walk(trace, checks)

st.header("One step of gradient descent")
st.latex(rf"\theta \leftarrow \theta - \eta\, \frac{{\partial L}}{{\partial \theta}},\qquad \eta = {lr:g}")
pick = st.selectbox("Parameter", [p for p in clf.PARAM_NAMES], key="ts_param", format_func=clf.symbol)
name = clf.symbol(pick)
before = trace[pick]
delta = trace.view(f"delta:{pick}:{lr}:{freeze}", f"−η ∂L/∂{name}", new_params[pick] - params[pick], before.axes)
after = trace_after[pick]
c1, c2, c3 = st.columns(3)
for col, step, which, title in ((c1, before, "before", "before"), (c2, delta, "step", f"the step −η ∂L/∂{name}"),
                               (c3, after, "after", "after")):
    with col:
        st.markdown(f"**{name} {title}**")
        ui.heatmap(trace if step is not after else trace_after, step, key=f"hm:sgd:{which}", max_w=180)
if freeze and pick in ("w_o", "b_o"):
    st.caption("Frozen: this parameter does not move.")
c1, c2 = st.columns(2)
c1.metric("Loss on this sentence before", f"{loss:.5f}")
c2.metric("after one step", f"{loss_after:.5f}", delta=f"{loss_after - loss:+.5f}", delta_color="inverse")

st.header("Derive it symbolically")
sympy_panel(trace)

import streamlit as st

import ui
from attention_core import ConfigError
from attention_core import torch_mha as tm
from attention_core.math.limits import MAX_HEADS, divisors
from ui.variants import torch_sections as view
from ui.variants.torch_view import code_excerpt, shapes_table, walk

PAGE = "app_pages/23_pytorch_mha.py"
# The layer has its own sizes (head_dim = hid_dim / heads), scores (scaled dot) and mask (padding only),
# so of the sidebar only the sentence, embeddings, position and seed apply (heads: the starting value).
config, trace = ui.page(PAGE, "Multi-head attention in PyTorch")
ui.notices(trace)


n, d_model = trace.n, trace.facts["d_model"]
options = [h for h in divisors(d_model) if h <= MAX_HEADS]
st.markdown(
    "Tutorial 3 writes multi-head self-attention as a PyTorch module: four `nn.Linear` layers "
    "(`fc_q`, `fc_k`, `fc_v`, `fc_o`, each hid_dim → hid_dim), a `view` + `permute` that cuts the hidden "
    "axis into heads, batched `torch.matmul`s, a padding mask and dropout on the weights. Below, a module "
    "written the same way runs on **your sentence's X** from the sidebar, and its numbers are checked against "
    "this app's numpy `multi_head_attention`. Its code is under “The module” (float64, seeded weights, "
    + ("with biases" if tm.LAYER_BIAS else "built with `bias=False`") + "; `mask == 0` marks padding).\n\n"
    f":small[:gray[This layer splits hid_dim = d_model = {d_model} into H heads of head_dim = hid_dim / H "
    "(heads h = 0 … H−1), always scores with the scaled dot product, masks padding only and draws its own seeded "
    "weights, so the sidebar's d_k, d_v, score function, mask, temperature, bias and weights settings do not "
    "apply here, and its heads only give this layer's starting value. nn.Linear stores its weight transposed: "
    "`fc_q.weight` holds W_Qᵀ (out × in), so fc_q(x) = x · fc_q.weightᵀ"
    + (" + fc_q.bias = x W_Q + b_Q" if tm.LAYER_BIAS else " = x W_Q, with no b_Q (no biases)") + ".]]")

heads, pad, p, draw = view.controls(config, trace, options)
try:
    diffs = view.run("check", "Loading PyTorch…", config, heads, pad)
except ConfigError as err:
    st.error(str(err), icon=":material/error:")
    st.stop()

st.header("torch against numpy")
view.agreement(diffs, pad)

st.header("The module")
st.code(code_excerpt(), language="python", wrap_lines=True)

st.header("Shapes, step by step")
mode = view.mode_control()
try:
    shown = walk(config, heads, pad, float(p), mode, int(draw))
except ConfigError as err:
    st.error(str(err), icon=":material/error:")
    st.stop()
st.table(shapes_table(shown))
st.caption("The batch axis (batch = 1: one sentence) is kept by PyTorch and left out of the pictures below.")
view.steps_tabs(shown)

st.markdown(
    "## The dropout pitfall\n\n"
    "Dropout on the attention weights zeroes each weight with probability p and scales the rest by "
    "1/(1 − p), **only while training**. Tutorial 3 writes `F.dropout(alpha, p=0.1)` without "
    "`training=self.training`; `F.dropout`'s `training` argument defaults to `True`, so its module keeps "
    "dropping weights after `model.eval()`: predictions become random and rows of the weights A′ (alpha after "
    "dropout) stop summing to 1. The correct line is `F.dropout(alpha, p=self.p, training=self.training)`.")
if p == 0:
    st.info("With p = 0 dropout does nothing in any mode: raise Dropout p above to see the pitfall.",
            icon=":material/info:")
runs, again = view.run("pitfall", "Running the three modules…", config, heads, float(p), int(draw))
view.pitfall_panels(shown, runs, again, heads, p, draw)

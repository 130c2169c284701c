import numpy as np
import streamlit as st

import ui
from attention_core import bahdanau as b
from ui.variants import alignment_train as training
from ui.variants import alignment_view as view

PAGE = "app_pages/21_alignment.py"
ui.page(PAGE, "Bahdanau alignment", settings=False)
_defaults = b.ToySettings()

# the introduction, its formula, the row convention and the task as one Markdown element
st.markdown(
    "Bahdanau, Cho and Bengio (2014) let a translating decoder look back at **every** encoder state "
    "instead of one squeezed summary. Before writing output *i*, a small network scores how well each "
    "input *h_j* fits the decoder's previous state *s₍ᵢ₋₁₎*; a softmax turns the scores into weights "
    "(the **alignment**), and the weighted average of the inputs is the context the decoder uses.\n\n$$\n"
    r"e_{ij} = v^\top \tanh\!\left(W s_{i-1} + U h_j\right),\qquad "
    r"\alpha_{ij} = \frac{\exp e_{ij}}{\sum_k \exp e_{ik}},\qquad c_i = \sum_j \alpha_{ij} h_j"
    "\n$$\n\n:small[:gray[Counted from 0, as everywhere in this app: the inputs are h₀ … hₙ₋₁ (input j is "
    "h_j, j = 0 … n−1), the decoder's states s₀ (its start), s₁, …, and output i = 1, 2, … reads s₍ᵢ₋₁₎ and "
    "becomes sᵢ, as in Bahdanau's paper. Rows are vectors here, as everywhere in this app: the code computes "
    "s W and h U with W (d_s, d_a) and U (d_h, d_a); the paper's W s is the same number with W stored "
    "transposed.]]\n\n"
    "**The toy task** (from tutorial 5): the inputs are the pairs [0, 1], [1, 2], …, [n, n+1], "
    "with [0, 1] first and the rest shuffled. Given the previous output [k, k+1], attention has to find "
    "[k+1, k+2] among the inputs, so the context *is* the next output. There is no encoder and no "
    "decoder RNN: the start [0, 1] plays s₀, each output plays the next sᵢ, and the raw pairs play h_j, so "
    "everything that sorts is the alignment network W, U, v.")


# ---- 1. one decoder step ---------------------------------------------------------------------
st.header("1 · One decoder step, every intermediate")
@st.fragment
def decoder_step() -> None:
    """Section 1; a fragment: its sliders, toggle, tabs and buttons rerun this section only."""
    n_pairs, i, use_trained = view.step_controls()
    inputs, targets = b.toy_sequence(n_pairs, np.random.default_rng([n_pairs, 2014]))
    params, which = view.step_params(use_trained)
    step = view.label_kind(b.step_trace(targets[i - 1], inputs, params), "bahdanau_step")
    view.step_walk(step, inputs, targets, i, which)


decoder_step()

# ---- 2. train ----------------------------------------------------------------------------------
st.header("2 · Train the alignment network")
st.markdown(
    "Each training step draws a fresh shuffled sequence and walks it from left to right: at every output "
    "position the model gets the *correct* previous pair (teacher forcing), computes the context, and is "
    "nudged by SGD with momentum to bring the context closer to the next pair (mean squared error). The "
    f"learning rate falls linearly over the run, from its start to {_defaults.final_lr_fraction:g} × it "
    "(reached just after the last sequence). Tutorial 5 starts W, U, v uniform in [0, 1] and drops the rate 10× "
    f"once the loss is low; here they start small (N(0, {_defaults.init_scale:g}²)), because inputs in the tens "
    "saturate tanh at once otherwise.")
settings = training.form()                 # a pressed Train's settings (None: not pressed, or refused)
if settings is not None:
    training.train(settings)               # the live curve; keeps the model and reruns the page with it
training.summary()


# ---- 3. sort a fresh sequence ---------------------------------------------------------------------
@st.fragment
def sort_section() -> None:
    """Section 3; a fragment: its slider, shuffle button and table toggle rerun this section only."""
    params, kind = view.current_params()
    length, draw = view.sort_controls(kind)
    inputs, targets = b.toy_sequence(length, np.random.default_rng([draw, length, 4]))
    result = view.label_kind(b.alignment_trace(params, inputs), "bahdanau_sort")
    view.sorted_sequence(result, inputs, targets, kind, draw)


st.header("3 · Sort a fresh shuffled sequence")
sort_section()

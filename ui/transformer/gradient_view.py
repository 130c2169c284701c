"""The block-gradients page's views: its controls (η and the block's choices), one training step of the small
language model on the sidebar's sentence, the backward flow as a list of gradients (formula and shape), one
gradient's heatmap with click-a-cell arithmetic, a residual add's gradient, the SGD step and a check against
PyTorch autograd behind a button."""
from __future__ import annotations

import functools

import numpy as np
import streamlit as st

from attention_core import ConfigError
from attention_core.forward.transformer import Arch
from attention_core.training.lm.model import ARCH, N_HEADS, sentence_ids
from attention_core.training.lm.step_trace import TrainingStep, block_params, shipped_params, training_step

from .. import page_state
from ..views import step, step_boxes

KEYS = ("block_gradients.lr", "block_gradients.placement", "block_gradients.norm", "block_gradients.mlp",
        "block_gradients.step", "block_gradients.layer")
GOOD = "block_gradients.good"
PLACEMENTS = {"pre": "pre-norm (GPT-2)", "post": "post-norm (Vaswani et al.)"}
NORMS = {"layer": "LayerNorm", "rms": "RMSNorm"}


def controls() -> tuple[float, Arch]:
    """η and the block's choices, drawn with their declared keys; the block keeps the model's 2 layers."""
    a, b, c, d = st.columns([1.3, 1.2, 1, 0.8], vertical_alignment="bottom")
    lr = a.number_input("Learning rate η", min_value=0.0001, max_value=10.0, step=0.05, format="%.4f", key=KEYS[0],
                        help="One step of plain gradient descent: θ ← θ − η ∂L/∂θ, for every parameter.")
    placement = b.selectbox("Norm placement", tuple(PLACEMENTS), format_func=PLACEMENTS.get, key=KEYS[1])
    norm = c.selectbox("Norm", tuple(NORMS), format_func=NORMS.get, key=KEYS[2])
    mlp = d.toggle("MLP", key=KEYS[3], help="Off: attention-only blocks, as the model was trained.")
    return float(lr), Arch(n_layers=ARCH.n_layers, placement=placement, norm=norm, mlp=bool(mlp))


@functools.lru_cache(maxsize=16)
def _step(sentence: str, lr: float, arch: Arch) -> tuple[TrainingStep, tuple[str, ...], tuple[str, ...]]:
    ids, words, labels, notices = sentence_ids(sentence)
    params, fresh = block_params(shipped_params(), arch)
    return training_step(arch, params, ids, labels, lr), tuple(fresh), tuple(notices)


def lesson(sentence: str, lr: float, arch: Arch):
    """(the step, the parameters that start seeded, notices), or the last good one with the message."""
    try:
        result = _step(sentence, lr, arch)
    except ConfigError as err:
        good = st.session_state.get(GOOD)
        st.error(f"{err} " + ("Showing the last sentence and settings that worked." if good else ""),
                 icon=":material/error:")
        return _step(*good) if good else None
    st.session_state[GOOD] = (sentence, lr, arch)
    return result


def backward_path(arch: Arch) -> str:
    """What the backward pass goes through under these choices, in its order (no final norm with post-norm, no MLP
    when it is off)."""
    parts = ["the unembedding"] + (["the final norm"] if arch.final_norm else []) + [
        "each layer's " + ("MLP, norms, **residual adds** and attention" if arch.mlp else
                           "norm, **residual add** and attention")]
    return ", ".join(parts)


def notes(fresh, notices, arch: Arch) -> None:
    for notice in notices:
        st.info(notice, icon=":material/info:")
    if fresh:
        kinds = sorted({"the MLP's W₁, b₁, W₂, b₂" if "w_" in n or ".b_" in n
                        else "the second norm's γ" + (", β" if arch.norm == "layer" else "")
                        for n in fresh if n.startswith("l")})
        st.info("The shipped model was trained attention-only, pre-norm, with LayerNorm. It has no parameters for "
                + " or ".join(kinds) + ": they start from the block's seeded initialisation ("
                + ("γ = 1, β = 0" if arch.norm == "layer" else "γ = 1") + ", weights N(0, 1/fan-in), biases 0), "
                "and the step below is taken from there.", icon=":material/info:")
    if arch.placement != ARCH.placement or arch.norm != ARCH.norm:
        changes = ([f"post-norm has no final norm, so γ_f{', β_f' if ARCH.norm == 'layer' else ''} go unused"]
                   if arch.placement == "post" else []) + (["RMSNorm has no β, so the norms' β go unused"]
                                                           if arch.norm == "rms" else [])
        st.info("The shipped weights were trained in pre-norm LayerNorm blocks and are used here as they are ("
                + "; ".join(changes) + "), so the loss is what that changed model gets, not what it was trained to.",
                icon=":material/info:")


def losses(s: TrainingStep) -> None:
    a, b, c = st.columns(3)
    a.metric("Loss before the step", f"{s.loss:.5f}", help=f"ln 31 = {np.log(31):.3f} is a uniform guess")
    b.metric("after one SGD step", f"{s.loss_after:.5f}", delta=f"{s.loss_after - s.loss:+.5f}", delta_color="inverse")
    size = np.sqrt(sum(float(((s.new_params[k] - s.params[k]) ** 2).sum()) for k in s.params))
    c.metric("Size of the step ‖Δθ‖", f"{size:.4g}", help="η times the length of the whole gradient")
    with st.expander("Where the loss comes from: −log P of each next token, before and after the step"):
        t = s.trace
        st.dataframe({"position": list(range(t.n - 1)), "token": list(t.tokens[:-1]), "next token": list(t.tokens[1:]),
                      "before": [b for b, _ in t.facts["surprise"]], "after": [a for _, a in t.facts["surprise"]]},
                     hide_index=True, height=min(400, 36 + 35 * (t.n - 1)))
    if s.loss_after >= s.loss:
        st.warning(f"With η = {s.lr:g} the step overshoots: the loss went up. A smaller η follows the gradient more "
                   "closely; for small enough η the loss always goes down.", icon=":material/warning:")


def gradient_keys(s: TrainingStep) -> list[str]:
    return [k for k in s.trace.keys() if k.startswith("dL/d")]


def flow(s: TrainingStep) -> None:
    """Every gradient in the order the backward pass makes it: its formula and its shape, one line each."""
    lines = []
    for number, key in enumerate(gradient_keys(s), 1):
        g = s.trace[key]
        lines.append(f"{number}. $\\displaystyle {g.formula}$ &nbsp; :blue-badge[{g.shape_text}]")
    with st.container(height=420, border=True, key="formulas-gradients"):   # a phone: formulas set smaller (ui/phone.py)
        st.markdown("\n".join(lines))


def one_gradient(s: TrainingStep) -> None:
    """A picked gradient's box: formula, shape, why, heatmap (one per head), a clicked cell's arithmetic."""
    keys = gradient_keys(s)
    page_state.fit(KEYS[4], 0, len(keys) - 1)
    pick = st.selectbox("Gradient", range(len(keys)), key=KEYS[4],
                        format_func=lambda i: f"{i + 1}. {s.trace[keys[i]].title}  ({s.trace[keys[i]].shape_text})")
    step(s.trace, keys[pick], key_prefix="bg:")


def residual(s: TrainingStep) -> None:
    """One layer's attention add, backwards: the skip's gradient, the branch's, and their sum."""
    arch = s.trace.facts["arch"]
    if arch.placement == "pre":
        st.markdown("A residual add X′ = X + MHA(N(X)) sends the stream on and a copy into the sublayer. Backwards, "
                    "the add **copies** ∂L/∂X′ to both: one copy goes straight back (the skip), one flows back through "
                    "attention and its norm (the branch). The stream's gradient ∂L/∂X is their **sum**. With pre-norm "
                    "the skip is a clean path: past the final norm, the gradient reaches the embeddings through adds "
                    "alone.")
    else:
        st.markdown("Post-norm: X′ = N(Σ), Σ = X + MHA(X). Backwards, the norm comes first (∂L/∂Σ), then the add "
                    "**copies** ∂L/∂Σ to both of its inputs: one copy goes straight back (the skip), one flows back "
                    "through attention (the branch). The stream's gradient ∂L/∂X is their **sum**; every layer's norm "
                    "sits on the skip's path too, so the skip is not a clean path here.")
    page_state.fit(KEYS[5], 0, arch.n_layers - 1)
    l = st.radio("Layer", range(arch.n_layers), key=KEYS[5], horizontal=True, format_func=lambda i: f"layer {i}")
    after = f"l{l}.sum1" if arch.placement == "post" else (f"l{l}.mid" if arch.mlp else f"l{l}.out")
    before = "x" if l == 0 else f"l{l - 1}.out"
    rows = np.linalg.norm(s.trace[f"dL/d{before}"].value, axis=1)
    st.caption(f"Row norms ‖∂L/∂X_{l}[i]‖ of the stream's gradient: " + ", ".join(
        f"{w} {v:.3g}" for w, v in zip(s.trace.tokens, rows))
        + (". The last is 0: its logits are not scored (no token comes after it), and the causal mask hides it from "
           "every earlier query, so nothing the loss sees depends on it." if rows[-1] == 0 else ""))
    step_boxes(s.trace, (f"dL/d{after}", f"dL/dl{l}.attn_branch", f"dL/d{before}"), key_prefix="res:", max_w=560)


def update(s: TrainingStep) -> None:
    """θ ← θ − η ∂L/∂θ for one parameter: before, the step, after."""
    names = list(s.params)
    st.latex(rf"\theta \leftarrow \theta - \eta\, \frac{{\partial L}}{{\partial \theta}},\qquad \eta = {s.lr:g}")
    big = sorted(names, key=lambda k: -float(np.abs(s.new_params[k] - s.params[k]).max()))[:5]
    st.caption("Largest single moves: " + ", ".join(
        f"{s.trace.facts['symbols'][k][1]} by {np.abs(s.new_params[k] - s.params[k]).max():.3g}" for k in big))


def check(s: TrainingStep) -> None:
    """max |hand − autograd| over every parameter, with PyTorch, when asked (torch is imported only then)."""
    if not st.button("Check every parameter's gradient against PyTorch autograd", key="block_gradients.check"):
        st.caption("The check builds the same model in PyTorch (float64), runs loss.backward() and compares.")
        return
    try:
        from attention_core.training.lm.backprop import autograd_gradients
        auto = autograd_gradients(s.trace.facts["arch"], s.params, s.trace.facts["ids"], N_HEADS)
    except ImportError:
        st.info("PyTorch is not installed here, so the check cannot run.", icon=":material/info:")
        return
    worst = max(float(np.abs(s.trace[k].value - auto[k]).max()) for k in auto)
    st.success(f"max |hand − autograd| = {worst:.2e} over {len(auto)} parameters "
               f"({sum(v.size for v in auto.values()):,} numbers).", icon=":material/check_circle:")

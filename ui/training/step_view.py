"""The training-step page's pieces: the learner's own sentence and settings as the classifier's
input, the backward walk one group at a time, and the SymPy derivations (run only when opened)."""
from __future__ import annotations

import functools

import numpy as np
import streamlit as st

import ui
from attention_core import classifier as clf
from attention_core.forward.claims import say
from attention_core.training.symbolic import scaled_dot_gradient, softmax_jacobian

from .classifier_view import shipped_examples


def _dataset_label(sentence: str) -> str | None:
    text = " ".join(sentence.lower().split())
    return next((e.label for e in shipped_examples() if " ".join(e.text.lower().split()) == text), None)


def _take_example() -> None:
    """The dataset picker's callback: its sentence becomes the shared sentence, its label the label."""
    text = st.session_state.get("ts_example")
    if not text:
        return
    st.session_state["s.sentence"] = st.session_state["w.sentence"] = text
    st.session_state["ts_label"] = _dataset_label(text)
    st.session_state["ts_example"] = None


def step_controls():
    """The sentence, embeddings, position, sizes and seed the forward pages use (shared, in the URL),
    then the label, learning rate and freezing of this page. Returns (config or None, label, lr, freeze).

    A bad setting shows its message and the last settings that worked are used (None: none yet)."""
    from attention_core import Config, ConfigError
    from ..settings import EMBEDDING_LABELS, POSITIONAL_LABELS, upload_vectors, widget, current_settings, init_state
    init_state()
    with st.sidebar:                                   # the shared settings live in the sidebar on every page
        st.markdown("**Settings** · shared with the forward pages")
        widget(st.text_input, "sentence", "Sentence", help="Words are lower-cased; punctuation is set aside.")
        widget(st.selectbox, "embedding", "Embeddings", options=list(EMBEDDING_LABELS),
                format_func=EMBEDDING_LABELS.get)
        if st.session_state["s.embedding"] == "upload":
            upload_vectors()
        widget(st.selectbox, "positional", "Position", options=list(POSITIONAL_LABELS),
                format_func=POSITIONAL_LABELS.get)
        c1, c2 = st.columns(2)
        with c1:
            widget(st.number_input, "d_k", "d_k", min_value=1, max_value=64, step=1)
        with c2:
            widget(st.number_input, "d_v", "d_v", min_value=1, max_value=64, step=1)
        widget(st.number_input, "seed", "Seed", min_value=0, max_value=2**32 - 1, step=1)
    with st.container(border=True):
        st.selectbox("Take a sentence from the dataset" + (" (or turn presenter mode off and type yours in the "
                                                           "sidebar)" if ui.settings.presenting() else
                                                           " (or type yours in the sidebar)"),
                     [None] + [e.text for e in shipped_examples()],
                     format_func=lambda t: "(pick a review)" if t is None else t, key="ts_example",
                     on_change=_take_example, help="Its sentence and its label replace yours.")
        c1, c2, c3 = st.columns([2, 2, 3])
        sentence = st.session_state["s.sentence"]
        known = _dataset_label(sentence) if isinstance(sentence, str) else None
        with c1:
            if st.session_state.get("ts_label") not in clf.CLASSES:
                st.session_state["ts_label"] = known or "positive"
            label = st.selectbox("Label (you choose)", clf.CLASSES, key="ts_label",
                                 help="The class the loss calls right: −log p of this class.")
        with c2:
            lr = st.number_input("Learning rate η", 1e-5, 10.0, 0.05, format="%.4f", key="ts_lr")
        with c3:
            st.write("")                                   # line the toggle up with the inputs
            freeze = st.toggle("Freeze last layer (W_O, b_O)", key="ts_freeze",
                               help="Keep W_O and b_O fixed, as tutorial 1 does: the step then moves only the "
                                    "attention's parameters.")
        if known:
            st.caption(f"The dataset labels this sentence **{known}**.")
    if st.session_state.get("s.upload_error"):
        st.error(st.session_state["s.upload_error"], icon=":material/error:")
    try:
        config = Config(**current_settings())
        from attention_core.training.training_input import classifier_input
        inp = classifier_input(config)
        st.session_state["ts.last_good"] = config
    except ConfigError as err:
        config = st.session_state.get("ts.last_good")
        st.error(f"{err}" + (" Showing the last settings that worked." if config else ""), icon=":material/error:")
    return config, label, float(lr), bool(freeze)


@functools.lru_cache(maxsize=16)
def _gradients(config, label: str, frozen: bool = False):
    """classifier_input, forward, hand backward (as Steps) and the checks against autograd and finite
    differences: what the sentence, its settings and the label decide (not η). The trace records the
    page's TrainingSettings (frozen too), which its words are checked against."""
    from attention_core.training.training_input import classifier_input, training_settings
    inp = classifier_input(config)
    settings = training_settings(config, frozen)
    params = clf.init_params(inp.x.shape[1], config.d_k, config.d_v, config.seed)
    loss, trace = clf.forward(params, inp.x, label, inp.tokens, settings)
    grads = clf.backward(params, inp.x, label, trace)
    checks = clf.check_gradients(params, inp.x, label, entries=CHECKED_ENTRIES)
    return inp, params, loss, trace, grads, checks


@functools.lru_cache(maxsize=32)
def step_for(config, label: str, lr: float, frozen: tuple):
    """_gradients, then one SGD step with η = lr and the frozen parameters held; the weights are seeded as
    on the forward pages (same seed, same W_Q)."""
    inp, params, loss, trace, grads, checks = _gradients(config, label, bool(frozen))
    new_params = clf.sgd_step(params, grads, lr, frozen)
    loss_after, trace_after = clf.forward(new_params, inp.x, label, inp.tokens, trace.facts["settings"])
    return inp, params, loss, trace, checks, new_params, loss_after, trace_after


def input_summary(inp, config) -> None:
    """Where X comes from, what differs from the forward pages and why (only what holds under these settings)."""
    st.markdown(f"**X:** {inp.source} vectors of your {len(inp.tokens)} word{'s' * (len(inp.tokens) != 1)}, "
                f"position {inp.position}; d_k={config.d_k}, d_v={config.d_v}, seed {config.seed}.")
    for notice in inp.notices:
        st.caption(notice)
    if inp.switches:
        st.info("**The classifier cannot take every setting of the forward pages:**\n\n"
                + "\n".join(f"- {s}" for s in inp.switches), icon=":material/swap_horiz:")
    same = say("train_same_as_forward", inp.settings)
    if same:
        st.caption(same)


CHECKED_ENTRIES = 3                 # clf.check_gradients' default: finite differences at 3 entries of each array

# The backward walk, from the loss to the input, in groups a learner takes one at a time.
GROUPS = [
    ("1 · Loss → logits", ["pooled", "f"]),
    ("2 · Output layer", ["w_o", "b_o"]),
    ("3 · Through attention", ["context", "weights", "v", "jacobian", "scores"]),
    ("4 · Queries & keys", ["q", "k"]),
    ("5 · Projection weights", ["w_q", "b_q", "w_k", "b_k", "w_v", "b_v"]),
    ("6 · Input X", ["x"]),
]


def _check_line(trace, checks: dict, name: str) -> None:
    if name not in checks:
        return
    c = checks[name]
    ok = c["torch"] < 1e-9 and c["finite_differences"] < 1e-5
    entries = min(CHECKED_ENTRIES, trace[name].value.size)      # check_gradients takes at most this many
    st.caption(f"{'✓' if ok else '✗'} max relative error against autograd: {c['torch']:.1e} · against finite "
               f"differences ({entries} entr{'y' if entries == 1 else 'ies'}): {c['finite_differences']:.1e}")


def _jacobian_panel(trace) -> None:
    jac = trace["dweights/dscores"]
    with st.container(border=True):
        st.markdown(f"##### {jac.title}")
        st.latex(jac.formula)
        st.caption(jac.why)
        i = ui.one_word_picker(trace, "Row (query word) whose Jacobian to show", key="ts_jac_row", default=0)
        row = trace.view(f"jac:{i}", f"J for row {i} ({trace.tokens[i]})", jac.value[i], ("n_k", "n_k"),
                         rf"J_{{{i}}} = \mathrm{{diag}}(a_{{{i}}}) - a_{{{i}}} a_{{{i}}}^\top")
        ui.heatmap(trace, row, key="hm:jac")


def _next_group(label: str) -> None:
    st.session_state["ts_walk"] = label


def backward_walk(trace, checks: dict) -> None:
    """One tab per group; only the open tab runs (the others cost nothing on a rerun)."""
    tabs = st.tabs([g for g, _ in GROUPS], key="ts_walk", on_change="rerun")
    for n, (tab, (group, names)) in enumerate(zip(tabs, GROUPS)):
        if not tab.open:
            continue
        with tab:
            for name in names:
                if name == "jacobian":
                    _jacobian_panel(trace)
                    continue
                ui.step(trace, f"dL/d{name}", key_prefix="b:")
                _check_line(trace, checks, name)
            if n + 1 < len(GROUPS):
                st.button(f"Next: {GROUPS[n + 1][0]} →", key=f"ts_next_{n}", on_click=_next_group,
                          args=(GROUPS[n + 1][0],))


def sympy_panel(trace) -> None:
    """The two derivations, with this sentence's numbers; derived only when the expander is open."""
    box = st.expander("SymPy: the softmax Jacobian and the scaled-dot-product gradient", key="ts_sympy",
                      on_change="rerun")
    if not box.open:
        return
    with box:
        n = trace.n
        i = min(1, n - 1)
        scores = trace["scores"].value[i]
        row = scores if 2 <= n <= 3 else scores[:3] if n > 3 else np.array([scores[0], 0.0])
        exact = 2 <= n <= 3
        d = softmax_jacobian(row)
        st.markdown("**The softmax Jacobian**, differentiated by SymPy from aᵢ = e^{sᵢ}/Σⱼ e^{sⱼ} "
                    "(s: one row of the scaled scores Ŝ, counted from 0):")
        for line in d.latex:
            st.latex(line)
        st.caption((f"These are the live scaled scores Ŝ of row {i}, so the matrix below is exactly row "
                    f"{i}'s Jacobian J_{i} in the walk's step 3. ") if exact else
                   f"The sentence has more than 3 words: the derivation uses the first 3 scaled scores of row "
                   f"{i} as a 3-key example. " if n > 3 else
                   "The sentence has one word: the derivation uses its scaled score and a 0 as a 2-key example. ")
        st.caption(f"SymPy: symbolic J − (diag(a) − a aᵀ) simplifies to 0: {'yes ✓' if d.identity_holds else 'no ✗'}. "
                   f"Symbolic with the numbers substituted vs the numeric formula: max |difference| = "
                   f"{d.max_abs_difference:.1e}.")
        st.dataframe(d.numeric_from_symbols, width="content")
        d_k = trace["q"].shape[1]
        q = trace["q"].value[i][:2] if d_k >= 2 else np.array([trace["q"].value[i][0], 0.0])
        k = trace["k"].value[:2, :2] if d_k >= 2 and n >= 2 else np.eye(2)
        g = trace["dL/dweights"].value[i][:2] if n >= 2 else np.array([1.0, -1.0])
        g2 = scaled_dot_gradient(q, k, g)
        live = d_k >= 2 and n >= 2
        st.markdown("**The gradient of a scaled dot product with respect to the query**, for a 2-d query and two "
                    "2-d keys, scaled by √2 (the width of this example; this sentence's scores use √d_k = "
                    f"√{d_k}) " + (f"(query {i}'s first two entries, keys 0 and 1's first two entries, and the first "
                                   f"two entries of row {i} of ∂L/∂A, as a two-key example):" if live else
                                   "(an example: the keys are the identity" +
                                   (f", the query is query {i}'s one entry and a 0 (d_k = 1)" if d_k < 2 else
                                    f", the query is query {i}'s first two entries") +
                                   (", the upstream gradient is (1, −1) (one word)" if n < 2 else
                                    f", the upstream gradient is the first two entries of row {i} of ∂L/∂A") + "):"))
        for line in g2.latex:
            st.latex(line)
        st.caption(f"SymPy: its derivative equals the chain-rule form: {'yes ✓' if g2.identity_holds else 'no ✗'}; "
                   f"with the numbers: {np.array2string(g2.numeric_from_symbols, precision=6)} vs "
                   f"{np.array2string(g2.numeric, precision=6)} (max |difference| {g2.max_abs_difference:.1e}).")

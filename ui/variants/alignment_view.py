"""The Bahdanau alignment page's views of one decoder step (section 1) and of a sorted sequence (section 3):
their controls, the parameters they run with (this session's trained ones, or the untrained start), the walk
through one step's intermediates in lazy tabs, and the alignment matrix of a whole sequence."""
from __future__ import annotations

import numpy as np
import streamlit as st

from attention_core import bahdanau as b

from ..text import md_escape
from ..views import heading, heatmap, step

MODEL = "align.model"          # session_state: the trained parameters and what training measured
WALK_KEY = "align.walk"        # session_state: the open stage of section 1's walk
WALK = [("1 · s₍ᵢ₋₁₎ and H", [("s_prev", "h")]), ("2 · W s and U h", [("w_s",), ("u_h",)]),
        ("3 · z and tanh(z)", [("pre_tanh",), ("hidden",)]), ("4 · Scores and weights", [("scores", "weights")]),
        ("5 · Context", [("context",)])]
SUBSCRIPTS = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


def sub(k: int) -> str:
    """12 -> '₁₂': an index written as a subscript, counted from 0 like every index in the app."""
    return str(k).translate(SUBSCRIPTS)


def start_params(settings: b.ToySettings) -> dict:
    """W, U, v as a training run with these settings starts them (its seeded random start)."""
    return b.init_params(2, 2, settings.d_a, settings.seed, settings.init_scale)


def current_params() -> tuple[dict, str]:
    """The trained parameters of this session, or the untrained start (labelled)."""
    trained = st.session_state.get(MODEL)
    if trained is not None:
        return trained["params"], "trained"
    return start_params(b.ToySettings()), "untrained"


def label_kind(trace, kind: str):
    trace.facts["kind"] = kind          # not the forward pass: no forward-pass explainer applies to its cells
    return trace


# ---- 1. one decoder step ---------------------------------------------------------------------

def step_controls() -> tuple[int, int, bool]:
    """(pairs after [0, 1], output step i, use the trained parameters) in one bordered row."""
    trained = st.session_state.get(MODEL)
    if st.session_state.pop("align.just_trained", False) or "align.use_trained" not in st.session_state:
        st.session_state["align.use_trained"] = trained is not None      # set before the toggle exists in this run
    with st.container(border=True):
        c1, c2, c3 = st.columns(3)
        with c1:
            n_pairs = st.slider("Pairs after [0, 1]", min_value=2, max_value=12, value=6, key="align.step_len")
        with c2:
            i = st.slider("Output step i", min_value=1, max_value=n_pairs, value=min(3, n_pairs), key="align.step_i",
                          help="s_{i-1} is the correct previous pair (teacher forcing, as in training); s_0 is the "
                               "start [0, 1].")
        with c3:
            use_trained = st.toggle("Use the trained parameters", disabled=trained is None,
                                    key="align.use_trained", help="Train the model in section 2 first."
                                    if trained is None else "Off: the small random start training begins from.")
    return n_pairs, i, use_trained


def step_params(use_trained: bool) -> tuple[dict, str]:
    """(W, U, v, which): the trained ones, or the start the (last) training run began from."""
    trained = st.session_state.get(MODEL)
    if use_trained and trained is not None:
        return trained["params"], "trained"
    start = trained["settings"] if trained is not None else b.ToySettings()
    return start_params(start), "untrained (random start)"


def next_stage(label: str) -> None:
    st.session_state[WALK_KEY] = label


def step_walk(step_trace, inputs: np.ndarray, targets: np.ndarray, i: int, which: str) -> None:
    """Decoder step i: what it reads and must find, every shape, the parameters (lazy), the walk one stage at a
    time in lazy tabs (only the open stage's steps run on a rerun), and where the largest weight landed."""
    answer = int(np.flatnonzero(np.all(inputs == targets[i], axis=1))[0])      # the right input's position j
    st.markdown(f"Decoder step **i = {i}**: the previous state is **s{sub(i - 1)} = {b.pair_label(targets[i - 1])}**"
                + (" (the start)" if i == 1 else "") + f", so the right input to find is "
                f"**h{sub(answer)} = {b.pair_label(targets[i])}**. Parameters: **{which}**.")
    sh = {s.key: s.shape_text for s in step_trace}
    st.code(f"s_(i-1)                 ({sh['s_prev']})\n"
            f"H, one row per input    ({sh['h']})\n"
            f"W s_(i-1)               ({sh['w_s']})            W: ({sh['w']})\n"
            f"U h_j for every j       ({sh['u_h']})      U: ({sh['u']})\n"
            f"z_j = W s + U h_j       ({sh['pre_tanh']})      the same W s row added to every input\n"
            f"tanh(z_j)               ({sh['hidden']})\n"
            f"e_j = v . tanh(z_j)     ({sh['scores']})                 v: ({sh['v']})\n"
            f"alpha = softmax(e)      ({sh['weights']})\n"
            f"c_i = sum_j alpha_j h_j ({sh['context']})", language=None)
    params_box = st.expander("The learned parameters W, U and v", key="align.params", on_change="rerun")
    if params_box.open:                 # lazy: closed, its three steps do not run
        with params_box:
            for key in ("w", "u", "v"):
                step(step_trace, key, key_prefix="align.")
    walk = st.tabs([label for label, _ in WALK], key=WALK_KEY, on_change="rerun")
    for k, (tab, (label, rows)) in enumerate(zip(walk, WALK)):
        if not (tab.open if k else tab.open is not False):   # .open is None before the browser reported a tab
            continue
        with tab:
            for row in rows:
                for col, key in zip(st.columns(len(row)) if len(row) > 1 else [tab], row):
                    with col:
                        step(step_trace, key, key_prefix="align.")
            if k + 1 < len(WALK):
                st.button(f"Next: {WALK[k + 1][0]} →", key=f"align.next.{k}", on_click=next_stage, args=(WALK[k + 1][0],))
    best = step_trace.facts["best"]
    weights = step_trace["weights"].value
    st.info(f"The largest weight, {weights[best]:.3f}, is on input h{sub(best)} = {step_trace.tokens[best]}; "
            f"the right answer is h{sub(answer)} = {b.pair_label(targets[i])}. "
            f"Context c{sub(i)} = {b.pair_label(np.round(step_trace['context'].value, 2))}.",
            icon=":material/my_location:")


# ---- 3. sort a fresh sequence ---------------------------------------------------------------------

def sort_controls(kind: str) -> tuple[int, int]:
    """(pairs after [0, 1], the shuffle's number): the length slider and the "New shuffle" button."""
    c1, c2 = st.columns([3, 1], vertical_alignment="bottom")
    with c1:
        trained_on = st.session_state.get(MODEL, {}).get("settings") if kind == "trained" else None
        length = st.slider("Pairs after [0, 1]", min_value=1, max_value=40, value=12, key="align.sort_len",
                           help=f"The model was trained on sequences of {trained_on.min_len}–{trained_on.max_len} "
                                f"pairs: pairs above [{trained_on.max_len}, {trained_on.max_len + 1}] never occurred "
                                "in training." if trained_on else "Not trained yet: train it in section 2.")
    with c2:
        if st.button("New shuffle", icon=":material/shuffle:", key="align.reshuffle"):
            st.session_state["align.shuffle"] = st.session_state.get("align.shuffle", 0) + 1
    return length, st.session_state.get("align.shuffle", 0)


def chips(rows, ok=None) -> str:
    return " ".join(f"`{b.pair_label(r)}`" if ok is None or ok[k] else f":red-background[{md_escape(b.pair_label(r))}]"
                    for k, r in enumerate(rows))


def sorted_sequence(result, inputs: np.ndarray, targets: np.ndarray, kind: str, draw: int) -> None:
    """Input, output and target as chips (wrong outputs in red), the verdict, and the alignment matrix with
    each row's most attended input outlined (and, on a toggle, the same step by step as a table)."""
    outputs, alignment = result["outputs"].value, result["alignment"].value
    right = np.all(outputs == targets[1:], axis=1)
    picked = alignment.argmax(axis=1)
    st.markdown(f"Model: **{kind}**{' (train it in section 2)' if kind == 'untrained' else ''} · shuffle #{draw}\n\n"
                f"**Input** (shuffled): {chips(inputs)}\n\n"
                f"**Output** s₁, s₂, … (each step's context, rounded, fed back as the next step's state): "
                f"{chips(outputs, right)}\n\n"
                f"**Target**: {chips(targets[1:])}")
    if right.all():
        st.success(f"All {len(right)} outputs are right: the sequence is sorted.", icon=":material/check_circle:")
    else:
        first = int(np.flatnonzero(~right)[0])
        st.warning(f"{int(right.sum())} of {len(right)} outputs are right (wrong ones in red); the first mistake is "
                   f"output {first + 1} (s{sub(first + 1)}), and every later step starts from it.",
                   icon=":material/cancel:")
    rows_ok = float(np.max(np.abs(alignment.sum(axis=1) - 1)))
    # The same matrix with axes named for this task (output step × input position) and labelled with the pairs.
    result.facts["axis_labels"] = {"output i": [f"{k + 1}: {b.pair_label(o)}" for k, o in enumerate(outputs)],
                                   "input position j": [f"{j}: {b.pair_label(h)}" for j, h in enumerate(inputs)]}
    matrix = result.view("alignment", "Alignment matrix", alignment, ("output i", "input position j"),
                         scale="sequential")
    with st.container(border=True):
        # title, shape badge, formula and caption as one Markdown element (a rerun's cost is per element)
        st.markdown(heading("The alignment matrix", matrix,
                            r"\alpha_{ij} = \mathrm{softmax}_j\; v^\top \tanh\!\left(W s_{i-1} + U h_j\right)")
                    + "\n\n:small[:gray[Row i (i = 1 … " + f"{len(outputs)}" + "): output i's weights over the input "
                    "positions j = 0 … " + f"{len(inputs) - 1}" + " (columns, labelled with the input pair h_j there). "
                    f"Each row sums to 1 (largest deviation {rows_ok:.1e}). The outlined cell in each row is the input "
                    "that output attended to most; the output itself is the rounded context, which is that input when "
                    "its weight is near 1. A trained model puts nearly all of each row on one input: a permutation, "
                    "read off as a sorting.]]")
        heatmap(result, matrix, key="align.hm.alignment", max_w=900,
                highlight=[(r, int(c)) for r, c in enumerate(picked)])
        rows = [{"output i": k + 1, "previous state s_(i-1)": b.pair_label(inputs[0] if k == 0 else outputs[k - 1]),
                 "most attended input": f"h_{int(picked[k])} = {b.pair_label(inputs[picked[k]])}",
                 "its weight": float(alignment[k, picked[k]]), "output (rounded context)": b.pair_label(outputs[k]),
                 "right?": "yes" if right[k] else "no"} for k in range(len(outputs))]
        if st.toggle("Step by step as a table", key="align.sort_table"):
            st.dataframe(rows, hide_index=True, width="content",
                         column_config={"its weight": st.column_config.NumberColumn(format="%.3f")})

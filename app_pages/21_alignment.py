import time

import numpy as np
import streamlit as st

import ui
from ui.text import md_escape
from ui.views import heading
from ui.demo_charts import loss_chart
from attention_core import ConfigError
from attention_core import bahdanau as b

PAGE = "app_pages/21_alignment.py"
ui.page(PAGE, "Bahdanau alignment", settings=False)
_defaults = b.ToySettings()
SUBSCRIPTS = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


def _sub(k: int) -> str:
    """12 -> '₁₂': an index written as a subscript, counted from 0 like every index in the app."""
    return str(k).translate(SUBSCRIPTS)
MODEL = "align.model"          # session_state: the trained parameters and what training measured
WALK_KEY = "align.walk"        # session_state: the open stage of section 1's walk
WALK = [("1 · s₍ᵢ₋₁₎ and H", [("s_prev", "h")]), ("2 · W s and U h", [("w_s",), ("u_h",)]),
        ("3 · z and tanh(z)", [("pre_tanh",), ("hidden",)]), ("4 · Scores and weights", [("scores", "weights")]),
        ("5 · Context", [("context",)])]


def next_stage(label: str) -> None:
    st.session_state[WALK_KEY] = label


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


def current_params() -> tuple[dict, str]:
    """The trained parameters of this session, or the untrained start (labelled)."""
    trained = st.session_state.get(MODEL)
    if trained is not None:
        return trained["params"], "trained"
    start = b.ToySettings()
    return b.init_params(2, 2, start.d_a, start.seed, start.init_scale), "untrained"


def label_kind(trace, kind: str):
    trace.facts["kind"] = kind          # not the forward pass: no forward-pass explainer applies to its cells
    return trace


# ---- 1. one decoder step ---------------------------------------------------------------------
st.header("1 · One decoder step, every intermediate")
@st.fragment
def decoder_step() -> None:
    """Section 1; a fragment: its sliders, toggle, tabs and buttons rerun this section only."""
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
    inputs, targets = b.toy_sequence(n_pairs, np.random.default_rng([n_pairs, 2014]))
    answer = int(np.flatnonzero(np.all(inputs == targets[i], axis=1))[0])      # the right input's position j
    if use_trained and trained is not None:
        params, which = trained["params"], "trained"
    else:   # the start the (last) training run began from
        start = trained["settings"] if trained is not None else b.ToySettings()
        params, which = b.init_params(2, 2, start.d_a, start.seed, start.init_scale), "untrained (random start)"
    step = label_kind(b.step_trace(targets[i - 1], inputs, params), "bahdanau_step")
    st.markdown(f"Decoder step **i = {i}**: the previous state is **s{_sub(i - 1)} = {b.pair_label(targets[i - 1])}**"
                + (" (the start)" if i == 1 else "") + f", so the right input to find is "
                f"**h{_sub(answer)} = {b.pair_label(targets[i])}**. Parameters: **{which}**.")
    sh = {s.key: s.shape_text for s in step}
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
                ui.step(step, key, key_prefix="align.")
    # The walk one stage at a time, in lazy tabs: only the open stage's steps run on a rerun.
    walk = st.tabs([label for label, _ in WALK], key=WALK_KEY, on_change="rerun")
    for k, (tab, (label, rows)) in enumerate(zip(walk, WALK)):
        if not (tab.open if k else tab.open is not False):   # .open is None before the browser reported a tab
            continue
        with tab:
            for row in rows:
                for col, key in zip(st.columns(len(row)) if len(row) > 1 else [tab], row):
                    with col:
                        ui.step(step, key, key_prefix="align.")
            if k + 1 < len(WALK):
                st.button(f"Next: {WALK[k + 1][0]} →", key=f"align.next.{k}", on_click=next_stage, args=(WALK[k + 1][0],))
    best = step.facts["best"]
    weights = step["weights"].value
    st.info(f"The largest weight, {weights[best]:.3f}, is on input h{_sub(best)} = {step.tokens[best]}; "
            f"the right answer is h{_sub(answer)} = {b.pair_label(targets[i])}. "
            f"Context c{_sub(i)} = {b.pair_label(np.round(step['context'].value, 2))}.",
            icon=":material/my_location:")


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
defaults = b.ToySettings()
with st.form("align.train_form", border=True):
    c1, c2, c3 = st.columns(3)
    with c1:
        lr = st.number_input("Learning rate", min_value=1e-5, max_value=1.0, value=defaults.lr, step=1e-4,
                             format="%.5f", key="align.lr")
        momentum = st.slider("Momentum", min_value=0.0, max_value=0.99, value=defaults.momentum, step=0.01,
                             key="align.momentum")
    with c2:
        steps = st.number_input("Training sequences (steps)", min_value=1, max_value=5000, value=defaults.steps,
                                step=100, key="align.steps", help="One SGD update per output position of each.")
        lengths = st.slider("Pairs per sequence", min_value=1, max_value=60, value=(defaults.min_len, defaults.max_len),
                            key="align.lengths")
    with c3:
        seed = st.number_input("Seed", min_value=0, max_value=2**32 - 1, value=defaults.seed, step=1, key="align.seed",
                               help="Same seed and settings: the same start, the same sequences, the same model.")
        d_a = st.select_slider("Hidden width d_a", options=[2, 4, 8, 16, 20, 32, 64], value=defaults.d_a,
                               key="align.d_a")
    submitted = st.form_submit_button("Train", type="primary", icon=":material/model_training:")

if submitted:
    try:
        settings = b.ToySettings(lr=float(lr), momentum=float(momentum), steps=int(steps), min_len=int(lengths[0]),
                                 max_len=int(lengths[1]), d_a=int(d_a), seed=int(seed))
    except ConfigError as err:
        st.error(f"{err} Nothing was trained; the previous model (if any) is kept.", icon=":material/error:")
        settings = None
    if settings is not None:
        every = max(1, settings.steps // 40)          # redraw the curve ~40 times, not at every step
        bar = st.progress(0.0, text="Loading PyTorch…")
        status, chart = st.empty(), st.empty()
        # The chart spec is built once (Altair's validation costs ~0.1 s for a long curve); updates swap the data.
        live = ui.line_spec([{"step": 1, "loss": 0.0}], "step", "loss", title="Training loss (MSE per sequence)",
                            x_title="training sequence", y_title="loss", width=620)
        live["mark"] = {"type": "line", "point": False}
        losses = []
        try:
            model = b.make_model(settings)            # imports torch the first time
            start = time.perf_counter()
            for p in b.train(model, settings):
                losses.append(p.loss)
                if p.step % every == 0 or p.step == settings.steps:
                    elapsed = time.perf_counter() - start
                    bar.progress(p.fraction, text=f"Step {p.step:,} of {p.steps:,} · loss {p.loss:.4f} · "
                                                  f"learning rate {p.lr:.2e} · {elapsed:.1f} s")
                    data = [{"step": k + 1, "loss": v} for k, v in enumerate(losses)]
                    ui.chart({**live, "data": {"values": data}}, target=chart)
        except ConfigError as err:
            bar.empty()
            st.error(f"{err} The previous model (if any) is kept.", icon=":material/error:")
        else:
            seconds = time.perf_counter() - start
            params_now = b.params_of(model)
            start_params = b.init_params(2, 2, settings.d_a, settings.seed, settings.init_scale)
            st.session_state[MODEL] = {
                "params": params_now, "settings": settings, "losses": losses, "seconds": seconds,
                "eval": b.evaluate(params_now, 200, settings.seed, settings.min_len, settings.max_len),
                "eval_start": b.evaluate(start_params, 200, settings.seed, settings.min_len, settings.max_len)}
            st.session_state["align.shuffle"] = st.session_state.get("align.shuffle", 0) + 1
            st.session_state["align.just_trained"] = True     # switches section 1 to the new parameters
            st.rerun()          # redraw the whole page (section 1 too) with the new parameters

trained = st.session_state.get(MODEL)
if trained is None:
    st.info("No model trained in this session yet: press **Train** (the defaults take a few seconds). Until "
            "then, section 3 sorts with the untrained start.", icon=":material/info:")
else:
    s, ev, ev0 = trained["settings"], trained["eval"], trained["eval_start"]
    losses = trained["losses"]
    last = max(1, len(losses) // 20)
    final = float(np.mean(losses[-last:]))
    c1, c2, c3, c4 = st.columns(4)
    c1.metric("Sorted exactly", f"{ev.n_sorted} / {ev.n_sequences}", f"{ev.n_sorted - ev0.n_sorted:+d} vs. untrained",
              help=f"Fresh shuffled sequences of {s.min_len}–{s.max_len} pairs, drawn from a random stream "
                   f"training does not draw from; every output must be right.")
    c2.metric("Outputs right", f"{ev.steps_correct / ev.steps_total:.1%}", help=f"{ev.steps_correct:,} of "
              f"{ev.steps_total:,} output positions in the same 200 sequences.")
    c3.metric("Final loss", f"{final:.4f}",
              help=f"Mean over the last {last} training sequence{'s' if last > 1 else ''} "
                   f"({last / len(losses):.0%} of them).")
    c4.metric("Training time", f"{trained['seconds']:.1f} s", help=f"{s.steps:,} sequences on this server.")
    rows, spec = loss_chart(tuple(losses))              # cached per curve: no Altair work on a rerun
    st.vega_lite_chart(rows, spec=spec, width="content")
    st.caption(f"Trained with learning rate {s.lr:g} (falling linearly to {b.lr_at(s.steps, s):.3g} at the last "
               f"sequence), momentum "
               f"{s.momentum:g}, {s.steps:,} sequences of {s.min_len}–{s.max_len} pairs, d_a = {s.d_a}, seed {s.seed}. "
               f"Before training the same 200 sequences were sorted {ev0.n_sorted} times.")
    if final > 0.25:
        st.warning(f"Not trained enough to sort: the final loss {final:.3g} is above 0.25, so the context's "
                   f"root-mean-square error per number, √{final:.3g} = {np.sqrt(final):.2g}, is more than half a "
                   "step, and rounding often lands on a wrong pair. "
                   "Train longer; if the curve jumps about or stays high, lower the learning rate (a rate that is "
                   "too high saturates tanh and the updates overshoot).", icon=":material/trending_flat:")

# ---- 3. sort a fresh sequence ---------------------------------------------------------------------
def chips(rows, ok=None) -> str:
    return " ".join(f"`{b.pair_label(r)}`" if ok is None or ok[k] else f":red-background[{md_escape(b.pair_label(r))}]"
                    for k, r in enumerate(rows))


@st.fragment
def sort_section() -> None:
    """Section 3; a fragment: its slider, shuffle button and table toggle rerun this section only."""
    params, kind = current_params()
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
    draw = st.session_state.get("align.shuffle", 0)
    inputs, targets = b.toy_sequence(length, np.random.default_rng([draw, length, 4]))
    result = label_kind(b.alignment_trace(params, inputs), "bahdanau_sort")
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
                 f"output {first + 1} (s{_sub(first + 1)}), and every later step starts from it.",
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
        ui.heatmap(result, matrix, key="align.hm.alignment", max_w=900,
                   highlight=[(r, int(c)) for r, c in enumerate(picked)])
        rows = [{"output i": k + 1, "previous state s_(i-1)": b.pair_label(inputs[0] if k == 0 else outputs[k - 1]),
                 "most attended input": f"h_{int(picked[k])} = {b.pair_label(inputs[picked[k]])}",
                 "its weight": float(alignment[k, picked[k]]), "output (rounded context)": b.pair_label(outputs[k]),
                 "right?": "yes" if right[k] else "no"} for k in range(len(outputs))]
        if st.toggle("Step by step as a table", key="align.sort_table"):
            st.dataframe(rows, hide_index=True, width="content",
                         column_config={"its weight": st.column_config.NumberColumn(format="%.3f")})


st.header("3 · Sort a fresh shuffled sequence")
sort_section()

"""The Bahdanau alignment page, section 2: the training form, the run with its live loss curve, and what the
trained model measures (kept for the session, so sections 1 and 3 use it)."""
from __future__ import annotations

import functools
import time

import numpy as np
import streamlit as st

from attention_core import ConfigError
from attention_core import bahdanau as b

from ..chart_words import spec_sentence
from ..charts import line_spec
from ..presenter import presented
from ..views import chart
from .alignment_view import MODEL, start_params


def form() -> b.ToySettings | None:
    """The training settings in one form: the settings of a pressed Train, None if it was not pressed or its
    settings cannot combine (then the message, and the previous model is kept)."""
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
            lengths = st.slider("Pairs per sequence", min_value=1, max_value=60,
                                value=(defaults.min_len, defaults.max_len), key="align.lengths")
        with c3:
            seed = st.number_input("Seed", min_value=0, max_value=2**32 - 1, value=defaults.seed, step=1,
                                   key="align.seed",
                                   help="Same seed and settings: the same start, the same sequences, the same model.")
            d_a = st.select_slider("Hidden width d_a", options=[2, 4, 8, 16, 20, 32, 64], value=defaults.d_a,
                                   key="align.d_a")
        submitted = st.form_submit_button("Train", type="primary", icon=":material/model_training:")
    if not submitted:
        return None
    try:
        return b.ToySettings(lr=float(lr), momentum=float(momentum), steps=int(steps), min_len=int(lengths[0]),
                             max_len=int(lengths[1]), d_a=int(d_a), seed=int(seed))
    except ConfigError as err:
        st.error(f"{err} Nothing was trained; the previous model (if any) is kept.", icon=":material/error:")
        return None


def train(settings: b.ToySettings) -> None:
    """Train with a progress bar and the loss curve redrawn ~40 times; keep the model and what it measures, then
    rerun the whole page (section 1 too) with the new parameters."""
    every = max(1, settings.steps // 40)          # redraw the curve ~40 times, not at every step
    bar = st.progress(0.0, text="Loading PyTorch…")
    st.empty()                                    # a status line's place (kept: the page's layout)
    target = st.empty()
    # The chart spec is built once (Altair's validation costs ~0.1 s for a long curve); updates swap the data.
    live = line_spec([{"step": 1, "loss": 0.0}], "step", "loss", title="Training loss (MSE per sequence)",
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
                chart({**live, "data": {"values": data}}, target=target)
    except ConfigError as err:
        bar.empty()
        st.error(f"{err} The previous model (if any) is kept.", icon=":material/error:")
        return
    seconds = time.perf_counter() - start
    params_now = b.params_of(model)
    st.session_state[MODEL] = {
        "params": params_now, "settings": settings, "losses": losses, "seconds": seconds,
        "eval": b.evaluate(params_now, 200, settings.seed, settings.min_len, settings.max_len),
        "eval_start": b.evaluate(start_params(settings), 200, settings.seed, settings.min_len, settings.max_len)}
    st.session_state["align.shuffle"] = st.session_state.get("align.shuffle", 0) + 1
    st.session_state["align.just_trained"] = True     # switches section 1 to the new parameters
    st.rerun()          # redraw the whole page (section 1 too) with the new parameters


@functools.lru_cache(maxsize=32)
def loss_chart(losses: tuple[float, ...]) -> tuple[object, dict]:
    """(rows as a pyarrow Table, Vega-Lite spec) of a training-loss curve, built once per curve per
    process: Altair's validation of a long curve costs ~0.1 s, which a rerun would pay every time."""
    import pyarrow as pa
    spec = line_spec([{"step": k + 1, "loss": v} for k, v in enumerate(losses)], "step", "loss",
                     title="Training loss (MSE per sequence)", x_title="training sequence", y_title="loss", width=620)
    rows = pa.Table.from_pylist(spec["data"]["values"])
    said = spec_sentence(spec)                          # what it shows, for a screen reader (its aria-label)
    return rows, {**{k: v for k, v in spec.items() if k != "data"}, **({"description": said} if said else {})}


def summary() -> None:
    """What the session's model measures (sorted, right, final loss, time), its loss curve and how it was
    trained; a warning when it is not trained enough to sort; or that there is no model yet."""
    trained = st.session_state.get(MODEL)
    if trained is None:
        st.info("No model trained in this session yet: press **Train** (the defaults take a few seconds). Until "
                "then, section 3 sorts with the untrained start.", icon=":material/info:")
        return
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
    st.vega_lite_chart(rows, spec=presented(spec), width="content")
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

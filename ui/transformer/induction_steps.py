"""The induction page's step slider: a run's logged steps, the plateau and the drop marked under it and in its labels,
two buttons across the drop; the patterns, the scores table and the K-composition over steps follow the step shown."""
from __future__ import annotations

import streamlit as st

from attention_core.lessons import induction as ind

from ..matrix import chart
from .induction_charts import strip_spec

STEP = "induction.at"                  # the step slider's key (ui/page_state.py): a logged step of the run shown


def snap_step(run: dict) -> int:
    """The step shown, made one of the run's logged steps (another run's step, or a link's: the logged step at or
    before it)."""
    steps = [int(s) for s in run["history"]["step"]]
    state = st.session_state
    if state.get(STEP) not in steps:
        state[STEP] = steps[ind.at_step(steps, state.get(STEP) if state.get(STEP) is not None else steps[-1])]
    return state[STEP]


def step_label(ph, step: int) -> str:
    return f"{step:,} · {ind.marks(ph, step)}"


def step_slider(run: dict, an: dict) -> int:
    """The slider over the run's logged steps, the plateau and the drop marked under it (and in its labels), with
    two buttons to the steps on either side of the drop; returns the history row of the step shown."""
    h, ph = run["history"], an["phases"]
    steps = [int(s) for s in h["step"]]
    state = st.session_state
    snap_step(run)
    c1, c2 = st.columns([3, 1.2], vertical_alignment="bottom")
    with c1:
        st.select_slider("Step shown (every head's pattern and scores below are the run's at this step; the "
                         "K-composition's arithmetic, the ablations and your sentence are its last step's)",
                         options=steps, key=STEP, format_func=lambda v: step_label(ph, v))
        chart(strip_spec(steps, ph, state[STEP]))
    if ph.found:
        go = lambda step: state.__setitem__(STEP, step)
        b1, b2 = c2.columns(2)
        b1.button("Before the drop", key="induction.before", on_click=go, args=(ph.drop[0],), width="stretch",
                  help=f"Step {ph.drop[0]:,}: the last logged step before the loss drops.")
        b2.button("After the drop" if ph.ended else "The run's end", key="induction.after", on_click=go,
                  args=(ph.drop[1],), width="stretch",
                  help=f"Step {ph.drop[1]:,}: " + ("where the drop ends." if ph.ended else
                                                 "the run's last step, the loss still dropping (the run stops "
                                                 "before the drop ends)."))
    else:
        c2.caption("No drop in this run: nothing to mark on the slider but its steps.")
    return steps.index(state[STEP])

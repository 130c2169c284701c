"""The induction-heads page's runs: the shipped one (instant, cached per process), a learner's own, trained live
with torch when they press Train (kept in st.session_state for the session), a teacher's run that came with a
pushed view (fetched from the room once per process), and what the page reads from a run: every head's pattern
step by step (the snapshots its history keeps), the scores now, the ablations.

Which run the page shows is the view's parameter "induction.run" (ui/page_state.py): "" the shipped run, else the
digest of a run's bytes (attention_core.training.lm.run_blob): this session's own run, or one the room keeps.
"""
from __future__ import annotations

import threading
import time
from collections import OrderedDict

import numpy as np
import streamlit as st

import classroom
from attention_core.lessons import induction as ind
from attention_core.training.lm import run_blob
from attention_core.training.lm.model import as_float64, lm_trace, token_labels

from .. import page_state
from ..room import travel as room_travel

RUN = "induction.trained"          # session_state: the learner's last finished run {"run", "analysis", "digest"}
PARAM = "induction.run"            # the view's parameter: the digest of the run shown ("" the shipped run)
RUNNING = "induction.running"      # session_state: set while a run trains; still set on the next run = interrupted
MESSAGE = "induction.message"      # session_state: what happened to the last run that did not finish
REDRAW_EVERY = 100                 # steps between two redraws of the live charts (the history logs every 50; a longer
                                   # run less often: lm_train.log_every_for), the patterns with them
LIVE_THREADS = 1                   # torch threads for a live run: on a busy 2-core server 2 threads spin against the
                                   # other processes (measured at load 8: 600 ms a step with 2, 36 ms with 1)


def analyse(run: dict) -> dict:
    """What the page shows of a run: both traces on the shown sequence, every head's patterns, the scores on the
    repeated batch before and after, the ablations (each head zeroed) on it, the plateau and the drop."""
    ids = ind.repeated_ids()
    names = ind.token_names(ids)
    trace = lambda params: lm_trace(params, ids, token_labels([]), tokens=names)
    start, end = as_float64(run["start"]), as_float64(run["params"])
    batch = ind.repeated_batch()
    before, after = trace(start), trace(end)
    return {"ids": ids, "names": names, "before": before, "after": after, "params": end,
            "scores_before": batch_scores(start, batch), "scores_after": batch_scores(end, batch),
            "ablation": ind.ablation_table(end, batch),
            "phases": ind.phases(run["history"]["step"], run["history"]["copy_loss"])}


def batch_scores(params: dict, batch: np.ndarray) -> dict:
    """{"prev", "induction"}: (layer, head) on the repeated batch, read from each sequence's forward Trace."""
    a = np.stack([ind.patterns(lm_trace(params, ids, token_labels([]), tokens=ind.token_names(ids))) for ids in batch])
    return {"prev": ind.prev_token_scores(a), "induction": ind.induction_scores(a, batch)}


@st.cache_resource(show_spinner=False)
def shipped() -> tuple[dict, dict]:
    """(the shipped run, its analysis): read once per process."""
    from attention_core.training.lm import shipped as data
    got = data.load()
    run = {"start": got.start, "params": got.params, "history": got.history, "seed": int(got.settings["seed"]),
           "steps": int(got.settings["steps"]), "seconds": None, "source": "shipped"}
    return run, analyse(run)


KEEP = 8                           # teachers' runs kept per process (each ~0.3 MB with its analysis)
_SHARED: OrderedDict[str, tuple[dict, dict]] = OrderedDict()
_LOCK = threading.Lock()
_FETCHING: dict[str, threading.Lock] = {}


def remember(name: str, run: dict, analysis: dict) -> None:
    """A run this process may show to any session whose view names `name` (a teacher's, shown to the class)."""
    with _LOCK:
        _SHARED[name] = ({**run, "source": "teacher"}, analysis)
        _SHARED.move_to_end(name)
        while len(_SHARED) > KEEP:
            _SHARED.popitem(last=False)


def _kept(name: str):
    with _LOCK:
        if name in _SHARED:
            _SHARED.move_to_end(name)
            return _SHARED[name]
    return None


def shared(name: str) -> tuple[dict, dict] | None:
    """The run `name` as this process keeps it, else read once from the room this session is in (the sessions of
    a class wait for one read and one analysis); None if neither has it."""
    got = _kept(name)
    if got is not None:
        return got
    with _LOCK:
        lock = _FETCHING.setdefault(name, threading.Lock())
    try:
        with lock:
            got = _kept(name)
            if got is not None:
                return got
            blob = room_travel.fetch(name)
            if blob is None:
                return None
            try:
                run = run_blob.from_bytes(blob)
            except run_blob.RunBlobError:
                return None
            run, analysis = {**run, "source": "teacher"}, analyse(run)
            remember(name, run, analysis)
            return run, analysis
    finally:
        with _LOCK:
            _FETCHING.pop(name, None)          # a name nobody has leaves nothing behind


def current() -> tuple[dict, dict]:
    """The run the view names: the shipped one, this session's own, or the teacher's (fetched from the room); a
    run that cannot be found is said, and the shipped one shown."""
    name = page_state.value(PARAM)
    if not name:
        return shipped()
    own = st.session_state.get(RUN)
    if own and own["digest"] == name:
        return own["run"], own["analysis"]
    got = shared(name)
    if got is not None:
        return got
    st.warning("The run this view names was trained in another session, and " +
               (f"the room does not have it now (a room keeps its teacher's last {classroom.room.MAX_RUNS} runs "
                "while it lasts), or its store did not answer" if st.session_state.get("room.code") else "a link cannot carry a run") +
               ": the shipped run is shown instead. Train a run here to see one of your own.",
               icon=":material/link_off:")
    return shipped()


def forget() -> None:
    """Back to the shipped run: the session's own run is dropped (the step slider goes to the shipped run's end)."""
    from attention_core.training.lm.train import STEPS
    st.session_state.pop(RUN, None)
    st.session_state["induction.at"] = STEPS
    st.session_state[PARAM] = ""
    room_travel.withdraw(PARAM)


def timing_text() -> str:
    """How long training takes, from this session's last run if there is one."""
    own = st.session_state.get(RUN)
    if own:
        run = own["run"]
        return (f"Your last run: {run['steps']:,} steps in {run['seconds']:.1f} s "
                f"({1000 * run['seconds'] / max(run['steps'], 1):.0f} ms a step, torch on {LIVE_THREADS} thread).")
    return "Training runs here with torch; the progress bar shows the step and the seconds as it goes."


def interrupted_notice() -> None:
    """A run the page's rerun cut short (the flag is still set) or one that stopped or diverged: say so, once."""
    if st.session_state.pop(RUNNING, False):
        st.session_state[MESSAGE] = ("The training run was stopped before it finished (the page reran: a control "
                                     "changed, or the page was left): the previous weights stay.")
    message = st.session_state.pop(MESSAGE, None)
    if message:
        st.warning(message, icon=":material/warning:")


def train_live(seed: int, steps: int) -> None:
    """Train from the seeded start with torch (imported now), drawing the progress, the loss, the heads' scores and
    every head's pattern as they are at the last logged step, every REDRAW_EVERY steps; a finished run replaces the
    session's (and the step slider goes to its end), a stopped or diverged one leaves it."""
    from attention_core.training.lm import train as lm_train
    from .induction_charts import loss_spec, patterns_spec, phone_patterns_spec, scores_spec
    from ..matrix import chart

    bar = st.progress(0.0, text="Starting: torch is loading…")
    with st.container(key="wide-live-patterns"):    # first: the heads forming are what the page is about
        pattern_box = st.empty()
    with st.container(key="tall-live-patterns"):    # the same heads on a phone, two a row (ui/phone.py)
        phone_box = st.empty()
    c1, c2 = st.columns([1, 1.2])
    loss_box, score_box = c1.empty(), c2.empty()
    rows: list[tuple] = []
    t0 = time.perf_counter()
    ids = ind.repeated_ids()
    names = ind.token_names(ids)
    every = lm_train.log_every_for(steps)

    def redraw(patterns) -> None:
        h = {"step": np.array([r[0] for r in rows]), "loss": np.array([r[1] for r in rows]),
             "copy_loss": np.array([r[2] for r in rows]), "prev": np.array([r[3] for r in rows]),
             "induction": np.array([r[4] for r in rows])}
        chart(loss_spec(h, ind.phases(h["step"], h["copy_loss"]), width=380, height=200), target=loss_box)
        chart(scores_spec(h, width=200, height=170), target=score_box)
        if patterns is not None:
            grid = patterns_spec([(f"step {int(h['step'][-1]):,} (training)", patterns)], names, size=110)
            chart(grid, target=pattern_box)
            chart(phone_patterns_spec(grid), target=phone_box)

    def callback(step, loss, copy_loss, scores) -> bool:
        rows.append((step, loss, copy_loss, np.asarray(scores["prev"]), np.asarray(scores["induction"])))
        bar.progress(min(step / max(steps, 1), 1.0), text=f"Step {step:,} of {steps:,}: loss {loss:.3f}, copy loss "
                                                           f"{copy_loss:.3f} nats ({time.perf_counter() - t0:.1f} s)")
        if step % max(REDRAW_EVERY, every) == 0 or step == steps:
            redraw(scores.get("patterns"))
        return True

    st.session_state[RUNNING] = True
    result = lm_train.train(seed=seed, steps=steps, callback=callback, threads=LIVE_THREADS, log_every=every,
                            snapshot=ind.snapshot)
    st.session_state.pop(RUNNING, None)
    bar.empty()
    loss_box.empty()
    score_box.empty()
    pattern_box.empty()
    if result.status != "done" or result.params is None or not np.all(np.isfinite(result.history["loss"])):
        message = result.message or "The run did not finish."
        st.session_state[MESSAGE] = message + ("" if "weights from before the run stay" in message
                                               else " The previous weights stay.")
        return
    blob = run_blob.to_bytes({"start": result.start, "params": result.params, "history": result.history,
                              "seed": seed, "steps": steps, "seconds": result.seconds})
    run = {**run_blob.from_bytes(blob), "source": "session"}       # as it travels: the same numbers on every screen
    name = run_blob.digest(blob)
    st.session_state[RUN] = {"run": run, "analysis": analyse(run), "digest": name}
    st.session_state[PARAM] = name                 # the view names it; a push carries it (ui/room/travel.py)
    st.session_state["induction.at"] = int(run["history"]["step"][-1])     # the step slider: the run's end
    room_travel.offer(PARAM, name, blob)

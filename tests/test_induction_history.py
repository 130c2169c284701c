"""A run replayed step by step: what training keeps of every logged step (each head's pattern on the shown sequence,
the K-composition table), the shipped run's included; the step slider over the run with the plateau and the drop
marked; a run that travels to a room carries it; the default steps are one number."""
from __future__ import annotations

import numpy as np
import pytest

from attention_core.lessons import induction as ind
from attention_core.training.lm import run_blob, shipped
from attention_core.training.lm import train as lm_train
from attention_core.training.lm.model import lm_trace, token_labels
from tests.apptest_util import charts, no_exception, open_page

PAGE = "app_pages/52_induction_heads.py"


@pytest.fixture(scope="module")
def run():
    return shipped.load()


def _trace(params):
    ids = ind.repeated_ids()
    return lm_trace(params, ids, token_labels([]), tokens=ind.token_names(ids))


def rows_one_back(a: np.ndarray) -> int:
    """How many of a pattern's queries i ≥ 1 have their largest weight on key i − 1 (the row's darkest cell just
    left of the diagonal): the line a previous-token head's heatmap shows. The browser test counts the same from
    the chart's pixels (tests/e2e/test_induction_browser.py)."""
    i = np.arange(1, a.shape[-1])
    return int(np.sum(a[i].argmax(axis=-1) == i - 1))


# ---- the K-composition table: the shares table's last column, for every query at once ---------------------------

@pytest.mark.parametrize("which", ["start", "params"])
def test_singles_out_is_the_shares_tables_last_column_averaged_over_the_queries(run, which):
    params = getattr(run, which)
    trace = _trace(params)
    got = ind.singles_out(trace, params)                                          # (piece, layer-1 head)
    ids = ind.repeated_ids()
    queries = [i for i in range(1, len(ids)) if ids[i] in ids[:i]]
    assert queries == list(range(ind.HALF, 2 * ind.HALF))                        # the second copy, one by one
    for head in range(4):
        by = np.mean([[r["singles out j+1 by"] for r in ind.shares(ind.k_composition(trace, params, i, head))]
                      for i in queries], axis=0)
        np.testing.assert_allclose(got[:, head], by, rtol=0, atol=1e-10)


def test_a_snapshot_is_the_forward_pass_at_those_weights(run):
    snap = ind.snapshot(run.params)
    trace = _trace(run.params)
    assert snap["patterns"].dtype == np.float32 and snap["patterns"].shape == (2, 4, 40, 40)
    np.testing.assert_allclose(snap["patterns"], ind.patterns(trace), rtol=0, atol=1e-7)
    np.testing.assert_array_equal(snap["kcomp"], ind.singles_out(trace, run.params))


# ---- what a run keeps -----------------------------------------------------------------------------------------

def test_patterns_are_kept_to_the_nearest_255th():
    a = np.array([0.0, 0.5, 1 / 255, 0.999, 1.0, 1.3, -0.1], dtype=np.float32)
    k = lm_train.kept({"patterns": a})["patterns"]
    assert k.dtype == np.uint8 and k.tolist() == [0, 128, 1, 255, 255, 255, 0]   # 0.5 · 255 = 127.5 → 128
    back = lm_train.pattern_weights({"patterns": k[None]}, 0)
    assert back[1] == 128 / 255 and back[4] == 1.0
    assert lm_train.kept({"patterns": k})["patterns"] is k                           # kept once


def test_the_shipped_history_keeps_every_logged_steps_patterns(run):
    h = run.history
    assert h["step"].tolist() == list(range(0, lm_train.STEPS + 1, lm_train.LOG_EVERY))
    assert h["patterns"].shape == (len(h["step"]), 2, 4, 40, 40) and h["patterns"].dtype == np.uint8
    assert h["kcomp"].shape == (len(h["step"]), 7, 4)
    for row, params in ((0, run.start), (-1, run.params)):
        a = ind.patterns(_trace(params))
        np.testing.assert_allclose(lm_train.pattern_weights(h, row), a, rtol=0, atol=0.5 / 255 + 1e-6)
        np.testing.assert_allclose(h["kcomp"][row], ind.singles_out(_trace(params), params), rtol=0, atol=1e-4)
    # each row's patterns are rows of probabilities over the keys j ≤ i (to the 1/255 each cell is kept to)
    w = lm_train.pattern_weights(h, slice(None))
    assert np.all(np.triu(np.ones((40, 40)), 1)[None, None, None] * w == 0)
    assert np.all(np.abs(w.sum(-1) - 1) <= 40 * 0.5 / 255)


def test_before_the_drop_no_layer0_head_looks_one_back_and_after_it_one_does(run):
    """On the shipped run: at the last logged step before the drop no layer-0 head's heatmap has a line one token
    back (measured: 10, 9, 5, 7 of the 39 rows have their largest weight there); at the drop's end head 0's has (25:
    every query up to i = 25, then it looks elsewhere; the other heads 12, 9, 17)."""
    h = run.history
    ph = ind.phases(h["step"], h["copy_loss"])
    steps = h["step"].tolist()
    before = lm_train.pattern_weights(h, steps.index(ph.drop[0]))[0]
    after = lm_train.pattern_weights(h, steps.index(ph.drop[1]))[0]
    share_before = [rows_one_back(a) for a in before]
    share_after = [rows_one_back(a) for a in after]
    assert share_before == [10, 9, 5, 7] and share_after == [25, 12, 9, 17]
    from tests.e2e.test_induction_browser import ONE_BACK_AFTER, ONE_BACK_BEFORE
    assert max(share_before) < ONE_BACK_BEFORE and share_after[0] >= ONE_BACK_AFTER
    assert int(np.argmax(share_after)) == ind.top_head(h["prev"][steps.index(ph.drop[1])], 0)
    # and the scores say the same: layer 0's best previous-token score, before and after
    assert h["prev"][steps.index(ph.drop[0])][0].max() < 0.2 and h["prev"][steps.index(ph.drop[1])][0].max() > 0.5


def test_the_k_composition_forms_with_the_drop(run):
    h = run.history
    ph = ind.phases(h["step"], h["copy_loss"])
    steps = h["step"].tolist()
    head = ind.top_head(h["induction"][-1], 1)
    prev = ind.top_head(h["prev"][-1], 0)
    by = h["kcomp"][:, 2 + prev, head]                                             # the previous-token head's part
    # measured (layer 1 head 0): 0.0 at step 0, at most 0.9 on the plateau, 2.2 where the drop starts (750), 28.9
    # at its end (900), 31.4 at step 1,500
    plateau = [by[k] for k, s in enumerate(steps) if s < ph.drop[0]]
    assert abs(by[0]) < 0.1 and max(np.abs(plateau)) < 1.5 and by[steps.index(ph.drop[0])] < 5
    assert by[steps.index(ph.drop[1])] > 25 and by[-1] > 25


def test_at_step_and_the_marks():
    steps = [0, 50, 100, 150]
    assert [ind.at_step(steps, s) for s in (-5, 0, 49, 50, 149, 150, 9999)] == [0, 0, 0, 1, 2, 3, 3]
    ph = ind.Phases(True, (50, 300), (300, 400), 3.4, 1.0)
    assert [ind.marks(ph, s) for s in (0, 50, 250, 300, 350, 400, 450)] == [
        "before the plateau", "plateau", "plateau", "the last step before the drop", "in the drop", "the drop's end",
        "after the drop"]
    assert ind.marks(ind.Phases(False, (0, 50), (50, 50), 3.4, 3.4), 50) == "no drop yet"


# ---- training keeps them; a run travels with them ---------------------------------------------------------------

def test_training_keeps_a_snapshot_at_every_logged_step_and_hands_it_to_the_callback():
    pytest.importorskip("torch")
    seen = []
    r = lm_train.train(seed=5, steps=20, log_every=10, snapshot=ind.snapshot,
                       callback=lambda step, loss, copy, scores: seen.append((step, scores)))
    h = r.history
    assert h["step"].tolist() == [0, 10, 20] and h["patterns"].shape == (3, 2, 4, 40, 40) and h["kcomp"].shape == (3, 7, 4)
    assert [s for s, _ in seen] == [0, 10, 20]
    assert set(seen[0][1]) == {"prev", "induction", "patterns", "kcomp"}
    np.testing.assert_array_equal(seen[2][1]["patterns"], h["patterns"][2])
    np.testing.assert_allclose(h["patterns"][0], ind.snapshot(lm_train.init_params(5))["patterns"], atol=0)
    np.testing.assert_allclose(h["patterns"][-1], ind.snapshot(r.params)["patterns"], atol=0)


def test_a_long_run_logs_at_most_41_rows_and_travels_within_a_rooms_limit(run):
    from classroom.room import MAX_RUN_BYTES
    for steps in (50, 1000, 2000, 2001, 6000, 9999, 10_000):
        every = lm_train.log_every_for(steps)
        rows = len(range(0, steps + 1, every)) + (steps % every != 0)         # 0, every, 2·every … and the last step
        assert every % lm_train.LOG_EVERY == 0 and rows <= lm_train.LOG_ROWS + 1, (steps, every, rows)
    assert lm_train.log_every_for(lm_train.STEPS) == lm_train.LOG_EVERY        # the default run: every 50 steps
    # 41 rows of the shipped run's own snapshots (its 21, again): what the largest history weighs as it travels
    idx = np.arange(lm_train.LOG_ROWS + 1) % len(run.history["step"])
    h = {k: v[idx] for k, v in run.history.items()}
    h["step"] = np.arange(len(idx)) * 250
    blob = run_blob.to_bytes({"params": run.params, "history": h, "seed": 0, "steps": int(h["step"][-1]),
                              "seconds": 1.0})
    assert len(blob) < MAX_RUN_BYTES, len(blob)


def test_a_run_travels_with_its_snapshots_within_a_rooms_limit(run):
    from classroom.room import MAX_RUN_BYTES
    travel = {"params": {k: v.astype(np.float32) for k, v in run.params.items()}, "history": run.history, "seed": 0,
              "steps": lm_train.STEPS, "seconds": 9.5}
    blob = run_blob.to_bytes(travel)
    assert len(blob) < MAX_RUN_BYTES
    back = run_blob.from_bytes(blob)
    for k in ("patterns", "kcomp", "prev", "copy_loss"):
        np.testing.assert_array_equal(back["history"][k], run.history[k])
    assert back["history"]["patterns"].dtype == np.uint8
    # a float32 history (as training returns it) travels kept: the same bytes
    raw = {**travel, "history": {**run.history, "patterns": lm_train.pattern_weights(run.history, slice(None))}}
    assert run_blob.to_bytes(raw) == blob
    # one of the two snapshot arrays alone is not a run of this format
    import json
    import zlib
    head, _, body = zlib.decompress(blob).partition(b"\n")
    header = json.loads(head)
    header["arrays"] = [e for e in header["arrays"] if e[0] != "history.kcomp"]
    cut = sum(int(np.prod(e[2])) * np.dtype(e[1]).itemsize for e in json.loads(head)["arrays"] if e[0] == "history.kcomp")
    at = sum(int(np.prod(e[2])) * np.dtype(e[1]).itemsize for e in json.loads(head)["arrays"]
             [: [e[0] for e in json.loads(head)["arrays"]].index("history.kcomp")])
    bad = zlib.compress(json.dumps(header).encode() + b"\n" + body[:at] + body[at + cut:])
    with pytest.raises(run_blob.RunBlobError, match="not the small model"):
        run_blob.from_bytes(bad)


# ---- the page ---------------------------------------------------------------------------------------------------

def test_the_default_steps_are_one_number():
    from ui import page_state
    own = {c.key: c for c in page_state.controls_of(PAGE)}
    assert own["induction.steps"].default == own["induction.at"].default == lm_train.STEPS == shipped.settings()["steps"]
    assert shipped.load().settings["steps"] == lm_train.STEPS


def _pattern_grid(at):
    return next(s for s in charts(at) if "facet" in s)


def test_the_step_slider_shows_the_patterns_of_the_step_before_and_after_the_drop(run):
    h = run.history
    ph = ind.phases(h["step"], h["copy_loss"])
    at = open_page(PAGE, timeout=120)
    no_exception(at)
    slider = at.select_slider(key="induction.at")
    assert slider.value == lm_train.STEPS and list(slider.options) == [f"{s:,} · {ind.marks(ph, s)}" for s in h["step"]]
    assert {r["stage"] for r in _pattern_grid(at)["data"]["values"]} == {f"step {lm_train.STEPS:,} · layer {l}"
                                                                         for l in (0, 1)}
    strip = next(s for s in charts(at) if s.get("description", "").startswith("steps 0 to"))
    bands = strip["layer"][0]["data"]["values"]
    assert [(b["phase"], b["from"], b["to"]) for b in bands] == [("plateau", *ph.plateau), ("drop", *ph.drop)]
    for button, step in (("induction.before", ph.drop[0]), ("induction.after", ph.drop[1])):
        at.button(key=button).click().run()
        no_exception(at)
        assert at.select_slider(key="induction.at").value == step
        assert dict(at.query_params).get("induction.at") == str(step)
        row = h["step"].tolist().index(step)
        grid = _pattern_grid(at)["data"]["values"]
        cell = next(r for r in grid if r["stage"] == f"step {step:,} · layer 0" and r["head"] == "head 0"
                    and r["i"] == 5 and r["j"] == 4)
        assert cell["A"] == round(float(lm_train.pattern_weights(h, row)[0, 0, 5, 4]), 4)
        text = "\n".join(m.value for m in at.markdown)
        assert f"at **step {step:,}** ({ind.marks(ph, step)})" in text
        assert f"**{h['prev'][row][0].max():.2f}**" in text
        loss = next(s for s in charts(at) if s.get("title") == "Loss per step")
        assert loss["layer"][-1]["data"]["values"] == [{"step": step}]          # the dashed line at the step shown
    assert "no layer-0 head is a previous-token head yet" not in text          # after the drop
    at.button(key="induction.before").click().run()
    assert "no layer-0 head is a previous-token head yet" in "\n".join(m.value for m in at.markdown)


def test_a_links_step_is_snapped_to_a_logged_step_and_the_composition_follows_it(run):
    h = run.history
    at = open_page(PAGE, query={"induction.at": "777", "induction.tab": "1"}, timeout=120)
    no_exception(at)
    assert at.select_slider(key="induction.at").value == 750
    kc = next(s for s in charts(at) if "what singles out key j + 1" in str(s.get("title", "")))
    assert kc["layer"][-1]["data"]["values"] == [{"step": 750}]
    head = ind.top_head(run.history["induction"][-1], 1)
    row = h["step"].tolist().index(750)
    top = int(np.argmax(h["kcomp"][row, 2:-1, head]))
    assert f"the layer-0 head whose output singles out j + 1 most is head {top}, by **{h['kcomp'][row, 2 + top, head]:+.2f}**" \
        in "\n".join(m.value for m in at.markdown)


# ---- a run that stops mid-drop (read3) ----------------------------------------------------------------------------

def _cut(run, last: int) -> dict:
    """The shipped run's history up to step `last`: what training seed 0 for `last` steps logs (850: the same copy
    losses to the bit, measured), with the shipped run's end weights (the texts below read only the history)."""
    h = run.history
    n = h["step"].tolist().index(last) + 1
    return {"start": run.start, "params": run.params, "history": {k: v[:n] for k, v in h.items()}, "seed": 0,
            "steps": last, "seconds": 9.0}


def _open_with(run_dict: dict, tab: str | None = None):
    from ui.transformer import induction_run
    blob = run_blob.to_bytes(run_dict)
    own = {**run_blob.from_bytes(blob), "source": "session"}
    at = open_page(PAGE, query={} if tab is None else {"induction.tab": tab}, timeout=120)
    at.session_state["induction.trained"] = {"run": own, "analysis": induction_run.analyse(own),
                                             "digest": run_blob.digest(blob)}
    at.session_state["induction.run"] = run_blob.digest(blob)
    at.session_state["induction.at"] = int(own["history"]["step"][-1])
    at.run()
    no_exception(at)
    return at


def test_a_run_of_850_steps_stops_mid_drop_and_the_page_does_not_call_its_last_step_the_drops_end(run):
    """Seed 0, 850 steps: the copy loss still falls fast at the last step (2.80 → 1.70 from 800 to 850). The page
    said "drops between steps 750 and 850 (to 1.70) and keeps falling after it, to the 1.70 above", labelled 850
    "the drop's end" and its button "After the drop"."""
    cut = _cut(run, 850)
    ph = ind.phases(cut["history"]["step"], cut["history"]["copy_loss"])
    assert ph.found and ph.drop == (750, 850) and not ph.ended
    assert ind.marks(ph, 850) == "the run's last step, still in the drop"
    full = ind.phases(run.history["step"], run.history["copy_loss"])
    assert full.ended and ind.marks(full, full.drop[1]) == "the drop's end"
    at = _open_with(cut)
    text = "\n".join(m.value for m in at.markdown)
    assert "is still dropping fast at step 850, the run's last" in text and "keeps falling after it" not in text
    assert "the drop's end" not in text
    assert at.button(key="induction.after").label == "The run's end"
    assert list(at.select_slider(key="induction.at").options)[-1] == "850 · the run's last step, still in the drop"
    at = _open_with(cut, tab="1")
    text = "\n".join(m.value for m in at.markdown)
    assert "Across the drop so far, the largest layer-0 head's number goes from" in text
    assert "(step 850, the run stopping mid-drop)." in text


def test_the_k_composition_names_the_position_embedding_e_pos_and_a_head_that_does_not_attend_there_says_so(run):
    """docs/notation.md: E^pos, not P (P is the probabilities on the gradients page); the table and the chart's
    axis said "position embedding P" / "P". At step 0 no head attends to j + 1, and the caption said "Key j + 1 is
    the column the induction head attends to"."""
    trace = _trace(run.start)
    lesson = ind.k_composition(trace, run.start, 30, 3)
    assert lesson.facts["names"][1] == "position embedding E^pos"
    assert lesson.facts["axis_labels"]["part"][1] == "E^pos"
    w = lesson.facts["weight"]
    assert w < 0.1 and f"(head 3 puts A = {w:.3f} on it)" in lesson["score_parts"].why
    at = open_page(PAGE, query={"induction.tab": "1"}, timeout=120)
    no_exception(at)
    text = "\n".join(m.value for m in at.markdown)
    assert "position embedding E^pos" in text and "embedding P" not in text


def test_the_why_random_text_counts_the_training_sequences_tokens():
    from attention_core.training.lm.task import SEQ_LEN
    from ui.transformer.induction_view import WHY_RANDOM
    assert SEQ_LEN == 41 and WHY_RANDOM.startswith("Each training sequence is 41 random tokens of the 31 (the model "
                                                   "reads the first 40")


def test_the_fixed_offset_run_shares_the_start_of_a_seed_0_run_only(run):
    """The fixed-offset run starts from seed 0's weights: "the same start" was said beside a seed-3 run too."""
    from ui.transformer.induction_view import why_random_text
    fixed = shipped.load("fixed_offset")
    assert fixed.settings["seed"] == 0 and all(np.array_equal(fixed.start[k], run.start[k]) for k in run.start)
    h = run.history
    assert "(seed 0, the same start as the run shown," in why_random_text({"seed": 0, "history": h})
    said = why_random_text({"seed": 3, "history": h})
    assert "the same start" not in said and "(seed 0, the shipped run's start, not this seed-3 run's," in said

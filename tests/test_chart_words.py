"""Every chart says what it shows (issue 32 item 3): the text alternative a screen reader reads (a Vega-Lite chart's
`description`, which Streamlit puts on the chart's element as aria-label; seen in chromium: tests/e2e/test_keyboard.py)
is computed from the chart's own numbers, checked here against numbers worked out by hand, and never states a number
a lesson stop hides."""
from __future__ import annotations

import numpy as np

from attention_core import Config, run_forward
from ui.chart_words import heatmap_sentence, number, patterns_sentence, spec_sentence
from ui.charts import grouped_bars_spec, heatmap_spec, line_spec


def test_a_weights_heatmap_names_the_largest_share_of_a_row():
    a = np.array([[0.02, 0.96, 0.02], [0.50, 0.25, 0.25], [0.10, 0.30, 0.60]])
    said = heatmap_sentence("weights A", a, ["i", "love", "it"], ["i", "love", "it"], "query (token)", "key (token)",
                            "sequential")
    assert said == ("Heatmap of weights A: 3 rows (query (token), “i”, “love”, “it”) by 3 columns (key (token), “i”, "
                    "“love”, “it”). Each row sums to 1; the largest weight: “love” takes 0.96 of row “i”; the "
                    "smallest: 0.02, “i” in row “i”.")


def test_signed_values_give_their_extremes_and_where_they_are_and_the_masked_cells():
    s = np.array([[1.5, -np.inf, -np.inf], [-2.25, 0.5, -np.inf], [0.0, 3.125, -1.0]])
    said = heatmap_sentence("scores S̃", s, list("abc"), list("abc"), "query (token)", "key (token)")
    assert "Unmasked values run from −2.25 (row “b”, column “a”) to 3.12 (row “c”, column “b”)" in said   # .2f of 3.125
    assert said.endswith("; 3 cells masked (−∞).")


def test_a_vector_is_described_by_its_columns_and_numbered_axes_by_their_count():
    p = np.array([[0.2, 0.5, 0.3]])
    said = heatmap_sentence("probabilities p", p, [""], ["neg", "neu", "pos"], None, "class", "sequential")
    assert said == ("Heatmap of probabilities p: 1 row by 3 columns (class, “neg”, “neu”, “pos”). It sums to 1; the "
                    "largest weight: “neu” takes 0.50; the smallest: 0.20, “neg”.")
    w = np.arange(12.0).reshape(4, 3) - 5
    said = heatmap_sentence("W_Q", w, [str(k) for k in range(4)], ["0", "1", "2"], "d_model", "d_k")
    assert said.startswith("Heatmap of W_Q: 4 rows (d_model) by 3 columns (d_k). Values run from −5.00 (row “0”, "
                           "column “0”) to 6.00 (row “3”, column “2”).")


def test_the_forward_pass_weights_chart_carries_its_sentence_and_each_cell_its_words():
    trace = run_forward(Config())
    a = trace["weights"].value
    spec, _ = heatmap_spec(trace, trace["weights"])
    i, j = np.unravel_index(np.argmax(a), a.shape)
    tokens = trace.token_labels()
    assert f"“{tokens[j]}” takes {a[i, j]:.2f} of row “{tokens[i]}”" in spec["description"]
    rects = spec["layer"][0]
    assert rects["encoding"]["description"] == {"field": "say", "type": "nominal"}
    assert all(layer["mark"].get("aria") is False for layer in spec["layer"][1:])      # the numbers: said once


def test_a_hidden_number_is_not_in_the_words():
    trace = run_forward(Config())
    step = trace["weights"]
    a = step.value
    j = int(np.unravel_index(np.argmax(a), a.shape)[1])
    column = [(i, j) for i in range(a.shape[0])]          # the column of the largest weight (0.96 in every row)
    spec, _ = heatmap_spec(trace, step, hidden=column)
    said = spec["description"]
    assert said.endswith(f"“today”). {a.shape[0]} numbers are hidden until your teacher reveals them.")
    assert not any(ch.isdigit() for ch in said.split(").", 1)[1].replace(str(a.shape[0]), "", 1))   # no number


def test_line_and_bar_charts_say_each_series_ends_and_extremes():
    rows = [{"step": s, "loss": v, "set": "train"} for s, v in ((0, 2.0), (10, 0.5), (20, 0.75))]
    said = spec_sentence(line_spec(rows, "step", "loss", color="set", title="Loss"))
    assert said == "Line chart “Loss”: loss against step, train: 2.00 at 0 to 0.75 at 20 (lowest 0.50 at 10)."
    bars = [{"key": k, "weight": w, "softmax of": g} for g, ws in (("q·k", (0.7, 0.2, 0.1)), ("q·k/√d", (0.4, 0.35,
                                                                                                            0.25)))
            for k, w in enumerate(ws)]
    said = spec_sentence(grouped_bars_spec(bars, "key", "weight", "softmax of", title="One query"))
    assert said == ("Bar chart “One query”: weight for each key, q·k: largest 0.70 (0), smallest 0.10 (2); q·k/√d: "
                    "largest 0.40 (0), smallest 0.25 (2).")


def test_a_pattern_grid_names_each_layers_most_focused_head_and_where_it_looks():
    n = 6
    a = np.full((2, 2, n, n), 0.0)
    a[0, 0] = np.eye(n, k=-1)                 # previous-token head (row 0 looks at itself)
    a[0, 0, 0, 0] = 1
    a[0, 1] = np.tril(np.ones((n, n))) / np.arange(1, n + 1)[:, None]     # spread evenly
    a[1, 1] = np.eye(n, k=-2)
    a[1, 1, 0, 0] = a[1, 1, 1, 0] = 1
    said = patterns_sentence([("step 100", a)])
    assert "4 heads in 2 layers" in said
    assert "Most focused: layer 0's head 0 puts 1.00 on average on the previous token (j = i − 1)" in said
    assert "; layer 1's head 1 puts 1.00 on average on the token 2 back (j = i − 2)." in said


def test_numbers_are_written_as_the_cells_write_them():
    assert [number(v) for v in (0.956, -27.413, 0.0421, -0.0085, 8.4e6)] == ["0.96", "−27.41", "0.042", "−8.5e-3",
                                                                              "8.4e+6"]


def test_panels_of_one_measure_each_and_many_series_say_the_ones_that_end_highest():
    rows = [{"step": s, "score": v, "head": f"head {h}", "kind": kind}
            for kind, ends in (("previous-token", (0.1, 0.2, 0.9, 0.3, 0.4)), ("induction", (0.5, 0.1, 0.1, 0.1, 0.8)))
            for h, end in enumerate(ends) for s, v in ((0, 0.05), (100, end))]
    panel = lambda kind: {"transform": [{"filter": {"field": "kind", "equal": kind}}], "mark": "line", "title": kind,
                          "encoding": {"x": {"field": "step", "type": "quantitative"},
                                       "y": {"field": "score", "type": "quantitative"},
                                       "color": {"field": "head", "type": "nominal"}}}
    said = spec_sentence({"data": {"values": rows}, "hconcat": [panel("previous-token"), panel("induction")]},
                         most=2)
    assert said == ("Line chart “previous-token”: score against step, head 2: 0.05 at 0 to 0.90 at 100; head 4: 0.05 "
                    "at 0 to 0.40 at 100; 3 more series end lower. Line chart “induction”: score against step, "
                    "head 4: 0.05 at 0 to 0.80 at 100; head 0: 0.05 at 0 to 0.50 at 100; 3 more series end lower.")


# ---- the keyboard's pickers under a heatmap (item 2), through AppTest; tests/e2e/test_keyboard.py does it by keys ----

def test_the_pickers_explain_the_cell_a_click_would_and_the_link_carries_it():
    from tests.apptest_util import no_exception, open_page
    at = open_page("app_pages/5_softmax.py")
    row, col = at.selectbox(key="pick:hm:weights:None.row"), at.selectbox(key="pick:hm:weights:None.col")
    assert (row.label, col.label) == ("Row of Attention weights to explain", "Column of Attention weights to explain")
    assert row.options == ["row 0 · i", "row 1 · love", "row 2 · you", "row 3 · today"]
    row.set_value(3).run()
    assert not [m for m in at.markdown if "was made" in m.value]          # a row alone explains nothing
    at.selectbox(key="pick:hm:weights:None.col").set_value(1).run()
    no_exception(at)
    shown = [m.value for m in at.markdown if "was made" in m.value]
    assert shown and shown[0].startswith(r"**How A\[3,1\] was made**"), shown
    assert dict(at.query_params).get("cell") == "hm:weights:None.3.1"     # the link's cell, as a click's
    # a shorter sentence: the pick outside the new matrix explains nothing, the pickers are cleared, nothing breaks
    at.text_input(key="w.sentence").set_value("we miss").run()
    no_exception(at)
    assert not [m for m in at.markdown if "was made" in m.value]
    assert at.selectbox(key="pick:hm:weights:None.row").value is None
    assert at.selectbox(key="pick:hm:weights:None.row").options == ["row 0 · we", "row 1 · miss"]


# ---- a fresh reader's findings (NOTES-read-keys.md): each a sentence that was false or noise under some settings ----

def test_a_heads_small_multiple_names_its_step_not_only_its_head():
    """/multi_head drew three charts named "Heatmap of head 0" (Q split into heads, weights, context)."""
    trace = run_forward(Config(n_heads=2))
    said = {key: heatmap_spec(trace, trace[key], 0, title="head 0")[0]["description"]
            for key in ("weights", "context")}
    assert said["weights"].startswith(f"Heatmap of {trace['weights'].title}, head 0: ")
    assert said["context"].startswith(f"Heatmap of {trace['context'].title}, head 0: ")
    assert heatmap_spec(trace, trace["weights"], 0)[0]["description"].startswith(
        f"Heatmap of {trace['weights'].title}: ")


def test_a_number_that_rounds_to_zero_is_said_as_its_cell_writes_it():
    """The cell writes 0.00 (or 0 in a matrix under 0.01); the words said −0.00 and 0.000."""
    assert number(-0.004, 0.5) == "0.00" and number(-0.0004, 0.05) == "0.000" and number(0.0, 0.005) == "0"
    said = heatmap_sentence("x", np.array([[0.5, -0.003], [0.2, 0.1]]), ["a", "b"], ["c", "d"])
    assert "Values run from 0.00 (row “a”, column “d”) to 0.50" in said and "−0.00" not in said


def test_with_masked_cells_the_range_is_said_to_be_of_the_unmasked_ones():
    """−∞ is below any number: "Values run from −27.41" or "Every value is 1.00" was false beside masked cells."""
    s = np.array([[1.0, -np.inf], [2.0, 2.0]])
    assert "Unmasked values run from 1.00" in heatmap_sentence("S̃", s, list("ab"), list("ab"))
    assert "Every unmasked value is 1.00; 1 cell masked (−∞)." in heatmap_sentence(
        "S̃", np.array([[1.0, -np.inf], [1.0, 1.0]]), list("ab"), list("ab"))
    assert "Values run from" in heatmap_sentence("S", np.array([[1.0, 3.0]]), ["a"], list("ab"))


def test_a_vectors_cell_is_named_by_its_column_alone():
    """A one-row vector's cells were read "row , d_model 0: 0.527923"; evaluated as Vega would, by node."""
    import json
    import shutil
    import subprocess

    import pytest

    from ui.chart_words import cell_words
    if not shutil.which("node"):
        pytest.skip("node evaluates the Vega expression")
    expr = cell_words(None, "d_model")
    rows = [{"row": "", "col": "0", "exact": "0.527923"}, {"row": "i", "col": "love", "exact": "0.955186"}]
    said = subprocess.run(["node", "-e", f"for (const datum of {json.dumps(rows)}) console.log({expr})"],
                          capture_output=True, text=True, check=True).stdout.splitlines()
    assert said == ["d_model 0: 0.527923", "row i, d_model love: 0.955186"]


def test_a_tables_explanation_does_not_send_the_learner_to_a_chart():
    """Selected in a table ("Numbers as a table", the online-softmax and KV-cache tables) there is no chart and no
    picker: its last line said "pick another row or column under the chart … double-click the chart"."""
    from streamlit.testing.v1 import AppTest

    def page(table: bool):
        from attention_core import Config, run_forward
        from attention_core.explanations import explain
        from ui.explain_view import explanation
        trace = run_forward(Config())
        explanation(explain(trace, "weights", (1, 2)), float(trace["weights"].value[1, 2]), table=table)

    for table, says in ((True, "Select another cell of the table to explain it."),
                        (False, "double-click the chart to clear.")):
        at = AppTest.from_function(page, kwargs={"table": table}).run()
        captions = " ".join(c.value for c in at.caption)
        assert captions.endswith(says), captions
        assert ("under the chart" in captions) is not table


def test_the_rope_pair_and_the_grids_feature_maps_write_numbers_as_the_heatmaps_do():
    """A real minus, never −0.00, and the position p the pair is turned to."""
    from ui.today.rope_view import pair_chart
    said = pair_chart(2.21, -0.001, 1.0, 3, 0, 0, (0, 2))[1]["description"]
    assert said == ("Pair 0 of q_0 as a point in the plane: (2.21, 0.00) at position 0, turned to position p = 3 by "
                    "p·θ_0 = 3.00 rad: (−2.19, 0.31); its length 2.21 stays.")
    from attention_core import grid as g
    from ui.variants.grid_view import channels_spec
    spec, _ = channels_spec(next(iter(g.SCENES)), 6)
    assert spec["description"].endswith("from −1.00 to 1.00."), spec["description"]        # was "from -1.00"


def test_the_colour_bar_says_it_is_a_colour_key_not_the_values():
    """Vega's words were "Gradient legend for fill color with values from −27 to 27" on scores that are all negative."""
    trace = run_forward(Config())
    legend = lambda key: heatmap_spec(trace, trace[key])[0]["layer"][0]["encoding"]["color"]["condition"]["legend"]
    bound = float(np.abs(trace["scaled_scores"].value).max())
    assert legend("scaled_scores")["description"] == f"Colour key from −{bound:.2f} to {bound:.2f}, palest at 0"
    assert legend("weights")["description"] == "Colour key from 0.00 to 1.00"


def test_with_hidden_numbers_the_colour_key_gives_no_end():
    """The ends are the visible cells' extremes; a visible −27.4059 reads as the hidden −27.4066 (both −27.41)."""
    trace = run_forward(Config())
    step = trace["scaled_scores"]
    top = tuple(map(int, np.unravel_index(np.abs(step.value).argmax(), step.value.shape)))
    spec, _ = heatmap_spec(trace, step, hidden=[top])
    assert spec["layer"][0]["encoding"]["color"]["condition"]["legend"]["description"] == "Colour key, palest at 0"


def test_the_class_answer_bars_say_each_count_the_right_answer_and_yours():
    from ui.room.poll import poll_bars_spec
    said = poll_bars_spec(["0.5", "0.25"], [1, 0], right=0, you=1)["description"]
    assert said == ("The class's answers, a bar for each choice: A. 0.5: 1 student (the right answer); "
                    "B. 0.25: 0 students (your answer).")
    assert "right" not in poll_bars_spec(["0.5", "0.25"], [2, 3])["description"].split(":", 1)[1]


def test_bahdanau_training_curve_says_what_it_shows():
    """The alignment page's loss curve (drawn by its own cached spec, not ui.chart): its ends, by hand."""
    from ui.variants.alignment_train import loss_chart
    _, spec = loss_chart((1.0, 0.5, 0.25, 0.2))
    assert spec["description"] == ("Line chart “Training loss (MSE per sequence)”: loss against training sequence, "
                                   "1.00 at 1 to 0.20 at 4.")


def test_the_explained_cell_is_outlined_where_it_is_and_said_and_nothing_when_none_is():
    """A picked (or clicked) cell: two layers over the same cells, drawn (vl-convert's SVG, as Vega draws it) black just
    inside that cell's edge and white just outside it; the text alternative names it. No cell: no such layer."""
    import re

    import vl_convert as vlc

    from ui.charts import standalone
    trace = run_forward(Config())
    step = trace["weights"]
    plain, frame = heatmap_spec(trace, step)
    assert not any(str(layer.get("name", "")).startswith("explained") for layer in plain["layer"])
    assert heatmap_spec(trace, step, explained=(99, 0))[0] is plain                    # outside the matrix: none
    spec, cells = heatmap_spec(trace, step, explained=(2, 1))
    tokens = trace.token_labels()
    assert cells is frame and spec["layer"][:-2] == plain["layer"]                     # the same data and cells
    said = f"The explained cell: row 2 (“{tokens[2]}”), column 1 (“{tokens[1]}”)."
    assert spec["description"] == f"{plain['description']} {said}"
    svg = vlc.vegalite_to_svg(standalone(spec, cells))
    group = lambda name: re.search(rf'<g class="[^"]*\b{name}"[^>]*>(.*?)</g>', svg, re.S).group(1)
    n = step.value.shape[1]
    x, y, w, h = map(float, re.findall(r'd="M([\d.]+),([\d.]+)h([\d.]+)v([\d.]+)', group("layer_0_marks"))[2 * n + 1])
    for name, colour, inside in (("explained_outer", "#ffffff", False), ("explained_inner", "#000000", True)):
        cx, cy, half_w, half_h, stroke, line = re.search(
            r'translate\(([\d.]+),([\d.]+)\)" d="M-([\d.]+),-([\d.]+)L[^"]*" stroke="(#\w+)" stroke-width="([\d.]+)"',
            group(f"{name}_marks")).groups()
        cx, cy, half_w, half_h, line = map(float, (cx, cy, half_w, half_h, line))
        assert (cx, cy, stroke) == (x + w / 2, y + h / 2, colour)
        edge = half_w + (line / 2 if inside else -line / 2)            # the stroke's side that touches the cell's edge
        assert edge == w / 2 and half_h + (line / 2 if inside else -line / 2) == h / 2 and line >= 2


def test_a_hidden_cell_explained_is_outlined_as_any_other_and_its_number_is_not_said():
    trace = run_forward(Config())
    step = trace["weights"]
    shown, _ = heatmap_spec(trace, step, explained=(1, 3))
    hidden, frame = heatmap_spec(trace, step, hidden=[(1, 3)], explained=(1, 3))
    assert hidden["layer"][-2:] == shown["layer"][-2:]                # nothing of the outline depends on the number
    said = hidden["description"].split("reveals it. ", 1)[1]
    tokens = trace.token_labels()
    assert said == f"The explained cell: row 1 (“{tokens[1]}”), column 3 (“{tokens[3]}”)."
    assert np.isnan(frame.column("v").to_numpy()[1 * step.value.shape[1] + 3])


def test_a_picker_leaves_room_for_its_longest_label():
    """"column 1 · extraordinarily" measures 186 px in chromium at presenter mode's 17.5 px (149 px at 14 px) and a
    picker's edges take 80 of its width: at 240 (150) px it read "column 1 · extraordi"."""
    from ui.matrix import PICKER_EDGES_PX, picker_width
    labels = ["column 0 · the", "column 1 · extraordinarily"]
    assert picker_width(labels, True) >= 186 + PICKER_EDGES_PX and picker_width(labels, False) >= 149 + PICKER_EDGES_PX
    assert picker_width(["row 2 · you"], True) == 240 and 150 <= picker_width(["row 2 · you"], False) <= 160
    assert picker_width(["column 1 · " + "x" * 200], True) == 480

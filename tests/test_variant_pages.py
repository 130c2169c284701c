"""The four 'Attention variants' pages through AppTest, opened the way the browser opens them."""
import numpy as np
import pytest

from attention_core import Config, run_forward
from attention_core import bahdanau as b
from attention_core.lessons.torch_mha import score_costs
from tests.apptest_util import charts, formulas, messages, no_exception, open_page

PAGES = ["app_pages/20_score_functions.py", "app_pages/21_alignment.py", "app_pages/22_grid.py", "app_pages/23_pytorch_mha.py"]


def metric(at, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


def torch_check(at) -> tuple[float, float, bool]:
    """The PyTorch page's torch-against-numpy box: (output difference, weights difference, agree?)."""
    import re
    box = next(m.value for m in list(at.success) + list(at.error) if "max |torch − numpy|" in m.value)
    found = re.search(r"Agree to 1e-10: (yes|no)\.\*\* max \|torch − numpy\|: output \*\*(\S+)\*\*, "
                      r"weights \*\*(\S+)\*\*", box)
    assert found, box
    return float(found[2]), float(found[3]), found[1] == "yes"


@pytest.mark.parametrize("page", PAGES)
def test_renders_at_defaults(page):
    at = open_page(page)
    no_exception(at)
    assert at.title and not at.error, messages(at)
    assert charts(at), "every variant page draws at least one chart"


def test_score_functions_show_their_costs():
    at = open_page("app_pages/20_score_functions.py")
    no_exception(at)
    config = Config()
    n, d_k = len(run_forward(config).tokens), config.d_k
    expected = score_costs(n, n, d_k, d_k)           # the app's additive score is d_k wide
    table = next(df.value for df in at.dataframe if "FLOPs" in df.value.columns)
    assert list(table["FLOPs"]) == [c["flops"] for c in expected]
    assert list(table["parameters"]) == [c["params"] for c in expected]
    latex = " ".join(formulas(at))
    for c in expected:
        assert f"&= {c['flops_formula']} \\\\ &= " + f"{c['flops']:,}".replace(",", "{,}") in latex, c["name"]
    assert len([s for s in charts(at) if "layer" in s]) == 8        # scores and weights for each of the four


def test_score_function_costs_follow_the_sidebar():
    at = open_page("app_pages/20_score_functions.py")
    at.number_input(key="w.d_k").set_value(9).run()
    no_exception(at)
    table = next(df.value for df in at.dataframe if "FLOPs" in df.value.columns)
    n = len(run_forward(Config()).tokens)
    assert list(table["FLOPs"]) == [c["flops"] for c in score_costs(n, n, 9, 9)]


def test_alignment_trains_sorts_and_draws_the_matrix():
    at = open_page("app_pages/21_alignment.py")
    no_exception(at)
    assert "align.model" not in at.session_state
    at.number_input(key="align.steps").set_value(40)
    at.form_submit_button[0].click().run()
    no_exception(at)
    assert not at.error, messages(at)
    trained = at.session_state["align.model"]
    s = trained["settings"]
    assert s.steps == 40 and len(trained["losses"]) == 40 and all(np.isfinite(trained["losses"]))
    again = b.evaluate(trained["params"], 200, s.seed, s.min_len, s.max_len)      # recomputed here
    assert metric(at, "Sorted exactly") == f"{again.n_sorted} / 200"
    assert trained["eval"] == again
    matrix = next(sp for sp in charts(at) if any("output i" == ly.get("encoding", {}).get("y", {}).get("title")
                                                 for ly in sp.get("layer", [])))
    cells = matrix["data"]["values"]
    rows = {}
    for c in cells:
        rows[c["i"]] = rows.get(c["i"], 0.0) + c["v"]
    np.testing.assert_allclose(list(rows.values()), 1.0, atol=1e-12)              # every row sums to 1
    assert sum(c["h"] for c in cells) == len(rows)                               # one outlined cell per row
    # a rerun (another widget) keeps the model: no retraining
    at.slider(key="align.sort_len").set_value(8).run()
    no_exception(at)
    assert at.session_state["align.model"]["losses"] == trained["losses"]
    assert any("Parameters: **trained**" in m.value for m in at.markdown)


def test_alignment_too_high_a_learning_rate_is_explained():
    at = open_page("app_pages/21_alignment.py")
    at.number_input(key="align.lr").set_value(1.0)
    at.number_input(key="align.steps").set_value(30)
    at.form_submit_button[0].click().run()
    no_exception(at)
    assert not at.error, messages(at)
    assert any("Not trained enough to sort" in w.value for w in at.warning), messages(at)


def test_grid_scene_and_query_switch():
    at = open_page("app_pages/22_grid.py")
    no_exception(at)
    first = len(at.image)
    assert first >= 2, "the image and its overlay"
    at.selectbox(key="grid.scene").set_value("traffic light")
    at.selectbox(key="grid.query").set_value("round").run()
    no_exception(at)
    assert not at.error, messages(at)
    assert any("traffic light" in caption for im in at.image for caption in im.captions)
    assert any("Where “round” looks" in s.value for s in at.subheader)
    assert len(at.image) == first
    for tab in ("(b) Many queries", "(c) Learned K and V: cross-attention"):
        at.session_state["grid.tab"] = tab
        at.run()
        no_exception(at)
        assert len(at.image) > first, tab                      # one overlay per query
    at.radio(key="grid.transforms").set_value("random").run()
    no_exception(at)
    assert any("random W_K" in caption for im in at.image for caption in im.captions)


def test_pytorch_page_matches_numpy_with_and_without_padding():
    at = open_page("app_pages/23_pytorch_mha.py", query={"embedding": "toy", "weights": "random"})   # d_model 3: 3 heads
    no_exception(at)
    output, weights, agree = torch_check(at)
    assert output < 1e-10 and weights < 1e-10 and agree
    assert not at.error, messages(at)
    at.selectbox(key="mha.heads").set_value(3)
    at.multiselect(key="mha.pad").set_value([1]).run()
    no_exception(at)
    assert not at.error, messages(at)
    assert torch_check(at)[0] < 1e-10 and torch_check(at)[2]
    shapes = next(t.value for t in at.table if "PyTorch shape" in t.value.columns)
    assert "[1, 3, 4, 1]" in list(shapes["PyTorch shape"])                 # [batch, heads, len, head_dim]
    assert any("masked_fill" in str(i) for i in shapes.index)
    # the dropout pitfall: eval matches numpy, seed 002's module at inference does not
    diffs = [float(m.value) for m in at.metric if m.label == "max |output − numpy|"]
    assert len(diffs) == 3 and diffs[0] < 1e-12 and diffs[2] > 1e-3


def test_pytorch_page_all_keys_padding_is_explained():
    at = open_page("app_pages/23_pytorch_mha.py")
    at.multiselect(key="mha.pad").set_value(list(range(4))).run()
    no_exception(at)
    assert not at.error, messages(at)
    assert any("Every key is padding" in w.value for w in at.warning)
    output, weights, agree = torch_check(at)
    assert output < 1e-10 and weights < 1e-10 and agree


# ---- what runs on a rerun: lazy tabs and expanders draw nothing closed, the right numbers open ----------------

def step_titles(at) -> list[str]:
    """The titles of the step boxes on the page (ui.views.heading: '##### title &nbsp; badge')."""
    return [m.value[6:].split(" &nbsp; ")[0] for m in at.markdown if m.value.startswith("##### ")]


def drawn(at, matrix) -> bool:
    """Some heatmap on the page holds exactly these numbers (row by row)."""
    want = np.asarray(matrix, dtype=float).ravel()
    for spec in charts(at):
        rows = spec.get("data", {}).get("values", [])
        if len(rows) == want.size and rows and {"i", "j", "v"} <= set(rows[0]):
            got = np.array([r["v"] for r in sorted(rows, key=lambda r: (r["i"], r["j"]))], dtype=float)
            if np.allclose(np.nan_to_num(got, nan=-1e300), np.nan_to_num(want, nan=-1e300, neginf=-1e300),
                           rtol=0, atol=1e-12):
                return True
    return False


def test_pytorch_walk_runs_only_the_open_tab_with_torch_numbers():
    from attention_core import torch_mha as tm
    at = open_page("app_pages/23_pytorch_mha.py")
    no_exception(at)
    x = run_forward(Config())["x"].value.copy()
    ref = tm.pytorch_trace(x, 1, Config().seed, (), 0.1, "eval", 0)     # computed here, not by the page's cache
    titles = step_titles(at)
    assert ref["q"].title in titles and ref["x"].title in titles
    for key in ("k", "energy", "alpha", "output"):                      # closed tab or closed expander: not drawn
        assert ref[key].title not in titles, key
    assert drawn(at, ref["q"].value[0])
    at.session_state["mha.group"] = "3 · Score, mask, softmax, dropout"
    at.run()
    no_exception(at)
    titles = step_titles(at)
    assert ref["alpha"].title in titles and ref["q"].title not in titles
    assert drawn(at, ref["alpha"].value[0, 0]) and drawn(at, ref["energy"].value[0, 0])
    at.session_state["mha.group"] = "1 · Project"
    at.session_state["mha.also.0"] = True                              # open "Also: K, V"
    at.run()
    assert ref["k"].title in step_titles(at) and drawn(at, ref["v"].value[0])


def test_pytorch_runs_are_cached_per_layer_input_not_per_sidebar_setting():
    from ui.variants import torch_view as tv
    config = Config()
    first = tv.check(config, 1, ())
    hotter = config.replace(temperature=2.5)                 # the layer ignores temperature: same X, same runs
    assert tv.computed("check", hotter, 1, ()) and tv.check(hotter, 1, ()) is first
    runs, again = tv.pitfall(config, 1, 0.1, 0)
    assert not runs["eval"].flags.writeable and not again["pitfall"].flags.writeable   # shared: read-only


def test_alignment_walk_tabs_and_parameters_are_lazy():
    at = open_page("app_pages/21_alignment.py")
    no_exception(at)
    s = b.ToySettings()
    inputs, targets = b.toy_sequence(6, np.random.default_rng([6, 2014]))
    step = b.step_trace(targets[2], inputs, b.init_params(2, 2, s.d_a, s.seed, s.init_scale))
    titles = step_titles(at)
    assert step["s_prev"].title in titles and step["h"].title in titles
    for key in ("w", "w_s", "hidden", "weights", "context"):
        assert step[key].title not in titles, key
    at.button(key="align.next.0").click().run()             # "Next →" opens stage 2
    no_exception(at)
    assert step["w_s"].title in step_titles(at) and step["s_prev"].title not in step_titles(at)
    at.session_state["align.walk"] = "4 · Scores and weights"
    at.session_state["align.params"] = True                  # open the W, U, v expander
    at.run()
    no_exception(at)
    titles = step_titles(at)
    assert {step[k].title for k in ("scores", "weights", "w", "u", "v")} <= set(titles)
    assert drawn(at, step["weights"].value) and drawn(at, step["w"].value)


def test_grid_x_expander_is_lazy_and_the_channels_chart_holds_x():
    from attention_core import grid as g
    at = open_page("app_pages/22_grid.py")
    no_exception(at)
    grid = g.make_grid("shapes", (6, 6), 48)
    assert "X" not in step_titles(at) and not drawn(at, grid.x)          # closed: the X step does not run
    facets = next(sp for sp in charts(at) if "facet" in sp)
    rows = facets["data"]["values"]
    for k, name in enumerate(g.FEATURE_NAMES):                            # each channel = one column of X
        got = sorted((r["row"], r["col"], r["v"]) for r in rows if r["feature"] == name)
        np.testing.assert_allclose([v for _, _, v in got], grid.x[:, k], rtol=0, atol=0)
    at.session_state["grid.x"] = True
    at.run()
    no_exception(at)
    assert drawn(at, grid.x)


def test_score_function_flops_chart_matches_the_costs():
    at = open_page("app_pages/20_score_functions.py")
    no_exception(at)
    d_k = Config().d_k
    chart = next(sp for sp in charts(at) if "FLOPs" in json_text(sp) and "layer" not in sp)
    for row in chart["data"]["values"]:
        cost = next(c for c in score_costs(row["n"], row["n"], d_k, d_k) if row["score"].lower().startswith(
            {"dot": "dot", "scaled_dot": "scaled", "additive": "additive", "bilinear": "bilinear"}[c["name"]]))
        assert row["FLOPs"] == cost["flops"], row
    assert len(chart["data"]["values"]) == 40


def json_text(spec) -> str:
    import json
    return json.dumps(spec)


@pytest.mark.parametrize("query", [{"temperature": "2.5"}, {"temperature": "0.4", "mask": "causal", "n_heads": "2"}])
def test_score_function_weights_at_any_temperature_equal_the_forward_pass(query):
    """The page re-runs only the softmax when the temperature changes (ui/variants/score_panels.py): its
    weights must be exactly run_forward's under the same settings, for every score function."""
    at = open_page("app_pages/20_score_functions.py", query=query)
    no_exception(at)
    config = Config(**{k: (float(v) if k == "temperature" else int(v) if k == "n_heads" else v)
                       for k, v in query.items()})
    assert at.session_state["s.temperature"] == config.temperature
    for score in ("dot", "scaled_dot", "additive", "bilinear"):
        trace = run_forward(config.replace(score=score))
        weights = trace["weights"].value[0] if config.n_heads > 1 else trace["weights"].value
        scores = trace["scaled_scores" if score == "scaled_dot" else "scores"].value
        assert drawn(at, weights), score
        assert drawn(at, scores[0] if config.n_heads > 1 else scores), score


# ---- what a learner reads: the words and formulas of these pages -----------------------------------------

def visible_text(at) -> str:
    """Every text a learner can read on the page: Markdown (with its formulas), captions, notices, titles,
    widget labels and options, metrics, table indexes, code, image captions and chart titles."""
    parts = []
    for kind in ("title", "header", "subheader", "markdown", "caption", "info", "warning", "success", "error",
                 "latex", "code"):
        parts += [str(e.value) for e in at.get(kind)]
    for kind in ("radio", "selectbox", "multiselect", "slider", "select_slider", "number_input", "toggle",
                 "segmented_control", "button", "checkbox", "text_input"):
        for w in at.get(kind):
            parts.append(str(getattr(w, "label", "")))
            parts += [str(o) for o in getattr(w, "options", []) or []]
            parts.append(str(getattr(w, "help", "") or ""))
    parts += [f"{m.label} {m.value} {m.proto.help}" for m in at.metric]
    parts += [" ".join(map(str, t.value.index)) + " " + " ".join(map(str, t.value.columns)) for t in at.table]
    parts += [c for im in at.image for c in im.captions]
    parts += [json_text(sp.get("title", "")) for sp in charts(at)]
    return "\n".join(parts)


PYTORCH_TABS = ["1 · Project", "2 · Split into heads", "3 · Score, mask, softmax, dropout", "4 · Back together"]


def pytorch_everywhere(at):
    """Yield the page after each tab and mode, every expander open: everything it can show."""
    for mode in ("eval", "train", "pitfall"):
        for k, tab in enumerate(PYTORCH_TABS):
            at.session_state["mha.group"] = tab
            at.session_state[f"mha.also.{k}"] = True
            at.session_state["mha.mode"] = mode
            at.run()
            no_exception(at)
            yield mode, tab


def test_pytorch_page_formulas_are_the_modules_in_the_apps_notation():
    """No bias terms (the layer is built with bias=False), W_Q the app's matrix (fc_q.weight = W_Qᵀ),
    A the weights, C the context, heads h = 0 … H−1; no seed file named anywhere."""
    from attention_core import torch_mha as tm
    at = open_page("app_pages/23_pytorch_mha.py", query={"embedding": "random", "d_model": "8", "weights": "random"})
    at.selectbox(key="mha.heads").set_value(2)
    at.multiselect(key="mha.pad").set_value([1]).run()
    assert tm.LAYER_BIAS is False
    seen = set()
    for mode, tab in pytorch_everywhere(at):
        shown = formulas(at)
        seen.update(shown)
        assert not any("b_" in f for f in shown), (mode, tab, shown)
        assert not any(r"W_Q^\top" in f or r"W_O^\top" in f for f in shown), shown
        text = visible_text(at)
        assert "seed 00" not in text.lower(), (mode, tab)
        assert "fc_q.weight` holds W_Qᵀ" in text and "= x W_Q, with no b_Q (no biases)" in text
        assert "Head h to draw" in text and "h = 0 … 1" in text
    for want in (r"Q = x\, W_Q", r"O = C\, W_O", r"C_h = A'_h V_h", r"A_h = \mathrm{softmax}(\tilde S_h)",
                 r"C = \left[\,C_0 \mid \cdots \mid C_{H-1}\,\right]", r"\hat S_h = \frac{Q_h K_h^\top}{\sqrt{d_k}}",
                 "A'_h = A_h", r"\frac{m \odot A_h}{1 - p}"):
        assert any(want in f for f in seen), want
    assert at.selectbox(key="mha.pit_head").options == ["0", "1"]


def test_grid_page_words_are_the_codes_numbers_and_notation():
    """The features table states redness() numbers (1 for pure red, 0.1 for the scenes' yellow), the scores,
    weights and context are S / Ŝ, A, C in every tab, and no text names a seed file."""
    from attention_core import grid as g
    at = open_page("app_pages/22_grid.py")
    no_exception(at)
    table = next(t.value for t in at.table if "what it measures in a cell" in t.value.columns)
    assert table.loc["redness", "what it measures in a cell"] == g.FEATURES["redness"]
    assert "1 for pure red (1, 0, 0)" in g.FEATURES["redness"] and "0.1 for their yellow" in g.FEATURES["redness"]
    texts = []
    for tab in ("(a) One query", "(b) Many queries", "(c) Learned K and V: cross-attention"):
        at.session_state["grid.tab"] = tab
        for transforms in ("hand", "random"):
            at.session_state["grid.transforms"] = transforms
            at.run()
            no_exception(at)
            texts.append(visible_text(at))
    text = "\n".join(texts)
    assert "seed 00" not in text.lower() and "tutorial 4" in text
    for want in (r"s_j = x_j \cdot q", r"S = Q X^\top", "C = A X", r"\hat S = \frac{Q K^\top}{\sqrt{d_k}}", "C = A V"):
        assert want in text, want
    assert "E = Q" not in text and "Y = A" not in text
    assert f"same {g.D_X}-feature space" in text
    assert "(" + ", ".join(g.VALUE_FEATURES) + ")" in text                        # hand-set W_V keeps these
    assert f"mixes all {g.D_X} features into each of the 5 value columns v0…v4" in text


def test_alignment_page_counts_from_0_and_states_the_codes_numbers():
    """h_0 … h_{n−1} and s_0 the start, the largest weight named by its 0-based input h_j, the learning rate's
    last value from lr_at, tutorial 5 not a seed file."""
    sub = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")
    at = open_page("app_pages/21_alignment.py")
    no_exception(at)
    s = b.ToySettings()
    inputs, targets = b.toy_sequence(6, np.random.default_rng([6, 2014]))
    step = b.step_trace(targets[2], inputs, b.init_params(2, 2, s.d_a, s.seed, s.init_scale))     # i = 3
    best = step.facts["best"]
    answer = int(np.flatnonzero(np.all(inputs == targets[3], axis=1))[0])
    info = next(m.value for m in at.info if "largest weight" in m.value)
    assert f"is on input h{str(best).translate(sub)} = {b.pair_label(inputs[best])};" in info
    assert f"the right answer is h{str(answer).translate(sub)} = {b.pair_label(targets[3])}." in info
    text = visible_text(at)
    assert "h₀ … hₙ₋₁" in text and "s₀ (its start)" in text and "from tutorial 5" in text
    assert f"s₂ = {b.pair_label(targets[2])}" in text
    at.slider(key="align.step_i").set_value(1).run()
    assert "the previous state is **s₀ = [0, 1]** (the start)" in visible_text(at)
    at.number_input(key="align.steps").set_value(40)
    at.form_submit_button[0].click().run()
    no_exception(at)
    trained = at.session_state["align.model"]["settings"]
    text = visible_text(at)
    assert f"falling linearly to {b.lr_at(40, trained):.3g} at the last sequence" in text
    assert "Mean over the last 2 training sequences (5% of them)" in text
    assert "seed 00" not in text.lower() and "h_1, \\dots, h_n" not in text and "\\sum_{j=1}" not in text
    at.toggle(key="align.sort_table").set_value(True).run()
    rows = next(d.value for d in at.dataframe if "most attended input" in d.value.columns)
    assert rows["most attended input"].str.match(r"h_\d+ = \[").all()
    assert list(rows["output i"]) == list(range(1, len(rows) + 1))              # output i becomes s_i, s_0 the start


@pytest.mark.parametrize("page", PAGES + ["app_pages/30_pitfalls.py"])
def test_no_learner_visible_text_names_a_seed_file(page):
    """Learners read 'tutorial 3', never 'seed 002': the sidebar's Seed is something else (docs/notation.md)."""
    at = open_page(page)
    no_exception(at)
    text = visible_text(at)
    assert text and "seed 00" not in text.lower() and "seed tutorial" not in text.lower()
    assert "tutorial " in text                         # each of these pages names the tutorial it follows

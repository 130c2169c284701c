"""Words true under the settings they are shown with, one index convention, charts that fit:
the forward pages' texts checked against the settings (AppTest) and against the core's numbers."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from attention_core import Config, run_forward, sinusoidal_encoding
from attention_core.math.embeddings import cosine_similarity
from tests.apptest_util import charts, formulas, no_exception, open_page

ROOT = Path(__file__).resolve().parents[1]
PAGES = "app_pages"


def page(name: str) -> str:
    return f"{PAGES}/{name}.py"


def captions(at) -> str:
    return "\n".join(c.value for c in at.caption)


def texts(at) -> str:
    return "\n".join([m.value for m in at.markdown] + [c.value for c in at.caption]
                     + [w.value for w in at.warning] + [i.value for i in at.info])


# -- the core's facts behind the words ---------------------------------------------------------------

def diagonal_spread(d: int, positions: int = 32) -> float:
    sim = cosine_similarity(sinusoidal_encoding(positions, d, 10_000.0))
    return max(float(np.ptp(np.diagonal(sim, k))) for k in range(1, positions - 1))


def test_sinusoidal_similarity_depends_on_distance_alone_only_for_even_widths():
    assert diagonal_spread(4) < 1e-12 and diagonal_spread(8) < 1e-12 and diagonal_spread(50) < 1e-12
    assert diagonal_spread(3) > 1e-3 and diagonal_spread(5) > 1e-4


# (that a shuffle only reorders the rows without positions and without a mask: tests/test_claims.py,
# test_order_blind_is_permutation_equivariance)


# -- positional page ---------------------------------------------------------------------------------

def test_shuffle_claim_only_without_a_mask():
    at = open_page(page("2_positional"))
    no_exception(at)
    assert "each row of the output just moves" in texts(at)
    at = open_page(page("2_positional"), {"mask": "causal"})
    no_exception(at)
    assert "just moves" not in texts(at)
    assert "causal mask looks at positions" in texts(at)


def test_odd_width_says_so_and_fixed_width_advice_says_what_to_change():
    at = open_page(page("2_positional"), {"embedding": "toy", "weights": "random"})           # 3-d toy vectors: odd, fixed
    no_exception(at)
    text = captions(at)
    assert "odd width (d = 3)" in text
    assert "depends only on the distance" not in text
    assert "try a wider d_model" not in text
    assert "pick seeded random embeddings" in text


def test_even_width_shows_the_distance_claim_and_random_can_widen():
    at = open_page(page("2_positional"), {"embedding": "random", "d_model": "4"})
    no_exception(at)
    text = captions(at)
    assert "depends only on the distance p − p′" in text
    assert "try a wider d_model in the sidebar" in text          # 4 dims over 32 positions: far ones look alike
    sim = cosine_similarity(sinusoidal_encoding(32, 4, 10_000.0))
    far = max(np.diagonal(sim, k).max() for k in range(9, 32))
    assert far > np.diagonal(sim, 1).min() and f"reach cosine {far:.2f}" in text
    at = open_page(page("2_positional"), {"embedding": "random", "d_model": "8"})
    no_exception(at)
    text = captions(at)
    assert "falls off with distance" in text and "wider d_model" not in text


def test_no_positional_encoding_suggests_a_sentence_the_vocabulary_has():
    at = open_page(page("2_positional"), {"embedding": "toy", "weights": "random", "positional": "none"})
    no_exception(at)
    warning = "\n".join(w.value for w in at.warning)
    assert "dog bites man" not in warning                     # the toy table has no "bites", no "man"
    assert "“the cat sat on a mat” and “a mat sat on the cat”" in warning
    from attention_core.math.embeddings import toy_vocabulary
    assert all(w in toy_vocabulary() for w in "the cat sat on a mat".split())
    at = open_page(page("2_positional"), {"embedding": "random", "positional": "none"})
    assert "“dog bites man”" in "\n".join(w.value for w in at.warning)


# -- embeddings page ---------------------------------------------------------------------------------

@pytest.mark.parametrize("embedding, says, never", [
    ("toy", "not trained, so closeness here is not meaning", "Words with similar meaning get similar rows"),
    ("random", "They carry no meaning", "similar meaning"),
    ("glove", "trained on word co-occurrences", "not trained"),
])
def test_the_similar_rows_claim_only_for_trained_vectors(embedding, says, never):
    at = open_page(page("1_embeddings"), {"embedding": embedding, "weights": "random"})
    no_exception(at)
    text = texts(at)
    assert says in text, text
    assert never not in text


def test_the_toy_closeness_example_is_the_tables_own():
    from attention_core import nearest
    from attention_core.math.embeddings import toy_vocabulary
    (near, cos), = nearest(toy_vocabulary(), "the", 1)
    at = open_page(page("1_embeddings"), {"embedding": "toy", "weights": "random"})
    assert f"the nearest neighbour of “the” is “{near}” (cosine {cos:.2f})" in texts(at)


def test_embedding_formula_counts_tokens_from_zero():
    at = open_page(page("1_embeddings"))
    latex = "\n".join(formulas(at))
    assert "e(w_0)" in latex and "e(w_{n-1})" in latex and "e(w_1)" not in latex


# -- one index convention: from 0, as on the heatmaps ------------------------------------------------

def test_scores_formula_counts_from_zero_like_the_explainer():
    from attention_core.explanations import explain
    at = open_page(page("4_scores"))
    no_exception(at)
    latex = "\n".join(formulas(at))
    assert r"\sum_{m=0}^{d_k-1}" in latex and "m=1" not in latex
    trace = run_forward(Config())
    assert "m=0" in explain(trace, "scores", (1, 2)).latex


def test_multi_head_counts_heads_from_zero_with_H_the_count():
    at = open_page(page("7_multi_head"), {"n_heads": "3", "d_model": "8", "embedding": "random"})
    no_exception(at)
    latex = "\n".join(formulas(at))
    assert r"h = 0, \dots, H-1 = 2" in latex and r"C_0 \mid \cdots \mid C_{H-1}" in latex
    assert "C_{h-1}" not in latex and "C_h}" not in latex and r"C_1 \mid C_2" not in latex
    assert "head 0 … head 2" in "\n".join(m.value for m in at.markdown)


# -- charts fit their cards --------------------------------------------------------------------------

def test_presenter_cells_never_make_a_chart_wider_than_its_room():
    from ui.charts import cell_size
    for rows, cols, max_w in ((4, 4, 280), (6, 6, 220), (4, 50, 620), (32, 8, 300)):
        for big in (False, True):
            assert cell_size(rows, cols, max_w, big) * cols <= max(max_w, 3.0 * cols) + 1e-9
    assert cell_size(4, 4, 620, True) > cell_size(4, 4, 620, False)          # larger cells where there is room


def test_softmax_half_width_heatmaps_fit_in_presenter_mode():
    at = open_page(page("5_softmax"), {"mask": "causal"})
    at.session_state["s.presenter"] = True
    at.run()
    no_exception(at)
    widths = [c["width"] for c in charts(at) if "layer" in c]
    assert widths and max(widths[:2]) <= 280 + 1e-9, widths                  # the mask and masked scores


def test_every_step_box_offers_the_click_and_sends_the_fit_style():
    at = open_page(page("5_softmax"))
    no_exception(at)
    # the hint shares the step's notes caption (why, inputs, hint: one element); the explanation
    # takes its place beside the chart once a cell is clicked
    assert "Click a cell (or pick it under the chart) to see the arithmetic behind its number." in captions(at)
    assert any("svg.marks{max-width:100%" in h.proto.body for h in at.get("html"))


def test_context_one_word_table_adds_up_to_the_context_row():
    at = open_page(page("6_context"))
    no_exception(at)
    frame = at.dataframe[0].value.set_index("key j")       # the key words, then the sums over j
    trace = run_forward(Config())
    i = 1                                                   # the picker's default word
    total = frame.loc["Σ over j"]
    c = trace["context"].value[i]
    assert np.allclose([total[f"A·v[j,{m}]"] for m in range(c.size)], c)
    assert total[f"A[{i}, j]"] == pytest.approx(1.0)
    assert total["v[j,0]"] == ""                            # a column of values is not summed: empty, not "None"
    assert frame.loc["love", "v[j,0]"] == f"{trace['v'].value[1, 0]:.3f}"


def test_qkv_one_word_rows_of_different_widths_leave_the_gaps_empty():
    """q and k have d_k entries, v has d_v: with d_k < d_v the q and k rows end in empty cells, not 'None'."""
    at = open_page(page("3_qkv"), query={"d_k": "3", "d_v": "5"})
    no_exception(at)
    frame = next(d.value for d in at.dataframe if "vector" in d.value.columns).set_index("vector")
    trace = run_forward(Config(d_k=3, d_v=5))
    assert list(frame.columns) == ["0", "1", "2", "3", "4"]
    assert list(frame.loc["q_1", ["3", "4"]]) == ["", ""] and list(frame.loc["k_1", ["3", "4"]]) == ["", ""]
    v = trace["v"].value[1]
    assert list(frame.loc["v_1", ["3", "4"]]) == [f"{x:.3f}" for x in v[3:]]   # gapped columns: text, 3 decimals
    assert np.allclose(frame.loc["v_1", ["0", "1", "2"]].astype(float), v[:3])  # full columns: the numbers
    assert np.allclose(frame.loc["q_1", ["0", "1", "2"]].astype(float), trace["q"].value[1])


def test_score_function_panels_explain_their_clicked_cell_in_place():
    at = open_page(page("4_scores"))
    no_exception(at)
    assert at.session_state["scores.compare"] is False
    assert not any("to see here" in c.value for c in at.caption), "a closed expander draws nothing"
    at.session_state["scores.compare"] = True                # opened, as a click on it does (on_change="rerun")
    at.run()
    no_exception(at)
    assert sum("Click a cell (or pick it under the chart) to see here the arithmetic behind its number." in c.value for c in at.caption) >= 4
    import pyarrow as pa                                     # each panel: its own score function's numbers
    drawn = {c.proto.id.split("hm:cmp:")[1].split("-")[0]: pa.ipc.open_stream(c.proto.data.data).read_all()
             for c in at.get("vega_lite_chart") if "hm:cmp:" in c.proto.id}
    assert sorted(drawn) == ["additive", "bilinear", "dot", "scaled_dot"], sorted(drawn)
    for score, cells in drawn.items():
        want = run_forward(Config(score=score))["scaled_scores" if score == "scaled_dot" else "scores"].value
        got = np.zeros_like(want)
        got[cells["i"].to_numpy(), cells["j"].to_numpy()] = cells["v"].to_numpy()
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


def test_the_raw_html_door_only_takes_constants_and_sanitized_keys(monkeypatch):
    """ui.views.trusted_html is the app's only st.html: every call passes the constant CSS, or a
    scroll script whose variable parts are letters, digits, _ and - only, whatever key it is given."""
    import re

    from ui import raw_html, views
    calls = []
    monkeypatch.setattr(views.st, "html", lambda body, **kw: calls.append((body, kw)))
    hostile = "x'</script><img src=x onerror=alert(1)>\\\"; }"
    views.scroll_into_view(hostile, "1-2</script>")
    views.fit_css()
    (script, kw), (css, css_kw) = calls
    assert kw == {"unsafe_allow_javascript": True} and css_kw == {"unsafe_allow_javascript": False}
    assert css == raw_html.PAGE_CSS                  # the fit CSS with the phone's (ui/phone.py), constants both
    assert script.count("<script>") == 1 and script.count("</script>") == 1 and "<img" not in script
    cls = re.search(r"\.st-key-([^']*)'", script).group(1)
    assert re.fullmatch(r"[A-Za-z0-9_-]+", cls) and cls.startswith("xp-x--")
    assert re.search(r"data-cell='([A-Za-z0-9_-]+)'", script).group(1) == "1-2--script-"

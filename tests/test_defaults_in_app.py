"""The app's defaults, as a student meets them: their own sentence keeps its words, 1, 2 and 4
heads work without touching another setting, and the weights heatmap has contrast.

Read from what the page draws (the heatmap cells sent to the browser), not from the core.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from attention_core import Config
from tests.apptest_util import charts, messages, no_exception, open_page

ROOT = Path(__file__).resolve().parents[1]
# Not the list the defaults were chosen on (data/student_sentences.txt): other sentences of the same kind.
SENTENCES = [
    "my brother forgot his keys at the library again",
    "the weather is cold and windy near the river",
    "our team lost the game but we played well",
    "please bring two pencils and a notebook to class",
    "the new phone has a bright screen and a slow battery",
    "grandma baked an apple pie for the party",
]


def drawn_matrices(at) -> list[np.ndarray]:
    """Every heatmap on the page as a matrix (heads side by side are separate charts)."""
    out = []
    for spec in charts(at):
        cells = spec.get("data", {}).get("values") or []
        if not cells or set(cells[0]) != {"i", "j", "v"}:
            continue
        rows, cols = 1 + max(c["i"] for c in cells), 1 + max(c["j"] for c in cells)
        m = np.full((rows, cols), np.nan)
        for c in cells:
            m[c["i"], c["j"]] = c["v"]
        out.append(m)
    return out


def weights_heatmaps(at) -> list[np.ndarray]:
    """The drawn matrices whose rows are probability distributions: the attention weights."""
    return [m for m in drawn_matrices(at) if m.shape[0] == m.shape[1] and not np.isnan(m).any()
            and np.allclose(m.sum(axis=1), 1.0, atol=1e-6) and (m >= 0).all()]


def test_the_app_defaults_are_the_cores():
    at = open_page("app_pages/5_softmax.py")
    no_exception(at)
    assert at.session_state["s.last_good"] == Config()
    assert at.selectbox(key="w.embedding").value == "glove" and at.selectbox(key="w.weights").value == "trained"


def test_students_sentences_keep_their_words_and_their_weights_have_contrast():
    typed = kept = 0
    at = open_page("app_pages/5_softmax.py")
    for sentence in SENTENCES:
        at.text_input(key="w.sentence").set_value(sentence).run()
        no_exception(at)
        assert at.session_state["s.last_good"].sentence == sentence
        (weights,) = weights_heatmaps(at)
        n = weights.shape[0]
        typed, kept = typed + len(sentence.split()), kept + n
        # the mean largest weight of a row against the uniform 1/n: at least 2x, by training, at temperature 1
        assert at.session_state["s.last_good"].temperature == 1.0
        assert weights.max(axis=1).mean() >= 2.0 / n, (sentence, weights.max(axis=1))
    assert kept / typed >= 0.95, (kept, typed)                   # e.g. "pencils" is past GloVe's 20,000 words


@pytest.mark.parametrize("heads", [1, 2, 4])
def test_one_two_and_four_heads_work_without_touching_another_setting(heads):
    at = open_page("app_pages/7_multi_head.py")
    at.slider(key="w.n_heads").set_value(heads).run()
    no_exception(at)
    assert not at.error, messages(at)
    assert at.session_state["s.last_good"] == Config(n_heads=heads)
    per_head = weights_heatmaps(at)
    assert len(per_head) == heads                                # one weights heatmap per head
    n = len(Config().sentence.split())
    assert all(w.shape == (n, n) for w in per_head)
    assert np.mean([w.max(axis=1).mean() for w in per_head]) >= 2.0 / n

"""Induction heads on a phone (issue 32 item 5): the pattern grids drawn for a phone's screen wrap their heads two a
row (the learner's sentence's, with its words on the axes, one a row) at their natural size: rendered by Vega
(vl-convert, the app's own PNG/SVG renderer), no wider than a 320-px window's column and no text under 11 px; the
grid of a wide screen is left as it was. The browser's side (the text as drawn at 390 px) is the walk's
(tests/e2e/test_walk.py, phone_text)."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest

from attention_core.lessons import induction as ind
from attention_core.training.lm import shipped
from attention_core.training.lm.model import lm_trace, sentence_ids
from attention_core.training.lm.train import pattern_weights
from ui.transformer.induction_charts import PHONE_FONT, patterns_spec, phone_patterns_spec
from ui.transformer.induction_view import word_axes

COLUMN_320 = 320 - 2 * 16          # a 320-px window's main column (Streamlit's 1 rem of padding each side)


def _svg(spec: dict) -> tuple[float, list[tuple[float, str]]]:
    """The chart's width and its texts (font size in px, text) as Vega draws it."""
    import vl_convert as vlc
    svg = vlc.vegalite_to_svg(json.dumps(spec))
    width = float(re.search(r'<svg[^>]* width="([\d.]+)"', svg).group(1))
    texts = [(float(size), text) for size, text in
             re.findall(r'<text[^>]*font-size="([\d.]+)px"[^>]*>([^<]*)</text>', svg) if text.strip()]
    return width, texts


@pytest.fixture(scope="module")
def run():
    return shipped.load()


def test_the_phone_grid_wraps_two_heads_a_row_readable_and_within_a_phone(run):
    h = run.history
    wide = patterns_spec([("step 1,500", pattern_weights(h, len(h["step"]) - 1))], ind.token_names(ind.repeated_ids()))
    before = json.dumps(wide, sort_keys=True)
    phone = phone_patterns_spec(wide)
    assert json.dumps(wide, sort_keys=True) == before                       # the wide grid as it was: 4 heads a row
    assert set(wide["facet"]) == {"row", "column"} and wide["spec"]["width"] == 150
    assert phone["data"]["values"] is wide["data"]["values"]                # the same rows: converted once
    assert phone["columns"] == 2 and phone["title"]["text"] == "step 1,500"
    width, texts = _svg(phone)
    assert width <= COLUMN_320, width
    panels = [t for _, t in texts if t.startswith("layer ")]
    assert panels == [f"layer {l} · head {h}" for l in range(2) for h in range(4)], panels      # in order
    assert min(size for size, _ in texts) >= PHONE_FONT >= 11, sorted(set(texts))[:5]
    assert {"query position i", "key position j", "weight A"} <= {t for _, t in texts}
    assert [t for _, t in texts].count("key position j") == 8             # every head its key axis


def test_the_sentence_grid_on_a_phone_one_head_a_row_with_its_words(run):
    ids, _, labels, _ = sentence_ids("the cat sat on the mat and the cat sat on the")
    tokens = [labels[i] for i in ids]
    wide = word_axes(patterns_spec([("after 1,500 steps", ind.patterns(lm_trace(run.params, ids, labels)))], tokens,
                                   size=170), len(ids))
    phone = phone_patterns_spec(wide, size=190, columns=1)
    width, texts = _svg(phone)
    assert width <= COLUMN_320, width
    assert min(size for size, _ in texts) >= 11
    words = [t for _, t in texts]
    assert words.count("mat (5)") == 2 * 8                  # on both axes of each of the 8 heads, one under another
    assert np.isclose(min(size for size, t in texts if t == "mat (5)"), 11)


def test_the_curves_on_a_phone_narrow_and_stacked_readable(run):
    """The loss and the score curves as drawn for a phone: no wider than a 320-px window's column, the two score
    panels one over the other, and no text under 11 px (side by side, scaled into a phone, they read ~6 px)."""
    from ui.transformer.induction_charts import loss_spec, phone_text, scores_spec
    h = run.history
    phases = ind.phases(h["step"], h["copy_loss"])
    wide_width, _ = _svg(scores_spec(h))
    assert wide_width > 1.5 * COLUMN_320                                 # why: the wide one would be scaled by half
    for spec in (phone_text(loss_spec(h, phases, width=230, height=200, at=100, legend_columns=1)),
                 phone_text(scores_spec(h, width=230, height=170, stacked=True))):
        width, texts = _svg(spec)
        assert width <= COLUMN_320, width
        assert min(size for size, _ in texts) >= 11, sorted(texts)[:3]
    stacked = scores_spec(h, width=230, height=170, stacked=True)
    assert [p["title"] for p in stacked["vconcat"]] == ["previous-token score", "induction score"]

"""The masks-and-biases page: its core (attention_core/lesson_masks.py) against torch and the ALiBi paper,
the properties behind its claims, every clickable number's arithmetic, and the page in AppTest."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from attention_core import Config, ConfigError
from attention_core.alibi import alibi_slopes
from attention_core.attention import causal_mask, sliding_window_mask, softmax
from attention_core.claims import CLAIMS, holds
from attention_core.explain import explain
from attention_core.lesson_masks import MaskSettings, masks_trace, slope_parts

RANDOM = Config(embedding="random", weights="random", d_model=6, d_k=3, seed=5)       # no GloVe, no training
SENTENCES = ["a b c d e f g", "one two three", "solo"]


def cfg(sentence: str = SENTENCES[0], **changes) -> Config:
    return RANDOM.replace(sentence=sentence, **changes)


# ---- ALiBi's slopes: the paper's numbers and its reference code --------------------------------------

def reference_get_slopes(n):
    """ofirpress/attention_with_linear_biases, fairseq/models/transformer.py (the paper's code), verbatim logic."""
    def get_slopes_power_of_2(n):
        start = 2 ** (-2 ** -(math.log2(n) - 3))
        ratio = start
        return [start * ratio ** i for i in range(n)]
    if math.log2(n).is_integer():
        return get_slopes_power_of_2(n)
    closest_power_of_2 = 2 ** math.floor(math.log2(n))
    return (get_slopes_power_of_2(closest_power_of_2)
            + reference_get_slopes(2 * closest_power_of_2)[0::2][:n - closest_power_of_2])


def test_slopes_are_the_papers_and_its_reference_codes():
    assert alibi_slopes(8).tolist() == [1 / 2 ** k for k in range(1, 9)]          # the paper: 1/2, 1/4, …, 1/256
    assert np.allclose(alibi_slopes(16), [2 ** (-k / 2) for k in range(1, 17)])  # 1/√2, 1/2, …, 1/256
    for h in range(1, 17):
        assert np.allclose(alibi_slopes(h), reference_get_slopes(h), rtol=1e-14, atol=0)
        for head in range(h):                                     # the explainer's construction, head by head
            k, d, _ = slope_parts(head, h)
            assert 2.0 ** (-8 * k / d) == pytest.approx(alibi_slopes(h)[head], rel=1e-14)


def test_slopes_are_geometric_exactly_for_powers_of_two():
    for h in range(1, 17):
        m = alibi_slopes(h)
        ratios = m[1:] / m[:-1]
        geometric = bool(np.allclose(ratios, 2 ** (-8 / h), rtol=1e-12)) if h > 1 else True
        s = MaskSettings(4, heads=h)
        assert holds("masks_slopes_geometric", s) == geometric
        assert holds("masks_slopes_interleaved", s) == (not geometric)
        if not geometric:                           # the last H − c slopes fall between the first c ones
            c = 2 ** int(math.log2(h))
            assert len(set(np.round(np.log2(m), 9))) == h and not np.all(np.diff(m) < 0)
            assert np.allclose(m[c:], alibi_slopes(2 * c)[0::2][:h - c])
    assert not holds("masks_slopes_geometric", MaskSettings(4, heads=0))
    assert not holds("masks_slopes_interleaved", MaskSettings(4, heads=0))


# ---- against torch's scaled_dot_product_attention ---------------------------------------------------

def torch_weights(trace, attn_mask):
    """SDPA(Q₀, K₀, V = I) = A: the weights torch computes with this attn_mask (bool or float)."""
    import torch
    import torch.nn.functional as F
    q, k = (torch.from_numpy(np.array(trace[key].value)) for key in ("q", "k"))
    return F.scaled_dot_product_attention(q, k, torch.eye(q.shape[0], dtype=torch.float64), attn_mask=attn_mask).numpy()


MASK_CASES = [dict(mask="causal"), dict(mask="none"), dict(mask="padding", hidden=(1, 4)),
              dict(mask="sliding_window", window=1), dict(mask="sliding_window", window=3),
              dict(mask="sliding_window", window=7), dict(mask="sliding_window", window=20)]


@pytest.mark.parametrize("case", MASK_CASES)
def test_masked_weights_equal_torch_sdpa_with_an_explicit_bool_mask(case):
    import torch
    t = masks_trace(cfg(), **case)
    mask = torch.from_numpy(t["mask"].value == 1)
    assert np.allclose(torch_weights(t, mask), t["weights"].value, atol=1e-12)
    assert np.allclose(t["scaled_scores"].value, t["q"].value @ t["k"].value.T / math.sqrt(3), atol=1e-13)
    if case["mask"] == "sliding_window":                         # torch's own reading: W keys, the query included
        w = case["window"]
        i, j = np.indices((7, 7))
        assert np.array_equal(t["mask"].value == 1, (i - j >= 0) & (i - j < w))
        assert np.array_equal(t["mask_w1"].value == 1, (i - j >= 0) & (i - j <= w))     # Mistral's [i − W, i]


@pytest.mark.parametrize("heads", [1, 3, 6, 8, 12, 16])
@pytest.mark.parametrize("mask", ["causal", "none", "sliding_window"])
def test_alibi_weights_equal_torch_sdpa_with_a_float_bias(heads, mask):
    import torch
    for head in sorted({0, heads // 2, heads - 1}):
        t = masks_trace(cfg(), mask=mask, window=3, heads=heads, head=head)
        n = t.n
        i, j = np.indices((n, n))
        m = alibi_slopes(heads)[head]
        assert np.allclose(t["alibi_bias"].value[j <= i], -m * (i - j)[j <= i], atol=0)     # −m_h·(i − j)
        bias = torch.from_numpy(np.array(t["alibi_bias"].value)).masked_fill(~torch.from_numpy(t["mask"].value == 1),
                                                                               float("-inf"))
        assert np.allclose(torch_weights(t, bias), t["weights"].value, atol=1e-12)


@pytest.mark.parametrize("z", [-8.0, 0.0, 2.5])
def test_sink_equals_torch_with_one_more_key_and_the_dropped_column(z):
    """gpt-oss's sink as torch computes it: one extra key whose score is z (a zero key plus a float mask z),
    a zero value; and as softmax over [S̃_i, z] with the sink's column dropped."""
    import torch
    import torch.nn.functional as F
    t = masks_trace(cfg(), mask="causal", heads=4, head=1, sink=z)
    q, k = (torch.from_numpy(np.array(t[key].value)) for key in ("q", "k"))
    n = q.shape[0]
    k1 = torch.cat([k, torch.zeros(1, k.shape[1], dtype=torch.float64)])                   # (n + 1, d_k)
    v1 = torch.cat([torch.eye(n, dtype=torch.float64), torch.zeros(1, n, dtype=torch.float64)])
    bias = torch.from_numpy(np.array(t["alibi_bias"].value)).masked_fill(~torch.from_numpy(t["mask"].value == 1),
                                                                           float("-inf"))
    bias1 = torch.cat([bias, torch.full((n, 1), z, dtype=torch.float64)], dim=1)     # the zero key's score: 0 + z
    a = F.scaled_dot_product_attention(q, k1, v1, attn_mask=bias1).numpy()
    assert np.allclose(a, t["sink_weights"].value, atol=1e-12)
    s = t["masked_scores"].value
    dropped = softmax(np.concatenate([s, np.full((n, 1), z)], axis=1))[:, :-1]
    assert np.allclose(dropped, t["sink_weights"].value, atol=1e-15)


# ---- the claims' properties --------------------------------------------------------------------------

controls = st.fixed_dictionaries({
    "sentence": st.sampled_from(SENTENCES),
    "mask": st.sampled_from(["causal", "sliding_window", "padding", "none"]),
    "window": st.integers(1, 9),
    "hidden": st.sets(st.integers(0, 6), max_size=7).map(lambda s: tuple(sorted(s))),
    "heads": st.integers(0, 16),
    "sink": st.one_of(st.none(), st.floats(-30, 30)),
})


def trace_of(c):
    n = len(c["sentence"].split())
    hidden = tuple(j for j in c["hidden"] if j < n)
    t = masks_trace(cfg(c["sentence"]), mask=c["mask"], window=c["window"], hidden=hidden, heads=c["heads"],
                    head=c["heads"] - 1 if c["heads"] else 0, sink=c["sink"])
    return t, t.facts["settings"]


@settings(max_examples=150, deadline=None)
@given(controls)
def test_rows_sum_to_one_only_without_sink_and_with_a_key(c):
    t, s = trace_of(c)
    sums = t["row_sums"].value[:, 0]
    assert np.all(np.isfinite(t[t.facts["final"]].value)) and np.all(t[t.facts["final"]].value >= 0)
    if holds("masks_rows_sum_to_one", s):
        assert np.allclose(sums, 1.0, atol=1e-12)
    else:          # the 'otherwise': a sink takes a share, or a row with every key hidden is all 0
        assert s.sink is not None or not s.sees_a_key()
        if s.sink is None:
            assert np.all(sums == 0.0)


@settings(max_examples=150, deadline=None)
@given(controls.filter(lambda c: c["sink"] is not None))
def test_sink_rows_sum_to_one_minus_the_sink_share(c):
    t, s = trace_of(c)
    assert holds("masks_sink_below_one", s) and not holds("masks_sink_below_one", MaskSettings(s.n, sink=None))
    logits = t["masked_scores"].value                                            # (n, n)
    share = np.exp(s.sink) / (np.exp(s.sink) + np.exp(logits).sum(axis=1))       # e^z / (e^z + Σ_j e^S̃_ij)
    sums = t["sink_weights"].value.sum(axis=1)
    assert np.allclose(sums, 1.0 - share, atol=1e-12)
    assert np.allclose(t["row_sums"].value[:, 1], share, atol=1e-12)
    # below 1 wherever float64 can tell: the share is larger than its rounding (e^(z − max S̃) > 1e-15)
    visible = np.isfinite(logits).any(axis=1)
    tellable = s.sink - np.max(np.where(np.isfinite(logits), logits, -np.inf), axis=1, initial=-np.inf) > -34
    assert np.all(sums[tellable | ~visible] < 1.0)


@pytest.mark.parametrize("sentence", SENTENCES)
def test_window_equals_causal_exactly_when_w_reaches_n(sentence):
    n = len(sentence.split())
    for w in range(1, n + 4):
        t = masks_trace(cfg(sentence), mask="sliding_window", window=w)
        equal = np.array_equal(t["mask"].value == 1, causal_mask(n))
        assert holds("masks_window_is_causal", t.facts["settings"]) == equal == (w >= n)
        if equal:
            assert np.array_equal(t["weights"].value, masks_trace(cfg(sentence), mask="causal")["weights"].value)
    assert not holds("masks_window_is_causal", MaskSettings(n, mask="causal", window=n + 5))


@pytest.mark.parametrize("sentence", SENTENCES)
def test_the_two_window_readings_differ_exactly_when_w_below_n(sentence):
    n = len(sentence.split())
    for w in range(1, n + 4):
        s = MaskSettings(n, mask="sliding_window", window=w)
        a, b = sliding_window_mask(n, w), sliding_window_mask(n, w + 1)
        assert holds("masks_readings_differ", s) == (not np.array_equal(a, b)) == (w < n)
        extra = np.argwhere(b & ~a)                              # the keys the W + 1 reading adds
        assert all(i >= w and j == i - w for i, j in extra) and len(extra) == max(n - w, 0)


@pytest.mark.parametrize("mask, hidden", [("none", ()), ("padding", (0,)), ("causal", ()), ("sliding_window", ())])
def test_alibi_reaches_keys_after_the_query_only_without_a_causal_mask(mask, hidden):
    t = masks_trace(cfg(), mask=mask, hidden=hidden, window=3, heads=5, head=4)
    s = t.facts["settings"]
    n, m = t.n, alibi_slopes(5)[4]
    i, j = np.indices((n, n))
    after = (j > i) & (t["mask"].value == 1)                     # visible keys after the query
    assert holds("masks_alibi_both_sides", s) == bool(after.any())
    expected = t["scaled_scores"].value - m * np.abs(i - j)
    assert np.allclose(t["masked_scores"].value[after], expected[after], atol=1e-13)
    assert not holds("masks_alibi_both_sides", MaskSettings(n, mask=mask, heads=0))


@pytest.mark.parametrize("sink", [None, 0.0])
def test_every_key_hidden_gives_zero_rows(sink):
    t = masks_trace(cfg(), mask="padding", hidden=tuple(range(7)), heads=3, sink=sink)
    s = t.facts["settings"]
    assert holds("masks_all_hidden", s) and not holds("masks_rows_sum_to_one", s)
    final = t[t.facts["final"]].value
    assert np.all(final == 0.0) and not np.isnan(final).any() and np.all(t["row_sums"].value[:, 0] == 0.0)
    assert not holds("masks_all_hidden", MaskSettings(7, mask="padding", hidden=tuple(range(6))))
    assert not holds("masks_all_hidden", MaskSettings(7, mask="causal"))


def test_claims_name_the_masks_page():
    ours = [c for c in CLAIMS.values() if c.about == "masks"]
    assert len(ours) == 8 and all(c.proof.startswith("tests/test_masks.py::") for c in ours)
    for c in ours:                                              # each names a test of this file, and its words
        assert callable(globals().get(c.proof.split("::")[1])), c.proof       # are findable and not in 'otherwise'
        assert len(c.marker) >= 12 and c.marker.lower() not in c.otherwise.lower()


# ---- every number on the page, clicked -----------------------------------------------------------------

@pytest.mark.parametrize("changes", [dict(), dict(bias=True, n_heads=2, d_k=2)])
@pytest.mark.parametrize("case", [dict(mask="causal"), dict(mask="sliding_window", window=2, heads=6, head=5, sink=1.5),
                                  dict(mask="padding", hidden=(0, 2), heads=12, head=9, sink=-3.0),
                                  dict(mask="padding", hidden=tuple(range(7)), sink=0.0),
                                  dict(mask="none", heads=16, head=0)])
def test_every_explanation_reproduces_its_cell(changes, case):
    t = masks_trace(cfg(**changes), **case)
    for s in t:
        for cell in np.ndindex(s.shape):
            e = explain(t, s.key, cell)
            v = s.value[cell]
            assert e.value == v or abs(e.value - v) <= 1e-12 * max(1.0, abs(v)), (s.key, cell, e.value, v)
            assert "nan" not in e.text.lower()


def test_explanations_show_the_numbers_the_lesson_asks_for():
    t = masks_trace(cfg(), mask="causal", heads=6, head=5, sink=1.0)
    bias = explain(t, "alibi_bias", (4, 1))
    assert "m_5" in bias.text and "·3" in bias.text                                   # −m_h·(i − j), i − j = 3
    slope = explain(t, "alibi_slopes", (5,))                                           # head 5 of 6: [0::2][1] of 8
    assert slope.value == pytest.approx(2 ** (-8 * 3 / 8)) and "[0::2][1]" in slope.note
    assert "Ŝ[2,1] + B_5[2,1]" in explain(t, "biased_scores", (2, 1)).text
    assert "[sink]" in explain(t, "sink_weights", (3, 0)).text and "[sink]" not in explain(t, "weights", (3, 0)).text
    assert "−∞" in explain(t, "masked_scores", (0, 3)).text


def test_hostile_controls_raise_a_config_error_that_says_what_to_change():
    for kwargs, words in [(dict(mask="sliding_window", window=0), "at least 1"),
                          (dict(mask="sliding_window", window=-2), "at least 1"),
                          (dict(heads=17), "1 to 16"), (dict(heads=-1), "1 to 16"),
                          (dict(heads=4, head=4), "heads run 0 to 3"),
                          (dict(mask="padding", hidden=(9,)), "past the last token"),
                          (dict(sink=float("nan")), "sink"), (dict(sink=1e9), "sink"), (dict(mask="diagonal"), "not one of")]:
        with pytest.raises(ConfigError, match=words):
            masks_trace(cfg(), **kwargs)
    big = masks_trace(cfg(), mask="sliding_window", window=50)                       # W > n: works, = causal
    assert np.array_equal(big["mask"].value == 1, causal_mask(7))


# ---- the page (AppTest) -------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def page():
    from tests.apptest_util import open_page
    return open_page("app_pages/41_masks.py", query={"sentence": "the cat sat on the mat"})


def shown(at) -> str:
    return "\n".join([m.value for m in at.markdown] + [h.value for h in at.subheader] + [c.value for c in at.caption] + [e.value for e in at.error]
                     + [i.value for i in at.info])


def test_page_defaults_causal_then_window_readings_side_by_side(page):
    from tests.apptest_util import no_exception
    at = page
    no_exception(at)
    text = shown(at)
    assert "Every row of A sums to 1" in text and "M_{ij} = [\\,j \\le i\\,]" in text
    at.session_state["masks.mask"] = "sliding_window"
    at.run()
    at.slider(key="masks.window").set_value(2).run()
    no_exception(at)
    text = shown(at)
    assert "W = 2 keys (torch, Longformer)" in text and "W + 1 = 3 keys (Mistral's paper)" in text
    assert "The two readings differ" in text and "equals the causal mask" not in text
    at.slider(key="masks.window").set_value(8).run()                                  # n = 6 < W
    no_exception(at)
    text = shown(at)
    assert "the window is the causal mask. It still works." in text and "equals the causal mask" in text
    assert "The two readings differ" not in text
    at.slider(key="masks.window").set_value(0).run()                                  # W = 0: a message, no traceback
    no_exception(at)
    assert any("at least 1" in e.value for e in at.error)


def test_page_alibi_slopes_for_six_heads_and_the_sink(page):
    from tests.apptest_util import no_exception
    at = page
    at.session_state["masks.mask"] = "causal"
    at.toggle(key="masks.alibi").set_value(True).run()
    at.slider(key="masks.heads").set_value(6).run()
    at.slider(key="masks.head").set_value(5).run()
    no_exception(at)
    text = shown(at)
    assert "[0::2][:2] = 2^{-8/8}, 2^{-24/8} = 0.5, 0.125" in text and "H is not a power of two" in text
    assert "H is a power of two" not in text and "m_{5} = 0.125" in text
    at.toggle(key="masks.sink_on").set_value(True).run()
    at.slider(key="masks.sink").set_value(-2.0).run()
    no_exception(at)
    text = shown(at)
    assert "Weights with a sink, z_5 = -2" in text and "with a sink every row sums to less than 1" in text.lower()
    assert "Every row of A sums to 1" not in text
    assert "column dropped, live: max difference" in text
    at.slider(key="masks.heads").set_value(8).run()                                   # a power of two again
    no_exception(at)
    assert "H is a power of two" in shown(at)


def test_page_hostile_heads_and_a_padding_hiding_every_key():
    from tests.apptest_util import no_exception, open_page
    at = open_page("app_pages/41_masks.py", query={"sentence": "the cat sat"})
    at.session_state["masks.mask"] = "padding"
    at.run()
    at.multiselect(key="masks.hidden").set_value([0, 1, 2]).run()
    no_exception(at)
    text = shown(at)
    assert "Every key is hidden: each row of A is all 0, not NaN" in text
    assert "nan" not in " ".join(str(c) for c in at.get("vega_lite_chart")).lower()
    for bad in (0, 17):                              # a tampered session: the slider is drawn with it
        at.session_state["masks.heads"] = bad
        at.toggle(key="masks.alibi").set_value(True).run()
        no_exception(at)
        assert any(f"H = {bad} is out of range: use 1 to 16" in w.value for w in at.warning)
        assert at.slider(key="masks.heads").value == min(max(bad, 1), 16)
        at.toggle(key="masks.alibi").set_value(False).run()


def test_page_live_torch_check():
    from tests.apptest_util import no_exception, open_page
    at = open_page("app_pages/41_masks.py", query={"sentence": "the cat sat on the mat"})
    at.toggle(key="masks.alibi").set_value(True).run()
    at.session_state["masks.torch"] = True           # the expander opened
    at.run()
    no_exception(at)
    line = next(m.value for m in at.markdown if "scaled_dot_product_attention" in m.value)
    diff = float(line.split("max |A_torch − A| = ")[1].rstrip("."))
    assert "float attn_mask" in line and diff < 1e-12

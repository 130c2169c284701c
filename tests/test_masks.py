"""The masks-and-biases page: its numbers are the forward pass's own (head h, under RoPE, ALiBi, grouped KV heads,
a window, padding, a temperature), checked against torch and the ALiBi paper; the properties behind its claims;
every clickable number's arithmetic; the softmax explanation under a window; the page in AppTest and its link."""
from __future__ import annotations

import math
import re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from attention_core import Config, ConfigError, run_forward
from attention_core.math.alibi import alibi_slopes
from attention_core.math.attention import causal_mask, softmax
from attention_core.forward.claims import CLAIMS, holds, shown_outside
from attention_core.explanations import explain
from attention_core.lessons.masks import KIND, MaskSettings, masks_trace, rule_mask, rule_says, slope_parts
from attention_core.math.rope import rotary_embedding

PAGE = "app_pages/41_masks.py"
RANDOM = Config(embedding="random", weights="random", d_model=6, d_k=4, seed=5, mask="causal")   # no GloVe, no training
SENTENCES = ["a b c d e f g", "one two three", "solo"]


def cfg(sentence: str = SENTENCES[0], **changes) -> Config:
    return RANDOM.replace(sentence=sentence, **changes)


def heads_of(trace, key):
    """(H, n, width) of a forward step, one head or several."""
    v = trace[key].value
    return v if v.ndim == 3 else v[None]


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
    """The interleaved claim's every clause: m_c = 2^(−4/c) above all of the first c, each later one between two
    of them, neither geometric nor decreasing (at H = 6: m_4 = 0.5 > m_0 = 0.25)."""
    assert alibi_slopes(6)[4] == 0.5 and alibi_slopes(6)[:4].max() == 0.25
    for h in range(1, 17):
        m = alibi_slopes(h)
        ratios = m[1:] / m[:-1]
        geometric = bool(np.allclose(ratios, 2 ** (-8 / h), rtol=1e-12)) if h > 1 else True
        s = MaskSettings(4, heads=h)
        assert holds("masks_slopes_geometric", s) == geometric == (h & (h - 1) == 0)
        assert holds("masks_slopes_interleaved", s) == (not geometric)
        if not geometric:
            c = 2 ** int(math.log2(h))
            assert np.allclose(m[c:], alibi_slopes(2 * c)[0::2][:h - c])
            assert m[c] == pytest.approx(2 ** (-4 / c)) and m[c] > m[:c].max()
            for e in range(1, h - c):
                assert m[e - 1] > m[c + e] > m[e]
            assert not np.all(np.diff(m) < 0)
    assert not holds("masks_slopes_geometric", MaskSettings(4, heads=0))
    assert not holds("masks_slopes_interleaved", MaskSettings(4, heads=0))


# ---- the page's numbers are the forward pass's own ---------------------------------------------------

CONFIGS = {
    "rope-gqa-window": cfg(positional="rope", n_heads=4, n_kv_heads=2, mask="sliding_window", window=2),
    "alibi6-window": cfg(positional="alibi", n_heads=6, mask="sliding_window", window=2, temperature=0.5),
    "alibi3-none-dot-bias": cfg(positional="alibi", n_heads=3, mask="none", score="dot", bias=True),
    "mqa-padding-additive": cfg(n_heads=2, n_kv_heads=1, mask="padding", padding=(1, 4), score="additive"),
    "bilinear-causal": cfg(score="bilinear", n_heads=2, temperature=2.0),
}


@pytest.mark.parametrize("name", list(CONFIGS))
def test_every_step_is_head_h_of_the_forward_pass(name):
    config = CONFIGS[name]
    fwd = run_forward(config)
    for h in range(config.n_heads):
        t = masks_trace(config, h, None, fwd)
        for key in ("scaled_scores", "scores", "alibi", "biased_scores", "masked_scores", "weights"):
            if key in t:
                assert np.array_equal(t[key].value, heads_of(fwd, key)[h]), (name, key, h)
        assert ("alibi" in t) == (config.positional == "alibi") and ("mask" in t) == (config.mask != "none")
        if "alibi" in t:
            assert t["alibi_slopes"].value.tolist() == alibi_slopes(config.n_heads).tolist()


def test_under_rope_the_scores_are_the_rotated_rows_not_the_projected_ones():
    """The old page's false "from the forward pass": it scored the unrotated Q₀, K₀ under RoPE."""
    config = CONFIGS["rope-gqa-window"]
    fwd = run_forward(config)
    q, k = heads_of(fwd, "q_heads"), heads_of(fwd, "k_heads")                   # (4, n, 4), (2, n, 4)
    for h in range(4):
        t = masks_trace(config, h, None, fwd)
        qr, kr = rotary_embedding(q[h]), rotary_embedding(k[h // 2])           # query head h reads KV head ⌊h/2⌋
        assert np.allclose(t["scaled_scores"].value, qr @ kr.T / 2.0, atol=1e-12)
        assert np.abs(t["scaled_scores"].value - q[h] @ k[h // 2].T / 2.0).max() > 0.01
        assert "RoPE rotated each query and key" in t["scaled_scores"].why and f"reads KV head ⌊{h}/2⌋" in \
            t["scaled_scores"].why


def sdpa_weights(config, t, fwd, h):
    """torch's SDPA on head h's rotated / projected rows, ALiBi's bias and the mask as one float attn_mask,
    scale 1/(√d_k·T): A_h as torch computes it."""
    import torch
    import torch.nn.functional as F
    q_key = "q_rot" if "q_rot" in fwd else "q_heads" if config.n_heads > 1 else "q"
    q, k = heads_of(fwd, q_key)[h], heads_of(fwd, q_key.replace("q", "k", 1))[h // (config.n_heads // config.kv_heads)]
    n = t.n
    mask = torch.from_numpy(fwd["mask"].value == 1) if "mask" in fwd else torch.ones(n, n, dtype=torch.bool)
    bias = torch.from_numpy(np.array(t["alibi"].value)) if "alibi" in t else torch.zeros(n, n, dtype=torch.float64)
    scale = (1 / math.sqrt(config.d_k) if config.score == "scaled_dot" else 1.0) / config.temperature
    return F.scaled_dot_product_attention(torch.from_numpy(np.array(q)), torch.from_numpy(np.array(k)),
                                          torch.eye(n, dtype=torch.float64),
                                          attn_mask=(bias / config.temperature).masked_fill(~mask, float("-inf")),
                                          scale=scale).numpy()


@pytest.mark.parametrize("name", ["rope-gqa-window", "alibi6-window", "alibi3-none-dot-bias"])
def test_weights_equal_torch_sdpa_with_the_bias_and_the_mask(name):
    config = CONFIGS[name]
    fwd = run_forward(config)
    for h in range(config.n_heads):
        t = masks_trace(config, h, None, fwd)
        assert np.allclose(sdpa_weights(config, t, fwd, h), t["weights"].value, atol=1e-12), (name, h)
        if "alibi" in t:                                           # −m_h·|i − j|, the paper's −m_h·(i − j) below
            i, j = np.indices((t.n, t.n))
            assert np.array_equal(t["alibi"].value, 0.0 - alibi_slopes(config.n_heads)[h] * np.abs(i - j))


def test_the_live_checks_agree():
    from ui.today.masks_view import checked_text, sink_difference, torch_difference
    for name in ("rope-gqa-window", "alibi6-window", "mqa-padding-additive", "bilinear-causal"):
        t = masks_trace(CONFIGS[name], 1, 0.5)
        diff, how = torch_difference(t)
        assert diff < 1e-12 and sink_difference(t) < 1e-15, (name, diff)
        assert ("softmax" in how) == (CONFIGS[name].score in ("additive", "bilinear"))
    text = checked_text(masks_trace(CONFIGS["alibi6-window"], 4, 1.5))
    assert "Hugging Face transformers keeps key j when j > i − W" in text and "i − j ≤ W: W + 1 keys" in text
    assert not re.search(r"scaled_dot_product_attention|tests/|\.py|\(hypothesis\)|sliding_window", text)


@pytest.mark.parametrize("z", [-8.0, 0.0, 2.5])
def test_sink_equals_torch_with_one_more_key_and_the_dropped_column(z):
    """gpt-oss's sink as torch computes it: one extra key whose score is z (a zero key plus a float mask z),
    a zero value; and as softmax over [x_i, z] (x: the scores softmax reads, / T) with the sink's column dropped."""
    import torch
    import torch.nn.functional as F
    config = CONFIGS["alibi6-window"]
    fwd = run_forward(config)
    t = masks_trace(config, 4, z, fwd)
    q, k = heads_of(fwd, "q_heads")[4], heads_of(fwd, "k_heads")[4]
    n, temp = t.n, config.temperature
    k1 = torch.cat([torch.from_numpy(np.array(k)), torch.zeros(1, 4, dtype=torch.float64)])           # (n + 1, d_k)
    v1 = torch.cat([torch.eye(n, dtype=torch.float64), torch.zeros(1, n, dtype=torch.float64)])
    bias = (torch.from_numpy(np.array(t["alibi"].value)) / temp).masked_fill(~torch.from_numpy(t["mask"].value == 1),
                                                                             float("-inf"))
    bias1 = torch.cat([bias, torch.full((n, 1), z, dtype=torch.float64)], dim=1)      # the zero key's score: 0 + z
    a = F.scaled_dot_product_attention(torch.from_numpy(np.array(q)), k1, v1, attn_mask=bias1,
                                       scale=1 / (2.0 * temp)).numpy()
    assert np.allclose(a, t["sink_weights"].value, atol=1e-12)
    x = t["masked_scores"].value / temp
    assert np.allclose(softmax(np.concatenate([x, np.full((n, 1), z)], axis=1))[:, :-1], t["sink_weights"].value,
                       atol=1e-15)


# ---- the claims' properties --------------------------------------------------------------------------

controls = st.fixed_dictionaries({
    "sentence": st.sampled_from(SENTENCES),
    "mask": st.sampled_from(["causal", "sliding_window", "padding", "none"]),
    "window": st.integers(1, 9),
    "hidden": st.sets(st.integers(0, 6), max_size=7).map(lambda s: tuple(sorted(s))),
    "heads": st.sampled_from([1, 2, 3, 6]),
    "alibi": st.booleans(),
    "temperature": st.sampled_from([1.0, 0.5]),
    "sink": st.one_of(st.none(), st.floats(-30, 30)),
})


def trace_of(c):
    n = len(c["sentence"].split())
    hidden = tuple(j for j in c["hidden"] if j < n) if c["mask"] == "padding" else ()
    config = cfg(c["sentence"], mask=c["mask"], window=c["window"], padding=hidden, n_heads=c["heads"],
                 positional="alibi" if c["alibi"] else "sinusoidal", temperature=c["temperature"])
    t = masks_trace(config, c["heads"] - 1, c["sink"])
    return t, t.facts["settings"]


@settings(max_examples=60, deadline=None)
@given(controls)
def test_rows_of_a_sum_to_one_exactly_when_a_key_is_visible(c):
    """A is the plain softmax (the sink's weights are A′, beside it): its rows sum to 1 exactly when some key is
    visible, whatever the sink; the 'otherwise' says why not: every key is hidden, and each row of A is all 0."""
    t, s = trace_of(c)
    a = t["weights"].value
    assert np.all(np.isfinite(t[t.facts["final"]].value)) and np.all(t[t.facts["final"]].value >= 0)
    if holds("masks_rows_sum_to_one", s):
        assert np.allclose(a.sum(axis=1), 1.0, atol=1e-12)
    else:          # the 'otherwise', word for word: every key is hidden, so each row of A is all 0
        assert s.mask == "padding" and set(s.hidden) == set(range(s.n)) and "mask" in t and not t["mask"].value.any()
        assert np.all(a == 0.0) and "every key is hidden, so each row of A is all 0" in \
            CLAIMS["masks_rows_sum_to_one"].otherwise


@settings(max_examples=60, deadline=None)
@given(controls.filter(lambda c: c["sink"] is not None))
def test_sink_rows_sum_to_one_minus_the_sink_share(c):
    t, s = trace_of(c)
    assert holds("masks_sink_below_one", s) and not holds("masks_sink_below_one", MaskSettings(s.n, sink=None))
    x = t[t.facts["logits"]].value / t.facts["t"]                                 # (n, n): what softmax reads
    share = np.exp(s.sink) / (np.exp(s.sink) + np.exp(x).sum(axis=1))            # e^z / the whole denominator
    sums = t["sink_weights"].value.sum(axis=1)
    assert np.allclose(sums, 1.0 - share, atol=1e-12)
    assert np.allclose(t["row_sums"].value[:, 1], share, atol=1e-12)
    # below 1 wherever float64 can tell: the share is larger than its rounding (e^(z − max x) > 1e-15)
    visible = np.isfinite(x).any(axis=1)
    tellable = s.sink - np.max(np.where(np.isfinite(x), x, -np.inf), axis=1, initial=-np.inf) > -34
    assert np.all(sums[tellable | ~visible] < 1.0)


@pytest.mark.parametrize("sentence", SENTENCES)
def test_window_equals_causal_exactly_when_w_reaches_n(sentence):
    n = len(sentence.split())
    causal = run_forward(cfg(sentence, mask="causal"))
    for w in range(1, n + 3):
        t = masks_trace(cfg(sentence, mask="sliding_window", window=w))
        equal = np.array_equal(t["mask"].value == 1, causal_mask(n))
        assert np.array_equal(t["mask_w"].value, t["mask"].value)                 # the compared W is the sidebar's
        assert holds("masks_window_is_causal", t.facts["settings"]) == equal == (w >= n)
        if equal:
            assert np.array_equal(t["weights"].value, causal["weights"].value)


@pytest.mark.parametrize("sentence", SENTENCES)
def test_the_two_window_readings_differ_exactly_when_w_below_n(sentence):
    n = len(sentence.split())
    for w in range(1, n + 3):
        t = masks_trace(cfg(sentence, mask="causal", window=w))                    # compared whatever the mask
        a, b = t["mask_w"].value == 1, t["mask_w1"].value == 1
        i, j = np.indices((n, n))
        assert np.array_equal(a, (i - j >= 0) & (i - j < w)) and np.array_equal(b, (i - j >= 0) & (i - j <= w))
        assert holds("masks_readings_differ", t.facts["settings"]) == (not np.array_equal(a, b)) == (w < n)
        extra = np.argwhere(b & ~a)                              # the keys the W + 1 reading adds
        assert all(i >= w and j == i - w for i, j in extra) and len(extra) == max(n - w, 0)


@pytest.mark.parametrize("mask, hidden", [("none", ()), ("padding", (0,)), ("padding", (1, 2, 3, 4, 5, 6)),
                                          ("padding", tuple(range(7))), ("causal", ()), ("sliding_window", ())])
def test_alibi_reaches_keys_after_the_query_exactly_when_one_is_visible(mask, hidden):
    """The bias above the diagonal lowers a visible key's score by m_h·|i − j| (a loss, not a gain), and the claim
    says so exactly where some query sees a key after it (padding that hides every key after its query: no)."""
    t = masks_trace(cfg(mask=mask, padding=hidden, window=3, positional="alibi", n_heads=5), 4)
    s = t.facts["settings"]
    n, m = t.n, alibi_slopes(5)[4]
    i, j = np.indices((n, n))
    visible = t["mask"].value == 1 if "mask" in t else np.ones((n, n), dtype=bool)
    after = (j > i) & visible                                    # visible keys after the query
    assert holds("masks_alibi_both_sides", s) == bool(after.any())
    assert holds("masks_alibi_one_side", s) == ("mask" in t and not after.any() and bool(visible.any(axis=1).all()))
    final = t["masked_scores"].value if "masked_scores" in t else t["biased_scores"].value
    assert np.allclose(final[after], (t["scaled_scores"].value - m * np.abs(i - j))[after], atol=1e-13)
    assert np.all(final[after] < t["scaled_scores"].value[after])          # lowered
    assert not holds("masks_alibi_both_sides", MaskSettings(n, mask=mask, heads=0))


@pytest.mark.parametrize("sink", [None, 0.0])
def test_every_key_hidden_gives_zero_rows(sink):
    t = masks_trace(cfg(mask="padding", padding=tuple(range(7)), positional="alibi", n_heads=3), 2, sink)
    s = t.facts["settings"]
    assert holds("masks_all_hidden", s) and not holds("masks_rows_sum_to_one", s)
    final = t[t.facts["final"]].value
    assert np.all(final == 0.0) and not np.isnan(final).any() and np.all(t["row_sums"].value[:, 0] == 0.0)
    if sink is not None:                                         # the sink takes every row whole
        assert np.all(t["row_sums"].value[:, 1] == 1.0)
        assert "the sink takes the whole row" in explain(t, "sink_weights", (3, 1)).note
    assert not holds("masks_all_hidden", MaskSettings(7, mask="padding", hidden=tuple(range(6))))
    assert not holds("masks_all_hidden", MaskSettings(7, mask="causal"))


@pytest.mark.parametrize("n", [1, 2, 5, 8])
def test_every_compared_rule_says_what_its_mask_shows(n):
    """compare.RULES holds each compared mask twice, as the math layer builds it and as the rule a click explains:
    they agree on every cell."""
    for kind, arg in (("window", 1), ("window", 3), ("window1", 1), ("window1", 3), ("causal", None),
                      ("padding", (0, n - 1)), ("padding", ())):
        m = rule_mask(kind, arg, n)
        assert [[rule_says(kind, arg, i, j)[0] for j in range(n)] for i in range(n)] == (m == 1).tolist(), (kind, arg)


def test_claims_name_the_masks_page():
    ours = [c for c in CLAIMS.values() if c.about == KIND]
    assert len(ours) == 9 and all(c.proof.startswith("tests/test_masks.py::") for c in ours)
    for c in ours:                                              # each names a test of this file, and its words
        assert callable(globals().get(c.proof.split("::")[1])), c.proof       # are findable and not in 'otherwise'
        assert len(c.marker) >= 12 and c.marker.lower() not in c.otherwise.lower()


# ---- every number on the page, clicked -----------------------------------------------------------------

@pytest.mark.parametrize("name, head, sink", [("rope-gqa-window", 3, None), ("alibi6-window", 4, 1.5),
                                              ("alibi3-none-dot-bias", 2, -3.0), ("mqa-padding-additive", 1, 0.0)])
def test_every_explanation_reproduces_its_cell(name, head, sink):
    t = masks_trace(CONFIGS[name], head, sink)
    for s in t:
        for cell in np.ndindex(s.shape):
            e = explain(t, s.key, cell)
            v = s.value[cell]
            assert e.value == v or abs(e.value - v) <= 1e-12 * max(1.0, abs(v)), (s.key, cell, e.value, v)
            assert "nan" not in e.text.lower() and e.key == s.key and e.cell == cell


def test_explanations_show_the_numbers_the_lesson_asks_for():
    t = masks_trace(CONFIGS["alibi6-window"], 4, 1.0)
    assert "−m_4·|4 − 1|" in explain(t, "alibi", (4, 1)).text                        # the forward pass's words
    slope = explain(t, "alibi_slopes", (4,))                                          # head 4 of 6: [0::2][0] of 8
    assert slope.value == 0.5 and "larger than all of the first 4" in slope.note
    slope5 = explain(t, "alibi_slopes", (5,))
    assert slope5.value == 0.125 and "between m_0 = 0.25 and m_1 = 0.0625" in slope5.note
    assert "[sink]" in explain(t, "sink_weights", (3, 0)).text and "[sink]" not in explain(t, "weights", (3, 0)).text
    assert "T = 0.5" in explain(t, "sink_weights", (3, 2)).note
    assert "-inf" in explain(t, "masked_scores", (0, 3)).text
    assert "0 ≤ i − j = 2 ≤ 2: yes" in explain(t, "mask_w1", (2, 0)).text
    assert "0 ≤ i − j = 2 < 2: no" in explain(t, "mask_w", (2, 0)).text
    dot = masks_trace(CONFIGS["alibi3-none-dot-bias"], 1)                             # unscaled: (S + B), not (Ŝ + B)
    assert explain(dot, "biased_scores", (1, 0)).text.startswith("(S_1+B_1)[1,0] = S_1[1,0] + B_1[1,0]")


def test_a_softmax_under_a_window_shows_every_finite_term():
    """The old explanation elided exactly the finite terms: "e^−∞ + … (4 more) … = 0.002/1.002"."""
    config = cfg(" ".join("abcdefghijkl"), mask="sliding_window", window=3)
    t = masks_trace(config, 0, 2.0)
    for key in ("weights", "sink_weights"):
        e = explain(t, key, (11, 10))
        assert e.n_elided == 0 and "more" not in e.text
        assert e.text.count("e^(−∞)") + e.text.count("exp(-inf)") == 2 and "(9 masked)" in e.text
        for jj in (9, 10, 11):                                   # every finite term, with its number
            x = t[t.facts["logits"]].value[11, jj]
            assert f"{x:.3f}" in e.text, (key, jj, e.text)
    long = cfg(" ".join(f"w{k}" for k in range(30)), mask="causal")     # a long row: counts say what is left out
    e = explain(masks_trace(long, 0), "weights", (20, 3))
    assert "… 16 more …" in e.text and "(9 masked)" in e.text and e.n_elided == 16
    mixed = cfg(" ".join(f"w{k}" for k in range(12)), mask="padding", padding=(4, 5, 6))
    e = explain(masks_trace(mixed, 0), "weights", (0, 0))
    assert "… 7 more: 4 finite, 3 masked …" in e.text and e.n_elided == 7      # finite 3, 7, 8, 9; masked 4, 5, 6


def test_hostile_controls_raise_a_config_error_that_says_what_to_change():
    for kwargs, words in [(dict(head=4), "heads run 0 to 3"), (dict(head=-1), "heads run 0 to 3"),
                          (dict(sink=float("nan")), "sink"), (dict(sink=1e9), "sink")]:
        with pytest.raises(ConfigError, match=words):
            masks_trace(cfg(n_heads=4), **kwargs)


# ---- the page (AppTest) -------------------------------------------------------------------------------

def shown(at) -> str:
    """The page's words; ui.text.md_escape's escaped colons and slashes (they stop Streamlit's directives) as read."""
    text = "\n".join([m.value for m in at.markdown] + [c.value for c in at.caption] + [e.value for e in at.error]
                      + [i.value for i in at.info])
    return text.replace("\\:", ":").replace("\\/", "/")


def chart_values(at, index: int) -> np.ndarray:
    """The numbers of the page's `index`-th heatmap, as a matrix (its cells carry the exact values)."""
    from tests.apptest_util import charts
    rows = charts(at)[index]["data"]["values"]
    out = np.full((max(r["i"] for r in rows) + 1, max(r["j"] for r in rows) + 1), np.nan)
    for r in rows:
        out[r["i"], r["j"]] = r["v"] if r["v"] is not None else -np.inf
    return out


def test_page_alibi_six_heads_a_window_and_the_sink_from_the_sidebar():
    from tests.apptest_util import no_exception, open_page
    at = open_page(PAGE, query={"sentence": "the cat sat on the mat", "positional": "alibi", "n_heads": "6",
                                "mask": "sliding_window", "window": "2", "masks.head": "4"})
    no_exception(at)
    text = shown(at)
    assert "[0::2][:2] = 2^{-8/8}, 2^{-24/8} = 0.5, 0.125" in text and "H is not a power of two" in text
    assert "is larger than all of the first c" in text and "fall between them" not in text
    assert "m_{4} = 0.5" in text and "ALiBi is on (the sidebar's Position is ALiBi)" in text
    assert "The mask hides every key after its query" in text and "lose −m_h" not in text
    assert "W = 2 keys (Hugging Face, flash-attn)" in text and "torch, Longformer" not in text
    assert not [b for b in at.button if b.label == "Position = ALiBi"] and not at.toggle(key="masks.sink_on").value
    assert not [w for w in at.slider if "ALiBi heads" in w.label]               # no second control for H
    fwd = run_forward(at.session_state["s.last_good"])
    np.testing.assert_array_equal(chart_values(at, 0), heads_of(fwd, "scaled_scores")[4])     # Ŝ_4: the first chart
    at.toggle(key="masks.sink_on").set_value(True).run()
    at.slider(key="masks.sink").set_value(-2.0).run()
    no_exception(at)
    text = shown(at)
    assert "Weights with a sink A′_4, z_4 = -2" in text and "with a sink every row of a′ sums to less than 1" in \
        text.lower()
    assert "Every row of A sums to 1" in text                   # A, the plain softmax beside A′, still does


def test_page_defaults_say_where_alibi_and_the_mask_are_set():
    from tests.apptest_util import no_exception, open_page
    at = open_page(PAGE, query={"sentence": "the cat sat on the mat", "positional": "rope", "n_heads": "4",
                                "n_kv_heads": "2", "mask": "padding", "padding": "1,2,3,4,5"})
    no_exception(at)
    text = shown(at)
    assert "ALiBi is off: the sidebar's Position is RoPE" in text and "RoPE rotated each query and key" in text
    assert "Every row of A sums to 1" in text and "sidebar's settings)" not in text
    assert [b for b in at.button if b.label == "Position = ALiBi"]
    at.button(key="masks.use_alibi").click().run()                               # one click: the sidebar's Position
    no_exception(at)
    assert at.session_state["s.last_good"].positional == "alibi"
    text = shown(at)
    assert CLAIMS["masks_alibi_both_sides"].marker not in text                   # padding hides every later key
    assert "the mask hides every key after its query" in text.lower()


def test_share_link_reopens_the_same_view_head_sink_tab_and_cell():
    from tests.apptest_util import no_exception, open_page
    query = {"sentence": "the cat sat on the mat", "positional": "alibi", "n_heads": "6", "mask": "sliding_window",
             "window": "2"}
    at = open_page(PAGE, query=query)
    at.slider(key="masks.head").set_value(4).run()
    at.toggle(key="masks.sink_on").set_value(True).run()
    at.slider(key="masks.sink").set_value(1.5).run()
    at.session_state["masks.compare"] = "Causal or window"
    at.session_state["p.cell"] = (PAGE, "hm:sink_weights:None", 3, 2)          # as a click on A_4[3,2] records it
    at.run()
    no_exception(at)
    link = dict(at.query_params)
    assert {k: link[k] for k in ("masks.head", "masks.sink_on", "masks.sink", "masks.compare", "cell")} == {
        "masks.head": "4", "masks.sink_on": "1", "masks.sink": "1.5", "masks.compare": "1",
        "cell": "hm:sink_weights:None.3.2"}
    made = [m.value for m in at.markdown if "was made" in m.value]
    again = open_page(PAGE, query=link)                                         # a fresh session from the link
    no_exception(again)
    assert again.slider(key="masks.head").value == 4 and again.slider(key="masks.sink").value == 1.5
    assert [m.value for m in again.markdown if "was made" in m.value] == made and r"A′\_4\[3,2\]" in made[0]
    assert "Window of W = 2 keys" in shown(again) and "(Mistral's paper, PyTorch's example)" not in shown(again)


WALK = [  # (sidebar Config, own controls): the unusual settings on this page
    (Config(positional="rope", n_heads=4, n_kv_heads=2, mask="sliding_window", window=2), {"masks.head": 3}),
    (Config(positional="alibi", n_heads=6, mask="sliding_window", window=9, score="dot", bias=True),
     {"masks.head": 4, "masks.compare": "W or W + 1 keys"}),
    (Config(positional="alibi", n_heads=3, mask="padding", padding=(1, 2, 3), weights="random"),
     {"masks.head": 2, "masks.compare": "Causal or padding"}),
    (Config(positional="alibi", n_heads=2, mask="padding", padding=(0, 1, 2, 3), temperature=2.0),
     {"masks.sink_on": True, "masks.sink": 0.5}),
    (Config(positional="alibi", n_heads=8, mask="none", score="additive"), {"masks.compare": "Causal or window"}),
    (Config(positional="alibi", n_heads=7, mask="sliding_window", window=1, sentence="the cat sat on a mat"),
     {"masks.head": 6, "masks.sink_on": True, "masks.sink": -3.0, "masks.compare": "Causal or window"}),
    (Config(positional="alibi", sentence="love"), {}),                        # one token, no mask
    (Config(positional="alibi", n_heads=2, mask="padding", padding=(0, 1, 2, 3)), {"masks.head": 1}),  # no sink
    (Config(mask="padding"), {"masks.compare": "Causal or padding"}),           # padding with no position chosen
]


def test_no_claim_is_shown_where_it_does_not_hold():
    """The claims walk on this page: its own claims (about="masks") and the forward pass's, under RoPE + GQA, a
    window below and above n, H not a power of two, padding hiding every key or every key after its query, a sink
    with every key hidden, bias on, no mask."""
    from dataclasses import fields

    from streamlit.testing.v1 import AppTest

    from tests.apptest_util import ROOT
    from tests.test_claims import page_text
    for config, own in WALK:
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
        at.session_state["s.ready"], at.session_state["s.presenter"], at.session_state["s.url_notices"] = True, False, []
        for f in fields(Config):
            at.session_state[f"s.{f.name}"] = getattr(config, f.name)
        for key, value in own.items():          # as a link or a push gives them: the kept value, which the
            at.session_state[key] = at.session_state[f"p.{key}"] = value    # page's first run draws its control at
        at.switch_page(PAGE)
        at.run()
        assert not at.exception, (config, [e.value for e in at.exception])
        text = page_text(at)
        said = at.session_state["s.claims"][KIND]
        assert said.head == own.get("masks.head", 0) and said.heads == (config.n_heads if config.positional == "alibi"
                                                                        else 0)
        assert shown_outside(text, config) == [] and shown_outside(text, said, about=KIND) == [], (config, own)
        assert not re.search(r"Longformer|torch's reading|sliding_window|\.py\b|h=\d+ heads", text), config


# ---- a fresh reader's findings: each sentence true under the settings it is shown with ----------------------

def page_with(query: dict, checked: bool = False):
    from tests.apptest_util import no_exception, open_page
    at = open_page(PAGE, query=query)
    if checked:
        at.session_state["masks.checked"] = True
        at.run()
    no_exception(at)
    from tests.apptest_util import formulas
    return at, shown(at), "\n".join(formulas(at))


def test_every_key_hidden_says_why_rows_are_zero_and_never_0_over_0():
    at, text, tex = page_with({"positional": "alibi", "n_heads": "2", "mask": "padding", "padding": "0,1,2,3",
                               "masks.head": "1", "cell": "hm:weights:None.2.1"})
    assert "Rows do not sum to 1 here: every key is hidden, so each row of A is all 0." in text
    assert "a sink takes a share" not in text                                   # there is no sink
    assert r"\text{no visible key: the row is set to } 0" in tex and r"\frac{0}{0}" not in tex
    assert "the app sets such a row to all zeros (no NaN)" in text and "core defines" not in text


def test_one_head_alibi_no_mask_words_formulas_and_the_checks_box():
    at, text, tex = page_with({"positional": "alibi", "n_heads": "1", "cell": "hm:weights:None.2.1"}, checked=True)
    assert "What softmax now reads." in text and "What the mask and softmax now read" not in text
    assert r"A_{ij} = \frac{e^{(\hat S + B)_{ij}}}{\sum_{j'} e^{(\hat S + B)_{ij'}}}" in tex
    assert not re.search(r"\(\([^()]*\)\)", tex)                     # never ((Ŝ_0 + B_0)), a sum doubly wrapped
    assert r"m_h = 2^{-8(h+1)/1},\quad h = 0" in tex and r"\dots, 0" not in tex
    # one head: no head subscript, the forward pages' way, in the headings and the clicked cell alike
    assert "##### Weights A &nbsp;" in text and "Biased scores Ŝ + B" in text and "A_0" not in text
    assert r"**How A\[2,1\] was made**" in text
    assert "(the sidebar's W counts the query; this reading's W does not)" in text and "(its W counts" not in text
    assert "given this head's queries and keys and ALiBi's bias:" in text and "and the mask" not in text
    assert "Some queries see keys after them here" in text and "This mask lets" not in text


def test_defaults_checks_box_names_only_what_torch_was_given():
    at, text, _ = page_with({}, checked=True)
    assert "given this head's queries and keys: the largest difference" in text
    assert "the bias" not in text.split("Against PyTorch")[1].split("\n")[0]


def test_one_token_without_a_mask_says_nothing_about_a_mask():
    at, text, _ = page_with({"positional": "alibi", "sentence": "love"})
    assert CLAIMS["masks_alibi_one_side"].marker.lower() not in text.lower()
    assert not holds("masks_alibi_one_side", MaskSettings(1, mask="none", heads=1))
    assert not holds("masks_alibi_both_sides", MaskSettings(1, mask="none", heads=1))


def test_padding_with_no_position_chosen_says_so():
    at, text, tex = page_with({"mask": "padding"})
    assert "mask: padding hiding no key yet (choose positions in the sidebar)" in text
    assert "The sidebar's mask is padding hiding no key yet" in text and "hiding keys  ·" not in text
    assert r"M_{ij} = 1 \quad \text{(no key hidden)}" in tex and r"\{\}" not in tex
    assert "No key is hidden yet" in text and "The hidden keys (padding a batch added)" not in text


def test_the_sink_has_its_own_symbol_and_its_sum_runs_over_j_prime():
    at, text, tex = page_with({"positional": "alibi", "n_heads": "6", "mask": "sliding_window", "window": "2",
                               "masks.head": "4", "masks.sink_on": "1", "masks.sink": "1.5",
                               "cell": "hm:sink_weights:None.2.1"})
    assert "Weights with a sink A′_4, z_4 = 1.5" in text and "##### Weights A_4 &nbsp;" in text
    assert r"**How A′\_4\[2,1\] was made**" in text and r"**How A\_4\[2,1\]" not in text
    assert r"\textstyle\sum_j ({A'_{4}})_{ij},\quad 1 - \sum_j ({A'_{4}})_{ij}" in tex
    made = next(f for f in tex.split("\n") if f.startswith(r"\begin{aligned} ({A'_{4}})_{2,1}"))
    assert r"({\tilde S_{4}})_{2,j'}" in made and r"_{2,j}" not in made
    t = masks_trace(Config(positional="alibi", n_heads=6, mask="sliding_window", window=2), 4, 1.5)
    e = explain(t, "sink_weights", (2, 1))
    assert e.text.startswith("A′_4[2,1] = e^(S̃_4[2,1] − μ) / (e^(z_4 − μ) + Σ_j' e^(S̃_4[2,j'] − μ))"), e.text
    sums = explain(t, "row_sums", (2, 0)).text.split("\n")[0]
    assert sums == "row sum[2] = Σ_j A′_4[2,j]"                       # not "Σ_j A_4[2,j] = Σ_j A_4[2,j]"
    b = explain(t, "biased_scores", (2, 1))                            # the heading's Ŝ_4 + B_4
    assert b.text.startswith("(Ŝ_4+B_4)[2,1]") and b.symbolic.startswith(r"(\hat S_{4} + B_{4})_{2,1}")
    assert t["biased_scores"].title == "Biased scores Ŝ_4 + B_4"


def test_a_sink_too_small_for_float64_is_said_to_round_to_1():
    """z_h = −30 against scores near 60 (d_k = 64, T = 0.1): the share e^(−30 − 61.7) underflows and the rows sum
    to exactly 1.0 in float64; the sentence says it holds in exact arithmetic and rounds to 1 there."""
    config = cfg(mask="causal", score="dot", d_k=64, temperature=0.1)
    t = masks_trace(config, 0, -30.0)
    assert np.any(t["row_sums"].value[:, 0] == 1.0)
    from attention_core.forward.claims import say
    words = say("masks_sink_below_one", t.facts["settings"])
    assert "in exact arithmetic" in words and "the sum rounds to 1" in words


def test_formulas_and_words_for_one_element_ranges_rope_additive_and_readers():
    from attention_core.lessons.masks import _scores_why, score_formula, slopes_formula
    from ui.today.masks_view import slopes_markdown
    assert r"h = 2 \end{cases}" in slopes_formula(3) and r"h = 4 \end{cases}" in slopes_formula(5)
    assert r"m_{0}, m_{1} = " in slopes_markdown(3) and r"\text{then } m_{2} = " in slopes_markdown(3)
    assert r"\dots" not in slopes_formula(2) + slopes_formula(3) + slopes_markdown(3)
    rope = Config(positional="rope", score="additive", n_heads=2)
    assert r"q^R_i, k^R_j \text{ rows of } Q^R_{1}, K^R_{1}" in score_formula(rope, 1, 1)
    assert "softmax reads S the same way it would read Ŝ" in _scores_why(Config(score="dot"), 0, 0)
    assert "the mask and softmax read S" in _scores_why(Config(score="dot", mask="causal"), 0, 0)
    assert "ALiBi's paper" not in _scores_why(Config(score="bilinear"), 0, 0)
    assert "ALiBi's bias, the mask and softmax read these S" in _scores_why(
        Config(score="bilinear", positional="alibi", mask="causal"), 0, 0)

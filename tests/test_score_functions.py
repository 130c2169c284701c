"""The score functions page's words: its two registered claims, proved numerically, and its formulas and
titles built from the sidebar's settings (docs/notation.md: S, Ŝ, S̃, A; T; heads h = 0 … H−1)."""
import numpy as np
import pytest

from attention_core import Config, run_forward
from attention_core.forward.claims import CLAIMS, say
from attention_core.lessons.torch_mha import score_costs
from tests.apptest_util import charts, formulas, no_exception, open_page
from ui.variants.score_panels import scores_symbol, softmax_text

D_VALUES = (1, 4, 16, 64, 256)
N = 40_000                      # samples per width: the variance is estimated to about ±3% (kurtosis of q·k ≤ 9)


def unit_variance(rng, shape, kind: str) -> np.ndarray:
    """Independent, zero-mean, unit-variance components: Gaussian, uniform or ±1."""
    if kind == "gauss":
        return rng.standard_normal(shape)
    if kind == "uniform":
        return rng.uniform(-np.sqrt(3), np.sqrt(3), shape)
    return rng.choice([-1.0, 1.0], shape)


def dot_variance(d: int, make_q, make_k) -> float:
    rng = np.random.default_rng([d, 7])
    q, k = make_q(rng, (N, d)), make_k(rng, (N, d))
    return float(np.einsum("sd,sd->s", q, k).var())


@pytest.mark.parametrize("kind", ["gauss", "uniform", "sign"])
def test_dot_product_variance_is_d_k_for_unit_variance_components(kind):
    """Claim dot_variance_grows: for independent, zero-mean, unit-variance components Var(q · k) = d_k, so its
    spread (standard deviation) grows like √d_k. Outside the condition the number is another one: components of
    variance 2 give 4 d_k, a mean of 1 gives 3 d_k, q = k (not independent) gives 2 d_k for Gaussians."""
    make = lambda rng, shape: unit_variance(rng, shape, kind)
    for d in D_VALUES:
        assert abs(dot_variance(d, make, make) / d - 1) < 0.08, (kind, d)
    spreads = [np.sqrt(dot_variance(d, make, make)) for d in D_VALUES]
    np.testing.assert_allclose(np.array(spreads) / np.sqrt(D_VALUES), 1.0, atol=0.05)      # like √d_k
    # outside the condition
    wide = lambda rng, shape: np.sqrt(2) * rng.standard_normal(shape)
    shifted = lambda rng, shape: 1.0 + rng.standard_normal(shape)
    for d in (4, 64):
        assert abs(dot_variance(d, wide, wide) / (4 * d) - 1) < 0.1
        assert abs(dot_variance(d, shifted, shifted) / (3 * d) - 1) < 0.1
        rng = np.random.default_rng(d)
        q = rng.standard_normal((N, d))
        assert abs(np.einsum("sd,sd->s", q, q).var() / (2 * d) - 1) < 0.1
    assert CLAIMS["dot_variance_grows"].proof.endswith("::" + test_dot_product_variance_is_d_k_for_unit_variance_components.__name__)


@pytest.mark.parametrize("kind", ["gauss", "uniform", "sign"])
def test_scaled_dot_product_variance_is_1_for_unit_variance_components(kind):
    """Claim scaled_variance_one: Var(q · k / √d_k) = 1 at every d_k for independent, zero-mean, unit-variance
    components; not 1 outside the condition (variance 2: 4; mean 1: 3; q = k: 2), though it still does not grow
    with d_k for independent components: what the page's unconditional words say."""
    make = lambda rng, shape: unit_variance(rng, shape, kind)
    scaled = [dot_variance(d, make, make) / d for d in D_VALUES]
    np.testing.assert_allclose(scaled, 1.0, atol=0.08)
    wide = lambda rng, shape: np.sqrt(2) * rng.standard_normal(shape)
    shifted = lambda rng, shape: 1.0 + rng.standard_normal(shape)
    wide_scaled = [dot_variance(d, wide, wide) / d for d in D_VALUES]
    np.testing.assert_allclose(wide_scaled, 4.0, rtol=0.1)                  # not near 1, and flat in d_k
    np.testing.assert_allclose([dot_variance(d, shifted, shifted) / d for d in (4, 64)], 3.0, rtol=0.1)
    assert CLAIMS["scaled_variance_one"].proof.endswith(
        "::" + test_scaled_dot_product_variance_is_1_for_unit_variance_components.__name__)


def test_claims_state_their_condition_and_are_shown_everywhere():
    for key in ("dot_variance_grows", "scaled_variance_one"):
        c = CLAIMS[key]
        assert c.about == "forward" and "independent, zero-mean, unit-variance" in c.text
        for config in (Config(), Config(score="dot", mask="causal", temperature=0.3, n_heads=2, weights="random")):
            assert say(key, config) == c.text


# ---- the page -------------------------------------------------------------------------------------------------

QUERIES = [{}, {"score": "dot", "mask": "causal", "temperature": "0.5", "n_heads": "2"},
           {"mask": "padding", "padding": "1", "weights": "random"}, {"temperature": "2", "d_k": "9"}]


def config_of(query: dict) -> Config:
    conv = {"temperature": float, "n_heads": int, "d_k": int, "padding": lambda v: (int(v),)}
    return Config(**{k: conv.get(k, str)(v) for k, v in query.items()})


def page_text(at) -> str:
    parts = [str(e.value) for kind in ("markdown", "caption", "info", "warning", "latex") for e in at.get(kind)]
    return "\n".join(parts + [str(sp.get("title", "")) for sp in charts(at)])


@pytest.mark.parametrize("query", QUERIES)
def test_page_titles_and_formulas_are_built_from_the_settings(query):
    """Each score function's heatmaps are titled with the symbols of what was computed: S or Ŝ, and
    A = softmax(S, Ŝ or S̃, / T when T ≠ 1) as run_forward's softmax reads it under these settings."""
    at = open_page("app_pages/20_score_functions.py", query=query)
    no_exception(at)
    config = config_of(query)
    assert at.session_state["s.temperature"] == config.temperature
    titles = [sp.get("title") for sp in charts(at) if "layer" in sp]
    head = " (head 0)" if config.n_heads > 1 else ""
    expected = []
    plain = {"scores": "S", "scaled_scores": "Ŝ", "masked_scores": "S̃"}
    for score in ("dot", "scaled_dot", "additive", "bilinear"):
        c = config.replace(score=score)
        read = plain[run_forward(c).facts["softmax_input"]]                 # what the forward pass's softmax read
        arg = read if c.temperature == 1 else f"{read} / {c.temperature:g}"
        assert softmax_text(c) == f"softmax({arg})"
        expected += [f"{'scaled scores' if score == 'scaled_dot' else 'scores'} {scores_symbol(score)}{head}",
                     f"weights A = softmax({arg}){head}"]
    assert titles == expected
    shown = formulas(at)
    for cost in score_costs(3, 3, 4, 4):
        assert cost["score"] in shown
    text = page_text(at)
    extras = config.mask != "none" or config.temperature != 1
    assert ("The weights below include the sidebar's" in text) == extras
    if config.temperature != 1:
        assert f"temperature T = {config.temperature:g}" in text
    assert "seed 00" not in text.lower() and "from tutorial 3" in text and "energy e" in text
    assert "near 1 whatever d_k is" not in text                            # issue 12: true only for unit variance
    assert CLAIMS["scaled_variance_one"].text in text and CLAIMS["dot_variance_grows"].text in text
    assert "keeps the scores' spread from growing with d_k" in text
    if config.n_heads > 1:
        assert f"each head h = 0 … {config.n_heads - 1} scores its own Q_h and K_h" in text
    assert ("only W_Q, W_K, W_V are trained here" in text) == (config.weights == "trained")


def test_pair_formulas_are_the_notations():
    """S_ij per pair, as docs/notation.md writes the four score functions (Ŝ for the scaled dot product)."""
    got = {c["name"]: c["score"] for c in score_costs(2, 2, 2, 2)}
    assert got == {"dot": r"S_{ij} = q_i \cdot k_j", "scaled_dot": r"\hat S_{ij} = q_i \cdot k_j / \sqrt{d_k}",
                   "additive": r"S_{ij} = v^\top \tanh(W_1^\top q_i + W_2^\top k_j)",
                   "bilinear": r"S_{ij} = q_i^\top W k_j"}
    from attention_core.math import attention as att
    rng = np.random.default_rng(0)
    q, k = rng.standard_normal((3, 4)), rng.standard_normal((5, 4))
    w_1, w_2, v = rng.standard_normal((4, 6)), rng.standard_normal((4, 6)), rng.standard_normal(6)
    s = att.additive_scores(q, k, w_1, w_2, v)
    np.testing.assert_allclose(s[1, 2], v @ np.tanh(w_1.T @ q[1] + w_2.T @ k[2]), atol=1e-12)    # W_1ᵀ q_i
    w = rng.standard_normal((4, 4))
    np.testing.assert_allclose(att.bilinear_scores(q, k, w)[1, 2], q[1] @ w @ k[2], atol=1e-12)

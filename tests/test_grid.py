"""Attention over an image's feature grid: filter bank, the three abstractions, overlay."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attention_core import grid as g
from attention_core.math.attention import scaled_dot_product_attention, softmax
from attention_core.math.limits import ConfigError

torch.set_default_dtype(torch.float64)
col = g.FEATURE_NAMES.index


def test_scenes_are_images():
    for name in g.SCENES:
        image = g.scene(name)
        assert image.shape == (48, 48, 3) and image.min() >= 0 and image.max() <= 1
        np.testing.assert_array_equal(image, g.scene(name))            # drawn the same way every time
    assert g.scene("shapes", size=24).shape == (24, 24, 3)
    with pytest.raises(ConfigError, match="scene"):
        g.scene("dog")
    with pytest.raises(ConfigError, match="size"):
        g.scene("shapes", size=10_000)


def _synthetic() -> np.ndarray:
    """16×16, 2×2 cells of 8 px: red | white over black | black with a white line in row 12."""
    image = np.zeros((16, 16, 3))
    image[:8, :8] = [1, 0, 0]
    image[:8, 8:] = [1, 1, 1]
    image[12, 8:] = [1, 1, 1]
    return image


def test_filter_bank_on_synthetic_image():
    x = g.cell_features(_synthetic(), (2, 2))                           # cells r0c0, r0c1, r1c0, r1c1
    assert x.shape == (4, g.D_X)
    np.testing.assert_allclose(x[:, col("redness")], [1, 0, 0, 0])     # the pure red cell, and only it
    np.testing.assert_allclose(x[:, col("brightness")], [0.299, 1, 0, 1 / 8])
    np.testing.assert_allclose(x[0, [col("red"), col("green"), col("blue")]], [1, 0, 0])
    # r1c1: a white line across an 8-wide cell: two full-contrast edges (rows 11→12 and 12→13)
    np.testing.assert_allclose(x[3, col("h_edges")], 2.0)
    np.testing.assert_allclose(x[3, col("v_edges")], 0.0)
    np.testing.assert_allclose(x[3, col("round")], 0.0)               # axis-aligned edges only
    # r1c0: black, but the line starts right of it: one pixel of vertical edge in a cell 8 high
    np.testing.assert_allclose(x[2, col("v_edges")], 1 / 8)
    # r0c0 → r0c1 is red → white: green and blue jump by 1 along the cell's right column
    np.testing.assert_allclose(x[0, col("v_edges")], 1.0)
    np.testing.assert_allclose(x[:, col("up")], [1, 1, -1, -1])
    np.testing.assert_allclose(x[:, col("left")], [1, -1, 1, -1])


def test_round_fires_on_the_disc_not_the_square():
    grid = g.make_grid("shapes")
    round_ = g.overlay(grid.x[:, col("round")], grid.shape)
    disc, square = round_[:3, :3].mean(), round_[3:, 3:].mean()     # red disc top-left, blue square bottom-right
    assert disc > 4 * square, (disc, square)
    redness = g.overlay(grid.x[:, col("redness")], grid.shape)
    assert np.unravel_index(redness.argmax(), redness.shape) == (1, 1)


def test_grid_must_divide_image():
    with pytest.raises(ConfigError, match="equal cells"):
        g.cell_features(g.scene("shapes"), (5, 6))
    with pytest.raises(ConfigError, match="RGB"):
        g.cell_features(np.zeros((8, 8)), (2, 2))


def test_one_query_dot_product():
    grid = g.make_grid("shapes")
    q = g.named_queries(["red"])[0]
    t = g.one_query(grid, q, "red")
    assert t.keys() == ["x", "q", "scores", "weights", "weights_grid", "context"]
    np.testing.assert_allclose(t["scores"].value, grid.x @ q)
    np.testing.assert_allclose(t["weights"].value, softmax(grid.x @ q))
    np.testing.assert_allclose(t["weights"].value.sum(), 1.0, atol=1e-12)
    np.testing.assert_allclose(t["context"].value, t["weights"].value @ grid.x)
    w = t["weights_grid"].value
    assert w.shape == (6, 6) and np.unravel_index(w.argmax(), w.shape) == (1, 1) and w.max() > 0.8
    # the red query's output is mostly red, and up-left of centre
    out = dict(zip(g.FEATURE_NAMES, t["context"].value))
    assert out["red"] > 0.7 > 0.2 > out["green"] and out["up"] > 0.3 and out["left"] > 0.3


def test_many_queries_are_stacked_single_queries():
    grid = g.make_grid("balls")
    names = list(g.QUERIES)
    queries = g.named_queries(names, sharpness=4.0)
    t = g.many_queries(grid, queries, names)
    assert t["scores"].shape == (len(names), 36) and t["context"].shape == (len(names), g.D_X)
    for i, name in enumerate(names):
        single = g.one_query(grid, queries[i], name)
        np.testing.assert_allclose(t["weights"].value[i], single["weights"].value, atol=1e-15)
        np.testing.assert_allclose(t["context"].value[i], single["context"].value, atol=1e-14)
    np.testing.assert_allclose(t["weights"].value.sum(axis=1), 1.0, atol=1e-12)
    assert t.facts["axis_labels"]["n_q"] == names
    top_left = g.overlay(t["weights"].value[names.index("top-left")], grid.shape)
    assert top_left.argmax() == 0 and g.overlay(t["weights"].value[names.index("bottom-right")], grid.shape).argmax() == 35


def test_cross_attention_is_scaled_dot_product_attention():
    grid = g.make_grid("traffic light")
    w_k, w_v = g.random_transforms(d_q=6, d_v=3, seed=2)
    queries = np.random.default_rng(0).standard_normal((4, 6))
    t = g.cross_attention(grid, queries, None, w_k, w_v)
    k, v = grid.x @ w_k, grid.x @ w_v
    context, weights = scaled_dot_product_attention(queries, k, v)
    np.testing.assert_allclose(t["k"].value, k)
    np.testing.assert_allclose(t["weights"].value, weights, atol=1e-15)
    np.testing.assert_allclose(t["context"].value, context, atol=1e-15)
    np.testing.assert_allclose(t["scores"].value, queries @ k.T / np.sqrt(6))
    expected = F.scaled_dot_product_attention(torch.tensor(queries), torch.tensor(grid.x) @ torch.tensor(w_k),
                                              torch.tensor(grid.x) @ torch.tensor(w_v))
    np.testing.assert_allclose(t["context"].value, expected.numpy(), atol=1e-10)
    assert t["context"].shape == (4, 3) and t["weights"].axes == ("n_q", "n_x")


def test_hand_transforms_cancel_the_scale_and_return_colour_and_place():
    grid = g.make_grid("shapes")
    names = ["red", "top-left", "blue"]
    queries = g.named_queries(names)
    cross = g.cross_attention(grid, queries, names)
    plain = g.many_queries(grid, queries, names)
    np.testing.assert_allclose(cross["weights"].value, plain["weights"].value, atol=1e-14)
    assert cross.facts["axis_labels"]["d_v"] == ["red", "green", "blue", "up", "left"]
    red, top_left, blue = cross["context"].value
    assert red[0] > 0.8 and red[3] > 0.4 and red[4] > 0.4             # red, upper left
    assert top_left[3] > 0.9 and top_left[4] > 0.9
    assert blue[2] > 0.7 and blue[3] < -0.4 and blue[4] < -0.4          # blue, lower right
    with pytest.raises(ConfigError):
        g.cross_attention(grid, queries, names, w_k=np.eye(g.D_X))


def test_random_transforms_are_seeded():
    a, b_ = g.random_transforms(seed=1), g.random_transforms(seed=1)
    np.testing.assert_array_equal(a[0], b_[0])
    assert a[0].shape == (g.D_X, g.D_X) and a[1].shape == (g.D_X, 5)
    assert not np.array_equal(a[0], g.random_transforms(seed=2)[0])


def test_overlay_and_blend():
    w = softmax(np.arange(12.0))
    grid_w = g.overlay(w, (3, 4))
    assert grid_w.shape == (3, 4) and grid_w[2, 3] == w[11] and grid_w[1, 0] == w[4]
    with pytest.raises(ConfigError):
        g.overlay(w, (4, 4))
    image = np.ones((6, 8, 3))
    lit = g.blend(image, grid_w, floor=0.2)
    assert lit.shape == (6, 8, 3)
    np.testing.assert_allclose(lit[4:, 6:], 1.0)                         # the top weight is fully lit
    np.testing.assert_allclose(lit[0, 0], 0.2 + 0.8 * w[0] / w[11])


def test_named_queries_validated():
    with pytest.raises(ConfigError, match="Unknown query"):
        g.named_queries(["purple"])
    with pytest.raises(ConfigError):
        g.named_queries([])
    q = g.named_queries(["red", "round"], sharpness=3.0)
    np.testing.assert_allclose(np.linalg.norm(q, axis=1), 3.0)


# ---- the words are the code's numbers ------------------------------------------------------------------

def _solid(colour, size: int = 12) -> np.ndarray:
    return np.broadcast_to(np.asarray(colour, dtype=np.float64), (size, size, 3)).copy()


def test_redness_numbers_stated_are_the_filter_banks_output():
    """Every number the redness description states is what cell_features gives a cell of that colour
    (issue 12: it said 0.8 for pure red, which gives 1, and 0 for yellow, which gives 0.1 here)."""
    import re
    text = g.FEATURES["redness"]
    some = text.split(": ", 1)[1].split("; 0 for ")[0]
    stated = {name: float(v) for v, name in re.findall(r"([0-9.]+) for (.+?)(?=, [0-9.]+ for |$)", some)}
    assert set(stated) == {name for name, _ in g.REDNESS_EXAMPLES}
    for name, colour in g.REDNESS_EXAMPLES:
        x = g.cell_features(_solid(colour), (3, 3))[:, col("redness")]
        np.testing.assert_allclose(x, stated[name], rtol=0, atol=5e-4)          # stated to 3 significant digits
    assert stated["pure red (1, 0, 0)"] == 1.0 and stated["their yellow"] == 0.1 and stated["the scenes' red"] == 0.8
    zero = text.split("; 0 for ")[1]
    for name, colour in g.REDNESS_ZERO:
        assert name in zero
        np.testing.assert_array_equal(g.cell_features(_solid(colour), (2, 2))[:, col("redness")], 0.0)
    assert "0.8 for pure red" not in text
    # the scenes draw these colours: the scenes' red disc's middle cell reads 0.8
    shapes = g.make_grid("shapes", (12, 12))
    assert g.RED in [c for *_, c in g.SCENES["shapes"]]
    np.testing.assert_allclose(shapes.x[:, col("redness")].max(), 0.8, atol=1e-12)


def test_edge_features_as_described():
    """'1 ≈ one full-contrast edge straight across' (divided by the cell's width / height) and 'round' ~0 on
    axis-aligned edges: one black/white boundary across a cell gives exactly 1, in the direction described."""
    image = np.zeros((8, 8, 3))
    image[4:] = 1.0                                         # a horizontal boundary across the single cell
    x = g.cell_features(image, (1, 1))[0]
    assert x[col("h_edges")] == 1.0 and x[col("v_edges")] == 0.0 and x[col("round")] == 0.0
    x = g.cell_features(np.swapaxes(image, 0, 1).copy(), (1, 1))[0]
    assert x[col("v_edges")] == 1.0 and x[col("h_edges")] == 0.0
    assert "divided by the cell's width" in g.FEATURES["h_edges"] and "height" in g.FEATURES["v_edges"]


def test_traces_speak_the_apps_notation():
    """S / Ŝ scores, A weights, C context (docs/notation.md); d_k the key width; tutorial 4, no seed file."""
    grid = g.make_grid("shapes")
    one = g.one_query(grid, g.named_queries(["red"])[0], "red")
    many = g.many_queries(grid, g.named_queries(["red", "blue"]), ["red", "blue"])
    cross = g.cross_attention(grid, g.named_queries(["red", "blue"]), ["red", "blue"])
    assert one["scores"].formula == r"s_j = x_j \cdot q" and one["context"].title == "Context c = a X"
    assert many["scores"].formula == r"S = Q X^\top" and many["context"].formula == "C = A X"
    assert cross["scores"].formula.startswith(r"\hat S = \frac{Q K^\top}{\sqrt{d_k}}")
    assert cross["weights"].formula.startswith(r"A = \mathrm{softmax}(\hat S)") and cross["context"].formula == "C = A V"
    assert cross["queries"].axes == ("n_q", "d_k") and cross["k"].axes == ("n_x", "d_k")
    # the weights grid formula: cell (r, c) is entry r·cols + c of a
    w = one["weights_grid"].value
    assert w[2, 3] == one["weights"].value[2 * grid.shape[1] + 3]
    for t in (one, many, cross):
        for s in t:
            words = f"{s.title} {s.formula} {s.why}"
            assert "seed 00" not in words.lower() and "E =" not in words and "Y =" not in words, s.key
    assert "tutorial 4" in one["scores"].why

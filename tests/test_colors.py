"""Colour is never the only carrier, and the colours carry what they must for every colour vision.

- Protanopia, deuteranopia and tritanopia are simulated with Machado, Oliveira & Fernandes (2009), "A physiologically-
  based model for simulation of color vision deficiency", IEEE TVCG 15(6): their matrices for severity 1.0, applied to
  linear sRGB.
- Colour differences are CIEDE2000 (Sharma, Wu & Dalal 2005, "The CIEDE2000 color-difference formula: implementation
  notes, supplementary test data, and mathematical observations", Color Res. Appl. 30(1)), checked against their
  published test pairs; a ΔE00 of 1 is about a just-noticeable difference.
- A scale's colours are taken as the browser draws them: Vega interpolates a scale's range in CIELAB (interpolate
  "lab": d3-color's Lab, D50, Bradford-adapted), so the steps are computed the same way here.
- Contrast is WCAG 2.1's: (L1 + 0.05) / (L2 + 0.05) of relative luminances; text ≥ 4.5:1 (1.4.3), marks ≥ 3:1
  (1.4.11), against the page's background in the normal and the presenter theme.
"""
from __future__ import annotations

import itertools
import re
import tomllib
from pathlib import Path

import numpy as np
import pytest

from ui import colours
from ui.colours import DARK_FROM, DASHES, DIVERGING, MASK, SEQUENTIAL, SERIES, TEXT_DARK, TEXT_LIGHT

ROOT = Path(__file__).resolve().parents[1]
MACHADO = {
    "normal": np.eye(3),
    "protanopia": np.array([[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216],
                            [-0.003882, -0.048116, 1.051998]]),
    "deuteranopia": np.array([[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413],
                              [-0.011820, 0.042940, 0.968881]]),
    "tritanopia": np.array([[1.255528, -0.076749, -0.178779], [-0.078411, 0.930809, 0.147602],
                            [0.004733, 0.691367, 0.303900]]),
}
VISIONS = list(MACHADO)


def hex_rgb(h: str) -> np.ndarray:
    h = "#" + "".join(c * 2 for c in h[1:]) if len(h) == 4 else h          # "#222" is "#222222"
    return np.array([int(h[i:i + 2], 16) / 255 for i in (1, 3, 5)])


def linear(c) -> np.ndarray:
    c = np.asarray(c, dtype=float)
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def lab_d65(lin_rgb) -> np.ndarray:
    m = np.array([[0.4124564, 0.3575761, 0.1804375], [0.2126729, 0.7151522, 0.0721750],
                  [0.0193339, 0.1191920, 0.9503041]])
    xyz = m @ np.clip(lin_rgb, 0, 1) / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > (6 / 29) ** 3, np.cbrt(xyz), xyz / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def seen(hex_colour: str, vision: str) -> np.ndarray:
    """CIELAB (D65) of the colour as a reader with this colour vision sees it."""
    return lab_d65(MACHADO[vision] @ linear(hex_rgb(hex_colour)))


def luminance(hex_colour: str) -> float:
    r, g, b = linear(hex_rgb(hex_colour))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: str, b: str) -> float:
    lo, hi = sorted((luminance(a), luminance(b)))
    return (hi + 0.05) / (lo + 0.05)


def de2000(lab1, lab2) -> float:
    """CIEDE2000 (kL = kC = kH = 1), as Sharma, Wu & Dalal (2005) write it."""
    (L1, a1, b1), (L2, a2, b2) = lab1, lab2
    c_bar = (np.hypot(a1, b1) + np.hypot(a2, b2)) / 2
    g = 0.5 * (1 - np.sqrt(c_bar ** 7 / (c_bar ** 7 + 25 ** 7)))
    a1p, a2p = (1 + g) * a1, (1 + g) * a2
    c1p, c2p = np.hypot(a1p, b1), np.hypot(a2p, b2)
    h1p = np.degrees(np.arctan2(b1, a1p)) % 360 if c1p else 0.0
    h2p = np.degrees(np.arctan2(b2, a2p)) % 360 if c2p else 0.0
    dh = 0.0 if c1p * c2p == 0 else (h2p - h1p + 180) % 360 - 180
    d_l, d_c = L2 - L1, c2p - c1p
    d_h = 2 * np.sqrt(c1p * c2p) * np.sin(np.radians(dh / 2))
    l_bar, cp_bar = (L1 + L2) / 2, (c1p + c2p) / 2
    if c1p * c2p == 0:
        h_bar = h1p + h2p
    elif abs(h1p - h2p) <= 180:
        h_bar = (h1p + h2p) / 2
    else:
        h_bar = (h1p + h2p + 360) / 2 if h1p + h2p < 360 else (h1p + h2p - 360) / 2
    t = (1 - 0.17 * np.cos(np.radians(h_bar - 30)) + 0.24 * np.cos(np.radians(2 * h_bar))
         + 0.32 * np.cos(np.radians(3 * h_bar + 6)) - 0.20 * np.cos(np.radians(4 * h_bar - 63)))
    s_l = 1 + 0.015 * (l_bar - 50) ** 2 / np.sqrt(20 + (l_bar - 50) ** 2)
    s_c, s_h = 1 + 0.045 * cp_bar, 1 + 0.015 * cp_bar * t
    r_t = (-np.sin(np.radians(60 * np.exp(-(((h_bar - 275) / 25) ** 2))))
           * 2 * np.sqrt(cp_bar ** 7 / (cp_bar ** 7 + 25 ** 7)))
    return float(np.sqrt((d_l / s_l) ** 2 + (d_c / s_c) ** 2 + (d_h / s_h) ** 2 + r_t * (d_c / s_c) * (d_h / s_h)))


# d3-color's Lab (what Vega's interpolate "lab" uses): D50 white, sRGB Bradford-adapted to D50.
XN, ZN, T0, T1 = 0.96422, 0.82521, 4 / 29, 6 / 29


def d3_lab(h: str) -> np.ndarray:
    r, g, b = linear(hex_rgb(h))
    f = lambda t: t ** (1 / 3) if t > T1 ** 3 else t / (3 * T1 * T1) + T0
    y = f(0.2225045 * r + 0.7168786 * g + 0.0606169 * b)
    x, z = (y, y) if r == g == b else (f((0.4360747 * r + 0.3850649 * g + 0.1430804 * b) / XN),
                                        f((0.0139322 * r + 0.0971045 * g + 0.7141733 * b) / ZN))
    return np.array([116 * y - 16, 500 * (x - y), 200 * (y - z)])


def d3_hex(lab) -> str:
    l, a, b = lab
    inv = lambda t: t ** 3 if t > T1 else 3 * T1 * T1 * (t - T0)
    y = (l + 16) / 116
    x, y, z = XN * inv(y + a / 500), inv(y), ZN * inv(y - b / 200)
    rgb = (3.1338561 * x - 1.6168667 * y - 0.4906146 * z, -0.9787684 * x + 1.9161415 * y + 0.0334540 * z,
           0.0719453 * x - 0.2289914 * y + 1.4052427 * z)
    enc = lambda v: 255 * (12.92 * v if v <= 0.0031308 else 1.055 * v ** (1 / 2.4) - 0.055)
    return "#" + "".join(f"{round(min(255, max(0, enc(v)))):02x}" for v in rgb)


def drawn(start: str, end: str, n: int) -> list[str]:
    """n colours evenly from start to end, as Vega draws a scale interpolated in Lab."""
    a, b = d3_lab(start), d3_lab(end)
    return [d3_hex(a + (b - a) * t) for t in np.linspace(0, 1, n)]


# Each scale from its light end (0, or a diverging scale's middle) outwards.
HALVES = {"sequential": (SEQUENTIAL[0], SEQUENTIAL[-1]), "negative": (DIVERGING[1], DIVERGING[0]),
          "positive": (DIVERGING[1], DIVERGING[2])}


def test_ciede2000_gives_the_published_differences():
    """Sharma, Wu & Dalal (2005), Table 1: pairs 1, 7, 17, 25 and 4."""
    pairs = [((50, 2.6772, -79.7751), (50, 0, -82.7485), 2.0425), ((50, 0, 0), (50, -1, 2), 2.3669),
             ((50, 2.5, 0), (73, 25, -18), 27.1492), ((60.2574, -34.0099, 36.2677), (60.4626, -34.1751, 39.4387), 1.2644),
             ((50, -1.3802, -84.2814), (50, 0, -82.7485), 1.0000)]
    for a, b, want in pairs:
        assert de2000(a, b) == pytest.approx(want, abs=1e-4)


def test_the_simulation_has_teeth():
    """Pairs far apart for normal vision collapse where each deficiency confuses them (ΔE00 under 15): red and
    green under deuteranopia, orange and green under protanopia, blue and green under tritanopia."""
    for a, b, vision in (("#e15759", "#59a14f", "deuteranopia"), ("#ff7f0e", "#2ca02c", "protanopia"),
                         ("#1f77b4", "#2ca02c", "tritanopia")):
        assert de2000(seen(a, "normal"), seen(b, "normal")) > 50
        assert de2000(seen(a, vision), seen(b, vision)) < 15, (a, b, vision)


def test_lab_interpolation_is_vegas():
    """d3-color's Lab round trip gives the colour back, and its midpoint of black and white is its L = 50 grey."""
    for c in [*DIVERGING, *SEQUENTIAL, *SERIES, "#4682b4"]:
        assert d3_hex(d3_lab(c)) == c
    assert d3_lab("#4682b4") == pytest.approx([51.986, -8.363, -32.833], abs=1e-3)    # steelblue in d3-color ≥ 1.1
    assert drawn("#000000", "#ffffff", 3)[1] == "#777777"


@pytest.mark.parametrize("vision", VISIONS)
@pytest.mark.parametrize("half", list(HALVES))
def test_a_scale_is_ordered_and_its_steps_are_told_apart(half, vision):
    """Nine steps of each scale (each half of the signed one): lightness falls at every step, for every colour
    vision, and neighbouring steps differ by ΔE00 ≥ 5 (a value's size is its darkness, whatever the hue)."""
    steps = [seen(c, vision) for c in drawn(*HALVES[half], 9 if half == "sequential" else 5)]
    lightness = [s[0] for s in steps]
    assert all(b < a - 4 for a, b in zip(lightness, lightness[1:])), (half, vision, lightness)
    gaps = [de2000(a, b) for a, b in zip(steps, steps[1:])]
    assert min(gaps) >= 5, (half, vision, gaps)


@pytest.mark.parametrize("vision", VISIONS)
def test_a_signed_scale_tells_the_sign_and_treats_both_signs_alike(vision):
    """−v and +v look different (ΔE00 ≥ 15 from a quarter of the range on) and as dark (lightness within 10):
    neither sign looks bigger than the other."""
    neg, pos = drawn(*HALVES["negative"], 5), drawn(*HALVES["positive"], 5)
    for k in range(1, 5):
        a, b = seen(neg[k], vision), seen(pos[k], vision)
        assert de2000(a, b) >= 15, (vision, k, neg[k], pos[k])
        assert abs(a[0] - b[0]) <= 10, (vision, k, a[0], b[0])


@pytest.mark.parametrize("half", list(HALVES))
def test_a_cells_number_reads_at_4_5_to_1(half):
    """The number in a cell is black up to DARK_FROM[half] of the way along the scale and white beyond it (charts.py's
    dark_test): at 401 points of the scale, that colour on that cell is at least 4.5:1."""
    for t, cell in zip(np.linspace(0, 1, 401), drawn(*HALVES[half], 401)):
        text = TEXT_LIGHT if t > DARK_FROM[half] else TEXT_DARK
        assert contrast(text, cell) >= 4.5, (half, round(t, 4), cell, text)


def test_a_masks_two_states_differ_in_every_colour_vision():
    zero, one = MASK
    assert contrast(zero, one) >= 3
    for vision in VISIONS:
        assert de2000(seen(zero, vision), seen(one, vision)) >= 20
    assert contrast(TEXT_DARK, zero) >= 4.5 and contrast(TEXT_LIGHT, one) >= 4.5     # "0" black, "1" white


def backgrounds() -> dict[str, str]:
    """The page's background in the normal theme (.streamlit/config.toml; Streamlit's light theme is white) and in
    presenter mode (ui/presenter.py's CSS: it must not set another, or it is read here)."""
    from ui.presenter import PRESENTER_CSS
    theme = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text()).get("theme", {})
    assert theme.get("base", "light") == "light"
    normal = theme.get("backgroundColor", "#ffffff")
    found = re.findall(r"background(?:-color)?\s*:\s*(#[0-9a-fA-F]{6})", PRESENTER_CSS)
    return {"normal": normal, "presenter": found[-1] if found else normal}


@pytest.mark.parametrize("theme", ["normal", "presenter"])
def test_marks_stand_out_at_3_to_1_from_the_page(theme):
    """Every series colour of a line or bar chart, and the ends of every heatmap scale, at least 3:1 against the
    page; the outlines drawn on cells (black with a white line inside; purple dashes on white) at least 3:1 against
    any colour of any scale, by one of their two lines."""
    page = backgrounds()[theme]
    from ui.room import poll                          # the class's answers: a bar per choice
    for c in [*SERIES, DIVERGING[0], DIVERGING[2], SEQUENTIAL[-1], MASK[1], poll.ANSWER, poll.RIGHT, poll.YOU,
              poll.OTHER]:
        assert contrast(c, page) >= 3, (theme, c, contrast(c, page))
    cells = [c for start, end in HALVES.values() for c in drawn(start, end, 41)] + [*MASK, colours.NO_NUMBER]
    for cell in cells:
        assert max(contrast(TEXT_DARK, cell), contrast("#ffffff", cell)) >= 3
        assert max(contrast(colours.MARKED, cell), contrast("#ffffff", cell)) >= 3


def test_the_explained_cells_outline_stands_out_on_any_cell_and_the_page_for_every_colour_vision():
    """The outline of the cell a page explains (its two strokes, read from a heatmap's spec, normal and presenter
    mode): for each colour vision simulated, one of the two at least 3:1 against any colour of any scale, a cell with
    no number and the page in both themes, and the two at least 3:1 apart (WCAG 1.4.11)."""
    from attention_core import Step, Trace
    from ui.charts import heatmap_spec
    trace = Trace(tokens=("a", "b", "c"))
    step = Step("weights", "Weights", np.full((3, 3), 1 / 3), ("n", "n"), "", scale="sequential")
    specs = [heatmap_spec(trace, step, big=big, explained=(1, 2))[0] for big in (False, True)]
    outline = lambda spec: [layer for layer in spec["layer"] if str(layer.get("name", "")).startswith("explained")]
    strokes = {tuple(layer["mark"]["stroke"] for layer in outline(spec)) for spec in specs}
    assert len(strokes) == 1 and len(next(iter(strokes))) == 2
    strokes = next(iter(strokes))
    under = [c for start, end in HALVES.values() for c in drawn(start, end, 41)] + [*MASK, colours.NO_NUMBER,
                                                                                   *backgrounds().values()]
    for vision in VISIONS:
        lum = lambda c: float(np.array([0.2126, 0.7152, 0.0722]) @ np.clip(MACHADO[vision] @ linear(hex_rgb(c)), 0, 1))
        ratio = lambda a, b: (max(lum(a), lum(b)) + 0.05) / (min(lum(a), lum(b)) + 0.05)
        assert ratio(*strokes) >= 3
        assert [c for c in under if max(ratio(s, c) for s in strokes) < 3] == [], vision


def test_series_are_told_apart_by_more_than_colour():
    """The first three series differ by ΔE00 ≥ 20 for every colour vision; beyond colour, the first four line series
    differ by their dash (line charts encode both from the same field)."""
    for vision in VISIONS:
        for a, b in itertools.combinations(SERIES[:3], 2):
            assert de2000(seen(a, vision), seen(b, vision)) >= 20, (vision, a, b)
    assert len({tuple(d) for d in DASHES[:4]}) == 4 and len(DASHES) == len(SERIES)


def test_line_charts_dash_their_series():
    from ui.charts import line_spec, training_curves_spec
    spec = line_spec([{"x": 1, "y": 2, "s": "a"}, {"x": 2, "y": 1, "s": "b"}], "x", "y", color="s")
    assert spec["encoding"]["strokeDash"]["field"] == spec["encoding"]["color"]["field"] == "s"
    assert spec["encoding"]["color"]["scale"]["range"] == SERIES
    curves = training_curves_spec([{"epoch": 0, "train loss": 1.0, "train accuracy": 0.5}])
    assert all(c["encoding"]["strokeDash"]["field"] == "set" for c in curves["hconcat"])


def test_no_chart_picks_its_own_palette():
    """Every series colour comes from ui/colours.py (checked above): no Vega scheme such as tableau10 (whose orange,
    teal, yellow and pink are under 3:1 on white) anywhere in the views."""
    offenders = [str(p.relative_to(ROOT)) for p in (ROOT / "ui").rglob("*.py")
                 if re.search(r"""scheme\s*[=:]\s*["']""", p.read_text())]
    assert offenders == []


def _svg_texts(spec, frame) -> list[str]:
    import vl_convert as vlc

    from ui.charts import standalone
    svg = vlc.vegalite_to_svg(standalone(spec, frame))
    return re.findall(r"<text[^>]*>([^<]*)</text>", svg)


def test_small_cells_say_sign_and_mask_without_colour():
    """Cells too small for their number still carry a glyph drawn by the browser: "−" on a clearly negative value, "×"
    on a masked (−∞) one, nothing on the rest; with room for numbers, the numbers say it (with their sign, −∞)."""
    from attention_core import Step, Trace
    from ui.charts import heatmap_spec
    value = np.full((12, 12), 0.5)
    value[np.triu_indices(12, 1)] = -np.inf                       # a causal mask
    value[5, 0], value[6, 0], value[7, 0] = -1.0, -0.01, 1.0
    trace = Trace(tokens=tuple(f"t{i}" for i in range(12)))
    step = Step("masked_scores", "Masked scores", value, ("n", "n"), "")
    spec, frame = heatmap_spec(trace, step, max_w=240)            # 20-px cells: no numbers
    texts = _svg_texts(spec, frame)
    assert texts.count("×") == 12 * 11 // 2
    assert texts.count("−") == 1                                  # −1.0 only: −0.01 is within 10% of the largest


def mark_colours(spec) -> list[str]:
    """Every hex colour a spec gives a mark (a mark's color/stroke/fill, a colour or stroke scale's range), leaving
    out marks drawn faint on purpose (opacity under 0.5: the loss chart's shaded phases, behind their labels)."""
    found = []

    def walk(node):
        if isinstance(node, list):
            for v in node:
                walk(v)
            return
        if not isinstance(node, dict):
            return
        mark = node.get("mark") if isinstance(node.get("mark"), dict) else {}
        if mark.get("opacity", 1) >= 0.5:
            found.extend(v for k, v in mark.items() if k in ("color", "stroke", "fill") and str(v).startswith("#"))
            for channel in ("color", "stroke", "fill"):
                enc = node.get("encoding", {}).get(channel, {})
                found.extend(c for c in enc.get("scale", {}).get("range", []) if str(c).startswith("#"))
        for k, v in node.items():
            if k not in ("data", "datasets"):
                walk(v)
    walk(spec)
    return found


def test_the_pages_charts_draw_marks_at_3_to_1():
    """The induction page's loss, scores and ablation charts and the block page's bars, built on small numbers: each
    colour they give a line, bar or point is at least 3:1 on the page (the normal and the presenter theme)."""
    from types import SimpleNamespace

    from ui.transformer.block_view import bars_spec
    from ui.transformer.induction_charts import ablation_spec, loss_spec, scores_spec
    steps = np.array([0, 100, 200])
    history = {"step": steps, "loss": np.array([3.4, 3.0, 1.0]), "copy_loss": np.array([3.5, 3.1, 0.9]),
               "prev": np.zeros((3, 2, 4)), "induction": np.zeros((3, 2, 4))}
    phases = SimpleNamespace(found=True, plateau=(0, 100), drop=(100, 200))
    specs = [loss_spec(history, phases, at=100), scores_spec(history), ablation_spec(np.ones((2, 4)), (1, 0), 0.9),
             bars_spec([{"t": "a", "v": 1.0, "g": "x"}], "t", "v", ["a"], "g", ["x", "y", "z"])]
    colours_used = [c for s in specs for c in mark_colours(s)]
    assert len(colours_used) >= 10
    for page in backgrounds().values():
        assert [c for c in colours_used if contrast(c, page) < 3] == []

"""The app's colours of data: the heatmaps' scales, the numbers written in cells, outlines and the series of line and
bar charts. tests/test_colors.py checks them: ordered and told apart under protanopia, deuteranopia and tritanopia
(Machado, Oliveira & Fernandes 2009), text at least 4.5:1, marks at least 3:1 against the page in the normal and
the presenter theme."""
from __future__ import annotations

# Colour scales that stay ordered under protanopia, deuteranopia and tritanopia (tests/test_colors.py simulates them
# with Machado, Oliveira & Fernandes 2009): signed values run blue - near white - burnt orange, centred at 0, both ends
# equally dark (a value's size is its darkness, its sign its hue, and the cell's number or a sign glyph says it too);
# weights run from near white to dark blue. Vega interpolates them in CIELAB.
DIVERGING = ["#1f5fa8", "#f7f7f7", "#a84a0a"]
SEQUENTIAL = ["#f7fbff", "#08306b"]
MASK = ["#d9d9d9", "#3b5bdb"]          # a mask's 0 and 1
NO_NUMBER = "#f0f0f0"                  # a cell with no finite number (−∞: masked, or "?": hidden); a glyph says which
# A cell's number is black on a light cell and white on a dark one, from these fractions of the scale's way from its
# middle (diverging) or its start (sequential): both give at least 4.5:1 there (tests/test_colors.py recomputes them).
DARK_FROM = {"negative": 0.835, "positive": 0.88, "sequential": 0.63}
TEXT_DARK, TEXT_LIGHT = "#000000", "#ffffff"
MARKED = "#4b2bb0"                     # the teacher's dashed outline of a cell hidden on the students' screens
# Lines and bars of several series: each at least 3:1 against the page's white (normal and presenter mode), the first
# three apart under every simulated colour vision; a line chart's series differ by their dash as well.
SERIES = ["#1f5fa8", "#a84a0a", "#212529", "#2b8a3e", "#862e9c", "#0b7285", "#c92a2a", "#946800"]
DASHES = [[1, 0], [6, 3], [2, 2], [8, 3, 2, 3], [1, 0], [6, 3], [2, 2], [8, 3, 2, 3]]


def over_cells(x: dict, y: dict, size: float, glyph_px: int, highlight, marked, dark_test: str, signed_bound,
               hidden: bool, infinite: bool, least_px: int) -> list[dict]:
    """A heatmap's layers over its cells that say what colour alone would (ui/charts.py's _build).

    Outlines seen on any cell's colour: black with a white line inside (highlighted), dark purple dashes on white
    (marked). Cells too small for their number (glyph_px: the font a glyph would get, 0 where numbers are written)
    get glyphs: "?" (hidden), "×" (−∞, masked) and, on a signed scale (signed_bound: the colour bar's end, else
    False), "−" on a value below −10% of it (a sign: positive ones go unmarked); none under least_px (presenter
    mode: 16 px), but a "?" down to 6 px."""
    layers, line = [], max(1.5, min(3.0, size / 8))
    for flag, cells, under, over in (
            ("h", highlight, {"stroke": TEXT_DARK}, {"stroke": "white", "strokeWidth": max(1.0, line / 3)}),
            ("m", marked, {"stroke": "white"}, {"stroke": MARKED, "strokeDash": [4, 3]})):
        if cells:
            layers += [{"transform": [{"filter": f"datum.{flag} == 1"}],
                        "mark": {"type": "rect", "filled": False, "strokeWidth": line, **part},
                        "encoding": {"x": x, "y": y}} for part in (under, over)]
    if glyph_px >= (6 if hidden else least_px) and (signed_bound or hidden or infinite):
        sign = f"datum.v < {-0.1 * signed_bound!r} ? '−' : ''" if signed_bound else "''"
        glyph = (("datum.q == 1 ? '?' : " if hidden else "")
                 + f"!isFinite(datum.v) ? (isNaN(datum.v) ? '' : '×') : {sign}")
        layers.append({"transform": [{"calculate": glyph, "as": "g"}, {"filter": "datum.g != ''"}],
                       "mark": {"type": "text", "fontSize": glyph_px, "fontWeight": "bold"},
                       "encoding": {"x": x, "y": y, "text": {"field": "g", "type": "nominal"},
                                    "color": {"condition": {"test": f"isFinite(datum.v) && {dark_test}",
                                                            "value": TEXT_LIGHT}, "value": TEXT_DARK}}})
    return layers


def explained_outline(x: dict, y: dict, cell: tuple[int, int], width: float, height: float, big: bool) -> list[dict]:
    """The explained cell's outline (ui/charts.py's heatmap_spec): black just inside its edge, white just outside.
    Two colours 21:1 apart, so one of them is at least 3:1 against any cell's fill and the page under every colour
    vision (tests/test_colors.py), and neither depends on the cell's number (a hidden one's "?" is outlined alike).
    Drawn as rectangle-shaped symbols centred on the cell, not rects: a test finds a heatmap's cells as its rects,
    and the outline's paths are not cells (named explained_inner / explained_outer, for the browser walk)."""
    line = max(2.0, min(4.0 if big else 3.0, min(width, height) / 10))
    layers = []
    for name, colour, grow in (("explained_outer", TEXT_LIGHT, line), ("explained_inner", TEXT_DARK, -line)):
        w, h = max(width + grow, 1.0), max(height + grow, 1.0)      # a symbol's path spans −1…1 across w px
        at = f"datum.i == {int(cell[0])} && datum.j == {int(cell[1])}"
        layers.append({"name": name, "transform": [{"filter": at}],
                       "mark": {"type": "point", "shape": f"M-1,-{h / w:.4g}H1V{h / w:.4g}H-1Z", "size": w * w,
                                "filled": False, "opacity": 1, "stroke": colour, "strokeWidth": line, "aria": False},
                       "encoding": {"x": x, "y": y}})
    return layers

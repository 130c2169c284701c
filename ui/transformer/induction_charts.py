"""The induction-heads page's charts (Vega-Lite dicts): the loss with its plateau and drop marked, each head's
scores over the steps, every head's attention pattern before and after training, the ablations' bars."""
from __future__ import annotations

import numpy as np

from ..chart_words import patterns_sentence
from ..colours import DASHES, SEQUENTIAL, SERIES

HEAD_COLORS = SERIES        # a head's colour; its layer is its dash (solid: layer 0, dashed: layer 1)
OTHER = "#868e96"           # the heads not picked in the ablation's bars: grey, 3.3:1 on white (a bar is a mark)


def head_label(layer: int, head: int) -> str:
    return f"layer {layer} head {head}"


def _pad(spec: dict, what: str = "") -> dict:
    """Padding that fits the card; `what` (the run it shows) goes into the spec's usermeta, so another run's
    chart is a new chart in the browser, not the old one with its data swapped (which left a facet grid's rows
    empty after a live run). The description is a screen reader's (ui/chart_words.py)."""
    spec["autosize"] = {"type": "pad", "contains": "padding"}
    if what:
        spec["usermeta"] = {"shows": what}
    return spec


def _digest(arrays) -> str:
    import hashlib
    h = hashlib.blake2b(digest_size=8)
    for a in arrays:
        h.update(np.ascontiguousarray(a, dtype=np.float64).tobytes())
    return h.hexdigest()


def _run_id(history: dict) -> str:
    return f"run: {len(history['step'])} records to step {int(history['step'][-1])} ({_digest([history['loss']])})"


def _bands(phases) -> list[dict]:
    return [{"from": phases.plateau[0], "to": phases.plateau[1], "phase": "plateau"},
            {"from": phases.drop[0], "to": phases.drop[1], "phase": "drop"}]


def _rule(at: int) -> dict:
    """A dashed vertical line at the step shown."""
    return {"data": {"values": [{"step": int(at)}]}, "mark": {"type": "rule", "strokeDash": [4, 3], "color": "#222"},
            "encoding": {"x": {"field": "step", "type": "quantitative"},
                         "tooltip": [{"field": "step", "title": "step shown"}]}}


def loss_spec(history: dict, phases=None, width: int = 460, height: int = 230, at: int | None = None,
              legend_columns: int | None = None) -> dict:
    """The training loss and the copy loss per logged step; the plateau (grey) and the drop (orange) shaded where
    `phases` (lessons.induction.phases) found them; a dashed line at the step shown (`at`). legend_columns: the
    legend's entries in that many columns (a phone's narrow chart), else side by side."""
    legend = ({"orient": "bottom", "columns": legend_columns} if legend_columns else
              {"orient": "bottom", "direction": "horizontal"})
    rows = [{"step": int(s), "nats": float(v), "curve": name} for name, key in (("training loss", "loss"),
                                                                             ("copy loss (repeated half)", "copy_loss"))
            for s, v in zip(history["step"], history[key]) if np.isfinite(v)]
    layers = []
    if phases is not None and phases.found:
        bands = _bands(phases)
        layers += [{"data": {"values": bands}, "mark": {"type": "rect", "opacity": 0.18},
                    "encoding": {"x": {"field": "from", "type": "quantitative"}, "x2": {"field": "to"},
                                 "color": {"field": "phase", "type": "nominal", "legend": None,
                                           "scale": {"domain": ["plateau", "drop"], "range": ["#7f7f7f", "#f28e2b"]}},
                                 "tooltip": [{"field": "phase"}, {"field": "from", "title": "from step"},
                                             {"field": "to", "title": "to step"}]}},
                   {"data": {"values": bands}, "mark": {"type": "text", "align": "left", "dx": 3, "dy": 8, "y": 0,
                                                        "fontSize": 11, "fontWeight": "bold"},
                    "encoding": {"x": {"field": "from", "type": "quantitative"}, "text": {"field": "phase"}}}]
    layers.append({"data": {"values": rows}, "mark": {"type": "line", "strokeWidth": 2},
                   "encoding": {"x": {"field": "step", "type": "quantitative", "title": "training step",
                                      "scale": {"nice": False}},
                                "y": {"field": "nats", "type": "quantitative", "title": "loss (nats)"},
                                "stroke": {"field": "curve", "type": "nominal", "title": None,
                                           "scale": {"range": SERIES[:2]}, "legend": legend},
                                "strokeDash": {"field": "curve", "type": "nominal", "title": None,
                                               "scale": {"range": DASHES[:2]}, "legend": legend},
                                "tooltip": [{"field": "curve"}, {"field": "step", "type": "quantitative"},
                                            {"field": "nats", "type": "quantitative", "format": ".3f"}]}})
    if at is not None:
        layers.append(_rule(at))
    return _pad({"$schema": "https://vega.github.io/schema/vega-lite/v5.json", "width": width, "height": height,
                 "title": "Loss per step", "layer": layers}, _run_id(history))


def strip_spec(steps, phases, at: int, height: int = 34) -> dict:
    """The step slider's strip, as wide as the slider: the run's logged steps as ticks, the plateau and the drop
    shaded and named, a triangle at the step shown."""
    steps = [int(s) for s in steps]
    scale = {"domain": [steps[0], steps[-1]], "nice": False, "zero": False}
    x = {"field": "step", "type": "quantitative", "scale": scale, "axis": None}
    layers = []
    if phases is not None and phases.found:
        layers += [{"data": {"values": _bands(phases)}, "mark": {"type": "rect", "opacity": 0.35},
                    "encoding": {"x": {"field": "from", "type": "quantitative", "scale": scale, "axis": None},
                                 "x2": {"field": "to"},
                                 "color": {"field": "phase", "type": "nominal", "legend": None,
                                           "scale": {"domain": ["plateau", "drop"], "range": ["#7f7f7f", "#f28e2b"]}},
                                 "tooltip": [{"field": "phase"}, {"field": "from", "title": "from step"},
                                             {"field": "to", "title": "to step"}]}},
                   {"data": {"values": _bands(phases)}, "mark": {"type": "text", "align": "left", "dx": 2, "y": 9,
                                                                 "fontSize": 12, "fontWeight": "bold"},
                    "encoding": {"x": {"field": "from", "type": "quantitative", "scale": scale, "axis": None},
                                 "text": {"field": "phase"}}}]
    layers += [{"data": {"values": [{"step": s} for s in steps]}, "mark": {"type": "tick", "thickness": 1,
                                                                          "color": "#555", "y": 20, "size": 6},
                "encoding": {"x": x}},
               {"data": {"values": [{"step": int(at)}]}, "mark": {"type": "point", "shape": "triangle-up", "size": 90,
                                                                  "filled": True, "color": "#1f5fa8", "y": 28},
                "encoding": {"x": x, "tooltip": [{"field": "step", "title": "step shown"}]}}]
    return _pad({"$schema": "https://vega.github.io/schema/vega-lite/v5.json", "width": "container",
                 "height": height, "layer": layers, "view": {"stroke": None},
                 "description": f"steps {steps[0]} to {steps[-1]}; the plateau and the drop shaded; step {at} shown"})


def kcomp_spec(history: dict, head: int, names: list[str], at: int | None = None, width: int = 460,
               height: int = 200) -> dict:
    """For layer 1's head `head`: how much each piece of the stream singles out key j + 1 (its share of the score
    there minus its mean share at the other keys, averaged over the second copy's queries), per logged step."""
    k = np.asarray(history["kcomp"])                                            # (m, piece, head)
    rows = [{"step": int(s), "piece": names[p], "by": round(float(k[r, p, head]), 3)}
            for r, s in enumerate(history["step"]) for p in range(k.shape[1])]
    layers = [{"data": {"values": rows}, "mark": {"type": "line", "strokeWidth": 1.8},
               "encoding": {"x": {"field": "step", "type": "quantitative", "title": "training step",
                                  "scale": {"nice": False}},
                            "y": {"field": "by", "type": "quantitative", "title": "singles out j + 1 by"},
                            "color": {"field": "piece", "type": "nominal", "title": None, "sort": names,
                                      "scale": {"range": HEAD_COLORS}, "legend": {"orient": "bottom", "columns": 4}},
                            "strokeDash": {"field": "piece", "type": "nominal", "title": None, "sort": names,
                                           "scale": {"range": DASHES}, "legend": {"orient": "bottom", "columns": 4}},
                            "tooltip": [{"field": "piece"}, {"field": "step", "type": "quantitative"},
                                        {"field": "by", "type": "quantitative", "format": "+.2f"}]}}]
    if at is not None:
        layers.append(_rule(at))
    return _pad({"$schema": "https://vega.github.io/schema/vega-lite/v5.json", "width": width, "height": height,
                 "title": f"Layer 1 head {head}: what singles out key j + 1, step by step", "layer": layers},
                _run_id(history) + f" kcomp {head} at {at}")


def scores_spec(history: dict, width: int = 250, height: int = 200, stacked: bool = False) -> dict:
    """Two panels: every head's previous-token score and induction score per logged step, side by side (or, stacked,
    one over the other with the legend in 1 column: a phone's)."""
    rows = [{"step": int(s), "score": float(history[key][k, l, h]), "head": head_label(l, h), "kind": title,
             "layer": f"layer {l}"}
            for key, title in (("prev", "previous-token score"), ("induction", "induction score"))
            for k, s in enumerate(history["step"]) for l in range(history[key].shape[1])
            for h in range(history[key].shape[2])]
    heads = sorted({r["head"] for r in rows})
    panel = lambda title: {"transform": [{"filter": {"field": "kind", "equal": title}}],
                           "mark": {"type": "line", "strokeWidth": 1.8}, "width": width, "height": height,
                           "title": title,
                           "encoding": {"x": {"field": "step", "type": "quantitative", "title": "training step",
                                              "scale": {"nice": False}},
                                        "y": {"field": "score", "type": "quantitative", "title": "score",
                                              "scale": {"domain": [0, 1]}},
                                        "color": {"field": "head", "type": "nominal", "title": None,
                                                  "scale": {"domain": heads, "range": HEAD_COLORS[: len(heads)]},
                                                  "legend": {"orient": "bottom", "columns": 1 if stacked else 4}},
                                        "strokeDash": {"field": "layer", "type": "nominal", "title": None,
                                                       "scale": {"range": DASHES[:2]},
                                                       "legend": {"orient": "bottom", "symbolStrokeWidth": 2.5}},
                                        "tooltip": [{"field": "head"}, {"field": "step", "type": "quantitative"},
                                                    {"field": "score", "type": "quantitative", "format": ".3f"}]}}
    return _pad({"$schema": "https://vega.github.io/schema/vega-lite/v5.json", "data": {"values": rows},
                 "vconcat" if stacked else "hconcat": [panel("previous-token score"), panel("induction score")],
                 "resolve": {"scale": {"color": "shared"}}}, _run_id(history))


def patterns_spec(named: list[tuple[str, np.ndarray]], tokens, size: int = 150) -> dict:
    """Small multiples: one heatmap per (stage, layer, head) of the weights A_h (query rows, key columns), only the
    keys a query sees (j ≤ i). named: [(stage title, patterns (layer, head, n, n))]."""
    rows, n = [], named[0][1].shape[-1]
    for order, (stage, a) in enumerate(named):
        n_layers, n_heads, n, _ = a.shape
        ii, jj = np.tril_indices(n)
        for l in range(n_layers):
            for h in range(n_heads):
                w = a[l, h, ii, jj]
                rows += [{"stage": f"{stage} · layer {l}", "order": order * n_layers + l, "head": f"head {h}",
                          "i": int(i), "j": int(j),
                          "q": f"{tokens[i]} ({i})", "k": f"{tokens[j]} ({j})", "A": round(float(v), 4)}
                         for i, j, v in zip(ii, jj, w)]
    axis = {"values": list(range(0, n, 10 if n > 15 else 2)), "labelFontSize": 10, "titleFontSize": 11,
            "labelAngle": 0}
    return _pad({"$schema": "https://vega.github.io/schema/vega-lite/v5.json", "data": {"values": rows},
                 "description": patterns_sentence(named),       # a screen reader's words for the grid
                 "facet": {"row": {"field": "stage", "type": "nominal", "title": None,
                                   "sort": {"field": "order", "op": "min"},
                                   "header": {"labelFontSize": 12, "labelAngle": 0, "labelAlign": "left",
                                              "labelAnchor": "start", "labelOrient": "top",
                                              "labelFontWeight": "bold", "labelLimit": 400}},
                           "column": {"field": "head", "type": "nominal", "title": None,
                                      "header": {"labelFontSize": 12}}},
                 "spacing": {"row": 8, "column": 12},
                 "spec": {"width": size, "height": size, "mark": {"type": "rect"},
                          "encoding": {"x": {"field": "j", "type": "ordinal", "title": "key position j",
                                             "axis": axis},
                                       "y": {"field": "i", "type": "ordinal", "title": "query position i",
                                             "axis": axis},
                                       "color": {"field": "A", "type": "quantitative", "title": "weight A",
                                                 "scale": {"domain": [0, 1], "range": SEQUENTIAL},
                                                 "legend": {"orient": "top", "direction": "horizontal",
                                                            "gradientLength": 160}},
                                       "tooltip": [{"field": "q", "title": "query"}, {"field": "k", "title": "key"},
                                                   {"field": "A", "title": "weight", "format": ".3f"}]}}},
                "patterns: " + " / ".join(stage for stage, _ in named) + f" ({_digest(a for _, a in named)})")


def ablation_spec(change: np.ndarray, chosen: tuple[int, int] | None, intact: float, width: int = 460,
                  height: int = 220) -> dict:
    """One bar per head: the copy loss with that head zeroed, minus the intact model's."""
    rows = [{"head": head_label(l, h), "change": float(change[l, h]),
             "picked": "picked" if chosen in (None, (l, h)) else "other"}
            for l in range(change.shape[0]) for h in range(change.shape[1])]
    return _pad({"$schema": "https://vega.github.io/schema/vega-lite/v5.json", "data": {"values": rows},
                 "width": width, "height": height,
                 "title": f"Copy loss with one head zeroed, minus the intact {intact:.3f} nats",
                 "layer": [{"mark": {"type": "bar"},
                            "encoding": {"x": {"field": "head", "type": "nominal", "sort": None, "title": None,
                                               "axis": {"labelAngle": -40, "labelOverlap": False}},
                                         "y": {"field": "change", "type": "quantitative",
                                               "title": "change in copy loss (nats)"},
                                         "color": {"field": "picked", "type": "nominal", "legend": None,
                                                   "scale": {"domain": ["picked", "other"],
                                                             "range": [SERIES[0], OTHER]}},
                                         "tooltip": [{"field": "head"},
                                                     {"field": "change", "type": "quantitative", "format": "+.3f"}]}},
                           {"mark": {"type": "text", "dy": -7, "fontSize": 11},
                            "encoding": {"x": {"field": "head", "type": "nominal", "sort": None},
                                         "y": {"field": "change", "type": "quantitative"},
                                         "text": {"field": "change", "type": "quantitative", "format": "+.2f"}}}]})


PHONE_FONT = 11             # px: the phone grid's smallest text, drawn at its natural size (no scaling down)


def phone_text(spec: dict) -> dict:
    """A phone's chart with every axis, legend and title text at least PHONE_FONT px (Vega's own are 10 px)."""
    at_least = {"labelFontSize": PHONE_FONT, "titleFontSize": PHONE_FONT}
    config = spec.get("config", {})
    return {**spec, "config": {**config, "axis": {**config.get("axis", {}), **at_least},
                               "legend": {**config.get("legend", {}), **at_least},
                               "title": {**config.get("title", {}), "fontSize": max(PHONE_FONT, 13)}}}


def phone_patterns_spec(spec: dict, size: int = 110, columns: int = 2) -> dict:
    """patterns_spec's grid for a phone's screen (ui/phone.py shows it below 640 px wide, the grid above): the same
    rows (the same list: converted once), one heatmap per (stage, layer, head) in a facet that wraps `columns` a row,
    each `size` px, every text at least PHONE_FONT px, so that nothing is scaled down to fit: 2 × (110 + the axis)
    fits a 390-px phone's column (358 px) at its natural size, and its tooltips point at the right cell."""
    inner = spec["spec"]
    enc = inner["encoding"]
    grow = lambda axis: {**axis, "labelFontSize": max(PHONE_FONT, axis.get("labelFontSize", 0)),
                         "titleFontSize": max(PHONE_FONT, axis.get("titleFontSize", 0))}
    encoding = {**enc, "x": {**enc["x"], "axis": grow(enc["x"]["axis"])},
                "y": {**enc["y"], "axis": grow(enc["y"]["axis"])},
                "color": {**enc["color"], "legend": {**enc["color"]["legend"], "labelFontSize": PHONE_FONT,
                                                     "titleFontSize": PHONE_FONT}}}
    stages = list(dict.fromkeys(r["stage"].rsplit(" · layer", 1)[0] for r in spec["data"]["values"]))
    one = len(stages) == 1          # one stage (as every caller has it): its name the title, "layer l · head h" each
    out = {k: v for k, v in spec.items() if k not in ("facet", "spacing", "spec")}
    if one:
        out["title"] = {"text": stages[0], "anchor": "start", "fontSize": 12}
    panel = "peek(split(datum.stage, ' · '))" if one else "datum.stage"
    out.update({"transform": [{"calculate": panel + " + ' · ' + datum.head", "as": "panel"},
                              {"calculate": "datum.order * 100 + toNumber(substring(datum.head, 5))", "as": "rank"}],
                "facet": {"field": "panel", "type": "nominal", "title": None, "sort": {"field": "rank", "op": "min"},
                          "header": {"labelFontSize": 12, "labelFontWeight": "bold", "labelLimit": 0}},
                "columns": columns, "spacing": {"row": 10, "column": 10},
                "resolve": {"axis": {"x": "independent"}},      # each head its key axis (scrolled past, not far)
                "spec": {**inner, "width": size, "height": size, "encoding": encoding}})
    return out

"""A page's own controls, its open tab and a clicked cell: kept for the session and carried in the link.

The sidebar's settings travel in the link as the Config's fields (ui/settings.py). A page's own
controls (the RoPE page's base, the KV cache page's step t, the online softmax's block size …) are
declared here, page by page, as `Own` entries: the widget's key, which is also the link's parameter
name ("kv_cache.t=6"), its default, and how to read it from a link. Then:

- `start(page)` (ui.page calls it before the page draws anything) keeps the value of every declared
  control that was drawn in the last run ("p.<key>", which outlives the widget when the learner
  visits another page) and gives each control of this page its kept value before it is drawn;
- the page draws the widget with `key=` the declared key and **no default of its own** (value=, index=,
  default=): the declared default is the one default;
- `params(page)` is the link's part for the page: every control that differs from its default, and
  the clicked cell; ui.page writes it to the address bar with the settings, and the Share page
  builds links with it;
- a link's values are read once per session (`from_query`, with the settings): a value that is not
  one the control can take falls back to the default with a notice, like a tampered setting; a whole
  number above a control's bound that means the same as the bound (top-k = 99 with 31 tokens: all kept)
  is brought down to the bound with a notice (`integer(..., clamp=...)`).

A clicked heatmap cell is one more parameter, `cell=<chart key>.<i>.<j>`: the views record the last
click (`click`) and give it back to the chart it belongs to when the page opens from a link (`restored`).
"""
from __future__ import annotations

import streamlit as st

from .own import Clamped, Own, choice, flag, integer, number, tab


# ---- the pages' own controls (page file -> its controls) ------------------------------------------------
# A control's key starts with the page's prefix ("rope.", "masks.", "kv_cache.", "online_softmax."), so a
# key says which page it belongs to. Keep each page's block on its own.

OWN: dict[str, tuple[Own, ...]] = {}


def declare(page_file: str, *controls: Own) -> None:
    OWN[page_file] = tuple(controls)


def controls_of(page_file: str) -> tuple[Own, ...]:
    return OWN.get(page_file, ())


def _all() -> dict[str, Own]:
    return {c.key: c for controls in OWN.values() for c in controls}


CELL = "cell"                               # the link's parameter for a clicked cell


# ---- reading a link ---------------------------------------------------------------------------------

def from_query(params: dict) -> list[str]:
    """Once per session (ui.settings.init_state): the link's own-control values and clicked cell into the
    session; returns the notices for values that could not be used."""
    notices = []
    for key, c in _all().items():
        raw = params.get(key)
        if raw is None:
            continue
        raw = raw[-1] if isinstance(raw, (list, tuple)) and raw else raw
        try:
            st.session_state[f"p.{key}"] = c.parse(str(raw))
        except Clamped as err:
            st.session_state[f"p.{key}"] = err.value
            notices.append(f"Link setting “{key}” ({c.what}) {err}, not {str(raw)[:40]!r}; using "
                           f"{c.shown(err.value)}: {err.why}.")
        except (ValueError, TypeError) as err:
            reason = f"{err}, not" if "must" in str(err) else "cannot be"
            notices.append(f"Link setting “{key}” ({c.what}) {reason} {str(raw)[:40]!r}; using the default "
                           f"({c.shown(c.default)}).")
    cell = params.get(CELL)
    if cell is not None:
        cell = cell[-1] if isinstance(cell, (list, tuple)) and cell else cell
        parsed = parse_cell(str(cell))
        if parsed is None:
            notices.append(f"Link setting “cell” must name a chart and a row and column, not {str(cell)[:40]!r}; "
                           "no cell is opened.")
        else:
            st.session_state["p.cell"] = (None, *parsed)      # its page: the first one the link opens
    return notices


def parse_cell(text: str) -> tuple[str, int, int] | None:
    """'hm:scores:0.2.3' -> ('hm:scores:0', 2, 3); None if it is not that shape."""
    chart, _, rest = text.rpartition(".")
    chart, _, row = chart.rpartition(".")
    try:
        i, j = int(row), int(rest)
    except ValueError:
        return None
    if not chart or i < 0 or j < 0 or len(chart) > 120:
        return None
    return chart, i, j


# ---- a page run -------------------------------------------------------------------------------------

def start(page_file: str) -> None:
    """Before the page draws: keep the last run's values of every declared control, give this page's
    controls their kept values (the widgets are then drawn without a default of their own)."""
    state = st.session_state
    # The first run on a page (a menu's link, a push): the state the browser sends for the page left behind is not
    # its last word (a widget drawn inside a lazy tab comes back at its default), so the kept values stand, and
    # this page's controls are drawn at theirs.
    arrived = state.get("s.page") != page_file
    for key, c in _all().items():
        if key in state:
            if not c.valid(state[key]):         # never kept, never in a link: back to the last good value
                state[key] = state.get(f"p.{key}", c.default)
            elif not arrived:
                state[f"p.{key}"] = state[key]
    for c in controls_of(page_file):
        if arrived or c.key not in state:
            state[c.key] = state.get(f"p.{c.key}", c.default)
    if state.get("s.page") != page_file:        # another page: the charts' selections start empty
        state["p.sel"] = {}
    cell = state.get("p.cell")
    if cell is not None and cell[0] is None:    # a link's cell: it belongs to the page the link opens
        state["p.cell"] = (page_file, *cell[1:])


def value(key: str):
    """A control's value in force: the widget's this run, else the kept one, else the default."""
    state = st.session_state
    if key in state:
        return state[key]
    return state.get(f"p.{key}", _all()[key].default)


def keep(key: str) -> None:
    """A declared control drawn inside a fragment: a fragment's run passes neither through start() nor ui.page, so
    keep its value now and write the link (a menu round trip, a copied address then have the pick)."""
    state = st.session_state
    if key in _all() and key in state and _all()[key].valid(state[key]) and state.get(f"p.{key}") != state[key]:
        state[f"p.{key}"] = state[key]
        sync()


def fit(key: str, lo, hi) -> None:
    """Before drawing a control whose bounds depend on the sentence: keep its value inside them."""
    v = value(key)
    if v is not None and not lo <= v <= hi:
        st.session_state[key] = min(max(v, lo), hi)


def params(page_file: str) -> dict[str, str]:
    """The link's part for a page: its controls that differ from their defaults, and its clicked cell."""
    out = {}
    state = st.session_state
    for c in controls_of(page_file):
        v = state[c.key] if c.key in state else state.get(f"p.{c.key}", c.default)
        if v != c.default and (text := c.link_text(v)) is not None:
            out[c.key] = text
    cell = state.get("p.cell")
    if cell is not None and cell[0] == page_file:
        _, chart, i, j = cell
        out[CELL] = f"{chart}.{i}.{j}"
    return out


def view_of(page_file: str) -> dict:
    """The view in force as a link's parameters: {"page": page_file, "query": the settings that differ from the
    defaults (ui.page keeps them in "s.query") and the page's own part (params)}. What the address bar holds,
    what a room's teacher shows the class (ui/room/bar.py) and what ui.settings.apply_view puts back."""
    return {"page": page_file, "query": {**st.session_state.get("s.query", {}), **params(page_file)}}


def put(page_file: str, query: dict) -> list[str]:
    """A view's own part into this session as a link puts it (ui.settings.apply_view): the page's controls
    the query names take its values, the others go back to their defaults; the cell is the query's or none.
    Each control's widget key is dropped so the widget is drawn at its new value. The notices of values that
    could not be used (the control keeps its default)."""
    state = st.session_state
    for c in controls_of(page_file):
        state[f"p.{c.key}"] = c.default
        state.pop(c.key, None)
    for chart in state.get("p.sel") or {}:      # the charts' own selections go too (a click of the old view)
        state.pop(chart, None)
    state["p.cell"] = None
    state["p.sel"] = {}
    own = {k: v for k, v in query.items() if k == CELL or any(c.key == k for c in controls_of(page_file))}
    state["p.put"] = page_file                  # the page opens as the view says (just_put), not as it was left
    return from_query(own)


def just_put(page_file: str) -> bool:
    """Whether this page run opens a view put into the session (a teacher's push, a lesson's stop): its controls
    are the view's, and a page that on arrival sets one of its own from where the learner came (the handout's
    "The handout of") must leave it. Asked once: the answer is forgotten."""
    state = st.session_state
    if state.get("p.put") != page_file:
        return False
    del state["p.put"]
    return True


def click(chart: str, cell: tuple[int, int] | None) -> None:
    """A chart's selection this run. When it changed, the learner clicked: a new cell is the one the
    link carries; a cleared selection of the chart that holds it forgets it."""
    state = st.session_state
    seen = state.setdefault("p.sel", {})
    if seen.get(chart) == cell:
        return
    seen[chart] = cell
    page = state.get("s.page")
    held = state.get("p.cell")
    if cell is not None:
        state["p.cell"] = (page, chart, *cell)
    elif held is not None and held[:2] == (page, chart):
        state["p.cell"] = None
    sync()


def restored(chart: str) -> tuple[int, int] | None:
    """The cell the link (or an earlier visit of this page) opened in this chart, while the chart itself
    has no selection."""
    state = st.session_state
    held = state.get("p.cell")
    if held is not None and held[:2] == (state.get("s.page"), chart) and state.get("p.sel", {}).get(chart) is None:
        return held[2], held[3]
    return None


def sync() -> None:
    """Write the address bar: the settings (ui.page keeps them in "s.query") and this page's own part.
    A click inside a fragment calls it too (the page's run, which writes it, does not happen then)."""
    query = {**st.session_state.get("s.query", {}), **params(st.session_state.get("s.page"))}
    if dict(st.query_params) != query:
        st.query_params.from_dict(query)


# ---- the pages' declarations (each page's block is its own; keys start with the page's prefix) ----------

# /scores: the saturation experiment's d_k and the four score functions' box (open or closed)
SCORES_DK = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)

# the forward pages with a word picker and the "One word" / "All words" tabs (ui.views.word_tabs)
WORD_TABS = ("One word", "All words")
for _page, _prefix in (("app_pages/3_qkv.py", "qkv"), ("app_pages/4_scores.py", "scores"),
                       ("app_pages/6_context.py", "context")):
    declare(_page, tab(f"{_prefix}.tab", WORD_TABS), integer("one_word", 1, 0, 127, "the word picked"),
            *((choice("demo_dk", 64, SCORES_DK, "the d_k of the experiment"),
               flag("scores.compare", what="the four score functions side by side")) if _prefix == "scores" else ()))

# /grid (the queries asked together are a list: not in a link)
GRID_TABS = ("(a) One query", "(b) Many queries", "(c) Learned K and V: cross-attention")
GRID_CELLS = (3, 4, 6, 8, 12)           # cells per side; each divides the 48-pixel image


def _grid_controls() -> tuple[Own, ...]:
    from attention_core import grid as g
    return (choice("grid.scene", next(iter(g.SCENES)), tuple(g.SCENES), "the scene"),
            choice("grid.query", next(iter(g.QUERIES)), tuple(g.QUERIES), "the query"),
            choice("grid.cells", 6, GRID_CELLS, "the grid's cells per side"),
            number("grid.sharpness", 10.0, 1.0, 30.0, "the query length"),
            tab("grid.tab", GRID_TABS),
            choice("grid.transforms", "hand", ("hand", "random"), "W_K and W_V"),
            integer("grid.seed", 0, 0, 2 ** 32 - 1, "the seed of the random transforms"),
            flag("grid.x", what="the box of the matrix X"))


declare("app_pages/22_grid.py", *_grid_controls())

# /pitfalls (the head shown kept inside the heads by page_state.fit)
def _pitfall_controls() -> tuple[Own, ...]:
    from attention_core.labs.pitfalls import PITFALLS
    return (choice("pitfall", PITFALLS[0].key, tuple(p.key for p in PITFALLS), "the mistake shown"),
            integer("pitfall_head", 0, 0, 15, "the head shown"))


declare("app_pages/30_pitfalls.py", *_pitfall_controls())

# /rope (the base is the sidebar's pe_base: no control here)
declare("app_pages/40_rope.py",
        flag("rope.half", what="the half pairing"),
        integer("rope.head", 0, 0, 15, "the head shown"),
        integer("rope.word", 0, 0, 127, "the word whose pair turns"),
        integer("rope.pair", 0, 0, 255, "the turning pair i"),
        integer("rope.p", 3, 0, 64, "the position p of the turning pair"),
        tab("rope.qk", ("Queries: Q → Q^R", "Keys: K → K^R")),
        integer("rope.offset", 100, 0, 1000, "the shift of the whole sentence"),
        flag("rope.shifted", what="the shifted scores, cell by cell"))

# /masks
declare("app_pages/41_masks.py",
        integer("masks.head", 0, 0, 15, "the head h shown"),
        flag("masks.sink_on", what="the sink"),
        number("masks.sink", 0.0, -30.0, 30.0, "the sink logit z_h"),
        tab("masks.compare", ("W or W + 1 keys", "Causal or window", "Causal or padding"), "the masks compared"))

# /kv_cache (H, H_kv, the window, RoPE/ALiBi, score and temperature are the sidebar's; t and P kept inside the
# sentence by page_state.fit)
KV_CACHE_TABS = ("Decoding, step by step", "Which heads share K and V", "Cache size calculator")


def _kv_cache_controls() -> tuple[Own, ...]:
    from attention_core.lessons.kv_cache import BYTES, CONTEXTS, PRESETS
    return (integer("kv_cache.t", 2, 0, 127, "the decoding step t"),
            integer("kv_cache.prefill", 2, 0, 128, "the prompt's length P"),
            tab("kv_cache.tab", KV_CACHE_TABS),
            choice("kv_cache.preset", next(iter(PRESETS)), tuple(PRESETS), "the calculator's model"),
            choice("kv_cache.tokens", 8192, CONTEXTS, "the calculator's context length"),
            choice("kv_cache.bytes", 2, tuple(BYTES), "the calculator's bytes per value"))


declare("app_pages/42_kv_cache.py", *_kv_cache_controls())

# /online_softmax
declare("app_pages/43_online_softmax.py",
        integer("online_softmax.block_size", 1, 1, 128, "the block size B_c"),
        integer("online_softmax.block", 1, 0, 127, "the key block b"),
        integer("online_softmax.head", 0, 0, 15, "the head h"))

# /block (the attention settings are the sidebar's; the block's own switches here, the layer shown kept inside L
# by page_state.fit)
BLOCK_TABS = ("Attention", "Norm", "MLP", "Residual adds")
declare("app_pages/50_block.py",
        integer("block.layers", 1, 1, 4, "the number of layers L"),
        choice("block.placement", "pre", ("pre", "post"), "where the norm goes"),
        choice("block.norm", "layer", ("layer", "rms"), "the norm"),
        flag("block.mlp", True, "the MLP"),
        integer("block.layer", 0, 0, 3, "the layer shown"),
        tab("block.tab", BLOCK_TABS, "the part of the layer shown"))

# /block_gradients (the sentence is the sidebar's; the learning rate, the block's choices, the gradient and the
# layer shown are the page's)
declare("app_pages/53_block_gradients.py",
        number("block_gradients.lr", 0.1, 0.0001, 10.0, "the learning rate η"),
        choice("block_gradients.placement", "pre", ("pre", "post"), "the norm's placement"),
        choice("block_gradients.norm", "layer", ("layer", "rms"), "the norm"),
        flag("block_gradients.mlp", False, "the MLP"),
        integer("block_gradients.step", 0, 0, 199, "the gradient shown"),
        integer("block_gradients.layer", 0, 0, 3, "the layer whose residual add is shown"))

# /next_token (the sentence is the sidebar's; T, top-k, top-p, the seed and the tokens generated are the page's;
# top-k at most the vocabulary: a link's larger k, which keeps every token as |V| does, is read as |V|)
def _next_token_controls() -> tuple[Own, ...]:
    from attention_core.training.lm.model import VOCAB
    return (number("next_token.temperature", 0.5, 0.0, 3.0, "the temperature T"),
            integer("next_token.k", 10, 0, VOCAB, "top-k",
                    clamp=f"top-k keeps every token once k reaches the vocabulary's {VOCAB}"),
            number("next_token.p", 0.9, 0.0, 1.0, "top-p"),
            integer("next_token.seed", 0, 0, 2 ** 31 - 1, "the sampling seed"),
            integer("next_token.n_new", 5, 0, 10, "the number of tokens generated"),
            flag("next_token.numbers", what="the box of every number of the next token"))


declare("app_pages/51_next_token.py", *_next_token_controls())

# /induction_heads (the training seed and steps go in the link; the run shown by its digest: "" the shipped run, else
# a run of this session or one a room keeps beside a pushed view, ui/transformer/induction_run.py)
def _run_digest(raw: str) -> str:
    raw = raw.strip().lower()
    if raw and not (len(raw) == 32 and all(ch in "0123456789abcdef" for ch in raw)):
        raise ValueError("must be a run's name: 32 hex digits")
    return raw


def _sentence(raw: str) -> str:
    from attention_core.math.limits import MAX_CHARS
    if len(raw) > MAX_CHARS:
        raise ValueError(f"must be at most {MAX_CHARS:,} characters")
    return raw


INDUCTION_SENTENCE = "the cat sat on the mat and the cat sat on the"
INDUCTION_TABS = ("Every head's pattern", "K-composition, with live numbers", "Ablate a head", "Your sentence")
INDUCTION_ABLATE = ("all", "0,0", "0,1", "0,2", "0,3", "1,0", "1,1", "1,2", "1,3")


def _induction_controls() -> tuple[Own, ...]:
    from attention_core.training.lm.train import STEPS        # the default run's steps: the box's and the shipped's

    return (integer("induction.seed", 0, 0, 9999, "the training seed"),
            integer("induction.steps", STEPS, 50, 10000, "the training steps"),
            integer("induction.at", STEPS, 0, 10000, "the step shown"),   # a logged step of the run (snapped to one)
            tab("induction.tab", INDUCTION_TABS))


declare("app_pages/52_induction_heads.py",
        *_induction_controls(),
        integer("induction.i", 30, 20, 39, "the query position i"),
        choice("induction.ablate", "all", INDUCTION_ABLATE, "the head zeroed"),
        Own("induction.run", "", _run_digest, str, "the run shown",
            show=lambda v: "the shipped run" if not v else f"run {v[:8]}…"),
        Own("induction.sentence", INDUCTION_SENTENCE, _sentence, str, "the sentence of “Your sentence”"))

# /handout (the page whose handout is drawn, by its URL path: "" is the Overview; the Classroom's pages have none)
from .nav import NO_HANDOUT, SECTIONS as _SECTIONS  # noqa: E402  (the navigation holds no page state: no circle)

declare("app_pages/62_handout.py",
        choice("handout.of", "", tuple(e[3] for section, pages in _SECTIONS if section not in NO_HANDOUT for e in pages),
               "the page the handout is of"))

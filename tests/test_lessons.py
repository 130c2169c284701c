"""The lessons that ship with the app and the Lessons page.

- the three shipped lessons read, with eight, six and five stops, and survive their JSON file and their link;
- every stop's view opens its page with no exception and no link notice, its settings and own controls in force;
- every poll a stop names is in the question bank and can be made on that stop's settings;
- each stop's poll, pinned by its poll_at, asks the stop's own question (its cell, row, head in both) and marks
  right the answer recomputed here from the stop's view (numpy, or by hand); each hide entry names a step the stop's
  page draws, its indices in range, and the numbers that answer the question are among the hidden ones;
- the teacher's notes quote the app's own numbers (recomputed here from the core);
- a bad file or link gives its message;
- the page: teach, save, load (a bad file keeps the lesson in progress), share, add the view you came from.
"""
from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest

from attention_core import Config, run_forward
from attention_core.labs.export import config_from_query
from classroom.lesson import (HERE, MAX_HIDE, MAX_STOPS, Lesson, LessonError, Stop, from_json, from_link, parse_hide,
                              shipped, to_json, to_link)
from tests.apptest_util import messages, no_exception, open_page
from ui import nav, page_state

PAGE = "app_pages/61_lessons.py"
LESSONS = shipped()
PAGES = {path: file for _, pages in nav.SECTIONS for file, _, _, path in pages}
STOPS = [(name, n, stop) for name, lesson in LESSONS.items() for n, stop in enumerate(lesson.stops)]


def minus(x: float, digits: int = 3) -> str:
    """-13.392 -> '−13.392', as the notes write a number."""
    return f"{x:.{digits}f}".replace("-", "−")


def trace_of(query: dict):
    config, notices = config_from_query(query)
    assert notices == []
    return config, run_forward(config)


# ---- the shipped lessons --------------------------------------------------------------------------------------

def test_three_lessons_ship_with_eight_six_and_five_stops():
    assert sorted(LESSONS) == ["forward_pass", "inside_a_transformer", "todays_attention"]
    assert LESSONS["forward_pass"].title == "The forward pass" and len(LESSONS["forward_pass"].stops) == 8
    assert LESSONS["todays_attention"].title == "Today's attention" and len(LESSONS["todays_attention"].stops) == 6
    forward_pages = [s.page for s in LESSONS["forward_pass"].stops]
    assert forward_pages == ["", "embeddings", "softmax", "qkv", "scores", "softmax", "context", "multi_head"]
    assert {s.page for s in LESSONS["todays_attention"].stops} == {"rope", "masks", "kv_cache", "online_softmax"}
    inside = LESSONS["inside_a_transformer"]
    assert inside.title == "Inside a transformer" and [s.page for s in inside.stops] == ["block"] + ["next_token"] * 4
    for _, _, stop in STOPS:
        assert stop.ask.endswith("?") and len(stop.note) > 100, stop.title
        assert not any(w in stop.ask + stop.note for w in (".py", "run_forward", "trace[", "_view")), stop.title


@pytest.mark.parametrize("name", sorted(LESSONS))
def test_a_lesson_survives_its_file_and_its_link(name):
    lesson = LESSONS[name]
    assert from_json(to_json(lesson)) == lesson
    assert from_link(to_link(lesson)) == lesson
    text = (HERE / f"{name}.json").read_text(encoding="utf-8")
    if hasattr(lesson, "check") or "check" not in json.loads(text):
        assert text == to_json(lesson)                                               # the file as the page saves it
    else:       # a pre/post check (the `own` branch reads it into Lesson.check): the rest as the page saves it
        assert {k: v for k, v in json.loads(text).items() if k != "check"} == json.loads(to_json(lesson))


@pytest.mark.parametrize("name, n, stop", STOPS, ids=[f"{name}-{n}" for name, n, _ in STOPS])
def test_every_stop_opens_its_view_with_no_notice(name, n, stop):
    config, notices = config_from_query(stop.query)
    assert notices == []
    page = PAGES[stop.page]
    at = open_page(page, query=stop.query)
    no_exception(at)
    assert at.session_state["s.url_notices"] == [], at.session_state["s.url_notices"]
    assert "Link setting" not in messages(at)
    for field in set(stop.query) & set(config.as_dict()):                   # the settings in force
        assert at.session_state[f"s.{field}"] == getattr(config, field), field
    own = {c.key: c for c in page_state.controls_of(page)}
    for key, raw in stop.query.items():                                      # the page's own controls, its tab
        if key in own:
            assert at.session_state[key] == own[key].parse(raw), key
    if "cell" in stop.query:                                                  # the highlighted cell, on this page
        chart, i, j = page_state.parse_cell(stop.query["cell"])
        assert at.session_state["p.cell"] == (page, chart, i, j)
        shown = messages(at) + "\n".join(m.value for m in at.markdown)          # its arithmetic, or its value
        assert f"\\[{i},{j}\\] was made" in shown or f"[{i}, {j}] = " in shown, "the cell is opened"


def test_every_poll_named_is_in_the_bank_and_made_on_its_stops_settings():
    from attention_core.labs.polls import POLL_KINDS, available, make_poll
    polled = [(stop, stop.poll) for _, _, stop in STOPS if stop.poll]
    assert len(polled) >= 7
    for stop, kind in polled:
        assert kind in POLL_KINDS, kind
        _, trace = trace_of(stop.query)
        assert kind in available(trace), (stop.title, kind)
        poll = make_poll(kind, trace, seed=0, at=stop.poll_at)
        assert poll is not None and poll.kind == kind and 0 <= poll.answer < len(poll.choices), (stop.title, kind)
    assert all(stop.poll for _, _, stop in STOPS)                            # every shipped stop polls its question


# ---- each stop's poll asks the stop's own question -----------------------------------------------------------------

def softmax_rows(s: np.ndarray) -> np.ndarray:
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def weights_by_hand(t, mask=None) -> np.ndarray:
    """A = softmax(Q Kᵀ / √d_k) from the trace's Q and K (one head), −∞ where the mask hides a key."""
    q, k = t["q"].value, t["k"].value
    s = q @ k.T / math.sqrt(q.shape[1])
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    return softmax_rows(s)


def rope_rows(x: np.ndarray, positions, base: float) -> np.ndarray:
    """RoPE by hand: pair (2i, 2i + 1) of row p turned by the angle p·base^(−2i/d)."""
    d = x.shape[1]
    angle = np.asarray(positions, float)[:, None] * base ** (-np.arange(0, d, 2) / d)[None]
    cos, sin = np.cos(angle), np.sin(angle)
    out = np.empty_like(x)
    out[:, 0::2] = x[:, 0::2] * cos - x[:, 1::2] * sin
    out[:, 1::2] = x[:, 0::2] * sin + x[:, 1::2] * cos
    return out


def normalised(text: str) -> str:
    """'Ŝ[0, 1]' and 'Ŝ[0,1]' alike, “I” and “i” alike: how the ask and the poll's prompt are compared."""
    return re.sub(r"\[\s*(\d+)\s*,\s*(\d+)\s*\]", r"[\1,\2]", text).casefold()


def answer_of(stop: Stop, config: Config, t) -> tuple[str, list[str], tuple | None]:
    """(the right choice recomputed here from the stop's view, the words the ask and the prompt both hold, the
    numbers that answer it: (step, None) for a whole step, (step, (head, i, j)) for one cell, None when this view
    does not draw them)."""
    from attention_core.labs.quiz.notation import num
    from attention_core.lessons.kv_cache import human
    from attention_core.math.embeddings import cosine_similarity
    at, labels = stop.poll_at, t.token_labels()
    if stop.poll == "shape" and at == {"step": "w_q"}:
        return f"{t['x'].shape[1]} × {config.n_heads * config.d_k}", ["w_q", "shape"], ("w_q", None)
    if stop.poll == "shape" and at == {"step": "q", "n": "10"}:
        assert t["q"].shape[0] == 4                                   # this view draws Q for 4 words, not 10
        return f"10 × {config.n_heads * config.d_k}", ["10 words", "shape", " q"], None
    if stop.poll == "similar":
        cos = cosine_similarity(t["x_embed"].value)
        np.fill_diagonal(cos, -2)
        i, j = np.unravel_index(cos.argmax(), cos.shape)
        i, j = sorted((int(i), int(j)))
        return f"“{labels[i]}” and “{labels[j]}”", ["most similar embeddings", "x_emb"], ("cosine_tokens", None)
    if stop.poll == "reorder":
        assert config.positional == "none" and config.mask == "none"
        a = weights_by_hand(t)
        earlier = run_forward(config.replace(sentence="I love you today"))
        assert num(a[2, 2]) == num(earlier["weights"].value[1, 1])       # what the ask quotes: the same weight
        return num(a[2, 2]), [f"a[1,1] = {num(a[2, 2])}", "a[2,2]", "“today you love i”", "“love”"], \
            ("weights", (None, 2, 2))
    if stop.poll == "scaled_score":
        i, j = int(at["row"]), int(at["col"])
        s = float(t["q"].value[i] @ t["k"].value[j])
        return num(s / math.sqrt(config.d_k)), [f"s[{i},{j}]", f"ŝ[{i},{j}]", f"d_k = {config.d_k}"], \
            ("scaled_scores", (None, i, j))
    if stop.poll == "masked_weight":
        i, j = int(at["row"]), int(at["col"])
        mask = np.tril(np.ones((t.n, t.n), bool))
        assert weights_by_hand(t, mask)[i, j] == 0.0
        return "0", [f"a[{i},{j}]", f"“{labels[i]}”", f"“{labels[j]}”"], ("weights", (None, i, j))
    if stop.poll == "closest_value":
        i = int(at["row"])
        a = weights_by_hand(t)
        c = a[i] @ t["v"].value
        j = int(np.linalg.norm(t["v"].value - c, axis=1).argmin())
        top = int(a[i].argmax())
        return f"v_{j} (“{labels[j]}”)", [f"row {i} of a", f"{a[i, top]:.3f}", f"“{labels[top]}”", f"c_{i}"], \
            ("context", (None, i, 0))
    if stop.poll == "which_head":
        i, j = int(at["row"]), int(at["col"])
        d, q, k = config.d_k, t["q"].value, t["k"].value
        col = [softmax_rows(q[:, h * d:(h + 1) * d] @ k[:, h * d:(h + 1) * d].T / math.sqrt(d))[i, j]
               for h in range(config.n_heads)]
        h = int(np.argmax(col))
        return f"head {h}", [f"a_h[{i},{j}]", f"“{labels[i]}”", f"“{labels[j]}”"], ("weights", (h, i, j))
    if stop.poll == "rope_shift":
        i, j, shift = int(at["row"]), int(at["col"]), int(at["shift"])
        d, base = config.d_k, config.pe_base
        moved = np.arange(t.n) + shift
        q, k = rope_rows(t["q"].value, moved, base), rope_rows(t["k"].value, moved, base)
        before = rope_rows(t["q"].value, np.arange(t.n), base)[i] @ rope_rows(t["k"].value, np.arange(t.n), base)[j]
        after = float(q[i] @ k[j]) / math.sqrt(d)
        assert num(after) == num(before / math.sqrt(d))
        return num(after), [f"ŝ[{i},{j}]", f"{shift} positions", num(before / math.sqrt(d)), f"“{labels[i]}”"], \
            ("scaled_scores", (None, i, j))         # section 5's shifted Ŝ (and the unshifted one, which the ask quotes)
    if stop.poll == "window_keys":
        i, w = int(at["row"]), config.window
        keys = list(range(max(0, i - w + 1), i + 1))
        return (f"keys {keys[0]} … {keys[-1]} ({', '.join(labels[k] for k in keys)})",
                [f"w = {w}", f"query i = {i}", f"“{labels[i]}”"], ("mask", (None, i, keys[0])))
    if stop.poll == "alibi_bias":
        h, i, j = int(at["head"]), int(at["row"]), int(at["col"])
        m = 2 ** (-8 * (h + 1) / config.n_heads)                        # docs/notation.md: m_h = 2^(−8(h+1)/H)
        return num(-m * abs(i - j)), [f"m_{h}", f"query {i}", f"key {j}", f"“{labels[i]}”"], ("alibi", (None, i, j))
    if stop.poll == "kv_head":
        assert at == {"model": "Llama 3 8B", "head": "13"}          # its published H = 32, H_kv = 8: g = 4
        return f"KV head {13 // (32 // 8)}", ["llama 3 8b", "h = 32", "h_kv = 8", "query head h = 13"], None
    if stop.poll == "kv_cache_size":
        assert at == {"model": "Llama 3 8B", "tokens": "8192", "bytes": "2"}
        from attention_core.lessons.kv_cache import PRESETS
        row = list(PRESETS).index(at["model"])                        # the presets table's row, "at 8,192 tokens"
        return human(2 * 32 * 8 * 128 * 8192 * 2), ["llama 3 8b", "32 layers", "128", "8,192", "2 bytes"], \
            ("cache_bytes", (None, row, 1))
    if stop.poll == "online_max":
        size, b, i = int(at["block_size"]), int(at["block"]), int(at["row"])
        s = t["q"].value @ t["k"].value.T / math.sqrt(config.d_k)
        seen = s[i, :(b + 1) * size]
        return num(seen.max()), [f"b_c = {size}", f"m_{i}", f"block {b}", num(s[i, b * size:(b + 1) * size].max())], \
            ("m", (None, i, 0))
    if stop.poll == "residual_add":                                   # the block page's defaults: pre-norm, one layer
        from tests.test_transformer_polls import block_by_hand
        assert not {"block.layers", "block.placement", "block.norm", "block.mlp"} & set(stop.query)
        i, j = int(at["row"]), int(at["col"])
        x, o = block_by_hand(t)
        return num(x[i, j] + o[i, j]), [f"x₀[{i},{j}] = {num(x[i, j])}", f"o₀[{i},{j}] = {num(o[i, j])}",
                                        f"x₀′[{i},{j}]", f"“{labels[i]}”", "pre-norm"], ("l0.mid", (None, i, j))
    if stop.poll in ("temperature_prob", "top_k_prob", "copy_head"):
        from tests.test_transformer_polls import lm_by_hand, softmax
        ids, words, z, (a0, a1) = lm_by_hand(config.sentence)
        p = softmax(z)
        if stop.poll == "temperature_prob":                           # the page shows the asked T (p: top-k aside)
            T = at["temperature"]
            assert stop.query["next_token.temperature"] == T
            j = int(np.argmax(z))
            return num(softmax(z / float(T))[j]), [f"t = {T}", f"“{words[j]}”", num(p[j]), f"z = {num(z[j])}"], \
                ("probs", None)
        if stop.poll == "top_k_prob":                                 # the page shows the asked k and T, top-p off
            k, T = int(at["k"]), at.get("temperature", "1")
            assert (stop.query["next_token.temperature"], stop.query["next_token.k"], stop.query["next_token.p"]) \
                == (T, at["k"], "1")
            p = softmax(z / float(T))
            top = np.argsort(-p)[:k]
            return num(p[top[0]] / p[top].sum()), [f"top-k = {k}"] + [f"“{words[j]}” {num(p[j])}" for j in top], \
                ("renormalised", None)
        n = len(ids)
        if at["role"] == "previous":
            previous = [np.mean([a0[h, i, i - 1] for i in range(1, n)]) for h in range(a0.shape[0])]
            return f"head {int(np.argmax(previous))}", ["layer 0", "previous-token head", "token just before"], \
                ("previous", None)
        targets = [j for j in range(1, n - 1) if ids[j - 1] == ids[-1]]
        on_targets = [a1[h, -1, targets].sum() for h in range(a1.shape[0])]
        return f"head {int(np.argmax(on_targets))}", ["layer 1", "induction head", f"positions {targets[0]}"] + \
            [f"“{words[ids[j]]}”" for j in targets], ("heads", None)
    raise AssertionError(f"no independent answer for {stop.title}'s {stop.poll}")


def page_traces(stop: Stop, config: Config, t) -> list:
    """The traces the stop's page draws from: the forward pass, and the page's own (the masks page's head, the KV
    cache page's decoding, the online softmax's block, the embeddings page's cosines), made as the pages make them."""
    from attention_core.math.embeddings import cosine_similarity
    out = [t]
    if stop.page == "embeddings":
        t.view("cosine_tokens", "Cosine similarity of embeddings", lambda: cosine_similarity(t["x_embed"].value),
               ("n", "n"))
    if stop.page == "masks":
        from attention_core.lessons.masks import masks_trace
        out.append(masks_trace(config, int(stop.query.get("masks.head", 0)), None, t))
    if stop.page == "kv_cache":
        from attention_core.lessons import kv_cache as kv
        defaults = {c.key: c.default for c in page_state.controls_of("app_pages/42_kv_cache.py")}
        out.append(kv.kv_cache_trace(config, min(int(defaults["kv_cache.prefill"]), t.n), int(defaults["kv_cache.t"])))
        own = {**defaults, **stop.query}                                  # the calculator's presets, as its tab draws them
        out.append(kv.calculator_trace(int(own["kv_cache.bytes"]), int(own["kv_cache.tokens"])))
    if stop.page == "online_softmax":
        from attention_core.lessons.online_softmax import online_softmax_trace
        q = stop.query
        out.append(online_softmax_trace(config, int(q["online_softmax.block_size"]), int(q["online_softmax.block"]), 0,
                                        forward=t))
    if stop.page == "block":
        from attention_core.forward.transformer import Arch, sidebar_block
        out.append(sidebar_block(config, Arch(), t))
    if stop.page == "next_token":                                         # the page's trace at its controls
        from attention_core.forward.trace import Trace
        from attention_core.lessons.next_token import next_token_trace
        own = {**{c.key: c.default for c in page_state.controls_of("app_pages/51_next_token.py")}, **stop.query}
        lm = next_token_trace(config.sentence, float(own["next_token.temperature"]), int(own["next_token.k"]),
                              float(own["next_token.p"]), int(own["next_token.seed"]), int(own["next_token.n_new"]))
        out.append(lm)
        words = Trace(tokens=lm.tokens)                                   # what the page writes in words: layer 0's
        words.add("previous", "Each layer-0 head's mean weight on the token before", np.array([lm.facts["previous"]]),
                  ("row", "h"), r"\tfrac{1}{n-1} \textstyle\sum_i A_{h,i,i-1}")   # previous-token scores
        out.append(words)
    return out


def step_in(traces, key: str):
    """The step a hide name names: a step of one of the traces, or a view the page derived ("view:" + its name)."""
    for tr in traces:
        if key in tr:
            return tr[key]
        if f"view:{key}" in tr.views:
            return tr.views[f"view:{key}"]
    return None


@pytest.mark.parametrize("name, n, stop", STOPS, ids=[f"{name}-{n}" for name, n, _ in STOPS])
def test_each_stops_poll_asks_its_question_and_marks_the_recomputed_answer_right(name, n, stop):
    from attention_core.labs.polls import PINS, make_poll
    config, t = trace_of(stop.query)
    assert stop.poll and stop.poll_at and set(stop.poll_at) <= set(PINS[stop.poll]), stop.title
    poll = make_poll(stop.poll, t, seed=0, at=stop.poll_at)
    assert poll is not None and poll.kind == stop.poll, stop.title                       # (a) it exists
    right, words, answers = answer_of(stop, config, t)
    prompt, ask = normalised(poll.prompt), normalised(stop.ask)
    for w in words:                                                                       # (b) the same question
        assert w.casefold() in prompt and w.casefold() in ask, (stop.title, w, poll.prompt, stop.ask)
    assert poll.choices[poll.answer] == right, (stop.title, poll.choices, right)          # (c) the answer
    assert poll.choices.count(right) == 1
    for seed in (1, 2):                                                                   # the seed moves the place only
        other = make_poll(stop.poll, t, seed=seed, at=stop.poll_at)
        assert other.prompt == poll.prompt and other.choices[other.answer] == right
    traces = page_traces(stop, config, t)                                                 # (d) what it hides
    for entry in stop.hide:
        parsed = parse_hide(entry)
        assert parsed is not None, entry
        step = step_in(traces, parsed[0])
        assert step is not None, (stop.title, entry)
        if parsed[1] is not None:
            head, i, j = parsed[1]
            shape = step.value.shape
            assert (head is None) == (len(shape) == 2) and (head is None or head < shape[0]), entry
            assert i < shape[-2] and j < shape[-1], entry
    if answers is None:                      # this view does not draw the answer (it is a change of the view)
        return
    key, cell = answers
    assert step_in(traces, key) is not None, (stop.title, key)
    assert key in stop.hide or (cell is not None and f"{key}:{cell[0]}.{cell[1]}.{cell[2]}" in stop.hide), \
        (stop.title, key, cell, stop.hide)


NUMBER_ANSWERS = ("shape", "scaled_score", "reorder", "rope_shift", "alibi_bias", "online_max", "kv_cache_size",
                  "residual_add", "temperature_prob", "top_k_prob")


@pytest.mark.parametrize("name, n, stop", [s for s in STOPS if s[2].poll in NUMBER_ANSWERS],
                         ids=[f"{name}-{n}" for name, n, s in STOPS if s.poll in NUMBER_ANSWERS])
def test_a_stops_page_does_not_print_its_answer_in_words(name, n, stop):
    """The stop as it arrives (its view without the opened cell): the answer's number or shape is in none of the
    page's words (Markdown, captions, messages), which no hidden cell could cover (the KV cache calculator printed
    the answer of its stop: it now opens on another model)."""
    from attention_core.labs.polls import make_poll
    query = {k: v for k, v in stop.query.items() if k != "cell"}
    _, t = trace_of(query)
    poll = make_poll(stop.poll, t, seed=0, at=stop.poll_at)
    answer = poll.choices[poll.answer]
    at = open_page(PAGES[stop.page], query=query)
    no_exception(at)
    words = "\n".join([m.value for m in at.markdown] + [m.value for m in at.caption]
                      + [m.value for m in list(at.info) + list(at.warning) + list(at.error) + list(at.success)])
    words = words.replace("\\", "")
    assert not re.search(rf"(?<![\d.]){re.escape(answer)}", words), (stop.title, answer)    # −13.39 in −13.392 too


def test_the_stops_whose_answer_this_view_cannot_hide_say_so_in_the_note():
    """RoPE's section 5 waits for the reveal on the students' screens: the note tells the teacher; a view that does
    not draw the answer (a change of the view reveals it) hides nothing."""
    for _, _, stop in STOPS:
        config, t = trace_of(stop.query)
        if answer_of(stop, config, t)[2] is None:
            assert stop.hide == (), stop.title
    assert "section 5 and the sentences saying that only the distance counts wait for the reveal" in \
        note("todays_attention", 0)
    assert "to reveal" in note("forward_pass", 3)


# ---- the notes quote the app's numbers -------------------------------------------------------------------------

def note(lesson: str, n: int) -> str:
    stop = LESSONS[lesson].stops[n]
    return stop.ask + " " + stop.note


def test_the_forward_pass_notes_quote_its_numbers():
    from attention_core.math.embeddings import cosine_similarity
    _, t = trace_of({})
    assert t["weights"].shape == (4, 4) and "4 × 4" in note("forward_pass", 0)
    assert t["x"].shape == (4, 50) and t["q"].shape == (4, 4) and t["w_q"].shape == (50, 4)
    assert "4 × 50" in note("forward_pass", 0) and "50 × 4" in note("forward_pass", 0)
    _, ten = trace_of({"sentence": "I love you today I love you today I love"})
    assert ten["x"].shape == (10, 50) and ten["q"].shape == (10, 4) and ten["w_q"].shape == (50, 4)
    assert "10 × 4" in note("forward_pass", 3) and "10 × 50" in note("forward_pass", 3)
    cos = cosine_similarity(t["x_embed"].value)
    np.fill_diagonal(cos, -1)
    assert np.unravel_index(cos.argmax(), cos.shape) == (0, 2)                      # “i” and “you”
    for value in (cos[0, 2], cos[1, 2], cos[1, 3]):
        assert f"{value:.3f}" in note("forward_pass", 1)
    assert cos[1, 3] == cos[cos > -1].min()
    # without positions the weights move with their words; with the sinusoidal encoding they do not
    _, plain = trace_of({"positional": "none"})
    _, shuffled = trace_of({"positional": "none", "sentence": "today you love I"})
    assert shuffled.tokens == ("today", "you", "love", "i")
    np.testing.assert_allclose(shuffled["weights"].value, plain["weights"].value[::-1, ::-1], atol=1e-12)
    assert f"{plain['weights'].value[1, 1]:.4f}" in note("forward_pass", 2)
    _, moved = trace_of({"sentence": "today you love I"})
    for value in (t["weights"].value[1, 1], moved["weights"].value[2, 2]):
        assert f"{value:.3f}" in note("forward_pass", 2)
    assert t["w_q"].shape == (50, 4) and "50 × 4" in note("forward_pass", 3)
    s, scaled = t["scores"].value[0, 1], t["scaled_scores"].value[0, 1]
    assert scaled == pytest.approx(s / 2) and minus(s) in note("forward_pass", 4) and minus(scaled) in note("forward_pass", 4)
    assert minus(s / 4) in note("forward_pass", 4)                                  # the slip: ÷ d_k
    _, causal = trace_of({"mask": "causal"})
    a = causal["weights"].value
    assert a[1, 3] == 0.0 and a[0, 0] == 1.0
    assert f"{a[3, 1]:.3f}" in note("forward_pass", 5) and f"{a[3, 3]:.3f}" in note("forward_pass", 5)
    np.testing.assert_allclose(a[3], t["weights"].value[3])                          # the last row: as without the mask
    assert f"{t['weights'].value[0, 1]:.3f}" in note("forward_pass", 6)
    c0, v1 = t["context"].value[0], t["v"].value[1]
    assert ", ".join(minus(x) for x in c0) in note("forward_pass", 6)
    assert ", ".join(minus(x) for x in v1) in note("forward_pass", 6)
    assert np.linalg.norm(t["v"].value - c0, axis=1).argmin() == 1
    _, three = trace_of({"n_heads": "3"})
    assert three["q"].shape == (4, 12) and three["q_heads"].shape == (3, 4, 4) and three["w_o"].shape == (12, 50)
    w = three["weights"].value
    assert [int(w[h, 0].argmax()) for h in range(3)] == [1, 1, 3]
    for value in (w[0, 0, 1], w[1, 0, 1], w[1, 0, 0], w[2, 0, 3]):
        assert f"{value:.3f}" in note("forward_pass", 7)


def test_todays_attention_notes_quote_its_numbers():
    from attention_core.lessons.kv_cache import PRESETS, bytes_per_token, cache_bytes
    from attention_core.lessons.online_softmax import online_softmax_trace
    from attention_core.lessons.rope import shift_check
    _, rope = trace_of({"positional": "rope"})
    check = shift_check(rope, 0, "interleaved", 100)
    assert check["rope"] < 1e-14 and f"{check['rope']:.1e}" in note("todays_attention", 0)
    assert f"{check['rot']:.2f}" in note("todays_attention", 0) and f"{check['added']:.2f}" in note("todays_attention", 0)
    _, window = trace_of({"mask": "sliding_window", "window": "2"})
    assert np.flatnonzero(window["mask"].value[3]).tolist() == [2, 3] and np.flatnonzero(window["mask"].value[0]).tolist() == [0]
    a = window["weights"].value
    assert f"{a[3, 3]:.5f}" in note("todays_attention", 1) and a[3, 2] + a[3, 3] == pytest.approx(1.0)
    _, alibi = trace_of({"positional": "alibi", "n_heads": "4", "mask": "causal"})
    bias = alibi["alibi"].value
    assert bias[0, 3, 0] == -0.75 and minus(bias[3, 3, 0], 4) in note("todays_attention", 2)
    _, gqa = trace_of({"n_heads": "4", "n_kv_heads": "2", "kv_cache.tab": "1"})
    assert gqa["q"].shape == (4, 16) and gqa["k"].shape == gqa["v"].shape == (4, 8) and 3 // (4 // 2) == 1
    assert (PRESETS["Llama 3 8B"].n_heads, PRESETS["Llama 3 8B"].n_kv_heads) == (32, 8) and 13 // 4 == 3
    assert "⌊13 / 4⌋ = 3" in note("todays_attention", 3) and "4 × 16" in note("todays_attention", 3)
    llama = PRESETS["Llama 3 8B"]
    assert bytes_per_token(llama) == 2 * 32 * 8 * 128 * 2 == 131_072 and "131,072" in note("todays_attention", 4)
    big = PRESETS["Llama 3 70B"]                                   # what the stop's calculator shows instead
    assert (big.layers, big.n_kv_heads, big.d_head) == (80, 8, 128) and bytes_per_token(big) == 320 * 1024
    assert cache_bytes(big, 8192) == 2.5 * 2 ** 30 and "320 KiB per token, 2.5 GiB" in note("todays_attention", 4)
    assert cache_bytes(llama, 8192) == 2 ** 30 and cache_bytes(llama, 8192, mha=True) == 4 * 2 ** 30
    o = online_softmax_trace(Config(), 1, 1)
    m_prev, m, rescale = o["m_prev"].value[0], o["m"].value[0], o["rescale"].value[0]
    text = note("todays_attention", 5)
    assert minus(m_prev) in text and minus(m) in text and f"{rescale:.1e}".replace("e-06", "e-6") in text
    assert o.facts["max_diff"] < 1e-14 and "below 1e-14" in text
    three = online_softmax_trace(Config(), 1, 3)                 # the stop's block: key 3 does not raise m_0
    assert three["m_prev"].value[0] == three["m"].value[0] == m and three["rescale"].value[0] == 1.0
    assert minus(three["s_b"].value[0, 0]) in text and f"{three['l_prev'].value[0]:.7f}" in text
    assert f"{three['l'].value[0]:.7f}" in text
    assert f"{three['s_b'].value[0, 0]:.3f}".replace("-", "−") in text
    _, rope = trace_of({"positional": "rope"})
    from attention_core.lessons.rope import rope_lesson
    assert f"{rope_lesson(rope, 0)['scaled_scores'].value[3, 1]:.2f}".replace("-", "−") in note("todays_attention", 0)


def test_inside_a_transformers_notes_quote_its_numbers():
    from attention_core.forward.transformer import Arch, sidebar_block
    from tests.test_transformer_polls import ln, lm_by_hand, softmax
    config, t = trace_of(LESSONS["inside_a_transformer"].stops[0].query)
    block = sidebar_block(config, Arch(), t)
    x, o, n0 = block["x"].value[5, 0], block["l0.attn"].value[5, 0], block["l0.ln1"].value[5, 0]
    post = ln(block["x"].value + block["l0.attn"].value)[5, 0]
    assert block["l0.mid"].value[5, 0] == pytest.approx(x + o)
    text = note("inside_a_transformer", 0)
    for value in (x, o, x + o, n0 + o, post, n0):                                  # 4 significant digits, as shown
        assert f"{value:.4g}".replace("-", "−") in text, value
    assert "X₁ = X₀′ + the MLP's output" in text and block["l0.out"].inputs == ("l0.mid", "l0.mlp")
    ids, words, z, (a0, a1) = lm_by_hand(config.sentence)
    p = softmax(z)
    top = np.argsort(-p)[:3]
    assert [words[j] for j in top] == ["mat", "cat", "the"]
    text = note("inside_a_transformer", 1)
    for value in (softmax(z / 0.5)[top[0]], p[top[0]], p[top[0]] / 0.5, softmax(z * 0.5)[top[0]]):
        assert f"{value:.4g}" in text, value
    assert softmax(z * 0.5)[top[0]] == pytest.approx(softmax(z / 2)[top[0]])       # “that is T = 2's answer”
    assert f"1/31 = {1 / 31:.3f}" in text and len(p) == 31
    text = note("inside_a_transformer", 2)
    half = softmax(z / 0.5)                                                          # the stop's T = 0.5
    assert [words[j] for j in np.argsort(-half)[:3]] == ["mat", "cat", "the"]
    for value in (*half[top], half[top].sum(), half[top[0]] / half[top].sum(), 1 / 3, 3 * half[top[0]]):
        assert f"{value:.4g}" in text, value
    assert f"The other {31 - 3} tokens" in text
    n = len(ids)
    previous = [np.mean([a0[h, i, i - 1] for i in range(1, n)]) for h in range(4)]
    assert ", ".join(f"{v:.2f}" for v in previous[1:]) in note("inside_a_transformer", 3)
    assert f"on average {previous[0]:.2f}" in note("inside_a_transformer", 3)
    targets = [j for j in range(1, n - 1) if ids[j - 1] == ids[-1]]
    last = a1[:, -1]
    on = [last[h, targets].sum() for h in range(4)]
    text = note("inside_a_transformer", 4)
    assert f"Head 2: {on[2]:.2f}" in text and f"(head 3 {on[3]:.2f}, head 0 {on[0]:.2f}, head 1 {on[1]:.2f})" in text
    assert f"5 (“mat”, {last[2, 5]:.2f})" in text and f"8 (“cat”, {last[2, 8]:.2f})" in text
    assert f"({last[3, 5]:.2f} on “mat”)" in text and f"({last[1, 0]:.2f}) on position 0" in text
    assert int(last[3].argmax()) == 5 and int(last[1].argmax()) == 0


def test_inside_a_transformers_notes_quote_each_choice_as_the_students_see_it():
    """A number the teacher's note expects (“Expect −0.527”) is the one on the students' screens: each choice of a
    stop's numeric poll appears in its ask or note exactly as shown (stop 0 quoted −0.754 and −0.527 for the
    choices −0.7539 and −0.5268)."""
    from attention_core.labs.polls import make_poll
    lesson = LESSONS["inside_a_transformer"]
    for n, stop in enumerate(lesson.stops):
        if stop.poll == "copy_head":
            continue
        _, t = trace_of(stop.query)
        poll = make_poll(stop.poll, t, seed=0, at=stop.poll_at)
        for choice in poll.choices:
            assert re.search(rf"(?<![\d.]){re.escape(choice)}(?![\d])", note("inside_a_transformer", n)), (n, choice)


def test_inside_a_transformers_notes_say_what_the_page_does():
    """Stop 0: section 3's bars are sizes ‖row‖, drawn before the reveal too (they do not wait). Stop 2: moving
    top-p while top-k = 3 is on only trims those 3 (top-p acts after top-k), so the note turns top-k off first;
    its counts are the page's."""
    from attention_core.lessons.next_token import next_token_trace
    from ui.transformer import block_view
    import inspect
    text = note("inside_a_transformer", 0)
    assert "After the reveal, section 3" not in text and "‖row‖" in text
    assert "room_hide" not in inspect.getsource(block_view.stream_sizes)        # the bars never wait
    text = note("inside_a_transformer", 2)
    query = LESSONS["inside_a_transformer"].stops[2].query
    sentence, T = query["sentence"], float(query["next_token.temperature"])
    kept = lambda k, p_top: int(next_token_trace(sentence, T, k, p_top, 1, 0)["kept"].value.sum())
    assert kept(3, 0.5) == 2 and kept(0, 0.5) == 11
    p = np.sort(next_token_trace(sentence, T, 0, 1.0, 1, 0)["probs"].value)[::-1]
    assert int(np.searchsorted(np.cumsum(p), 0.5) + 1) == 11                      # by hand: the fewest reaching 0.5
    assert "set top-k to 0" in text and "top-p = 0.5 keeps 11 of the 31" in text and "top-p = 0.5 keeps 2" in text


def test_the_pre_post_checks_questions_are_asked_on_their_settings():
    """A lesson's pre/post check ("check" in its file; the Lesson reads it once the `own` branch lands): each
    question of the bank is made on its view's settings, pinned as a stop's is, and asks another question than the
    lesson's stops; each of the teacher's own has 2–6 distinct choices and the index of the right one."""
    from attention_core.labs.polls import PINS, POLL_KINDS, make_poll
    checks = {name: json.loads((HERE / f"{name}.json").read_text(encoding="utf-8")).get("check")
              for name in LESSONS}
    assert checks["inside_a_transformer"]
    for name, check in checks.items():
        stops = {make_poll(s.poll, trace_of(s.query)[1], 0, at=s.poll_at).prompt for s in LESSONS[name].stops}
        for q in check or ():
            if "poll" in q:
                assert q["page"] in {s.page for s in LESSONS[name].stops} and q["poll"] in POLL_KINDS
                assert set(q["poll_at"]) <= set(PINS[q["poll"]])
                _, t = trace_of(q["query"])
                poll = make_poll(q["poll"], t, 0, at=q["poll_at"])
                assert poll is not None and poll.prompt not in stops, q
                if q["poll"] == "temperature_prob":                     # the view shows the asked T
                    assert q["query"]["next_token.temperature"] == q["poll_at"]["temperature"]
            else:
                assert set(q) == {"prompt", "choices", "answer"} and q["prompt"].endswith("?")
                assert 2 <= len(q["choices"]) <= 6 and len(set(q["choices"])) == len(q["choices"])
                assert isinstance(q["answer"], int) and 0 <= q["answer"] < len(q["choices"])


# ---- bad files and links ---------------------------------------------------------------------------------------

def lesson_dict(n_stops: int = 1) -> dict:
    return {"title": "T", "stops": [{"title": f"s{i}", "page": "qkv"} for i in range(n_stops)]}


@pytest.mark.parametrize("data, says", [
    (b"this is not json", "not valid JSON"),
    (json.dumps({"title": "T", "stops": []}).encode(), "at least one stop"),
    (json.dumps(lesson_dict(MAX_STOPS + 1)).encode(), f"at most {MAX_STOPS} stops; this one has {MAX_STOPS + 1}"),
    (json.dumps({"title": 3, "stops": lesson_dict()["stops"]}).encode(), "“title” must be text"),
    (json.dumps({"title": "T", "stops": [{"title": "s", "query": {"d_k": [4]}}]}).encode(), "“query” must map"),
    (json.dumps({"title": "T", "stops": ["a stop"]}).encode(), "Stop 1 is not an object"),
    (json.dumps({**lesson_dict(), "about": "x" * 300_000}).encode(), "larger than a lesson can be"),
    (bytes(range(256)) * 4, "not text"),
    (json.dumps({"title": "T", "stops": [{"title": "s", "poll": "attends", "poll_at": {"row": [0]}}]}).encode(),
     "Stop 1: “poll_at” must map names to values"),
    (json.dumps({"title": "T", "stops": [{"title": "s", "poll_at": {"row": "0"}}]}).encode(),
     "Stop 1: “poll_at” pins a poll, but the stop has no “poll”"),
    (json.dumps({"title": "T", "stops": [{"title": "s", "poll": "attends", "poll_at": {"row": "0" * 81}}]}).encode(),
     "longer than 80 characters"),
    (json.dumps({"title": "T", "stops": [{"title": "s", "hide": "weights"}]}).encode(), "“hide” must be a list"),
    (json.dumps({"title": "T", "stops": [{"title": "s", "hide": ["weights:None.1"]}]}).encode(),
     "“hide” entry “weights:None.1” is neither a step"),
    (json.dumps({"title": "T", "stops": [{"title": "s", "hide": ["<b>x</b>"]}]}).encode(), "is neither a step"),
    (json.dumps({"title": "T", "stops": [{"title": "s", "hide": ["weights"] * (MAX_HIDE + 1)}]}).encode(),
     f"“hide” has at most {MAX_HIDE} entries; this one has {MAX_HIDE + 1}"),
])
def test_a_bad_file_says_what_is_wrong(data, says):
    with pytest.raises(LessonError, match=None) as err:
        from_json(data)
    assert says in str(err.value)


def test_poll_at_and_hide_survive_the_file_and_the_link():
    stop = Stop("S", "scores", {"scores.tab": "1"}, ask="What is Ŝ[0, 1]?", poll="scaled_score",
                poll_at={"row": "0", "col": "1"}, hide=("scaled_scores", "weights:None.0.1", "cosine_tokens"))
    lesson = Lesson("T", "", (stop,))
    assert from_json(to_json(lesson)) == lesson and from_link(to_link(lesson)) == lesson
    assert json.loads(to_json(lesson))["stops"][0]["hide"] == ["scaled_scores", "weights:None.0.1", "cosine_tokens"]
    old = from_json(json.dumps({"title": "T", "stops": [{"title": "s", "page": "qkv"}]}))   # a file from before
    assert old.stops[0].poll_at == {} and old.stops[0].hide == ()
    assert from_json(json.dumps({"title": "T", "stops": [{"title": "s", "poll": "attends", "poll_at": {"row": 2}}]})
                     ).stops[0].poll_at == {"row": "2"}                                     # a number, kept as text
    assert [parse_hide(h) for h in ("weights", "weights:3.1.2", "view:cosine_tokens", "weights:x.1.2", "", "1x",
                                    "wéights")] == [("weights", None), ("weights", (3, 1, 2)), None, None, None, None, None]


def test_a_broken_link_says_so():
    good = to_link(LESSONS["forward_pass"])
    for broken in (good[:40], good[:-3], "%%%", "", "x" * 300_000):
        with pytest.raises(LessonError, match="not complete"):
            from_link(broken)


# ---- the page ---------------------------------------------------------------------------------------------------

def opened(at, *names):
    for name in names:
        at.session_state[f"lessons.open.{name}"] = True
    return at.run()


def test_the_page_lists_each_lesson_with_a_link_to_every_stop():
    at = opened(open_page(PAGE), *LESSONS)
    no_exception(at)
    links = [(e.proto.page, e.proto.query_string) for e in at.get("page_link")]
    for _, _, stop in STOPS:
        from urllib.parse import urlencode
        assert (stop.page, urlencode(stop.query)) in links, stop.title
    text = "\n".join(m.value for m in at.markdown)
    assert "Several heads" in text and "4 · Scores \\& scaling" in text


def test_teach_this_lesson_hands_it_to_the_room():
    at = opened(open_page(PAGE), "todays_attention")
    at.button(key="lessons.teach.todays_attention").click().run()
    no_exception(at)
    assert at.session_state["room.lesson"] == LESSONS["todays_attention"] and at.session_state["room.stop"] == 0
    if (nav.ROOT / "app_pages/60_room.py").exists():                         # the room page takes it from there
        assert at.session_state["s.page"] == "app_pages/60_room.py"
        assert "Today's attention" in "\n".join(m.value for m in at.markdown)


def test_save_gives_the_lessons_file(monkeypatch):
    from streamlit.runtime.media_file_manager import MediaFileManager
    saved = []
    add = MediaFileManager.add

    def keep(self, data, mimetype, coordinates, *args, **kwargs):
        saved.append(bytes(data) if not isinstance(data, str) else data.encode())
        return add(self, data, mimetype, coordinates, *args, **kwargs)
    monkeypatch.setattr(MediaFileManager, "add", keep)
    at = opened(open_page(PAGE), "forward_pass")
    at.button(key="lessons.copy.forward_pass").click().run()
    no_exception(at)
    assert at.session_state["lessons.draft"] == LESSONS["forward_pass"]
    (button,) = at.get("download_button")
    assert button.proto.label == "Save as a file"
    assert saved[-1].decode("utf-8") == to_json(LESSONS["forward_pass"])
    assert "the teacher's notes" in button.proto.help and '"note": "' in saved[-1].decode("utf-8")    # the file: notes
    link = next(c.value for c in at.code if "?lesson=" in c.value)
    from ui.classroom.lessons_view import without_notes
    shared = from_link(link.split("?lesson=")[1])                                     # the link: none
    assert shared == without_notes(LESSONS["forward_pass"]) and not any(s.note for s in shared.stops)
    assert "without your notes" in messages(at) or any("without your notes" in m.value for m in at.markdown)


def test_a_bad_file_shows_its_message_and_keeps_the_lesson():
    at = opened(open_page(PAGE), "forward_pass")
    at.button(key="lessons.copy.forward_pass").click().run()
    at.file_uploader(key="lessons.file").set_value(("broken.json", b'{"title": "T", "stops": []}', "application/json"))
    at.run()
    no_exception(at)
    from ui.text import md_escape
    said = "broken.json: A lesson needs at least one stop. The lesson in progress is unchanged."
    assert md_escape(said) in messages(at)                                 # the file's name is shown as text
    assert at.session_state["lessons.draft"] == LESSONS["forward_pass"]
    good = to_json(LESSONS["todays_attention"]).encode()
    at.file_uploader(key="lessons.file").set_value(("today.json", good, "application/json"))
    at.run()
    assert at.session_state["lessons.draft"] == LESSONS["todays_attention"]


def test_a_shared_link_opens_the_lesson_and_a_broken_one_says_so():
    lesson = LESSONS["todays_attention"]
    at = open_page(PAGE, query={"lesson": to_link(lesson)})
    no_exception(at)
    assert at.session_state["lessons.draft"] == lesson
    assert "Opened the lesson of the link: 6 stops" in "\n".join(e.value for e in at.success)
    one = Lesson("One", "", LESSONS["todays_attention"].stops[:1])
    at = open_page(PAGE, query={"lesson": to_link(one)})
    assert "Opened the lesson of the link: 1 stop," in "\n".join(e.value for e in at.success)   # not "1 stops"
    at = open_page(PAGE, query={"lesson": to_link(lesson)[:50]})
    no_exception(at)
    assert "This lesson link is not complete" in messages(at)
    assert at.session_state["lessons.draft"] is None if "lessons.draft" in at.session_state else True   # nothing loaded


def test_the_builder_adds_the_view_you_came_from_and_keeps_the_lesson_across_pages():
    at = open_page("app_pages/3_qkv.py", query={"d_k": "6", "qkv.tab": "1"})
    at.switch_page(PAGE).run()
    no_exception(at)
    at.button(key="lessons.add").click().run()
    draft = at.session_state["lessons.draft"]
    assert [(s.page, s.query) for s in draft.stops] == [("qkv", {"d_k": "6", "qkv.tab": "1"})]
    at.switch_page("app_pages/4_scores.py").run()
    at.switch_page(PAGE).run()
    at.button(key="lessons.add").click().run()
    draft = at.session_state["lessons.draft"]
    assert [s.page for s in draft.stops] == ["qkv", "scores"] and draft.stops[1].query == {"d_k": "6"}
    v = at.session_state["lessons.v"]
    at.text_area(key=f"lessons.e{v}.1.ask").input("What is Ŝ[0, 1]?").run()
    assert at.session_state["lessons.draft"].stops[1].ask == "What is Ŝ[0, 1]?"
    at.button(key=f"lessons.e{v}.1.up").click().run()
    assert [s.page for s in at.session_state["lessons.draft"].stops] == ["scores", "qkv"]
    v = at.session_state["lessons.v"]
    at.button(key=f"lessons.e{v}.0.delete").click().run()
    no_exception(at)
    assert [(s.page, s.ask) for s in at.session_state["lessons.draft"].stops] == [("qkv", "")]


def test_editing_a_copy_keeps_each_stops_pins_and_hidden_cells():
    lesson = LESSONS["forward_pass"]
    at = opened(open_page(PAGE), "forward_pass")
    at.button(key="lessons.copy.forward_pass").click().run()
    v = at.session_state["lessons.v"]
    at.selectbox(key=f"lessons.pick.{v}").set_value(4).run()
    at.text_area(key=f"lessons.e{v}.4.ask").input("What is Ŝ[0, 1] here?").run()
    no_exception(at)
    stop = at.session_state["lessons.draft"].stops[4]
    assert stop.ask == "What is Ŝ[0, 1] here?"
    assert (stop.poll, stop.poll_at, stop.hide) == (lesson.stops[4].poll, lesson.stops[4].poll_at, lesson.stops[4].hide)
    assert from_link(to_link(at.session_state["lessons.draft"])).stops[4].poll_at == {"row": "0", "col": "1"}
    at.selectbox(key=f"lessons.e{v}.4.poll").set_value("attends").run()                # another kind: its pins go
    stop = at.session_state["lessons.draft"].stops[4]
    assert stop.poll == "attends" and stop.poll_at == {} and stop.hide == lesson.stops[4].hide


def test_a_loaded_lessons_text_is_shown_as_text():
    stop = Stop("<b>bold</b> **stop**", "scores", {"d_k": "6"}, ask="$x$ <script>alert(1)</script>?")
    lesson = Lesson("[click](http://example.com)", "", (stop,))
    at = open_page(PAGE, query={"lesson": to_link(lesson)})
    no_exception(at)
    text = "\n".join(m.value for m in at.markdown)
    assert "\\<b\\>bold\\<\\/b\\> \\*\\*stop\\*\\*" in text and "\\$x\\$ \\<script\\>" in text
    assert "<b>" not in text and "<script>" not in text
    (link,) = [e.proto for e in at.get("page_link") if e.proto.page == "scores"]
    assert link.query_string == "d_k=6"


def test_the_notes_claims_in_words_hold():
    """What the notes say without a number the other tests read: every row attends to “love” and the four context
    rows are nearly equal (forward pass, stop 6); ALiBi's slopes 1/4, 1/16, 1/64, 1/256 for H = 4 (today, stop 2);
    the stop's cache calculator shows Llama 3 70B at 8,192 tokens, 2 bytes (today, stop 4); the RoPE page shifts by 100."""
    from ui import page_state
    _, t = trace_of({})
    a, c = t["weights"].value, t["context"].value
    assert "every row attends to “love”" in note("forward_pass", 6) and (a.argmax(axis=1) == 1).all()
    assert np.abs(c - c.mean(axis=0)).max() < 0.05 * np.abs(c).max()
    # the embeddings page shows X_emb (GloVe alone); X = X_emb + the positions (docs/notation.md)
    assert t["x_embed"].shape == (4, 50) and "X_emb here are 4 × 50" in note("forward_pass", 1)
    assert not np.allclose(t["x"].value, t["x_embed"].value)
    _, alibi = trace_of({"positional": "alibi", "n_heads": "4", "mask": "causal"})
    slopes = -alibi["alibi"].value[:, 1, 0]                                          # distance 1: the slope itself
    np.testing.assert_allclose(slopes, [1 / 4, 1 / 16, 1 / 64, 1 / 256])
    assert "(1/4, 1/16, 1/64, 1/256)" in note("todays_attention", 2)
    defaults = {c.key: c.default for c in page_state.controls_of("app_pages/42_kv_cache.py")}
    assert (defaults["kv_cache.tokens"], defaults["kv_cache.bytes"]) == (8192, 2)
    assert LESSONS["todays_attention"].stops[4].query["kv_cache.preset"] == "Llama 3 70B"
    rope = {c.key: c.default for c in page_state.controls_of("app_pages/40_rope.py")}
    assert rope["rope.offset"] == 100 and "by 100 positions" in note("todays_attention", 0)


def test_the_room_asks_each_stops_pinned_question():
    """What "Ask this stop's question" opens in the room (ui/room/poll.ask_poll with the stop's poll_at): the stop's
    own question, the same prompt, choices and answer as the pinned poll checked above."""
    import classroom
    from attention_core.labs.polls import make_poll
    from classroom.store import MemoryStore
    from ui.room.poll import ask_poll
    store = MemoryStore()
    code, secret = classroom.open_room(store, "T")
    for _, _, stop in STOPS:
        _, t = trace_of(stop.query)
        assert ask_poll(store, code, secret, stop.poll, t, at=stop.poll_at) is not None, stop.title
        poll, expected = classroom.state(store, code).poll, make_poll(stop.poll, t, 0, at=stop.poll_at)
        assert (poll["kind"], poll["prompt"], poll["choices"], poll["answer"]) == (
            stop.poll, expected.prompt, list(expected.choices), expected.answer), stop.title


# ---- a student's screen in the stop's predict state: the answer nowhere, then there after the reveal --------------

def _numbers_in(text: str) -> list[float]:
    """Every number written in a text ('−13.392', '1,024', '2.7e-15'), as floats."""
    out = []
    for m in re.finditer(r"[−-]?\d[\d,]*(?:\.\d+)?(?:e[−-]?\d+)?", text):
        try:
            out.append(float(m.group().replace("−", "-").replace(",", "")))
        except ValueError:
            pass
    return out


def tells(stop: Stop, config: Config, t) -> tuple[list[str], list[tuple[float, int]], str]:
    """What would tell a student the stop's answer: (patterns of its words, (number, decimals) it would round to,
    where a number is looked for: "all" = text, tables and charts' data; "table" = only the state table's m_i′
    column). Exclusions, each for a number that is also the question's own premise or a label:
    - the online softmax's m_0 after block 3 equals m_0 before it (−13.392), which the ask quotes and the state
      table's "m_i before" column shows: the number is looked for in the m_i′ column only, the words everywhere;
    - which_head's "head 0" is the label of every head's heatmap and of the heads' caption: its numbers are
      checked (each head's A_h[0,1]), not the words;
    - the masked weight's 0 is also every hidden key's entry of the mask M and the question's premise: its
      words are checked ("exactly 0", e^(−∞) = 0) and the weights' cell [1,3] in the charts' data;
    - the RoPE answer −4.36 is Ŝ[3,1] before the shift, quoted by the ask: the stop hides that cell too."""
    from attention_core.math.embeddings import cosine_similarity
    right, _, _ = answer_of(stop, config, t)
    at, kind = stop.poll_at, stop.poll

    def rounded(s: str) -> tuple[float, int]:
        s = s.replace("−", "-")
        return float(s), len(s.split(".")[1]) if "." in s else 0
    if kind == "shape":
        a, b = right.split(" × ")
        words = [rf"(?<!\d){a}\s*×\s*{b}(?!\d)", rf"\({a},\s*{b}\)", rf"{a}\s*×\s*d_k={b}"]
        if at["step"] == "w_q":
            words.append(r"\(d_model,\s*H·d_k\)")                  # W_Q's shape in letters
        return words, [], "all"
    if kind == "similar":
        cos = cosine_similarity(t["x_embed"].value)
        return [re.escape(right)], [(float(cos[0, 2]), 3)], "all"
    if kind in ("reorder", "scaled_score", "alibi_bias"):
        return [], [rounded(right)], "all"
    if kind == "rope_shift":
        return [r"stays the same", r"only through the distance", r"not with where they stand", r"max \|ΔŜ\|"], \
            [rounded(right)], "all"
    if kind == "masked_weight":
        return [r"exactly 0(?![.\d])", r"(?:exp|e\^)\s*\(\s*[−-]∞\s*\)\s*=\s*0"], [], "all"
    if kind == "closest_value":
        c0 = weights_by_hand(t)[0] @ t["v"].value
        return [re.escape(right)], [(float(x), 3) for x in c0], "all"
    if kind == "which_head":
        d, q, k = config.d_k, t["q"].value, t["k"].value
        return [], [(float(softmax_rows(q[:, h * d:(h + 1) * d] @ k[:, h * d:(h + 1) * d].T / math.sqrt(d))[0, 1]), 4)
                    for h in range(config.n_heads)], "all"      # 4 decimals: 0.060 is also an entry of C_h
    if kind == "window_keys":
        return [r"keys i − 1 … i", r"keys i − W \+ 1 … i", r"keys 2 (?:…|and) 3"], [], "all"
    if kind == "kv_head":
        return [re.escape(right), r"heads 12[–-]15"], [], "all"
    if kind == "kv_cache_size":
        return [rf"(?<![\d.,]){re.escape(right)}"], [], "all"
    if kind == "online_max":
        return [r"finds a larger score", r"maximum rose", r"e\^\(m_i − m_i′\) = 1"], [rounded(right)], "table"
    if kind in ("residual_add", "temperature_prob", "top_k_prob"):
        return [], [rounded(right)], "all"
    if kind == "copy_head":                 # the page's sentence naming the head, and its score (2 decimals)
        h = int(right.split()[1])
        lm = page_traces(stop, config, t)[1]
        if at["role"] == "previous":
            return [rf"head {h} puts on average"], [(lm.facts["previous"][h], 2)], "all"
        return [r"in all on those positions"], [(lm.facts["heads"][h]["on_targets"], 2)], "all"
    raise AssertionError(f"no tells for {stop.title}'s {kind}: add a branch")


def _student_sees(name: str, n: int, stage: str, revealed=()):
    """A student following a room whose teacher showed the lesson's stop n (its predict state, or revealed, the
    stops `revealed` already revealed): her screen's words (text, Markdown, captions, messages, formulas), its
    tables (as text) and its charts' data rows."""
    import classroom
    from classroom.lesson import hidden_at
    from tests.apptest_util import charts
    from tests.test_room_page import follow, room_with_student, text_of
    from ui.room.bar import stop_view
    lesson = LESSONS[name]
    _, code, secret, ana = room_with_student()
    classroom.push(classroom.store_from_env(), code, secret, stop_view(lesson, n, stage, revealed))
    follow(ana)
    assert ana.session_state["room.hide"] == list(hidden_at(lesson, n, stage, revealed).hide)
    words = (text_of(ana) + "\n" + "\n".join(e.value for e in ana.latex)).replace("\\", "")
    frames = [d.value for d in ana.dataframe]
    return words, frames, [r for c in charts(ana) for r in c.get("data", {}).get("values", [])]


def _found(stop: Stop, config: Config, t, words: str, frames, rows) -> list[str]:
    patterns, numbers, where = tells(stop, config, t)
    found = [f"words {p!r}" for p in patterns if re.search(p, words, flags=re.I)]
    found += [f"words {p!r} in a table" for p in patterns for f in frames if re.search(p, f.to_string(), flags=re.I)]
    if where == "table":                        # the online softmax: the state table's m_i′ column
        tables = [f for f in frames if "c1" in f.columns and "c7" in f.columns]
        shown = [_numbers_in(str(x)) for f in tables for x in f["c1"]]
        found += [f"{x} in m_i′" for (x, d) in numbers for xs in shown if any(round(y, d) == round(x, d) for y in xs)]
        return found
    written = _numbers_in(words) + [y for f in frames for v in f.to_numpy().ravel() for y in _numbers_in(str(v))]
    data = [v for r in rows for v in r.values() if isinstance(v, float) and math.isfinite(v)]
    for x, d in numbers:
        found += [f"{x:.{d}f} written" for y in written if round(y, d) == round(x, d)][:1]
        found += [f"{x:.{d}f} in a chart's data" for y in data if round(y, d) == round(x, d)][:1]
    if stop.poll == "masked_weight":            # the weights' cell [1, 3] (charts made of 0 and 1 only: the mask M)
        i, j = int(stop.poll_at["row"]), int(stop.poll_at["col"])
        weights = [r for r in rows if (r.get("i"), r.get("j")) == (i, j) and r.get("v") == 0.0]
        masks = {id(r) for r in rows if all(isinstance(v, float) and v in (0.0, 1.0) for k, v in r.items() if k == "v")}
        found += ["A[1,3] = 0 in a chart's data" for r in weights if id(r) not in masks][:1]
    if stop.poll == "kv_cache_size":            # the memory chart's curve of the asked model at the asked length
        found += ["the curve at 8,192 tokens" for r in rows if r.get("preset") == stop.poll_at["model"]
                  and r.get("tokens") == int(stop.poll_at["tokens"]) and r.get("cache") != "MHA"][:1]
    return found


# the stops whose view never draws their answer, revealed or not (a change of the view, or another model, shows it)
NEVER_DRAWN = {("forward_pass", 3), ("todays_attention", 3)}


@pytest.mark.parametrize("name, n, stop", STOPS, ids=[f"{name}-{n}" for name, n, _ in STOPS])
def test_a_stops_answer_is_nowhere_on_a_students_screen_until_the_reveal(name, n, stop):
    """Each stop as a student following the room receives it (its view without the cell, its hide list, the
    predict stage): the answer (recomputed here) is in none of the page's words, tables or charts' data, nor the
    words or numbers that tell it; after the teacher's reveal it is there (the check is not vacuous), except on the
    two stops whose view never draws it (their notes say how the teacher reveals it)."""
    config, t = trace_of({k: v for k, v in stop.query.items() if k != "cell"})
    words, frames, rows = _student_sees(name, n, "predict")
    assert _found(stop, config, t, words, frames, rows) == [], stop.title
    if stop.hide:
        assert "Predict first" in words
    if (name, n) in NEVER_DRAWN:
        return
    words, frames, rows = _student_sees(name, n, "revealed")         # a later stop's answer on this view still hidden
    assert _found(stop, config, t, words, frames, rows), (stop.title, "revealed, the answer should be there")


def _same_view_later_stops():
    """(lesson, n, m) for each stop m after stop n showing the same numbers: the same page and settings (the cell
    opened at the reveal and the open tab apart)."""
    def settings(stop):
        return {k: v for k, v in stop.query.items() if k != "cell" and not k.endswith(".tab")}
    return [(name, n, m) for name, lesson in LESSONS.items() for n, a in enumerate(lesson.stops)
            for m, b in enumerate(lesson.stops) if m > n and b.page == a.page and settings(b) == settings(a)]


def _earlier_stops():
    """(lesson, n) for each stop with a later stop of the same view: one student's screen checked for all of them."""
    return sorted({(name, n) for name, n, _ in _same_view_later_stops()})


@pytest.mark.parametrize("stage", ["predict", "revealed"])
@pytest.mark.parametrize("name, n", _earlier_stops())
def test_a_later_stops_answer_is_not_on_an_earlier_stop_of_the_same_view(name, n, stage):
    """Inside a transformer's next-token stops share one view: a student who sees stop n, to predict or after its
    reveal, must not read a later stop m's answer there before m is asked (stops 2-4 printed the layer-1 heads'
    sentence, head 2 0.98 in all on those positions, and stops 2-3 layer 0's “head 0 puts on average 0.94 …”, the
    answers of stops 5 and 4; a reveal lifted every hidden number of the view, those too)."""
    stops = LESSONS[name].stops
    words, frames, rows = _student_sees(name, n, stage)
    for lname, a, m in _same_view_later_stops():
        if (lname, a) == (name, n):
            later = stops[m]
            config, t = trace_of({k: v for k, v in later.query.items() if k != "cell"})
            assert _found(later, config, t, words, frames, rows) == [], (n, m)


def test_the_same_view_pairs_are_the_next_token_stops():
    """The pairs above are not vacuous: the third lesson's four next-token stops (indices 1-4) share one view."""
    assert _same_view_later_stops() == [("inside_a_transformer", n, m) for n in range(1, 5) for m in range(n + 1, 5)]


@pytest.mark.parametrize("name", sorted(LESSONS))
def test_a_reveal_shows_its_own_answer_and_keeps_every_later_one_hidden(name):
    """The rule, on every stop of the three shipped lessons (classroom.lesson.hidden_at): to predict, a stop hides
    its own numbers; revealed, none of them (its answer shows), but every hide entry of a later stop of the same
    view not yet revealed stays; once that later stop is revealed (a jump forward, then back), its numbers no longer
    wait; the last stop of a view hides nothing after its reveal; no shipped stop's answer shares a number with a
    later one's."""
    from classroom.lesson import hidden_at
    lesson = LESSONS[name]
    later_of = {n: [m for (lname, a, m) in _same_view_later_stops() if lname == name and a == n]
                for n in range(len(lesson.stops))}
    for n, stop in enumerate(lesson.stops):
        later = later_of[n]
        waiting = {h for m in later for h in lesson.stops[m].hide}
        own = [h for h in stop.hide if h not in waiting]
        predict, revealed = hidden_at(lesson, n, "predict"), hidden_at(lesson, n, "revealed")
        assert set(stop.hide) <= set(predict.hide) and set(predict.hide) == set(stop.hide) | waiting, (name, n)
        assert set(revealed.hide) == waiting and not set(own) & set(revealed.hide), (name, n)
        assert revealed.waiting == tuple(m for m in later if lesson.stops[m].hide) and revealed.shown_too == ()
        if stop.hide and stop.poll:
            assert own, (name, n, "a reveal that shows nothing of its own")
        if not later:
            assert revealed.hide == (), (name, n)
        for m in later:                      # stop m revealed already (the teacher jumped ahead, then came back)
            after = hidden_at(lesson, n, "revealed", revealed={m})
            still = {h for k in later if k != m for h in lesson.stops[k].hide}
            assert set(after.hide) == still and m not in after.waiting, (name, n, m)
        assert hidden_at(lesson, n, "revealed", revealed=set(later)).hide == ()


def test_a_reveal_with_a_number_in_common_with_a_later_stop_shows_its_own_and_says_so():
    """A lesson that hides a number for two stops of one view (a whole step for the first, one of its cells for
    the second): the first stop's reveal shows its answer (the step), so the second's is shown too, and said
    (`shown_too`); a stop of another view (other settings) is never counted; an unrelated later entry stays."""
    from classroom.lesson import hidden_at
    a = Stop("A", "scores", {"d_k": "4", "scores.tab": "1"}, hide=("weights",))
    b = Stop("B", "scores", {"d_k": "4", "scores.tab": "2", "cell": "hm:weights:None.1.3"},
             hide=("weights:None.1.3", "context"))
    c = Stop("C", "scores", {"d_k": "8"}, hide=("scaled_scores",))
    lesson = Lesson("Overlap", "", (a, b, c))
    revealed = hidden_at(lesson, 0, "revealed")
    assert revealed.hide == ("context",) and revealed.waiting == (1,) and revealed.shown_too == (1,)
    assert hidden_at(lesson, 0, "predict").hide == ("weights", "context", "weights:None.1.3")
    assert hidden_at(lesson, 1, "revealed").hide == () and hidden_at(lesson, 2, "revealed").hide == ()


def test_inside_a_transformers_notes_say_what_a_reveal_keeps_hidden():
    """The notes of the next-token stops no longer warn that a reveal shows the later stops' answers (it keeps them,
    classroom.lesson.hidden_at): each says they stay hidden, and the rule keeps exactly the next stops waiting. Stop
    1's reveal shows p in bars 1 and 2 (bar 3, p′, the next stop's answer, left out while it is hidden)."""
    from attention_core.lessons.next_token import next_token_trace
    from classroom.lesson import hidden_at
    from ui.transformer.next_token_view import _bars
    lesson = LESSONS["inside_a_transformer"]
    for n in (1, 2, 3):
        text = note("inside_a_transformer", n)
        assert "A reveal lifts" not in text and "a reveal shows them" not in text and "accept that" not in text
        assert "hidden until" in text, n
        assert hidden_at(lesson, n, "revealed").waiting == tuple(range(n + 1, 5)), n
    assert "The reveal shows p (bars 1 and 2)" in note("inside_a_transformer", 1)
    assert "bars 1 and 2 show them" in note("inside_a_transformer", 2)
    q = lesson.stops[1].query
    trace = next_token_trace(q["sentence"], 0.5, 3, 1.0, 1, 0)
    series = lambda spec: sorted({r["series"][0] for r in spec["data"]["values"]})
    assert series(_bars(trace)) == ["1", "2", "3"] and series(_bars(trace, renormalised=False)) == ["1", "2"]
    shown = {round(r["probability"], 4) for r in _bars(trace, renormalised=False)["data"]["values"]}
    assert round(float(trace["probs"].value.max()), 4) in shown
    assert round(float(trace["renormalised"].value.max()), 4) not in shown


def test_after_a_reveal_the_students_caption_names_each_way_a_later_answer_waits():
    """Stop 2 of Inside a transformer, revealed: the later stops' answers wait as a “?” in the heads' heatmap and
    as “Predict first: revealed by your teacher” lines (the sample, the previous-token head) with bar 3 left out;
    the caption that says why something still waits names both, not the “?” alone."""
    from ui.room import hide as room_hide
    from ui.room.follow import REVEALED_LATER
    words, _, _ = _student_sees("inside_a_transformer", 1, "revealed")
    assert REVEALED_LATER.replace("\\", "") in words
    waits = room_hide.WAITS.split(": ", 1)[1]                  # "Predict first: revealed by your teacher."
    assert waits in words and room_hide.STUDENT_CAPTION in words          # both ways are on the screen
    assert "“?”" in REVEALED_LATER and waits.rstrip(".") in REVEALED_LATER


def test_a_reveal_whose_numbers_a_later_stop_hides_too_is_not_said_to_show_them():
    """A teacher's lesson with two stops of one view hiding the same step: an entry a later stop names is that stop's
    answer (the shipped lessons list a later answer that way), so the first reveal shows none of its numbers; the
    predict caption says so, not “it shows this stop's numbers”. With a number of its own, it does show them."""
    from classroom.lesson import hidden_at
    from ui.room.bar import reveal_words
    first = Stop("A", "softmax", {}, ask="a?", hide=("weights",))
    second = Stop("B", "softmax", {"cell": "hm:weights:None.1.0"}, ask="b?", hide=("weights",))
    lesson = Lesson("Two stops, one step", "", (first, second))
    after = hidden_at(lesson, 0, "revealed")
    assert after.hide == ("weights",) and after.waiting == (1,)
    said = reveal_words(False, after, first.hide)
    assert "shows this stop's numbers" not in said and "it shows none of the numbers this stop hides" in said
    assert "stop 2, later on this same view, stay hidden until you reveal that stop" in said
    inside = LESSONS["inside_a_transformer"]
    assert reveal_words(False, hidden_at(inside, 1, "revealed"), inside.stops[1].hide).startswith(
        "it shows this stop's numbers on every following screen")

"""The lessons that ship with the app and the Lessons page.

- both shipped lessons read, with about eight and six stops, and survive their JSON file and their link;
- every stop's view opens its page with no exception and no link notice, its settings and own controls in force;
- every poll a stop names is in the question bank and can be made on that stop's settings;
- the teacher's notes quote the app's own numbers (recomputed here from the core);
- a bad file or link gives its message;
- the page: teach, save, load (a bad file keeps the lesson in progress), share, add the view you came from.
"""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from attention_core import Config, run_forward
from attention_core.labs.export import config_from_query
from classroom.lesson import (HERE, MAX_STOPS, Lesson, LessonError, Stop, from_json, from_link, shipped, to_json,
                              to_link)
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

def test_both_lessons_ship_with_about_eight_and_six_stops():
    assert sorted(LESSONS) == ["forward_pass", "todays_attention"]
    assert LESSONS["forward_pass"].title == "The forward pass" and len(LESSONS["forward_pass"].stops) == 8
    assert LESSONS["todays_attention"].title == "Today's attention" and len(LESSONS["todays_attention"].stops) == 6
    forward_pages = [s.page for s in LESSONS["forward_pass"].stops]
    assert forward_pages == ["", "embeddings", "positional", "qkv", "scores", "softmax", "context", "multi_head"]
    assert {s.page for s in LESSONS["todays_attention"].stops} == {"rope", "masks", "kv_cache", "online_softmax"}
    for _, _, stop in STOPS:
        assert stop.ask.endswith("?") and len(stop.note) > 100, stop.title
        assert not any(w in stop.ask + stop.note for w in (".py", "run_forward", "trace[", "_view")), stop.title


@pytest.mark.parametrize("name", sorted(LESSONS))
def test_a_lesson_survives_its_file_and_its_link(name):
    lesson = LESSONS[name]
    assert from_json(to_json(lesson)) == lesson
    assert from_link(to_link(lesson)) == lesson
    assert (HERE / f"{name}.json").read_text(encoding="utf-8") == to_json(lesson)     # the file as the page saves it


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
        poll = make_poll(kind, trace, seed=0)
        assert poll is not None and poll.kind == kind and 0 <= poll.answer < len(poll.choices), (stop.title, kind)


# ---- the notes quote the app's numbers -------------------------------------------------------------------------

def note(lesson: str, n: int) -> str:
    stop = LESSONS[lesson].stops[n]
    return stop.ask + " " + stop.note


def test_the_forward_pass_notes_quote_its_numbers():
    from attention_core.math.embeddings import cosine_similarity
    _, t = trace_of({})
    assert t["weights"].shape == (4, 4) and "4 × 4" in note("forward_pass", 0)
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
    llama = PRESETS["Llama 3 8B"]
    assert bytes_per_token(llama) == 2 * 32 * 8 * 128 * 2 == 131_072 and "131,072" in note("todays_attention", 4)
    assert cache_bytes(llama, 8192) == 2 ** 30 and cache_bytes(llama, 8192, mha=True) == 4 * 2 ** 30
    o = online_softmax_trace(Config(), 1, 1)
    m_prev, m, rescale = o["m_prev"].value[0], o["m"].value[0], o["rescale"].value[0]
    text = note("todays_attention", 5)
    assert minus(m_prev) in text and minus(m) in text and f"{rescale:.1e}".replace("e-06", "e-6") in text
    assert f"{o['l'].value[0]:.7f}" in text and f"{o.facts['max_diff']:.1e}" in text


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
])
def test_a_bad_file_says_what_is_wrong(data, says):
    with pytest.raises(LessonError, match=None) as err:
        from_json(data)
    assert says in str(err.value)


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
    the cache calculator opens on Llama 3 8B, 8,192 tokens, 2 bytes (today, stop 4); the RoPE page shifts by 100."""
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
    assert (defaults["kv_cache.preset"], defaults["kv_cache.tokens"], defaults["kv_cache.bytes"]) == ("Llama 3 8B", 8192, 2)
    rope = {c.key: c.default for c in page_state.controls_of("app_pages/40_rope.py")}
    assert rope["rope.offset"] == 100 and "by 100 positions" in note("todays_attention", 0)

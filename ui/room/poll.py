"""Class polls in a room: the teacher asks a predict-then-reveal question, watches the answers arrive as a bar
chart and reveals the right one with its arithmetic; each student answers on their own screen and, after the
reveal, sees their answer beside the class's.

At ui's top because the room bar (ui/room/bar.py) draws it on every page for a room's teacher and students:

    teacher_poll_panel(store, code, secret, trace)      the question bank, the teacher's own question (own_poll.py),
                                                        "Ask the class", the live chart, reveal
    ask_poll(store, code, secret, kind, trace, seed, at)  open one question of the bank (a stop's: at = its poll_at)
    student_poll_card(store, code, member, room_state)  the question, "Send my answer", then the reveal

Cheap where it runs most: a student's card reads nothing beyond the room state it is given, except its own
answer once per question (then kept in the session: only this session can change it) and, once, the frozen
counts after the reveal. Sending an answer is a button callback, so a send that arrives after the question
was revealed, closed or replaced still gets the room's message. The teacher's chart polls the store once a
second in a fragment, only while a question is open and unrevealed.

Before the reveal nothing marks the right choice, not even in the chart's data (the projector shows it).
Prompts and choices (the bank's, or the teacher's own as typed) are shown as text, escaped for Markdown; nicknames
are never shown here.

    >>> spec = poll_bars_spec(["2", "4"], [1, 3])
    >>> [(v["label"], v["count"], v["role"], v["tag"]) for v in spec["data"]["values"]]
    [('A. 2', 1, 'answer', '1'), ('B. 4', 3, 'answer', '3')]
    >>> [(v["role"], v["tag"]) for v in poll_bars_spec(["2", "4"], [1, 3], right=1, you=0)["data"]["values"]]
    [('you', '1 · you'), ('right', '3 · right')]
"""
from __future__ import annotations

import streamlit as st

import classroom
from classroom import RoomError

from ..settings_state import presenting
from ..text import md_escape
from .own_poll import own_question_form

LETTERS = "ABCDEFGH"                                   # classroom.room.MAX_CHOICES = 8
# Bars stand at least 3:1 from the page (WCAG 1.4.11; tests/test_colors.py): before the reveal all bars alike
ANSWER, RIGHT, YOU, OTHER = "#5c7cfa", "#1f5fa8", "#a84a0a", "#868e96"
BAND = "#dbe8f7"                                       # behind the right row once revealed
MINE, FROZEN, NOTE, SEED = "poll.mine", "poll.frozen", "poll.note", "poll.seed"       # session keys
FINAL = "poll.final"                                   # the question whose answer can change no more


def letter(i: int) -> str:
    return LETTERS[i] if 0 <= i < len(LETTERS) else str(i)


def choice_text(poll: dict, i: int) -> str:
    """'B. 0.25': the letter the charts and sentences use, then the choice as text (not yet escaped)."""
    return f"{letter(i)}. {poll['choices'][i]}"


def poll_bars_spec(choices, counts, right: int | None = None, you: int | None = None, big: bool = False) -> dict:
    """Horizontal bars, one per choice labelled 'A. …', its count written on it; with `right` (after the reveal
    only) the right bar in dark blue on a pale band across its row (seen with no votes) and tagged 'right'; with
    `you` a student's own bar tagged 'you' (orange when it is not the right one). Plain Vega-Lite: the labels
    are SVG text, never Markdown or HTML."""
    values = []
    for i, (choice, n) in enumerate(zip(choices, counts)):
        marks = [m for m, on in (("right", i == right), ("you", i == you)) if on]
        role = RIGHT if i == right else YOU if i == you else OTHER if right is not None else ANSWER
        values.append({"i": i, "label": f"{letter(i)}. {choice}", "count": int(n),
                       "role": {ANSWER: "answer", RIGHT: "right", YOU: "you", OTHER: "other"}[role],
                       "colour": role, "tag": " · ".join([str(int(n))] + marks)})
    top = max(1, max(counts, default=0)) * 1.25
    band = [{"transform": [{"filter": "datum.role == 'right'"}],       # the right row, seen even with no votes
             "mark": {"type": "bar", "color": BAND},
             "encoding": {"x": {"datum": 0}, "x2": {"datum": top}}}] if right is not None else []
    font = 18 if big else 13
    marks_said = {"right": "the right answer", "you": "your answer"}
    said = "; ".join(f"{v['label']}: {v['count']} student{'' if v['count'] == 1 else 's'}"
                     + "".join(f" ({marks_said[m]})" for m in v["tag"].split(" · ")[1:]) for v in values)
    return {"$schema": "https://vega.github.io/schema/vega-lite/v5.json", "data": {"values": values},
            "description": f"The class's answers, a bar for each choice: {said}.",   # a screen reader's words
            "width": 560 if big else 380, "height": {"step": 46 if big else 32},
            "encoding": {
                "y": {"field": "label", "type": "nominal", "sort": {"field": "i", "order": "ascending"}, "title": None,
                      "axis": {"labelFontSize": font, "labelLimit": 420 if big else 260}},
                "x": {"field": "count", "type": "quantitative", "title": "students",
                      "scale": {"domain": [0, top]},
                      "axis": {"tickMinStep": 1, "format": "d", "labelFontSize": font - 2,
                               "titleFontSize": font - 2, "titleFontWeight": "normal"}}},
            "layer": band + [{"mark": {"type": "bar", "cornerRadiusEnd": 3},
                       "encoding": {"color": {"field": "colour", "type": "nominal", "scale": None, "legend": None},
                                    "tooltip": [{"field": "label", "type": "nominal", "title": "choice"},
                                                {"field": "count", "type": "quantitative", "title": "students"}]}},
                      {"mark": {"type": "text", "align": "left", "dx": 5, "fontSize": font, "fontWeight": "bold"},
                       "encoding": {"text": {"field": "tag", "type": "nominal"}}}],
            "config": {"view": {"strokeWidth": 0}}, "autosize": {"type": "pad", "contains": "padding"}}


def _bars(poll: dict, counts, right=None, you=None) -> None:
    st.vega_lite_chart(spec=poll_bars_spec(poll["choices"], counts, right, you, presenting()), width="content")


def _prompt(poll: dict) -> None:
    st.markdown(f":material/quiz: **{md_escape(poll.get('prompt', ''))}**")
    if poll.get("phase") in CHECK_WORDS and isinstance(poll.get("check"), int):
        st.caption(CHECK_WORDS[poll["phase"]].format(n=poll["check"] + 1, of=poll.get("check_n", "?")))


CHECK_WORDS = {"pre": ":material/fact_check: The check before the lesson, question {n} of {of}: answer what you "
                      "think now. The answer is not shown now: the same questions come back after the lesson.",
               "post": ":material/fact_check: The check after the lesson, question {n} of {of}: the same question "
                       "as before the lesson."}


def _explanation(poll: dict) -> None:
    if poll.get("explanation"):
        st.caption(md_escape(poll["explanation"]))


# --- the teacher -------------------------------------------------------------------------------------------

def _bank():
    from attention_core.labs.polls import POLL_KINDS, available, make_poll
    return POLL_KINDS, available, make_poll


def ask_poll(store, code, secret, kind: str, trace, seed: int = 0, at: dict | None = None) -> str | None:
    """Open a question of the bank (made from `trace`, the teacher's settings; `at`, a lesson stop's poll_at, pins
    it to the stop's own question) in the room: its poll id, or None with a message shown (a kind that does not fit
    these settings, or the room's own message).
    It replaces any question in progress. Call it before teacher_poll_panel in the run (or rerun after it)."""
    kinds, _, make_poll = _bank()
    poll = make_poll(kind, trace, seed, at=at) if trace is not None and kind in kinds else None
    if poll is None:
        st.warning(md_escape((f"This stop's question (“{kinds[kind]}”, pinned to "
                              + ", ".join(f"{k} {v}" for k, v in at.items())
                              + ") does not fit the current settings: “Show this stop” brings back the stop's "
                              "settings, then ask it.") if at and kind in kinds else
                             f"The question “{kinds[kind]}” does not fit the current settings: choose another, "
                             "or change the settings it needs." if kind in kinds else
                             f"There is no question “{str(kind)[:40]}” in the bank: choose one of its questions."),
                   icon=":material/info:")
        return None
    try:
        return classroom.open_poll(store, code, secret, {"kind": kind, "seed": int(seed), **poll.to_dict()})
    except RoomError as err:
        st.error(md_escape(str(err)))
        return None


def teacher_poll_panel(store, code, secret, trace) -> None:
    """The teacher's poll: with no question open, the bank and "Ask the class"; while one is open, its live
    chart with "Reveal the answer" and "Close the question"; after the reveal, the right answer marked, its
    arithmetic, "Next question" and "Close the question". A RoomError (an ended room) is shown as its message."""
    try:
        poll = classroom.state(store, code).poll
    except RoomError as err:
        st.error(md_escape(str(err)))
        return
    if poll is None:
        _ask_form(store, code, secret, trace)
        if own_question_form(store, code, secret):
            st.rerun(scope="app")
    elif not poll.get("revealed"):
        _live_poll(store, code, secret, poll["id"])
    else:
        _revealed_for_teacher(store, code, secret, poll, trace)


def _next_seed() -> int:
    st.session_state[SEED] = st.session_state.get(SEED, 0) + 1
    return st.session_state[SEED]


def _ask_form(store, code, secret, trace) -> None:
    kinds, available, make_poll = _bank() if trace is not None else ({}, None, None)
    fits = available(trace) if trace is not None else []
    if not fits:
        st.caption("The question bank's questions are made from the sentence and settings of the forward pass: "
                   "open a page with those settings to ask one, or write your own below.")
        return
    if st.session_state.get("poll.kind") not in fits:          # kept from settings where other kinds fit
        st.session_state.pop("poll.kind", None)
    with st.container(border=True):
        kind = st.selectbox("Ask the class a question", fits, format_func=lambda k: kinds.get(k, k), key="poll.kind")
        seed = st.session_state.get(SEED, 0)
        preview = make_poll(kind, trace, seed)
        if preview is not None:
            st.caption(md_escape(f"The class will see: {preview.prompt}"))
        if st.button("Ask the class", icon=":material/campaign:", type="primary", key="poll.ask"):
            if ask_poll(store, code, secret, kind, trace, seed) is not None:
                _next_seed()
                st.rerun()


def _answered_line(counts, joined: int) -> str:
    """"2 of 3 students answered"; after a reveal, answers of students who then left (or were removed) stay in the
    counts, so more may have answered than are in the room now:

        >>> _answered_line([0, 2], 1)
        '2 answered (1 student in the room now: the answers of those who left stay in the counts)'
    """
    n = sum(counts)
    if n > joined:
        return (f"{n} answered ({joined} student{'s' if joined != 1 else ''} in the room now: the answers of those "
                "who left stay in the counts)")
    return f"{n} of {joined} student{'s' if joined != 1 else ''} answered"


@st.fragment(run_every=1.0)
def _live_poll(store, code, secret, poll_id: str) -> None:
    """Re-drawn every second from the store: the answers so far, no choice marked (the projector shows it)."""
    try:
        poll = classroom.state(store, code).poll
        if poll is None or poll["id"] != poll_id or poll.get("revealed"):
            st.rerun(scope="app")                      # closed, replaced or revealed elsewhere: the whole panel
        counts = classroom.tally(store, code, poll_id)
        joined = len(classroom.members(store, code))
    except RoomError as err:
        st.error(md_escape(str(err)))
        return
    with st.container(border=True):
        _prompt(poll)
        _bars(poll, counts)
        before = poll.get("phase") == "pre"           # the check before the lesson: never revealed (it comes back)
        st.caption(f":material/how_to_vote: {_answered_line(counts, joined)} · answers arrive live; " + (
            "students can change theirs until you move on. No reveal before the lesson: the same question comes "
            "back after it" if before else "students can change theirs until you reveal" + (
                "; you may reveal before everyone has answered: answers then close, and whoever has not "
                "answered sees the answer" if sum(counts) < joined else "")))
        left, right = st.columns(2)
        if not before and left.button("Reveal the answer", icon=":material/visibility:", type="primary",
                                      key="poll.reveal"):
            _act(lambda: classroom.reveal(store, code, secret, poll_id))
        if right.button("Close the question", icon=":material/close:", key="poll.close"):
            _act(lambda: classroom.close_poll(store, code, secret))


def _act(step) -> None:
    """A teacher's button: do it, then redraw the whole panel; the room's message if it fails."""
    try:
        step()
    except RoomError as err:
        st.error(md_escape(str(err)))
        return
    st.rerun(scope="app")


def _revealed_for_teacher(store, code, secret, poll, trace) -> None:
    try:
        counts = classroom.tally(store, code, poll["id"])
        joined = len(classroom.members(store, code))
    except RoomError as err:
        st.error(md_escape(str(err)))
        return
    right = poll["answer"]
    with st.container(border=True):
        _prompt(poll)
        _bars(poll, counts, right=right)
        st.success(md_escape(f"The answer: {choice_text(poll, right)}"), icon=":material/check:")
        _explanation(poll)
        st.caption(f"{_answered_line(counts, joined)}; {counts[right]} chose {letter(right)}.")
        left, mid = st.columns(2)
        if left.button("Next question", icon=":material/skip_next:", type="primary", key="poll.next"):
            _next_question(store, code, secret, poll, trace)
        if mid.button("Close the question", icon=":material/close:", key="poll.close"):
            _act(lambda: classroom.close_poll(store, code, secret))


def _next_question(store, code, secret, poll, trace) -> None:
    """The bank's next kind that fits the settings (after this question's), with a new seed; the question
    closes either way."""
    _, available, _ = _bank()
    fits = available(trace) if trace is not None else []
    if not fits:
        _act(lambda: classroom.close_poll(store, code, secret))
        return
    kind = fits[(fits.index(poll["kind"]) + 1) % len(fits)] if poll.get("kind") in fits else fits[0]
    if ask_poll(store, code, secret, kind, trace, _next_seed()) is not None:
        st.session_state["poll.kind"] = kind
        st.rerun(scope="app")


# --- a student ---------------------------------------------------------------------------------------------

def _poll_key(code, poll) -> str:
    return f"{code}:{poll['id']}:{poll.get('at', '')}"


def _send(store, code, member, poll: dict, pick_key: str) -> None:
    """"Send my answer"'s callback (it runs before the next run, whatever that run draws): the room checks
    membership, that the question is still open and unrevealed, and the count of changes."""
    pick = st.session_state.get(pick_key)
    if pick is None:
        st.session_state[NOTE] = ("warning", "Pick one of the choices first, then send it.")
        return
    try:
        classroom.answer(store, code, member, poll["id"], int(pick))
    except classroom.TooMany as err:                    # the answer kept is the last one sent: it stands
        st.session_state[FINAL] = _poll_key(code, poll)
        st.session_state[NOTE] = ("error", str(err))
        return
    except RoomError as err:
        st.session_state[NOTE] = ("error", str(err))
        return
    st.session_state[MINE] = (_poll_key(code, poll), int(pick))
    st.session_state.pop(NOTE, None)


def _note() -> None:
    note = st.session_state.pop(NOTE, None)
    if note:
        (st.error if note[0] == "error" else st.warning)(md_escape(note[1]), icon=":material/info:")


def _mine(store, code, member, poll) -> int | None:
    """This student's answer: read once per question, then kept (only this session holds the member id)."""
    key = _poll_key(code, poll)
    kept = st.session_state.get(MINE)
    if not kept or kept[0] != key:
        kept = st.session_state[MINE] = (key, classroom.my_answer(store, code, poll["id"], member))
    return kept[1]


def student_poll_card(store, code, member, room_state) -> None:
    """A student's side of the room's question (room_state: classroom.state, read once by the caller). Drawn
    inside the room bar's following fragment: no fragment of its own. Nothing when no question is open (but a
    message for an answer sent just as it closed)."""
    poll = getattr(room_state, "poll", None)
    if poll is None:
        _note()
        return
    with st.container(border=True):
        _prompt(poll)
        if poll.get("revealed"):
            _note()
            _revealed_for_student(store, code, member, poll)
            return
        mine = _mine(store, code, member, poll)         # a send's callback ran before this run: it is in
        pick_key = f"poll.pick.{code}.{poll['id']}"
        with st.form(f"poll.form.{code}.{poll['id']}", border=False):
            st.radio("Your answer", range(len(poll["choices"])), index=None, key=pick_key,
                     format_func=lambda i: md_escape(choice_text(poll, i)),
                     horizontal=sum(len(c) for c in poll["choices"]) <= 60)
            st.form_submit_button("Send my answer", icon=":material/send:", type="primary",
                                  on_click=_send, args=(store, code, member, poll, pick_key))
        _note()
        if mine is not None:
            final = st.session_state.get(FINAL) == _poll_key(code, poll)
            st.info(md_escape(f"Your answer: {choice_text(poll, mine)} — " + (
                "it stands" if final else "you can change it") + (
                " until your teacher moves on." if poll.get("phase") == "pre" else " until the teacher reveals.")),
                icon=":material/how_to_vote:")


def _revealed_for_student(store, code, member, poll) -> None:
    """The right answer and its arithmetic, the class's bars with this student's own beside the right one.
    Answers are closed once revealed, so the counts are read once and kept."""
    key = _poll_key(code, poll)
    frozen = st.session_state.get(FROZEN)
    if not frozen or frozen[0] != key:
        try:
            counts = classroom.tally(store, code, poll["id"])
        except RoomError:                               # replaced since the room state was read: the next run
            return
        frozen = st.session_state[FROZEN] = (key, counts, _mine(store, code, member, poll))
    _, counts, mine = frozen
    right = poll["answer"]
    if mine == right:
        st.success(md_escape(f"Right: you chose {choice_text(poll, right)}"), icon=":material/check:")
    elif mine is None:
        st.info(md_escape(f"You did not answer. The answer: {choice_text(poll, right)}"), icon=":material/info:")
    else:
        st.error(md_escape(f"You chose {choice_text(poll, mine)}; the answer is {choice_text(poll, right)}"),
                 icon=":material/close:")
    _explanation(poll)
    _bars(poll, counts, right=right, you=mine)
    you = letter(mine) if mine is not None else "no answer"
    st.caption(md_escape(f"you: {you} · right: {letter(right)} · class: {counts[right]} of {sum(counts)} "
                         f"chose {letter(right)}"))

"""A lesson's check in the teacher's room bar: the same questions asked before the first stop ("pre") and after the
last ("post"), one at a time, as the room's class question (a student answers it in their poll card), so the room
page can say what the class learned (ui/classroom/results_view.py, classroom/results.py).

"Start the check" (on the first stop: before the lesson; on the last: after it) opens its first question;
"Next check question" closes the open one (never revealed before the lesson: the answers would give the check
away) and opens the next; "End check" closes the last. A question of the bank is made on its own view's settings
(its page and link parameters, pinned by poll_at), computed here without showing that view to the class; the
teacher's own is asked as written.
"""
from __future__ import annotations

import streamlit as st

import classroom

from ..text import md_escape
from .session import store

CHECK = "room.check"                  # session: {"phase": "pre" | "post", "q": the open question's number}
START_PRE, START_POST = "Start the check (before the lesson)", "Start the check (after the lesson)"
NEXT_Q, END_CHECK = "Next check question ▶", "End check"
PHASE_NAMES = {"pre": "before the lesson", "post": "after the lesson"}
DONE_WORDS = {"pre": ":material/fact_check: The check before the lesson is over: its answers are kept, not revealed. "
                     "Start the check again on the last stop, after the lesson: the room page then shows what the "
                     "class learned.",
              "post": ":material/fact_check: The check after the lesson is over: the room page shows what the class "
                      "learned."}


def check_poll(question, phase: str, number: int, of: int) -> tuple[dict | None, str]:
    """The room's poll for check question `number` (0-based) of `of`: (its body, "") or (None, why not)."""
    tag = {"phase": phase, "check": number, "check_n": of}
    if question.own:
        return {"kind": "own", "prompt": question.prompt, "choices": list(question.choices),
                "answer": int(question.answer), "explanation": "", **tag}, ""
    from attention_core.labs.export.link import config_from_query
    from attention_core.labs.polls import POLL_KINDS, make_poll
    from ..cache import get_trace
    if question.poll not in POLL_KINDS:
        return None, (f"Check question {number + 1} asks “{question.poll[:40]}”, which is not a question of the bank: "
                      "edit the lesson's check.")
    config, _ = config_from_query(question.query)
    poll = make_poll(question.poll, get_trace(config), 0, at=question.poll_at or None)
    if poll is None:
        return None, (f"Check question {number + 1} (“{POLL_KINDS[question.poll]}”) cannot be asked on its view's "
                      "settings: edit the lesson's check.")
    return {**poll.to_dict(), "seed": 0, **tag}, ""


def _ask(code: str, secret: str, lesson, phase: str, number: int) -> None:
    body, why = check_poll(lesson.check[number], phase, number, len(lesson.check))
    if body is None:
        st.session_state["room.notices"] = [why]
        return
    try:
        classroom.open_poll(store(), code, secret, body)
    except classroom.RoomError as err:
        st.session_state["room.notices"] = [str(err)]
        return
    except Exception:
        st.session_state["room.notices"] = ["The room cannot be reached right now: the check question was not asked."]
        return
    st.session_state[CHECK] = {"phase": phase, "q": number}
    st.session_state["room_poll_box"] = True               # the Class question box opens with its live chart


def _end(code: str, secret: str, phase: str = "post") -> None:
    st.session_state.pop(CHECK, None)
    try:
        classroom.close_poll(store(), code, secret)
    except Exception:
        pass                                              # an ended room, or a store down: nothing is open
    st.session_state["room.check_done"] = phase


def _open(code: str, running: dict) -> bool:
    """Whether the room's open question is still this check question (the teacher may have closed it in the box)."""
    try:
        poll = classroom.state(store(), code).poll
    except Exception:                                     # the store does not answer: the bar says so above
        return True
    return bool(poll) and poll.get("phase") == running["phase"] and poll.get("check") == running["q"]


def check_bar(code: str, secret: str, lesson, i: int) -> None:
    """The check's line and buttons in the lesson's part of the teacher's bar (stop i of the lesson shown)."""
    if not lesson.check:
        return
    state = st.session_state
    running = state.get(CHECK)
    n = len(lesson.check)
    if running and not 0 <= running.get("q", -1) < n:     # another lesson since: its check starts afresh
        state.pop(CHECK)
        running = None
    if running:
        q = running["q"]
        st.markdown(md_escape(f"Check {PHASE_NAMES[running['phase']]}: question {q + 1} of {n} " + (
            "is open. " + ("It is not revealed (the same question comes back after the lesson): move on when the "
                           "class has answered." if running["phase"] == "pre" else "Reveal it in the Class question "
                           "box if you like, or move on when the class has answered.")
            if _open(code, running) else "was closed (in the Class question box): its answers are kept. Move on.")))
        left, right = st.columns(2)
        if q + 1 < n:
            left.button(NEXT_Q, key="room_check_next", type="primary", width="stretch",
                        on_click=_ask, args=(code, secret, lesson, running["phase"], q + 1))
        right.button(END_CHECK, key="room_check_end", width="stretch", type="primary" if q + 1 == n else "secondary",
                     on_click=_end, args=(code, secret, running["phase"]))
        return
    done = state.pop("room.check_done", None)
    if done:
        st.caption(DONE_WORDS.get(done, DONE_WORDS["post"]))
    cols = st.columns(2)
    if i == 0:
        cols[0].button(START_PRE, key="room_check_pre", icon=":material/fact_check:", width="stretch",
                       on_click=_ask, args=(code, secret, lesson, "pre", 0))
    if i == len(lesson.stops) - 1:
        cols[1].button(START_POST, key="room_check_post", icon=":material/fact_check:", width="stretch",
                       on_click=_ask, args=(code, secret, lesson, "post", 0))

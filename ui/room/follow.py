"""A student in a room: the bar that follows the teacher (a fragment that reads the room every POLL_SECONDS),
says when the student has stepped out to explore, brings them back in one click, and holds the poll card.

Following: when the room's view is newer than the one this session last put in, it is put in
(ui.settings.apply_view) and the page switches to it (st.switch_page works inside a fragment in Streamlit
1.67: it requests a full run of the new page). Stepped out: the view this session shows is no longer the one
put in (a setting, a control, a tab, a cell or another page); the teacher's next view then waits for a click.
The room's question (ui/room/poll.py's card) is drawn in the same fragment, from the same read of the room.
A change of the room (a push, a question, the lock) runs the fragment at once: ui/room/wake.py's watcher wakes it
(within FOLLOW_SECONDS of a page switch, its browser's own tick does instead: wake.py says why);
its own timer is then the slow FOLLOW_SECONDS (presence, a removal), or POLL_SECONDS where no wake can be made.
"""
from __future__ import annotations

import streamlit as st

import classroom
from classroom import pacing
from classroom.presence import removed_words

from ..page_state import CELL, view_of
from . import wake
from .poll import student_poll_card
from .rejoin import keep_cookie, taken_over, tick
from .session import ROOM_PAGE, go, known_page, leave, store
from ..text import md_escape

POLL_SECONDS = 0.3               # without a wake: a following screen changes within about this after a push
FOLLOW_SECONDS = 2.0             # woken by a push: the timer only says the student is here (presence.SEEN_EVERY)
OUT_SECONDS = 1.5                # a student exploring on their own: the teacher's news and a poll within this
# Measured (tests/load/room.py): a tick costs ~2.5-3 ms (a bare fragment's 2.4 ms is Streamlit's floor). Polling,
# 30 screens at 0.3 s were 100 ticks/s (29% of a core) and a push waited up to a tick for each screen; 150 would
# be 500 ticks/s, 1.5 of 2 cores. Woken (ui/room/wake.py), the push starts every run at once and the idle class
# costs 1/FOLLOW_SECONDS tick a student a second.
BACK = "Back to the teacher's view"
LOCKED_LINE = (":material/lock: Your teacher has locked the view: your screen stays on theirs, and changes you make "
               "are undone until they unlock it.")
LOCKED_NOTHING = (":material/lock: Your teacher has locked the class: when they show a view, your screen stays on it "
                  "until they unlock it.")
LOCKED_ROOM_PAGE = ("Your teacher has locked the class to their view: this page stays open so that "
                    "you can leave the room; any other page brings you back to their view.")
LOCKED_BACK = ("Your teacher has locked the class to their view: your screen is back on it, and stays there until "
               "they unlock it.")
LOCKED_UNDONE = ("Your teacher has locked the view: your change was undone. You can explore on your own again when "
                 "they unlock it.")
PREDICT_LINE = ":material/psychology_alt: Predict first: answer your teacher's question before this page does."
PREDICT_HIDDEN = " The numbers that answer it show “?” until your teacher reveals them."
REVEALED_LATER = (":material/visibility: Revealed. What still shows “?”, or “Predict first: revealed by your "
                  "teacher”, answers a question still to come on this view: predict it when your teacher asks.")


def student_bar(page_file: str) -> None:
    """On every page run of a student in a room (ui/room/bar.py): the first run on a view the teacher showed
    records it as this session shows it; the notices of that view; then the following fragment."""
    state = st.session_state
    if state.get("room.applied") and state.get("room.baseline") is None:
        state["room.baseline"] = view_of(page_file)
    for notice in state.pop("room.notices", None) or []:
        st.warning(md_escape(notice), icon=":material/link_off:")
    undone = state.pop("room.undone", None)
    if undone:
        st.warning(undone, icon=":material/lock:")
    here = view_of(page_file)
    if (state.get("room.locked") and state.get("room.following") and state.get("room.baseline") is not None
            and page_file != ROOM_PAGE and _moved(here, state["room.baseline"])):     # the room page: to leave
        _undo(state["room.code"])                 # locked: this change goes back to the teacher's view
    if stepped_out(here):
        _follow_out()
    else:
        _follow()


def _undo(code: str) -> None:
    """A locked student's own change (a setting, a control, a tab, another page): the teacher's view again, said in
    a line. The room is read once to be sure it is still locked (the session's flag is the last tick's)."""
    state = st.session_state
    try:
        room = classroom.state(store(), code)
    except Exception:                             # the store does not answer: the change stays; the bar says why
        return
    state["room.locked"] = room.locked
    view = room.view
    if room.locked and view and known_page(view.get("page")):
        state["room.undone"] = LOCKED_UNDONE
        go(view, int(view.get("version", 0)))


def _removed(code: str, member) -> bool:
    try:
        return pacing.removed(store(), code, member)
    except Exception:
        return False


def removed_here(code: str) -> None:
    """The teacher removed this student: the session leaves the room, the cookie goes, and the page says so."""
    leave()
    st.session_state["room.ended"] = removed_words(code)


def _report(code: str, out: bool) -> None:
    """This screen's state in the room, for the teacher's dashboard: written only when it changes."""
    state = st.session_state
    now = ("out", state.get("s.page")) if out else ("following", None)
    if state.get("room.reported") == now or not state.get("room.member"):
        return
    try:
        pacing.report(store(), code, state["room.member"], *now)
        state["room.reported"] = now
    except Exception:                             # the store does not answer: said on the next tick
        pass


def stepped_out(here: dict) -> bool:
    """Whether the student has left the view last put in (and so follows no more). A stop to predict: a click on
    a cell (its explanation, or "hidden until your teacher reveals it") is not leaving, so the reveal still comes."""
    state = st.session_state
    if state.get("room.following") and state.get("room.baseline") is not None and _moved(here, state["room.baseline"]):
        state["room.following"] = False
    return not state.get("room.following")


def _switch_lost(view: dict, version: int) -> bool:
    """The view last put in is the room's, yet its page has not run in this session since (no baseline yet) and the
    session is on another page: the page switch was lost on the way (seen under load about once in a hundred
    screens, tests/load/room.py), and nothing else would bring the student there."""
    state = st.session_state
    return (known_page(view.get("page")) and int(state.get("room.applied") or 0) == version
            and state.get("room.baseline") is None and state.get("s.page") not in (None, view["page"]))


def _moved(here: dict, baseline: dict) -> bool:
    if here == baseline:
        return False
    if st.session_state.get("room.stage") != "predict":
        return True
    cellless = lambda view: {**view, "query": {k: v for k, v in (view.get("query") or {}).items() if k != CELL}}
    return cellless(here) != cellless(baseline)


def _session_id() -> str:
    from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

    ctx = get_script_run_ctx(suppress_warning=True)
    return ctx.session_id if ctx is not None else ""


def _follow_room() -> None:
    state = st.session_state
    code = state.get("room.code")
    if not code or state.get("room.secret"):
        return
    if _follow_seconds == FOLLOW_SECONDS:
        wake.follow(store(), code)                # first: a change of the room after this wakes this fragment
    try:
        room = classroom.state(store(), code)
    except classroom.NoRoom:                      # the room ended (expired) while the student was in it
        leave()
        state["room.ended"] = (f"{classroom.room.ended(code)} You keep exploring on your own; to join another "
                               "room, type its code on the room page.")
        st.rerun(scope="app")
    except classroom.RoomError as err:            # the store does not answer: still in the room, retry next tick
        st.caption(f":material/cloud_off: {md_escape(err)} You stay in room {code}: this bar tries again by itself.")
        return
    except Exception:                             # the store does not answer: keep exploring, retry next tick
        st.caption(f":material/cloud_off: Room {code} cannot be reached right now; you keep exploring, and this "
                   "bar tries again by itself.")
        return
    if not tick(code):                            # removed by the teacher; or back in another tab or device
        if _removed(code, state.get("room.member")):
            removed_here(code)
        else:
            taken_over(code)
        st.rerun(scope="app")
    view = room.view
    version = int(view.get("version", 0)) if view else 0
    newer = version > int(state.get("room.applied") or 0)
    state["room.locked"] = room.locked
    out = stepped_out(view_of(state.get("s.page")))
    wake.trace("run", _session_id(), state.get("s.page"), version, state.get("room.applied"), newer, out)
    if (out and room.locked and view and known_page(view.get("page"))      # locked: back to the teacher's view
            and state.get("s.page") != ROOM_PAGE):                          # (not from the room page: to leave)
        state["room.following"] = True
        state["room.undone"] = LOCKED_BACK
        go(view, version)
    _report(code, out)
    if newer and not out and known_page(view.get("page")):
        go(view, version)
    elif not out and view and _switch_lost(view, version):       # put in, but its page never ran: again
        go(view, version)
    elif view:                                    # stepped out: the teacher's stop still hides its answer here
        state["room.hide"], state["room.stage"] = list(view.get("hide") or ()), view.get("stage")
    with st.container(border=True):
        if not out:
            st.caption(f":material/co_present: Room {code} · you follow your teacher's screen"
                       + ("" if view else " (nothing shown yet)"))
            if room.locked:
                st.caption(LOCKED_LINE if view else LOCKED_NOTHING)     # nothing shown: nothing to hold them on
            if view and view.get("stage") == "predict":
                st.caption(PREDICT_LINE + (PREDICT_HIDDEN if view.get("hide") else " Your teacher reveals the answer."))
            elif view and view.get("stage") == "revealed" and view.get("hide"):   # a later stop's answer still hidden
                st.caption(REVEALED_LATER)
        else:                                     # locked: only the room page (to leave) gets here
            held = room.locked and view and known_page(view.get("page"))
            st.info(("Your teacher is showing something new. " if newer else "") +
                    (LOCKED_ROOM_PAGE if held else
                     "You stepped out to explore on your own; the class follows the teacher's view."),
                    icon=":material/lock:" if held else ":material/explore:")
            if view and known_page(view.get("page")) and st.button(BACK, key="room_back", type="primary",
                                                                     icon=":material/undo:"):
                state["room.following"] = True
                go(view, version)
    student_poll_card(store(), code, state.get("room.member"), room)
    keep_cookie()             # last in the fragment: a page switch can drop what the page run drew, not this


_follow_seconds = FOLLOW_SECONDS if wake.available() else POLL_SECONDS
_follow = st.fragment(run_every=_follow_seconds)(_follow_room)      # following: woken by a push, or polling
_follow_out = st.fragment(run_every=OUT_SECONDS)(_follow_room)      # stepped out: news and polls within 1.5 s

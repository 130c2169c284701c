"""A reload is not a goodbye: this browser's room cookie, the session's way back into its room, and presence.

The cookie (COOKIE, for the app's path only, SameSite=Strict, never in the address bar: the address is the
shareable view) holds the room's code and a student's single-use rejoin token (s.CODE.MEMBER.TOKEN) or the
teacher's secret (t.CODE.SECRET, what the teacher's private link holds). Streamlit's session state dies with a
reload; the cookie reaches the server with the next connection (st.context.cookies), whichever replica it lands
on. A session's first page run (`resume`, from the room bar) puts it back: the student as the same member (the
token is used up and the cookie gets the next one), the teacher with the controls. A student whose place is in
use in another tab or device right now (its screen checked the room within classroom.PRESENT_SECONDS) waits: a
small fragment tries again every WAIT_SECONDS and comes in as soon as that screen has gone quiet (a reload's
old tab goes quiet at once). Presence: `tick`, from the following fragment, marks the student seen at most
every classroom.presence.SEEN_EVERY seconds.
"""
from __future__ import annotations

import time

import streamlit as st

import classroom
from classroom.presence import SEEN_EVERY

from ..raw_html import set_cookie
from .session import go, known_page, leave, reclaim, rejoin, store
from ..text import md_escape

COOKIE = "attention_explorer_room"
COOKIE_HOURS = 2 * classroom.ROOM_HOURS     # the browser forgets it after this; the room's own expiry is the limit
WAIT_SECONDS = 1.0


def cookie() -> str:
    """This browser's room cookie as it came with this session's connection ("" without one)."""
    try:
        value = st.context.cookies.get(COOKIE)
    except Exception:                       # no browser (a script run without a connection)
        return ""
    return value if isinstance(value, str) else ""


def app_path() -> str:
    base = str(st.get_option("server.baseUrlPath") or "").strip("/")
    return "/" + base


def keep_cookie() -> None:
    """Each full page run of a session that has been in a room: the cookie it should have (the element is the same
    run after run, so the browser writes it when it changes or moves)."""
    value = st.session_state.get("room.cookie")
    if value is None:
        return
    try:
        set_cookie(COOKIE, value, app_path(), COOKIE_HOURS * 3600)
    except ValueError:                      # not a value this app writes: none written
        pass


def resume() -> None:
    """Once per session, before anything about rooms is drawn: this browser's cookie back into its room."""
    state = st.session_state
    if "room.code" in state or state.get("rejoin.tried"):
        return
    state["rejoin.tried"] = True            # not a room.* key: out of a room, nothing about rooms is kept
    value = cookie()
    if value:
        _come_back(value)


def _come_back(value: str) -> bool:
    """Try the cookie once: True if this session is in its room now."""
    state = st.session_state
    parts = value.split(".")
    try:
        if len(parts) == 3 and parts[0] == "t":
            reclaim(parts[1], parts[2])
        elif len(parts) == 4 and parts[0] == "s":
            nick = rejoin(parts[1], parts[2], parts[3])
            state["room.back"] = nick
        else:
            state["room.cookie"] = ""
            return False
    except classroom.Elsewhere as err:
        state["room.waiting"], state["room.wait_said"] = value, str(err)
        return False
    except classroom.NoRoom:
        code = classroom.normal_code(parts[1]) if len(parts) > 1 else None
        state["room.cookie"] = ""
        state.pop("room.waiting", None)
        if code:
            state["room.ended"] = (f"{classroom.room.ended(code)} You explore on your own; to join another room, "
                                   "type its code on the room page.")
        return False
    except (classroom.NotYours, classroom.NotTeacher) as err:
        state["room.cookie"] = ""
        state.pop("room.waiting", None)
        state["room.ended"] = str(err)
        return False
    except Exception as err:                # the store does not answer: try again in a moment
        state["room.waiting"] = value
        state["room.wait_said"] = (str(err) if isinstance(err, classroom.RoomError) else
                                   "The room cannot be reached right now.") + " This tab tries again by itself."
        return False
    state.pop("room.waiting", None)
    return True


@st.fragment(run_every=WAIT_SECONDS)
def waiting() -> None:
    """A session whose place is in use elsewhere (or whose store does not answer): tries again every second."""
    state = st.session_state
    value = state.get("room.waiting")
    if not value:
        return
    if _come_back(value):
        _to_the_teachers_view()
    if state.get("room.waiting"):
        st.caption(f":material/hourglass_top: {md_escape(state.get('room.wait_said', ''))}")
    else:                                   # refused for good: the page says why
        st.rerun(scope="app")


def _to_the_teachers_view() -> None:
    """Back in the room from the waiting fragment: straight to the teacher's view (one page run, not a run of this
    page and then the switch), or a run of this page if the teacher has shown nothing yet."""
    state = st.session_state
    try:
        room = classroom.state(store(), state["room.code"])
    except Exception:
        room = None
    view = room.view if room is not None else None
    if view and known_page(view.get("page")):
        go(view, int(view.get("version", 0)))
    st.rerun(scope="app")


def welcome() -> None:
    """The run after a student came back: said once."""
    nick = st.session_state.pop("room.back", None)
    if nick is not None:
        st.toast(f"Back in room {st.session_state.get('room.code')} as {md_escape(nick)}.", icon=":material/login:")


def tick(code: str) -> bool:
    """A following screen's tick: the student is here (one store write every SEEN_EVERY seconds at most). False if
    this session's place was taken over (the same student came back in another tab or on another device, or left
    there): the caller leaves the room in this session, keeping the cookie for the tab that holds the place."""
    state = st.session_state
    now = time.monotonic()
    if now - state.get("room.seen_at", float("-inf")) < SEEN_EVERY:
        return True
    state["room.seen_at"] = now
    token, member = state.get("room.token"), state.get("room.member")
    if not token or not member:
        return True
    try:
        return classroom.seen(store(), code, member, token)
    except Exception:                       # the store does not answer: still in the room; the bar says so
        return True


def taken_over(code: str) -> None:
    nick = st.session_state.get("room.nick", "")
    leave(forget=False)
    st.session_state.pop("room.cookie", None)      # write nothing: the cookie is the other tab's now
    st.session_state["room.ended"] = (f"This tab is no longer in room {code} as “{nick}”: you came back to the "
                                      "room in another tab or on another device (or left it there). This tab "
                                      "keeps exploring on its own.")

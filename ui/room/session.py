"""A room as this session holds it: the store, the session's keys, and the steps that change them (open, join,
reclaim, leave, go to a view). Nothing is drawn here: the room page (ui/classroom/room_view.py) and the room bar
(ui/room/bar.py, ui/room/follow.py) draw.

Session keys (the names other views read):
    room.code       the room this session is in (absent: in no room, and nothing about rooms runs)
    room.secret     the teacher's secret: only the session that opened (or reclaimed) the room holds it
    room.member     a student's member id (never shown); room.nick the nickname as the room keeps it
    room.following  a student follows the teacher's view (False: stepped out to explore)
    room.lesson     a classroom.lesson.Lesson the teacher steps through (or None); room.stop its stop's index
    room.applied    the version of the teacher's view last put into this session; room.baseline that view as
                    this session shows it (view_of after the first run on its page): any difference is a step out
    room.notices    notices of the last view put in (values it could not use), shown once
    room.hide       the numbers the view last put in hides until the teacher reveals (a lesson stop's predict
                    state: classroom.push's "hide"); ui/room/hide.py reads it. room.stage its "predict" or
                    "revealed" (absent: a view that is not a stop's); room.staged the teacher's stop shown to
                    predict and not yet revealed (its index: the room bar's "Reveal"); room.revealed (the lesson,
                    the indices of its stops revealed in this room): their answers are no longer kept hidden
    room.locked     a student's copy of the room's lock (the last tick's): their own changes are undone
    room.reported   what this student's screen last reported to the room (classroom.pacing.report)
    room.dashboard  the teacher's table of each student is on (the room page's switch)
    room.undone     the line saying a locked student's change was undone, shown once
    room.misses     when this session typed a code that opens no room (at most MISSES a minute)
    room.token      a student's rejoin token (classroom/presence.py): this browser's cookie holds it too
    room.cookie     what this browser's room cookie should hold ("" to delete it): written by the next page run
                    (ui/room/rejoin.py), so a reload, a dropped connection or another replica comes back here
"""
from __future__ import annotations

import os
import time

import streamlit as st

import classroom
from classroom.store import REDIS_URL_VARIABLE

from . import wake
from .. import nav
from ..settings import apply_view

ROOM_PAGE = "app_pages/60_room.py"
KEYS = ("room.code", "room.secret", "room.member", "room.nick", "room.following", "room.title", "room.applied",
        "room.baseline", "room.notices", "room.shown", "room.hide", "room.stage", "room.staged", "room.token",
        "room.revealed", "room.seen_at", "room.waiting", "room.locked", "room.reported", "room.undone",
        "room.dashboard")
MISSES, MISS_WINDOW = 10, 60.0             # wrong codes a session may type in a minute

_STORES: dict[str, classroom.Store] = {}


def store() -> classroom.Store:
    """The process's room store (classroom.store_from_env), made once per process and setting."""
    url = os.environ.get(REDIS_URL_VARIABLE, "").strip()
    if url not in _STORES:
        _STORES[url] = classroom.store_from_env()
    return _STORES[url]


def code() -> str | None:
    return st.session_state.get("room.code")


def teaching() -> bool:
    return bool(st.session_state.get("room.code") and st.session_state.get("room.secret"))


def leave(forget: bool = True) -> None:
    """This session leaves its room (a teacher's room lives on until it expires; the secret is forgotten), and with
    `forget` this browser's cookie too (not when another tab of the same browser now holds the place)."""
    for key in KEYS:
        st.session_state.pop(key, None)
    wake.forget()                                 # no push wakes this session now
    if forget:
        st.session_state["room.cookie"] = ""


def student_cookie(room_code: str, member: str, token: str) -> str:
    """What a student's browser keeps to come back: s.CODE.MEMBER.TOKEN (letters, digits, - and _ between dots)."""
    return f"s.{room_code}.{member}.{token}"


def teacher_cookie(room_code: str, secret: str) -> str:
    """What a teacher's browser keeps to come back with the controls: t.CODE.SECRET (like the teacher's link)."""
    return f"t.{room_code}.{secret}"


def _in_room_as_student(room_code: str, member: str, nick: str, token: str) -> None:
    leave(forget=False)
    st.session_state.update({"room.code": room_code, "room.member": member, "room.following": True,
                             "room.nick": nick, "room.applied": 0, "room.token": token,
                             "room.seen_at": time.monotonic(), "room.title": classroom.state(store(), room_code).title,
                             "room.cookie": student_cookie(room_code, member, token)})


def open_room(title: str) -> str:
    code, secret = classroom.open_room(store(), title)
    leave()
    st.session_state.update({"room.code": code, "room.secret": secret,
                             "room.title": classroom.room.clean_text(title, 60),
                             "room.cookie": teacher_cookie(code, secret)})
    return code


def reclaim(code_text: str, secret: str) -> str:
    """The teacher's own link on another device: the room's powers if the secret is the room's; else
    NotTeacher (or NoRoom) with its message, and this session keeps what it had."""
    try:
        room_code = classroom.check(store(), code_text)
    except classroom.NoRoom:
        if classroom.normal_code(code_text) is None:        # not a code at all: its own message
            raise
        raise classroom.NoRoom(f"{classroom.room.ended(classroom.normal_code(code_text))} This teacher's link "
                               "opens it no more: open a new room to teach again.") from None
    if not classroom.room.is_teacher(store(), room_code, secret):
        raise classroom.NotTeacher(f"This teacher's link does not open room {room_code}: its secret is not the "
                                   "room's (cut short when copied?). Copy the link again from the teacher's screen; "
                                   "students join with the code alone.")
    title = classroom.state(store(), room_code).title
    leave()
    st.session_state.update({"room.code": room_code, "room.secret": secret, "room.title": title,
                             "room.cookie": teacher_cookie(room_code, secret)})
    return room_code


def too_many_misses(now: float | None = None) -> bool:
    now = time.monotonic() if now is None else now
    misses = [t for t in st.session_state.get("room.misses", []) if now - t < MISS_WINDOW]
    st.session_state["room.misses"] = misses
    return len(misses) >= MISSES


def join(code_text: str, nickname: str) -> str:
    """Join a room as a student: its code (RoomError with its message if it cannot be joined)."""
    if too_many_misses():
        raise classroom.TooMany(f"{MISSES} codes in a minute opened no room: wait a minute, then type the code on "
                                "your teacher's screen again.")
    try:
        room_code = classroom.check(store(), code_text)
        member = classroom.join(store(), room_code, nickname)
    except classroom.NoRoom:
        st.session_state.setdefault("room.misses", []).append(time.monotonic())
        raise
    token = classroom.new_token(store(), room_code, member)
    _in_room_as_student(room_code, member, classroom.room.clean_text(nickname, classroom.room.MAX_NICKNAME), token)
    return room_code


def rejoin(room_code: str, member: str, token: str) -> str:
    """This browser's cookie brings a student back (a reload, a dropped connection, another replica): the same member
    id, nickname and answers, following the teacher again; the token is used up and the cookie gets the next one.
    classroom.rejoin's errors (NoRoom, NotYours, Elsewhere) with their messages; this session keeps what it had."""
    nick, fresh = classroom.rejoin(store(), room_code, member, token)
    _in_room_as_student(room_code, member, nick, fresh)
    return nick


def page_of(path: str) -> str | None:
    """A page file from its URL path ('' the Overview, 'qkv', …); None if no page has that path."""
    for _, pages in nav.SECTIONS:
        for file, _, _, url in pages:
            if url == path and (nav.ROOT / file).exists():
                return file
    return None


def go(view: dict, version: int | None = None) -> None:
    """Put a view into this session (ui.settings.apply_view) and switch to its page: a following student's
    step, "Back to the teacher's view", a teacher's lesson step. The view's page must be one of the app's."""
    notices = apply_view(view)
    state = st.session_state
    state["room.notices"] = notices
    state["room.hide"], state["room.stage"] = list(view.get("hide") or ()), view.get("stage")
    if version is not None:
        state["room.applied"] = version
    state["room.baseline"] = None                 # set on the first run of the view's page (ui/room/bar.py)
    st.switch_page(view["page"])


def known_page(page_file) -> bool:
    return isinstance(page_file, str) and page_file in nav.order() and page_file != ROOM_PAGE

"""A view put into the session (ui.settings.apply_view: a teacher's push, a lesson's stop) changes widgets the
browser holds. Until the browser has drawn the run that shows the new values, every message it sends carries the
old ones: Streamlit's browser sends the state of every widget with each request, a fragment's timed tick
(st.fragment(run_every=...)) included, and a click made at once. Applied, such a message would put the old view
back: on a page the view does not leave (a push of the same page; another page's old widgets are not sent for the
new one, and ui/fragment_guard.py drops ticks naming the old page) a following student's tick then reads the old
controls and finds the student "stepped out", and a teacher's click right after "Next stop ▶" runs on the stop
before. So each widget the view changed is remembered as (old, new) for STALE_S: a value equal to its old one is
the browser's stale word and the new one stands; a value equal to the new one shows the browser has caught up.

ui/page_state.py (put, start) and ui/settings_state.py (apply_view, _copy_out) use it; the room's tick settles
too (ui/room/follow.py). tests/e2e/test_room_stop_polls_browser.py shows it in chromium.
"""
from __future__ import annotations

import time

import streamlit as st

STALE_S = 10.0


def expect_stale(changed: dict) -> None:
    """Remember widgets a view put in changed (widget key -> (the value the browser holds, the view's))."""
    state = st.session_state
    keys = {**((state.get("p.stale") or {}).get("keys") or {}),
            **{k: (old, new) for k, (old, new) in changed.items() if old != new}}
    state["p.stale"] = {"at": time.monotonic(), "keys": keys} if keys else None


def stale(key: str, value, forget: bool = True) -> bool:
    """Whether a widget's value this run is a message the browser sent before it drew the view put in (its old
    value). With `forget` (the value is the browser's: before the run draws the widget), a value equal to the
    view's one forgets the widget: the browser has caught up."""
    state = st.session_state
    pending = state.get("p.stale")
    if not pending or key not in pending["keys"]:
        return False
    if time.monotonic() - pending["at"] > STALE_S:
        state["p.stale"] = None
        return False
    old, new = pending["keys"][key]
    if value == new and forget:
        del pending["keys"][key]
        return False
    return value == old


def settle(forget: bool = True) -> None:
    """At the start of a page run (ui/page_state.start) and in the room's tick (ui/room/follow.py, forget=False:
    inside a page's run it comes after the widgets, which then hold the run's values, not the browser's): the page's
    controls a stale message set back to the old view take the view's values again (a setting's widget: its
    callback, ui.settings_state._copy_out, keeps the view's setting); with `forget`, the widgets the browser sends at
    their new values are forgotten."""
    state = st.session_state
    pending = state.get("p.stale")
    for key, (_, new) in list((pending or {}).get("keys", {}).items()):
        if key in state and stale(key, state[key], forget) and not key.startswith("w."):
            state[key] = new

"""The room bar: on every page, under the title, for a session in a room (ui.page calls `room_bar` once, after
the settings). In no room it returns at once: nothing drawn, no store read.

- The teacher: "Room CODE · n students here: n following, n stepped out · n gone · n of m answered" (here: screens
  that checked the room in the last few seconds; kept live), with who stepped out (and to which page) and who is
  gone by name, out of presenter mode and off the pages that may be on the projector; "Lock the class to my view"
  / "Unlock" (classroom/pacing.py: a locked student's own change is undone, ui/room/follow.py);
  "Show this to the class" (the whole view: page, settings, own controls, tab, cell), and with a lesson its stop
  (the question to ask, the teacher's note: on this screen only, never in presenter mode or on the room and
  Lessons pages, which may be on the projector) with ◀ / ▶; a stop is shown to predict (ui/room/hide.py: its
  answer hidden on the students' screens, no explanation open) and "Reveal" shows it again with its cell's
  explanation open and its own answer, the numbers of a later stop of the same view still hidden until that stop's
  reveal (classroom.lesson.hidden_at); a lesson's check (ui/room/check.py) is started on its first stop and again on its last.
- A student: ui/room/follow.py (following, stepping out and back, the poll card).
"""
from __future__ import annotations

import streamlit as st

import classroom
from classroom import pacing
from classroom.lesson import hidden_at

from ..page_state import CELL, view_of
from .check import check_bar
from .follow import student_bar
from .poll import ask_poll, teacher_poll_panel
from .rejoin import keep_cookie, resume, waiting, welcome
from .session import ROOM_PAGE, go, leave, page_of, store
from ..settings_state import presenting
from ..text import md_escape
from .travel import stays_text, view_to_push

SHOW = "Show this to the class"
REVEAL = "Reveal"
PREDICTING = (":material/psychology_alt: The class sees this stop to predict: no explanation open, and a line "
              "asking them to predict first.{hidden} Ask the question, then Reveal: {reveal}, and it reveals the "
              "stop's poll if it is open.")
NOTE_KEPT_PRESENTING = (":material/lock: Your note for this stop is not shown here: presenter mode is for the "
                        "projector. Turn presenter mode off to read it.")
NOTE_KEPT_PAGE = (":material/lock: Your note for this stop is not shown here: this page may be on the projector. "
                  "It is in this bar on the other pages.")
PROJECTED = ("app_pages/60_room.py", "app_pages/61_lessons.py")     # pages the class may see on the projector
PREVIOUS, NEXT, THIS_STOP, ASK_STOP = "◀ Previous stop", "Next stop ▶", "Show this stop", "Ask this stop's question"
QUESTION = "Class question"
LOCK, UNLOCK = "Lock the class to my view", "Unlock: students may explore"
LOCKED = (":material/lock: The class is locked to your view: every student's screen follows it, and a change they "
          "make is undone (they can still open the room page, to leave the room).")
LOCKED_ELSEWHERE = (":material/lock: The class is locked to the view you last showed ({page}), not to this page: "
                    "every student's screen follows that one, and a change they make is undone (they can still open "
                    "the room page, to leave the room).{show}")
LOCKED_NOTHING = (":material/lock: The class is locked, but you have shown nothing yet: students explore freely "
                  "until you show a view; from then on every following screen stays on it.")
STILL_HIDDEN = (":material/visibility: Revealed. The numbers that answer {stops}, later on this same view, stay "
                "hidden on their screens {where} until you reveal {them}.")
HERE_SECONDS = 2.0               # the teacher's count of students here refreshes this often


def room_bar(page_file: str, config=None, trace=None) -> None:
    state = st.session_state
    resume()                             # a session's first run: this browser's cookie back into its room
    if "room.code" not in state or state.get("room.secret"):
        keep_cookie()                    # the cookie this browser should hold (a student's: in their fragment)
    if "room.code" not in state:
        if "room.ended" in state:
            st.warning(md_escape(state.pop("room.ended")), icon=":material/door_open:")
        if state.get("room.waiting"):
            waiting()
        return
    welcome()
    if state.get("room.secret"):
        teacher_bar(page_file, config, trace)
    else:
        student_bar(page_file)


def teacher_bar(page_file: str, config=None, trace=None) -> None:
    state = st.session_state
    code, secret = state["room.code"], state["room.secret"]
    for notice in state.pop("room.notices", None) or []:
        st.warning(md_escape(notice), icon=":material/link_off:")
    with st.container(border=True):
        try:
            students = pacing.roster(store(), code)       # each student's state; here: checked the room in 5 s
            room = classroom.state(store(), code)
            locked = room.locked
        except classroom.NoRoom:                 # expired: this session leaves it
            leave()
            st.warning(f"{classroom.room.ended(code)} Open a new room on the room page to teach again.",
                       icon=":material/door_open:")
            return
        except classroom.RoomError as err:       # the store does not answer: the room (and your link) are kept
            st.warning(md_escape(f"{err} You still teach room {code}: this bar comes back on your next step."),
                       icon=":material/cloud_off:")
            return
        except Exception:
            st.caption(f":material/cloud_off: Room {code} cannot be reached right now; try again in a moment.")
            return
        left, right = st.columns([3, 2], vertical_alignment="center")
        if page_file == ROOM_PAGE:               # the room page counts in its own list below, live too
            left.markdown(f":material/co_present: **Room {code}**")
        else:
            with left:
                _room_line(code, students, not presenting() and page_file not in PROJECTED)
        if page_file != ROOM_PAGE and right.button(SHOW, key="room_push", type="primary", icon=":material/cast:"):
            view, problems = view_to_push(code, secret, page_file)      # a run it names goes beside the room first
            for problem in problems:
                st.warning(md_escape(problem), icon=":material/info:")
            _push(code, secret, view)
        right.button(UNLOCK if locked else LOCK, key="room_lock", icon=":material/lock_open:" if locked else
                     ":material/lock:", on_click=_lock, args=(code, secret, not locked))
        if locked:
            st.caption(locked_words(room.view, page_file))
        staying = stays_text(page_file, config) if page_file != ROOM_PAGE else ""
        if staying:                              # said before the push: what the class will not get, and instead
            right.caption(":material/info: " + md_escape(staying))
        shown = state.pop("room.pushed", None)
        if shown:
            st.caption(f":material/check: Shown to the class (view {shown}): every following screen changes "
                       "within about a second.")
        if state.get("room.lesson") is not None:
            lesson_steps(code, secret, trace, page_file)
        with st.expander(QUESTION, key="room_poll_box", on_change="rerun", icon=":material/campaign:") as box:
            if box.open:                         # drawn (and the store read) only while the teacher has it open
                teacher_poll_panel(store(), code, secret, trace)


def hidden_words(hide) -> str:
    """What a stop's hide list hides, counted as the screens hide it: a step's name hides every number of that step,
    a cell one number. ("scaled_scores", "weights:None.1.3") -> "All the numbers of 1 step (each a whole table) and 1 more
    number are"."""
    from .hide import parse
    whole, cells = parse(tuple(hide))
    steps = f"all the numbers of {len(whole)} step{'s' if len(whole) != 1 else ''} (each a whole table)" if whole else ""
    more = f"{len(cells)} {'more ' if whole else ''}number{'s' if len(cells) != 1 else ''}" if cells else ""
    words = " and ".join(w for w in (steps, more) if w)
    plural = bool(whole) or len(cells) != 1
    return words[:1].upper() + words[1:] + (" are" if plural else " is")


def here_words(n: int) -> str:
    return f"{n} student{'' if n == 1 else 's'} here"


def class_words(students, poll_open: bool) -> str:
    """The class in one line of counts (what the projector may show): "2 students here: 1 following, 1 stepped out
    · 1 disconnected · 1 of 3 answered".

        >>> from classroom.pacing import Student
        >>> class_words([Student("m", "Ana", "following", None, 0, 3.0), Student("n", "Ben", "out", "p", None, None),
        ...              Student("o", "Cy", "gone", None, None, None)], poll_open=True)
        '2 students here: 1 following, 1 stepped out · 1 disconnected · 1 of 3 answered'
    """
    n = pacing.counts(students)
    here = n["following"] + n["out"]
    words = here_words(here) + (f": {n['following']} following, {n['out']} stepped out" if here else "")
    if n["gone"]:
        words += f" · {n['gone']} disconnected"
    if poll_open:
        words += f" · {n['answered']} of {n['joined']} answered"
    return words


def where_names(students) -> str:
    """Who is not on the teacher's view, by name (the teacher's screen only):
    "Stepped out: Ana (RoPE) · Disconnected: Cy" ("" when everyone follows). Names and page labels as text (escaped for Markdown)."""
    from ..nav import label_of
    def page(s):
        try:
            return f" ({label_of(s.page)})" if s.page else ""
        except KeyError:
            return ""
    out = [md_escape(s.name) + page(s) for s in students if s.state == "out"]
    gone = [md_escape(s.name) for s in students if s.state == "gone"]
    parts = ([f"Stepped out: {', '.join(out)}"] if out else []) + ([f"Disconnected: {', '.join(gone)}"] if gone else [])
    return " · ".join(parts)


@st.fragment(run_every=HERE_SECONDS)
def _room_line(code: str, students, names_shown: bool) -> None:
    """"Room CODE · n students here: …" kept live: a student who closes the tab leaves the count within seconds
    (classroom.PRESENT_SECONDS after their screen last checked the room, then this line's next read), one who steps
    out is named with the page they are on (not in presenter mode: the projector sees counts)."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx
    ctx = get_script_run_ctx()
    poll = None
    try:
        if ctx is not None and ctx.fragment_ids_this_run:      # a tick: read the class again
            students = pacing.roster(store(), code)
        poll = classroom.state(store(), code).poll
    except Exception:                     # the store does not answer: the bar's full run says so
        students = None
    st.markdown(f":material/co_present: **Room {code}**" + ("" if students is None else
                                                            f" · {class_words(students, poll is not None)}"))
    names = where_names(students) if students and names_shown else ""
    if names:
        st.caption(names)


def locked_words(view: dict | None, page_file: str) -> str:
    """The teacher's line while the class is locked: locked to the view last shown, which may not be this page (the
    lock holds the class on the room's view, not on whatever the teacher explores), or to nothing yet.

        >>> locked_words(None, "app_pages/4_scores.py").startswith(":material/lock: The class is locked, but you have")
        True
        >>> locked_words({"page": "app_pages/4_scores.py"}, "app_pages/4_scores.py") == LOCKED
        True
        >>> print(locked_words({"page": "app_pages/4_scores.py"}, "app_pages/40_rope.py"))  # doctest: +ELLIPSIS
        :material/lock: The class is locked to the view you last showed (4 · Scores \\& scaling), not to this page: ...
        >>> print(locked_words({"page": "app_pages/4_scores.py"}, ROOM_PAGE))  # doctest: +ELLIPSIS
        :material/lock: The class is locked to your view (4 · Scores \\& scaling, the one you last showed): every ...
    """
    from ..nav import label_of
    if not view or not view.get("page"):
        return LOCKED_NOTHING
    if view["page"] == page_file:                # settings not compared: a stop's query may spell out defaults
        return LOCKED
    try:
        page = md_escape(label_of(view["page"]))
    except KeyError:
        page = "a page this app no longer has"
    if page_file == ROOM_PAGE:                   # the teacher's own page in a room: "your view" is the one shown
        return LOCKED.replace("to your view:", f"to your view ({page}, the one you last showed):")
    return LOCKED_ELSEWHERE.format(page=page, show=" “Show this to the class” locks them on this page instead.")


def _lock(code: str, secret: str, on: bool) -> None:
    """The lock button's callback: the class locked to the teacher's view, or unlocked."""
    try:
        pacing.lock(store(), code, secret, on)
    except classroom.RoomError as err:
        st.session_state["room.notices"] = [str(err)]
    except Exception:
        st.session_state["room.notices"] = ["The room cannot be reached right now: the lock did not change."]


def _push(code: str, secret: str, view: dict) -> bool:
    try:
        st.session_state["room.pushed"] = classroom.push(store(), code, secret, view)
        # what the students' screens now hide (ui/room/hide.py outlines it on this screen): this view's
        st.session_state["room.hide"], st.session_state["room.stage"] = list(view.get("hide") or ()), view.get("stage")
        return True
    except classroom.RoomError as err:
        st.error(md_escape(str(err)), icon=":material/error:")
    except Exception:
        st.error("The room cannot be reached right now: nothing was sent. Try again in a moment.",
                 icon=":material/cloud_off:")
    return False


def lesson_steps(code: str, secret: str, trace=None, page_file: str = "") -> None:
    """The lesson's stop: its title, the question to ask, the teacher's note; ◀ / ▶ and "Show this stop" put the
    stop's view into this session, show it to the class and switch to its page; a stop with a poll asks it (a
    question of the bank made from the settings in force: the stop's, once shown)."""
    state = st.session_state
    lesson = state["room.lesson"]
    n = len(lesson.stops)
    i = min(max(int(state.get("room.stop") or 0), 0), n - 1)
    stop = lesson.stops[i]
    st.markdown(f":material/list_alt: **Stop {i + 1} of {n}: {md_escape(stop.title)}** "
                f"· {md_escape(lesson.title)}")
    if stop.ask:
        st.markdown(f":material/record_voice_over: Ask the class: {md_escape(stop.ask)}")
    if stop.note:
        if presenting() or page_file in PROJECTED:      # the projector's screen: the note (often the answer) stays off
            st.caption(NOTE_KEPT_PRESENTING if presenting() else NOTE_KEPT_PAGE)
        else:
            st.caption(f":material/lock: Your note (on your screen only, not in presenter mode): "
                       f"{md_escape(stop.note)}")
    staged = state.get("room.stage") == "predict" and state.get("room.staged") == i
    where = ("(and on this one: presenter mode is the projector's view)" if presenting() else
             "(outlined with dashes on yours where a table or heatmap shows them; a passage or bar that states them "
             "is left out of theirs, with a line saying it waits)")
    waiting = ()
    if staged:
        hiding = hidden_at(lesson, i, "predict", revealed_stops(lesson))
        hidden = f" {hidden_words(hiding.hide)} hidden on their screens {where}." if hiding.hide else ""
        st.caption(PREDICTING.format(hidden=hidden, reveal=reveal_words(
            CELL in stop.query, hidden_at(lesson, i, "revealed", revealed_stops(lesson)), stop.hide)))
        if st.button(REVEAL, key="room_reveal", type="primary", icon=":material/visibility:"):
            reveal_stop(code, secret, i)
    elif state.get("room.stage") == "revealed" and state.get("room.hide") and i in revealed_stops(lesson):
        after = hidden_at(lesson, i, "revealed", revealed_stops(lesson))     # the view shown is this stop's reveal
        waiting = after.waiting if list(after.hide) == list(state["room.hide"]) else ()
    if waiting:
        st.caption(STILL_HIDDEN.format(stops=stops_words(waiting), where=where,
                                       them="that stop" if len(waiting) == 1 else "each of them"))
    back, this, ahead = st.columns(3)
    target = None
    if back.button(PREVIOUS, key="room_prev", disabled=i == 0, width="stretch"):
        target = i - 1
    if this.button(THIS_STOP, key="room_this", width="stretch"):
        target = i
    if ahead.button(NEXT, key="room_next", disabled=i == n - 1, width="stretch"):
        target = i + 1
    if target is not None:
        step_to(code, secret, target)
    check_bar(code, secret, lesson, i)
    if stop.poll and st.button(ASK_STOP, key="room_ask_stop", icon=":material/campaign:"):
        if ask_poll(store(), code, secret, stop.poll, trace, at=stop.poll_at or None) is not None:
            state["room_poll_box"] = True          # the question box opens with its live chart
            st.rerun()


def stops_words(stops) -> str:
    """Stops by their numbers as the teacher's bar counts them (from 1): (2, 3, 4) -> "stops 3, 4 and 5"."""
    n = [str(j + 1) for j in stops]
    return "" if not n else f"stop {n[0]}" if len(n) == 1 else f"stops {', '.join(n[:-1])} and {n[-1]}"


def reveal_words(cell: bool, after, hide=()) -> str:
    """What "Reveal" will do, said before it: this stop's answer on every following screen; a later stop's of the
    same view stays hidden (`after`: classroom.lesson.hidden_at's Hiding for the reveal; `hide`: the stop's own list,
    whose entries a later stop names stay that stop's)."""
    words = ("it opens the explanation of the stop's cell on every following screen" if cell else
             "it shows none of the numbers this stop hides (a later stop of this same view hides the same ones)"
             if hide and set(hide) <= set(after.hide) else
             "it shows this stop's numbers on every following screen" if after.hide else
             "it shows every number on every following screen")
    if after.waiting:
        words += (f"; the numbers that answer {stops_words(after.waiting)}, later on this same view, stay hidden until "
                  f"you reveal {'that stop' if len(after.waiting) == 1 else 'those stops'}")
    if after.shown_too:
        words += (f" (the lesson hides some of the same numbers for {stops_words(after.shown_too)}: this reveal "
                  "shows them)")
    return words


def revealed_stops(lesson) -> frozenset:
    """The stops of this lesson the teacher has revealed in this room (their answers are no longer kept hidden)."""
    kept = st.session_state.get("room.revealed")
    return frozenset(kept[1]) if kept and kept[0] == lesson else frozenset()


def stop_view(lesson, i: int, stage: str = "predict", revealed=()) -> dict | None:
    """Stop i's view as the class gets it: to predict (no cell's explanation open, its answer hidden on the
    students' screens) or revealed (its cell opened, its answer shown); either way a later stop's answer on the
    same view, not yet revealed, stays hidden (classroom.lesson.hidden_at)."""
    stop = lesson.stops[i]
    page = page_of(stop.page)
    if page is None:
        return None
    hide = list(hidden_at(lesson, i, stage, revealed).hide)
    query = dict(stop.query) if stage == "revealed" else {k: v for k, v in stop.query.items() if k != CELL}
    return {"page": page, "query": query, **({"hide": hide} if hide or stage == "predict" else {}), "stage": stage}


def step_to(code: str, secret: str, i: int) -> None:
    """Show stop i to the class in its predict state (and put it on this screen)."""
    state = st.session_state
    lesson = state["room.lesson"]
    stop = lesson.stops[i]
    view = stop_view(lesson, i, "predict", revealed_stops(lesson))
    if view is None:
        st.error(f"Stop {i + 1}'s page “{md_escape(stop.page)}” is not a page of this app: edit the lesson on "
                 "the Lessons page.", icon=":material/error:")
        return
    state["room.stop"] = i
    if _push(code, secret, view):
        state["room.staged"] = i
        go(view)


def reveal_stop(code: str, secret: str, i: int) -> None:
    """"Reveal": stop i again with its cell opened and its answer shown (a later stop's of the same view still
    hidden), as a new view every following screen takes; the stop's poll, when it is the question open, revealed
    with it."""
    state = st.session_state
    lesson = state["room.lesson"]
    stop = lesson.stops[i]
    view = stop_view(lesson, i, "revealed", revealed_stops(lesson))
    if view is None or not _push(code, secret, view):
        return
    state["room.staged"] = None
    state["room.revealed"] = (lesson, revealed_stops(lesson) | {i})
    try:
        poll = classroom.state(store(), code).poll
        if (poll and not poll.get("revealed") and stop.poll and poll.get("kind") == stop.poll
                and poll.get("phase", "poll") == "poll"):        # never a check's question (classroom/results.py)
            classroom.reveal(store(), code, secret, poll["id"])
    except classroom.RoomError as err:
        st.session_state["room.notices"] = [f"The view was revealed, not the poll: {err}"]
    except Exception:
        st.session_state["room.notices"] = ["The view was revealed; the poll could not be reached: reveal it in "
                                            "the Class question box."]
    go(view)

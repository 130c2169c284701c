"""The Lessons page's views: the lessons that ship with the app and the one in the builder, each with its stops
(a link that opens the stop's view, its question), "Teach this lesson", and the builder (a new lesson or a loaded
one: add the view you came from as a stop, edit, reorder, delete; save as a file, load one, share as a link).

The builder's lesson lives in the session ("lessons.draft", a classroom.lesson.Lesson), not in its widgets, so it
survives visits to other pages; its widgets' keys carry a version ("lessons.v") that every change of the stops
bumps, so they are drawn again from the lesson. Text from a file or a link (a teacher's or anyone's) is shown
escaped, never as Markdown that runs.
"""
from __future__ import annotations

import functools
import re
from dataclasses import replace

import streamlit as st

from classroom.lesson import (MAX_STOPS, MAX_TEXT, Lesson, LessonError, Stop, from_json, from_link, shipped, to_json,
                              to_link)

from .. import nav, page_state
from ..text import md_escape

ROOM = "app_pages/60_room.py"
DRAFT, VERSION, MESSAGE, CAME, LINK, UPLOAD = ("lessons.draft", "lessons.v", "lessons.msg", "lessons.came",
                                               "lessons.link", "lessons.upload")
PAGES = {path: file for _, pages in nav.SECTIONS for file, _, _, path in pages}       # URL path -> page file
CLASSROOM = {file for section, pages in nav.SECTIONS if section == "Classroom" for file, _, _, _ in pages}


@functools.lru_cache(maxsize=1)
def shipped_lessons() -> dict[str, Lesson]:
    """The lessons that come with the app, read once per process (LessonError if one of the files is broken)."""
    return shipped()


def poll_kinds() -> dict[str, str]:
    """The question bank's poll kinds (kind -> a few words); none while the bank is not installed."""
    try:
        from attention_core.labs.polls import POLL_KINDS
    except ImportError:
        return {}
    return dict(POLL_KINDS)


def page_of(stop: Stop) -> str | None:
    """The page file a stop opens, or None for a path the navigation does not have."""
    file = PAGES.get(stop.page)
    return file if file is not None and (nav.ROOT / file).exists() else None


def page_label(stop: Stop) -> str:
    file = page_of(stop)
    return nav.label_of(file) if file else f"no page at “/{stop.page}”"


def stops_count(n: int) -> str:
    """'1 stop', '6 stops'."""
    return f"{n} stop{'' if n == 1 else 's'}"


def _say(kind: str, text: str) -> None:
    st.session_state[MESSAGE] = (kind, text)


def _bump() -> None:
    st.session_state[VERSION] = st.session_state.get(VERSION, 0) + 1


def _set_draft(lesson: Lesson | None, edit: int = 0) -> None:
    st.session_state[DRAFT] = lesson
    st.session_state["lessons.edit"] = edit
    _bump()


# ---- before ui.page: what the address and the last page bring ----------------------------------------------

def remember_came_from(page_file: str) -> None:
    """Before ui.page: keep the view of the page the teacher came from (not a Classroom page), while its settings are
    still the session's."""
    came = st.session_state.get("s.page")
    if came and came != page_file and came not in CLASSROOM:
        st.session_state[CAME] = page_state.view_of(came)


def load_from_address(raw) -> None:
    """Before ui.page (which writes the address bar): a link's `lesson=` into the builder, once per link; a broken
    link leaves the lesson in progress and says what is wrong."""
    raw = raw[-1] if isinstance(raw, (list, tuple)) and raw else raw
    if not raw or raw == st.session_state.get(LINK):
        return
    st.session_state[LINK] = raw
    try:
        lesson = from_link(raw)
    except LessonError as err:
        _say("error", str(err))
        return
    _set_draft(lesson)
    _say("success", f"Opened the lesson of the link: {stops_count(len(lesson.stops))}, in the builder below.")


# ---- a lesson on screen ----------------------------------------------------------------------------------------

def message() -> None:
    """The last action's message (once)."""
    said = st.session_state.pop(MESSAGE, None)
    if said:
        kind, text = said
        {"error": st.error, "success": st.success}.get(kind, st.info)(text)


def stops_list(lesson: Lesson) -> None:
    """Each stop: its number and title, its page, its poll, the question; a link that opens its view."""
    kinds = poll_kinds()
    for n, stop in enumerate(lesson.stops):
        file = page_of(stop)
        poll = f" · poll: {md_escape(kinds.get(stop.poll, stop.poll))}" if stop.poll else ""
        st.markdown(f"**{n + 1}\\. {md_escape(stop.title)}** · {md_escape(page_label(stop))}{poll}  \n"
                    + (md_escape(stop.ask) if stop.ask else ":gray[no question]"))
        if file:
            st.page_link(file, label="Open this view", icon=":material/open_in_new:", query_params=stop.query or None)
    if lesson.check:
        n = len(lesson.check)
        st.caption(f":material/fact_check: A check of {n} question{'s' if n != 1 else ''}, asked before the first "
                   "stop and again after the last (“Start the check” in the room bar): the room page then shows what "
                   "the class learned.")


def teach(lesson: Lesson, key: str) -> None:
    """The button that hands the lesson to the room page, which steps through it from the first stop."""
    if st.button("Teach this lesson", key=f"lessons.teach.{key}", icon=":material/co_present:", type="primary",
                 help="Opens the room page with this lesson: each stop's view is shown to the class in turn."):
        st.session_state["room.lesson"] = lesson
        st.session_state["room.stop"] = 0
        st.session_state.pop("room.revealed", None)          # taught again: every stop's answer waits again
        if (nav.ROOT / ROOM).exists():
            st.switch_page(ROOM)
        st.info("The lesson is ready for the room, but this app has no room page.")


def lesson_card(lesson: Lesson, key: str, editable: bool = False) -> None:
    """A shipped lesson in a lazy expander: its stops are drawn only while it is open."""
    box = st.expander(f"{md_escape(lesson.title)} · {stops_count(len(lesson.stops))}", key=f"lessons.open.{key}",
                      on_change="rerun", icon=":material/list_alt:")
    if box.open:
        with box:
            if lesson.about:
                st.caption(md_escape(lesson.about))
            stops_list(lesson)
            with st.container(horizontal=True):
                teach(lesson, key)
                st.button("Edit a copy", key=f"lessons.copy.{key}", icon=":material/edit:", on_click=_copy, args=(lesson,),
                          help="Puts this lesson into the builder below, where you can change it and save it.")


def _copy(lesson: Lesson) -> None:
    if st.session_state.get(DRAFT) is not None and st.session_state[DRAFT] != lesson:
        _say("info", "The lesson in the builder was replaced; its last saved file or link still has it.")
    _set_draft(lesson)


# ---- the builder -------------------------------------------------------------------------------------------------

def _stops(change) -> None:
    """Apply change(list of stops) -> list or a message; keep the lesson and say why when it cannot."""
    draft = st.session_state[DRAFT]
    stops = list(draft.stops)
    out = change(stops)
    if isinstance(out, str):
        _say("error", out)
        return
    stops, edit = out
    _set_draft(replace(draft, stops=tuple(stops)), edit)


def _add_came_from() -> None:
    came = st.session_state.get(CAME)
    if not came:
        return
    stop = Stop(nav.label_of(came["page"]), nav.url_path_of(came["page"]), dict(came["query"]))
    if st.session_state.get(DRAFT) is None:
        st.session_state[DRAFT] = Lesson("My lesson", "", ())

    def add(stops):
        if len(stops) >= MAX_STOPS:
            return f"A lesson has at most {MAX_STOPS} stops; delete one first."
        return stops + [stop], len(stops)
    _stops(add)


def _move(i: int, by: int) -> None:
    def move(stops):
        j = i + by
        stops[i], stops[j] = stops[j], stops[i]
        return stops, j
    _stops(move)


def _delete(i: int) -> None:
    _stops(lambda stops: (stops[:i] + stops[i + 1:], max(0, min(i, len(stops) - 2))))


def _edit_stop(i: int, field: str, key: str) -> None:
    """One field of stop i from its widget; the stop's other fields stay (its poll's pins and the cells it hides,
    which no widget edits; a new poll kind drops the pins, which pinned the other kind's question)."""
    draft = st.session_state[DRAFT]
    stops = list(draft.stops)
    changes = {field: st.session_state[key]}
    if field == "poll" and changes["poll"] != stops[i].poll:
        changes["poll_at"] = {}
    stops[i] = replace(stops[i], **changes)
    st.session_state[DRAFT] = replace(draft, stops=tuple(stops))


def _edit_lesson(field: str, key: str) -> None:
    st.session_state[DRAFT] = replace(st.session_state[DRAFT], **{field: st.session_state[key]})


def view_text(view: dict) -> str:
    """'4 · Scores & scaling, with d_k=6, scores.tab=1' (the page's label and its link's parameters)."""
    query = view["query"]
    return nav.label_of(view["page"]) + (", with " + ", ".join(f"{k}={v}" for k, v in query.items()) if query else
                                         ", at the defaults")


def came_from_button() -> None:
    came = st.session_state.get(CAME)
    st.button("Add the view you came from as a stop", key="lessons.add", icon=":material/add_location_alt:",
              on_click=_add_came_from, disabled=not came,
              help="The page you last looked at, as you left it: its settings, own controls, open tab and clicked "
                   "cell." if came else "Open a page (set it up as you want the class to see it), then come back here.")
    st.caption(f"The view you came from: {md_escape(view_text(came))}." if came else
               "Visit the page you want as a stop, set it up, then come back: it becomes the next stop.")


def stop_editor(draft: Lesson, v: int) -> None:
    """One stop at a time: its title, question, poll and note; move it up or down, or delete it."""
    names = [f"{n + 1}. {s.title}" for n, s in enumerate(draft.stops)]
    edit = min(st.session_state.get("lessons.edit", 0), len(names) - 1)
    i = st.selectbox("Stop to edit", range(len(names)), index=edit, format_func=names.__getitem__,
                     key=f"lessons.pick.{v}")
    st.session_state["lessons.edit"] = i
    stop = draft.stops[i]
    k = f"lessons.e{v}.{i}"
    st.text_input("Title", stop.title, key=f"{k}.title", max_chars=MAX_TEXT, on_change=_edit_stop,
                  args=(i, "title", f"{k}.title"))
    st.caption(f"Opens {md_escape(view_text({'page': page_of(stop), 'query': stop.query}) if page_of(stop) else page_label(stop))}.")
    st.text_area("Question for the class", stop.ask, key=f"{k}.ask", max_chars=MAX_TEXT, on_change=_edit_stop,
                 args=(i, "ask", f"{k}.ask"), help="Predict, then reveal: ask it before the view shows the answer.")
    kinds = poll_kinds()
    options = [""] + list(kinds) + ([stop.poll] if stop.poll and stop.poll not in kinds else [])
    st.selectbox("Poll", options, index=options.index(stop.poll), key=f"{k}.poll", on_change=_edit_stop,
                 args=(i, "poll", f"{k}.poll"),
                 format_func=lambda o: "none" if not o else f"{o}: {kinds[o]}" if o in kinds else f"{o} (not in the bank)",
                 help="A question of the bank, computed on this stop's settings, that the class answers.")
    if notes_shown():
        st.text_area("Teacher's note", stop.note, key=f"{k}.note", max_chars=MAX_TEXT, on_change=_edit_stop,
                     args=(i, "note", f"{k}.note"), help=NOTE_HELP)
    else:
        st.caption((NOTE_OFF_STUDENT if student_in_room() else NOTE_OFF) + (" This stop has one." if stop.note else ""))
    row = st.container(horizontal=True)
    row.button("Move up", key=f"{k}.up", icon=":material/arrow_upward:", on_click=_move, args=(i, -1), disabled=i == 0)
    row.button("Move down", key=f"{k}.down", icon=":material/arrow_downward:", on_click=_move, args=(i, 1),
               disabled=i == len(names) - 1)
    row.button("Delete this stop", key=f"{k}.delete", icon=":material/delete:", on_click=_delete, args=(i,))


NOTE_HELP = ("Who sees it: in a room, only you, in the room bar of your own screen (not in presenter mode, not on "
             "the room or Lessons pages); never on the screen of a student in the room (this editor hides notes "
             "there). Anyone who has the lesson's file, or opens this editor out of a room, can read it; the share "
             "link leaves notes out.")
NOTE_OFF = (":material/lock: Teachers' notes are not shown here while you teach a room or present (this page may be "
            "on the projector): leave presenter mode, or end the room, to edit them.")
NOTE_OFF_STUDENT = (":material/lock: Teachers' notes are not shown here while you are in a room as a student, and a "
                    "file saved from here leaves them out.")


def notes_shown() -> bool:
    """The builder shows the stops' notes except on a screen the class may see: while this session is in a room
    (a teacher's: the room bar's note is on the teacher's other pages; a student's: never) or presents."""
    from ..settings_state import presenting
    return not (st.session_state.get("room.code") or presenting())


def student_in_room() -> bool:
    """A student's session in a room: the builder hides the notes and its saved file leaves them out."""
    from ..room.session import teaching
    return bool(st.session_state.get("room.code")) and not teaching()


def without_notes(lesson: Lesson) -> Lesson:
    """The lesson as a share link carries it: every stop's note left out (the file keeps them)."""
    return replace(lesson, stops=tuple(replace(s, note="") for s in lesson.stops))


def file_name(lesson: Lesson) -> str:
    """'The forward pass' -> 'the_forward_pass.json'."""
    return (re.sub(r"[^a-z0-9]+", "_", lesson.title.lower()).strip("_")[:60] or "lesson") + ".json"


def readable(draft: Lesson) -> str | None:
    """None if the lesson reads back from its file as it is, else why not (no title, no stop)."""
    try:
        from_json(to_json(draft))
    except LessonError as err:
        return str(err)
    return None


def share(draft: Lesson, base: str) -> None:
    noted = any(s.note for s in draft.stops)
    st.markdown("**Share as a link**: whoever opens it gets this page with the lesson in the builder"
                + ((", without the teacher's notes (the link leaves them out)." if student_in_room() else
                    ", without your notes (the link leaves them out; the saved file keeps them).") if noted else "."))
    st.code(f"{base}/{nav.url_path_of('app_pages/61_lessons.py')}?lesson={to_link(without_notes(draft))}",
            language=None, wrap_lines=True)


def load_file(uploaded) -> None:
    """A chosen file into the builder, once per file; a bad one: its message, and the lesson in progress stays. The
    message stays under the file box while the file is in it."""
    if uploaded is None:
        return
    done = st.session_state.get(UPLOAD)
    if done is None or done[0] != uploaded.file_id:
        try:
            lesson = from_json(uploaded.getvalue())
        except LessonError as err:
            kept = " The lesson in progress is unchanged." if st.session_state.get(DRAFT) is not None else ""
            done = (uploaded.file_id, "error", f"{uploaded.name}: {err}{kept}")
        else:
            _set_draft(lesson)
            done = (uploaded.file_id, "success", f"Loaded “{lesson.title}” from {uploaded.name}: "
                                                 f"{stops_count(len(lesson.stops))}.")
        st.session_state[UPLOAD] = done
    (st.error if done[1] == "error" else st.success)(md_escape(done[2]))


def builder(base: str) -> None:
    """Your lesson: start one or load one, add stops, edit, teach, save, share."""
    state = st.session_state
    load_file(st.file_uploader("Load a lesson file (.json)", key="lessons.file", max_upload_size=1,
                               help="A lesson saved from this page. It replaces the lesson in the builder."))
    came_from_button()
    draft, v = state.get(DRAFT), state.get(VERSION, 0)
    if draft is None:
        st.button("Start a new lesson", key="lessons.new", icon=":material/add:",
                  on_click=_set_draft, args=(Lesson("My lesson", "", ()),))
        return
    c1, c2 = st.columns([2, 3])
    c1.text_input("Lesson title", draft.title, key=f"lessons.e{v}.title", max_chars=MAX_TEXT, on_change=_edit_lesson,
                  args=("title", f"lessons.e{v}.title"))
    c2.text_input("About", draft.about, key=f"lessons.e{v}.about", max_chars=MAX_TEXT, on_change=_edit_lesson,
                  args=("about", f"lessons.e{v}.about"))
    if draft.stops:
        with st.container(border=True):
            stop_editor(draft, v)
        stops_list(draft)
    why_not = readable(draft)
    with st.container(horizontal=True):
        if why_not is None:                      # a lesson with a title and a stop: teach it, save it
            teach(draft, "draft")
            student = student_in_room()
            st.download_button("Save as a file", to_json(without_notes(draft) if student else draft),
                               file_name=file_name(draft), mime="application/json",
                               key="lessons.save", icon=":material/download:", on_click="ignore",
                               help="The file leaves the teacher's notes out while you are in a room as a student."
                                    if student else "The file keeps the teacher's notes: whoever has it can read "
                                    "them. The share link below leaves them out.")
        st.button("Close this lesson", key="lessons.close", icon=":material/close:", on_click=_set_draft,
                  args=(None,), help="Empties the builder (save the lesson first to keep it).")
    if why_not is None:
        share(draft, base)
    else:
        st.caption(f"To teach, save or share it: {md_escape(why_not)}" + (" Add the view you came from." if
                                                                           not draft.stops else ""))

"""The room page's views: join a room (code + nickname), open one (the code, the join link and its QR code for
the projector, who has joined), reclaim it on another device, leave or end it. The room in the session and the
steps that change it are ui/room/session.py's; the bar on every page is ui/room/bar.py's.
"""
from __future__ import annotations

import functools
import io

import streamlit as st

import classroom

from ..links import app_base
from classroom.presence import PRESENT_SECONDS
from classroom.room import ROOM_HOURS

from classroom import pacing

from ..room.bar import class_words, here_words
from .results_view import learned_box
from ..settings_state import presenting
from ..room.rejoin import COOKIE_HOURS
from ..room.session import ROOM_PAGE, code as room_code, join, leave, open_room, reclaim, store, teaching
from ..text import md_escape

JOIN, OPEN, END, LEAVE = "Join the room", "Open a room", "End the room", "Leave the room"
END_SURE = "End it for everyone"
DASHBOARD = "Show each student (your screen only)"
REMOVE, REMOVE_SURE = "Remove a student", "Remove from the room"
CODE_BOX, NICK_BOX, TITLE_BOX = "Room code", "Your nickname", "Title (optional)"
MEMBERS_SECONDS = 2.0            # the teacher's count of students refreshes this often


def take_link() -> None:
    """Before ui.page (which writes the address bar and so drops them): a link's `join=CODE` prefills the code
    box; `room=CODE&teach=SECRET` (the teacher's own link) reclaims the room, or says why not."""
    params = st.query_params
    state = st.session_state
    if params.get("join"):
        state["room_join_code"] = str(params.get("join"))[:40]
    if params.get("room") and params.get("teach") is not None:
        try:
            reclaim(params.get("room"), params.get("teach"))
            state["room.said"] = ("success", "You teach this room again on this device.")
        except classroom.RoomError as err:
            state["room.said"] = ("error", str(err))
        except Exception:
            state["room.said"] = ("error", "The rooms cannot be reached right now; open the link again in a moment.")


def _said() -> None:
    said = st.session_state.pop("room.said", None)
    if said:
        kind, text = said
        (st.success if kind == "success" else st.error)(md_escape(text))


def room_page() -> None:
    _said()
    if teaching():
        teacher_panel()
    elif room_code():
        student_panel()
    else:
        doors()


def doors() -> None:
    """No room yet: join one (most people) or open one (the teacher)."""
    st.markdown("A teacher opens a room and puts its code on the projector; each student joins with the code and "
                "a nickname (no account). When the teacher shows a view to the class, every following screen "
                "changes to it: the same page, settings and highlighted cell.")
    what_is_kept()
    join_side, teach_side = st.columns(2, gap="large")
    with join_side, st.container(border=True):
        st.subheader(":material/login: Join a room")
        with st.form("room_join", enter_to_submit=True):
            code_text = st.text_input(CODE_BOX, key="room_join_code", max_chars=40, placeholder="K7MQ2D")
            nick = st.text_input(NICK_BOX, key="room_join_nick", max_chars=40,
                                 help="Any name your class will recognise, not taken by another student in the "
                                      "room. It appears in the list of who joined, on your teacher's screen (often "
                                      "the projector).")
            if st.form_submit_button(JOIN, type="primary", icon=":material/login:"):
                try:
                    join(code_text, nick)
                    st.rerun()
                except classroom.RoomError as err:
                    st.error(md_escape(str(err)), icon=":material/error:")
                except Exception:
                    st.error("The rooms cannot be reached right now; try again in a moment.",
                             icon=":material/cloud_off:")
    with teach_side, st.container(border=True):
        st.subheader(":material/co_present: Teach: open a room")
        lesson = st.session_state.get("room.lesson")
        if lesson is not None:
            st.markdown(f"You will teach the lesson **{md_escape(lesson.title)}** in this room.")
        with st.form("room_open"):
            title = st.text_input(TITLE_BOX, key="room_title", max_chars=60, placeholder="Period 3")
            if st.form_submit_button(OPEN, icon=":material/add:"):
                try:
                    open_room(title)
                    st.rerun()
                except Exception as err:
                    text = str(err) if isinstance(err, classroom.RoomError) else "The rooms cannot be reached now."
                    st.error(md_escape(text), icon=":material/error:")


def join_link(code: str) -> str:
    return f"{app_base(ROOM_PAGE)[0]}/room?join={code}"


def teacher_link(code: str, secret: str) -> str:
    from urllib.parse import quote
    return f"{app_base(ROOM_PAGE)[0]}/room?room={code}&teach={quote(secret, safe='')}"


@functools.lru_cache(maxsize=64)
def qr_png(link: str) -> bytes:
    """The join link as a QR code (PNG, error correction M: readable with a quarter of it smudged)."""
    import segno
    out = io.BytesIO()
    segno.make(link, error="m").save(out, kind="png", scale=12, border=2)
    return out.getvalue()


def teacher_panel() -> None:
    state = st.session_state
    code, secret = state["room.code"], state["room.secret"]
    link = join_link(code)
    words, picture = st.columns([3, 2], gap="large")
    with words:
        title = state.get("room.title")
        st.caption("Room" + (f" · {md_escape(title)}" if title else "") + " · put this on the projector")
        st.markdown(f"## :material/co_present: {code}")     # an h2: the page's one h1 is its title
        st.markdown("Students open the link (or scan the code) and type a nickname:")
        st.code(link, language=None, wrap_lines=True)
        if not presenting():
            state["room.dashboard"] = st.toggle(       # kept in the session: a widget's own state goes with its page
                DASHBOARD, value=bool(state.get("room.dashboard")), key="room_dashboard",
                help="Each student's state, their answer to the open question and how long it took. Not for the "
                     "projector: in presenter mode the table is not drawn (the counts and who joined are).")
        _members(code)
        if not presenting():
            remove_box(code, secret)
    with picture:
        st.image(qr_png(link), caption="Scan to join", width=360, alt=f"QR code of the room's link, room {code}")
    if state.get("room.lesson") is not None:
        stops_list()
    learned_box(code, secret, state.get("room.title") or "")
    st.markdown("Go to any page and press **Show this to the class** in the room bar under its title: every "
                "following student's screen changes to your page, settings, open tab and highlighted cell.")
    what_is_kept(teacher=True)
    with st.expander("Your teacher's link (keep it private)", icon=":material/key:"):
        st.warning("Whoever opens this link can show views and ask questions in this room. Use it to teach from "
                   "another device; never put it on the projector.", icon=":material/warning:")
        st.code(teacher_link(code, secret), language=None, wrap_lines=True)
    ending = st.popover(END, icon=":material/logout:")      # a second click: one slip must not end the class
    ending.markdown("This ends the room for everyone: its code opens nothing any more, and each student's screen "
                    "says so and stays where it is, to explore on their own.")
    if ending.button(END_SURE, key="room_end", type="primary", icon=":material/logout:"):
        try:
            classroom.end_room(store(), code, secret)
        except classroom.NoRoom:                  # it had ended already
            pass
        except classroom.RoomError as err:        # the store does not answer: still the room's teacher
            st.error(md_escape(f"{err} The room was not ended."), icon=":material/error:")
            return
        leave()
        st.session_state["room.said"] = ("success", f"Room {code} has ended; its code opens nothing any more.")
        st.rerun()


@st.fragment(run_every=MEMBERS_SECONDS)
def _members(code: str) -> None:
    try:
        students = pacing.roster(store(), code)
        poll = classroom.state(store(), code).poll
    except classroom.RoomError as err:
        st.warning(md_escape(str(err)))
        return
    except Exception:
        st.caption(":material/cloud_off: The room cannot be reached right now; retrying.")
        return
    words = class_words(students, poll is not None) if students else here_words(0)
    if presenting():                                   # the projector: who joined, not who is away (counts only)
        st.markdown(f"**{words}**" + (". Joined:" if students else " yet."))
        if students:
            st.text(", ".join(s.name for s in students))
        return
    nicks = [s.name for s in students if s.state != "gone"]
    away = [s.name for s in students if s.state == "gone"]
    st.markdown(f"**{words}**" + (". Here now:" if nicks else "." if away else " yet."))   # not "answered: names"
    if nicks:
        st.text(", ".join(nicks))                      # as typed, never as Markdown
    if away:
        st.caption(f"Joined, not here now (their screen has not checked the room for {PRESENT_SECONDS:.0f} s: a "
                   "closed tab or a sleeping laptop; they come back as themselves when they open the app again in "
                   "the same browser):")
        st.text(", ".join(away))
    if st.session_state.get("room.dashboard"):
        dashboard(students, poll)


STATE_WORDS = {"following": "following", "out": "stepped out", "gone": "disconnected"}


def dashboard_rows(students, poll) -> list[dict]:
    """One row per student for the teacher's table: nickname, state (and the page of one who stepped out), their
    answer to the open question and the seconds from its opening to their last answer. Cells are Markdown in
    st.table: every text escaped.

        >>> from classroom.pacing import Student
        >>> row = dashboard_rows([Student("m", "<b>Ben</b>", "out", "app_pages/40_rope.py", 1, 4.25)],
        ...                      {"choices": ["3", "4"], "revealed": False})[0]
        >>> print(" | ".join(row.values()))
        \\<b\\>Ben\\<\\/b\\> | stepped out\\: RoPE\\: rotary positions | B\\. 4 | 4.2
    """
    from ..nav import label_of
    from ..room.poll import choice_text
    rows = []
    for s in students:
        state = STATE_WORDS[s.state]
        if s.state == "out" and s.page:
            try:
                state += f": {label_of(s.page)}"
            except KeyError:
                pass
        answer = "—" if poll is None else "no answer" if s.answer is None else choice_text(poll, s.answer) \
            if 0 <= s.answer < len(poll["choices"]) else "—"
        seconds = f"{s.seconds:.1f}" if s.seconds is not None and poll is not None else ""
        rows.append({"Student": md_escape(s.name), "State": md_escape(state), "Answer": md_escape(answer),
                     "Seconds to answer": seconds})
    return rows


def dashboard(students, poll) -> None:
    """The teacher's table, student by student (names and answers: this screen only, never in presenter mode)."""
    if not students:
        st.caption("No student has joined yet.")
        return
    if poll is not None:
        st.caption(md_escape(f"The question: {poll.get('prompt', '')}" + (" (answer revealed)" if poll.get("revealed")
                                                                           else "")))
    st.table(dashboard_rows(students, poll), hide_index=True)


def what_is_kept(teacher: bool = False) -> None:
    """What the room keeps, where, for how long, and who sees it: exact (classroom/room.py's keys,
    classroom/presence.py, ui/room/rejoin.py's cookie), and which store this app uses. A student's words, or the
    teacher's."""
    where = ("on the Redis server that this app's copies share" if store().name == "redis"
             else "in the memory of this app's server (nothing on disk; a restart of the server deletes it)")
    you, your = ("each student", "their") if teacher else ("you", "your")
    what = (f"- **What:** {your} nickname; for each question, which answer {you} chose, how many times {you} "
            f"answered and how many seconds after the question opened {your} last answer came; when {your} screen "
            f"last checked the room (every few seconds while it is open) and whether it follows the teacher or shows "
            f"another page (which one); whether the teacher removed {'them' if teacher else 'you'}; and a digest "
            f"of {your} rejoin key. Nothing else: no account, no e-mail.")
    if teacher:
        what += (" About the room: its title, a digest of your secret, the view you last showed, every question "
                 "asked in it (for what the class learned), and a model you trained and showed to the class (your "
                 "last 4 at most).")
    cookie = ("Your browser keeps the room's code and your secret in a cookie for this site only (what your "
              "teacher's link holds), so that a reload keeps your controls; each student's browser keeps the code "
              "and their rejoin key the same way." if teacher else
              "Your browser keeps the room's code and your rejoin key in a cookie for this site only, never in the "
              "address, so that a reload brings you back as yourself with your answers; the key works once (each "
              "return gives a new one), and not while you are in the room in another tab.")
    leaving = ("**End the room** deletes all of it at once (the cookies then open nothing)." if teacher else
               "**Leave the room** deletes your nickname, rejoin key, last-seen time, your answer to the question "
               "open now (unless its answer is revealed) and the cookie at once; your other answers stay without "
               "a name: in their counts, and as rows of the answers your teacher can download (“(left the room)” "
               "instead of a nickname).")
    who = ("your" if teacher else "your teacher's")
    with st.expander("What the room keeps about your students, and who sees it" if teacher else
                     "What a room keeps about you, and who sees it", icon=":material/shield_person:"):
        st.markdown(
            f"{what}\n"
            f"- **Where:** {where}. {cookie}\n"
            f"- **How long:** until {ROOM_HOURS} hours after the last change in the room (the teacher showing a view "
            f"or asking a question, a student joining or answering), or at once when the teacher ends the room. "
            f"The browser forgets the cookie {COOKIE_HOURS} hours after the app last wrote it. {leaving}\n"
            f"- **Who sees it:** the nicknames are on {who} screen (often the projector), with how many students "
            f"are here now and how many chose each answer. Who is here or away by name, and who stepped out to which "
            f"page, are on {who} screen out of presenter mode; who chose what and how long it took only when "
            f"{'you turn' if teacher else 'your teacher turns'} "
            "on the list of each student, out of presenter mode too: never in presenter mode (the projector's) or on "
            "a student's screen. "
            f"After the answer is revealed every student sees the counts; only {'each student' if teacher else 'you'} "
            f"see{'s' if teacher else ''} {'their' if teacher else 'your'} own answer. "
            f"{'You' if teacher else 'Your teacher'} can download the answers with the nicknames (a CSV file, out of "
            "presenter mode) while the room lasts; the one-page summary has counts only. Whoever runs this app's "
            "server can read what it keeps.")


def remove_box(code: str, secret: str) -> None:
    """"Remove a student": a nickname and a second click. Their screen says so and their cookie no longer brings
    them back (classroom/pacing.py remove). Drawn (and the members read) only while the box is open."""
    with st.expander(REMOVE, key="room_remove_box", on_change="rerun", icon=":material/person_remove:") as box:
        if not box.open:
            return
        try:
            joined = classroom.members(store(), code)
        except Exception:
            st.caption(":material/cloud_off: The room cannot be reached right now; close and open this box again.")
            return
        names = sorted(joined.values(), key=lambda n: (n.casefold(), n))
        if not names:
            st.caption("No student has joined yet.")
            return
        pick = st.selectbox("Student", names, index=None, key="room_remove_pick", placeholder="Choose a nickname")
        st.caption("Their screen says that you removed them, and their browser's key no longer brings them back "
                   "(they can still type the code and join again, as anyone with it can). Their answer to the open "
                   "question goes unless you revealed it; their other answers stay in the counts, without a name.")
        if st.button(REMOVE_SURE, key="room_remove", disabled=pick is None, icon=":material/person_remove:"):
            member = next((m for m, n in joined.items() if n == pick), None)
            try:
                pacing.remove(store(), code, secret, member)
            except classroom.RoomError as err:
                st.error(md_escape(str(err)), icon=":material/error:")
                return
            except Exception:
                st.error("The room cannot be reached right now: nobody was removed.", icon=":material/cloud_off:")
                return
            st.session_state.pop("room_remove_pick", None)
            st.session_state["room.said"] = ("success", f"Removed “{pick}” from room {code}.")
            st.rerun()


def stops_list() -> None:
    """The lesson's stops, the current one marked: a click on one shows it to the class (to predict) and puts it on
    this screen, as "Show this stop" does."""
    from ..room.bar import step_to
    state = st.session_state
    lesson = state["room.lesson"]
    i = min(max(int(state.get("room.stop") or 0), 0), len(lesson.stops) - 1)
    st.subheader(f"Lesson: {md_escape(lesson.title)}")
    st.caption("Click a stop to show it to the class now, to predict, as “Show this stop” does (your screen goes "
               "to it too); or step through them with ◀ / ▶ in the room bar (above, on every page).")
    target = None
    for n, stop in enumerate(lesson.stops):
        label = f"{n + 1}\\. {md_escape(stop.title)}" + (" · now" if n == i else "")
        if st.button(label, key=f"room_jump_{n}", type="primary" if n == i else "secondary", width="stretch"):
            target = n
    if target is not None:
        step_to(state["room.code"], state["room.secret"], target)


def student_panel() -> None:
    state = st.session_state
    code = state["room.code"]
    title = state.get("room.title")
    st.markdown(f"You are in room **{code}**" + (f" ({md_escape(title)})" if title else "") + " as:")
    st.text(state.get("room.nick", ""))
    if state.get("room.following"):
        st.info("When your teacher shows something, your screen changes to it by itself. " + (
                "Your teacher has locked the class: until they unlock it, your screen stays on what they show."
                if state.get("room.locked") else "You can always explore on your own and come back with one click."),
                icon=":material/co_present:")
    what_is_kept()
    if st.button(LEAVE, key="room_leave", icon=":material/logout:"):
        try:                                    # off the teacher's list; leaving works even if the store is down
            classroom.leave(store(), code, state.get("room.member"))
        except Exception:
            pass
        leave()
        st.rerun()

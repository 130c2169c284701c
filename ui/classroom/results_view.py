"""What the class learned, on the room page (the teacher's): a lesson's check before and after (each question's
share of right answers, the class's normalised gain ⟨g⟩ with how many students it is over), every question the
room asked with its share, and the downloads: the responses as CSV (with nicknames: not in presenter mode) and a
one-page summary without names (classroom/results.py). Read only while its box is open.
"""
from __future__ import annotations

import streamlit as st

import classroom
from classroom import results

from ..room.session import store
from ..settings_state import presenting
from ..text import md_escape

LEARNED = "What the class learned: the check, every question, downloads"
CSV_BUTTON, SUMMARY_BUTTON = "Download the responses (CSV)", "Download a one-page summary (no names)"
HAKE = ("For comparison: interactive-engagement physics courses reached ⟨g⟩ = 0.48 on average, traditional "
        "courses 0.23 (Hake 1998, 6,542 students).")


def check_rows(g) -> list[dict]:
    """The check's table: each question (as text) and its share right before and after.

        >>> from classroom.results import CheckQuestion, Gain
        >>> check_rows(Gain((CheckQuestion(0, "**x**", (1, 2), (2, 2)),), 2, 50.0, 100.0, 1.0))
        [{'Question': '1\\\\. \\\\*\\\\*x\\\\*\\\\*', 'Before': '1 of 2 right (50%)', 'After': '2 of 2 right (100%)'}]
    """
    return [{"Question": md_escape(f"{q.number + 1}. {q.prompt}"),
             "Before": results.share(*q.before) if q.before else "not asked yet",
             "After": results.share(*q.after) if q.after else "not asked yet"} for q in g.questions]


def asked_rows(questions) -> list[dict]:
    return [{"#": str(n), "Question": md_escape(q.prompt), "Asked as": results.PHASE_WORDS[q.phase],
             "Right": results.share(q.right(), len(q.answers))} for n, q in enumerate(questions, start=1)]


def learned_box(code: str, secret: str, title: str = "") -> None:
    with st.expander(LEARNED, key="room_learned_box", on_change="rerun", icon=":material/school:") as box:
        if not box.open:
            return
        try:
            questions = results.asked(store(), code, secret)
            g = results.gain(store(), code, secret, questions)
            rows = [] if presenting() else results.responses(store(), code, secret, questions)
        except classroom.RoomError as err:
            st.error(md_escape(str(err)), icon=":material/error:")
            return
        except Exception:
            st.caption(":material/cloud_off: The room cannot be reached right now; close and open this box again.")
            return
        if not questions:
            st.caption("No question has been asked in this room yet: ask one, or start a lesson's check.")
            return
        if g.questions:
            st.markdown("**The check, before and after the lesson** (share of right answers)")
            st.table(check_rows(g), hide_index=True)
            st.markdown(md_escape(results.gain_words(g)))
            st.caption(HAKE)
        st.markdown("**Every question asked**")
        st.table(asked_rows(questions), hide_index=True)
        name = f"room-{code}"
        summary = results.summary_html(f"Room {code}" + (f" · {title}" if title else "") + ": what the class "
                                       "learned", questions, g)
        left, right = st.columns(2)
        right.download_button(SUMMARY_BUTTON, summary, file_name=f"{name}-summary.html", mime="text/html",
                              key="room_summary", on_click="ignore", icon=":material/description:")
        if presenting():                             # the CSV starts with a BOM: a spreadsheet reads it as UTF-8
            left.caption(":material/lock: The responses name each student: download them out of presenter mode.")
        else:
            left.download_button(CSV_BUTTON, "\ufeff" + results.csv_text(rows), file_name=f"{name}-responses.csv",
                                 mime="text/csv", key="room_csv", on_click="ignore", icon=":material/download:")
        st.caption(("" if presenting() else
                    "The CSV has a row per answer: nickname, phase (pre: the check before the lesson, post: after "
                    "it, poll: any other question), question, answer, right or not, seconds. It names each student: "
                    "keep it off the projector. ") + "**End the room** (below) deletes everything the room keeps at "
                   "once: download first.")

"""The teacher's own question, written in the room beside the question bank's computed ones: the question, 2 to 6
choices (one a line) and the right one. Checked by classroom/questions.py: what is wrong is said under the form and
what was typed stays in it. Everyone sees the question and its choices as the characters typed (ui/text.py
md_escape), never as Markdown or HTML.
"""
from __future__ import annotations

import streamlit as st

import classroom
from classroom.questions import LETTERS, MAX_OWN, own_poll

from ..settings_state import presenting
from ..text import md_escape

OWN_TITLE = "Or write your own question"
OWN_PROMPT, OWN_CHOICES, OWN_RIGHT = "Your question", f"Choices, one a line (2 to {MAX_OWN})", "The right choice"
OWN_WHY = "Why it is right (shown after the reveal; optional)"
OWN_ASK = "Ask my question"
OWN_PRESENTING = (":material/lock: Your own question is written out of presenter mode: its form shows the right "
                  "choice, and the projector must not.")


def own_question_form(store, code: str, secret: str) -> bool:
    """The form; True when the question was opened in the room (the caller redraws its panel). Not in presenter
    mode (the projector's): the form shows the right choice and its why, as the teacher's note is kept off it."""
    if presenting():
        st.caption(OWN_PRESENTING)
        return False
    with st.form("poll.own_form", border=True, enter_to_submit=False):
        st.markdown(f"**{OWN_TITLE}**")
        prompt = st.text_input(OWN_PROMPT, key="poll.own_prompt", max_chars=300,
                               placeholder="Which word does “love” attend to most?")
        choices = st.text_area(OWN_CHOICES, key="poll.own_choices", height=130,
                               placeholder="i\nlove\nyou")
        right = st.radio(OWN_RIGHT, range(MAX_OWN), index=None, key="poll.own_right", horizontal=True,
                         format_func=lambda i: LETTERS[i],
                         help="A is the first line of the choices, B the second, and so on.")
        why = st.text_input(OWN_WHY, key="poll.own_why", max_chars=300)
        sent = st.form_submit_button(OWN_ASK, icon=":material/campaign:", type="primary")
    if not sent:
        return False
    try:
        classroom.open_poll(store, code, secret, own_poll(prompt, choices, right, why))
    except classroom.RoomError as err:
        st.error(md_escape(str(err)), icon=":material/error:")
        return False
    except Exception:
        st.error("The room cannot be reached right now: the question was not asked. Try again in a moment.",
                 icon=":material/cloud_off:")
        return False
    return True

import streamlit as st

import ui
from classroom.lesson import LessonError
from ui.classroom import lessons_view as view
from ui.links import app_base

PAGE = "app_pages/61_lessons.py"
view.remember_came_from(PAGE)                       # the page the teacher came from, with its settings
view.load_from_address(st.query_params.get("lesson"))   # a shared lesson's link, before the address is rewritten
ui.page(PAGE, "Lessons", settings=False)
st.markdown(
    "A lesson is a path through the explorer: a sequence of **stops**, each a view (a page with its settings, its "
    "open tab, a highlighted cell), the question to put to the class before the view answers it, a poll the class "
    "answers on their screens, and a note for the teacher. Teach one in a room: the class follows you from "
    "stop to stop; each stop arrives first for the class to predict (the numbers its lesson names hidden on the "
    "students' screens, no explanation open) and you reveal it. In a room the note is shown only on the "
    "teacher's own screen (not in presenter mode, not on this page); the lesson's file shows it to whoever has it, "
    "the builder below to whoever opens it out of a room and out of presenter mode, and a share link leaves it out.")
view.message()

st.subheader("Lessons that come with the app")
try:
    lessons = view.shipped_lessons()
except LessonError as err:                           # a broken file in classroom/lessons/: say which, show none
    st.error(f"A lesson that comes with the app cannot be read: {err}")
    lessons = {}
for name, lesson in lessons.items():
    view.lesson_card(lesson, name)

st.subheader("Your lesson")
st.caption("Start one, or edit a copy of a lesson above, or load a file; then add the views you want, one by one. "
           "It stays here while you visit other pages.")
view.builder(app_base(PAGE)[0])

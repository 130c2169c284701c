import streamlit as st

import ui
from attention_core.labs.quiz import grade, make_questions, readable, symbols_caption
from ui.text import md_escape

PAGE = "app_pages/31_quiz.py"
config, trace = ui.page(PAGE, "Predict, then reveal")
st.markdown("Before you look at a step, **predict it**: its shape, which word a row attends to, the sign "
            "of a change. The questions come from your current settings, so a new sentence or new sizes "
            "give new ones. Each answer reveals the step it was about.")
st.caption(md_escape(symbols_caption(config)))

state = st.session_state.setdefault("quiz", {"round": 0, "graded": {}})
top = st.columns([3, 1])
with top[1]:
    if st.button("New questions", icon=":material/refresh:", key="quiz_new"):
        state["round"] += 1
questions = make_questions(trace, seed=state["round"])
graded = state["graded"]
mine = {q.id: graded.get((state["round"], config, q.id)) for q in questions}
answered = [v for v in mine.values() if v is not None]
with top[0]:
    total = sum(1 for v in graded.values() if v[0])
    st.metric("Your score this session", f"{total} / {len(graded)}",
              help="Every question you have answered since opening the app, on any settings.")

for n, q in enumerate(questions, start=1):
    with st.container(border=True):
        st.markdown(f"**{n}.** {md_escape(q.prompt)}")
        result = mine[q.id]
        if result is None:
            with st.form(f"quiz:{q.id}", border=False):
                if q.choices:
                    answer = st.radio("Your prediction", q.choices, index=None, horizontal=len(q.choices) <= 6,
                                      key=f"quiz_in:{q.id}")
                else:
                    answer = st.text_input("Your prediction", key=f"quiz_in:{q.id}", placeholder=q.hint or None)
                if st.form_submit_button("Check"):
                    if answer is None or not str(answer).strip():
                        st.warning("Type or pick an answer first.")
                    elif not readable(q, answer):                     # ask again: the question is not used up
                        st.warning(grade(q, answer)[1])
                    else:
                        ok, feedback = grade(q, answer)
                        graded[(state["round"], config, q.id)] = (ok, feedback, str(answer))
                        st.rerun()
        else:
            ok, feedback, given = result
            verdict = f"Right: you said “{given}”, and" if ok else f"Not quite: you said “{given}”, but"
            (st.success if ok else st.error)(md_escape(f"{verdict} the answer is {q.answer}."),
                                             icon=":material/check:" if ok else ":material/close:")
            if q.explanation:
                st.caption(md_escape(q.explanation))
            if q.step_key and q.step_key in trace:
                ui.step(trace, q.step_key, key_prefix=f"quiz{n}:")

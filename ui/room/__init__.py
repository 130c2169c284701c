"""A room's Streamlit side: what every page of every section shows a room's teacher and students (ui.page
calls `bar.room_bar` once a run), shared like ui's top; the room page itself is ui/classroom/room_view.py.
The rooms, their stores and the pacing are the classroom package's (no Streamlit there).

    session      the room in this session: join, open, leave, reclaim; the store; going to a pushed page
    bar          the room bar under every page's title: the teacher's "show this to the class", the lesson's
                 stops and the class at a glance; a student's bar (follow)
    follow       a student's bar: following the teacher's view, stepping out, locked, removed
    poll         a room's class question: the teacher's live chart and reveal, a student's answer card
    own_poll     the teacher's own question, written in the room (the question, 2 to 6 choices, the right one)
    check        a lesson's check in the teacher's bar: the same questions before the first stop and after the last
    rejoin       a reload is not a goodbye: the cookie, the welcome back, the tick that sees the room
    travel       what a push carries beside the view (a trained run) and what it cannot, said first
    wake         a push wakes the class: one watcher a process runs the followers' fragments when their room changes
    hide         a lesson stop's answers hidden on a student's screen until the reveal ("?" cells, waiting text)
"""

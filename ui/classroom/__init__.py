"""The views of the "Classroom" pages: A room for the class (app_pages/60_room.py), Lessons (61_lessons.py),
Handout (62_handout.py). The rooms, lessons and stores are the classroom package's (no Streamlit there); what is
on every page for a room's teacher and students (the room bar, following, the poll card, the hidden answers) is
ui/room/'s, shared like ui's top, because every section's pages show it. What only these pages draw:

    room_view      the room page: join (code + nickname), open a room (its code, join link and QR code, who has
                   joined, the teacher's private link), the lesson's stops, leave or end
    results_view   the room page's "what the class learned": the check before and after and its gain, every
                   question's share, the responses as CSV and a one-page summary
    lessons_view   the Lessons page: the shipped lessons and the builder's (stops with links to their views, teach,
                   add the view you came from, edit, reorder, save as a file, load one, share as a link)
    handout_view   the Handout page: the page chosen, the document drawn (title, formulas, shaded numbers, why), the
                   print CSS and button, the HTML download
"""

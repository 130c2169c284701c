"""The classroom: rooms a teacher leads, lessons as sequences of stops, and where their state lives.

No Streamlit here (ui/ draws the rooms; tests drive these functions directly), and no numpy: a room
holds plain JSON-able dicts.

    codes        the room's short code (read aloud, typed by students) and the teacher's secret
    store        where room state lives: MemoryStore in one process (the default, nothing to set up), the
                 few atomic hash operations every store offers
    redis_store  the same operations on a Redis server, for several app replicas
    which_store  store_from_env: the process's store (one setting switches to Redis:
                 ATTENTION_EXPLORER_REDIS_URL), above both stores
    room         a room's life: open, join, push a view, polls (open, answer, tally, reveal), expiry and limits;
                 RoomError's messages are written for the learner
    presence     a reload is not a goodbye: a student's single-use rejoin token (the room keeps its digest), and
                 who is here now (present: the students whose screens checked the room in the last few seconds)
    pacing       the teacher paces and sees the class: lock to the teacher's view, remove a student, and the
                 roster (each student following, stepped out and where, or gone; their answer and its seconds)
    lesson       a lesson: a title and its stops (a view, the question to ask, a note only the teacher sees) and
                 its check (the same questions before and after); read and written as a JSON file or a link; the
                 shipped lessons in classroom/lessons/
    questions    the teacher's own question (the question, 2 to 6 choices, the right one), checked with clear words
    results      what the class learned, from the room's log of every question asked: shares of right answers, the
                 check's normalised gain ⟨g⟩, the responses as CSV, a one-page summary without names

May import: the standard library; redis only inside redis_store's functions. Never ui, never streamlit.
"""
from .codes import new_code, new_secret, normal_code
from .presence import PRESENT_SECONDS, Elsewhere, NotYours, new_token, present, rejoin, seen
from .room import (MAX_ANSWER_CHANGES, MAX_MEMBERS, ROOM_HOURS, BadMessage, NameTaken, NoRoom, NotTeacher, RoomError, RoomFull,
                   RoomState, TooMany, Unavailable, answer, check, close_poll, end_room, join, leave, members, my_answer, open_poll,
                   open_room, push, reveal, state, tally)
from .store import MemoryStore, Store
from .which_store import store_from_env

__all__ = ["new_code", "new_secret", "normal_code", "Store", "MemoryStore", "store_from_env", "RoomError", "NoRoom",
           "RoomFull", "NotTeacher", "NameTaken", "Elsewhere", "NotYours", "new_token", "rejoin", "seen", "present",
           "PRESENT_SECONDS", "BadMessage", "TooMany", "Unavailable", "RoomState", "open_room", "check", "end_room", "join", "leave",
           "members",
           "push", "state", "open_poll", "answer", "tally", "my_answer", "reveal", "close_poll", "MAX_MEMBERS",
           "MAX_ANSWER_CHANGES", "ROOM_HOURS"]

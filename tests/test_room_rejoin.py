"""A reload is not a goodbye, through AppTest: a "reload" is a new AppTest session of the same process whose browser
sends the cookie the first session's page wrote (ui.room.rejoin.cookie is what st.context.cookies gives a real
browser). A student comes back as the same member with the same nickname and answer, following; the token is used
up; a copy is refused while its student is here; the teacher comes back with the controls; a second "Ada" is asked
for another name on the form; the room page's words about data are the exact ones."""
from __future__ import annotations

import re

import pytest

import classroom
from tests.apptest_util import no_exception, open_page
from tests.test_room_page import SCORES, button, stay, student_joins, teacher_opens, text_of as escaped

ROOM = "app_pages/60_room.py"
POLL = {"prompt": "2 + 2?", "choices": ["3", "4"], "answer": 1, "explanation": "2 + 2 = 4"}


@pytest.fixture(autouse=True)
def _memory_store(monkeypatch):
    monkeypatch.delenv("ATTENTION_EXPLORER_REDIS_URL", raising=False)
    monkeypatch.setattr("classroom.presence.PRESENT_SECONDS", 0.0)   # the first tab is gone at once (a reload)


def text_of(at) -> str:
    """What the page says, as read (md_escape's backslashes dropped)."""
    return escaped(at).replace("\\", "")


def browser(monkeypatch, value: str) -> None:
    """The next sessions' browser sends this cookie."""
    monkeypatch.setattr("ui.room.rejoin.cookie", lambda: value)


def cookie_written(at) -> str:
    """What the page told the browser to keep: the cookie's value in the page's script (and the session's copy)."""
    scripts = [h.proto.body for h in at.get("html") if "document.cookie" in h.proto.body]
    assert scripts, "no cookie written"
    found = re.search(r"attention_explorer_room=([^;]*); path=/; max-age=(\d+); SameSite=Strict", scripts[-1])
    assert found, scripts[-1]
    assert found.group(1) == at.session_state["room.cookie"]
    return found.group(1)


def test_a_students_reload_comes_back_as_the_same_student_with_the_same_answer(monkeypatch):
    teacher, code = teacher_opens()
    secret = teacher.session_state["room.secret"]
    ada = student_joins(code, "Ada")
    member = ada.session_state["room.member"]
    value = cookie_written(ada)
    assert value == f"s.{code}.{member}.{ada.session_state['room.token']}"
    assert "max-age=28800" in [h.proto.body for h in ada.get("html") if "document.cookie" in h.proto.body][-1]
    store = classroom.store_from_env()
    classroom.push(store, code, secret, {"page": SCORES, "query": {"d_k": "3"}})
    poll = classroom.open_poll(store, code, secret, POLL)
    classroom.answer(store, code, member, poll, 1)

    browser(monkeypatch, value)                                  # the reload: a new session, the same browser
    again = stay(open_page(ROOM))
    no_exception(again)
    assert again.session_state["room.member"] == member and again.session_state["room.nick"] == "Ada"
    assert again.session_state["room.following"] is True and again.session_state["s.page"] == SCORES
    assert again.session_state["s.d_k"] == 3                    # back on the teacher's view
    assert "Your answer: B. 4" in text_of(again)                     # her answer, read back from the room
    assert sorted(classroom.members(store, code).values()) == ["Ada"]          # not a second Ada
    fresh = cookie_written(again)
    assert fresh != value and fresh.startswith(f"s.{code}.{member}.")         # the next token

    thief = open_page(ROOM)                                      # the old cookie, used once already
    no_exception(thief)
    assert "room.code" not in thief.session_state and thief.session_state["room.cookie"] == ""
    assert f"This browser's place in room {code} was used already" in text_of(thief)


def test_a_copied_cookie_waits_while_its_student_is_here(monkeypatch):
    _, code = teacher_opens()
    ada = student_joins(code, "Ada")
    monkeypatch.setattr("classroom.presence.PRESENT_SECONDS", 3600.0)   # her tab ticks on
    browser(monkeypatch, ada.session_state["room.cookie"])
    other = open_page(ROOM)
    no_exception(other)
    assert "room.code" not in other.session_state
    assert re.search(f"Coming back to room {code} as “Ada”: your place was in use [0-9]+ s ago", text_of(other))
    assert other.session_state["room.waiting"] == ada.session_state["room.cookie"]
    assert ada.run().session_state["room.code"] == code          # she stays, untouched
    monkeypatch.setattr("classroom.presence.PRESENT_SECONDS", 0.0)      # her tab closed: the other comes in
    other.run()
    assert other.session_state.get("room.member") == ada.session_state["room.member"]
    ada.session_state["room.seen_at"] = -1e9                     # her tab's next tick writes: it learns it was replaced
    ada.run()
    no_exception(ada)
    assert "room.code" not in ada.session_state
    assert "room.cookie" not in ada.session_state                # the cookie is the other tab's now: not touched
    assert not [h for h in ada.get("html") if "document.cookie" in h.proto.body]
    assert "This tab is no longer in room" in text_of(ada)


def test_a_teachers_reload_keeps_the_controls(monkeypatch):
    teacher, code = teacher_opens()
    secret = teacher.session_state["room.secret"]
    assert cookie_written(teacher) == f"t.{code}.{secret}"
    browser(monkeypatch, f"t.{code}.{secret}")
    again = open_page(SCORES)
    no_exception(again)
    assert again.session_state["room.code"] == code and again.session_state["room.secret"] == secret
    assert [b for b in again.button if b.label == "Show this to the class"]
    browser(monkeypatch, f"t.{code}.a-guess")                    # a forged cookie: no powers
    guess = open_page(SCORES)
    assert "room.secret" not in guess.session_state and "does not open room" in text_of(guess)


def test_a_leaving_student_deletes_the_cookie_and_an_ended_room_says_so(monkeypatch):
    teacher, code = teacher_opens()
    ada = student_joins(code, "Ada")
    value = ada.session_state["room.cookie"]
    button(ada, "Leave the room").click().run()
    assert cookie_written(ada) == "" and "max-age=0" in [h.proto.body for h in ada.get("html")
                                                       if "document.cookie" in h.proto.body][-1]
    browser(monkeypatch, value)                                  # a tab that still sent the old cookie
    gone = open_page(ROOM)
    assert "room.code" not in gone.session_state and "your place" not in text_of(gone)
    assert f"This browser's place in room {code} is gone (you left the room)" in text_of(gone)
    ben = student_joins(code, "Ben")
    classroom.end_room(classroom.store_from_env(), code, teacher.session_state["room.secret"])
    browser(monkeypatch, ben.session_state["room.cookie"])
    ended = open_page(ROOM)
    assert "room.code" not in ended.session_state and f"Room {code} has ended" in text_of(ended)


def test_a_second_ada_is_asked_for_another_name_on_the_form():
    teacher, code = teacher_opens()
    student_joins(code, "Ada")
    at = open_page(ROOM, query={"join": code})
    at.text_input(key="room_join_nick").input("  ADA ")
    button(at, "Join the room").click().run()
    no_exception(at)
    assert "room.code" not in at.session_state
    assert f"Someone in room {code} is already called “ADA”: type another nickname" in text_of(at)
    assert at.text_input(key="room_join_nick").value == "  ADA "  # the form stays as typed
    at.text_input(key="room_join_nick").input("Ada L")
    button(at, "Join the room").click().run()
    assert at.session_state["room.nick"] == "Ada L"
    assert sorted(classroom.members(classroom.store_from_env(), code).values()) == ["Ada", "Ada L"]


def test_the_room_page_says_exactly_what_is_kept():
    doors = open_page(ROOM)
    said = text_of(doors)
    assert "nothing else is kept" not in said
    words = [m.value for m in doors.markdown if "**What:**" in m.value]
    assert len(words) == 1
    for claim in ("your nickname; for each question, which answer you chose, how many times you answered and how many "
                  "seconds after the question opened your last answer came",
                  "whether it follows the teacher or shows another page (which one)",
                  "when your screen last checked the room", "a digest of your rejoin key",
                  "in the memory of this app's server (nothing on disk", "in a cookie for this site only",
                  "until 4 hours after the last change in the room", "at once when the teacher ends the room",
                  "never in presenter mode (the projector's) or on a student's screen", "only you see your own answer",
                  "The browser forgets the cookie 8 hours after the app last wrote it",
                  "your answer to the question open now (unless its answer is revealed)"):
        assert claim in words[0], claim
    teacher, _ = teacher_opens()
    assert any("About the room: its title, a digest of your secret" in m.value for m in teacher.markdown)
    assert any("a model you trained and showed to the class (your last 4 at most)" in m.value for m in teacher.markdown)


def test_the_cookie_script_takes_only_letters_digits_dots_dashes(monkeypatch):
    """ui.raw_html.set_cookie goes through the app's one raw-HTML door: a value, name or path with anything but
    letters, digits, '.', '_', '-' (and '/' in the path) is refused, never written into the script."""
    from ui import raw_html
    calls = []
    monkeypatch.setattr(raw_html.st, "html", lambda body, **kw: calls.append((body, kw)))
    raw_html.set_cookie("attention_explorer_room", "s.K7MQ2D.abc_-1.tok-_9", "/", 3600)
    raw_html.set_cookie("attention_explorer_room", "", "/app", 3600)
    (write, kw), (delete, _) = calls
    assert kw == {"unsafe_allow_javascript": True} and write.count("<script>") == 1
    assert ("document.cookie = 'attention_explorer_room=s.K7MQ2D.abc_-1.tok-_9; path=/; max-age=3600; "
            "SameSite=Strict' + (location.protocol === 'https:' ? '; Secure' : '');") in write
    assert "attention_explorer_room=; path=/app; max-age=0; SameSite=Strict" in delete
    for value, path in (("x'; alert(1); '", "/"), ("a</script><img src=x>", "/"), ("a b", "/"), ("a;b=c", "/"),
                        ("ok", "/x'</script>"), ("ok", "relative"), ("é", "/")):
        with pytest.raises(ValueError):
            raw_html.set_cookie("attention_explorer_room", value, path, 60)
    assert len(calls) == 2

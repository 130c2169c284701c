"""What a pushed view carries besides its link's parameters, and what stays on the teacher's screen.

- Carried: bytes a page holds in the session that a view names by their digest (a session-trained run of the small
  model: the induction page `offer`s it under its parameter "induction.run"). At "Show this to the class" the room
  bar asks `view_to_push`: each offered thing the view names goes to the store beside the room
  (classroom.room.put_run), then the view goes. A student's page `fetch`es it by that digest from the room.
- Staying: what a page holds in the session and a view cannot carry (its controls that no link holds, a trained
  model of its own, uploaded vectors, a step turned into a table). `stays` names them, so the room bar says it to
  the teacher next to the button, before the push.
"""
from __future__ import annotations

import streamlit as st

import classroom

from ..page_state import view_of
from .session import store

OFFERED = "room.offered"          # session: {view parameter: (digest, bytes)} this session can carry with a view

# Each page's controls and session things that no link holds (the page's own controls that travel are declared in
# ui/page_state.py), and what students see instead (None: each one's default).
STAYS: dict[str, tuple[tuple[str, ...], str | None]] = {
    "app_pages/1_embeddings.py": (("the word whose nearest neighbours are listed",), None),
    "app_pages/2_positional.py": (("the dimensions drawn as curves", "the positions drawn"), None),
    "app_pages/10_training_step.py": (("the review taken from the dataset", "its label", "the learning rate η",
                                       "the frozen last layer", "the parameter shown", "the open group",
                                       "the SymPy box"), None),
    "app_pages/11_train.py": (("the training settings (learning rate, epochs, batch, the model's choices)",
                               "the data (an uploaded CSV)", "the classifiers you trained", "the review you typed"),
                              "the defaults and no trained classifier"),
    "app_pages/21_alignment.py": (("the model you trained and its training settings", "the pairs and the output step",
                                   "the open stage", "the sorting example's length and shuffle",
                                   "the box of the learned parameters"), "the defaults and no trained model"),
    "app_pages/22_grid.py": (("the queries asked together in (b) and (c)",), None),
    "app_pages/23_pytorch_mha.py": (("the layer's heads", "the padding", "the dropout p and draw", "the mode",
                                     "the open group", "the head drawn", "the boxes of more steps"), None),
    "app_pages/31_quiz.py": (("your round of questions and your answers",), "their own round, from its first question"),
    "app_pages/32_export.py": (("the matrix to download", "the chart shown", "the page to share and its presenter "
                                "switch", "the script's box"), None),
    "app_pages/61_lessons.py": (("the lesson you are building or editing", "the lessons you opened"),
                                "the page as it opens, with the shipped lessons"),
}


def offer(param: str, name: str, blob: bytes) -> None:
    """A page: this session holds `blob` (digest `name`), which a view names by `param=name`."""
    st.session_state.setdefault(OFFERED, {})[param] = (name, bytes(blob))


def withdraw(param: str) -> None:
    (st.session_state.get(OFFERED) or {}).pop(param, None)


def offered(param: str) -> str | None:
    got = (st.session_state.get(OFFERED) or {}).get(param)
    return got[0] if got else None


def _named(view: dict) -> list[tuple[str, str]]:
    """(parameter, digest) of each carried thing the view names (today: a run of the small model)."""
    return [(p, v) for p, v in view.get("query", {}).items() if p.endswith(".run") and v]


def stays(page_file: str, config=None) -> list[str]:
    """What a push of this page's view leaves behind, each with what students see instead (for the teacher, before
    the push)."""
    out = []
    if config is not None and config.embedding == "upload":
        out.append("your uploaded vectors (students see the default embeddings)")
    for param, name in _named(view_of(page_file)):
        if offered(param) != name and fetch(name) is None:      # neither this session's nor the room's
            out.append("the run shown, which was trained in another session (students see the shipped run)")
    tables = [k for k, v in st.session_state.items() if isinstance(k, str) and ":tbl:" in f":{k}" and v is True]
    if tables:
        out.append(f"the {'step' if len(tables) == 1 else f'{len(tables)} steps'} you turned into a table "
                   "(students see the heatmaps)")
    words, instead = STAYS.get(page_file, ((), None))
    if words:
        instead = instead or ("its default" if len(words) == 1 else "their defaults")
        out.append(f"{', '.join(words)} (students see {instead})")
    return out


def stays_text(page_file: str, config=None) -> str:
    things = stays(page_file, config)
    return ("Not sent with this view: " + "; ".join(things) + ".") if things else ""


def view_to_push(code: str, secret: str, page_file: str) -> tuple[dict, list[str]]:
    """The view to show the class, with what it names put beside the room first; and the messages of what could
    not go (its parameter then leaves the view: students see the default)."""
    view = view_of(page_file)
    query = dict(view["query"])
    problems = []
    for param, name in _named(view):
        got = (st.session_state.get(OFFERED) or {}).get(param)
        blob = got[1] if got is not None and got[0] == name else fetch(name)   # this session's, or the room's already
        if blob is None:
            query.pop(param)
            continue
        try:
            classroom.room.put_run(store(), code, secret, blob)
        except classroom.RoomError as err:
            query.pop(param)
            problems.append(f"{err} Students see the shipped run.")
        except Exception:
            query.pop(param)
            problems.append("Your run could not be sent (the room's store does not answer): students see the "
                            "shipped run.")
    return {**view, "query": query}, problems


def fetch(name: str) -> bytes | None:
    """The bytes the room keeps under digest `name` (for a student's page), or None: not in a room, the room no
    longer keeps it, or the store does not answer."""
    code = st.session_state.get("room.code")
    if not code:
        return None
    try:
        return classroom.room.get_run(store(), code, name)
    except Exception:
        return None

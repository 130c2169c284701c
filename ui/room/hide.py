"""A lesson stop's predict state on this screen: which numbers a student may not see yet.

A teacher's lesson stop arrives on the students' screens with the numbers that answer its question hidden
(classroom.push's "hide": a step's key, every cell of it, or one cell "<step key>:<head or None>.<i>.<j>"; a page's
own view of the trace has the key "view:<name>", e.g. "view:cosine_tokens:None.0.2");
the teacher's "Reveal" pushes the view again without them (but for a later stop's of the same view:
classroom.lesson.hidden_at). A session keeps the list of the view last put in
under "room.hide" (ui/room/session.go). The heatmaps, the tables and the cell explanations ask `hidden`:

- a student (in a room, without the teacher's secret), and the teacher in presenter mode (the projector): the
  hidden numbers are drawn as "?" and never sent to the browser (not in a chart's data, not in its tooltip, not
  in a table's cells, not in an explanation);
- the teacher's own screen: `hidden` is False (the teacher sees every number) and `marked` says which are
  hidden on the students' screens, to outline them;
- out of a room: both False at once, nothing read.

    >>> parse(("weights:None.1.3", "context", "scores:2.0.1", "view:cosine_tokens:None.0.2"))[1] == {
    ...     ("weights", None, 1, 3), ("scores", 2, 0, 1), ("cosine_tokens", None, 0, 2)}
    True
    >>> sorted(parse(("context", "view:cosine_tokens", "cosine_tokens"))[0])
    ['context', 'cosine_tokens']
"""
from __future__ import annotations

import functools

import streamlit as st

from classroom.lesson import parse_hide

KEY = "room.hide"
HIDDEN_SAYS = "?"


@functools.lru_cache(maxsize=64)
def parse(hide: tuple[str, ...]) -> tuple[frozenset, frozenset]:
    """(the steps hidden whole, the cells hidden one by one as (step key, head, i, j)), read by the lessons' own
    grammar (classroom.lesson.parse_hide). A page's own view is named with or without its "view:" prefix, and kept
    without it. Names of another shape (classroom.push never keeps one) hide nothing."""
    whole, cells = set(), set()
    for name in map(str, hide):
        parsed = parse_hide(_bare(name))
        if parsed is None:
            continue
        step, cell = parsed
        if cell is None:
            whole.add(step)
        else:
            cells.add((step, *cell))
    return frozenset(whole), frozenset(cells)


def _bare(step_key: str) -> str:
    """A step's key as the hide lists name it: a page's view ("view:cosine_tokens") by its name alone."""
    return step_key.removeprefix("view:")


def _list(teacher: bool) -> tuple[str, ...]:
    """This session's hide list where its screen hides (teacher=False: a student's, or the teacher's in presenter
    mode, which is the projector's) or marks (teacher=True: the teacher's own screen) the numbers; else ()."""
    state = st.session_state
    if "room.code" not in state:
        return ()
    marks = bool(state.get("room.secret")) and not state.get("s.presenter", False)
    if marks != teacher:
        return ()
    return tuple(state.get(KEY) or ())


def _in(hide: tuple[str, ...], step_key: str, head, i: int, j: int) -> bool:
    if not hide:
        return False
    whole, cells = parse(hide)
    step_key = _bare(step_key)
    return step_key in whole or (step_key, None if head is None else int(head), int(i), int(j)) in cells


def hiding() -> bool:
    """Whether this screen hides any number now (a student's, or the projector's, during a stop to predict)."""
    return bool(_list(False))


def hidden(step_key: str, head, i: int, j: int) -> bool:
    """Whether this screen (a student's, the projector's) must show "?" for the cell (i, j) of `step_key` (head None: a 2-D step;
    a vector's entry j is (0, j))."""
    return _in(_list(False), step_key, head, i, j)


def marked(step_key: str, head, i: int, j: int) -> bool:
    """Whether the teacher's screen marks the cell as hidden on the students' screens."""
    return _in(_list(True), step_key, head, i, j)


def _cells(hide: tuple[str, ...], step_key: str, head, shape: tuple[int, int]) -> tuple[tuple[int, int], ...]:
    if not hide:
        return ()
    whole, cells = parse(hide)
    rows, cols = shape
    step_key = _bare(step_key)
    if step_key in whole:
        return tuple((i, j) for i in range(rows) for j in range(cols))
    head = None if head is None else int(head)
    return tuple(sorted((i, j) for key, h, i, j in cells if key == step_key and h == head and i < rows and j < cols))


def hidden_cells(step_key: str, head, shape: tuple[int, int]) -> tuple[tuple[int, int], ...]:
    """The cells of a rows × cols matrix (one head's) this student's screen shows as "?" (sorted); () for the
    teacher and out of a room."""
    return _cells(_list(False), step_key, head, shape)


def marked_cells(step_key: str, head, shape: tuple[int, int]) -> tuple[tuple[int, int], ...]:
    """The cells the teacher's screen outlines: hidden on the students' screens until the reveal."""
    return _cells(_list(True), step_key, head, shape)


def any_hidden(step_key: str) -> bool:
    """Whether any number of the step is hidden on this (a student's) screen: a cheap test before the rest."""
    hide = _list(False)
    if not hide:
        return False
    whole, cells = parse(hide)
    step_key = _bare(step_key)
    return step_key in whole or any(c[0] == step_key for c in cells)


def hidden_read(step_key: str, cell: tuple) -> bool:
    """Whether an explanation's input cell (attention_core's reads: (head, i, j), (i, j) or (j,)) is hidden here."""
    if not any_hidden(step_key):
        return False
    cell = tuple(int(c) for c in cell)
    head, (i, j) = ((cell[0], cell[1:]) if len(cell) == 3 else (None, cell) if len(cell) == 2 else
                    (None, (0, cell[0])) if len(cell) == 1 else (None, (0, 0)))
    return hidden(step_key, head, i, j)


def row_hidden(step_key: str, head, i: int, cols: int) -> bool:
    """Whether any cell of row i (of a step with `cols` columns) is hidden here: what sums or ranks the row (its
    largest weight, the key it looks at most, its entropy) would give the hidden number away."""
    return any_hidden(step_key) and any(hidden(step_key, head, i, j) for j in range(cols))


def column(values, digits: int, flags):
    """A table's number column with "?" where `flags` is true: (the column, whether it became text). Without a
    flag it is the numbers as given (a NumberColumn formats them); with one, every entry is text, so the hidden
    number is not in the table's data at all. Pair a text column with st.column_config.TextColumn."""
    import pyarrow as pa
    if not any(flags):
        return values, False
    return pa.array([HIDDEN_SAYS if f else "" if x != x else f"{float(x):.{digits}f}" for x, f in zip(values, flags)]), True


WAITS = ":material/visibility_off: Predict first: revealed by your teacher."   # a passage that states a hidden answer


def whole(step_key: str) -> bool:
    """Whether every number of the step is hidden on this screen (the stop hides it by its name): its description,
    which may state those numbers or the rule that makes them in words, waits for the reveal too."""
    hide = _list(False)
    return bool(hide) and _bare(step_key) in parse(hide)[0]


WHY_WAITS = "What these numbers are, in words, comes with them at the reveal."


def waits(*step_keys: str) -> bool:
    """Whether a passage that states the answer of these steps' numbers in words waits for the reveal on this screen
    (a student's, the projector's): any of them hidden. Out of a room: False at once, nothing read."""
    return any(any_hidden(k) for k in step_keys)


STUDENT_CAPTION = (f":material/visibility_off: “{HIDDEN_SAYS}” is a number hidden until your teacher reveals it: "
                   "predict it first.")
TEACHER_CAPTION = (":material/visibility_off: Outlined with dashes: hidden on the students' screens until you "
                   "reveal.")

"""The settings' values: kept in st.session_state under their own keys ("s.<field>"), read from the URL once
per session, and the widget that draws a setting from its kept value and copies the learner's change back.

Streamlit drops a widget's state when a page that does not draw that widget runs, so each widget ("w.<field>")
copies its value out on change and is re-seeded from it when drawn again. A stored setting is a value, never
an option's label.
"""
from __future__ import annotations

from dataclasses import fields

import streamlit as st

from attention_core import Config
from attention_core.labs.export import config_from_query

DEFAULT = Config()
FIELDS = [f.name for f in fields(Config)]


def init_state(check_forward: bool = True) -> None:
    """Once per session: settings from the URL (bad values fall back, with a notice). check_forward=False on a
    page that reads the sentence only (a real model's): its sentence is kept even if the toy model cannot run it."""
    if "s.ready" in st.session_state:
        return
    params = dict(st.query_params)
    config, notices = config_from_query(params, check_forward)
    for name in FIELDS:
        st.session_state[f"s.{name}"] = getattr(config, name)
    presenter, notice = presenter_from_query(params)
    st.session_state["s.presenter"] = presenter
    from . import page_state
    notices += page_state.from_query(params)
    st.session_state["s.url_notices"] = notices + ([notice] if notice else [])
    st.session_state["s.ready"] = True


PRESENTER_VALUES = {"1": True, "0": False}


def presenter_from_query(params: dict) -> tuple[bool, str | None]:
    """Presenter mode from a link ("presenter=1"): (on, notice). Display only, not in the Config."""
    raw = params.get("presenter")
    if isinstance(raw, (list, tuple)):
        raw = raw[-1] if raw else None
    if raw is None:
        return False, None
    if str(raw) in PRESENTER_VALUES:
        return PRESENTER_VALUES[str(raw)], None
    return False, (f"Link setting “presenter” must be 1 or 0, not {str(raw)[:40]!r}; using the default "
                   "(presenter mode off).")


def stored(name: str):
    return st.session_state[f"s.{name}"]


def widget_key(name: str) -> str:
    """The widget's key. The KV-heads box offers other options for every H (divisors of H, labelled
    with H): its key names H, so a change of H makes a new widget instead of handing the old one's
    value (the browser sends back the old option's label) to a box whose options changed."""
    return f"w.{name}.{stored('n_heads')}" if name == "n_kv_heads" else f"w.{name}"


def _copy_out(name: str, key: str | None = None) -> None:
    value = st.session_state.get(key or f"w.{name}")
    if value is None or not _valid(name, value):   # a stale or forged widget message: nothing to copy
        return
    if name == "padding":
        value = tuple(sorted(value))
    st.session_state[f"s.{name}"] = value
    kv = st.session_state.get("s.n_kv_heads") or 0
    if name == "n_heads" and kv and value % kv:            # the KV heads no longer divide the query heads
        st.session_state["s.n_kv_heads"] = 0
        st.session_state["s.reseed"] = (st.session_state.get("s.reseed") or set()) | {"n_kv_heads"}
        st.session_state["s.kv_notice"] = (f"{kv} KV heads cannot be shared evenly by {value} query heads: KV heads "
                                           "set back to one per query head (multi-head).")


def _valid(name: str, value) -> bool:
    """A widget's value has the setting's type (a stored setting is a value, never an option's label)."""
    default = getattr(DEFAULT, name)
    if isinstance(default, bool):
        return isinstance(value, bool)
    if isinstance(default, (int, float)):
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if isinstance(default, tuple):
        return isinstance(value, (list, tuple)) and all(isinstance(v, int) for v in value)
    return isinstance(value, str) or (default is None and value is None)


def _fit(name: str, value, kwargs: dict):
    """Widget bounds are narrower than the Config's: clamp (or snap) a value from the URL into them."""
    if "min_value" in kwargs and value < kwargs["min_value"]:
        return type(value)(kwargs["min_value"])
    if "max_value" in kwargs and value > kwargs["max_value"]:
        return type(value)(kwargs["max_value"])
    options = kwargs.get("options")
    if options is not None and name != "padding" and value not in options:
        numeric = all(isinstance(o, (int, float)) for o in options)
        return min(options, key=lambda o: abs(o - value)) if numeric else options[0]
    return value


def widget(make, name: str, label: str, **kwargs):
    """A settings widget whose default is the stored setting.

    The stored value is passed as the widget's default (never written into the widget's own
    state), so a value the browser sends, e.g. after a server restart, wins; and whatever the
    widget returns is copied back, so the page computes with what the learner sees.
    """
    value = _fit(name, stored(name), kwargs)
    key = widget_key(name)
    reseed = st.session_state.get("s.reseed") or set()
    if name in reseed:
        # After a ConfigError the setting was put back to the value in force: write it into the
        # widget's own state (this run, before the widget exists) so the browser shows it too;
        # a default alone would not move a widget the browser already holds.
        reseed.discard(name)
        st.session_state[key] = list(value) if make is st.multiselect else value
        shown = make(label, key=key, on_change=_copy_out, args=(name, key), **kwargs)
        st.session_state[f"s.{name}"] = tuple(sorted(shown)) if name == "padding" else shown
        return shown
    if make in (st.selectbox, st.radio):
        kwargs["index"] = list(kwargs["options"]).index(value)
    elif make is st.multiselect:
        kwargs["default"] = [v for v in value if v in kwargs["options"]]
    else:
        kwargs["value"] = value
    shown = make(label, key=key, on_change=_copy_out, args=(name, key), **kwargs)
    if shown is not None and _valid(name, shown):
        st.session_state[f"s.{name}"] = tuple(sorted(shown)) if name == "padding" else shown
    return shown


def apply(changes: dict) -> None:
    """Set sidebar settings from a page (a callback: before the rerun that draws them): the stored values
    change and each widget is redrawn at its new value. Settings that cannot combine are refused on
    the rerun as any other change is (the message, the previous settings kept)."""
    for name, value in changes.items():
        st.session_state[f"s.{name}"] = value
    st.session_state["s.reseed"] = (st.session_state.get("s.reseed") or set()) | set(changes)


def sidebar_button(label: str, changes: dict, key: str, help: str | None = None) -> None:
    """One click that makes the sidebar's settings what a page's lesson needs (the page says why in sight):
    the page never draws a second control for a sidebar setting."""
    st.button(label, key=key, on_click=apply, args=(dict(changes),), icon=":material/tune:", help=help)


SENTENCE_ONLY: set[str] = set()    # pages that read the sentence only (a section declares them: ui/real/state.py)


def apply_view(view: dict) -> list[str]:
    """Put a view ({"page": page file, "query": a link's parameters}: what a room's teacher showed, a lesson's
    stop) into this session as opening its link would: the settings from the query (the others back to their
    defaults), the page's own controls, open tab and clicked cell (ui/page_state.put). Every settings widget
    ("w.*") is dropped and redrawn at its setting. The caller then switches to view["page"]. Returns the
    notices of values that could not be used (each falls back to its default)."""
    query = view.get("query") or {}
    if not isinstance(query, dict):
        query = {}
    config, notices = config_from_query(query, str(view.get("page", "")) not in SENTENCE_ONLY)
    state = st.session_state
    for key in [k for k in state if isinstance(k, str) and k.startswith("w.")]:
        del state[key]
    for name in FIELDS:
        state[f"s.{name}"] = getattr(config, name)
    state["s.reseed"] = set(FIELDS)
    state["s.last_good"] = config
    for key in ("s.config_error", "s.kv_notice", "s.upload_error"):
        state.pop(key, None)
    state["s.url_notices"] = []               # the notices of the link this session opened are no longer in force
    from . import page_state
    return notices + page_state.put(str(view.get("page", "")), query)


def current_settings() -> dict:
    return {name: stored(name) for name in FIELDS}


def presenting() -> bool:
    """Presenter mode (for a projector): no sidebar, larger charts and text (ui/presenter.py)."""
    return bool(st.session_state.get("s.presenter", False))


SIDEBAR_BACK = " Presenter mode hides the sidebar: turn its switch, over the title, off to see it."


def sidebar_back() -> str:
    """Said after a sentence that sends the reader to the sidebar: how to get it back while presenter mode
    hides it, once a page run (ui.page starts the count); '' when presenter mode is off or it was said above."""
    if not presenting() or st.session_state.get("s.sidebar_back_said"):
        return ""
    st.session_state["s.sidebar_back_said"] = True
    return SIDEBAR_BACK

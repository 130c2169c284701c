"""The shared settings: sidebar widgets -> a validated Config, kept across pages and in the URL.

Here: the settings a page computes with (the last good ones on bad input: the changed control put back, the
message kept) and the settings as a link. The parts:

    settings_state.py  the values in session state, read from the URL; the widget that keeps a setting
    settings_panel.py  the panel's groups and controls; the labels of the options; a group's line in force
"""
from __future__ import annotations

import streamlit as st

from attention_core import Config, ConfigError
from attention_core.labs.export import config_to_query

from .cache import get_trace
from .settings_panel import (EMBEDDING_LABELS, MASK_LABELS, POSITIONAL_LABELS, SCORE_LABELS, WEIGHTS_LABELS,
                             settings_panel, settings_summary, upload_vectors)
from .settings_state import (DEFAULT, FIELDS, apply, apply_view, current_settings, init_state, presenting,
                             sidebar_back, sidebar_button, stored, widget)

__all__ = ["sidebar_settings", "sentence_settings", "query_for", "DEFAULT_QUERY", "settings_summary", "init_state", "stored", "widget",
           "apply", "apply_view", "sidebar_button", "current_settings", "presenting", "sidebar_back", "upload_vectors", "DEFAULT",
           "FIELDS",
           "EMBEDDING_LABELS", "WEIGHTS_LABELS", "POSITIONAL_LABELS", "SCORE_LABELS", "MASK_LABELS"]


# Settings a control cannot be put back on: the sentence stays as typed (the learner edits it;
# the message names the unknown words), the vectors come from a file, and "upload" must stay
# chosen while no file is chosen yet (the file box appears under it).
NOT_PUT_BACK = {"sentence", "vectors"}


def _put_back(err: ConfigError, good: Config) -> bool:
    """After a ConfigError: put the changed controls back to the settings in force (the last good
    ones), keep the message for the rerun that redraws them. False if no control can be put back."""
    current = current_settings()
    changed = [name for name in FIELDS if name not in NOT_PUT_BACK and current[name] != getattr(good, name)
               and not (name == "embedding" and current[name] == "upload")]
    if not changed:
        return False
    for name in changed:
        st.session_state[f"s.{name}"] = getattr(good, name)
    st.session_state["s.reseed"] = set(changed)
    back = ", ".join(f"{name} = {getattr(good, name)!r}" for name in changed)
    st.session_state["s.config_error"] = f"{err} The control is back at the value in force ({back})."
    return True


def sentence_settings() -> tuple[Config, None]:
    """The sidebar of a page that reads only the sentence (a real model's pages: its own tokenizer takes any
    text, so the toy model's vocabulary, shapes and seed neither apply nor refuse it). The other settings stay
    as they are, in force on the other pages and in the link; no toy forward pass is run."""
    init_state()
    with st.sidebar:
        widget(st.text_input, "sentence", "Sentence", help="The text the model reads, as typed: its own tokenizer "
               "cuts it into pieces.")
        st.caption("The other settings (embeddings, heads, position, score, mask) are the toy model's: they wait "
                   "for you on the attention pages.")
    for notice in st.session_state.get("s.url_notices") or []:
        if not notice.startswith("Link setting “") or notice.startswith("Link setting “sentence”"):
            st.warning(notice, icon=":material/link_off:")    # the link's sentence (empty, too long) was not used:
                                                              # said here, where it would be read (a toy setting's
                                                              # notice waits for the attention pages)
    good = st.session_state.get("s.last_good", DEFAULT)
    try:
        config = Config(**current_settings())
    except ConfigError as err:
        st.error(f"{err} Showing the last settings that worked.", icon=":material/error:")
        config = good
    return config, None


def sidebar_settings(page_file: str = "") -> tuple[Config, object]:
    """Draw the settings; return the Config and Trace to show (the last good ones on bad input).

    A setting that makes a ConfigError is put back to the value in force (the control shows
    it), with the message kept across the rerun; a sentence is left as typed, with the message.
    """
    init_state()
    with st.sidebar:
        settings_panel(page_file)
    for notice in st.session_state.get("s.url_notices") or []:
        st.warning(notice, icon=":material/link_off:")
    if st.session_state.get("s.upload_error"):
        st.error(st.session_state["s.upload_error"], icon=":material/error:")
    kv_notice = st.session_state.pop("s.kv_notice", None)   # set when the heads changed under the KV heads
    if kv_notice:
        st.info(kv_notice, icon=":material/info:")
    kept = st.session_state.pop("s.config_error", None)     # set by _put_back before its rerun
    if kept:
        st.error(kept, icon=":material/error:")
    good = st.session_state.get("s.last_good", DEFAULT)
    try:
        config = Config(**current_settings())
        trace = get_trace(config)
    except ConfigError as err:
        if not kept and _put_back(err, good):    # once: a put-back run never puts back again
            st.rerun()
        st.error(f"{err} Showing the last settings that worked.", icon=":material/error:")
        config, trace = good, get_trace(good)
    st.session_state["s.last_good"] = config
    return config, trace


DEFAULT_QUERY = config_to_query(DEFAULT)


def query_for(config: Config) -> dict[str, str]:
    """The URL parameters for a Config: only what differs from the defaults (short, readable links).

    An uploaded vectors file cannot travel in a link, so such a link says nothing of the embedding.
    """
    query = {k: v for k, v in config_to_query(config).items() if v != DEFAULT_QUERY[k]}
    if config.embedding == "upload":
        query.pop("embedding", None)
    return query

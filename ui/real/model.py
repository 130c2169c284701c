"""The model picker on every real-model page, the model loaded once per process, and the sidebar's sentence through it.

What is loaded without a click: the project's own small model (shipped with it: the first choice and the default,
offline and instant, unless the host set a model of its own: that one comes first, the small one second), this
server's own model (the folder ATTENTION_EXPLORER_REAL_MODEL_DIR names), a folder typed in the box, a listed model
already in the server's Hugging Face cache. A listed model that is not
there waits for a click: "Size of the download" asks the hub what its files weigh, "Download … and load" fetches
them (with progress where the loader offers it). A failure of any kind is a RealModelError: its message is shown
and the session keeps the model it had (the previous state). A pushed view names its model (state.py): a student's
server that does not have it says so plainly, and the class question of the view still works on the teacher's.
"""
from __future__ import annotations

import dataclasses
import functools
import os
import threading
from pathlib import Path

import streamlit as st

from ..text import md_escape
from .state import CHOICES, FOLDER, MODELS, SERVER, SMALL

ENV = "ATTENTION_EXPLORER_REAL_MODEL_DIR"
GOOD = "real.good"                  # the session's last model that loaded: (choice, folder text)
_NAMED: dict[str, object] = {}      # a model's name as the page says it -> its RealModel (load_model's, renamed)
_LOCK = threading.Lock()


def server_folder() -> str | None:
    """This server's own model: the folder ATTENTION_EXPLORER_REAL_MODEL_DIR names, if it is one."""
    folder = os.environ.get(ENV, "").strip()
    return folder if folder and Path(folder).expanduser().is_dir() else None


def choices() -> list[str]:
    """The picker's options: a host's model first when it set one (a host's choice wins), the small model second;
    with none, the small model first (this server's own is then no option)."""
    keep = server_folder() or st.session_state.get("real.model") == SERVER     # a follower's pushed "" stays said
    return list(CHOICES) if keep else [c for c in CHOICES if c != SERVER]


def _following() -> bool:
    """A student in a room (no teacher's secret) still following a view the teacher put in: the view on screen is the
    teacher's, pushed (not a student who opened this page on their own, or stepped out to it)."""
    state = st.session_state
    return ("room.code" in state and not state.get("room.secret") and bool(state.get("room.following"))
            and int(state.get("room.applied") or 0) > 0)


def label(choice: str) -> str:
    if choice == SMALL:
        return "The project's small model (shipped, offline)"
    if choice == SERVER:
        folder = server_folder()
        return f"This server's model ({Path(folder).name})" if folder else "This server's model (none set)"
    return "A folder on the server…" if choice == FOLDER else f"{choice} · {MODELS[choice]}"


def cached_folder(name: str) -> Path | None:
    """A listed model's folder in the Hugging Face cache, or None: never the network."""
    from huggingface_hub import snapshot_download

    from attention_core.training.real.hub import FILES, cache_dir
    try:
        return Path(snapshot_download(name, allow_patterns=FILES, cache_dir=cache_dir(), local_files_only=True))
    except Exception:                                 # noqa: BLE001 (not in the cache, whatever the reason)
        return None


def load(name: str, folder: Path):
    """load_model(folder) once per process, as `name`: every session shares it (read-only)."""
    from attention_core.training.real import load_model
    with _LOCK:
        if name not in _NAMED:
            model = load_model(folder)
            _NAMED[name] = model if model.name == name else dataclasses.replace(model, name=name)
        return _NAMED[name]


def loaded(name: str):
    return _NAMED.get(name)


def download(name: str) -> Path:
    """Fetch `name` into the Hugging Face cache, a progress bar while it comes (the hub module's download with a
    progress callback where it has one; else its folder lookup, which downloads, under a spinner)."""
    from attention_core.training.real import hub
    if hasattr(hub, "download"):
        bar = st.progress(0.0, text=f"Downloading {name}…")

        def progress(done: int, total: int) -> None:
            from attention_core.training.real.errors import gigabytes
            bar.progress(min(done / total, 1.0) if total else 0.0,
                         text=f"Downloading {name}: {gigabytes(done)} of {gigabytes(total)}")
        return Path(hub.download(name, progress=progress))
    with st.spinner(f"Downloading {name} into the Hugging Face cache…"):
        return hub.checkpoint_folder(name)


def _try(choice: str, folder_text: str, fetch: bool = False):
    """(model or None, a message when there is none). Raises RealModelError when a load fails."""
    if choice == SMALL:
        from attention_core.training.real.small import small_model
        return small_model(), None
    if choice == SERVER:
        folder = server_folder()
        if folder is None:
            teacher = ("Your teacher's view uses their server's own model, and this one has none: the numbers "
                       "would not be theirs. " if _following() else "")
            return None, (teacher + "This server has no model of its own (its host sets "
                          "ATTENTION_EXPLORER_REAL_MODEL_DIR to a checkpoint's folder). Pick the small model, a listed "
                          "model or a folder.")
        return load(f"this server's model ({Path(folder).name})", Path(folder)), None
    if choice == FOLDER:
        if not folder_text:
            return None, "Type the path of a folder on the server that holds config.json, tokenizer.json and the weights."
        from attention_core.training.real.hub import checkpoint_folder
        return load(folder_text, checkpoint_folder(folder_text)), None
    model = loaded(choice)
    if model is not None:
        return model, None
    folder = cached_folder(choice)
    if folder is None and fetch:
        folder = download(choice)
    if folder is None:
        return None, (f"This server does not have {choice} yet: it is not in the server's Hugging Face cache. "
                      "Download it once (the buttons above), or pick this server's model or another one.")
    return load(choice, folder), None


def picker():
    """The model box (a listed model, this server's, or a folder) and the model it gives, or None (said why)."""
    from attention_core.training.real import RealModelError
    if st.session_state.get("real.model", SERVER) == SERVER and not server_folder() and not _following():
        st.session_state["real.model"] = SMALL          # no model of the host's: the small one, named in the link
    with st.container(border=True):
        left, right = st.columns([2, 3])
        choice = left.selectbox("Model", choices(), key="real.model", format_func=label,
                                help="The project's own small model (the one the induction page trains), or a Hugging "
                                     "Face checkpoint: GPT-2 and Llama-style models. The project runs each itself, in "
                                     "numpy; a model is loaded once on this server, shared by every student.")
        folder_text = ""
        if choice == FOLDER:
            folder_text = right.text_input("Folder", key="real.folder", placeholder="/path/to/checkpoint",
                                           help="A folder in the Hugging Face layout: config.json, tokenizer.json and "
                                                "*.safetensors.")
        fetch = False
        if choice in MODELS and loaded(choice) is None and cached_folder(choice) is None:
            size_col, go_col = right.columns(2)
            if size_col.button("Size of the download", key="real.size", icon=":material/straighten:"):
                _say_size(choice)
            fetch = go_col.button(f"Download {choice} and load", key="real.fetch", icon=":material/download:")
        try:
            model, why = _try(choice, folder_text, fetch)
        except (RealModelError, OSError) as error:        # OSError: a disk full or unreadable mid-download
            st.error(md_escape(str(error)), icon=":material/error:")
            return _previous()
        if model is None:
            st.info(md_escape(why), icon=":material/info:")
            return _previous()
        st.session_state[GOOD] = (choice, folder_text)
        st.caption(md_escape(facts_line(model)))
        return model


def _say_size(name: str) -> None:
    from attention_core.training.real import RealModelError
    from attention_core.training.real.hub import plan
    try:
        with st.spinner(f"Asking the hub what {name} weighs…"):
            st.info(plan(name).say(), icon=":material/straighten:")
    except RealModelError as error:
        st.error(md_escape(str(error)), icon=":material/error:")


def _previous():
    """The session's last model that loaded (the previous state), said as such; None if there was none."""
    good = st.session_state.get(GOOD)
    if not good:
        return None
    try:
        model, _ = _try(*good)
    except Exception:                                 # noqa: BLE001 (it loaded before; if not now, none)
        return None
    if model is not None:
        st.caption(f"Showing {md_escape(model.name)}, the last model that loaded.")
    return model


def vocabulary(model, short: bool = False) -> str:
    """The tokenizer's pieces, and the embedding table's rows when it has more (Qwen2.5: rows past the tokenizer's
    pieces are padding, no token of text)."""
    rows, pieces = model.config.vocab, min(model.config.vocab, model.tokenizer.vocab_size)
    if rows == pieces:
        return f"{pieces:,} pieces"
    return (f"{pieces:,} pieces ({rows:,} rows of E)" if short else
            f"{pieces:,} pieces; its embedding table E has {rows:,} rows, the {rows - pieces:,} past them padding that "
            "no text becomes")


def facts_line(model) -> str:
    c = model.config
    if not c.mlp:                                     # the project's small model (training/real/small.py)
        return (f"The project's small model: {c.n_layers} layers of {c.n_heads} heads and no MLP (attention only), "
                f"d_model = {c.d_model}, d_k = {c.d_head}, a vocabulary of {c.vocab} tokens (one per distinct word of "
                f"the sentence), a context of {c.n_ctx}, {model.n_parameters:,} parameters trained on the copy task "
                "(the induction page's shipped run), run here in float32.")
    family = "GPT-2" if c.family == "gpt2" else f"Llama-style ({c.model_type})"
    kv = f" over {c.n_kv_heads} KV heads" if c.n_kv_heads != c.n_heads else ""
    return (f"{model.name}: {family}, {c.n_layers} layers of {c.n_heads} heads{kv}, d_model = {c.d_model}, "
            f"d_k = {c.d_head}, a vocabulary of {vocabulary(model, short=True)}, a context of {c.n_ctx:,}, "
            f"{model.n_parameters:,} parameters, run here in float32.")


@functools.lru_cache(maxsize=4)
def real_trace(model, text: str):
    """The sentence through the model (run_real), once per (model, text) per process."""
    from attention_core.training.real import run_real
    return run_real(model, text)


@functools.lru_cache(maxsize=4)
def roles(model):
    from attention_core.training.real.head_roles import head_roles
    return head_roles(model)


def sentence_trace(model, sentence: str):
    """The sidebar's sentence through the model, its notices said (a sentence cut at the context); None with a
    message for a sentence with no tokens."""
    try:
        trace = real_trace(model, sentence)
    except ValueError as error:
        st.warning(f"{md_escape(str(error))} The sentence box is in the sidebar.", icon=":material/edit:")
        return None
    for notice in trace.notices:
        st.warning(md_escape(notice), icon=":material/content_cut:")
    return trace


def model_and_trace(sentence: str):
    """The page's model (the picker) and the sentence's Trace; the page stops, said why, when there is neither."""
    model = picker()
    if model is None:
        st.stop()
    trace = sentence_trace(model, sentence)
    if trace is None:
        st.stop()
    return model, trace

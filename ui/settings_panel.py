"""The settings panel in the sidebar, group by group (the same panel, in the same place, on every page), and
the one read-only line a page shows of a group's settings in force."""
from __future__ import annotations

import functools

import streamlit as st

from attention_core import Config, ConfigError
from attention_core.math.embeddings import vocabulary_limit
from attention_core.math.limits import MAX_TOKENS, divisors
from attention_core.math.text import tokenize

from .settings_state import current_settings, sidebar_back, stored, widget

EMBEDDING_LABELS = {"glove": "GloVe 50-d (English words)", "random": "Seeded random", "toy": "Toy (3-d, 20 words)",
                    "upload": "Upload your own"}
WEIGHTS_LABELS = {"trained": "Trained on sentiment data", "random": "Seeded random start"}
POSITIONAL_LABELS = {"sinusoidal": "Sinusoidal", "learned": "Learned table", "index": "Index feature (tutorial 1)",
                     "none": "None", "rope": "RoPE (rotates Q and K)", "alibi": "ALiBi (a bias on the scores)"}
SCORE_LABELS = {"scaled_dot": "Scaled dot  QKᵀ/√d_k", "dot": "Dot  QKᵀ", "additive": "Additive (Bahdanau)",
                "bilinear": "Bilinear  QWKᵀ"}
MASK_LABELS = {"none": "None", "causal": "Causal (no peeking ahead)", "padding": "Padding (hide chosen keys)",
               "sliding_window": "Sliding window (the last W tokens)"}


# Which page opens which collapsed group (the group stays in the same place on every page).
OPEN_GROUPS = {"position": {"app_pages/2_positional.py"},
               "score": {"app_pages/4_scores.py", "app_pages/5_softmax.py", "app_pages/20_score_functions.py"}}


def settings_panel(page_file: str = "") -> None:
    """One panel, the same on every page: what is changed most comes first (the first screen)."""
    sentence_controls()
    shape_controls()
    vocabulary_controls()
    with group("Position", "position", page_file) as box:
        if box.open:
            position_controls()
    with group("Score, mask & temperature", "score", page_file) as box:
        if box.open:
            score_controls()
            mask_controls()
    with group("Random seed & display", "display", page_file) as box:
        if box.open:
            widget(st.number_input, "seed", "Seed", min_value=0, max_value=2**32 - 1, step=1,
                    help="Same seed, same weights, same numbers: on every page, every machine.")
            display_controls()


def group(label: str, name: str, page_file: str):
    """A collapsed settings group that runs its widgets only while open (a lazy expander: opening
    it reruns the page). Closed, its settings stay in force from session state ("s.<field>"),
    and a rerun costs nothing for them: about 5 ms of the panel's 11 ms (bench/apptest_rerun.py)."""
    return st.expander(label, expanded=page_file in OPEN_GROUPS.get(name, ()), key=f"grp.{name}",
                       on_change="rerun")


def sentence_controls() -> None:
    """The "Sentence & embeddings" group: the sentence, then how its words become vectors."""
    s = stored
    widget(st.text_input, "sentence", "Sentence", help="Words are lower-cased; punctuation is set aside.")
    limit = _vocabulary_limit(tuple(sorted(current_settings().items(), key=lambda kv: kv[0])))
    if limit:                               # what the vocabulary knows, before anything is typed
        st.caption(limit)
    widget(st.selectbox, "embedding", "Embeddings", options=list(EMBEDDING_LABELS),
            format_func=EMBEDDING_LABELS.get)
    widget(st.selectbox, "weights", "Weights W_Q, W_K, W_V", options=list(WEIGHTS_LABELS),
            format_func=WEIGHTS_LABELS.get,
            help="Trained: learned by the sentiment classifier on the 84 shipped sentences, encoded as this page "
                 "encodes yours (so the attention means something). Seeded random: where that training started.")
    if s("embedding") == "upload":
        upload_vectors()


@functools.lru_cache(maxsize=256)
def _vocabulary_limit(settings: tuple) -> str | None:
    """The vocabulary line for these settings (None if they do not make a Config), once per process."""
    try:
        return vocabulary_limit(Config(**dict(settings)))
    except (ConfigError, TypeError):
        return None


def vocabulary_controls() -> None:
    """How many GloVe words, the width of random vectors, what happens to unknown words (below the shapes)."""
    s = stored
    if s("embedding") == "glove":
        widget(st.select_slider, "glove_vocab", "GloVe words kept (most frequent first)",
                options=[1_000, 5_000, 20_000, 100_000, 400_000], format_func=lambda v: f"{v:,}")
    fixed = {"toy": "the toy vectors have 3 dimensions", "glove": "GloVe vectors have 50 dimensions",
             "upload": "your file sets the dimension"}.get(s("embedding"))
    if fixed:
        width = {"toy": "3", "glove": "50"}.get(s("embedding"), "set by the file")
        st.caption(f"d_model (embedding width): {width}, fixed: {fixed}.")
    else:
        widget(st.slider, "d_model", "d_model (embedding width)", min_value=2, max_value=128,
                help="Width of the seeded random word vectors.")
    if s("embedding") != "random":          # random vectors exist for every word
        widget(st.radio, "unknown", "Unknown words", options=["drop", "unk"], horizontal=True,
                format_func={"drop": "drop them", "unk": "use <unk>"}.get)


def shape_controls() -> None:
    """Heads and the per-head widths: the shape of attention."""
    widget(st.slider, "n_heads", "Heads", min_value=1, max_value=8,
            help="H, the number of heads. Each head has its own d_k-wide queries, W_Q is d_model × H·d_k; keys and "
                 "values too, unless KV heads below share them between groups of heads.")
    if stored("n_heads") > 1:
        h = stored("n_heads")
        widget(st.selectbox, "n_kv_heads", "KV heads H_kv", options=[0] + [d for d in divisors(h) if d < h],
               format_func=lambda k: f"{h} · one per query head (MHA)" if k == 0 else
               f"{k} · {'MQA' if k == 1 else 'GQA'}, {h // k} query heads each",
               help="Grouped-query attention: query head h reads key/value head ⌊h / g⌋, g = H / H_kv. "
                    "K and V (and a decoder's KV cache) shrink to H_kv heads.")
    c1, c2 = st.columns(2)
    with c1:
        rope = stored("positional") == "rope"           # RoPE turns pairs of columns: d_k even, stepped by 2
        widget(st.number_input, "d_k", "d_k", min_value=2 if rope else 1, max_value=64, step=2 if rope else 1,
                help="Width of each query and key (per head)." + (" RoPE turns its columns in pairs: even values."
                                                                   if rope else ""))
    with c2:
        widget(st.number_input, "d_v", "d_v", min_value=1, max_value=64, step=1,
                help="Width of each value and context vector (per head).")


def display_controls() -> None:
    """Not part of the computation: how numbers are shown (kept per session, not in the Config). Presenter
    mode is the switch over every page's title (ui/presenter.py)."""
    st.session_state["s.precision"] = st.slider("Digits in explanations", 1, 8,
                                                value=st.session_state.get("s.precision", 3), key="w.precision")


def position_controls() -> None:
    s = stored
    widget(st.selectbox, "positional", "Positional encoding", options=list(POSITIONAL_LABELS),
            format_func=POSITIONAL_LABELS.get)
    widget(st.radio, "combine", "Combine with X", options=["add", "concat"], horizontal=True,
            disabled=s("positional") in ("index", "none", "rope", "alibi"),
            help="Adding keeps d_model; concatenating doubles it. The index feature is always appended. "
                 "RoPE and ALiBi add nothing to X.")
    widget(st.number_input, "pe_base", "Base (sinusoid or RoPE)", min_value=2.0, max_value=1e6, step=1000.0,
            disabled=s("positional") not in ("sinusoidal", "rope"),
            help="10,000 in the Transformer paper and RoFormer (Llama 2); RoPE: 500,000 in Llama 3, 1,000,000 in Qwen2.5.")


def score_controls() -> None:
    widget(st.selectbox, "score", "Score function", options=list(SCORE_LABELS), format_func=SCORE_LABELS.get)
    widget(st.toggle, "bias", "Biases on Q, K, V and output")


def mask_controls() -> None:
    s = stored
    widget(st.selectbox, "mask", "Mask", options=list(MASK_LABELS), format_func=MASK_LABELS.get)
    if s("mask") == "padding":
        words = tokenize(s("sentence"))[0][:MAX_TOKENS] if isinstance(s("sentence"), str) else []
        options = list(range(max(len(words), 1 + max(s("padding"), default=-1))))
        widget(st.multiselect, "padding", "Hidden key positions", options=options,
                format_func=lambda p: f"{p}: {words[p]}" if p < len(words) else str(p))
    if s("mask") == "sliding_window":
        widget(st.number_input, "window", "Window W (keys, the query included)", min_value=1, max_value=MAX_TOKENS,
               step=1, help="Query i sees keys j with 0 ≤ i − j < W. Mistral's paper writes i − W … i: W + 1 keys.")
    widget(st.slider, "temperature", "Softmax temperature", min_value=0.05, max_value=5.0, step=0.05,
            help="T in A = softmax(scores / T), the scores being S, Ŝ or S̃ as the settings make them: below 1 sharpens, above 1 flattens.")


def upload_vectors() -> None:
    up = st.file_uploader("Vectors file (GloVe text: a word, then its numbers)", type=["txt", "vec"],
                          key="w.vectors_file")
    if up is None:
        return
    try:
        text = up.getvalue().decode("utf-8")
    except UnicodeDecodeError:
        st.session_state["s.upload_error"] = "The file is not UTF-8 text; save it as plain text."
        return
    st.session_state["s.upload_error"] = None
    st.session_state["s.vectors"] = text


def settings_summary(config: Config, group: str) -> None:
    """One read-only line: the settings of a sidebar group in force on this page (the control
    itself lives in the sidebar, in the same place on every page)."""
    if group == "position":
        how = {"add": "added to X", "concat": "concatenated to X"}[config.combine]
        text = POSITIONAL_LABELS[config.positional] + (
            "" if config.positional in ("index", "none", "rope", "alibi") else f", {how}") + (
            f", base {config.pe_base:,g}" if config.positional in ("sinusoidal", "rope") else "")
        where = "Position"
    elif group == "mask":
        hidden = (f" (keys {', '.join(map(str, config.padding))} hidden)" if config.mask == "padding" else
                  f" (W = {config.window})" if config.mask == "sliding_window" else "")
        mask = "no mask" if config.mask == "none" else f"mask {MASK_LABELS[config.mask]}"
        text = f"{mask}{hidden} · temperature {config.temperature:g}"
        where = "Score, mask & temperature"
    elif group == "shape":
        kv = f" · KV heads {config.kv_heads}" if config.kv_heads < config.n_heads else ""
        text = f"heads {config.n_heads}{kv} · d_k {config.d_k} · d_v {config.d_v}"
        where = "the top"
    else:
        raise KeyError(group)
    st.caption(f":material/tune: In force: **{text}**. Change it in the sidebar ({where}).{sidebar_back()}")

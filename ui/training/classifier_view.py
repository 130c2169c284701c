"""Streamlit-side pieces shared by the two training pages: model settings, data, cached runs."""
from __future__ import annotations

import functools
from dataclasses import dataclass

import streamlit as st

from attention_core import classifier as clf
from attention_core.math.embeddings import glove_vocabulary, toy_vocabulary
from attention_core.training.training_input import TrainingSettings

VOCABS = {"glove": "GloVe 50-d (20,000 words)", "toy": "Toy (3-d: tutorial 2's words and a few more)"}
POSITION_LABELS = {"index": "index column (tutorial 1)", "sinusoidal": "sinusoidal (added)", "none": "none"}


@dataclass(frozen=True)
class ModelSettings:
    embedding: str = "glove"
    positional: str = "index"
    d_k: int = clf.DEFAULTS["d_k"]
    d_v: int = clf.DEFAULTS["d_v"]
    seed: int = 0

    def training(self, frozen: bool = False) -> TrainingSettings:
        """These settings as the claims about the training pages read them (the train page: sinusoids added,
        one head)."""
        return TrainingSettings(self.positional, "add", 1, bool(frozen), self.embedding)


def vocab(embedding: str):
    return glove_vocabulary(20_000) if embedding == "glove" else toy_vocabulary()


def model_controls(prefix: str) -> ModelSettings:
    """Embedding, position, sizes and seed of the classifier (each page keeps its own)."""
    c1, c2, c3, c4, c5 = st.columns([3, 3, 1.4, 1.4, 2])     # the two menus get room for their labels
    with c1:
        embedding = st.selectbox("Embeddings", list(VOCABS), format_func=VOCABS.get, key=f"{prefix}emb")
    with c2:
        positional = st.selectbox("Position", clf.POSITIONALS, key=f"{prefix}pos", format_func=POSITION_LABELS.get)
    with c3:
        d_k = st.number_input("d_k", 1, 64, clf.DEFAULTS["d_k"], key=f"{prefix}dk")
    with c4:
        d_v = st.number_input("d_v", 1, 64, clf.DEFAULTS["d_v"], key=f"{prefix}dv")
    with c5:
        seed = st.number_input("Seed", 0, 2**31 - 1, 0, key=f"{prefix}seed",
                               help="Seeds the starting weights, the order of the sentences in each epoch and which "
                                    "sentences are held out.")
    return ModelSettings(embedding, positional, int(d_k), int(d_v), int(seed))


LR_MIN, LR_MAX = 1e-5, 100.0
LR_HELP = ("Too large a rate makes training diverge: it then stops and keeps the last good parameters. With the "
           "default settings 5 does it within a few epochs (with the last layer frozen it does not).")


def learning_rate(where) -> tuple[float, str | None]:
    """The learning-rate box. (the rate in force, None), or, when the typed rate is refused, (the last rate
    accepted, why): the box takes any rate from 0 so that the page, not the browser, says what is wrong with it,
    and the numbers on the page stay those of the last accepted rate, said so."""
    typed = float(where.number_input("Learning rate", 0.0, LR_MAX, clf.DEFAULTS["lr"], format="%.4f", key="tr_lr",
                                     help=LR_HELP))
    if typed >= LR_MIN:
        st.session_state["tr_lr_good"] = typed
        return typed, None
    kept = float(st.session_state.get("tr_lr_good", clf.DEFAULTS["lr"]))
    why = ("at η = 0 a step changes nothing: each weight moves by η times its gradient" if typed == 0 else
           f"{typed:.2g} is below the smallest rate this page takes")
    shown = f"{kept:.4f}" if round(kept, 4) == kept else f"{kept:g}"     # 2e-05, not the box's 0.0000 (read as 0)
    return kept, (f"A learning rate of {typed:g} is refused: {why}. Choose a rate from {LR_MIN:g} to {LR_MAX:g}. "
                  f"The page keeps the last rate accepted, **{shown}**.")


@functools.lru_cache(maxsize=1)
def shipped_examples():
    return tuple(clf.load_dataset())


@functools.lru_cache(maxsize=8)
def encoded(examples: tuple, embedding: str, positional: str):
    """(samples, dropped texts) for a dataset under one embedding and position choice."""
    samples, dropped = clf.encode_dataset(list(examples), vocab(embedding), positional)
    return tuple(samples), tuple(dropped)


def initial_params(s: ModelSettings) -> dict:
    d_in = clf.d_in_for(vocab(s.embedding).dim, s.positional)
    return clf.init_params(d_in, s.d_k, s.d_v, s.seed)


def params_npz(params: dict, s: ModelSettings) -> bytes:
    """The parameters as .npz, with the settings they belong to (so an upload can be checked)."""
    import io

    import numpy as np
    buf = io.BytesIO()
    np.savez(buf, **params, settings=np.array([s.embedding, s.positional, str(s.d_k), str(s.d_v), str(s.seed)]))
    return buf.getvalue()


def params_from_npz(data: bytes, s: ModelSettings) -> dict:
    """Parameters from an uploaded .npz, checked against the current model shapes. Raises ConfigError."""
    import io
    import zipfile

    import numpy as np

    from attention_core import ConfigError
    if len(data) > 5_000_000:
        raise ConfigError("The parameter file is larger than 5 MB; it cannot be this model's.")
    try:
        archive = np.load(io.BytesIO(data), allow_pickle=False)
        arrays = {name: archive[name] for name in archive.files}
    except (ValueError, OSError, zipfile.BadZipFile, EOFError) as err:
        raise ConfigError(f"This is not a parameter file saved by this page (.npz): {type(err).__name__}.") from None
    expected = initial_params(s)
    missing = [n for n in clf.PARAM_NAMES if n not in arrays]
    if missing:
        raise ConfigError(f"The file has no {', '.join(missing)}; save parameters from this page and upload them.")
    for name in clf.PARAM_NAMES:
        a = arrays[name]
        if a.shape != expected[name].shape:
            raise ConfigError(f"{name} has shape {a.shape} but this model needs {expected[name].shape}: set the "
                              f"embeddings, position, d_k and d_v as when it was saved.")
        if not np.issubdtype(a.dtype, np.floating) or not np.isfinite(a).all():
            raise ConfigError(f"{name} must hold finite floating-point numbers.")
    return {name: arrays[name].astype(np.float64) for name in clf.PARAM_NAMES}



def trained_results(run: dict, s: ModelSettings, samples, test, train_set, settings) -> None:
    """After a run: its curves, what attention learned (before and after), a sentence to try, the
    parameters to keep."""
    import numpy as np

    import ui
    from attention_core import ConfigError
    if run["error"]:
        st.error(run["error"], icon=":material/warning:")
    if run["history"]:
        last = run["history"][-1]
        c1, c2, c3 = st.columns(3)
        c1.metric("Epochs run", last["epoch"])
        c2.metric("Training accuracy", f"{last['train accuracy']:.0%}")
        if test:
            c3.metric("Test accuracy (never trained on)", f"{last['test accuracy']:.0%}")
        ui.chart(ui.training_curves_spec(run["history"]))
        st.caption("Loss: the mean cross-entropy over the sentences after each epoch. Chance accuracy is about 33%.")

    st.header("What did attention learn?")
    chosen = st.multiselect("Sentences", [smp.text for smp in samples], default=[smp.text for smp in samples[:2]],
                            key="tr_show", max_selections=4)
    for text in chosen:
        sample = next(smp for smp in samples if smp.text == text)
        st.markdown(f"**“{' '.join(sample.tokens)}”** · label {clf.CLASSES[sample.y]}")
        cols = st.columns(2)
        for col, name, params in ((cols[0], "before training", run["params0"]), (cols[1], "after", run["params"])):
            with col:
                loss, trace = clf.forward(params, sample.x, sample.y, sample.tokens, settings)
                st.caption(f"{name}: predicts {trace.facts['prediction']} (p = "
                           f"{', '.join(f'{c} {p:.2f}' for c, p in zip(clf.CLASSES, trace['p'].value))})")
                ui.heatmap(trace, trace["weights"], key=f"hm:tr:{name}:{text}", max_w=280)

    st.header("Try a sentence")
    typed = st.text_input("A new review", "the battery is terrible", key="tr_try")
    try:
        tokens, x = clf.sentence_matrix(typed, vocab(s.embedding), s.positional)
        p, weights = clf.predict(run["params"], x)
        _, trace = clf.forward(run["params"], x, int(np.argmax(p)), tokens, settings)
        st.markdown(f"Prediction: **{clf.CLASSES[int(np.argmax(p))]}**")
        ui.chart(ui.grouped_bars_spec(
            [{"class": c, "probability": float(v), "model": "trained"} for c, v in zip(clf.CLASSES, p)],
            "class", "probability", "model", width=220, height=140))
        ui.heatmap(trace, trace["weights"], key="hm:tr:try")
    except ConfigError as err:
        st.error(str(err), icon=":material/error:")

    st.header("Keep the trained parameters")
    c1, c2 = st.columns(2)
    with c1:
        st.download_button("Download parameters (.npz)", params_npz(run["params"], s), file_name="attention_classifier.npz",
                           mime="application/octet-stream", icon=":material/download:")
    with c2:
        up = st.file_uploader("Upload parameters saved here", type=["npz"], key="tr_params_up")
        if up is not None:
            try:
                loaded = params_from_npz(up.getvalue(), s)
                r = clf.evaluate(loaded, train_set)
                run["params"] = loaded
                st.success(f"Loaded. Training accuracy with these parameters: {r['accuracy']:.0%}.")
            except ConfigError as err:
                st.error(str(err), icon=":material/error:")

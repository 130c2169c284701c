import numpy as np
import streamlit as st

import ui
from attention_core import ConfigError
from attention_core import classifier as clf
from attention_core.forward.claims import say
from ui.training.classifier_view import (encoded, initial_params, learning_rate, model_controls, shipped_examples,
                                         trained_results)

PAGE = "app_pages/11_train.py"
ui.page(PAGE, "Train a classifier", settings=False)
st.markdown("Train tutorial 1's classifier on short product reviews labelled **negative, neutral or positive**. "
            "Every step is the hand-written backward pass of the previous page, one sentence at a time "
            "(or averaged over a mini-batch). Watch the loss (it falls when the learning rate is small enough), "
            "then see what the attention learned.")

with st.container(border=True):
    s = model_controls("tr_")
    c1, c2, c3, c4, c5 = st.columns(5)
    lr, refused = learning_rate(c1)          # refused: the last accepted rate stays in force, and the page says so
    epochs = c2.number_input("Epochs", 1, 500, clf.DEFAULTS["epochs"], key="tr_epochs")
    batch = c3.number_input("Batch size", 1, 64, 1, key="tr_batch", help="1 = tutorial 1's per-sentence SGD.")
    freeze = c4.toggle("Freeze last layer", key="tr_freeze",
                       help="Keep W_O and b_O fixed: tutorial 1 does, to watch W_Q, W_K and W_V learn.")
    hold_out = c5.toggle("Hold out 20%", value=True, key="tr_holdout",
                         help="Sentences the model never trains on show whether it generalises.")
    source = st.radio("Data", ["shipped", "upload"], horizontal=True, key="tr_data",
                      format_func={"shipped": "the shipped reviews (data/sentiment.csv)",
                                   "upload": "my own CSV (text,label)"}.get)

try:
    if source == "upload":
        up = st.file_uploader("CSV with a header text,label; labels negative, neutral or positive", type=["csv"],
                              key="tr_csv")
        if up is None:
            st.info("Choose a CSV file to train on.", icon=":material/upload:")
            st.stop()
        examples = tuple(clf.load_dataset(up.getvalue()))
    else:
        examples = shipped_examples()
    samples, dropped = encoded(examples, s.embedding, s.positional)
except ConfigError as err:
    st.error(str(err), icon=":material/error:")
    st.stop()
if dropped:
    st.warning(f"{len(dropped)} sentence(s) have no word the vocabulary knows and are left out.")
order = np.random.default_rng(s.seed).permutation(len(samples))
n_test = len(samples) // 5 if hold_out and len(samples) >= 10 else 0
test = [samples[i] for i in order[:n_test]]
train_set = [samples[i] for i in order[n_test:]]
st.caption(f"{len(train_set)} sentences to train on" + (f", {len(test)} held out to test." if test else
                                                        " (too few to hold any out: it takes 10 or more)."
                                                        if hold_out else "."))
settings = s.training(freeze)
if settings.positional == "none":
    st.caption("Position is none: " + say("train_order_blind", settings) + ".")

run_key = (s, examples, float(lr), int(epochs), int(batch), bool(freeze), bool(hold_out))
runs = st.session_state.setdefault("train_runs", {})
run = runs.get(run_key)
if refused:
    st.error(refused + (" The numbers below are its last run's, not the typed rate's." if run is not None else ""),
             icon=":material/error:")
if st.button("Train", type="primary", icon=":material/play_arrow:", key="tr_go", disabled=bool(refused)):
    params0 = initial_params(s)
    history, params, error = [], params0, None
    bar = st.progress(0.0, text="Training…")
    chart = st.empty()
    try:
        for stats in clf.train(params0, train_set, float(lr), int(epochs), int(batch),
                               ("w_o", "b_o") if freeze else (), shuffle_seed=s.seed):
            params = stats["params"]
            row = {"epoch": stats["epoch"], "train loss": stats["loss"], "train accuracy": stats["accuracy"]}
            if test:
                t = clf.evaluate(params, test)
                row.update({"test loss": t["loss"], "test accuracy": t["accuracy"]})
            history.append(row)
            bar.progress(stats["epoch"] / int(epochs), text=f"Epoch {stats['epoch']} of {int(epochs)}: "
                                                            f"loss {stats['loss']:.4f}")
            ui.chart(ui.training_curves_spec(history), target=chart)
    except clf.TrainingDiverged as err:
        params, error = err.params, str(err)
    bar.empty()
    chart.empty()
    runs.clear()                       # keep one run per session: sessions stay small
    runs[run_key] = {"params0": params0, "params": params, "history": history, "error": error}

run = runs.get(run_key)
if run is None:
    st.info("Press **Train**. With the defaults it takes a few seconds.", icon=":material/info:")
else:
    trained_results(run, s, samples, test, train_set, settings)

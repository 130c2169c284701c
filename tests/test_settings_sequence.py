"""The sidebar's settings changed in sequence, one notch or one pick at a time, as a student's hands
do: Heads up one and down one, KV heads to each offered option, d_k and d_v steps, positional
encodings (RoPE, ALiBi...), masks (sliding window and its W, padding and its keys), score
function, temperature notches, the bias toggle, weights, embeddings, the sentence.

The test drives the real app (app.py) in AppTest, but sends what a browser sends. For a widget
whose value travels as a label (selectbox, radio, multiselect, select_slider), AppTest sends the
label of the widget's current value under its current format_func; a browser sends the label it
holds: the one it committed when the widget appeared, when the student picked it, or when the
server last set it (set_value). The labels "2 · one per query head (MHA)" and "1: love" contain
H and the sentence's words, so after Heads or the sentence change the browser sends a label
that is not among the options any more; AppTest alone never does. `Student` keeps the labels a
browser holds and sends those (through AppTest's runner, as ElementTree.run does).

After every interaction: no exception; the stored settings ("s.<field>") have their Config types
and n_kv_heads is 0 or a proper divisor of n_heads; they make a Config, or the page says why in
an st.error and keeps the last good Config; every selectbox, radio and multiselect shows values
among its options; every settings widget shows the value stored for it.
"""
from __future__ import annotations

import math
from dataclasses import fields

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, precondition, rule, run_state_machine_as_test

from attention_core.forward.config import (COMBINES, EMBEDDINGS, MASKS, POSITIONALS, SCORES, UNKNOWN_POLICIES,
                                           WEIGHTS, Config)
from attention_core.math.limits import ConfigError
from tests.apptest_util import open_page

PAGES = ["app_pages/7_multi_head.py", "app_pages/5_softmax.py"]
FIELDS = {f.name: f for f in fields(Config)}
LABELLED = ("selectbox", "radio", "multiselect", "select_slider")     # their state travels as labels
SENTENCES = ["I love you today", "we miss the dog", "the cat sat on a mat", "they hate me", "zebra quantum flux"]
# The values a choice setting can take: the offered ones are those whose label is among the options.
CHOICES = {"w.embedding": EMBEDDINGS, "w.weights": WEIGHTS, "w.positional": POSITIONALS, "w.score": SCORES,
           "w.mask": MASKS, "w.unknown": UNKNOWN_POLICIES, "w.combine": COMBINES, "w.n_kv_heads": range(0, 17)}


@pytest.fixture(autouse=True)
def error_details():
    """The exception's type, message and traceback in AppTest's exception element (the app's
    .streamlit/config.toml redacts them for visitors: showErrorDetails = "none")."""
    from streamlit import config
    old = config.get_option("client.showErrorDetails")
    config.set_option("client.showErrorDetails", "full")
    yield
    config.set_option("client.showErrorDetails", old)


class Student:
    """One student's session of the app on `page`, sending what a browser would."""

    def __init__(self, page: str):
        self.page = page
        self.at = open_page(page, groups=True)          # the lazy settings groups open, as a student opens them
        self.held: dict = {}                            # widget id -> the WidgetState a browser holds
        self.log: list[str] = [f"open {page} (settings groups open)"]
        self.sync(touched=())

    # ------------------------------------------------------------------ the browser's side

    def labelled(self):
        return [w for kind in LABELLED for w in getattr(self.at, kind)]

    def sync(self, touched) -> None:
        """After a run: a widget just drawn, just picked or just set by the server holds the label
        of its value now; any other keeps what it held; a widget no longer drawn is forgotten."""
        now = {}
        for w in self.labelled():
            if w.id in self.held and w.id not in touched and not getattr(w.proto, "set_value", False):
                now[w.id] = self.held[w.id]
            else:
                now[w.id] = w._widget_state
        self.held = now

    def run(self, what: str, touched=()) -> None:
        self.log.append(what)
        for w in self.labelled():
            if w.id in touched:
                self.held[w.id] = w._widget_state          # the student picked it: its label now
        states = self.at._tree.get_widget_states()
        for state in states.widgets:
            if state.id in self.held:
                state.CopyFrom(self.held[state.id])
        self.at._run(states)                                # what AppTest.run() does, with these states
        self.sync(touched)
        self.check()

    # ------------------------------------------------------------------ the student's hands

    def resolve(self, key: str) -> str:
        """The widget's key now: the KV-heads box is keyed by H ("w.n_kv_heads.4": a new widget when H
        changes, so its options, which name H, never meet an old label)."""
        if key != "w.n_kv_heads":
            return key
        return next((w.key for w in self.at.selectbox if (w.key or "").startswith("w.n_kv_heads.")), key)

    def has(self, kind: str, key: str, enabled: bool = True) -> bool:
        found = [w for w in getattr(self.at, kind) if w.key == self.resolve(key)]
        return bool(found) and not (enabled and found[0].proto.disabled)

    def widget(self, kind: str, key: str):
        return getattr(self.at, kind)(key=self.resolve(key))

    def offered(self, key: str) -> list:
        """The values a choice offers now, but the one chosen (what a student can pick)."""
        w = self.widget("radio" if key in ("w.unknown", "w.combine") else "selectbox", key)
        return [v for v in CHOICES[key] if v != w.value and _label(w, v) in w.options]

    def notch(self, key: str, direction: int) -> None:
        """One notch of a slider (the arrow keys), at its ends a no-op like the browser's."""
        w = self.widget("slider", key)
        step = w.step
        new = min(max(w.value + direction * step, w.min), w.max)
        if isinstance(w.value, int) and float(new).is_integer():
            new = int(new)
        else:
            new = round(new, max(0, -math.floor(math.log10(step))) + 2)
        if new == w.value:
            return
        was = w.value
        w.set_value(new)
        self.run(f"notch slider {key} {was} → {new}")

    def notch_options(self, key: str, direction: int) -> None:
        w = self.widget("select_slider", key)
        labels = list(w.options)
        at = labels.index(w.format_func(w.value))
        to = min(max(at + direction, 0), len(labels) - 1)
        if to == at:
            return
        values = [v for v in (1_000, 5_000, 20_000, 100_000, 400_000) if w.format_func(v) == labels[to]]
        w.set_value(values[0])
        self.run(f"notch select_slider {key} {labels[at]} → {labels[to]}", touched={w.id})

    def step(self, key: str, direction: int) -> None:
        """The number input's + or − (bounded like the browser's)."""
        w = self.widget("number_input", key)
        new = w.value + direction * w.step
        if w.max is not None:
            new = min(new, w.max)
        if w.min is not None:
            new = max(new, w.min)
        if isinstance(w.value, int) and float(new).is_integer():
            new = int(new)
        if new == w.value:
            return
        was = w.value
        w.set_value(new)
        self.run(f"step number_input {key} {was} → {new}")

    def pick(self, kind: str, key: str, value) -> None:
        w = self.widget(kind, key)
        was = w.value
        if was == value:
            return                                       # nothing to pick: it is chosen already
        w.set_value(value)
        self.run(f"pick {kind} {key} {was!r} → {value!r}", touched={w.id})

    def toggle(self, key: str) -> None:
        w = self.widget("toggle", key)
        new = not w.value
        w.set_value(new)
        self.run(f"toggle {key} → {new}")

    def type(self, text: str) -> None:
        self.widget("text_input", "w.sentence").input(text)
        self.run(f"type sentence {text!r}")

    # ------------------------------------------------------------------ what must hold after every step

    def fail(self, why: str) -> None:
        steps = "\n".join(f"  {n:2d}. {s}" for n, s in enumerate(self.log))
        raise AssertionError(f"{why}\nOn {self.page}, after:\n{steps}")

    def check(self) -> None:
        at = self.at
        if at.exception:
            self.fail("an exception on the page:\n" + "\n".join(
                f"{e.proto.type or 'Exception'}: {e.value}\n" + "\n".join(f"    {line.rstrip()}" for line in getattr(e, "stack_trace", []) or [])
                for e in at.exception))
        state = {name: at.session_state[f"s.{name}"] for name in FIELDS if f"s.{name}" in at.session_state}
        missing = set(FIELDS) - set(state)
        if missing:
            self.fail(f"settings missing from the session: {sorted(missing)}")
        for name, value in state.items():
            default = FIELDS[name].default
            ok = (isinstance(value, bool) if isinstance(default, bool) else
                  isinstance(value, int) and not isinstance(value, bool) if isinstance(default, int) else
                  isinstance(value, (int, float)) and not isinstance(value, bool) if isinstance(default, float) else
                  isinstance(value, str) if isinstance(default, str) else
                  isinstance(value, tuple) and all(isinstance(p, int) and not isinstance(p, bool) for p in value)
                  if isinstance(default, tuple) else value is None or isinstance(value, str))
            if not ok:
                self.fail(f"stored s.{name} = {value!r} ({type(value).__name__}) is not a {type(default).__name__}")
        h, kv = state["n_heads"], state["n_kv_heads"]
        if not (kv == 0 or (0 < kv < h and h % kv == 0)):
            self.fail(f"stored n_kv_heads = {kv!r} is neither 0 nor a proper divisor of n_heads = {h}")
        errors = [e.value for e in at.error]
        try:
            Config(**state)
        except ConfigError as err:
            if not errors:
                self.fail(f"the stored settings make no Config ({err}) and the page says nothing")
        if not isinstance(at.session_state["s.last_good"], Config):
            self.fail(f"s.last_good is {at.session_state['s.last_good']!r}, not a Config")
        if not at.title:
            self.fail("the page has no title: it did not draw")
        if not errors and not (at.get("vega_lite_chart") or at.get("dataframe")):
            self.fail("no error and no heatmap or table: the page did not compute")
        for kind in ("selectbox", "radio"):
            for w in getattr(at, kind):
                if w.value is None and kind == "selectbox" and (w.key or "").startswith("pick:"):
                    continue                    # nothing chosen yet, its placeholder shown (a cell's row picker)
                if w.value is None or _label(w, w.value) not in w.options:
                    self.fail(f"{kind} {w.key or w.label!r} holds {w.value!r} ({type(w.value).__name__}), "
                              f"which is not one of its options (labelled {w.options})")
        for w in at.multiselect:
            if not all(_label(w, v) in w.options for v in w.value):
                self.fail(f"multiselect {w.key or w.label!r} holds {w.value!r}, not all among its options "
                          f"(labelled {w.options})")
        for kind in ("selectbox", "radio", "multiselect", "slider", "select_slider", "number_input", "toggle",
                     "text_input"):
            for w in getattr(at, kind):
                name = (w.key or "")[2:] if (w.key or "").startswith("w.") else None
                if name not in FIELDS:
                    continue
                shown = tuple(sorted(w.value)) if name == "padding" else w.value
                if shown != state[name]:
                    self.fail(f"{kind} {w.key} shows {shown!r} but the page computes with s.{name} = {state[name]!r}")


def _label(w, value):
    """The label a widget's format_func gives a value (None if it cannot format it)."""
    try:
        return w.format_func(value)
    except Exception:
        return None


class Sidebar(RuleBasedStateMachine):
    """One student, one page; every rule is one thing a hand does, then a run and the checks."""

    page = PAGES[0]

    def __init__(self):
        super().__init__()
        self.s = Student(self.page)
        self.s.check()

    @rule(up=st.booleans(), notches=st.integers(1, 3))
    def heads(self, up, notches):
        for _ in range(notches):                        # one notch at a time, a run after each
            self.s.notch("w.n_heads", 1 if up else -1)

    @rule(up=st.booleans())
    def heads_there_and_back(self, up):
        self.s.notch("w.n_heads", 1 if up else -1)
        self.s.notch("w.n_heads", -1 if up else 1)

    def choose_from(self, kind, key, data, but=()):
        offered = [v for v in self.s.offered(key) if v not in but]
        if offered:
            self.s.pick(kind, key, data.draw(st.sampled_from(offered), label=key))

    @precondition(lambda self: self.s.has("selectbox", "w.n_kv_heads"))
    @rule(data=st.data())
    def kv_heads(self, data):
        self.choose_from("selectbox", "w.n_kv_heads", data)

    @rule(key=st.sampled_from(["w.d_k", "w.d_v"]), up=st.booleans())
    def widths(self, key, up):
        self.s.step(key, 1 if up else -1)

    @rule(key=st.sampled_from(["w.positional", "w.mask", "w.score", "w.weights", "w.embedding"]), data=st.data())
    def choose(self, key, data):
        self.choose_from("selectbox", key, data, but=("upload",))      # upload waits for a file

    @precondition(lambda self: self.s.has("radio", "w.combine"))
    @rule(data=st.data())
    def combine(self, data):
        self.choose_from("radio", "w.combine", data)

    @precondition(lambda self: self.s.has("radio", "w.unknown"))
    @rule(data=st.data())
    def unknown(self, data):
        self.choose_from("radio", "w.unknown", data)

    @precondition(lambda self: self.s.has("number_input", "w.window"))
    @rule(up=st.booleans())
    def window(self, up):
        self.s.step("w.window", 1 if up else -1)

    @precondition(lambda self: self.s.has("multiselect", "w.padding"))
    @rule(data=st.data())
    def padding(self, data):
        w = self.s.widget("multiselect", "w.padding")
        positions = [p for p in range(len(w.options)) if _label(w, p) in w.options]
        self.s.pick("multiselect", "w.padding",
                    data.draw(st.lists(st.sampled_from(positions), unique=True, max_size=2)) if positions else [])

    @precondition(lambda self: self.s.has("number_input", "w.pe_base"))
    @rule(up=st.booleans())
    def pe_base(self, up):
        self.s.step("w.pe_base", 1 if up else -1)

    @rule(up=st.booleans(), notches=st.integers(1, 2))
    def temperature(self, up, notches):
        for _ in range(notches):
            self.s.notch("w.temperature", 1 if up else -1)

    @rule()
    def bias(self):
        self.s.toggle("w.bias")

    @precondition(lambda self: self.s.has("slider", "w.d_model"))
    @rule(up=st.booleans())
    def d_model(self, up):
        self.s.notch("w.d_model", 1 if up else -1)

    @precondition(lambda self: self.s.has("select_slider", "w.glove_vocab"))
    @rule(up=st.booleans())
    def glove_vocab(self, up):
        self.s.notch_options("w.glove_vocab", 1 if up else -1)

    @rule(up=st.booleans())
    def seed(self, up):
        self.s.step("w.seed", 1 if up else -1)

    @rule(text=st.sampled_from(SENTENCES))
    def sentence(self, text):
        self.s.type(text)


# Bounded: a handful of sequences of ten steps, the same ones every run; no shrinking (a failure
# prints every step already, and shrinking would rerun the app hundreds of times).
SETTINGS = settings(max_examples=6, stateful_step_count=10, deadline=None, derandomize=True, database=None,
                    phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck),
                    print_blob=False)


@pytest.mark.parametrize("page", PAGES)
def test_settings_in_sequence_keep_the_app_whole(page):
    machine = type(f"Sidebar_{page.split('/')[-1][:-3]}", (Sidebar,), {"page": page})
    run_state_machine_as_test(machine, settings=SETTINGS)


# The sequences that broke the app, kept as plain examples (each was found one notch at a time).

def test_heads_one_notch_at_a_time_up_and_down():
    s = Student(PAGES[0])
    for _ in range(3):                  # 1 → 2 → 3 → 4: the browser sends the KV heads' old label "2 · …"
        s.notch("w.n_heads", 1)
    for _ in range(3):
        s.notch("w.n_heads", -1)


def test_heads_there_and_back_after_picking_kv_heads():
    s = Student(PAGES[1])
    s.notch("w.n_heads", 1)
    s.notch("w.n_heads", 1)             # H = 3
    s.pick("selectbox", "w.n_kv_heads", 1)
    s.notch("w.n_heads", 1)             # H = 4: one KV head still divides
    s.notch("w.n_heads", 1)             # H = 5
    s.notch("w.n_heads", -1)
    s.notch("w.n_heads", -1)


def test_padding_keys_then_new_sentences():
    """The hidden-key labels carry the sentence's words ("1: love"): a new sentence changes them."""
    s = Student(PAGES[1])
    s.pick("selectbox", "w.mask", "padding")
    s.pick("multiselect", "w.padding", [1])
    for text in SENTENCES[1:4]:
        s.type(text)

"""Hostile input through the real pages: a clear message, no traceback, the previous state kept.

Three ways in: the sentence box (a learner typing), the other widgets, and crafted URL parameters
(a tampered link). Each row says what is sent and a piece of the message the page must show.
"""
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.apptest_util import ROOT, messages, no_exception, open_page
from tests.own_files import python_files

GOOD = "the cat sat on the mat"

# (sentence typed, embedding, expected message fragment or None when it must simply work)
SENTENCES = [
    ("", "random", "The sentence is empty"),
    ("     ", "random", "The sentence is empty"),
    ("\n\t  \n", "random", "The sentence is empty"),
    ("x" * 10_000, "random", "10,000 characters; the limit is 1,000"),
    ("word " * 300, "random", "1,500 characters; the limit is 1,000"),
    (" ".join(f"w{i}" for i in range(150)), "random", "150 tokens; the limit is 128"),
    ("🙂🙂🙂", "random", "The sentence has no words"),
    ("!!! ??? ...", "random", "The sentence has no words"),
    ("zebra giraffe", "toy", "None of the words (zebra, giraffe) is in the vocabulary"),
    ("qwxz zzkv", "glove", "None of the words (qwxz, zzkv) is in the vocabulary"),
    ("שלום עולם", "toy", "None of the words (שלום, עולם)"),
    ("مرحبا بالعالم", "toy", "None of the words"),
    ("<script>alert(1)</script>", "toy", "None of the words (script, alert, 1)"),
    ("<img src=x onerror=alert(1)>", "toy", "None of the words"),
    (r"\frac{1}{0} \begin{array} $$ \\", "toy", "None of the words (frac, 1, 0, begin, array)"),
    ("{{7*7}} ${7*7} %s %n", "toy", "None of the words"),
    ("\x00\x01\x02", "random", "The sentence has no words"),
    # these must work, shown as text: the words are kept, the markup is not rendered
    ("שלום עולם", "random", None),
    ("<b>bold</b> <script>x</script>", "random", None),
    (r"\frac{a}{b} $x^2$ \begin{x}", "random", None),
    ("I 🙂 love you today", "toy", None),
    ("i love zebras today", "toy", None),
]


@pytest.mark.parametrize("sentence,embedding,message", SENTENCES)
def test_sentence(sentence, embedding, message):
    toy = {"weights": "random"} if embedding == "toy" else {}            # the toy vectors cannot train the weights
    at = open_page("app_pages/4_scores.py", query={"embedding": embedding, **toy, "sentence": GOOD if embedding != "toy"
                                                else "I love you today"})
    before = at.session_state["s.last_good"]
    at.text_input(key="w.sentence").set_value(sentence).run()
    no_exception(at)
    if message is None:
        assert not at.error, messages(at)
        assert at.session_state["s.last_good"].sentence == sentence
        return
    assert message in messages(at), messages(at)
    assert "Showing the last settings that worked" in messages(at)
    assert at.session_state["s.last_good"] == before          # the previous state stays


def test_markup_is_text_not_html():
    at = open_page("app_pages/1_embeddings.py", query={"embedding": "random"})
    at.text_input(key="w.sentence").set_value("<b>bold</b> <script>x</script>").run()
    no_exception(at)
    shown = "\n".join(m.value for m in at.markdown)
    assert "<script>" not in shown and "<b>" not in shown
    assert "`bold`" in shown and "`script`" in shown


# (widget settings applied in order, expected message fragment)
WIDGETS = [
    ([("selectbox", "w.embedding", "toy")],                       # the default weights are trained: not on toy vectors
     "Trained weights need GloVe or random embeddings, or set the weights to seeded random"),
    ([("selectbox", "w.embedding", "upload")], "Choose a vectors file"),
]


@pytest.mark.parametrize("steps,message", WIDGETS)
def test_widget_combinations(steps, message):
    at = open_page("app_pages/7_multi_head.py", query={"positional": "none"} if steps[0][1] == "w.n_heads" else None)
    before = at.session_state["s.last_good"]
    for kind, key, value in steps:
        if key == "w.positional":
            at.switch_page("app_pages/2_positional.py").run()
        getattr(at, kind)(key=key).set_value(value).run()
        if key == "w.positional":
            at.switch_page("app_pages/7_multi_head.py").run()
    no_exception(at)
    assert message in messages(at), messages(at)
    if len(steps) == 1:
        assert at.session_state["s.last_good"] == before


# (URL parameters, expected notice fragment): a tampered link falls back to defaults, with a notice
URLS = [
    ({"d_model": "0", "embedding": "random"}, "“d_model” cannot be used (d_model=0 is out of range"),
    ({"d_model": "100000", "embedding": "random"}, "“d_model” cannot be used (d_model=100,000 is out of range"),
    ({"d_model": "1", "embedding": "random"}, "d_model=1 leaves one number per word"),
    ({"d_k": "-1"}, "“d_k” cannot be used (d_k=-1 is out of range"),
    ({"d_k": "abc"}, "“d_k” is not a whole number"),
    ({"d_k": "1e400"}, "“d_k” is not a whole number"),
    ({"d_v": "513"}, "“d_v” cannot be used (d_v=513 is out of range"),
    ({"n_heads": "0"}, "“n_heads” cannot be used (n_heads=0 is out of range"),
    ({"n_heads": "99"}, "“n_heads” cannot be used (n_heads=99 is out of range"),
    ({"embedding": "toy"}, "“embedding” does not fit with the others (Trained weights need GloVe or random embeddings"),
    ({"temperature": "0"}, "“temperature” cannot be used (temperature=0 is out of range"),
    ({"temperature": "nan"}, "“temperature” is not a finite number"),
    ({"temperature": "inf"}, "“temperature” is not a finite number"),
    ({"temperature": "1e9"}, "“temperature” cannot be used"),
    ({"pe_base": "0"}, "“pe_base” cannot be used"),
    ({"seed": "-5"}, "“seed” cannot be used (seed=-5 is out of range"),
    ({"seed": "99999999999999999999"}, "“seed” is not a whole number"),
    ({"embedding": "evil"}, "“embedding” is not one of toy, glove, random, upload"),
    ({"score": "<script>alert(1)</script>"}, "“score” is not one of"),
    ({"mask": "padding", "padding": "99"}, "Padding position 99 is past the last token"),
    ({"mask": "padding", "padding": "a,b"}, "“padding” is not a list of token positions"),
    ({"glove_vocab": "5"}, "“glove_vocab” cannot be used (glove_vocab=5 is out of range"),
    ({"bias": "maybe"}, "“bias” is not true or false"),
    ({"unknown": "explode"}, "“unknown” is not one of drop, unk"),
    ({"combine": "multiply"}, "“combine” is not one of add, concat"),
    ({"positional": "rotary"}, "“positional” is not one of"),
    ({"sentence": "x" * 5000}, "The sentence has 5,000 characters"),
    ({"sentence": "   "}, "The sentence is empty"),
    ({"sentence": "zebra giraffe"}, "None of the words (zebra, giraffe)"),
    ({"embedding": "upload"}, "“embedding” cannot be used (Choose a vectors file"),
]


@pytest.mark.parametrize("query,message", URLS)
def test_tampered_url(query, message):
    at = open_page("app_pages/5_softmax.py", query=query)
    no_exception(at)
    assert message in messages(at), messages(at)
    assert at.session_state["s.last_good"] is not None
    w = at.session_state["s.last_good"]
    assert w.d_k <= 64 and w.n_heads <= 16


@pytest.mark.parametrize("page", ["app_pages/overview.py", "app_pages/1_embeddings.py", "app_pages/2_positional.py", "app_pages/6_context.py"])
def test_tampered_url_on_other_pages(page):
    at = open_page(page, query={"d_model": "-3", "n_heads": "x", "sentence": "", "temperature": "-1"})
    no_exception(at)
    assert messages(at).count("Link setting") >= 3


UNSAFE = (r"(?<![.\w])eval\(", r"(?<![.\w])exec\(", r"\bsympify\(", r"\bparse_expr\(", r"unsafe_allow_html\s*=\s*True",
          r"components\.html\(", r"st\.html\(")


def unsafe_calls(root: Path = ROOT) -> list[str]:
    """Every eval/exec, sympify/parse_expr call and unsafe HTML in the project's own code (its tracked files,
    tests and bench aside), as 'path:line: pattern'; the one allowed door left out: ui.raw_html.trusted_html
    (constant CSS, a scroll script with sanitized keys; its inputs are checked in tests/test_in_sight.py)."""
    offenders = []
    for path in python_files(root=root, without=("tests", "bench")):
        text = path.read_text(encoding="utf-8")
        for pattern in UNSAFE:
            for m in re.finditer(pattern, text):
                offenders.append(f"{path.relative_to(root).as_posix()}:{text[:m.start()].count(chr(10)) + 1}: {pattern}")
    door = [o for o in offenders if o.startswith("ui/raw_html.py:") and o.endswith(r"st\.html\(")]
    assert len(door) <= 1, door
    return [o for o in offenders if o not in door]


def test_no_user_text_reaches_eval_sympify_or_unsafe_html():
    """Grep the app's code: no eval/exec, no sympify/parse_expr of strings, no unsafe HTML."""
    assert unsafe_calls() == []


def test_the_scan_reads_the_projects_files_not_a_venv_in_the_checkout(tmp_path):
    """The README's setup makes `.venv` inside the checkout, whose packages call eval (typing_extensions does):
    in a clone with a real venv there, the scan reads the same files and finds nothing, and the same line in a
    file of the project's is found (the scan is not blind)."""
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True, timeout=120)
    before = python_files(root=clone)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(clone / ".venv")], check=True, timeout=120)
    site = next((clone / ".venv").glob("lib/python*/site-packages"))
    (site / "typing_extensions.py").write_text("def get(name):\n    return eval(name)\n", encoding="utf-8")
    assert python_files(root=clone) == before
    assert unsafe_calls(clone) == []
    (clone / "ui" / "planted.py").write_text("def get(name):\n    return eval(name)\n", encoding="utf-8")
    subprocess.run(["git", "add", "ui/planted.py"], cwd=clone, check=True, timeout=60)
    assert unsafe_calls(clone) == ["ui/planted.py:2: " + UNSAFE[0]]

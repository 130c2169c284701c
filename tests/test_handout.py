"""The handout: every page of the navigation (but the Classroom's) has one, its numbers are the page's own Trace's
(rounded, a head's slice, cut with a note), and /handout draws it from a link or from the page the user came from."""
from __future__ import annotations

import numpy as np
import pytest

from attention_core import Config
from attention_core.forward.stages import run_forward
from attention_core.labs.handout import MAX_COLS, MAX_ROWS, PAGES, make_handout, table_of, to_html
from ui import nav

from apptest_util import messages, no_exception, open_page

HANDOUT = "app_pages/62_handout.py"
SHOWN = [e[3] for section, pages in nav.SECTIONS if section not in nav.NO_HANDOUT for e in pages]
CLASS = Config(n_heads=2, positional="rope", mask="causal")        # heads 2, RoPE, causal


def shown(value: np.ndarray, head: int = 0) -> np.ndarray:
    """What a section must print of a Step's value: a head's slice, the first rows and columns, 3 decimals."""
    v = np.asarray(value, dtype=float)
    v = v[head] if v.ndim == 3 else v
    v = v.reshape(1, -1) if v.ndim == 1 else v.reshape(1, 1) if v.ndim == 0 else v
    return np.round(v[:MAX_ROWS, :MAX_COLS], 3)


def drawn_tables(at) -> list[np.ndarray]:
    """The numbers of every table the page drew (HTML tables: a <td> per number, as printed)."""
    import re
    out = []
    for el in at.get("html"):
        body = el.proto.body
        if "<table>" not in body:
            continue
        rows = [[float(c.replace("−∞", "-inf").replace("∞", "inf").replace("NaN", "nan"))
                 for c in re.findall(r"<td[^>]*>([^<]*)</td>", row)] for row in re.findall(r"<tr>(.*?)</tr>", body)]
        out.append(np.array([r for r in rows if r]))
    return out


def table(section) -> np.ndarray:
    return np.array(section.table.values, dtype=float)


def assert_same(doc, trace, keys=None, head: int = 0):
    """Each section of doc prints its step of `trace` (in `keys`' order when given)."""
    if keys is not None:
        assert [s.key for s in doc.sections] == list(keys)
    for s in doc.sections:
        step = trace[s.key]
        assert s.formula == step.formula and s.why == step.why and s.shape == step.shape_text
        np.testing.assert_array_equal(table(s), shown(step.value, head), err_msg=s.key)


# ---- every page has its handout --------------------------------------------------------------------------

def test_every_page_of_the_navigation_but_the_classroom_has_a_handout():
    missing = [p for p in SHOWN if p not in PAGES]
    assert not missing, f"pages without a handout list: {missing}"
    assert set(PAGES) == set(SHOWN), set(PAGES) ^ set(SHOWN)


@pytest.mark.parametrize("page", SHOWN)
def test_every_handout_has_sections_with_formula_shape_why_and_numbers(page):
    doc = make_handout(page, Config())
    assert doc.title and doc.sections, page
    for s in doc.sections:
        assert s.title and s.shape and s.table.values and s.table.rows and s.table.cols
        assert all(np.isfinite(v) or np.isinf(v) for row in s.table.values for v in row)


# ---- the numbers are the page's Trace's ----------------------------------------------------------------

@pytest.mark.parametrize("config", [Config(), CLASS], ids=["defaults", "heads2-rope-causal"])
def test_the_forward_pages_print_the_forward_pass(config):
    forward = run_forward(config)
    rope = ["q_rot", "k_rot"] if config.positional == "rope" else []
    assert_same(make_handout("qkv", config), forward, ["x", "w_q", "q", "w_k", "k", "w_v", "v"] + rope)
    assert_same(make_handout("scores", config), forward, ["scores", "scaled_scores"])
    two = config.n_heads == 2
    assert_same(make_handout("multi_head", config), forward,
                ["q", "q_heads", "weights", "context", "concat", "w_o", "output"] if two else
                ["q", "weights", "context", "w_o", "output"])
    softmax = make_handout("softmax", config)
    assert_same(softmax, forward, (["mask", "masked_scores"] if config.mask == "causal" else ["scaled_scores"]) +
                ["weights"])
    assert_same(make_handout("export", config), forward, forward.keys())


def test_a_causal_handout_prints_the_mask_and_rows_that_sum_to_one():
    doc = make_handout("softmax", CLASS)
    mask = table(next(s for s in doc.sections if s.key == "mask"))
    n = len(run_forward(CLASS).tokens)
    # hand-computed: query i sees keys 0..i and no key after it
    np.testing.assert_array_equal(mask == mask[0, 0], np.tril(np.ones((n, n), bool)))
    weights = next(s for s in doc.sections if s.key == "weights")
    w = table(weights)
    assert np.allclose(w.sum(axis=1), 1.0, atol=4 * 5e-4)
    assert np.all(np.triu(w, 1) == 0)                              # nothing after the query
    assert weights.head_note == "head 0 of H=2 shown"


def test_a_head_control_picks_the_slice_and_the_rope_lesson_is_the_pages():
    from attention_core.lessons.rope import rope_lesson
    doc = make_handout("rope", CLASS, {"rope.head": 1})
    lesson = rope_lesson(run_forward(CLASS), 1, "interleaved")
    assert_same(doc, lesson, ["angles", "q", "q_rot", "k", "k_rot", "scaled_scores"], head=1)
    assert "head 1" in doc.controls


def test_the_lesson_pages_print_their_lessons_traces():
    from attention_core.lessons import kv_cache as kv
    from attention_core.lessons.masks import masks_trace
    from attention_core.lessons.online_softmax import online_softmax_trace
    config = CLASS
    forward = run_forward(config)
    doc = make_handout("kv_cache", config, {"kv_cache.t": 3, "kv_cache.prefill": 1})
    assert_same(doc, kv.kv_cache_trace(config, 1, 3))
    assert doc.sections[0].key == "q_t" and "decoding step t = 3" in doc.controls
    assert_same(make_handout("masks", config, {"masks.head": 1}), masks_trace(config, 1, None, forward), head=1)
    assert_same(make_handout("online_softmax", config, {"online_softmax.block_size": 2, "online_softmax.block": 1}),
                online_softmax_trace(config, 2, 1, 0, forward=forward))


def test_large_matrices_are_cut_with_a_note():
    x = next(s for s in make_handout("qkv", Config()).sections if s.key == "w_q")   # W_Q: d_model=50 × d_k=4
    assert len(x.table.rows) == MAX_ROWS and len(x.table.cols) == 4
    assert x.table.note == f"rows {MAX_ROWS} to 49 of d_model=50 left out ({MAX_ROWS} of 50 shown)"
    x = make_handout("qkv", Config()).sections[0]                                    # X: n=4 × d_model=50
    assert x.table.rows == ("i", "love", "you", "today") and len(x.table.cols) == MAX_COLS
    assert "columns 12 to 49 of d_model=50 left out" in x.table.note


def test_settings_in_words_and_a_sentence_that_stays_text_in_the_html_file():
    config = Config(sentence="the <b>cat</b> sat & sat", d_k=8)
    doc = make_handout("scores", config)
    assert doc.settings == ("d_k = 8",) and doc.sentence == config.sentence
    page = to_html(doc)
    assert "&lt;b&gt;cat&lt;/b&gt;" in page and "<b>cat</b>" not in page
    assert "<script" not in page and "LaTeX source" in page
    assert page.count("<section>") == len(doc.sections)
    assert '<a href="http://x/scores?d_k=8&amp;a=&lt;b&gt;">' in to_html(doc, "http://x/scores?d_k=8&a=<b>")
    assert "−∞" in to_html(make_handout("softmax", CLASS))              # a hidden score, as the formulas write it
    assert "\\frac" in page or "\\sqrt" in page                           # the scaled scores' formula, as source


# ---- the page ---------------------------------------------------------------------------------------

def headers(at) -> list[str]:
    return [h.value for h in at.header]


@pytest.mark.parametrize("page", SHOWN)
def test_the_page_draws_every_handout(page):
    at = open_page(HANDOUT, query={"handout.of": page})
    no_exception(at)
    doc = make_handout(page, Config())
    file = next(e[0] for _, pages in nav.SECTIONS for e in pages if e[3] == page)
    assert headers(at) == [f"{nav.section_of(file)} › {doc.title}"]
    assert len(drawn_tables(at)) == len(doc.sections)
    titles = [m.value.split("\n")[0] for m in at.markdown if m.value.startswith("#### ")]
    assert titles == [f"#### {i + 1} · {s.title}" for i, s in enumerate(doc.sections)]


def test_a_link_opens_that_handout_with_its_settings():
    at = open_page(HANDOUT, query={"handout.of": "qkv", "d_k": "8"})
    no_exception(at)
    assert headers(at) == ["Forward pass › Queries, keys and values"]
    q = drawn_tables(at)[2]                                      # X, W_Q, Q: Q is n=4 × d_k=8
    assert q.shape == (4, 8)
    want = run_forward(Config(d_k=8))["q"].value
    np.testing.assert_allclose(np.asarray(q, dtype=float), np.round(want, 3), atol=0)
    assert dict(at.query_params).get("handout.of") == "qkv" and dict(at.query_params).get("d_k") == "8"


def test_a_tampered_link_gives_a_notice_and_the_default():
    at = open_page(HANDOUT, query={"handout.of": "<script>"})
    no_exception(at)
    assert "Link setting “handout.of”" in messages(at)
    assert headers(at) == ["Forward pass › Attention Explorer"]


def test_by_default_the_handout_is_of_the_page_the_user_came_from():
    at = open_page("app_pages/7_multi_head.py")
    at.switch_page(HANDOUT).run()
    no_exception(at)
    assert headers(at) == ["Forward pass › Multi-head attention"]
    assert dict(at.query_params).get("handout.of") == "multi_head"


@pytest.mark.parametrize("page", SHOWN)
def test_a_handouts_title_is_its_pages(page):
    import re
    file = next(e[0] for _, pages in nav.SECTIONS for e in pages if e[3] == page)
    source = (nav.ROOT / file).read_text(encoding="utf-8")
    assert re.search(r"ui\.page\(PAGE, \"([^\"]+)\"", source).group(1) == PAGES[page][0]


def test_a_slice_is_counted_by_its_letter_and_a_kv_head_is_a_kv_head():
    """'head 0 of H=4 shown' (docs/notation.md: H counts heads), and under grouped-query attention K's blocks are KV
    heads: 'KV head 0 of H_kv=2 shown' (the forward pass's k_heads and the KV cache lesson's k_cache)."""
    gqa = Config(n_heads=4, n_kv_heads=2)
    notes = {s.key: s.head_note for s in make_handout("multi_head", gqa).sections}
    assert notes["q_heads"] == notes["weights"] == "head 0 of H=4 shown"
    assert notes["k_heads"] == "KV head 0 of H_kv=2 shown"
    cache = {s.key: s.head_note for s in make_handout("kv_cache", gqa).sections}
    assert cache["k_cache"] == cache["v_cache"] == "KV head 0 of H_kv=2 shown"
    assert all(" of head=" not in n for n in [*notes.values(), *cache.values()])


def test_one_row_or_column_left_out_is_named_alone_and_the_note_says_left_out_once():
    from attention_core.labs.handout import note_sentence
    sentence = "the cat sat on the mat today and it was very happy too and then the dog"       # n = 17
    doc = make_handout("softmax", Config(sentence=sentence, mask="causal"))
    assert doc.sections[0].table.note.startswith("row 16 of n_q=17 left out (16 of 17 shown); columns 12 to 16")
    t = table_of(np.zeros((2, MAX_COLS + 1)), ("n", "d_model"), lambda a, s: [str(i) for i in range(s)])
    assert t.note == f"column {MAX_COLS} of d_model={MAX_COLS + 1} left out ({MAX_COLS} of {MAX_COLS + 1} shown)"
    page = to_html(make_handout("qkv", Config()))
    assert "Columns 12 to 49 of d_model=50 left out (12 of 50 shown)." in page and "Left out:" not in page
    assert note_sentence(t.note).count("left out") == 1


def test_counts_of_one_are_singular():
    assert "prompt P = 1 token" in make_handout("kv_cache", Config(sentence="hello")).controls
    assert "L = 1 layer" in make_handout("block", Config()).controls


def test_the_masks_row_sums_name_a_heads_entry_in_brackets():
    doc = make_handout("masks", Config(n_heads=2), {"masks.head": 1, "masks.sink_on": True, "masks.sink": 1.5})
    sums = next(s for s in doc.sections if s.key == "row_sums")
    assert sums.table.cols == ("Σ_j (A′_1)_ij", "sink share")
    assert next(s for s in make_handout("masks", Config()).sections if s.key == "row_sums").table.cols == ("Σ_j A_ij",)


@pytest.mark.parametrize("heads", [1, 2, 3])
def test_the_pytorch_handout_prints_the_pages_own_layer_not_the_sidebars_forward_pass(heads):
    """The PyTorch page runs its own layer (hid_dim = d_model = 50 cut into H heads of 50 / H, seeded weights, no
    mask): W_Q is 50 × 50 there, not the sidebar's 50 × H·d_k. Its handout prints that layer at the page's defaults
    (the sidebar's H when it divides 50, else 1; no padding; eval mode), batch axis left out."""
    from attention_core.lessons import torch_mha as tm
    config = Config(n_heads=heads)
    forward = run_forward(config)
    doc = make_handout("pytorch_mha", config)
    layer_heads = heads if 50 % heads == 0 else 1
    torch_trace = tm.pytorch_trace(np.array(forward["x"].value), layer_heads, config.seed, (), 0.1, "eval", 0)
    assert [s.key for s in doc.sections] == ["x", "q", "q_heads", "k_heads", "v_heads", "energy", "alpha", "a_heads",
                                             "a", "output"]
    for s in doc.sections:
        np.testing.assert_array_equal(table(s), shown(torch_trace[s.key].value[0]), err_msg=s.key)
    assert doc.sections[1].shape == "n=4 × hid_dim=50" and "seeded weights" in doc.notes[-1]
    assert f"head_dim = 50 / {layer_heads} = {50 // layer_heads}" in doc.controls[0]
    assert ("does not divide 50" in doc.notes[-1]) == (layer_heads != heads)


def test_the_training_handout_takes_the_label_the_page_starts_with():
    """The training step page starts on the data set's label of the sentence, else positive; the handout says which."""
    from attention_core.training import classifier as clf
    negative = next(e for e in clf.load_dataset() if e.label == "negative")
    assert "the label is negative (the data set's label" in make_handout("training_step",
                                                                           Config(sentence=negative.text)).notes[-1]
    assert "the label is positive (the page's default" in make_handout("training_step", Config()).notes[-1]

"""The "A real model" pages under AppTest, on tiny checkpoints laid out here (numpy + safetensors, no torch): what
each page shows is the model's own numbers (recomputed here with the core), a bad folder or a model the server lacks
is a clear message with the previous model kept, and a link (or a pushed view) opens the same model and head."""
from __future__ import annotations

import numpy as np
import pytest

from attention_core.math.sampling import next_token, uniforms
from attention_core.training.real import load_model, run_real
from attention_core.training.real.head_roles import head_roles
from tests.apptest_util import charts, messages, no_exception, open_page
from tests.real_checkpoints import numpy_checkpoint

pytest.importorskip("tokenizers")
pytest.importorskip("safetensors")
ENV = "ATTENTION_EXPLORER_REAL_MODEL_DIR"
SENTENCE = "the cat sat on the mat and the cat sat on the"


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    return {family: numpy_checkpoint(tmp_path_factory.mktemp(family), family) for family in ("llama", "gpt2")}


@pytest.fixture
def server_model(folders, monkeypatch, tmp_path):
    monkeypatch.setenv(ENV, str(folders["llama"]))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")              # a listed model is looked up in this empty cache only
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    return load_model(folders["llama"])


def page(file, **query):
    """The page with the server's model; every control it drew travels with a pushed view (a declared control)."""
    from tests.test_room_travel import controls_a_push_leaves
    at = open_page(file, query={"sentence": SENTENCE, **query})
    no_exception(at)
    assert not controls_a_push_leaves(at, file)
    return at


def test_the_tokens_are_the_models_pieces_and_ids(server_model):
    at = page("app_pages/70_real_tokens.py")
    assert not at.error, messages(at)
    enc = server_model.tokenizer.encode(SENTENCE)
    table = at.dataframe[0].value
    assert list(table["piece (as stored)"]) == list(enc.pieces) and list(table["id"]) == list(enc.ids)
    box = at.selectbox(key="real.model")                                # a host's model first, the small one second
    assert box.value == "" and box.options[0].startswith("This server's model (") \
        and box.options[1].startswith("The project's small model")
    said = " ".join(m.value for m in at.markdown)
    assert "Why “▁”" in said and "“\\<s\\>” (id 1) is not in your text" in said and "Why “Ġ”" not in said


def test_every_head_in_the_grid_and_a_linked_heads_cell_explained(server_model):
    trace = run_real(server_model, SENTENCE)
    at = page("app_pages/71_real_heads.py", **{"real.layer": "1", "real.head": "3", "cell": "real.l1.weights.5.2"})
    assert not at.error, messages(at)
    grid = next(c for c in charts(at) if any(p.get("name") == "head" for p in c.get("params", [])))
    rows = grid["data"]["values"] if "values" in grid["data"] else grid["datasets"][grid["data"]["name"]]
    n, c = trace.n, server_model.config
    assert len(rows) == c.n_layers * c.n_heads * n * (n + 1) // 2          # every head, the causal half
    cell = next(r for r in rows if (r["layer"], r["head"], r["y"] - (n + 1), r["x"] - 3 * (n + 1)) == (1, 3, 5, 2))
    assert cell["A"] == pytest.approx(trace.facts["attention"][1]["weights"].value[3, 5, 2], abs=1e-4)
    headings = [m.value for m in at.markdown if m.value.startswith("#####")]
    assert any("KV head 1, shared by query heads 2–3" in h for h in headings), headings   # g = 2: ⌊3 / 2⌋ = 1
    assert any("Q rotated" in h or "queries, rotated by RoPE" in h for h in headings)
    want = trace.facts["attention"][1]["weights"].value[3, 5, 2]
    made = [m.value for m in at.markdown if m.value.startswith("**How A")]
    assert made and made[0].startswith("**How A\\_3\\[5,2\\] was made**") and "(A_{3})_{5,2}" in made[0], made
    notes = " ".join(c.value for c in at.caption)
    assert "✓ recomputed from the terms above" in notes and f"the cell holds {want:.10g} (the model computed it in " \
        "float32: the same within 10⁻⁵ × max(1, |cell|))" in notes, notes
    v = next(h for h in headings if h.startswith("##### The values it mixes"))     # KV head u's block, not h's
    assert r"V_u = V_{[:,\, u \cdot d_k : (u+1) \cdot d_k]}" in v and r"u = \lfloor 3 / 2 \rfloor = 1" in v, v
    assert "V_h" not in v


def test_the_strongest_heads_are_the_cores(server_model):
    at = page("app_pages/72_real_roles.py")
    assert not at.error, messages(at)
    roles = head_roles(server_model)
    said = " ".join(m.value for m in at.markdown)
    for key, what in (("prev_token", "previous-token head"), ("induction", "induction head"), ("sink", "attention sink")):
        v = roles[key].value
        l, h = np.unravel_index(int(np.argmax(v)), v.shape)
        assert f"**The strongest {what}**: layer {l}, head {h}, score {v[l, h]:.2f}." in said
    v = roles["induction"].value
    l, h = np.unravel_index(int(np.argmax(v)), v.shape)
    at.button(key="real.go.induction").click().run()                 # one click to step through it
    no_exception(at)
    assert any(m.value.startswith(f"Layer {l}, head {h}:") for m in at.markdown)


def test_the_next_token_is_the_samplers_on_the_last_logits(server_model):
    at = page("app_pages/70_real_tokens.py", **{"real.temperature": "0.8", "real.k": "20", "real.p": "0.7",
                                                     "real.seed": "3"})
    assert not at.error, messages(at)
    z = run_real(server_model, SENTENCE)["logits"].value[-1].astype(np.float64)
    out = next_token(z, 0.8, 20, 0.7, float(uniforms(3, 1)[0]))
    j = out["token"]
    said = next(m.value for m in at.markdown if m.value.startswith("After"))
    assert f"keep **{int(out['kept'].sum())}**" in said and f"**token {j}," in said
    assert f"p = {out['probs'][j]:.4f}, p′ = {out['renormalised'][j]:.4f}" in said


def test_a_bad_folder_says_so_and_keeps_the_model_it_had(server_model, tmp_path):
    at = page("app_pages/71_real_heads.py")
    at.selectbox(key="real.model").set_value("folder").run()
    at.text_input(key="real.folder").set_value(str(tmp_path / "nowhere")).run()
    no_exception(at)
    assert any("There is no folder" in e.value for e in at.error), messages(at)
    assert any("the last model that loaded" in c.value for c in at.caption)
    assert any("real.grid" in c.proto.id for c in at.get("vega_lite_chart")), "the previous model's heads stay"


def order(node) -> list:
    """The page's elements in the order they are drawn (top to bottom)."""
    out = [node]
    for child in (node.children.values() if isinstance(getattr(node, "children", None), dict) else []):
        out += order(child)
    return out


def test_a_listed_model_the_server_lacks_is_said_plainly(server_model):
    at = page("app_pages/70_real_tokens.py")                         # the server's model first: the previous state
    at.selectbox(key="real.model").set_value("gpt2").run()
    assert "This server does not have gpt2 yet" in messages(at)
    drawn = order(at.main)                                            # the message points at the buttons: above it
    info = next(i for i, e in enumerate(drawn) if e.type == "info" and "does not have gpt2" in str(e.value))
    fetch = next(i for i, e in enumerate(drawn) if getattr(e, "key", None) == "real.fetch")
    assert fetch < info and "the buttons above" in str(drawn[info].value)
    assert any("the last model that loaded" in c.value for c in at.caption) and not at.error
    at.button(key="real.size").click().run()                          # offline: the hub cannot say, and says why
    no_exception(at)
    assert any("gpt2 is not in the Hugging Face cache" in e.value and "HF\\_HUB\\_OFFLINE is set" in e.value
               for e in at.error), messages(at)
    at.button(key="real.fetch").click().run()                         # the download: the same clear message
    no_exception(at)
    assert any("gpt2 is not in the Hugging Face cache" in e.value for e in at.error), messages(at)
    assert at.dataframe, "the model it had stays on the page"


def test_a_folder_in_the_link_and_a_sentence_past_the_context(server_model, folders):
    long = " ".join(["the cat sat on the mat"] * 20)
    at = open_page("app_pages/70_real_tokens.py", query={"sentence": long, "real.model": "folder",
                                                          "real.folder": str(folders["gpt2"])})
    no_exception(at)
    assert any("reads at most 64" in w.value and "were cut off" in w.value for w in at.warning), messages(at)
    assert len(at.dataframe[0].value) == 64
    assert "Why “Ġ”" in " ".join(m.value for m in at.markdown)


def a_student_following(page: str, query: dict):
    """A room with a student who follows the teacher's pushed view of `page` with `query`: (the student's AppTest,
    the room's code, the teacher's secret), the student checked to be on the page and still following."""
    import classroom
    from tests.test_room_page import page_of, room_with_student
    from tests.test_room_travel import follow, store
    _, code, secret, ana = room_with_student()
    classroom.push(store(), code, secret, {"page": page, "query": query})
    follow(ana)
    no_exception(ana)
    assert page_of(ana) == page and ana.session_state["room.following"] is True
    return ana, code, secret


def test_a_pushed_view_opens_the_same_head_and_says_plainly_when_the_server_lacks_the_model(server_model):
    import classroom
    from tests.test_room_travel import follow, store
    heads = "app_pages/71_real_heads.py"
    ana, code, secret = a_student_following(heads, {"real.layer": "1", "real.head": "3"})
    assert (ana.session_state["real.layer"], ana.session_state["real.head"]) == (1, 3)
    assert any(m.value.startswith("Layer 1, head 3:") for m in ana.markdown)
    classroom.push(store(), code, secret, {"page": heads, "query": {"real.model": "gpt2"}})
    follow(ana)
    no_exception(ana)
    assert "This server does not have gpt2 yet" in messages(ana) and not ana.error
    assert ana.session_state["room.following"] is True
    classroom.push(store(), code, secret, {"page": heads, "query": {"real.model": "small"}})   # every server has it
    follow(ana)
    no_exception(ana)
    assert ana.session_state["real.model"] == "small" and not ana.error, messages(ana)
    assert any(c.value.startswith("The project's small model") for c in ana.caption)
    assert any(m.value.startswith("Layer 0, head 0: n = ") and "d_k = 16 columns per head, 4 query heads" in m.value
               for m in ana.markdown), [m.value for m in ana.markdown]



# What a fresh read of the pages' text found (NOTES-read-real.md): each sentence true under the settings that show it.

@pytest.fixture(scope="module")
def models(folders):
    return {family: load_model(folder) for family, folder in folders.items()}


def test_t_0_is_said_as_the_argmax_not_as_a_softmax_top_k_and_top_p_keep(models):
    from ui.real.next_view import bars_spec, said, sample
    trace = run_real(models["gpt2"], SENTENCE)
    out = sample(trace, 0.0, 50, 0.9, 0)
    text = said(trace, out, 0.0, 50, 0.9)
    j = int(np.argmax(trace["logits"].value[-1]))
    assert f"**token {j}," in text and "argmax" in text and "softmax" not in text and "keep" not in text, text
    assert {r["which"] for r in bars_spec(trace, out, 0.0)["data"]["values"]} == {"T = 0: argmax",
                                                                                 "p′ (kept, renormalised)"}
    off = said(trace, sample(trace, 0.7, 0, 1.0, 0), 0.7, 0, 1.0)
    assert "top-k = 0 (off) and top-p = 1 (off) keep **320**" in off, off


def test_counts_and_special_tokens_are_said_as_they_are(models):
    from ui.real.tokens_view import why_marks
    one = why_marks(run_real(models["gpt2"], "cat"), "cat")
    assert "1 token for 1 word:" in one, one                                            # not "1 tokens for 1 words"
    typed = why_marks(run_real(models["gpt2"], "<|endoftext|> the cat"), "<|endoftext|> the cat")
    assert "is a special token typed in your text" in typed and "not in your text" not in typed, typed
    llama = why_marks(run_real(models["llama"], "I sat."), "I sat.")
    assert "“\\<s\\>” (id 1) is not in your text" in llama and "(“\\<s\\>” counts too)" in llama, llama
    assert "“\\<unk\\>” (id 0) stands for text this vocabulary has no piece for" in llama     # not typed: unknown
    long = " ".join(["the cat sat on the mat"] * 20)
    cut = run_real(models["gpt2"], long)
    words = len(models["gpt2"].tokenizer.decode(cut.facts["ids"]).split())
    assert cut.facts["truncated"] and f"64 tokens for {words} words" in why_marks(cut, long) and words < 120


def test_the_vocabulary_counts_the_tokenizers_pieces_not_the_padding_rows(models):
    from ui.real.model import facts_line, vocabulary
    llama = models["llama"]                                   # 320 rows of E, fewer pieces: as Qwen2.5's padding
    pieces = llama.tokenizer.vocab_size
    assert pieces < llama.config.vocab
    assert vocabulary(llama).startswith(f"{pieces:,} pieces; its embedding table E has {llama.config.vocab:,} rows")
    assert f"a vocabulary of {pieces:,} pieces ({llama.config.vocab:,} rows of E)" in facts_line(llama)
    assert vocabulary(models["gpt2"]) == "320 pieces"


def test_the_rotation_names_the_scaled_frequency_only_when_scaled(folders, tmp_path):
    import json
    import shutil

    from attention_core import explain
    plain = tmp_path / "plain"
    shutil.copytree(folders["llama"], plain)
    config = json.loads((plain / "config.json").read_text())
    config.pop("rope_scaling")                                # as SmolLM2-135M and Qwen2.5-0.5B: no rope_scaling
    (plain / "config.json").write_text(json.dumps(config))
    for folder, scaled in ((folders["llama"], True), (plain, False)):
        trace = run_real(load_model(folder), SENTENCE)               # kept: a layer holds its block weakly
        att = trace.facts["attention"][0]
        for key in ("q_rot", "k_rot"):
            formula, why = att[key].formula, att[key].why
            assert "rotate" not in formula and (r"\theta_i'" in formula) == scaled, formula
            assert ("θ_i'" in why) == scaled, why
            e = explain(att, key, (0, 3, 2))                  # a clicked cell's angle: p·θ_2' only when scaled
            assert (r"\theta_{2}'" in e.symbolic) == scaled and ("p·θ_2'" in e.note) == scaled, (e.symbolic, e.note)


def test_a_float32_check_that_fails_does_not_say_the_same():
    from ui.explain_view import check_note
    assert "differ by more than 10⁻⁵" in check_note(1.0, 1.1, False, "recomputed", 1e-5)
    assert "the same" not in check_note(1.0, 1.1, False, "recomputed", 1e-5)
    assert check_note(1.0, 1.0, True, "recomputed") == "✓ recomputed: 1; the cell holds 1."


def test_a_gqa_key_or_value_cell_is_explained_as_its_kv_heads():
    from attention_core import Config, explain, run_forward
    config = Config(n_heads=4, n_kv_heads=2)
    trace = run_forward(config)
    assert explain(trace, "v_heads", (1, 0, 2), config=config).note.startswith("KV head 1 (heads counted from 0)")
    assert explain(trace, "q_heads", (1, 0, 2), config=config).note.startswith("Head 1 (heads counted from 0)")


def test_a_one_token_sentence_is_said_in_the_singular(models):
    from ui.real.heads_view import shapes_line, top_weights
    trace = run_real(models["gpt2"], "cat")                   # GPT-2 puts nothing first: one token
    assert trace.n == 1
    assert "n = 1 token," in shapes_line(trace, 0, 0)
    assert top_weights(trace, 0, 0) == "The only token, “cat”, can look only at itself: all of its weight, 1.00."


def test_a_pushed_server_model_on_a_server_without_one_is_said_not_replaced(monkeypatch, tmp_path):
    """A teacher's view naming "this server's model" ("" in the link) reaches a student's server whose host set
    none: the student's screen says so plainly (the numbers would not be the teacher's) and stays following; it is
    not quietly replaced by the small model. Out of a room, the same "" opens the small model."""
    monkeypatch.delenv(ENV, raising=False)
    heads = "app_pages/71_real_heads.py"
    ana, _, _ = a_student_following(heads, {"real.model": "", "real.layer": "1"})
    assert ana.session_state["real.model"] == "" and not ana.error
    assert "Your teacher's view uses their server's own model, and this one has none" in messages(ana)
    alone = open_page(heads, query={"sentence": SENTENCE})
    no_exception(alone)
    assert alone.session_state["real.model"] == "small"


def test_a_student_who_opens_a_real_page_on_their_own_gets_the_small_model_not_the_teachers_message(monkeypatch):
    """A student in a room opens a real page by themselves (no view of the teacher's names a model), on a server
    without a host model: the page opens the small model, as out of a room; nothing says the teacher's view uses
    the teacher's server's model (no such view was pushed). The same after following a pushed view of another
    page and then stepping out to a real page."""
    import classroom
    from tests.test_room_page import room_with_student
    from tests.test_room_travel import follow, store
    monkeypatch.delenv(ENV, raising=False)
    tokens = "app_pages/70_real_tokens.py"
    _, code, secret, ana = room_with_student()
    ana.switch_page(tokens).run()
    no_exception(ana)
    assert "Your teacher's view" not in messages(ana) and ana.session_state["real.model"] == "small", messages(ana)
    _, code, secret, ben = room_with_student()
    classroom.push(store(), code, secret, {"page": "app_pages/4_scores.py", "query": {}})
    follow(ben)
    ben.switch_page(tokens).run()
    no_exception(ben)
    assert "Your teacher's view" not in messages(ben) and ben.session_state["real.model"] == "small", messages(ben)


def test_the_last_layers_stream_is_said_to_be_read_by_the_final_norm(folders):
    """A checkpoint's last layer has no next layer: its stream after the MLP is what the final norm reads."""
    for family, norm in (("gpt2", "LayerNorm"), ("llama", "RMSNorm")):
        model = load_model(folders[family])
        trace = run_real(model, SENTENCE)
        last = model.config.n_layers - 1
        assert "next layer" not in trace[f"l{last}.out"].why and f"final {norm}" in trace[f"l{last}.out"].why
        assert last == 0 or "next layer" in trace["l0.out"].why


def test_the_sidebar_shows_the_sentence_only_and_any_text_reaches_the_model(server_model):
    """A real model's tokenizer takes any text: a sentence of no GloVe word (the toy model would refuse it) is read
    as typed, with no toy-model error, and the sidebar shows the sentence alone (the toy settings wait, kept)."""
    text = "Zxqv blorp ☕ 1234"
    at = open_page("app_pages/70_real_tokens.py", query={"sentence": text, "n_heads": "2"})
    no_exception(at)
    assert not at.error, messages(at)
    assert [box.label for box in at.sidebar.text_input] == ["Sentence"] and at.sidebar.text_input[0].value == text
    assert not at.sidebar.selectbox and not at.sidebar.slider
    ids = server_model.tokenizer.encode(text).ids
    assert list(at.dataframe[0].value["id"])[:len(ids)] == list(ids)
    assert at.session_state["s.n_heads"] == 2                      # the toy settings kept for the other pages


@pytest.mark.parametrize("sentence", ["", "word " * 250])
def test_a_links_sentence_the_page_cannot_use_is_said_not_swapped_silently(server_model, sentence):
    """A link whose sentence is empty or over the limit opens the default sentence: the page says so (the link's
    notice), as an attention page does; a toy setting's notice waits for the attention pages."""
    at = open_page("app_pages/70_real_tokens.py", query={"sentence": sentence, "n_heads": "abc"})
    no_exception(at)
    said = [w.value for w in at.warning]
    assert any(w.startswith("Link setting “sentence” cannot be used") for w in said), messages(at)
    assert not any("n_heads" in w for w in said), said


def test_a_shared_key_blocks_pickers_name_its_kv_head(server_model):
    """Query head 3 with g = 2 reads KV head 1's keys and values: their pickers' labels (what a screen reader says)
    name KV head 1, not "head 1" on a page about head 3."""
    at = page("app_pages/71_real_heads.py", **{"real.layer": "1", "real.head": "3"})
    labels = [b.label for b in at.selectbox if b.label.startswith("Row of")]
    assert "Row of K rotated (RoPE), KV head 1 to explain" in labels, labels
    assert "Row of V split into KV heads, KV head 1 to explain" in labels, labels
    assert "Row of Attention weights, head 3 to explain" in labels, labels

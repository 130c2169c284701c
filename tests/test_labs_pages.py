"""The Labs pages through AppTest: pitfalls, quiz, share & export."""
import pytest

from attention_core.labs.pitfalls import PITFALLS
from streamlit.testing.v1 import AppTest

from tests.apptest_util import ROOT, messages, no_exception, open_page


@pytest.mark.parametrize("pitfall", [p.key for p in PITFALLS])
def test_each_pitfall_shows_both_and_its_check(pitfall):
    at = open_page("app_pages/30_pitfalls.py")
    at.radio(key="pitfall").set_value(pitfall).run()
    no_exception(at)
    values = [m.value for m in at.metric]
    assert values == ["passes ✓", "flags it ✓"], values


def test_pitfalls_with_several_heads_show_one_head_at_a_time():
    """With h=2 a pitfall's matrices are (head, n, n): a head picker, every head drawable, the check unchanged."""
    at = open_page("app_pages/30_pitfalls.py", query={"n_heads": "2"})
    at.radio(key="pitfall").set_value("softmax_axis").run()
    no_exception(at)
    assert at.radio(key="pitfall_head").options == ["head 0", "head 1"]
    at.radio(key="pitfall_head").set_value(1).run()
    no_exception(at)
    assert [m.value for m in at.metric] == ["passes ✓", "flags it ✓"]
    assert "over every head" in "\n".join(c.value for c in at.caption)


def _answer_first(at, kind, right: bool):
    from attention_core.labs.quiz import make_questions
    trace = at.session_state["s.last_good"]
    from ui.cache import get_trace
    questions = make_questions(get_trace(trace), seed=0)
    q = next(q for q in questions if q.kind == kind)
    answer = q.answer if right else ("7 × 7" if kind == "shape" else "12345")
    at.text_input(key=f"quiz_in:{q.id}").input(answer)
    index = [b.label for b in at.button].index("Check", [i for i, b in enumerate(at.button)
                                                         if b.label == "Check"][questions.index(q)])
    at.button[index].click().run()
    return q


@pytest.mark.parametrize("right", [True, False])
def test_quiz_grades_a_shape_prediction(right):
    at = open_page("app_pages/31_quiz.py")
    _answer_first(at, "shape", right)
    no_exception(at)
    if right:
        assert at.success and "Right" in at.success[0].value
        assert at.metric[0].value == "1 / 1"
    else:
        assert at.error and "Not quite" in at.error[0].value
        assert at.metric[0].value == "0 / 1"


def test_quiz_questions_change_with_settings():
    at = open_page("app_pages/31_quiz.py")
    first = [m.value for m in at.markdown if m.value.startswith("**1.**")]
    at.text_input(key="w.sentence").set_value("we like the cat").run()
    second = [m.value for m in at.markdown if m.value.startswith("**1.**")]
    no_exception(at)
    assert first != second


def test_export_page_offers_downloads_and_the_script():
    at = open_page("app_pages/32_export.py", query={"d_k": "3", "sentence": "we love you"})
    no_exception(at)
    assert not at.error, messages(at)
    code = [c.value for c in at.code]
    assert code[0].endswith("/?sentence=we%20love%20you&d_k=3")   # opened directly: the Overview is offered
    assert not any("import numpy as np" in c for c in code)       # the script is written only when read
    at.session_state["export_read"] = True                         # "Read the script" opened (on_change="rerun")
    at.run()
    code = [c.value for c in at.code]
    assert any("import numpy as np" in c for c in code)
    assert any("we love you" in c for c in code)
    labels = [b.label for b in at.get("download_button")]
    assert labels[:3] == ["Every step as .npz", "Every step as CSV (zip)", "Download 00_x_embed.csv"], labels


def test_downloads_built_on_click_hold_the_pages_numbers():
    """The page hands st.download_button callables (built on click); they give the trace's own arrays."""
    import numpy as np

    from attention_core import Config, run_forward
    from attention_core.labs.export import array_from_csv, csv_names, load_npz, python_script
    from ui.cache import export_csv, export_npz, export_script
    config = Config(sentence="we love you", d_k=3)
    trace = run_forward(config)
    arrays = load_npz(export_npz(config))
    assert list(arrays) == [s.key for s in trace]
    for name, key in csv_names(trace).items():
        np.testing.assert_array_equal(arrays[key], trace[key].value)
        np.testing.assert_allclose(array_from_csv(export_csv(config, key)), trace[key].value, rtol=0, atol=0)
    assert export_script(config) == python_script(config)


def test_chart_pictures_render_on_the_server():
    import json

    from attention_core import Config, run_forward
    from ui.cache import chart_image
    from ui.charts import heatmap_spec, standalone
    trace = run_forward(Config())
    spec = json.dumps(standalone(*heatmap_spec(trace, trace["weights"])), sort_keys=True)
    png, svg = chart_image(spec, "png"), chart_image(spec, "svg").decode()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 2000
    assert "<svg" in svg and "love" in svg          # the token labels are drawn


def _visit(at, page: str, url: str):
    at.context = {"url": url}
    at.switch_page(page)
    return at.run()


def test_share_link_is_a_full_link_to_the_page_the_learner_came_from():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.query_params["sentence"], at.query_params["d_k"] = "we love you", "3"
    _visit(at, "app_pages/4_scores.py", "https://school.example/attention/scores")
    _visit(at, "app_pages/32_export.py", "https://school.example/attention/export")   # as a proxy serves it
    no_exception(at)
    assert at.selectbox(key="export_share_page").value == "app_pages/4_scores.py"
    assert at.code[0].value == "https://school.example/attention/scores?sentence=we%20love%20you&d_k=3"
    # another page from the chooser; a page with its own controls gets no settings
    at.selectbox(key="export_share_page").set_value("app_pages/10_training_step.py").run()
    assert at.code[0].value == "https://school.example/attention/training_step?sentence=we%20love%20you&d_k=3"
    at.selectbox(key="export_share_page").set_value("app_pages/11_train.py").run()
    assert at.code[0].value == "https://school.example/attention/train"
    assert "reads none of the shared settings" in "\n".join(c.value for c in at.caption)


def test_share_link_carries_the_pages_own_controls_its_cell_and_presenter_only_when_asked():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    for k, v in {"presenter": "1", "online_softmax.block_size": "2", "cell": "online_softmax.hm.s_b.1.0"}.items():
        at.query_params[k] = v
    _visit(at, "app_pages/43_online_softmax.py", "https://school.example/online_softmax")
    no_exception(at)
    assert at.session_state["s.presenter"] is True                     # the link opened in presenter mode …
    assert dict(at.query_params) == {"online_softmax.block_size": "2", "cell": "online_softmax.hm.s_b.1.0"}  # … not kept
    _visit(at, "app_pages/32_export.py", "https://school.example/export")
    no_exception(at)
    base = "https://school.example/online_softmax?online_softmax.block_size=2&cell=online_softmax.hm.s_b.1.0"
    assert at.code[0].value == base                                     # a student's link: no presenter mode
    at.toggle(key="export_share_presenter").set_value(True).run()
    assert at.code[0].value == base + "&presenter=1"                    # the teacher's projector link
    notes = "\n".join(c.value for c in at.caption)
    assert "On FlashAttention's online softmax it also keeps its own controls as you left them and the cell you " \
           "clicked." in notes
    at.selectbox(key="export_share_page").set_value("app_pages/11_train.py").run()
    assert at.code[0].value == "https://school.example/train?presenter=1"


def test_share_notes_say_what_the_link_carries():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    _visit(at, "app_pages/32_export.py", "https://school.example/export")
    notes = lambda: "\n".join(c.value for c in at.caption)
    assert "the link needs no parameters" in notes()
    at.toggle(key="export_share_presenter").set_value(True).run()
    assert at.code[0].value == "https://school.example/?presenter=1" and "the link needs only presenter=1" in notes()
    assert "it also keeps" not in notes()


def test_a_tampered_page_control_gets_a_notice_in_words():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.query_params["kv_cache.prefill"], at.query_params["kv_cache.tab"] = "abc", "9"
    at.switch_page("app_pages/42_kv_cache.py")
    at.run()
    no_exception(at)
    shown = [w.value for w in at.warning]
    assert "Link setting “kv_cache.prefill” (the prompt's length P) cannot be 'abc'; using the default (2)." in shown
    assert ("Link setting “kv_cache.tab” (the open tab) must be from 0 to 2, not '9'; using the default "
            "(“Decoding, step by step”).") in shown


def test_share_link_without_a_browser_address_uses_the_server_address():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.query_params["seed"] = "5"
    at.switch_page("app_pages/6_context.py")
    at.run()
    at.switch_page("app_pages/32_export.py")
    at.run()
    no_exception(at)
    link = at.code[0].value
    assert link.startswith("http://") and link.endswith("/context?seed=5"), link
    assert "did not say its address" in "\n".join(c.value for c in at.caption)


# ---- issue 13: the Share & export page under RoPE, ALiBi, grouped KV heads and the sliding window -----------

NEW_QUERIES = [
    {"positional": "rope", "n_heads": "4", "n_kv_heads": "2", "mask": "causal", "sentence": "we love you"},
    {"positional": "alibi", "n_heads": "3", "mask": "sliding_window", "window": "2", "sentence": "the cat sat on the mat"},
    {"n_heads": "4", "n_kv_heads": "1", "score": "bilinear", "embedding": "random", "weights": "random"},
]


@pytest.mark.parametrize("query", NEW_QUERIES, ids=["rope-gqa-causal", "alibi3-window", "mqa-bilinear"])
def test_export_page_under_the_new_settings_renders_and_its_downloads_hold_its_numbers(query, tmp_path):
    """The page renders with no error; its link carries the settings back; the .npz, CSV, zip and script it offers
    hold the page's own trace (the script run for real); each new step draws as a chart."""
    import io
    import subprocess
    import sys
    import zipfile

    import numpy as np

    from attention_core.labs.export import array_from_csv, config_from_query, csv_names, load_npz
    from ui.cache import export_csv, export_csv_zip, export_npz, export_script, get_trace
    at = open_page("app_pages/32_export.py", query=query)
    no_exception(at)
    assert not at.error, messages(at)
    config = at.session_state["s.last_good"]
    assert all(str(getattr(config, k)) == v or k == "sentence" for k, v in query.items() if k != "n_kv_heads")
    assert config.kv_heads == int(query.get("n_kv_heads", 0)) or config.kv_heads == config.n_heads
    link = at.code[0].value
    from urllib.parse import parse_qsl, urlsplit
    back, notices = config_from_query(dict(parse_qsl(urlsplit(link).query)))
    assert back == config and notices == []                                 # the link opens the same numbers
    trace = get_trace(config)
    new = [k for k in ("q_rot", "k_rot", "alibi", "biased_scores", "mask") if k in trace]
    assert new or config.kv_heads < config.n_heads
    arrays = load_npz(export_npz(config))
    assert list(arrays) == trace.keys()
    with zipfile.ZipFile(io.BytesIO(export_csv_zip(config))) as z:
        for name, key in csv_names(trace).items():
            np.testing.assert_array_equal(arrays[key], trace[key].value)
            np.testing.assert_array_equal(array_from_csv(z.read(name).decode()), trace[key].value)
            np.testing.assert_array_equal(array_from_csv(export_csv(config, key)), trace[key].value)
        assert "README.txt" in z.namelist()
    script = tmp_path / "attention_steps.py"
    script.write_text(export_script(config), encoding="utf-8")
    done = subprocess.run([sys.executable, str(script), str(tmp_path / "steps.npz")], capture_output=True, text=True,
                          cwd=tmp_path, timeout=60)
    assert done.returncode == 0, done.stderr
    with np.load(tmp_path / "steps.npz") as ran:
        assert list(ran.files) == trace.keys()
        for key in trace.keys():
            finite = np.isfinite(trace[key].value)
            assert np.array_equal(finite, np.isfinite(ran[key])), key
            assert np.abs(ran[key][finite] - trace[key].value[finite]).max(initial=0) <= 1e-12, key
    for key in new + ["k_heads", "v_heads"]:                                # the chart of each new step
        if key in trace:
            at.selectbox(key="export_chart").set_value(key).run()
            no_exception(at)
    names = csv_names(trace)
    pick = next(n for n, k in names.items() if k in new + ["k_heads"])
    at.selectbox(key="export_csv").set_value(pick).run()
    no_exception(at)
    assert f"Download {pick}" in [b.label for b in at.get("download_button")]
    said = "\n".join(m.value for m in at.markdown)
    words = {"rope": "RoPE's rotation of Q and K", "alibi": "ALiBi's slopes and bias"}.get(config.positional)
    assert words is None or words in said
    assert ("the grouped KV heads (np.repeat)" in said) == (config.kv_heads < config.n_heads)
    assert ("the sliding-window mask" in said) == (config.mask == "sliding_window")


def test_export_page_chart_pictures_of_the_new_steps():
    """PNG and SVG of ALiBi's bias and RoPE's rotated keys render on the server, labelled with the tokens."""
    import json

    from attention_core import Config, run_forward
    from ui.cache import chart_image
    from ui.charts import heatmap_spec, standalone
    for config, key in ((Config(positional="alibi", n_heads=3), "alibi"),
                        (Config(positional="rope", n_heads=4, n_kv_heads=2), "k_rot")):
        trace = run_forward(config)
        spec = json.dumps(standalone(*heatmap_spec(trace, trace[key], head=0)), sort_keys=True)
        png, svg = chart_image(spec, "png"), chart_image(spec, "svg").decode()
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and "<svg" in svg and "love" in svg


def test_export_page_with_a_tampered_link_falls_back_and_still_exports():
    at = open_page("app_pages/32_export.py", query={"n_heads": "4", "n_kv_heads": "3", "mask": "sliding_window",
                                                    "window": "0"})
    no_exception(at)
    shown = messages(at)
    assert "“n_kv_heads”" in shown and "1, 2 or 4" in shown and "“window”" in shown
    config = at.session_state["s.last_good"]
    assert (config.n_heads, config.kv_heads, config.mask, config.window) == (4, 4, "sliding_window", 3)
    assert [b.label for b in at.get("download_button")][:2] == ["Every step as .npz", "Every step as CSV (zip)"]

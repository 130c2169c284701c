"""The settings panel (docs/layout.md): one place per control, presenter mode in the link,
and a control that shows the value in force after a setting is refused."""
import pytest

from tests.apptest_util import messages, no_exception, open_groups, open_page
from ui.nav import SECTIONS

FORWARD = [entry[0] for entry in SECTIONS[0][1]]
SHARED = ["w.sentence", "w.embedding", "w.n_heads", "w.d_k", "w.d_v", "w.positional", "w.combine", "w.pe_base",
          "w.score", "w.bias", "w.mask", "w.temperature", "w.seed"]


def widget_keys(block) -> list[str]:
    return [w.key for kind in ("text_input", "selectbox", "slider", "number_input", "radio", "toggle",
                               "multiselect", "select_slider") for w in block.get(kind) if w.key]


@pytest.mark.parametrize("page", FORWARD + ["app_pages/23_pytorch_mha.py", "app_pages/20_score_functions.py"])
def test_every_shared_setting_is_in_the_sidebar_and_nowhere_else(page):
    at = open_page(page, groups=True)
    no_exception(at)
    side, main = widget_keys(at.sidebar), widget_keys(at.main)
    for key in SHARED:
        assert side.count(key) == 1, f"{page}: {key} in the sidebar {side.count(key)} times"
    # presenter mode is display, not a setting: its switch is over the title (ui/presenter.py), not in the sidebar
    assert [k for k in main if k.startswith("w.")] == ["w.presenter"], f"{page}: a setting drawn on the page: {main}"
    assert "w.presenter" not in side


def test_sidebar_order_puts_sentence_embeddings_heads_and_d_k_first():
    at = open_page("app_pages/4_scores.py", groups=True)
    order = widget_keys(at.sidebar)
    # widget_keys groups by kind; the tree order is what the learner sees
    seen = [n.key for n in at.sidebar if getattr(n, "key", None) in SHARED]
    assert seen[:5] == ["w.sentence", "w.embedding", "w.n_heads", "w.d_k", "w.d_v"], seen
    assert set(order) >= set(SHARED)


def test_presenter_mode_comes_from_the_link_and_stays_out_of_the_address_bar():
    """A teacher's projector link opens in presenter mode; the address bar then carries the settings
    only, so a link copied from it for students does not open in presenter mode."""
    at = open_page("app_pages/4_scores.py", query={"presenter": "1", "d_k": "5"}, groups=True)
    no_exception(at)
    assert at.session_state["s.presenter"] is True
    assert at.toggle(key="w.presenter").value is True
    assert "presenter" not in at.query_params
    assert at.query_params["d_k"] in ("5", ["5"])
    at.toggle(key="w.presenter").set_value(False).run()
    no_exception(at)
    assert "presenter" not in at.query_params
    assert at.session_state["s.presenter"] is False


def test_presenter_mode_is_kept_across_pages():
    at = open_page("app_pages/3_qkv.py", query={"presenter": "1"}, groups=True)
    at.switch_page("app_pages/6_context.py").run()
    no_exception(at)
    assert at.session_state["s.presenter"] is True
    assert at.toggle(key="w.presenter").value is True
    assert "presenter" not in at.query_params


@pytest.mark.parametrize("raw", ["yes", "2", "<script>", ""])
def test_a_tampered_presenter_value_is_ignored_with_a_notice(raw):
    at = open_page("app_pages/1_embeddings.py", query={"presenter": raw})
    no_exception(at)
    assert at.session_state["s.presenter"] is False
    assert "Link setting “presenter” must be 1 or 0" in messages(at), messages(at)
    assert "presenter" not in at.query_params


def test_presenter_link_on_a_page_without_settings():
    at = open_page("app_pages/21_alignment.py", query={"presenter": "1"})
    no_exception(at)
    assert at.session_state["s.presenter"] is True
    assert "presenter" not in at.query_params


# (page, widget kind, key, refused value, value in force, message fragment)
REFUSED = [      # heads need not divide d_model any more; toy vectors cannot train the weights
    ("app_pages/7_multi_head.py", "selectbox", "w.embedding", "toy", "glove", "Trained weights need GloVe or random"),
    ("app_pages/3_qkv.py", "selectbox", "w.weights", "trained", "random", "Trained weights need GloVe or random"),
]


@pytest.mark.parametrize("page,kind,key,bad,good,message", REFUSED)
def test_a_refused_setting_puts_the_control_back_to_the_value_in_force(page, kind, key, bad, good, message):
    at = open_page(page, query={"embedding": "toy", "weights": "random"} if key == "w.weights" else None)
    no_exception(at)
    assert getattr(at, kind)(key=key).value == good
    getattr(at, kind)(key=key).set_value(bad).run()
    no_exception(at)
    assert message in messages(at), messages(at)
    assert "The control is back at the value in force" in messages(at)
    assert getattr(at, kind)(key=key).value == good            # the control shows what the page computes with
    assert at.session_state[f"s.{key[2:]}"] == good
    assert getattr(at.session_state["s.last_good"], key[2:]) == good
    assert key[2:] not in at.query_params or at.query_params[key[2:]] not in (str(bad), [str(bad)])
    at.run()                                                   # the next run: message gone, value kept
    assert "The control is back" not in messages(at)
    assert getattr(at, kind)(key=key).value == good
    assert not at.error


def test_a_refused_sentence_stays_in_the_box_with_the_message():
    """The sentence is the learner's text: it stays editable, the message names what to change,
    and the page shows the last sentence that worked."""
    at = open_page("app_pages/1_embeddings.py")
    at.text_input(key="w.sentence").set_value("zzzq xxyy").run()
    no_exception(at)
    assert at.text_input(key="w.sentence").value == "zzzq xxyy"
    assert "Showing the last settings that worked" in messages(at), messages(at)
    assert at.session_state["s.last_good"].sentence == "I love you today"
    at.text_input(key="w.sentence").set_value("i love the dog").run()
    assert not at.error and at.session_state["s.last_good"].sentence == "i love the dog"


def test_a_closed_group_draws_no_widgets_and_its_settings_stay_in_force():
    """The collapsed groups are lazy (a rerun costs nothing for them): closed, no widget of theirs
    runs, and the settings they hold stay in force; opened, each control shows the value in force."""
    at = open_page("app_pages/3_qkv.py", query={"temperature": "2", "positional": "learned", "seed": "7"})
    no_exception(at)
    side = widget_keys(at.sidebar)
    assert not {"w.temperature", "w.positional", "w.seed", "w.mask", "w.presenter"} & set(side), side
    assert {"w.sentence", "w.n_heads", "w.d_k"} <= set(side)
    assert (at.session_state["s.temperature"], at.session_state["s.positional"], at.session_state["s.seed"]) == \
        (2.0, "learned", 7)
    assert at.query_params["temperature"] in ("2", ["2"])            # the link keeps them
    open_groups(at)
    no_exception(at)
    assert at.slider(key="w.temperature").value == 2.0
    assert at.selectbox(key="w.positional").value == "learned"
    assert at.number_input(key="w.seed").value == 7
    at.slider(key="w.temperature").set_value(0.5).run()
    assert at.session_state["s.temperature"] == 0.5
    at.session_state["grp.score"] = False                          # closed again: the new value stays
    at.run()
    assert "w.temperature" not in widget_keys(at.sidebar) and at.session_state["s.temperature"] == 0.5

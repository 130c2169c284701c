"""What a student trips over, each in chromium at a laptop's 1366 × 768 (issue 30, item 6): the word picker's label
after a new sentence, the block's bar charts with many bars, the KV cache calculator after a menu round trip, an
in-text link to another page, a learning rate of 0 on /train. (The clicked cell kept on screen and the formulas
that say they scroll: test_explain_in_sight.py.)

One server for the module (the shared app_server); each test a fresh browser context."""
from __future__ import annotations

import re

import pytest

try:
    from playwright.sync_api import TimeoutError as NotYet
    from playwright.sync_api import expect
except ImportError:            # the fixtures skip, or fail under ATTENTION_EXPLORER_REQUIRE_BROWSER=1
    expect = NotYet = None

from bench._common import EXCEPTION, after_run, pick_option, wait_for_charts
from tests.e2e.conftest import open_page


def picker(tab, label: str):
    return tab.locator("[data-testid='stSelectbox']").filter(has_text=label).locator("input[role='combobox']")


def choose(tab, label: str, option: int) -> None:
    """Open a selectbox's list (again, if a run landing meanwhile closed it) and click option n."""
    box = picker(tab, label)
    expect(box).to_be_visible(timeout=30_000)
    pick_option(tab, box, tab.locator("[role='option']").nth(option))


def menu(tab, section: str, label: str) -> None:
    """Another page through the top bar's menu (the same session)."""
    tab.locator("[data-testid='stTopNavSection']").filter(has_text=section).first.click()
    link = tab.locator("a[data-testid='stTopNavDropdownLink']").filter(has_text=label).first
    after_run(tab, lambda: link.click(), timeout_ms=90_000)


def test_the_query_word_shows_the_new_sentences_word_after_enter(app_server, laptop):
    """/scores: a new sentence typed and entered; the picker keeps row 1 and now names its new word (it showed
    "1: love" beside the numbers of "quick" until a reload), and a word picked travels in the address."""
    tab = laptop()
    open_page(tab, app_server, "scores")
    expect(picker(tab, "Query word")).to_have_value("1: love", timeout=30_000)
    sentence = tab.get_by_role("textbox").first
    after_run(tab, lambda: (sentence.fill("the quick brown fox"), sentence.press("Enter")))
    expect(picker(tab, "Query word")).to_have_value("1: quick", timeout=15_000)
    choose(tab, "Query word", 2)                               # picked inside its fragment: kept and in the link
    expect(picker(tab, "Query word")).to_have_value("2: brown")
    expect(tab).to_have_url(re.compile(r"one_word=2"))
    after_run(tab, lambda: (sentence.fill("I love you today"), sentence.press("Enter")))
    expect(picker(tab, "Query word")).to_have_value("2: you", timeout=15_000)
    assert tab.locator(EXCEPTION).count() == 0


# the residual stream's chart (its axis title) and the logits' chart: the rendered size against the drawn one, and
# the height of its smallest word
SIZES_JS = """title => Array.from(document.querySelectorAll("[data-testid='stVegaLiteChart'] svg.marks"))
  .filter(svg => Array.from(svg.querySelectorAll('text')).some(t => t.textContent === title)).map(svg => {
    const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
    const sizes = Array.from(svg.querySelectorAll('text')).filter(t => t.textContent.trim())
      .map(t => scale * parseFloat(getComputedStyle(t).fontSize));
    return {scale: scale, smallest: Math.min(...sizes), right: svg.getBoundingClientRect().right};
  })"""

WORDS_62 = ("the cat sat on a mat and ate some fish while the dog ran in the park with a ball that was red and the "
            "sun was hot so they went home to rest under a big tree near the river where birds sang all day long "
            "until night came and stars shone bright above the quiet town as the moon rose")


@pytest.mark.parametrize("query", [{"block.layers": 4, "block.mlp": "true",
                                    "sentence": "the cat sat on a mat and ate some fish"},
                                   {"block.layers": 1, "sentence": WORDS_62}], ids=["10 tokens, 4 layers", "62 tokens"])
def test_the_blocks_bar_charts_stay_readable_with_many_bars(app_server, laptop, query):
    """/block: the residual stream's bars (10 tokens × 9 parts; 62 tokens × 3) and the logits' bars are drawn at
    their size inside the column, their words at least 9 px (they were scaled to 80–110 px tall, 5-px words); the
    residual stream's bars lie down, a token a row, as wide as the column."""
    assert len(WORDS_62.split()) == 62
    tab = laptop()
    open_page(tab, app_server, "block", query)
    tab.get_by_role("heading", name=re.compile("The residual stream")).scroll_into_view_if_needed()
    wait_for_charts(tab, lambda cs: sum(1 for c in cs if c["rendered"]) >= 4, timeout_ms=30_000)
    column = tab.locator("[data-testid='stMainBlockContainer']").bounding_box()
    for title in ("‖row‖", "logit"):
        sizes = tab.evaluate(SIZES_JS, title)
        assert len(sizes) == 1, (title, sizes)
        size = sizes[0]
        assert size["scale"] > 0.97 and size["smallest"] >= 9, (title, size)
        assert size["right"] <= column["x"] + column["width"] + 1, (title, size, column)
    assert tab.locator(EXCEPTION).count() == 0


def test_the_kv_cache_calculator_keeps_its_model_and_context_across_the_menu(app_server, laptop):
    """/kv_cache's calculator: Mistral 7B at 16,384 tokens, away to /rope by the menu and back: still Mistral 7B at
    16,384 (the tab was kept, the model and context length went back to Llama 3 8B at 8,192)."""
    tab = laptop()
    open_page(tab, app_server, "kv_cache")
    after_run(tab, lambda: tab.get_by_role("tab", name="Cache size calculator").click(), timeout_ms=30_000)
    choose(tab, "Model", 2)
    slider = tab.get_by_role("slider", name="Context length")
    after_run(tab, lambda: (slider.focus(), slider.press("ArrowRight")))
    context = tab.locator("[data-testid='stSlider']").filter(has_text="Context length")
    expect(context.locator("[data-testid='stSliderThumbValue']")).to_have_text("16,384")
    expect(picker(tab, "Model")).to_have_value("Mistral 7B")
    menu(tab, "Today's attention", "RoPE")
    expect(tab.locator("h1")).to_contain_text("RoPE", timeout=30_000)
    menu(tab, "Today's attention", "KV cache")
    expect(picker(tab, "Model")).to_have_value("Mistral 7B", timeout=30_000)
    expect(context.locator("[data-testid='stSliderThumbValue']")).to_have_text("16,384")
    expect(tab.locator("[data-testid='stMarkdownContainer']").filter(has_text="Mistral 7B:").first).to_contain_text(
        "16,384 tokens")
    expect(tab).to_have_url(re.compile(r"kv_cache\.preset=Mistral"))
    assert tab.locator(EXCEPTION).count() == 0


def test_an_in_text_link_opens_its_page_in_the_same_tab(app_server, laptop):
    """/block's "the next token": the same tab, the same document (no reload: a mark left in the page is still
    there) and session, the next-token page with the sentence; Back returns to the block."""
    tab = laptop()
    open_page(tab, app_server, "block", {"sentence": "the cat sat"})
    link = tab.locator("[data-testid='stMarkdownContainer'] a").filter(has_text="the next token").first
    expect(link).to_be_attached(timeout=30_000)
    tab.wait_for_function("() => window.__inAppLinks === true", timeout=30_000)     # the page's scripts have run
    tab.evaluate("() => { window.__stillHere = 42 }")
    link.scroll_into_view_if_needed()
    link.click()                                # a page switch: waited for by its title
    expect(tab.locator("h1")).to_have_text("The next token", timeout=60_000)
    assert len(tab.context.pages) == 1
    assert tab.evaluate("() => window.__stillHere") == 42
    assert re.search(r"/next_token\?sentence=the(%20|\+)cat(%20|\+)sat$", tab.url), tab.url
    tab.go_back()
    expect(tab.locator("h1")).to_have_text("The transformer block", timeout=60_000)
    assert tab.evaluate("() => window.__stillHere") == 42
    assert tab.locator(EXCEPTION).count() == 0


def test_a_learning_rate_of_zero_is_refused_in_words_on_the_page(app_server, laptop):
    """/train: 0 typed into the learning rate reaches the page, which refuses it in words, keeps 0.0500 and holds
    Train back (the browser used to refuse it with "between 0.0000 and 100.0000", the page saying nothing)."""
    tab = laptop()
    open_page(tab, app_server, "train")
    rate = tab.get_by_role("spinbutton", name="Learning rate")
    expect(rate).to_have_value("0.0500", timeout=30_000)
    after_run(tab, lambda: (rate.fill("0"), rate.press("Enter")))
    error = tab.locator("[data-testid='stAlert']").filter(has_text="is refused")
    expect(error).to_contain_text("A learning rate of 0 is refused", timeout=15_000)
    expect(error).to_contain_text("the last rate accepted, 0.0500")
    expect(tab.get_by_role("button", name="Train", exact=True)).to_be_disabled()
    after_run(tab, lambda: (rate.fill("0.05"), rate.press("Enter")))
    expect(error).to_have_count(0, timeout=15_000)
    expect(tab.get_by_role("button", name="Train", exact=True)).to_be_enabled()
    assert tab.locator(EXCEPTION).count() == 0

"""A teacher's pieces in the browser: the share page's link, copied with its copy button, opens the
same page with the same numbers in a fresh browser context (another student: no shared session);
the training step's backward walk is taken one tab at a time, and SymPy runs when opened."""
from __future__ import annotations

from urllib.parse import urlencode


try:
    from playwright.sync_api import expect
except ImportError:            # the fixtures skip, or fail under ATTENTION_EXPLORER_REQUIRE_BROWSER=1
    expect = None

from bench._common import EXCEPTION, after_run, new_context, wait_for_charts

SENTENCE = "the cat sat on a mat"            # common words: none dropped
QUERY = {"sentence": SENTENCE, "d_k": "3", "seed": "11", "scores.tab": "1"}    # the "All words" tab: every row



def drawn(tab, rows: list[str]) -> list[dict]:
    """The visible heatmaps once one has the sentence's tokens as rows and all are drawn."""
    ready = lambda cs: (any(c["y"] == rows for c in cs if c["visible"] and c["rendered"])
                        and all(c["rendered"] for c in cs if c["visible"]))
    found = wait_for_charts(tab, ready, timeout_ms=60_000)
    assert ready(found), "no heatmap with the sentence's words as rows was drawn"   # never a silent time-out
    return [c for c in found if c["visible"] and c["rendered"]]


def test_copied_share_link_opens_the_page_with_the_same_numbers(own_server, chromium):
    teacher = new_context(chromium, permissions=["clipboard-read", "clipboard-write"])
    student = new_context(chromium)
    try:
        tab = teacher.new_page()
        after_run(tab, lambda: tab.goto(f"{own_server.url}/scores?{urlencode(QUERY)}",
                                        wait_until="domcontentloaded"), timeout_ms=90_000)
        rows = SENTENCE.split()
        before = drawn(tab, rows)
        assert before, "no heatmap on the scores page"

        tab.locator("[data-testid='stTopNavSection']").filter(has_text="Labs").click()     # the top bar's menu
        link = tab.locator("a[data-testid='stTopNavDropdownLink']").filter(has_text="Share & export")
        after_run(tab, lambda: link.first.click(), timeout_ms=90_000)
        expect(tab.get_by_text("Page to share")).to_be_visible(timeout=30_000)
        code = tab.locator("[data-testid='stCode']").first
        shown = code.locator("code").inner_text().strip()
        assert shown.startswith(f"{own_server.url}/scores?") and "scores.tab=1" in shown, shown
        menu = tab.locator("a[data-testid='stTopNavDropdownLink']:visible")
        for _ in range(5):                                         # the top bar's menu must be closed: it
            if menu.count() == 0:                                  # lies over the copy button
                break
            tab.keyboard.press("Escape")
            tab.locator("h1").first.click()
            tab.wait_for_timeout(300)
        assert menu.count() == 0
        code.evaluate("e => e.scrollIntoView({block: 'center'})")  # its toolbar sits above it: clear of the top bar
        tab.wait_for_timeout(300)
        code.hover()
        # st.code's copy button: a click event on it (a pointer click can land on the sticky top bar
        # while the page settles; the handler and the clipboard are the same)
        code.locator("button").first.dispatch_event("click")
        copied = tab.evaluate("() => navigator.clipboard.readText()").strip()
        assert copied == shown
        assert tab.locator(EXCEPTION).count() == 0

        fresh = student.new_page()
        after_run(fresh, lambda: fresh.goto(copied, wait_until="domcontentloaded"), timeout_ms=90_000)
        expect(fresh.locator("h1")).to_have_text("Scores and scaling", timeout=30_000)
        box = fresh.locator("[data-testid='stSidebar']").get_by_role("textbox", name="Sentence")
        expect(box).to_have_value(SENTENCE, timeout=30_000)
        expect(fresh.locator("[data-testid='stNumberInput'] input[aria-label='d_k']")).to_have_value("3", timeout=30_000)
        after = drawn(fresh, rows)
        assert [c["texts"] for c in after] == [c["texts"] for c in before]      # the same heatmap numbers
        assert any(any(t[:1].isdigit() or t[:1] in "-−" for t in c["texts"]) for c in after)
        assert fresh.locator(EXCEPTION).count() == 0
    finally:
        teacher.close()
        student.close()


def test_training_step_walk_one_tab_at_a_time(own_server, chromium):
    ctx = new_context(chromium)
    try:
        tab = ctx.new_page()
        after_run(tab, lambda: tab.goto(f"{own_server.url}/training_step?{urlencode({'sentence': SENTENCE})}",
                                        wait_until="domcontentloaded"), timeout_ms=90_000)
        expect(tab.locator("code", has_text="mat").first).to_be_visible(timeout=30_000)   # the shared sentence
        checks = tab.get_by_text("max relative error against autograd")
        expect(checks).to_have_count(0)                      # tab 1: the loss and logits, no parameter yet
        after_run(tab, lambda: tab.get_by_role("tab", name="5 · Projection weights").click(), timeout_ms=60_000)
        expect(checks).to_have_count(6, timeout=30_000)      # W_Q, b_q, W_K, b_k, W_V, b_v
        assert all(t.startswith("✓") for t in checks.all_inner_texts())
        after_run(tab, lambda: tab.get_by_role("button", name="Next: 6 · Input X →").click(), timeout_ms=60_000)
        expect(checks).to_have_count(1, timeout=30_000)      # ∂L/∂X
        expect(tab.get_by_role("tab", name="6 · Input X")).to_have_attribute("aria-selected", "true")
        identities = tab.get_by_text("yes ✓")
        expect(identities).to_have_count(0)                  # SymPy closed: nothing derived
        after_run(tab, lambda: tab.get_by_text("SymPy: the softmax Jacobian").click(), timeout_ms=120_000)
        expect(identities).to_have_count(2, timeout=120_000)
        assert tab.locator(EXCEPTION).count() == 0
    finally:
        ctx.close()

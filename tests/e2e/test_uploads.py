"""Uploads are bad input too: a malformed vectors file gets a message naming its line, an
oversized one is refused, and in both cases the page keeps showing the last good numbers.
Then a good file is used: its words label the heatmap."""
from __future__ import annotations

import pytest

try:
    from playwright.sync_api import expect
except ImportError:            # the fixtures skip, or fail under ATTENTION_EXPLORER_REQUIRE_BROWSER=1
    expect = None

from bench._common import EXCEPTION, after_run, pick_option, wait_for_charts

GOOD = "cat 0.1 0.2 0.3\nsat 0.3 -0.1 0.0\nmat -0.2 0.4 0.1\n"
MALFORMED = "cat 0.1 0.2 0.3\nsat 0.3 oops 0.0\n"


def open_upload(tab, server, sentence: str):
    # weights=random: a small vectors file keeps too few of the training sentences to train the weights
    after_run(tab, lambda: tab.goto(f"{server.url}/embeddings?weights=random&sentence={sentence.replace(' ', '+')}",
                                    wait_until="domcontentloaded"), timeout_ms=60_000)
    sidebar = tab.locator("[data-testid='stSidebar']")
    before = [c["y"] for c in wait_for_charts(tab) if c["visible"] and c["rendered"]]
    box = sidebar.get_by_role("combobox", name="Embeddings")           # a react-aria combobox in 1.67
    pick_option(tab, box, tab.get_by_role("option", name="Upload your own"))   # open its list again if it closes
    return sidebar, before


def upload(tab, sidebar, name: str, data: bytes):
    files = sidebar.locator("[data-testid='stFileUploaderDropzoneInput']")
    after_run(tab, lambda: files.set_input_files({"name": name, "mimeType": "text/plain", "buffer": data}),
              timeout_ms=30_000)


def test_a_malformed_file_is_named_and_the_page_keeps_its_numbers(app_server, student):
    tab = student()
    sidebar, before = open_upload(tab, app_server, "the cat sat")
    upload(tab, sidebar, "vectors.txt", MALFORMED.encode())
    expect(tab.get_by_text("Line 2 ('sat'): 'oops' is not a number", exact=False).first).to_be_visible(timeout=15_000)
    expect(tab.get_by_text("Showing the last settings that worked", exact=False).first).to_be_visible()
    rows = [c["y"] for c in wait_for_charts(tab) if c["visible"] and c["rendered"]]
    assert before and before[0] in rows, (before, rows)           # the last good heatmap is still drawn
    assert tab.locator(EXCEPTION).count() == 0


def test_an_oversized_file_is_refused(app_server, student):
    tab = student()
    sidebar, _ = open_upload(tab, app_server, "the cat sat")
    big = ("cat " + " ".join(["0.123456"] * 50) + "\n") * 7_000       # about 2.4 MB, over the 2 MB limit
    assert len(big) > 2_000_000
    files = sidebar.locator("[data-testid='stFileUploaderDropzoneInput']")
    files.set_input_files({"name": "big.txt", "mimeType": "text/plain", "buffer": big.encode()})
    expect(sidebar.get_by_text("2.0MB", exact=False).first).to_be_visible(timeout=15_000)   # the uploader's own limit
    assert tab.locator(EXCEPTION).count() == 0


def test_a_good_file_labels_the_heatmap_with_its_words(app_server, student):
    tab = student()
    sidebar, _ = open_upload(tab, app_server, "the cat sat on the mat")
    upload(tab, sidebar, "vectors.txt", GOOD.encode())
    rows = [c["y"] for c in wait_for_charts(tab, lambda cs: any(c["y"] == ["cat", "sat", "mat"] for c in cs))]
    assert ["cat", "sat", "mat"] in rows, rows                     # "the", "on" are not in the file: dropped
    assert tab.locator(EXCEPTION).count() == 0



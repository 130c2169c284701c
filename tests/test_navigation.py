"""A path through everything: the Overview links every page of the navigation, every page ends with
previous / next links along it (the forward pass leads on into the next section), a mention of another
page is a link, and the positional page says where position enters under RoPE and ALiBi."""
from __future__ import annotations

import pytest

from tests.apptest_util import no_exception, open_page
from ui import nav

ORDER = nav.order()


def page_links(at) -> list[str]:
    """The url paths of the page links drawn (st.page_link), in order."""
    return [e.proto.page for e in at.get("page_link")]


def path(page_file: str) -> str:
    return nav.url_path_of(page_file)


def test_the_overview_links_every_page_of_the_navigation():
    at = open_page(nav.HOME, query={"d_k": "3"})
    no_exception(at)
    linked = set(page_links(at))
    assert linked >= {path(f) for f in ORDER if f != nav.HOME}, sorted({path(f) for f in ORDER} - linked)
    # the links carry the settings, so a link opened in a new tab shows the same numbers
    rope = next(e for e in at.get("page_link") if e.proto.page == "rope")
    assert "d_k=3" in rope.proto.query_string


def test_the_order_is_the_navigation_section_after_section():
    assert ORDER == [e[0] for _, pages in nav.SECTIONS for e in nav.existing(pages)]
    assert len(ORDER) == len(set(ORDER)) == 31


@pytest.mark.parametrize("page", [ORDER[0], "app_pages/7_multi_head.py", "app_pages/11_train.py",
                                  "app_pages/23_pytorch_mha.py", "app_pages/42_kv_cache.py",
                                  "app_pages/43_online_softmax.py", ORDER[-1]])
def test_every_page_ends_with_its_previous_and_next_page(page):
    at = open_page(page)
    no_exception(at)
    i = ORDER.index(page)
    want = ([ORDER[i - 1]] if i > 0 else []) + ([ORDER[i + 1]] if i + 1 < len(ORDER) else [])
    assert page_links(at)[-len(want):] == [path(f) for f in want]
    labels = [e.proto.label for e in at.get("page_link")][-len(want):]
    for f, label in zip(want, labels):          # crossing into another section, the link names it
        assert (nav.section_of(f) in label) == (nav.section_of(f) != nav.section_of(page)), label


def test_the_forward_pass_leads_on_into_the_next_section():
    at = open_page("app_pages/7_multi_head.py")
    nxt = at.get("page_link")[-1].proto
    assert nxt.page == path(ORDER[ORDER.index("app_pages/7_multi_head.py") + 1])
    assert nxt.label.startswith("Training ›")


def test_the_kv_cache_mention_on_multi_head_is_a_link_with_the_settings():
    at = open_page("app_pages/7_multi_head.py", query={"n_heads": "4", "n_kv_heads": "2"})
    no_exception(at)
    notice = next(e.value for e in at.info if "Grouped-query" in e.value)
    assert "[the KV cache page](./kv_cache?" in notice and "n_heads=4" in notice and "n_kv_heads=2" in notice


@pytest.mark.parametrize("query, said, unsaid", [
    ({"positional": "rope", "mask": "causal"}, "Position is **RoPE**", ["No positional encoding", "mask looks at"]),
    ({"positional": "alibi"}, "Position is **ALiBi**", ["No positional encoding", "same Q, K and V wherever"]),
    ({"positional": "none", "mask": "sliding_window"}, "The sliding window looks at positions", ["sliding_window"]),
    ({"positional": "none"}, "shuffle the words", []),
])
def test_the_positional_page_says_where_position_enters(query, said, unsaid):
    at = open_page("app_pages/2_positional.py", query=query)
    no_exception(at)
    text = "\n".join(e.value for e in list(at.markdown) + list(at.warning) + list(at.info))
    assert said in text
    for words in unsaid:
        assert words not in text, words

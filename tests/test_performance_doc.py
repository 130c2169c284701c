"""docs/performance.md is what `python bench/report.py` writes: its header, every section the generator
writes, and every page of the navigation (ui/nav.py) by its URL path. The figures themselves are
measured, not tested here."""
from __future__ import annotations

import re
from pathlib import Path

from bench import report
from bench._common import Table, all_pages

ROOT = Path(__file__).resolve().parents[1]
DOC = (ROOT / "docs" / "performance.md").read_text(encoding="utf-8")


def test_carries_the_generator_header():
    lines = DOC.splitlines()
    assert lines[0] == "# Performance"
    assert lines[2].startswith(report.HEADER)
    assert "load average (`uptime`)" in lines[2]
    assert "Quick run" not in DOC, "figures from --quick are not for committing"


def test_has_every_section_the_generator_writes():
    for prose in report.PROSE.values():
        assert prose.splitlines()[0] in DOC.splitlines()


def _rows_by_page(section_heading: str) -> set[str]:
    """The cells of the table rows under a heading, up to the next '## '."""
    part = DOC.split(section_heading, 1)[1].split("\n## ", 1)[0]
    return {cell.strip("` ") for line in part.splitlines() if line.startswith("| ") for cell in line.split("|")}


def test_names_every_page_of_the_navigation():
    paths = [p.url_path for p in all_pages()]
    assert len(paths) == len(set(paths)) >= 21
    for heading in ("## The pages", "## Reruns of every page, in one process (AppTest)",
                    "## Reruns over Streamlit's websocket protocol", "### First run of every page"):
        rows = _rows_by_page(heading)
        assert [p for p in paths if p not in rows] == [], heading


def test_both_levels_for_every_page_in_the_apptest_table():
    part = DOC.split("## Reruns of every page, in one process (AppTest)", 1)[1].split("\n## ", 1)[0]
    rows = {(m.group(1), m.group(2)) for m in re.finditer(r"^\| (\S+) \| (\w+) \|", part, flags=re.M)}
    for page in all_pages():
        for level in ("defaults", "largest"):
            assert (page.url_path, level) in rows


def test_no_history():
    assert not re.search(r"\bissue \d+|\bbefore → after\b|\bsession\b", DOC, flags=re.I)


def test_the_page_index_and_the_markdown_writer():
    """What the generator writes without measuring anything: the page index from ui/nav.py."""
    index = report.page_index()
    assert [r[2] for r in index.rows] == [f"`{p.url_path}`" for p in all_pages()]
    md = Table("T", ["a", "b"], [["x|y", 1]], ["note"]).markdown()
    assert md == "T\n\n| a | b |\n|---|---|\n| x\\|y | 1 |\n\nnote"


def test_one_section_is_rewritten_alone(tmp_path):
    """bench/real.py --write: its section replaced where it is, or put before the room's; the rest untouched."""
    doc = tmp_path / "performance.md"
    doc.write_text("# P\n\n## A\n\na\n\n## A class in one room\n\nroom\n", encoding="utf-8")
    report.write_section("## A real model", "## A real model\n\nfirst\n", doc=doc)
    assert doc.read_text() == "# P\n\n## A\n\na\n\n## A real model\n\nfirst\n\n## A class in one room\n\nroom\n"
    report.write_section("## A real model", "## A real model\n\nsecond", doc=doc)
    assert doc.read_text() == "# P\n\n## A\n\na\n\n## A real model\n\nsecond\n\n## A class in one room\n\nroom\n"
    report.write_section("## Z", "## Z\n\nz", before="## nowhere", doc=doc)
    assert doc.read_text().endswith("room\n\n## Z\n\nz\n")

"""The docs name real files: every repository path written in `backticks` in README.md and docs/*.md
exists, and every relative link resolves. When a module moves, this fails until the docs follow it."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
TOP = ("attention_core", "ui", "app_pages", "bench", "tests", "scripts", "docs", "deploy", "data", ".streamlit",
       ".ci")
PATH = re.compile(r"`((?:%s)/[\w./*-]*)(?:::\w+)?`" % "|".join(re.escape(t) for t in TOP))


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_named_paths_exist(doc):
    text = doc.read_text(encoding="utf-8")
    missing = []
    for path in PATH.findall(text):
        path = path.rstrip(".")
        if "*" in path:
            if not list(ROOT.glob(path)):
                missing.append(path)
        elif not (ROOT / path).exists():
            missing.append(path)
    assert missing == [], f"{doc.name} names paths that do not exist"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_relative_links_resolve(doc):
    text = doc.read_text(encoding="utf-8")
    links = [t.split("#")[0] for t in re.findall(r"\]\(([^)\s]+)\)", text) if not re.match(r"[a-z]+:", t)]
    assert [t for t in links if t and not (doc.parent / t).exists()] == []

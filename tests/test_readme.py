"""The README a newcomer reads in a minute: short, its links resolve, its notebook example runs as
written (a doctest), its commands are the ones CI and requirements.txt use, its page count is the
navigation's."""
from __future__ import annotations

import doctest
import re
from pathlib import Path

from bench._common import sections

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8}


def blocks(lang: str) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```", README, flags=re.M | re.S)


def test_at_most_100_lines():
    assert len(README.splitlines()) <= 100


def test_links_and_images_resolve():
    targets = re.findall(r"\]\(([^)\s]+)\)", README)
    assert targets
    local = [t.split("#")[0] for t in targets if not re.match(r"[a-z]+://", t)]
    assert [t for t in local if not (ROOT / t).exists()] == []


def test_the_screenshot_is_small():
    for image in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", README):
        assert (ROOT / image).stat().st_size < 100_000, image


def test_the_notebook_example_runs(tmp_path, monkeypatch):
    """The python block is a doctest: every line runs and every shown value is checked."""
    (example,) = blocks("python")
    monkeypatch.chdir(tmp_path)                      # no help from the repository as the cwd
    test = doctest.DocTestParser().get_doctest(example, {}, "README.md", "README.md", 0)
    assert len(test.examples) >= 5
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    assert runner.summarize(verbose=False).failed == 0


def test_the_test_command_is_what_ci_runs():
    assert any(b.strip() == "bash scripts/test.sh" for b in blocks("bash"))
    assert re.search(r"^bash scripts/test\.sh\b", (ROOT / ".ci" / "run").read_text(), flags=re.M)


def test_ci_follows_the_readme_as_a_newcomer_does():
    """.ci/run runs the README's setup lines as written (the venv inside the checkout, PyTorch's CPU wheel, then
    requirements.txt; its `streamlit run app.py` aside), in order, before the test command: a README whose steps
    break on a fresh clone breaks CI."""
    (setup,) = [b for b in blocks("bash") if "streamlit run app.py" in b]
    steps = [line.split("#")[0].strip().removesuffix("&& streamlit run app.py").strip() for line in setup.splitlines()]
    assert len(steps) == 3 and all(steps)
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()
          if line.strip() and not line.lstrip().startswith("#")]
    assert [line for line in ci if line in steps] == steps
    test_command = next(i for i, line in enumerate(ci) if re.match(r"bash scripts/test\.sh\b", line))
    assert max(ci.index(step) for step in steps) < test_command


def test_the_app_command_uses_the_pinned_cpu_torch():
    (setup,) = [b for b in blocks("bash") if "streamlit run app.py" in b]
    assert "python -m venv .venv && . .venv/bin/activate" in setup
    assert "pip install -r requirements.txt && streamlit run app.py" in setup
    torch_pin = next(line.split("#")[0].strip() for line in (ROOT / "requirements.txt").read_text().splitlines()
                     if line.startswith("torch"))
    assert f"pip install {torch_pin} --index-url https://download.pytorch.org/whl/cpu" in setup


def test_page_and_section_counts_are_the_navigation():
    nav = sections()
    m = re.search(r"(\d+) pages in (\w+) sections", README)
    assert m, "the README says how many pages and sections there are"
    assert int(m.group(1)) == sum(len(pages) for _, pages in nav)
    assert NUMBERS[m.group(2)] == len(nav)
    for section, _ in nav:
        assert f"**{section}**" in README


def test_no_history():
    assert not re.search(r"\bissue \d+|\bsession\b|\bbefore → after\b", README, flags=re.I)
    assert not re.search(r"`[0-9a-f]{7,40}`", README)

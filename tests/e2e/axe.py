"""axe-core (Deque's accessibility engine, the npm package `axe-core`) in the app's pages, in chromium.

The engine comes from its npm package, installed by scripts/test.sh (`npm ci`: package.json and its lock at the
repository's root; never a copy in the repository), found at node_modules/axe-core/axe.min.js or where
ATTENTION_EXPLORER_AXE names. Without it the checks skip, unless ATTENTION_EXPLORER_REQUIRE_AXE=1 (set by .ci/run):
then they fail.

`violations(tab)` injects it into the page (once per document) and runs it with the WCAG 2.0 and 2.1 A and AA
rules (TAGS) and the headings' outline (OUTLINE). What Streamlit itself draws and the app cannot change is in
STREAMLIT (rule, the CSS selector of the Streamlit element, the upstream issue): nodes of that rule inside that
element, and only those, are left out; docs/accessibility.md lists the same entries (tests/test_accessibility.py
checks it). Everything else is the app's and must be 0.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
AXE_JS = Path(os.environ.get("ATTENTION_EXPLORER_AXE", ROOT / "node_modules" / "axe-core" / "axe.min.js"))
REQUIRE_AXE = os.environ.get("ATTENTION_EXPLORER_REQUIRE_AXE") == "1"
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
# And two of axe's best-practice rules, for the headings' outline WCAG 1.3.1 and 2.4.6 ask for in words: one h1 a
# page, and no level skipped.
OUTLINE = ["page-has-heading-one", "heading-order"]

# Streamlit's own widgets and chrome, which the app cannot change: (axe rule id, a CSS selector of the Streamlit
# element the node is inside, the upstream issue). A node is left out only when its rule is the entry's and it lies
# inside an element the entry's selector matches; any other node of that rule still counts.
STREAMLIT: list[tuple[str, str, str]] = [
    # On a narrow screen st.navigation's top bar folds into the sidebar as one <ul> whose section headers are <div>s
    # and whose links are <li>s inside those <div>s (not children of the list).
    ("list", "[data-testid='stSidebarNavItems']", "streamlit/streamlit#8399"),
    ("listitem", "[data-testid='stSidebarNavItems']", "streamlit/streamlit#8399"),
]


def require_axe() -> Path:
    if AXE_JS.is_file():
        return AXE_JS
    why = f"axe-core is not installed ({AXE_JS} is missing: `npm ci` at the repository's root, scripts/test.sh does)"
    if REQUIRE_AXE:
        pytest.fail(f"ATTENTION_EXPLORER_REQUIRE_AXE=1 but {why}", pytrace=False)
    pytest.skip(why)


RUN = """async ([tags, outline, skip]) => {
  const result = await axe.run(document, {runOnly: {type: 'tag', values: tags}, resultTypes: ['violations'],
                                          rules: Object.fromEntries(outline.map(r => [r, {enabled: true}])),
                                          elementRef: true});
  return result.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.map(n => ({target: n.target.map(t => Array.isArray(t) ? t.join(' >>> ') : t).join(' '),
                               html: n.html.slice(0, 300), summary: (n.failureSummary || '').slice(0, 400),
                               streamlit: skip.findIndex(([rule, sel]) => rule === v.id && n.element
                                                          && n.element.closest && !!n.element.closest(sel))}))}));
}"""


def violations(tab) -> list[dict]:
    """Every WCAG 2.1 A/AA violation on the page now, as [{id, impact, help, nodes: [{target, html, summary,
    streamlit}]}]: `streamlit` is the index of the STREAMLIT entry the node falls under, or -1 (the app's)."""
    if not tab.evaluate("() => typeof window.axe !== 'undefined'"):
        tab.add_script_tag(path=str(require_axe()))
    settle(tab)
    return tab.evaluate(RUN, [TAGS, OUTLINE, [[rule, sel] for rule, sel, _ in STREAMLIT]])


SETTLE = """() => new Promise(done => {
  let last = performance.now();
  const seen = new MutationObserver(() => { last = performance.now(); });
  seen.observe(document.body, {childList: true, subtree: true, characterData: true});
  const start = performance.now();
  const wait = () => {
    if (performance.now() - last < 150 && performance.now() - start < 3000) return setTimeout(wait, 50);
    seen.disconnect();
    if (window.__a11y) window.__a11y();
    requestAnimationFrame(() => requestAnimationFrame(done));
  };
  wait();
})"""


def settle(tab) -> None:
    """The page has held still (no change for 150 ms, at most 3 s) and the app's own accessibility pass
    (ui/raw_html.py A11Y_SCRIPT: focusable scroll regions, the headings' outline) has run on it as it is now."""
    tab.evaluate(SETTLE)


# The page's h1s a reader can reach (the title; one a page): their texts.
H1 = """() => [...document.querySelectorAll('h1')].filter(h => h.checkVisibility())
                  .map(h => (h.innerText || '').trim())"""


def app_violations(found: list[dict]) -> list[dict]:
    """The violations minus the nodes inside Streamlit's elements listed in STREAMLIT (a rule whose every node is
    listed drops)."""
    out = []
    for v in found:
        nodes = [n for n in v["nodes"] if n["streamlit"] < 0]
        if nodes:
            out.append(dict(v, nodes=nodes))
    return out


def count(found: list[dict]) -> int:
    """Violating nodes (axe's count of a page's problems)."""
    return sum(len(v["nodes"]) for v in found)


def report(found: list[dict], where: str) -> str:
    lines = [f"axe-core ({', '.join(TAGS)}) at {where}: {count(found)} violating nodes in the app's content"]
    for v in found:
        lines.append(f"  [{v['impact']}] {v['id']}: {v['help']}")
        for n in v["nodes"][:8]:
            lines.append(f"      {n['target']}\n        {n['html'][:200]}\n        {n['summary'][:300]}")
        if len(v["nodes"]) > 8:
            lines.append(f"      … and {len(v['nodes']) - 8} more")
    return "\n".join(lines)

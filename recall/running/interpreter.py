"""`{python}`: the harness's interpreter and packages, never the harness's own code.

A finder written in Python runs from the tree under test (`PYTHONPATH={tree}`). The
harness's environment may hold an editable install of recall, whose import hook (a `.pth`
file of setuptools') serves any module the tree lacks from the working tree: a base
without `recall/finders/reference/` would then score the candidate's code and look fine.
So `{python}` is a virtual environment of the same interpreter whose site-packages names
the harness's site-packages folders in a `.pth` file of its own: their packages import,
but the `.pth` files inside them, the editable hook among them, are never run.
"""

from __future__ import annotations

import hashlib
import os
import site
import sys
import venv
from pathlib import Path

from recall.cache import FolderEntry
from recall.errors import RecallError

KIND = "interpreters"
MARKER = ".recall-made"
DEPS_PTH = "recall-harness-packages.pth"
SUPPORTED = (3, 11)  # the oldest Python recall runs on (pyproject's requires-python)


def package_folders() -> list[str]:
    """The harness's site-packages folders, in import order (never its source folder)."""
    folders = list(site.getsitepackages())
    if site.ENABLE_USER_SITE:
        folders.append(site.getusersitepackages())
    return [f for f in dict.fromkeys(folders) if os.path.isdir(f)]


def base_executable() -> str:
    """The interpreter itself, behind any virtual environment the harness runs in."""
    return os.path.realpath(getattr(sys, "_base_executable", "") or sys.executable)


def interpreter_key() -> str:
    """Changes with the interpreter or the package folders it is given."""
    parts = [base_executable(), sys.version, *package_folders()]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:24]


def finder_python(cache: Path) -> str:
    """The path of the `{python}` interpreter, made once per interpreter in the cache."""
    entry = FolderEntry(cache, KIND, interpreter_key(), MARKER)
    # a whole entry whose base interpreter is gone (its link dangles) is made again
    made = entry.get(_make, base_executable(), lambda path: (path / "bin" / "python").exists())
    return str(made / "bin" / "python")


def _make(target: Path) -> None:
    """A venv without pip (its paths are relative, so it may be renamed once made) whose
    site-packages lists the harness's package folders."""
    venv.EnvBuilder(with_pip=False, symlinks=True, clear=True).create(target)
    lib = target / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}"
    lines = "".join(f"{folder}\n" for folder in package_folders())
    (lib / "site-packages" / DEPS_PTH).write_text(lines, encoding="utf-8")


def cache_of(python: str) -> Path:
    """The cache a `{python}` of finder_python was made in (<cache>/interpreters/<key>/
    bin/python): how a step that runs a finder, given only its binary, finds the cache
    for what it installs there (a node engine's packages)."""
    made = Path(python).parent.parent
    if made.parent.name != KIND or not (made / MARKER).is_file():
        raise RecallError(f"{python}: not an interpreter made in recall's cache")
    return made.parent.parent

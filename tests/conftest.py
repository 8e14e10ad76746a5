"""Shared fixtures: real git repositories in tmp_path and the real mirrored corpora."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import git
import pytest

from recall.corpus import Checkout, Pin, fetch, load_pins
from recall.errors import RecallError
from recall.symbols import checkout_symbols, ctags_version, distinct_names

ROOT = Path(__file__).resolve().parents[1]

# A finder script for fixture finder repos: names holding the query as a subsequence,
# shortest first, one per line; and the recall.toml that runs it.
SUBSEQUENCE_FINDER = r"""
import sys
query, names = sys.argv[1].lower(), open(sys.argv[2]).read().splitlines()
def subseq(q, n):
    it = iter(n.lower())
    return all(c in it for c in q)
hits = sorted((n for n in names if subseq(query, n)), key=lambda n: (len(n), n))
print("\n".join(hits))
"""
SUBSEQUENCE_ENGINE = """[engine]
bin = ["{python}", "{tree}/finder.py"]
query = ["{bin}", "{query}", "{names}"]
output = "lines"
"""


def mirror_dir() -> Path | None:
    for candidate in (os.environ.get("RECALL_MIRROR"), ROOT.parent / "shared" / "corpora"):
        if candidate and (Path(candidate) / "github.com").is_dir():
            return Path(candidate)
    return None


needs_mirror = pytest.mark.skipif(
    mirror_dir() is None, reason="the offline corpus mirrors (../shared/corpora) are absent"
)


def _ctags_works() -> bool:
    try:
        ctags_version()
    except RecallError:
        return False
    return True


# What a test needs beyond Python and git, each skip saying what is missing: make test
# passes on a machine with only the README's prerequisites, and CI installs the rest.
HAVE_CTAGS = _ctags_works()
needs_ctags = pytest.mark.skipif(
    not HAVE_CTAGS, reason="Universal Ctags is not installed (apt-get install universal-ctags)"
)


def needs_tool(program: str, package: str | None = None) -> pytest.MarkDecorator:
    """Skip unless program is on PATH (package: the Debian package that brings it)."""
    return pytest.mark.skipif(
        shutil.which(program) is None,
        reason=f"{program} is not installed (apt-get install {package or program}; "
        ".ci/run installs it)",
    )


needs_chromium = needs_tool("chromium")


def make_repo(path: Path, files: dict[str, str], message: str = "init") -> git.Repo:
    """A real git repository with the given files committed."""
    repo = git.Repo.init(path, initial_branch="main")
    with repo.config_writer() as config:
        config.set_value("user", "name", "test")
        config.set_value("user", "email", "test@example.com")
    commit_files(repo, files, message)
    return repo


def commit_files(repo: git.Repo, files: dict[str, str], message: str) -> str:
    root = Path(repo.working_tree_dir)
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    repo.index.add(list(files))
    return repo.index.commit(message).hexsha


def run_recall(*args: str, cwd: Path = ROOT, env: dict | None = None):
    import subprocess

    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "recall", *args], cwd=cwd, env=full_env,
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip


@pytest.fixture(scope="session")
def real_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="session")
def pins() -> dict[str, Pin]:
    return load_pins(ROOT / "corpus.json")


@pytest.fixture(scope="session")
def gin(real_cache: Path, pins: dict[str, Pin]) -> Checkout:
    mirror = mirror_dir()
    if mirror is None:
        pytest.skip("the offline corpus mirrors (../shared/corpora) are absent")
    if not HAVE_CTAGS:
        pytest.skip("Universal Ctags is not installed (apt-get install universal-ctags)")
    return fetch(pins["gin"], real_cache, mirror)


@pytest.fixture(scope="session")
def all_names(real_cache: Path, pins: dict[str, Pin]) -> dict[str, list[str]]:
    mirror = mirror_dir()
    if mirror is None:
        pytest.skip("the offline corpus mirrors (../shared/corpora) are absent")
    if not HAVE_CTAGS:
        pytest.skip("Universal Ctags is not installed (apt-get install universal-ctags)")
    names = {}
    for pin in pins.values():
        checkout = fetch(pin, real_cache, mirror)
        names[pin.name] = distinct_names(checkout_symbols(checkout, real_cache))
    return names


@pytest.fixture(scope="session")
def gin_source(real_cache: Path, gin: Checkout):
    """gin's names as the query generator sees them (with scope owners)."""
    from recall.derive import name_source

    return name_source(checkout_symbols(gin, real_cache), gin.pin.language)


@pytest.fixture(scope="session")
def subsequence_bin(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The fixture finder as a hand-built binary (an executable script) and an engine file
    that runs it as `--bin`: cached by the script's content, as a real finder's build is,
    with nothing to install."""
    folder = tmp_path_factory.mktemp("subsequence-bin")
    script = folder / "finder"
    script.write_text(f"#!{sys.executable}\n{SUBSEQUENCE_FINDER}")
    script.chmod(0o755)
    engine = folder / "engine.toml"
    engine.write_text(
        '[engine]\nbin = ["/bin/false"]\nquery = ["{bin}", "{query}", "{names}"]\n'
        'output = "lines"\n'
    )
    return engine, script

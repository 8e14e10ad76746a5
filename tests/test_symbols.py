"""ctags as the harness runs it: with its own options only, in an environment of its own,
and known by its program's content, so the names a corpus has are the same on every
machine with the same ctags, and another ctags is another key."""

import os
import shutil
from pathlib import Path

import pytest
from conftest import ROOT, needs_ctags

from recall.finders.engine import resolve_engine
from recall.inputs.symbols import (
    cached_symbols,
    ctags_identity,
    ctags_version,
    distinct_names,
    extract,
    symbols_key,
)
from recall.running import results_cache as saved

TREE = "0" * 40
# One regex line of configuration: every `#tag NAME` comment becomes a definition.
REGEX = r"--regex-Python=/^#tag ([a-z]+)/\1/Y,extra/"


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    root.mkdir()
    (root / "a.py").write_text("def foo():\n    pass\n#tag bar\n")
    return root


def _configure(folder: Path) -> None:
    """An option file ctags would read from folder: `.ctags.d`, `ctags.d` and the XDG one."""
    for sub in (".ctags.d", "ctags.d", ".config/ctags"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
        (folder / sub / "x.ctags").write_text(REGEX + "\n")


@needs_ctags
def test_no_option_file_of_the_user_or_the_corpus_changes_the_names(corpus, tmp_path, monkeypatch):
    """Issue 31 class 4: ~/.ctags.d (and $XDG_CONFIG_HOME/ctags, ./.ctags.d, ./ctags.d in the
    corpus root, which is ctags's working folder, and in the caller's) adds no name."""
    assert distinct_names(extract(corpus, "python")) == ["foo"]
    home = tmp_path / "home"
    for folder in (home, corpus, tmp_path):
        _configure(folder)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("CTAGS", REGEX)
    monkeypatch.chdir(tmp_path)
    assert distinct_names(extract(corpus, "python")) == ["foo"]


def _wrapper(folder: Path) -> Path:
    """A ctags earlier on PATH that adds one regex to every call: the same version string,
    other names."""
    real = shutil.which("ctags")
    folder.mkdir()
    script = folder / "ctags"
    script.write_text(f'#!/bin/sh\nfirst="$1"; shift\nexec {real} "$first" \'{REGEX}\' "$@"\n')
    script.chmod(0o755)
    return folder


@needs_ctags
def test_another_ctags_program_of_the_same_version_is_another_key(corpus, tmp_path, monkeypatch):
    """The symbols key (and so the prune's idea of a live entry), and the results and
    ceiling keys, hold the program's content: a wrapper script that reports the same
    version but lists more names misses the entries the real ctags made."""
    cache = tmp_path / "cache"
    before = ctags_identity()
    assert distinct_names(cached_symbols(corpus, "python", TREE, cache)) == ["foo"]
    engine = resolve_engine("fzf", ROOT)
    key = saved.run_key("file:x", engine, {"pins": {}}, 30.0)
    monkeypatch.setenv("PATH", f"{_wrapper(tmp_path / 'bin')}:{os.environ['PATH']}")
    assert distinct_names(cached_symbols(corpus, "python", TREE, cache)) == ["bar", "foo"]
    assert ctags_version() == before["version"]
    after = ctags_identity()
    assert after["sha256"] != before["sha256"] and after["options"] == before["options"]
    assert symbols_key(TREE, "python", after) != symbols_key(TREE, "python", before)
    assert saved.run_key("file:x", engine, {"pins": {}}, 30.0)["ctags"] != key["ctags"]


@needs_ctags
def test_ctags_runs_with_its_options_first_and_the_identity_says_which():
    identity = ctags_identity()
    assert identity["options"][0] == "--options=NONE"
    assert identity["version"] == ctags_version() and len(str(identity["sha256"])) == 64

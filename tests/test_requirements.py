"""What an engine needs on this machine (recall/finders/requirements.py): the programs its argv
starts from PATH and what they need, the modules {python} must import, and the command
that installs each missing part."""

import os
import shutil
import sys
from pathlib import Path

from conftest import ROOT

from recall.finders.engine import load_preset
from recall.finders.requirements import _missing_modules, engine_needs, missing_parts, peer_pins


def _cut_path(tmp_path: Path, *programs: str) -> str:
    """A PATH of one folder holding only the named programs of this machine."""
    bin_dir = tmp_path / "-".join(("bin", *programs))
    bin_dir.mkdir()
    for program in programs:
        os.symlink(shutil.which(program), bin_dir / program)
    return str(bin_dir)


def test_gopls_without_go_is_missing_go_and_says_why(tmp_path, monkeypatch):
    only_gopls, both = _cut_path(tmp_path, "gopls"), _cut_path(tmp_path, "gopls", "go")
    monkeypatch.setenv("PATH", only_gopls)
    values = {"tree": str(ROOT), "python": sys.executable}
    (missing,) = missing_parts(load_preset("gopls"), sys.executable, values)
    assert (missing.detail, missing.fix) == (
        "not on PATH: go (gopls needs go)",
        "apt-get install golang-go",
    )
    monkeypatch.setenv("PATH", both)
    assert missing_parts(load_preset("gopls"), sys.executable, values) == []


def test_the_reference_finder_without_a_c_compiler_is_missing_cc(tmp_path, monkeypatch):
    # it compiles its kernel on first use: a run refuses up front, as the doctor says
    with_cc = _cut_path(tmp_path, "cc")
    monkeypatch.setenv("PATH", str(tmp_path))
    values = {"tree": str(ROOT), "python": sys.executable}
    (missing,) = missing_parts(load_preset("reference"), sys.executable, values)
    assert (missing.detail, missing.fix) == ("not on PATH: cc", "apt-get install gcc")
    monkeypatch.setenv("PATH", with_cc)
    assert missing_parts(load_preset("reference"), sys.executable, values) == []


def test_a_language_server_package_is_named_with_its_pinned_version():
    assert engine_needs(load_preset("jedi-lsp")).modules == ("jedi_language_server",)
    assert engine_needs(load_preset("basedpyright")).modules == ("basedpyright",)
    assert engine_needs(load_preset("frizbee")).modules == ("frizbee",)
    assert engine_needs(load_preset("gopls")).programs == ("gopls", "go")
    pinned = peer_pins().get("jedi-language-server")
    missing = _missing_modules(["jedi_language_server"], "/x/python")
    assert missing.detail == "/x/python cannot import jedi_language_server"
    assert pinned == "jedi-language-server==0.47.0"  # the peers extra's pin
    assert missing.fix == f"{sys.executable} -m pip install 'jedi-language-server==0.47.0'"

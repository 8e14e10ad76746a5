"""ctags as the harness runs it: with its own options only, in an environment of its own,
and known by its program's content, so the names a corpus has are the same on every
machine with the same ctags, and another ctags is another key."""

import os
import shutil
from pathlib import Path

import pytest
from conftest import ROOT, needs_ctags
from helpers import DEEP, tiny_pin

from recall.cache import keep_file
from recall.finders.engine import resolve_engine
from recall.inputs import symbols
from recall.inputs.corpus import fetch
from recall.inputs.symbols import (
    cached_symbols,
    checkout_symbols,
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


@needs_ctags
def test_a_c_corpus_headers_are_read_as_c_with_their_macros_structs_and_fields(tmp_path):
    """docs/queries.md: ctags maps `.h` to C++ alone, and a C project's structs, fields and
    macros live in its headers (redis's server.h); a C corpus reads them as C."""
    (tmp_path / "server.h").write_text(
        "#define PROTO_IOBUF_LEN 1024\ntypedef struct client {\n    int querybuf_peak;\n} client;\n"
    )
    (tmp_path / "server.c").write_text("int processCommand(void) { return 0; }\n")
    names = distinct_names(extract(tmp_path, "c"))
    assert names == ["PROTO_IOBUF_LEN", "client", "processCommand", "querybuf_peak"]
    kinds = {s.name: s.kind for s in extract(tmp_path, "c")}
    assert kinds["PROTO_IOBUF_LEN"] == "macro" and kinds["querybuf_peak"] == "member"


@needs_ctags
def test_a_java_package_clause_is_no_name_but_fields_and_enum_constants_are(tmp_path):
    (tmp_path / "Mode.java").write_text(
        "package org.apache.commons.lang3;\n"
        "public enum Mode { FAST_MODE; private int widthLimit; }\n"
    )
    assert distinct_names(extract(tmp_path, "java")) == ["FAST_MODE", "Mode", "widthLimit"]


def test_the_symbols_key_holds_the_rule_of_its_language(monkeypatch):
    """A cache of C names listed before headers were read as C is never read again."""
    ctags = {"version": "6", "sha256": "0" * 64, "options": []}
    now = symbols_key(TREE, "c", ctags), symbols_key(TREE, "java", ctags)
    monkeypatch.setattr(symbols, "_LANGUAGE_OPTIONS", {})
    monkeypatch.setattr(symbols, "_DROPPED_KINDS", {})
    assert symbols_key(TREE, "c", ctags) != now[0]
    assert symbols_key(TREE, "java", ctags) != now[1]


@needs_ctags
def test_a_javascript_function_property_in_a_call_is_a_method_and_nothing_anonymous_is_a_name(
    tmp_path,
):
    """docs/queries.md: jQuery defines its API as `jQuery.extend({ Deferred: function ...})`,
    which ctags's parser does not tag, and tags every anonymous function as
    `AnonymousFunction<hex>`, which no one types."""
    (tmp_path / "deferred.js").write_text(
        "jQuery.extend( {\n\tDeferred: function( func ) {\n\t\treturn func;\n\t}\n} );\n"
        "[ 1 ].forEach( function( n ) { var seen = n; } );\n"
    )
    kinds = {s.name: s.kind for s in extract(tmp_path, "javascript")}
    assert kinds.get("Deferred") == "method"
    assert not [name for name in kinds if name.startswith("Anonymous")]


@needs_ctags
def test_a_name_inside_an_anonymous_c_struct_has_no_owner(tmp_path):
    (tmp_path / "conn.h").write_text(
        "typedef enum {\n    CONN_STATE_CLOSED\n} ConnectionState;\n"
        "struct config {\n    int port;\n};\n"
    )
    scopes = {s.name: s.scope for s in extract(tmp_path, "c")}
    assert scopes == {
        "CONN_STATE_CLOSED": "",
        "ConnectionState": "",
        "config": "",
        "port": "config",
    }


@needs_ctags
def test_a_kotlin_corpus_has_no_package_lambda_or_local_as_a_name_but_its_properties(tmp_path):
    """docs/queries.md: ctags tags a Kotlin lambda as a method `<lambda>`, its parameters as
    methods inside it, a function's `val`s as constants, and the package clause of every
    file: none is a definition anyone navigates to. A class's property is."""
    (tmp_path / "Clock.kt").write_text(
        "package okio\n\n"
        "object WasiClock {\n"
        "  val nanosPerSecond = 1_000_000_000L\n"
        "  fun now(): Long {\n"
        "    val returnPointer = 8\n"
        "    withScopedMemoryAllocator { allocator ->\n"
        "      val errno = allocator.allocate(returnPointer)\n"
        "    }\n"
        "    return 0L\n"
        "  }\n"
        "}\n"
    )
    scopes = {s.name: s.scope for s in extract(tmp_path, "kotlin")}
    assert scopes == {
        "WasiClock": "okio",
        "nanosPerSecond": "okio.WasiClock",
        "now": "okio.WasiClock",
    }


@needs_ctags
def test_a_lua_function_is_named_by_its_last_part_owned_by_its_table_and_no_index_is_a_name(
    tmp_path,
):
    """docs/queries.md: ctags names a Lua function by its whole table path; the name is the
    last part (owned by the table before it), and a function stored at a table index
    (`mod[k]`) has no name anyone types."""
    (tmp_path / "actions.lua").write_text(
        "local actions = {}\n"
        "function actions.move_selection_next(bufnr) end\n"
        "function histories.History:get_next(line) end\n"
        "local function get_term_id(win) end\n"
        "function mod[k](...) end\n"
        "return actions\n"
    )
    scopes = {s.name: s.scope for s in extract(tmp_path, "lua")}
    assert scopes == {
        "move_selection_next": "actions", "get_next": "histories.History", "get_term_id": "",
    }  # fmt: skip


def test_a_symbols_cache_entry_of_the_wrong_shape_is_a_warning_and_a_rerun(tmp_path, capsys):
    pin = tiny_pin(tmp_path)
    cache = tmp_path / "cache"
    checkout = fetch(pin, cache)
    good = checkout_symbols(checkout, cache)
    (entry,) = (cache / "symbols").iterdir()
    for content in (b'{"abcde": 1}', b'[["a.py", "1", "x", "f", ""]]', b"[5]", DEEP):
        keep_file(entry, content)  # its digest holds: the shape is what is wrong
        assert checkout_symbols(checkout, cache) == good
        err = capsys.readouterr().err
        assert err.startswith(f"recall: warning: ignoring corrupt symbols cache entry {entry}")
    entry.write_bytes(entry.read_bytes().replace(b'"alpha_function"', b'"omega_function"'))
    assert checkout_symbols(checkout, cache) == good  # edited on disk: dropped, listed again
    assert "does not match its digest" in capsys.readouterr().err

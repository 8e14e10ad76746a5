import re

import pytest

from recall.errors import RecallError
from recall.finders.engine import (
    QueryArgv,
    build_env,
    expand,
    finder_env,
    load_preset,
    parse_engine,
    preset_names,
)

MINIMAL = b'[engine]\nbin = ["f"]\nquery = ["{bin}", "{query}"]\n'


def test_every_preset_loads():
    assert set(preset_names()) >= {"reference", "fzf", "fzy", "rq"}
    for name in preset_names():
        assert load_preset(name).query


def test_bin_splices_and_placeholders_fill():
    engine = parse_engine(MINIMAL, "e.toml")
    argv = expand(engine.query, {"query": "a b; $x"}, ["py", "-m", "f"])
    assert argv == ["py", "-m", "f", "a b; $x"]


def test_a_prepared_query_argv_fills_as_expand_does_and_leaves_braces_in_values_alone():
    template = ("{bin}", "--db={db}/x", "{query}", "-n", "{limit}", "q={query}&db={db}", "{corpus}")
    values = {"db": "/tmp/{query}", "corpus": "/c/{limit}"}  # a path may hold braces
    prepared = QueryArgv(template, values, ["py", "-m", "f"])
    per_query = {"query": "a {db} b", "limit": "0"}
    assert prepared.fill("a {db} b", "0") == expand(
        template, {**values, **per_query}, ["py", "-m", "f"]
    )
    assert prepared.fill("a {db} b", "0") == [
        "py", "-m", "f", "--db=/tmp/{query}/x", "a {db} b", "-n", "0",
        "q=a {db} b&db=/tmp/{query}", "/c/{limit}",
    ]  # fmt: skip


_Q = b'[engine]\nbin = ["f"]\nquery = ["{bin}", "{query}"]\n'


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (b'[engine]\nbin = ["f"]\nquery = ["{query}"]\nbogus = 1\n', "unknown key 'bogus'"),
        (b'[engine]\nbin = ["f"]\n', "missing key 'query'"),
        (b'[engine]\nbin = "f"\nquery = ["{query}"]\n', "bin must be a list of strings"),
        (b'[engine]\nbin = ["f"]\nquery = ["{nope}"]\n', "unknown placeholder {nope}"),
        (b'[engine]\nbin = ["f"]\nquery = ["x"]\n', "must contain the placeholder {query}"),
        (b'[engine]\nbin = ["{query}"]\nquery = ["{query}"]\n', "bin: {query} is not available"),
        (b'[engine]\nbin = ["f"]\nquery = ["{query}"]\noutput = "xml"\n', "output must be"),
        (b"[engine\n", "not valid TOML"),
        (_Q + b'pass_env = "X"\n', "pass_env must be a list of strings"),
        (_Q + b'pass_env = ["A=B"]\n', "pass_env: name 'A=B' must be non-empty"),
        (_Q + b'pass_env = ["TZ"]\n', "pass_env: TZ is set by the harness"),
        (_Q + b'pass_env = ["X"]\nenv = { X = "1" }\n', "X is in both env and pass_env"),
        (_Q + b'env_remove = ["X"]\n', "unknown key 'env_remove'"),
        (_Q + b'inputs = [""]\n', "inputs: an empty path names no file"),
        (_Q + b'toolchain = ["rustc"]\n', "toolchain must be a list of argv lists"),
        (_Q + b"toolchain = [[]]\n", "toolchain must be a list of argv lists"),
        (_Q + b'compilers = "cc"\n', "compilers must be a list of strings"),
        (_Q + b'compilers = ["/usr/bin/cc"]\n', "compilers: each must be a program's name"),
        (_Q + b'compilers = [""]\n', "compilers: each must be a program's name"),
    ],
)
def test_bad_engine_names_file_and_key(text, message):
    with pytest.raises(RecallError, match=f"e.toml: .*{message}"):
        parse_engine(text, "e.toml")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('kind = "zz"\nbin = ["x"]\nquery = ["{query}"]', "kind must be one of process"),
        ('kind = 3\nbin = ["x"]\nquery = ["{query}"]', "kind must be one of process"),
        ('languages = ["klingon"]\nbin = ["x"]\nquery = ["{query}"]', "not a corpus language"),
        ('languages = []\nbin = ["x"]\nquery = ["{query}"]', "non-empty list of strings"),
    ],
)
def test_a_kind_or_languages_that_cannot_be_served_names_the_key(text, message):
    with pytest.raises(RecallError, match=message):
        parse_engine(f"[engine]\n{text}\n".encode(), "e.toml")


def test_languages_say_which_corpora_an_engine_serves():
    engine = parse_engine(
        b'[engine]\nlanguages = ["python"]\nbin = ["x"]\nquery = ["{query}"]\n', "e"
    )
    assert (engine.kind, engine.languages) == ("process", ("python",))
    assert parse_engine(b'[engine]\nbin = ["x"]\nquery = ["{query}"]\n', "e").languages == ()


def test_the_declared_environment_is_the_fixed_base_pass_env_and_env_only():
    """Class 1: nothing of the caller's but PATH and the pass_env names reaches a finder;
    a build gets PATH, HOME, TMPDIR and the pass_env names."""
    engine = parse_engine(
        _Q + b'pass_env = ["MY_OPT", "UNSET"]\nenv = { E = "{db}/e" }\n', "t.toml"
    )
    caller = {"PATH": "/bin", "HOME": "/home/me", "MY_OPT": "1", "FZF_DEFAULT_OPTS": "-x"}
    assert finder_env(engine, caller) == {
        "PATH": "/bin", "HOME": "{run}/home", "XDG_CACHE_HOME": "{run}/cache",
        "XDG_CONFIG_HOME": "{run}/config", "XDG_DATA_HOME": "{run}/data", "TMPDIR": "{run}/tmp",
        "LC_ALL": "C.UTF-8", "TZ": "UTC", "PYTHONDONTWRITEBYTECODE": "1", "MY_OPT": "1",
        "E": "{db}/e",
    }  # fmt: skip
    assert build_env(engine, caller) == {
        "PATH": "/bin",
        "HOME": "/home/me",
        "LC_ALL": "C.UTF-8",
        "TZ": "UTC",
        "MY_OPT": "1",
    }


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('bin = []\nquery = ["{bin}", "{query}"]', "bin must not be empty"),
        ('bin = ["f"]\nquery = []', "query must contain the placeholder"),
        ('bin = ["f"]\nquery = ["{query}"]\nenv = { "A\\u0000B" = "x" }', "env: name 'A\\x00B'"),
        ('bin = ["f"]\nquery = ["{query}"]\nenv = { "A=B" = "x" }', "env: name 'A=B'"),
        ('bin = ["f"]\nquery = ["{query}"]\nenv = { "" = "x" }', "env: name ''"),
        ('bin = ["f"]\nquery = ["{query}"]\nenv = { A = "x\\u0000" }', "env: A holds a NUL"),
        ('bin = ["f\\u0000"]\nquery = ["{query}"]', "bin holds a NUL"),
        ('bin = ["f"]\nquery = ["{query}", "-\\u0000"]', "query holds a NUL"),
        ('bin = ["f"]\nquery = ["{query}"]\ncwd = "a\\u0000"', "cwd holds a NUL"),
        ('bin = ["f"]\nquery = ["{query}"]\nbuild = ["x\\u0000"]', "build holds a NUL"),
    ],
)
def test_an_engine_that_no_process_could_run_is_refused_naming_the_key(text, message):
    with pytest.raises(RecallError, match=f"^e.toml: \\[engine\\] {re.escape(message)}"):
        parse_engine(f"[engine]\n{text}\n".encode(), "e.toml")


def test_an_engine_file_nested_past_any_depth_is_refused_as_not_toml():
    with pytest.raises(RecallError, match=r"^e\.toml: not valid TOML: nested too deeply"):
        parse_engine(b"[engine]\nbin = " + b"[" * 100_000 + b"]" * 100_000 + b"\n", "e.toml")

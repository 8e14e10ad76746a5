import pytest

from recall.engine import QueryArgv, expand, load_preset, parse_engine, preset_names
from recall.errors import RecallError

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

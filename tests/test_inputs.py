"""Bad values never reach a traceback: flags out of range, engines that cannot be run,
JSON nested past any parser's depth, and cache or saved entries of the wrong shape."""

import json
import re
from pathlib import Path

import orjson
import pytest
from conftest import make_repo, needs_ctags, run_cli
from helpers import fault_args, fault_env, fault_world

from recall.analysis.model import Hit, QueryResult, RunResult
from recall.cache import keep_file
from recall.errors import RecallError
from recall.finders.engine import parse_engine
from recall.inputs.corpus import MARKER, Pin, checkout_key, fetch, load_pins
from recall.inputs.derive import load_settings
from recall.inputs.queryset import QueryRow
from recall.inputs.symbols import checkout_symbols
from recall.running import results_cache as saved
from recall.running.identity import data_key
from recall.running.results_cache import cached_run, decode_run, encode_run, load_against, store_run
from recall.workflows.cache import entries, stale


@pytest.fixture
def world(tmp_path: Path) -> dict:
    return fault_world(tmp_path)


DEEP = b"[" * 100_000 + b"]" * 100_000
DEEP_OBJECT = b'{"a":' * 100_000 + b"1" + b"}" * 100_000


def _one_line_exit_2(proc, *needles: str) -> None:
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("recall: ") and proc.stderr.count("\n") == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    for needle in needles:
        assert needle in proc.stderr, proc.stderr


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "0", "-3", "1e300"])
def test_a_timeout_that_is_not_a_finite_number_of_seconds_is_one_line_exit_2(world, value):
    proc = run_cli(
        *fault_args(world, f"--timeout={value}"), cwd=world["finder"], env=fault_env(world)
    )
    _one_line_exit_2(proc, "--timeout")
    explain = run_cli(
        "explain", "alpha", "--repo", "tiny", "--corpus", str(world["corpus"]),
        "--cache", str(world["cache"]), "--finder", str(world["finder"]), f"--timeout={value}",
        cwd=world["finder"], env=fault_env(world),
    )  # fmt: skip
    _one_line_exit_2(explain, "--timeout")


@pytest.mark.parametrize(("flag", "value"), [("--jobs", "0"), ("--jobs", "-2"), ("--bench", "0")])
def test_jobs_and_bench_reps_below_one_are_one_line_exit_2(world, flag, value):
    proc = run_cli(*fault_args(world, flag, value), cwd=world["finder"], env=fault_env(world))
    _one_line_exit_2(proc, flag)


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
    with pytest.raises(RecallError, match=f"^e.toml: \\[engine\\] {_escape(message)}"):
        parse_engine(f"[engine]\n{text}\n".encode(), "e.toml")


def _escape(text: str) -> str:
    return re.escape(text)


def test_an_engine_file_nested_past_any_depth_is_refused_as_not_toml():
    with pytest.raises(RecallError, match=r"^e\.toml: not valid TOML: nested too deeply"):
        parse_engine(b"[engine]\nbin = " + b"[" * 100_000 + b"]" * 100_000 + b"\n", "e.toml")


def test_a_corpus_file_nested_100k_deep_is_one_line_exit_2(world):
    world["corpus"].write_bytes(DEEP)
    proc = run_cli(*fault_args(world), cwd=world["finder"], env=fault_env(world))
    _one_line_exit_2(proc, f"{world['corpus']}: not JSON")


def test_a_derive_settings_file_nested_100k_deep_is_one_line_exit_2(world, tmp_path):
    settings = tmp_path / "derive.json"
    settings.write_bytes(DEEP_OBJECT)
    proc = run_cli(
        "derive", "all", "--corpus", str(world["corpus"]), "--settings", str(settings),
        "--queries", str(world["queries"]), "--cache", str(world["cache"]),
        cwd=world["finder"], env=fault_env(world),
    )  # fmt: skip
    _one_line_exit_2(proc, f"{settings}: not JSON")


def test_a_saved_run_nested_100k_deep_is_one_line_exit_2(world, tmp_path):
    path = tmp_path / "saved.json"
    path.write_bytes(DEEP_OBJECT)
    proc = run_cli(
        *fault_args(world, "--against", str(path)), cwd=world["finder"], env=fault_env(world)
    )
    _one_line_exit_2(proc, f"--against {path}: not JSON")


PINS = {"gin": Pin("gin", "https://github.com/gin-gonic/gin", "a" * 40, "go")}
ROWS = [QueryRow("gin", "ctxjs", "abbr3", "ContextJSON")]
RUN = RunResult("base", "finder", 0.5, 1.5, (QueryResult(1, (Hit("ContextJSON", "a.go", 4),)),))
KEY = {"format": saved.FORMAT, **data_key(PINS, ROWS)}


def _encoded(**field) -> dict:
    """A stored run with one part replaced: results[0] parts or a top-level field."""
    data = encode_run(RUN, KEY)
    rank, top, error, off_corpus = data["results"][0]
    parts = {"rank": rank, "top": top, "error": error, "off_corpus": off_corpus}
    for name in ("rank", "top", "error", "off_corpus", "hit", "hit_name", "hit_file", "hit_line"):
        if name in field:
            value = field.pop(name)
            if name.startswith("hit_"):
                hit = list(top[0])
                hit[("hit_name", "hit_file", "hit_line").index(name)] = value
                parts["top"] = [hit]
            elif name == "hit":
                parts["top"] = [value]
            else:
                parts[name] = value
    data["results"] = [[parts["rank"], parts["top"], parts["error"], parts["off_corpus"]]]
    return {**data, **field}


BAD_RUNS = [
    ({"rank": "1"}, "results[0]: rank must be a whole number 1 or more, or null, not '1'"),
    ({"rank": -3}, "results[0]: rank must be a whole number 1 or more, or null, not -3"),
    ({"rank": 0}, "results[0]: rank must be a whole number 1 or more, or null, not 0"),
    ({"rank": True}, "results[0]: rank must be a whole number 1 or more, or null, not True"),
    ({"top": "ab"}, "results[0]: top must be a list of [name, file, line], not 'ab'"),
    ({"hit": "abc"}, "results[0]: top[0] must be [name, file, line], not 'abc'"),
    ({"hit_name": 7}, "results[0]: top[0]: name must be a string, not 7"),
    ({"hit_file": 7}, "results[0]: top[0]: file must be a string or null, not 7"),
    ({"hit_line": True}, "results[0]: top[0]: line must be a whole number or null, not True"),
    ({"hit_line": "4"}, "results[0]: top[0]: line must be a whole number or null, not '4'"),
    ({"error": 5}, "results[0]: error must be a string or null, not 5"),
    ({"off_corpus": 1}, "results[0]: off_corpus must be true or false, not 1"),
    ({"results": {"a": 1}}, "results must be a list, not {'a': 1}"),
    ({"results": [[1, []]]}, "results[0] must be [rank, top, error, off_corpus], not [1, []]"),
    ({"label": 3}, "label must be a string, not 3"),
    ({"index_s": "fast"}, "index_s must be a number of seconds, not 'fast'"),
    ({"query_s": float("nan")}, None),  # orjson writes NaN as null
    ({"key": []}, "key must be an object, not []"),
]


@pytest.mark.parametrize(("change", "message"), BAD_RUNS)
def test_a_stored_run_of_the_wrong_shape_names_the_field(change, message):
    data = orjson.loads(orjson.dumps(_encoded(**change)))
    expected = message or "query_s must be a number of seconds, not None"
    with pytest.raises(ValueError, match=f"^{_escape(expected)}$"):
        decode_run(data)


def test_a_stored_run_that_is_not_an_object_is_refused():
    with pytest.raises(ValueError, match=r"^expected an object, not \[\]$"):
        decode_run([])


def _save(path: Path, run: dict) -> None:
    data = {"kind": saved.SAVED_KIND, "format": saved.FORMAT, "meta": {},
            "rows": [[r.repo, r.query, r.type, r.source] for r in ROWS], "runs": [run]}  # fmt: skip
    path.write_bytes(orjson.dumps(data))


@pytest.mark.parametrize(("change", "message"), BAD_RUNS[:4] + BAD_RUNS[6:9])
def test_a_saved_run_of_the_wrong_shape_is_refused_naming_the_file_and_field(
    tmp_path, change, message
):
    path = tmp_path / "main.json"
    _save(path, _encoded(**change))
    with pytest.raises(RecallError, match=f"^--against {_escape(str(path))}: runs\\[0\\]: "):
        load_against(path, ROWS, KEY)
    with pytest.raises(RecallError, match=_escape(message)):
        load_against(path, ROWS, KEY)


@pytest.mark.parametrize("rows", [["gin", "ctxjs"], "abcd", [["gin", "ctxjs", "abbr3", 5]], {}])
def test_saved_rows_of_the_wrong_shape_are_refused_naming_the_field(tmp_path, rows):
    path = tmp_path / "main.json"
    _save(path, encode_run(RUN, KEY))
    data = orjson.loads(path.read_bytes())
    path.write_bytes(orjson.dumps({**data, "rows": rows}))
    with pytest.raises(RecallError, match=f"^--against {_escape(str(path))}: rows"):
        load_against(path, ROWS, KEY)


@pytest.mark.parametrize(
    "content",
    [DEEP, DEEP_OBJECT, orjson.dumps(_encoded(rank="1")), orjson.dumps(_encoded(hit_name=3)),
     b"[]", b"null"],
)  # fmt: skip
def test_a_results_cache_entry_of_the_wrong_shape_is_a_warning_and_a_rerun(
    tmp_path, capsys, content
):
    store_run(tmp_path, KEY, RUN)
    (entry,) = (tmp_path / "results").iterdir()
    keep_file(entry, content)  # under a digest of its own: the shape check is what fails
    assert cached_run(tmp_path, KEY, "again", ROWS) is None
    err = capsys.readouterr().err
    assert err.startswith(f"recall: warning: cache entry {entry} is not a run of these rows")
    assert err.count("\n") == 1 and "dropped, made again" in err


def _tiny_pin(tmp_path: Path) -> Pin:
    upstream = make_repo(tmp_path / "up", {"a.py": "def alpha_function():\n    pass\n"})
    return Pin("tiny", (tmp_path / "up").as_uri(), upstream.head.commit.hexsha, "python")


@pytest.mark.parametrize(
    "marker",
    [b"[]", b'{"sha": 5}', b'{"tree": "x"}', b'"text"', DEEP, DEEP_OBJECT, b"{"],
)
def test_a_checkout_marker_of_the_wrong_shape_is_rebuilt_with_a_warning(tmp_path, capsys, marker):
    pin = _tiny_pin(tmp_path)
    checkout = fetch(pin, tmp_path / "cache")
    (checkout.path / ".git" / MARKER).write_bytes(marker)
    again = fetch(pin, tmp_path / "cache")
    assert "rebuilding the checkout" in capsys.readouterr().err
    assert len(again.tree) == 40
    assert json.loads((again.path / ".git" / MARKER).read_text())["sha"] == pin.sha


@pytest.mark.parametrize("marker", [b"[]", b'{"sha": 5, "tree": 7}', DEEP])
def test_cache_list_and_prune_survive_a_checkout_marker_of_the_wrong_shape(tmp_path, marker):
    pin = _tiny_pin(tmp_path)
    cache = tmp_path / "cache"
    checkout = fetch(pin, cache)
    (checkout.path / ".git" / MARKER).write_bytes(marker)
    found = entries(cache)
    chosen = stale(
        found, {"tiny": pin}, {"version": "6.0"}, older_than_days=None, keep_builds=None, now=0
    )
    assert [(e.key, e.note) for e in chosen] == [
        (checkout_key(pin), "holds another sha than the pin")
    ]


@needs_ctags
def test_a_symbols_cache_entry_of_the_wrong_shape_is_a_warning_and_a_rerun(tmp_path, capsys):
    pin = _tiny_pin(tmp_path)
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


def test_load_pins_names_a_file_nested_too_deeply(tmp_path):
    path = tmp_path / "corpus.json"
    path.write_bytes(DEEP_OBJECT)
    with pytest.raises(RecallError, match=f"^{_escape(str(path))}: not JSON: nested too deeply"):
        load_pins(path)


@pytest.mark.parametrize("value", ["nan", "inf", "-1"])
def test_prune_older_than_a_number_of_days_that_is_not_finite_is_one_line_exit_2(tmp_path, value):
    proc = run_cli("cache", "prune", f"--older-than={value}", "--cache", str(tmp_path))
    _one_line_exit_2(proc, "--older-than")


@pytest.mark.parametrize("entry", ['{"n": true, "seed": 1}', '{"n": 3, "seed": false}'])
def test_derive_settings_holding_a_bool_for_n_or_seed_name_the_repo(tmp_path, entry):
    path = tmp_path / "derive.json"
    path.write_text(f'{{"repos": {{"gin": {entry}}}}}')
    with pytest.raises(RecallError, match="repo 'gin': n and seed must be whole numbers"):
        load_settings(path, PINS)

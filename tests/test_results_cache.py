"""The results cache and the files of --save and --against (recall/running/results_cache.py):
what a stored or saved run is known by, and what reading one refuses."""

import dataclasses
import json
import re
from pathlib import Path

import orjson
import pytest
from conftest import ROOT, needs_ctags, run_cli
from helpers import DEEP, DEEP_OBJECT, META, fault_args, fault_env, fault_world, one_line_exit_2

from recall.analysis.model import Hit, QueryResult, RunResult
from recall.cache import keep_file, read_file
from recall.errors import RecallError
from recall.finders.engine import parse_engine, resolve_engine
from recall.inputs.corpus import Pin
from recall.inputs.queryset import QueryRow
from recall.running import identity
from recall.running import results_cache as saved
from recall.running.identity import data_key
from recall.running.results_cache import (
    cached_run,
    decode_run,
    encode_run,
    load_against,
    run_key,
    save_runs,
    store_run,
)

PINS = {
    "gin": Pin("gin", "https://github.com/gin-gonic/gin", "a" * 40, "go"),
    "flask": Pin("flask", "https://github.com/pallets/flask", "b" * 40, "python"),
}
ROWS = [QueryRow("gin", "ctxjs", "abbr3", "ContextJSON"), QueryRow("gin", "x", "hand", "")]
RESULTS = (
    QueryResult(2, (Hit("Context", "context.go", 9), Hit("ContextJSON", "json.go", 4))),
    QueryResult(None, ()),
)
RUN = RunResult("base", "finder", 0.5, 1.5, RESULTS)


def _key(**changes) -> dict:
    args = {"identity": "commit:" + "c" * 40, "engine": resolve_engine("fzf", ROOT),
            "pins": PINS, "rows": ROWS, "timeout": 30.0} | changes  # fmt: skip
    asked = data_key(args.pop("pins"), args.pop("rows"))
    return run_key(asked=asked, **args)


@needs_ctags
def test_a_stored_run_comes_back_whole_under_its_key_with_this_runs_label(tmp_path):
    store_run(tmp_path, _key(), RUN)
    back = cached_run(tmp_path, _key(), "base main (cccc)", ROWS)
    assert back == dataclasses.replace(RUN, label="base main (cccc)", cached=True)


@pytest.mark.parametrize(
    "part",
    ["identity", "engine", "pins", "rows", "timeout", "format", "ctags", "python"],
)
@needs_ctags
def test_a_change_to_any_key_part_misses(tmp_path, monkeypatch, part):
    store_run(tmp_path, _key(), RUN)
    fzy = resolve_engine("fzy", ROOT)
    moved = {**PINS, "gin": dataclasses.replace(PINS["gin"], sha="d" * 40)}
    other_rows = [ROWS[0], QueryRow("gin", "y", "hand", "")]
    changes = {
        "identity": {"identity": "file:" + "0" * 64}, "engine": {"engine": fzy},
        "pins": {"pins": moved}, "rows": {"rows": other_rows}, "timeout": {"timeout": 5.0},
    }.get(part, {})  # fmt: skip
    if part == "format":
        monkeypatch.setattr(saved, "FORMAT", saved.FORMAT + 1)
    if part == "ctags":
        monkeypatch.setattr(saved, "ctags_identity", lambda: {"version": "0.0.0"})
    if part == "python":
        monkeypatch.setattr(saved.platform, "python_version", lambda: "2.7.18")
    key = _key(**changes)
    assert cached_run(tmp_path, key, "base", ROWS) is None


@needs_ctags
def test_another_version_of_a_package_python_imports_or_of_a_program_on_path_misses(
    tmp_path, monkeypatch
):
    """A base's results are cached by commit, yet its finder imports NumPy and RapidFuzz
    (or a library finder's own library) and may start a server from PATH: an upgrade of
    either changes answers the commit does not name."""
    reference = resolve_engine("reference", ROOT)
    store_run(tmp_path, _key(engine=reference), RUN)
    assert cached_run(tmp_path, _key(engine=reference), "base", ROWS) is not None
    monkeypatch.setattr(identity, "_packages", lambda: "numpy==0.0 upgraded")
    assert cached_run(tmp_path, _key(engine=reference), "base", ROWS) is None
    on_path = parse_engine(b'[engine]\nbin = ["git"]\nquery = ["{bin}", "{query}"]\n', "t")
    store_run(tmp_path, _key(engine=on_path), RUN)  # git: a program on PATH, by content
    monkeypatch.setattr(identity, "_program", lambda path, mtime, size: "file:" + "9" * 64)
    assert cached_run(tmp_path, _key(engine=on_path), "base", ROWS) is None


@needs_ctags
def test_the_pins_of_repos_the_rows_do_not_use_are_not_part_of_the_key():
    moved = {**PINS, "flask": dataclasses.replace(PINS["flask"], sha="e" * 40)}
    assert _key(pins=moved) == _key()


@needs_ctags
def test_a_corrupt_entry_is_ignored_with_a_warning_and_rewritten(tmp_path, capsys):
    store_run(tmp_path, _key(), RUN)
    (entry,) = (tmp_path / "results").iterdir()
    entry.write_bytes(entry.read_bytes()[:40])
    assert cached_run(tmp_path, _key(), "base", ROWS) is None
    assert "dropped, made again" in capsys.readouterr().err
    store_run(tmp_path, _key(), RUN)
    assert cached_run(tmp_path, _key(), "base", ROWS) is not None


@needs_ctags
def test_an_entry_whose_stored_key_differs_is_not_trusted(tmp_path, capsys):
    store_run(tmp_path, _key(), RUN)
    (entry,) = (tmp_path / "results").iterdir()
    data = _entry_data(entry)
    data["key"]["timeout"] = 1.0
    keep_file(entry, orjson.dumps(data))  # with a digest of its own: it proves itself
    assert cached_run(tmp_path, _key(), "base", ROWS) is None
    assert "its key does not match" in capsys.readouterr().err


def _entry_data(entry: Path) -> dict:
    return orjson.loads(read_file(entry) or b"")


@needs_ctags
def test_an_entry_edited_on_disk_but_well_formed_is_dropped_with_one_warning(tmp_path, capsys):
    """Class 5: a rank of 2 turned into 1 in the file, still valid JSON, is not used."""
    store_run(tmp_path, _key(), RUN)
    (entry,) = (tmp_path / "results").iterdir()
    entry.write_bytes(entry.read_bytes().replace(b'"results":[[2,', b'"results":[[1,'))
    assert orjson.loads(entry.read_bytes().partition(b"\n")[2])["results"][0][0] == 1
    assert cached_run(tmp_path, _key(), "base", ROWS) is None
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(entry) in err and "does not match its digest" in err
    assert not entry.exists()


TOP2 = [["Context", "context.go", 9], ["ContextJSON", "json.go", 4]]
HAND_RESULT = [None, [], None]


@pytest.mark.parametrize(
    "results",
    [
        [[1, TOP2, None], HAND_RESULT],
        [[3, TOP2, None], HAND_RESULT],
        [[None, TOP2[1:], None], HAND_RESULT],
        [[2, [TOP2[0], ["Context", "b.go", 2]], None], HAND_RESULT],
        [[2, TOP2, None]],
    ],
    ids=["rank-1-not-first", "rank-inside-list-elsewhere", "missed-but-listed", "repeated-name",
         "a-result-missing"],
)  # fmt: skip
@needs_ctags
def test_an_entry_that_contradicts_itself_is_dropped_with_one_warning(tmp_path, capsys, results):
    """Class 5: a rank of 1 while its top list does not start with the source, and the
    like, even under a valid digest, is not a run of these rows."""
    store_run(tmp_path, _key(), RUN)
    (entry,) = (tmp_path / "results").iterdir()
    data = _entry_data(entry)
    data["results"] = results
    keep_file(entry, orjson.dumps(data))
    assert cached_run(tmp_path, _key(), "base", ROWS) is None
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(entry) in err and "dropped" in err
    assert not entry.exists()


@needs_ctags
def test_a_run_with_an_errored_query_is_not_cached(tmp_path):
    errored = dataclasses.replace(RUN, results=(RESULTS[0], QueryResult(None, (), "timed out")))
    store_run(tmp_path, _key(), errored)
    assert not (tmp_path / "results").exists()


def _saved(tmp_path: Path) -> Path:
    path = tmp_path / "main.json"
    save_runs(path, META, ROWS, [(RUN, _key())])
    return path


EVERY = {"repo": None, "type": None, "split": None}  # a run's selection without flags


@needs_ctags
def test_a_saved_run_stands_in_for_the_baseline_of_the_same_rows(tmp_path):
    run, key = load_against(_saved(tmp_path), ROWS, data_key(PINS, ROWS), EVERY)
    assert run.results == RESULTS and run.cached and key == _key()
    assert run.label == "saved main.json (base)"


@needs_ctags
def test_a_saved_run_s_meta_reads_back_typed_and_is_written_as_a_run_wrote_it(tmp_path):
    path = _saved(tmp_path)
    assert orjson.loads(path.read_bytes())["meta"] == META.to_json()
    assert saved.load_saved(path, "merge").meta == META


@needs_ctags
@pytest.mark.parametrize(
    ("key", "value", "fault"),
    [
        ("ctags", None, "meta: no 'ctags'"),
        (
            "engine",
            {"source": "preset:fzf", "sha256": "0"},
            "meta.engine.sha256: expected a SHA-256",
        ),
        ("corpus_sha256", 5, "meta.corpus_sha256: expected str, got 5"),
    ],
)
def test_a_saved_run_whose_meta_has_the_wrong_shape_is_refused_naming_the_file_and_key(
    tmp_path, key, value, fault
):
    path = _saved(tmp_path)
    data = orjson.loads(path.read_bytes())
    if value is None:
        del data["meta"][key]
    else:
        data["meta"][key] = value
    path.write_bytes(orjson.dumps(data))
    with pytest.raises(RecallError, match=f"^merge {re.escape(str(path))}: {re.escape(fault)}"):
        saved.load_saved(path, "merge")


@needs_ctags
def test_a_saved_run_with_other_pins_is_refused_naming_the_repo(tmp_path):
    moved = {**PINS, "gin": dataclasses.replace(PINS["gin"], sha="d" * 40)}
    with pytest.raises(RecallError, match=r"main.json: its corpus pins differ .*\(gin\)"):
        load_against(_saved(tmp_path), ROWS, data_key(moved, ROWS), EVERY)


@needs_ctags
def test_a_saved_run_with_another_query_set_is_refused_naming_the_first_differing_row(tmp_path):
    rows = [ROWS[0], QueryRow("gin", "ctx", "hand", "")]
    with pytest.raises(
        RecallError, match=r"query set differs .* at row 2 \(gin 'x' saved, gin 'ctx' now\)"
    ):
        load_against(_saved(tmp_path), rows, data_key(PINS, rows), EVERY)


@needs_ctags
@pytest.mark.parametrize("now", ["every repo", "another type"])
def test_a_saved_run_of_another_selection_says_the_selection_not_the_pins(tmp_path, now):
    """Issue 44 item 9: a run saved with `--repo gin`, given as --against to a run of every
    repo, said its corpus pins differed; they did not, the selection did."""
    path = tmp_path / "main.json"
    gin_only = {"repo": ["gin"], "type": None, "split": None}
    save_runs(path, META, ROWS, [(RUN, _key())], selection=gin_only)
    rows = [*ROWS, QueryRow("flask", "bp", "hand", "")]
    selection = EVERY
    if now == "another type":
        rows, selection = ROWS[:1], {"repo": ["gin"], "type": ["abbr3"], "split": None}
    with pytest.raises(RecallError) as raised:
        load_against(path, rows, data_key(PINS, rows), selection)
    asked = "every repo and type" if now == "every repo" else "--repo gin --type abbr3"
    assert str(raised.value) == (
        f"--against {path}: it was saved with another selection (--repo gin) than this run's "
        f"({asked}): give the same --repo, --type and --split, or save a run of this selection"
    )


def test_a_file_that_is_not_a_saved_run_is_refused(tmp_path):
    path = tmp_path / "report.json"
    path.write_text(json.dumps({"schema": 1, "runs": []}))
    with pytest.raises(RecallError, match="not a file written by recall --save"):
        load_against(path, ROWS, data_key(PINS, ROWS), EVERY)


def _gin(cache: Path, finder: tuple[Path, Path], *extra: str):
    engine, script = finder
    return run_cli(
        "--cache", str(cache), "--repo", "gin", "--type", "abbr3", "--no-regress",
        "--engine", str(engine), "--bin", str(script), "--json", *extra,
    )  # fmt: skip


def test_a_second_run_reuses_the_cached_results_and_no_cache_runs_again(
    real_cache, gin, subsequence_bin
):
    first = _gin(real_cache, subsequence_bin)
    assert first.returncode == 0, first.stderr
    second = _gin(real_cache, subsequence_bin)
    kept = {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in (real_cache / "results").iterdir()}
    forced = _gin(real_cache, subsequence_bin, "--no-cache")
    runs = [json.loads(p.stdout)["runs"][0] for p in (first, second, forced)]
    assert [r["cached"] for r in runs[1:]] == [True, False]
    assert runs[0]["by_type"] == runs[1]["by_type"] == runs[2]["by_type"]
    # class 2: --no-cache neither reads nor writes: the entries later runs read are untouched
    after = {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in (real_cache / "results").iterdir()}
    assert after == kept


def test_save_then_against_diffs_with_nothing_run_for_the_baseline(
    real_cache, gin, tmp_path, subsequence_bin
):
    path = tmp_path / "mine.json"
    assert _gin(real_cache, subsequence_bin, "--save", str(path)).returncode == 0
    proc = _gin(real_cache, subsequence_bin, "--against", str(path), "--fail-on-loss")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert (
        report["runs"][0]["cached"] and report["runs"][0]["label"] == "saved mine.json (candidate)"
    )
    assert (report["diff"]["up"], report["diff"]["down"]) == (0, 0)
    engine, script = subsequence_bin
    other = run_cli("--cache", str(real_cache), "--repo", "gin", "--type", "typo",
                       "--no-regress", "--engine", str(engine), "--bin", str(script),
                       "--against", str(path))  # fmt: skip
    assert other.returncode == 2
    assert (
        "saved with another selection (--repo gin --type abbr3) than this run's "
        "(--repo gin --type typo)"
    ) in other.stderr


@pytest.mark.parametrize("save", ["same.json", "./same.json", "{tmp}/same.json"])
def test_against_and_save_naming_one_file_are_refused_before_anything_runs(tmp_path, save):
    proc = run_cli(
        "--against", "same.json", "--save", save.format(tmp=tmp_path), "--cache",
        str(tmp_path / "cache"), cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 2
    assert (
        proc.stderr.startswith("recall: --against and --save name one file")
        and proc.stderr.count("\n") == 1
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_every_file_an_argv_names_is_in_the_key_by_content(tmp_path):
    """Class 2: `query = ["{bin}", "/abs/model.bin", ...]`: the file's bytes are in the
    key, so an edit is a new key even though no name changed."""
    model = tmp_path / "model.bin"
    model.write_bytes(b"one")
    text = f'[engine]\nbin = ["/bin/cat"]\nquery = ["{{bin}}", "{model}", "{{query}}"]\n'
    engine = parse_engine(text.encode(), "t.toml")
    before = identity.environment_key(engine)
    assert str(model) in before["files"]
    model.write_bytes(b"two, longer")
    assert identity.environment_key(engine) != before


@pytest.mark.parametrize(
    ("bin_", "query", "why"),
    [
        ('["python3"]', '["{bin}", "/x/finder.py", "{query}"]', "python3 is an interpreter"),
        ('["node"]', '["{bin}", "finder.js", "{query}"]', "node is an interpreter"),
        ('["/bin/sh"]', '["{bin}", "-c", "grep {query}"]', "/bin/sh is an interpreter"),
        ('["{python}", "-m", "x"]', '["{bin}", "{query}"]', None),
        ('["node", "{tree}/adapter.js"]', '["{bin}", "{query}"]', None),
        ('["/bin/cat"]', '["{bin}", "{query}"]', None),
    ],
)
def test_an_interpreter_running_code_outside_the_tree_is_unseen(bin_, query, why):
    engine = parse_engine(f"[engine]\nbin = {bin_}\nquery = {query}\n".encode(), "t.toml")
    reason = identity.unseen_code(engine)
    assert (reason is None) if why is None else (reason is not None and reason.startswith(why))
    if why is not None:
        declared = f"[engine]\nbin = {bin_}\nquery = {query}\ninputs = ['/bin/cat']\n"
        assert identity.unseen_code(parse_engine(declared.encode(), "t.toml")) is None


def test_a_kind_whose_worker_is_the_harnesss_own_keys_the_harnesss_code():
    """A python or lsp engine in a finder's repo other than recall's runs recall's own
    worker (recall/finders/kinds/python.py, from the harness's folder): that code is part of what
    its numbers were made from, so its content is in the key; a plain process engine's
    numbers do not depend on it."""
    library = parse_engine(
        b'[engine]\nkind = "python"\ncallable = "rapidfuzz.process:extract"\n', "t"
    )
    plain = parse_engine(b'[engine]\nbin = ["git"]\nquery = ["{bin}", "{query}"]\n', "t")
    assert len(identity.environment_key(library)["harness code"]) == 64
    assert "harness code" not in identity.environment_key(plain)


@pytest.fixture
def world(tmp_path: Path) -> dict:
    return fault_world(tmp_path)


def test_a_saved_run_nested_100k_deep_is_one_line_exit_2(world, tmp_path):
    path = tmp_path / "saved.json"
    path.write_bytes(DEEP_OBJECT)
    proc = run_cli(
        *fault_args(world, "--against", str(path)), cwd=world["finder"], env=fault_env(world)
    )
    one_line_exit_2(proc, f"--against {path}: not JSON")


SHAPE_PINS = {"gin": Pin("gin", "https://github.com/gin-gonic/gin", "a" * 40, "go")}
SHAPE_ROWS = [QueryRow("gin", "ctxjs", "abbr3", "ContextJSON")]
SHAPE_RUN = RunResult(
    "base", "finder", 0.5, 1.5, (QueryResult(1, (Hit("ContextJSON", "a.go", 4),)),)
)
SHAPE_KEY = {"format": saved.FORMAT, **data_key(SHAPE_PINS, SHAPE_ROWS)}


def _encoded(**field) -> dict:
    """A stored run with one part replaced: results[0] parts or a top-level field."""
    data = encode_run(SHAPE_RUN, SHAPE_KEY)
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
    with pytest.raises(ValueError, match=f"^{re.escape(expected)}$"):
        decode_run(data)


def test_a_stored_run_that_is_not_an_object_is_refused():
    with pytest.raises(ValueError, match=r"^expected an object, not \[\]$"):
        decode_run([])


def _save(path: Path, run: dict) -> None:
    rows = [[r.repo, r.query, r.type, r.source] for r in SHAPE_ROWS]
    data = {"kind": saved.SAVED_KIND, "format": saved.FORMAT, "meta": {}, "rows": rows,
            "runs": [run]}  # fmt: skip
    path.write_bytes(orjson.dumps(data))


@pytest.mark.parametrize(("change", "message"), BAD_RUNS[:4] + BAD_RUNS[6:9])
def test_a_saved_run_of_the_wrong_shape_is_refused_naming_the_file_and_field(
    tmp_path, change, message
):
    path = tmp_path / "main.json"
    _save(path, _encoded(**change))
    with pytest.raises(RecallError, match=f"^--against {re.escape(str(path))}: runs\\[0\\]: "):
        load_against(path, SHAPE_ROWS, SHAPE_KEY)
    with pytest.raises(RecallError, match=re.escape(message)):
        load_against(path, SHAPE_ROWS, SHAPE_KEY)


@pytest.mark.parametrize("rows", [["gin", "ctxjs"], "abcd", [["gin", "ctxjs", "abbr3", 5]], {}])
def test_saved_rows_of_the_wrong_shape_are_refused_naming_the_field(tmp_path, rows):
    path = tmp_path / "main.json"
    _save(path, encode_run(SHAPE_RUN, SHAPE_KEY))
    data = orjson.loads(path.read_bytes())
    path.write_bytes(orjson.dumps({**data, "rows": rows}))
    with pytest.raises(RecallError, match=f"^--against {re.escape(str(path))}: rows"):
        load_against(path, SHAPE_ROWS, SHAPE_KEY)


@pytest.mark.parametrize(
    "content",
    [DEEP, DEEP_OBJECT, orjson.dumps(_encoded(rank="1")), orjson.dumps(_encoded(hit_name=3)),
     b"[]", b"null"],
)  # fmt: skip
def test_a_results_cache_entry_of_the_wrong_shape_is_a_warning_and_a_rerun(
    tmp_path, capsys, content
):
    store_run(tmp_path, SHAPE_KEY, SHAPE_RUN)
    (entry,) = (tmp_path / "results").iterdir()
    keep_file(entry, content)  # under a digest of its own: the shape check is what fails
    assert cached_run(tmp_path, SHAPE_KEY, "again", SHAPE_ROWS) is None
    err = capsys.readouterr().err
    assert err.startswith(f"recall: warning: cache entry {entry} is not a run of these rows")
    assert err.count("\n") == 1 and "dropped, made again" in err

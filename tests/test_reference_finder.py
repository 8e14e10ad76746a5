"""The reference finder driven as a process, on a fixture tree written here."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, needs_ctags

SOURCE = """
class HTTPServer:
    def serve_forever(self): pass

def test_float_limits(): pass
def test_flag_list(): pass
def parse_config_file(): pass
def parse_conf(): pass
"""


def finder(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "recall.finders.reference", *args], input=stdin, capture_output=True,
        text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120,
    )  # fmt: skip


def indexed(tmp_path_factory: pytest.TempPathFactory, name: str, source: str) -> Path:
    """The finder's index of one Python file holding source."""
    tree = tmp_path_factory.mktemp(name)
    (tree / f"{name}.py").write_text(source)
    path = tree.parent / f"{name}.db"
    proc = finder("index", str(tree), "--language", "python", "--db", str(path))
    assert proc.returncode == 0, proc.stderr
    return path


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return indexed(tmp_path_factory, "mod", SOURCE)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("tesflolim", "test_float_limits"),
        ("tstflt", "test_float_limits"),
        ("test_floa_tlimits", "test_float_limits"),
        ("tes*lim", "test_float_limits"),
        ("httser", "HTTPServer"),
        ("HTTPServer.serve_forever", "serve_forever"),
    ],
)
@needs_ctags
def test_sloppy_queries_rank_the_intended_name_first(db, query, expected):
    proc = finder("query", query, "--db", str(db), "--json", "--limit", "5")
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    assert rows[0]["name"] == expected
    assert rows[0]["file"] == "mod.py" and isinstance(rows[0]["line"], int)


@needs_ctags
@pytest.mark.slow
def test_batch_answers_each_line_in_order_and_survives_a_bad_line(db):
    lines = [json.dumps({"query": "tesflolim", "limit": 0}), "not json",
             json.dumps({"query": "parcon", "limit": 2})]  # fmt: skip
    proc = finder("query", "--batch", "--db", str(db), stdin="\n".join(lines) + "\n")
    assert proc.returncode == 0, proc.stderr
    answers = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(answers) == 3
    assert answers[0][0]["name"] == "test_float_limits"
    assert "error" in answers[1]
    assert len(answers[2]) <= 2
    single = finder("query", "tesflolim", "--db", str(db), "--json", "--limit", "0")
    assert json.loads(single.stdout) == answers[0]


@needs_ctags
@pytest.mark.slow
def test_batch_echoes_the_id_it_received_with_the_answer_or_the_error(db):
    lines = [json.dumps({"id": 7, "query": "tesflolim", "limit": 0}),
             json.dumps({"id": "x", "query": "parcon", "limit": -1}),
             json.dumps({"query": "parcon", "limit": 2})]  # fmt: skip
    proc = finder("query", "--batch", "--db", str(db), stdin="\n".join(lines) + "\n")
    assert proc.returncode == 0, proc.stderr
    answers = [json.loads(line) for line in proc.stdout.splitlines()]
    single = finder("query", "tesflolim", "--db", str(db), "--json", "--limit", "0")
    assert answers[0] == {"id": 7, "results": json.loads(single.stdout)}
    assert answers[1]["id"] == "x" and "limit" in answers[1]["error"]
    assert isinstance(answers[2], list)  # no id asked, none echoed: the bare list


WORD_STARTS = """
class AutoFilteredParameters: pass
def attachable_filename(): pass
def test_pluck_and_distinct(): pass
def test_pluck_with_multiple_columns_and_includes(): pass
class TestUriInnerBinding: pass
class TestRenderHTMLTemplateEmptyName: pass
"""


@pytest.fixture(scope="module")
def word_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return indexed(tmp_path_factory, "words", WORD_STARTS)


@pytest.mark.parametrize(
    ("query", "expected", "other"),
    [
        # The rest of `attachable` is skipped to reach `filename`: an abbreviation takes a
        # prefix of each word, so that skip costs no more than the short one in `AutoF`.
        ("atfi", "attachable_filename", "AutoFilteredParameters"),
        # Consecutive words beat words picked out of a longer name.
        ("teplandi", "test_pluck_and_distinct", "test_pluck_with_multiple_columns_and_includes"),
        # A run of consecutive letters (`nn` in Inner) outweighs letters spread over words.
        ("tstrnn", "TestUriInnerBinding", "TestRenderHTMLTemplateEmptyName"),
    ],
)
@needs_ctags
def test_jumping_to_the_next_word_start_is_cheap_and_skipping_whole_words_costs(
    word_db, query, expected, other
):
    proc = finder("query", query, "--db", str(word_db), "--json", "--limit", "0")
    assert proc.returncode == 0, proc.stderr
    names = [row["name"] for row in json.loads(proc.stdout)]
    assert names.index(expected) == 0 and other in names


PREFIXES = """
def TestErr(): pass
def TestError(): pass
def TestErrorSlice(): pass
def TestErrorLogger(): pass
"""


@needs_ctags
@pytest.mark.slow
def test_names_that_start_with_the_query_come_first_the_shorter_first(tmp_path_factory):
    # `testerro` is part way through typing a name: the names that start with it beat
    # TestErr, one edit away, and among them the shortest is the likeliest end
    db = indexed(tmp_path_factory, "prefixes", PREFIXES)
    proc = finder("query", "testerro", "--db", str(db), "--json", "--limit", "0")
    assert proc.returncode == 0, proc.stderr
    names = [row["name"] for row in json.loads(proc.stdout)]
    assert names[:3] == ["TestError", "TestErrorSlice", "TestErrorLogger"]


@pytest.mark.parametrize("cols", [1, 99, 100, 257, 1999, 2000, 2100])
@pytest.mark.parametrize("rows", [1, 2, 5, 33])
def test_the_running_max_equals_accumulate_on_every_path(rows, cols):
    """The finder picks accumulate, shift doubling or a row loop by the number of names:
    each must give np.maximum.accumulate exactly, ragged sizes and ties included."""
    import numpy as np

    from recall.finders.reference.rank import _running_max

    rng = np.random.default_rng(rows * 10_000 + cols)
    x = rng.integers(-3, 4, size=(rows, cols)).astype(np.float32)
    x[rng.random(x.shape) < 0.5] = -1e9
    expected = np.maximum.accumulate(x, axis=0)
    assert np.array_equal(_running_max(x.copy()), expected)

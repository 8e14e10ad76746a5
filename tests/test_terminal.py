"""Terminal safety: control characters in names, queries, sources, labels and finder
output are shown escaped in text and Markdown, kept exact in JSON; a NUL in a query is
refused at its row, since no argv can carry it."""

import json
import re
from pathlib import Path

import pytest
from conftest import make_repo, needs_ctags, run_cli
from test_faults import CORPUS_FILES

from recall import saved
from recall.corpus import load_pins
from recall.model import Hit, QueryResult, RunResult
from recall.queryset import QueryRow
from recall.render.escape import markdown
from recall.saved import data_key
from recall.terminal import safe_output, shown

NAME = "bad\x1b[2J\x07\x00\x7f\x85\x9bname"
SHOWN_NAME = "bad\\x1b[2J\\x07\\x00\\x7f\\x85\\x9bname"
QUERY, SOURCE = "q\x1b]0;title\x07", "src\x1b[31m"
RAW = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
FINDER = r"""
import json, sys
if sys.argv[1] == "crash":
    sys.stderr.write("\x1b[31mboom\x07")
    sys.exit(3)
print(json.dumps([{"name": NAME, "file": "a\x1bb.py", "line": 1}, {"name": "gamma_delta"}]))
""".replace("NAME", repr(NAME))
ENGINE = """[engine]
bin = ["{python}", "{tree}/finder.py"]
query = ["{bin}", "{query}"]
"""


@pytest.fixture
def tiny(tmp_path: Path) -> dict:
    upstream = make_repo(tmp_path / "upstream", CORPUS_FILES)
    corpus = tmp_path / "corpus.json"
    pin = {"url": (tmp_path / "upstream").as_uri(), "sha": upstream.head.commit.hexsha}
    corpus.write_text(json.dumps({"tiny": {**pin, "language": "python"}}))
    queries = tmp_path / "queries.tsv"
    # sources must be names of the corpus: a source with control characters reaches a
    # report only through explain's --source
    rows = [f"tiny\t{QUERY}\texact\tgamma_delta", "tiny\tcrash\texact\talpha_function"]
    queries.write_text("repo\tquery\ttype\tsource\n" + "\n".join(rows) + "\n")
    finder = tmp_path / "finder"
    make_repo(finder, {"finder.py": FINDER, "recall.toml": ENGINE})
    return {"corpus": corpus, "queries": queries, "finder": finder, "cache": tmp_path / "cache"}


def _recall(tiny: dict, *args: str):
    return run_cli(
        *args, "--corpus", str(tiny["corpus"]), "--cache", str(tiny["cache"]),
        "--finder", str(tiny["finder"]), cwd=tiny["finder"], env={"RECALL_MIRROR": ""},
    )  # fmt: skip


def test_shown_escapes_every_c0_c1_and_del_as_repr_does_and_safe_output_keeps_layout():
    for code in [*range(0x20), *range(0x7F, 0xA0)]:
        assert shown(chr(code)) == repr(chr(code))[1:-1]
    assert shown("naïve ✓ a\\b") == "naïve ✓ a\\b"
    assert safe_output("a\tb\nc\x1bd\re") == "a\tb\nc\\x1bd\\re"


@needs_ctags
def test_control_characters_from_a_finder_or_the_query_set_are_escaped_in_text_and_markdown(
    tiny,
):
    for flags in ((), ("--markdown",)):
        proc = _recall(tiny, "--queries", str(tiny["queries"]), "--allow-empty", "--misses", *flags)
        assert proc.returncode == 0, proc.stderr
        assert not RAW.search(proc.stdout), proc.stdout
        said = markdown if flags else shown
        assert said(NAME) in proc.stdout
        assert said(QUERY) in proc.stdout
        assert said("\x1b[31mboom\x07") in proc.stdout  # the finder's stderr, in the error row


@needs_ctags
def test_the_json_report_keeps_control_characters_exactly(tiny):
    proc = _recall(tiny, "--queries", str(tiny["queries"]), "--allow-empty", "--misses", "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    (miss, _crash) = report["misses"]
    assert (miss["query"], miss["source"], miss["first"]) == (QUERY, "gamma_delta", NAME)
    assert "\x1b[31mboom\x07" in report["runs"][0]["error_rows"][0]["error"]


@needs_ctags
def test_explain_text_shows_control_characters_escaped(tiny):
    proc = _recall(
        tiny, "explain", QUERY, "--repo", "tiny", "--queries", str(tiny["queries"]),
        "--source", SOURCE,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert not RAW.search(proc.stdout), proc.stdout
    assert SHOWN_NAME in proc.stdout and "a\\x1bb.py:1" in proc.stdout
    assert shown(SOURCE) in proc.stdout
    crash = _recall(tiny, "explain", "crash", "--repo", "tiny", "--queries", str(tiny["queries"]))
    assert not RAW.search(crash.stdout) and "\\x1b[31mboom\\x07" in crash.stdout


@needs_ctags
def test_a_saved_runs_label_holding_an_escape_is_shown_escaped(tiny, tmp_path):
    rows = [QueryRow("tiny", "alpha", "exact", "alpha_function")]
    tiny["queries"].write_text("repo\tquery\ttype\tsource\ntiny\talpha\texact\talpha_function\n")
    run = RunResult(
        "\x1b[5mblink", "x", 0.0, 0.0, (QueryResult(1, (Hit("alpha_function", None, None),)),)
    )
    path = tmp_path / "old.json"
    saved.save_runs(path, {}, rows, [(run, data_key(load_pins(tiny["corpus"]), rows))])
    proc = _recall(tiny, "--queries", str(tiny["queries"]), "--no-regress", "--against", str(path))
    assert proc.returncode == 0, proc.stderr
    assert not RAW.search(proc.stdout) and "\\x1b[5mblink" in proc.stdout


@pytest.mark.parametrize("column", ["queries", "regress"])
def test_a_nul_in_a_query_is_refused_at_its_row(tiny, column):
    bad = tiny["queries"].parent / f"{column}.tsv"
    if column == "queries":
        bad.write_bytes(b"repo\tquery\ttype\tsource\ntiny\talpha\texact\talpha_function\n"
                        b"tiny\tal\x00pha\texact\talpha_function\n")  # fmt: skip
        args, line = ("--queries", str(bad)), 3
    else:
        bad.write_bytes(b"repo\tquery\texpect\ntiny\tal\x00pha\talpha\n")
        args, line = ("--queries", str(tiny["queries"]), "--regress", str(bad)), 2
    proc = _recall(tiny, *args)
    assert proc.returncode == 2, proc.stderr
    assert (
        proc.stderr
        == f"recall: {bad}:{line}: the query holds a NUL byte, which no argv can carry\n"
    )


@needs_ctags
def test_an_error_line_quoting_a_finders_stderr_stays_one_line_with_escapes_shown(tiny):
    engine = tiny["finder"] / "recall.toml"
    failing = "import sys; sys.stderr.write('\\x1b[31mno\\x07 index'); sys.exit(1)"
    engine.write_text(ENGINE + f'index = ["{{python}}", "-c", {json.dumps(failing)}]\n')
    proc = _recall(tiny, "--queries", str(tiny["queries"]), "--no-regress")
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and not RAW.search(proc.stderr), proc.stderr
    assert proc.stderr.startswith("recall: index tiny with candidate failed (exit 1)")
    assert proc.stderr.endswith("\\x1b[31mno\\x07 index\n")

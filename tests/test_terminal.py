"""Terminal safety: control characters in names, queries, sources, labels and finder
output are shown escaped in text and Markdown, kept exact in JSON; a NUL in a query is
refused at its row, since no argv can carry it."""

import contextlib
import io
import json
import os
import pty
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import git
import pytest
from conftest import make_repo, needs_ctags, run_cli, tiny_suite
from helpers import META

import recall
from recall.analysis.model import Hit, QueryResult, RunResult
from recall.cache import read_file, warn
from recall.inputs.corpus import Pin, fetch, load_pins
from recall.inputs.queryset import QueryRow
from recall.render.escape import markdown
from recall.running import results_cache as saved
from recall.running.identity import data_key
from recall.terminal import Progress, Task, progress, reporting, safe_output, shown

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
    # sources must be names of the corpus: a source with control characters reaches a
    # report only through a foreign query file (explain's test below)
    rows = [f"{QUERY}\texact\tgamma_delta", "crash\texact\talpha_function"]
    return tiny_suite(tmp_path, rows, {"finder.py": FINDER, "recall.toml": ENGINE})


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
@pytest.mark.slow
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
    # a foreign query file may name a source the corpus lacks (not found, as run counts it):
    # that is how a source with control characters reaches explain's output
    foreign = tiny["queries"].with_name("foreign.tsv")
    foreign.write_text(f"repo\tquery\ttype\tsource\ntiny\t{QUERY}\texact\t{SOURCE}\n")
    proc = _recall(tiny, "explain", QUERY, "--repo", "tiny", "--queries", str(foreign))
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
    saved.save_runs(path, META, rows, [(run, data_key(load_pins(tiny["corpus"]), rows))])
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


class _Terminal(io.StringIO):
    """A stream that says it is a terminal (or not), as sys.stderr on a TTY does."""

    def __init__(self, tty: bool = True) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _last_line(written: str) -> str:
    """What the terminal shows last: the text after the final carriage return."""
    return re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", written).rsplit("\r", 1)[-1].rstrip()


def test_progress_counts_rows_with_a_percentage_and_an_eta_on_a_terminal():
    stream, clock = _Terminal(), _Clock()
    status = Progress(stream, clock, environ={})
    with status.task("candidate", 8, "rows") as task:
        assert _last_line(stream.getvalue()) == "candidate 0/8 rows 0% ETA -"
        clock.now += 2.0
        status.advance(task, 2)  # 2 rows in 2 s: 6 left, 6 s
        assert _last_line(stream.getvalue()) == "candidate 2/8 rows 25% ETA 6s"
        status.note(task, "gin: indexing")
        assert _last_line(stream.getvalue()).endswith("ETA 6s (gin: indexing)")
        clock.now += 0.01
        status.advance(task)  # within the redraw interval: no redraw
        assert _last_line(stream.getvalue()).startswith("candidate 2/8 rows")
        clock.now += 1000.0
        status.advance(task, 5)  # done: drawn whatever the interval
        assert _last_line(stream.getvalue()) == "candidate 8/8 rows 100% (gin: indexing)"
    assert "\x1b[1mcandidate\x1b[0m" in stream.getvalue()  # colored: the label in bold
    assert stream.getvalue().endswith("\x1b[2K\r")  # erased when the last task ends


def test_progress_nests_commits_over_rows_and_says_lines_above_it():
    stream, clock = _Terminal(), _Clock()
    status = Progress(stream, clock, environ={})
    with status.task("history", 3, "commits") as commits:
        status.say("recall: history: abc: building")
        with status.task("base abc", 100, "rows") as rows:
            clock.now += 30.0
            status.advance(rows, 100)
            assert status.line() == "history 0/3 commits 0% ETA - | base abc 100/100 rows 100%"
        status.advance(commits)
        assert status.line() == "history 1/3 commits 33% ETA 1m00s"
    assert "recall: history: abc: building\n" in stream.getvalue()


def test_progress_is_plain_text_under_no_color_and_absent_off_a_terminal():
    plain, clock = _Terminal(), _Clock()
    status = Progress(plain, clock, environ={"NO_COLOR": "1"})
    with status.task("candidate", 4, "rows") as task:
        clock.now += 1.0
        status.advance(task)
    assert "\x1b" not in plain.getvalue()
    assert "\rcandidate 1/4 rows 25% ETA 3s" in plain.getvalue()
    assert plain.getvalue().endswith("\r" + " " * len("candidate 1/4 rows 25% ETA 3s") + "\r")
    piped = _Terminal(tty=False)
    quiet = Progress(piped, clock, environ={})
    with quiet.task("candidate", 4, "rows") as task:
        quiet.advance(task, 4)
    quiet.say("recall: history: a line")
    assert piped.getvalue() == "recall: history: a line\n"  # lines, never the status


def test_a_warning_goes_above_the_status_line_and_the_line_is_drawn_again_under_it():
    """Issue 46: cache.warn printed to stderr itself, in the middle of `recall history`'s
    status line; through the reporter it erases the line, writes its own, and redraws."""
    stream, clock = _Terminal(), _Clock()
    status = Progress(stream, clock, environ={"NO_COLOR": "1"})
    with status.task("history", 3, "commits"), reporting(status):
        before = len(stream.getvalue())
        warn("cache entry X does not match its digest (edited on disk?): dropped, made again")
        written = stream.getvalue()[before:]
    blank = "\r" + " " * len("history 0/3 commits 0% ETA -") + "\r"
    assert written == (
        f"{blank}recall: warning: cache entry X does not match its digest (edited on disk?): "
        "dropped, made again\n\rhistory 0/3 commits 0% ETA -"
    )


class _Recorder:
    """A reporter of a Python program's own: it keeps what it is told."""

    def __init__(self) -> None:
        self.told: list[tuple[str, str]] = []

    @contextlib.contextmanager
    def task(self, label: str, total: int, unit: str) -> Iterator[Task]:
        self.told.append(("task", f"{label} {total} {unit}"))
        yield Task(label, total, unit, 0.0)

    def advance(self, task: Task, n: int = 1) -> None:
        task.done += n

    def note(self, task: Task, text: str) -> None:
        self.told.append(("note", text))

    def say(self, message: str) -> None:
        self.told.append(("say", message))

    def warn(self, message: str) -> None:
        self.told.append(("warn", message))

    def aside(self, message: str) -> None:
        self.told.append(("aside", message))


def test_a_reporter_of_its_own_gets_the_warnings_and_lines_and_stderr_gets_none(tmp_path, capsys):
    """The cache's warnings and the corpus's lines, which wrote to stderr directly, reach a
    reporter given to recall.reporting, and nothing reaches stderr."""
    make_repo(tmp_path / "demo", {"a.py": "def alpha():\n    pass\n"})
    sha = git.Repo(tmp_path / "demo").head.commit.hexsha
    pin = Pin("demo", (tmp_path / "demo").as_uri(), sha, "python")
    entry = tmp_path / "cache" / "symbols" / "x.json"
    entry.parent.mkdir(parents=True)
    entry.write_bytes(b"not an entry\n")
    recorder = _Recorder()
    with recall.reporting(recorder):
        fetch(pin, tmp_path / "cache", mirror=tmp_path / "empty-mirror")
        assert read_file(entry) is None
    assert capsys.readouterr().err == ""
    assert recorder.told == [
        ("say", f"recall: demo: not in mirror {tmp_path / 'empty-mirror'}; fetching {pin.url}"),
        ("aside", f"recall: fetching demo {sha[:12]} from {pin.url}"),
        ("warn", f"cache entry {entry} has no digest (written by an older recall, or not by "
                 "recall): dropped, made again"),
    ]  # fmt: skip
    assert progress() is not recorder  # the default is back after the block


@needs_ctags
@pytest.mark.slow
def test_a_run_on_a_pseudo_terminal_shows_progress_on_stderr_and_nothing_on_stdout(tiny):
    """The real CLI in a process whose stderr is a pty: the status line reaches it, stdout
    (a pipe) holds the report alone; NO_COLOR leaves no escape on the pty."""
    for no_color in ("", "1"):
        main, secondary = pty.openpty()
        env = {**os.environ, "RECALL_MIRROR": "", "NO_COLOR": no_color}
        proc = subprocess.Popen(
            [sys.executable, "-m", "recall", "--queries", str(tiny["queries"]), "--allow-empty",
             "--no-regress", "--corpus", str(tiny["corpus"]), "--cache", str(tiny["cache"]),
             "--finder", str(tiny["finder"])],
            cwd=tiny["finder"], stdout=subprocess.PIPE, stderr=secondary, env=env,
        )  # fmt: skip
        os.close(secondary)
        seen = b""
        while True:
            try:
                chunk = os.read(main, 4096)
            except OSError:  # EIO: the process closed the pty
                break
            if not chunk:
                break
            seen += chunk
        stdout = proc.stdout.read().decode() if proc.stdout else ""
        assert proc.wait(timeout=120) == 0, seen
        os.close(main)
        text = seen.decode()
        assert "candidate 2/2 rows 100%" in re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", text), text
        assert ("\x1b[" in text) is not bool(no_color), text
        assert "rows 100%" not in stdout and "\x1b" not in stdout and "candidate" in stdout

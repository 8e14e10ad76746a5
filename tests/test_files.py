"""write_atomic replaces a regular file (or writes through a link to one) and refuses
every other target, keeping a rewritten file's mode and giving a new one the umask's;
read_input reads a regular file or a pipe (once) and refuses every other input."""

import contextlib
import json
import os
import socket
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import ROOT, SUBSEQUENCE_ENGINE, SUBSEQUENCE_FINDER, run_cli, tiny_suite

from recall.errors import RecallError
from recall.files import read_input, stage, write_atomic


@contextlib.contextmanager
def _umask(mask: int) -> Iterator[None]:
    before = os.umask(mask)
    try:
        yield
    finally:
        os.umask(before)


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_a_new_file_gets_the_mode_the_umask_gives(tmp_path):
    with _umask(0o022):
        write_atomic(tmp_path / "a.html", b"a")
    with _umask(0o077):
        write_atomic(tmp_path / "b.html", b"b")
    assert _mode(tmp_path / "a.html") == 0o644
    assert _mode(tmp_path / "b.html") == 0o600


@pytest.mark.parametrize("mode", [0o644, 0o755, 0o640])
def test_a_rewritten_file_keeps_its_mode(tmp_path, mode):
    path = tmp_path / "queries.tsv"
    path.write_bytes(b"old")
    path.chmod(mode)
    with _umask(0o077):
        write_atomic(path, b"new")
    assert path.read_bytes() == b"new" and _mode(path) == mode


def test_a_symlink_to_a_file_stays_and_its_target_is_replaced_keeping_its_mode(tmp_path):
    (tmp_path / "reports").mkdir()
    real = tmp_path / "reports" / "report.html"
    real.write_bytes(b"old")
    real.chmod(0o644)
    link = tmp_path / "latest.html"
    link.symlink_to(Path("reports", "report.html"))  # relative, as links often are
    chain = tmp_path / "chain.html"
    chain.symlink_to(link)
    write_atomic(chain, b"new")
    assert chain.is_symlink() and link.is_symlink()
    assert os.readlink(link) == str(Path("reports", "report.html"))
    assert real.read_bytes() == b"new" and _mode(real) == 0o644
    assert sorted(p.name for p in tmp_path.iterdir()) == ["chain.html", "latest.html", "reports"]
    assert [p.name for p in (tmp_path / "reports").iterdir()] == ["report.html"]


def _fifo(path: Path) -> str:
    os.mkfifo(path)
    return "is a FIFO"


def _directory(path: Path) -> str:
    path.mkdir()
    return "is a directory"


def _socket(path: Path) -> str:
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(path))
    return "is a socket"


def _dangling(path: Path) -> str:
    path.symlink_to(path.with_name("nowhere"))
    return "is a dangling symlink"


def _loop(path: Path) -> str:
    path.symlink_to(path)
    return "is a symlink (Too many levels of symbolic links)"


def _link_to_fifo(path: Path) -> str:
    os.mkfifo(path.with_name("pipe"))
    path.symlink_to(path.with_name("pipe"))
    return "is a FIFO (through the link to"


@pytest.mark.parametrize(
    "make", [_fifo, _directory, _socket, _dangling, _loop, _link_to_fifo], ids=lambda f: f.__name__
)
def test_a_target_that_is_not_a_regular_file_is_refused_and_left_as_it_was(tmp_path, make):
    path = tmp_path / "out.html"
    what = make(path)
    before = os.lstat(path)
    with pytest.raises(RecallError) as caught:
        write_atomic(path, b"report")
    assert str(caught.value).startswith(f"{path}: {what}"), caught.value
    after = os.lstat(path)
    assert (after.st_ino, after.st_mode) == (before.st_ino, before.st_mode)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary left


def test_a_device_node_is_refused_and_left_as_it_was(tmp_path):
    """As root a rename would replace the node; a copy of /dev/null's device where the
    system allows making one, else /dev/null itself."""
    path = tmp_path / "null"
    try:
        os.mknod(path, 0o666 | stat.S_IFCHR, os.stat("/dev/null").st_rdev)
    except OSError:
        path = Path("/dev/null")
    before = os.lstat(path)
    with pytest.raises(RecallError, match=r"is a character device, not a regular file"):
        write_atomic(path, b"report")
    after = os.lstat(path)
    assert (after.st_ino, after.st_rdev, stat.S_ISCHR(after.st_mode)) == (
        before.st_ino, before.st_rdev, True,
    )  # fmt: skip


def test_a_staged_write_changes_nothing_until_committed_then_puts_the_new_bytes_in_place(
    tmp_path,
):
    path = tmp_path / "corpus.json"
    path.write_bytes(b"old")
    os.chmod(path, 0o640)
    staged = stage(path, b"new", durable=True)
    assert path.read_bytes() == b"old"
    staged.commit()
    assert path.read_bytes() == b"new" and [p.name for p in tmp_path.iterdir()] == ["corpus.json"]
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640


def test_a_discarded_staged_write_leaves_the_file_and_no_temporary(tmp_path):
    path = tmp_path / "corpus.json"
    path.write_bytes(b"old")
    staged = stage(path, b"new", durable=True)
    staged.discard()
    assert path.read_bytes() == b"old" and [p.name for p in tmp_path.iterdir()] == ["corpus.json"]


@pytest.mark.parametrize(
    "args",
    [
        ("results", "--render-only", "--out"),
        ("history", "--html"),
        ("run", "--save"),
    ],
    ids=["results-out", "history-html", "run-save"],
)
def test_a_command_refuses_a_fifo_to_write_before_any_work(tmp_path, args):
    fifo = tmp_path / "page"
    os.mkfifo(fifo)
    proc = run_cli(*args, str(fifo), "--cache", str(tmp_path / "cache"))
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == f"recall: {fifo}: is a FIFO, not a regular file; refusing to replace it\n"
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and not (tmp_path / "cache").exists()


# The one reader of the files a user names (read_input) -----------------------------------


@contextlib.contextmanager
def _pipe(data: bytes) -> Iterator[Path]:
    """A pipe as the shell hands one over (`<(...)`): /dev/fd/N, fed by a thread so that
    a file larger than the pipe's buffer does not block the writer."""
    read_fd, write_fd = os.pipe()

    def feed() -> None:
        with os.fdopen(write_fd, "wb") as handle:
            handle.write(data)

    feeder = threading.Thread(target=feed)
    feeder.start()
    try:
        yield Path(f"/dev/fd/{read_fd}")
    finally:
        feeder.join()
        os.close(read_fd)


def test_a_pipe_is_read_once_and_every_later_read_gets_the_same_bytes():
    data = b"repo\tquery\ttype\tsource\n" + b"x" * 200_000  # more than a pipe's buffer
    with _pipe(data) as path:
        assert stat.S_ISFIFO(os.stat(path).st_mode)
        assert read_input(path) == data
        assert read_input(path) == data  # the pipe is empty now: the kept bytes


@contextlib.contextmanager
def _unblocked(fifo: Path) -> Iterator[None]:
    """Should a reader block on the FIFO's open, a writer comes after 20 s and ends it, so
    that the test fails rather than hangs."""
    done = threading.Event()

    def rescue() -> None:
        if not done.wait(20):
            with contextlib.suppress(OSError):
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))

    watchdog = threading.Thread(target=rescue)
    watchdog.start()
    try:
        yield
    finally:
        done.set()
        watchdog.join()


def _socket_at(path: Path) -> str:
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(path))
    return "is a socket, not a regular file or a pipe"


@pytest.mark.parametrize(
    ("make", "what"),
    [
        (lambda p: os.mkfifo(p), "is a FIFO in the file system, whose reading waits for a writer"),
        (lambda p: p.mkdir(), "is a directory, not a regular file or a pipe"),
        (lambda p: p.symlink_to("/dev/zero"), "is a character device, not a regular file"),
        (_socket_at, "is a socket, not a regular file or a pipe"),
        (lambda p: p.symlink_to(p), "cannot read: Too many levels of symbolic links"),
    ],
    ids=["named-fifo", "directory", "dev-zero", "socket", "link-loop"],
)
def test_an_input_that_is_no_regular_file_or_pipe_is_refused_in_one_line(tmp_path, make, what):
    path = tmp_path / "queries.tsv"
    make(path)
    with _unblocked(path), pytest.raises(RecallError) as caught:
        read_input(path, f"--queries {path}")
    assert str(caught.value).startswith(f"--queries {path}: {what}"), caught.value


READERS = [
    ("--queries", "queries"), ("--corpus", "corpus"), ("--engine", None),
    ("--accept", None), ("--regress", None), ("--against", None),
]  # fmt: skip


@pytest.mark.parametrize(("flag", "_key"), READERS, ids=[flag for flag, _key in READERS])
def test_every_flag_that_names_a_file_to_read_refuses_a_named_fifo_before_any_work(
    tmp_path, flag, _key
):
    """Issue 42 item 12: `--queries FIFO` blocked for ever (inputs were not checked for
    their type, outputs were)."""
    suite = tiny_suite(tmp_path, ["alfu\tabbr2\talpha_function"], {"finder.py": SUBSEQUENCE_FINDER,
                       "recall.toml": SUBSEQUENCE_ENGINE})  # fmt: skip
    fifo = tmp_path / "named.fifo"
    os.mkfifo(fifo)
    named = {
        "--corpus": str(suite["corpus"]), "--queries": str(suite["queries"]),
        "--finder": str(suite["finder"]), "--cache": str(suite["cache"]),
    }  # fmt: skip
    named[flag] = str(fifo)
    baseline = () if flag not in ("--accept",) else ("--base-bin", sys.executable)
    args = [part for pair in named.items() for part in pair]
    with _unblocked(fifo):
        proc = run_cli(*args, *baseline)
    assert proc.returncode == 2 and proc.stdout == "", proc.stderr
    (line,) = proc.stderr.splitlines()
    assert line.startswith("recall: ") and f"{fifo}: is a FIFO in the file system" in line, line
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_typing_set_and_a_query_set_through_a_pipe_report_as_the_same_files_do(tmp_path):
    """Issue 42 item 19: `--queries <(grep ...)` was read twice (its type sniffed, then
    its rows) and called empty. The shell's own process substitution, in a process."""
    suite = tiny_suite(
        tmp_path, ["alfu\tabbr2\talpha_function", "gadel\tabbr3\tgamma_delta"],
        {"finder.py": SUBSEQUENCE_FINDER, "recall.toml": SUBSEQUENCE_ENGINE},
    )  # fmt: skip
    typing = tmp_path / "typing.tsv"
    typing.write_text(
        "repo\tsequence\tstep\tquery\tsource\n"
        "tiny\tprefix\t1\tb\tBetaClass\ntiny\tprefix\t2\tbe\tBetaClass\n"
        "tiny\tstarts\t1\tg\tgamma_delta\ntiny\tstarts\t2\tgd\tgamma_delta\n"
    )
    common = (
        f"--finder {suite['finder']} --corpus {suite['corpus']} --cache {suite['cache']} "
        "--no-regress --json"
    )
    for given in (suite["queries"], typing):
        as_file = run_cli(*common.split(), "--queries", str(given))
        assert as_file.returncode == 0, as_file.stderr
        proc = subprocess.run(
            ["bash", "-c", f'"$0" -m recall {common} --queries <(cat {given})', sys.executable],
            capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)},
            timeout=300,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        piped, whole = json.loads(proc.stdout), json.loads(as_file.stdout)
        assert piped["queries"] == whole["queries"] > 0
        assert piped["runs"][0]["first"] == whole["runs"][0]["first"]
        for part in ("ceiling", "effort"):
            assert piped.get(part) == whole.get(part)
        assert piped["meta"]["queries_sha256"] == whole["meta"]["queries_sha256"]


@pytest.mark.parametrize(
    "args",
    [("run", "--html"), ("run", "--save"), ("history", "--html")],
    ids=["run-html", "run-save", "history-html"],
)
def test_a_file_in_a_folder_that_does_not_exist_is_refused_and_no_folder_is_made(tmp_path, args):
    """Issue 44 item 9: `--html /nonexistent/dir/x.html` made /nonexistent/dir."""
    missing = tmp_path / "nonexistent" / "dir"
    proc = run_cli(*args, str(missing / "x.html"), "--cache", str(tmp_path / "cache"))
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == (
        f"recall: {missing / 'x.html'}: the folder {missing} does not exist; recall makes no "
        "folder it was not asked to (create it, or name a file in a folder that exists)\n"
    )
    assert sorted(os.listdir(tmp_path)) == []  # neither the folder nor a cache


def test_a_cache_entry_makes_its_own_folder(tmp_path):
    from recall.cache import keep_file, read_file

    entry = tmp_path / "cache" / "results" / "x.json"
    assert keep_file(entry, b"{}")
    assert read_file(entry) == b"{}"

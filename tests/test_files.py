"""write_atomic replaces a regular file (or writes through a link to one) and refuses
every other target, keeping a rewritten file's mode and giving a new one the umask's."""

import contextlib
import os
import socket
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import run_cli

from recall.errors import RecallError
from recall.files import stage, write_atomic


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


def test_a_staged_write_changes_nothing_until_committed(tmp_path):
    path = tmp_path / "corpus.json"
    path.write_bytes(b"old")
    staged = stage(path, b"new", durable=True)
    assert path.read_bytes() == b"old"
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

"""Writing a file the user named, or a cache entry: whole or not at all, and destroying
nothing that was not a file of ours to replace.

A report or saved file is written to a temporary file beside its target and renamed over
it, so a reader sees the old content or the new, never half. The rename replaces whatever
the name points at, so the target is looked at first:
- absent: the new file gets the mode the umask gives (as `open` or a shell's `>` would);
- a regular file: replaced, keeping its mode (a committed `queries.tsv` stays 0644, a
  script 0755), and its owner and group where the process may set them;
- a symlink to a regular file (through any chain of links): the link stays, and its final
  target is replaced the same way, in the target's own folder (a rename never crosses
  file systems);
- anything else (a FIFO, a device, a directory, a socket, a dangling or looping link):
  refused with its path, exit 2, and nothing written. A rename over a FIFO or a device
  node would delete it and never deliver the data to the reader it was meant for.

A file the user names to be read (a query set, a typing set, a saved run, a shard's file,
an accept or regress file, an engine file, corpus.json) is read by `read_input`, the one
reader, which looks at what the name is first:
- a regular file (or a link to one): read whole;
- a pipe the shell hands over (`--queries <(grep ...)`, `/dev/fd/N`, `/dev/stdin` on a
  pipe): read once and kept, since a second read of a pipe finds it empty, and every
  later read of that name gets the bytes of the first;
- anything else (a FIFO in the file system, whose open blocks until some writer comes; a
  device, `/dev/zero` reads for ever; a directory; a socket): refused with its path.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path

from recall.errors import RecallError

# The most a file the user names may hold: a saved run of every query set is a few tens of
# MB, so anything past this is no input of ours (a pipe of `yes`), refused before it
# fills the memory.
MAX_INPUT = 1 << 30
_CHUNK = 1 << 20
TOO_BIG = f"more than the {MAX_INPUT} bytes an input of recall may hold"

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


@dataclass(frozen=True)
class Target:
    """Where a write lands: the path whose rename replaces it (the final target of a link),
    and the mode, owner and group of the regular file there now (None: a new file)."""

    path: Path
    mode: int | None = None
    owner: tuple[int, int] | None = None


def _kind(mode: int) -> str:
    return next((what for test, what in _KINDS if test(mode)), "not a regular file")


def target(path: Path) -> Target:
    """The target a write of path replaces, or a RecallError naming path when what is
    there is not a regular file or a link to one, or when its folder does not exist: a
    file the user names goes into a folder that is there (a mistyped `--html
    /nonexistent/dir/x.html` must not make folders), and the cache makes its own folders
    before it writes. Any other OSError (a file where a folder of the path should be) is
    the caller's to report, as a failed write is."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        if not os.path.isdir(path.parent):
            raise RecallError(
                f"{path}: the folder {path.parent} does not exist; recall makes no folder "
                "it was not asked to (create it, or name a file in a folder that exists)"
            ) from None
        return Target(path)
    final = path
    if stat.S_ISLNK(st.st_mode):
        try:
            final = Path(os.path.realpath(path, strict=True))
            st = os.stat(final)
        except OSError as exc:
            why = "a dangling symlink" if isinstance(exc, FileNotFoundError) else "a symlink"
            raise RecallError(
                f"{path}: is {why} ({exc.strerror or exc}); refusing to replace it"
            ) from None
    if not stat.S_ISREG(st.st_mode):
        through = f" (through the link to {final})" if final != path else ""
        raise RecallError(
            f"{path}: is {_kind(st.st_mode)}{through}, not a regular file; refusing to replace it"
        )
    return Target(final, stat.S_IMODE(st.st_mode), (st.st_uid, st.st_gid))


@dataclass(frozen=True)
class Staged:
    """Data written to a temporary file beside its target, not yet in place."""

    temp: Path
    target: Target

    def commit(self) -> None:
        os.replace(self.temp, self.target.path)

    def discard(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.temp)


def stage(path: Path, data: bytes, *, durable: bool = False) -> Staged:
    """data in a temporary file beside path's target, with the mode the target will keep;
    commit() puts it in place. durable: flushed to disk before commit, for files written
    as a set (a crash between two renames must not find one of them empty)."""
    where = target(path)
    temp = where.path.parent / f".{where.path.name}.{secrets.token_hex(4)}.partial"
    # 0o666 through the umask, as any new file gets; an existing file's mode is set after
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    staged = Staged(temp, where)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            if where.owner is not None:
                with contextlib.suppress(PermissionError):  # only root may give files away
                    os.fchown(handle.fileno(), *where.owner)
            if where.mode is not None:
                os.fchmod(handle.fileno(), where.mode)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
    except BaseException:
        staged.discard()
        raise
    return staged


def write_atomic(path: Path, data: bytes) -> None:
    """Write a file that readers see whole or not at all, replacing only a regular file
    (or, through a symlink, the regular file it names), whose mode it keeps."""
    staged = stage(path, data)
    try:
        staged.commit()
    except BaseException:
        staged.discard()
        raise


def file_sha256(path: Path) -> str:
    """The hex SHA-256 of an input file's bytes (read_input's): what a saved run records
    of its corpus.json and query set, so that a merge or a reload can tell they are the
    same files now."""
    return hashlib.sha256(read_input(path)).hexdigest()


# Pipes read already, by device and inode: a pipe holds its bytes for one reader, once.
_PIPES: dict[tuple[int, int], bytes] = {}


def _pipe_device() -> int:
    """The device every anonymous pipe lives on (pipefs): a FIFO in the file system lives
    on the file system's own, which tells a pipe the shell made from a named FIFO."""
    read, write = os.pipe()
    try:
        return os.fstat(read).st_dev
    finally:
        os.close(read)
        os.close(write)


def read_input(path: Path, where: str | None = None) -> bytes:
    """The bytes of a file the user named, checked for its type before it is opened (and
    again once open, on the descriptor itself): a regular file, or a pipe the shell hands
    over, read once and kept; anything else refused as one line naming `where` (the
    flag and path an error shows; the path by default)."""
    where = where or str(path)
    try:
        st = os.stat(path)
    except OSError as exc:
        raise RecallError(f"{where}: cannot read: {exc.strerror or exc}") from None
    _check_input_kind(where, st)
    key = (st.st_dev, st.st_ino)
    if stat.S_ISFIFO(st.st_mode) and key in _PIPES:
        return _PIPES[key]
    try:
        # O_NONBLOCK: a FIFO swapped in after the stat must not block the open
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise RecallError(f"{where}: cannot read: {exc.strerror or exc}") from None
    try:
        opened = os.fstat(fd)
        _check_input_kind(where, opened)
        os.set_blocking(fd, True)
        data = _read_all(fd, where)
    except OSError as exc:
        raise RecallError(f"{where}: cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if stat.S_ISFIFO(opened.st_mode):
        _PIPES[(opened.st_dev, opened.st_ino)] = data
    return data


def _check_input_kind(where: str, st: os.stat_result) -> None:
    if stat.S_ISREG(st.st_mode):
        if st.st_size > MAX_INPUT:
            raise RecallError(f"{where}: {st.st_size} bytes, {TOO_BIG}")
        return
    if stat.S_ISFIFO(st.st_mode):
        if st.st_dev == _pipe_device():
            return
        raise RecallError(
            f"{where}: is a FIFO in the file system, whose reading waits for a writer; give "
            "a regular file, or a pipe (<(command))"
        )
    raise RecallError(f"{where}: is {_kind(st.st_mode)}, not a regular file or a pipe")


def _read_all(fd: int, where: str) -> bytes:
    chunks, size = [], 0
    while chunk := os.read(fd, _CHUNK):
        size += len(chunk)
        if size > MAX_INPUT:
            raise RecallError(f"{where}: {TOO_BIG}")
        chunks.append(chunk)
    return b"".join(chunks)

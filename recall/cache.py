"""One cache-entry mechanism: every entry of recall's cache is made, published and read
back the same way.

An entry is known by a key (a digest of everything that could change it) and carries a
digest of its own content, written with it and checked when it is read: an entry
edited on disk, truncated or swapped, even one still well-formed, is dropped with one
warning line naming it, and the work is done again. A folder entry (a build, an
interpreter, a node install, a kept index) is made once under a lock, in a temporary
folder beside it that is renamed into place with its marker (holding the digest)
written last, so a killed or concurrent maker never leaves a folder that looks whole,
and a killed maker's temporary folder is swept by the next one. A file entry (results,
ceilings) is one file whose first line is the digest of the rest, written atomically.

Every entry, a checkout of recall.inputs.corpus too, is guarded by the same two locks:
<kind>/<key>.lock, held by its one maker, and <kind>/<key>.inuse, held shared by every
process that uses it until it exits, which `recall cache prune` must take exclusively
(never waiting) before it removes anything.

A write that fails (a full disk, a read-only cache) must not lose work already done:
`keep_file` and `FolderEntry.keep` say so in one warning line naming the entry and let
the run go on with what it computed.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import os
import shutil
import tempfile
import time
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import orjson

from recall.errors import RecallError

if TYPE_CHECKING:
    from recall.terminal import Reporter
from recall.files import write_atomic

HEADER = b"recall-entry sha256:"  # a file entry's first line: this, the digest, "\n"
STALE_TEMP_S = 86400.0  # a file entry's temporary file older than this was left by a kill
Kept = typing.TypeVar("Kept")  # what a memoised entry holds


def key_digest(parts: object, length: int = 32) -> str:
    """The entry name of a key: a digest of its parts, whatever order a dict was built in."""
    data = orjson.dumps(parts, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)
    return hashlib.sha256(data).hexdigest()[:length]


def reporter() -> Reporter:
    """The process's reporter (recall/terminal.py), imported only when there is something
    to say: the reference finder's index imports this module, and a kept index is known
    by the files its index reads (the preset's index_inputs), which the terminal is not."""
    from recall.terminal import progress

    return progress()


def warn(message: str) -> None:
    """One warning line, through the reporter (above the status line): the run goes on."""
    reporter().warn(message)


def _dropped(path: Path, why: str) -> None:
    warn(f"cache entry {path} {why}: dropped, made again")


# Locks and in-use marks --------------------------------------------------------------


@contextlib.contextmanager
def locked(lock_path: Path) -> Iterator[None]:
    """An exclusive advisory lock, released by the kernel even if the holder is killed."""
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


_HELD: list[typing.IO[bytes]] = []


def hold_in_use(lock_path: Path) -> None:
    """Mark a cache entry in use by this process until it exits: a shared lock that
    `recall cache prune` cannot take exclusively, and an mtime that says when it was last
    used. Taken before the entry is fetched or built, so prune cannot slip in between; a
    second call for the same entry keeps the one lock (so the process can make it
    exclusive, see sole_user)."""
    if _held(lock_path) is not None:
        os.utime(lock_path)
        return
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    handle = open(lock_path, "a+b")  # noqa: SIM115 - held until the process exits
    fcntl.flock(handle, fcntl.LOCK_SH)
    os.utime(lock_path)
    _HELD.append(handle)


def _held(lock_path: Path) -> typing.IO[bytes] | None:
    return next((h for h in _HELD if h.name == os.fspath(lock_path) and not h.closed), None)


def release_in_use() -> None:
    """Drop every in-use mark this process holds, for a process that outlives its run."""
    while _HELD:
        _HELD.pop().close()


@contextlib.contextmanager
def sole_user(lock_path: Path) -> Iterator[bool]:
    """An entry's in-use mark taken exclusively while no other process holds it (the
    mark this process already holds is converted): True for the time of the block, after
    which this process holds the mark shared, as hold_in_use leaves it; or False at once.
    It never waits, so two runs that each hold a checkout the other must rebuild cannot
    wait on each other for ever."""
    handle = _held(lock_path)
    fresh = handle is None
    if handle is None:
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(lock_path, "a+b")  # noqa: SIM115 - kept in _HELD once the block succeeds
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        if fresh:
            handle.close()
        else:
            fcntl.flock(handle, fcntl.LOCK_SH)  # a failed conversion may have dropped it
        yield False
        return
    try:
        yield True
    except BaseException:
        if fresh:
            handle.close()
        else:
            fcntl.flock(handle, fcntl.LOCK_SH)
        raise
    fcntl.flock(handle, fcntl.LOCK_SH)
    os.utime(lock_path)
    if fresh:
        _HELD.append(handle)


@contextlib.contextmanager
def try_exclusive(lock_path: Path) -> Iterator[bool]:
    """An exclusive lock if nobody holds the file, else False at once (never waits)."""
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "a+b") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def use_lock(cache: Path, kind: str, key: str) -> Path:
    """The file whose shared lock marks <cache>/<kind>/<key> in use (see hold_in_use)."""
    return cache / kind / f"{key}.inuse"


# Folder entries -----------------------------------------------------------------------


def folder_digest(folder: Path, skip: str = "") -> str:
    """A folder's content: every path under it in sorted order, each with its kind, a
    file with its executable bit and the digest of its bytes, a link with its target
    (never followed). skip names a top-level file left out (the marker holding this)."""
    digest = hashlib.sha256()
    for path in sorted(_walk(folder)):
        relative = path.relative_to(folder)
        if str(relative) == skip:
            continue
        digest.update(os.fsencode(str(relative)) + b"\0")
        if path.is_symlink():
            digest.update(b"l " + os.fsencode(os.readlink(path)))
        elif path.is_dir():
            digest.update(b"d")
        elif path.is_file():
            digest.update(b"x " if os.access(path, os.X_OK) else b"f ")
            digest.update(_file_digest(path))
        else:
            digest.update(b"?")  # a fifo or socket: its presence, never its bytes
        digest.update(b"\0")
    return digest.hexdigest()


def _walk(folder: Path) -> Iterator[Path]:
    for root, dirs, files in os.walk(folder):  # links to folders are listed, not entered
        for name in (*dirs, *files):
            yield Path(root) / name


def _file_digest(path: Path) -> bytes:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.digest()


@functools.cache
def _checked() -> set[tuple[Path, str]]:
    """The entries whose content this process has checked, by path and digest: each is
    hashed once per run, since a run holds every entry it uses (prune leaves it alone)."""
    return set()


@dataclass(frozen=True)
class FolderEntry:
    """<cache>/<kind>/<key>: a folder made whole or not at all, under <key>.lock."""

    cache: Path
    kind: str
    key: str
    marker: str  # the file written last inside the entry, holding its digest

    @property
    def root(self) -> Path:
        return self.cache / self.kind

    @property
    def path(self) -> Path:
        return self.root / self.key

    @property
    def lock(self) -> Path:
        return self.root / f"{self.key}.lock"

    @property
    def in_use(self) -> Path:
        return use_lock(self.cache, self.kind, self.key)

    def hold(self) -> None:
        """Mark the entry in use by this process, so `recall cache prune` leaves it."""
        hold_in_use(self.in_use)

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """The entry's lock: one maker at a time, and no reader while it is made."""
        self.root.mkdir(parents=True, exist_ok=True)
        with locked(self.lock):
            yield

    def valid(self) -> bool:
        """Whether the entry is complete and its content matches its digest; a half entry
        is removed, a mismatched one dropped with a warning. Call with the lock held."""
        try:
            recorded = orjson.loads((self.path / self.marker).read_bytes())
        except FileNotFoundError:
            if self.path.exists() or self.path.is_symlink():
                self.drop()  # no marker: a half entry, or one of an older recall
            return False
        except (OSError, orjson.JSONDecodeError):
            recorded = None
        if not isinstance(recorded, dict) or not isinstance(recorded.get("digest"), str):
            _dropped(self.path, "has an unreadable marker")
            self.drop()
            return False
        if (self.path, recorded["digest"]) in _checked():
            return True
        if folder_digest(self.path, self.marker) != recorded["digest"]:
            _dropped(self.path, "does not match its digest (edited on disk?)")
            self.drop()
            return False
        _checked().add((self.path, recorded["digest"]))
        return True

    def drop(self) -> None:
        """Remove the entry: renamed aside first, so no half-removed entry is ever read."""
        discard(self.path)

    def publish(self, make: Callable[[Path], object], note: str = "") -> None:
        """Make the entry: make(folder) fills a temporary folder beside it, whose digest is
        written in the marker last, then it is renamed into place. A killed maker's
        temporary folders are swept first. Call with the lock held."""
        self.drop()
        self.sweep()
        tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{self.key}-", dir=self.root))
        try:
            make(tmp)
            digest = folder_digest(tmp, self.marker)
            marker = {"key": self.key, "digest": digest, "note": note}
            (tmp / self.marker).write_bytes(orjson.dumps(marker) + b"\n")
            tmp.rename(self.path)
            _checked().add((self.path, digest))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def sweep(self) -> None:
        """Remove the temporary folders of makers that were killed: this key's (we hold
        its lock) and any other key's whose lock nobody holds (`.tmp-<key>-XXXX`, and a
        killed drop's `.trash-<key>-<pid>`)."""
        for stale in [*self.root.glob(".tmp-*"), *self.root.glob(".trash-*")]:
            key = leftover_key(stale.name)
            if key == self.key:
                shutil.rmtree(stale, ignore_errors=True)
                continue
            with try_exclusive(self.root / f"{key}.lock") as idle:
                if idle:
                    shutil.rmtree(stale, ignore_errors=True)

    def get(
        self,
        make: Callable[[Path], object],
        note: str = "",
        usable: Callable[[Path], bool] = lambda path: True,
    ) -> Path:
        """The entry's folder, made once: held in use, then looked up, checked, or made,
        under the lock; usable(folder) is what a whole entry must also pass (an
        interpreter's base executable may be gone). A cache that cannot be written is one
        RecallError naming it."""
        self.hold()
        try:
            with self.locked():
                if not (self.valid() and usable(self.path)):
                    self.publish(make, note)
        except OSError as exc:
            raise RecallError(f"cache {self.root}: {exc.strerror or exc}") from None
        return self.path

    def keep(self, make: Callable[[Path], object], note: str = "") -> bool:
        """publish(), for work already done elsewhere (an index): a cache that cannot be
        written (full, read-only) is one warning line, and the work is still used.
        Call with the lock held."""
        try:
            self.publish(make, note)
        except OSError as exc:
            warn(f"cannot keep cache entry {self.path} ({exc.strerror or exc}): not kept")
            return False
        return True


def leftover_key(name: str) -> str:
    """The key whose maker or dropper left a folder: `.tmp-<key>-XXXX` (mkdtemp's XXXX
    holds no dash) or `.trash-<key>-<pid>`; the key's lock guards it while it is alive."""
    return name.split("-", 1)[1].rsplit("-", 1)[0]


def discard(path: Path) -> None:
    """Remove an entry, a link as a link (never followed into), a folder renamed aside
    first (`.trash-<name>-<pid>` beside it), so no half-removed entry is ever read."""
    if path.is_symlink() or (path.exists() and not path.is_dir()):
        path.unlink()
    elif path.is_dir():
        trash = path.with_name(f".trash-{path.name}-{os.getpid()}")
        shutil.rmtree(trash, ignore_errors=True)
        path.rename(trash)
        shutil.rmtree(trash, ignore_errors=True)


# File entries -------------------------------------------------------------------------


def read_file(path: Path) -> bytes | None:
    """A file entry's content, or None when it is absent, unreadable or does not match
    its digest (then dropped with one warning line)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        warn(f"cannot read cache entry {path} ({exc.strerror or exc}): made again")
        return None
    head, newline, body = data.partition(b"\n")
    if not newline or not head.startswith(HEADER):
        _dropped(path, "has no digest (written by an older recall, or not by recall)")
        drop_file(path)
        return None
    if head[len(HEADER) :] != hashlib.sha256(body).hexdigest().encode():
        _dropped(path, "does not match its digest (edited on disk?)")
        drop_file(path)
        return None
    return body


def drop_file(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()


def keep_file(path: Path, body: bytes) -> bool:
    """Write a file entry atomically, its digest first; a cache that cannot be written is
    one warning line naming the entry, and the run goes on with what it computed."""
    head = HEADER + hashlib.sha256(body).hexdigest().encode() + b"\n"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        sweep_files(path.parent)
        write_atomic(path, head + body)
    except OSError as exc:
        warn(f"cannot keep cache entry {path} ({exc.strerror or exc}): not kept")
        return False
    return True


def memoised(
    path: Path,
    make: Callable[[], Kept],
    decode: Callable[[object], Kept | None],
    encode: Callable[[Kept], object],
    what: str,
    shape: str,
) -> Kept:
    """The value a JSON file entry keeps, or `make()`'s, kept there: the one read-or-make
    step of the entries listed from a checkout (its symbols, its paths). An entry whose
    digest is right but that `decode` does not take (None: not `shape`) is one warning
    line naming it, and is made again."""
    body = read_file(path)
    if body is not None:
        try:
            value = decode(orjson.loads(body))
        except orjson.JSONDecodeError:
            value = None
        if value is not None:
            return value
        warn(f"ignoring corrupt {what} cache entry {path} ({shape}): listing the {what} again")
    value = make()
    keep_file(path, orjson.dumps(encode(value)))
    return value


def sweep_files(folder: Path, now: float | None = None) -> None:
    """Remove the temporary files of writes that were killed (`.NAME.XXXX`, as
    write_atomic names them) once they are old enough that no live write owns them."""
    if not folder.is_dir():
        return
    limit = (time.time() if now is None else now) - STALE_TEMP_S
    for path in folder.glob(".*"):
        with contextlib.suppress(OSError):
            if path.is_file() and path.stat().st_mtime < limit:
                path.unlink()

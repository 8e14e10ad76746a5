"""Finder processes: started, read, awaited and killed, one way for every protocol.

Per-query and batch finders start through the same `Spawner`, each in a session of its
own so that one SIGKILL to its group ends whatever it left behind, and everything here
reads with `poll` and waits on a pidfd, never a thread per pipe or a sleep loop where a
pidfd is available.

Starting a process takes as little of the harness's time as possible: subprocess.Popen
costs the harness about twice the CPU of the spawn itself (its pipes
wrapped in file objects, the environment encoded again, an exec-error pipe per process),
and in per-query mode that CPU competes with the finders for the same cores (see
`make bench`). Where the C library has them (glibc 2.34 and later), posix_spawn with
chdir and closefrom file actions, and setsid and default SIGPIPE/SIGXFSZ attributes,
does what Popen does for the harness in one call; elsewhere Popen does it.

A started process is a `Child`: its pid and the read ends of its stdout and stderr (and
the write end of its stdin, when started with a pipe there). A per-query process is read
to its end by `communicate`; a batch process is a `Piped`, written by `write_by` and read
line by line by an `AnswerReader`.
"""

from __future__ import annotations

import collections
import contextlib
import ctypes
import ctypes.util
import fcntl
import functools
import os
import platform
import select
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

TAIL_KEEP = 1 << 16  # of a batch finder's stderr, for the error message


@dataclass(frozen=True)
class Child:
    pid: int
    stdout: int
    stderr: int


class Piped:
    """A started process with a pipe to its stdin (a batch finder). Its exit status is
    kept once seen: a pid can be reaped only once, and then may name another process."""

    def __init__(self, child: Child, stdin: int) -> None:
        self.pid, self.stdout, self.stderr, self.stdin = (
            child.pid,
            child.stdout,
            child.stderr,
            stdin,
        )
        self.status: int | None = None
        self._open = [stdin, child.stdout, child.stderr]

    def poll(self) -> int | None:
        """The exit status if the process has ended, else None; never waits."""
        if self.status is None:
            self.status = reaped(self.pid)
        return self.status

    def wait(self, timeout: float | None = None) -> int | None:
        """The exit status once the process ends, or None if it has not within timeout."""
        if self.status is None:
            if timeout is None:
                self.status = reap(self.pid)
            else:
                self.status = wait_by(self.pid, time.monotonic() + timeout)
        return self.status

    def close_stdin(self) -> None:
        """End of the requests: the finder reads end-of-file."""
        self._close(self.stdin)

    def close(self) -> None:
        for fd in list(self._open):
            self._close(fd)

    def _close(self, fd: int) -> None:
        if fd in self._open:
            self._open.remove(fd)
            os.close(fd)


class Spawner:
    """Starts processes in one folder with one environment, each in a session of its own,
    with every other file descriptor of the harness closed."""

    def __init__(self, cwd: str, env: Mapping[bytes, bytes], *, use_popen: bool = False) -> None:
        self.cwd, self.env = cwd, dict(env)
        self.path = os.fsdecode(self.env.get(b"PATH", os.defpath.encode()))
        self._found: dict[str, str | None] = {}
        self._native = None if use_popen else _NativeSpawn.create(cwd, self.env)

    def start(self, argv: Sequence[str], stdin: int) -> Child:
        """A started process reading stdin (a file descriptor); OSError if it cannot start."""
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        try:
            if self._native is None:
                pid = self._popen(argv, stdin, out_w, err_w)
            else:
                pid = self._native.spawn(self._executable(argv[0]), argv, stdin, out_w, err_w)
        except BaseException:
            for fd in (out_r, err_r):
                os.close(fd)
            raise
        finally:
            os.close(out_w)
            os.close(err_w)
        return Child(pid, out_r, err_r)

    def start_piped(self, argv: Sequence[str]) -> Piped:
        """A started process reading a pipe the harness writes; OSError if it cannot start."""
        in_r, in_w = os.pipe()
        try:
            child = self.start(argv, in_r)
        except BaseException:
            os.close(in_w)
            raise
        finally:
            os.close(in_r)
        return Piped(child, in_w)

    def _executable(self, name: str) -> str:
        """A bare name looked up on the finder's PATH, as Popen does, not on the harness's."""
        if os.sep in name:
            return name
        if name not in self._found:
            self._found[name] = shutil.which(name, path=self.path)
        found = self._found[name]
        if found is None:
            raise FileNotFoundError(2, os.strerror(2), name)
        return found

    def _popen(self, argv: Sequence[str], stdin: int, out_w: int, err_w: int) -> int:
        proc = subprocess.Popen(
            argv, cwd=self.cwd, env=self.env, stdin=stdin, stdout=out_w, stderr=err_w,
            start_new_session=True,
        )  # fmt: skip
        proc.returncode = 0  # reaped by reap(), not by Popen: keep Popen from waiting too
        return proc.pid


def method() -> str:
    """How finder processes start here, for `recall doctor`."""
    if _glibc() is None:
        return "subprocess.Popen (no glibc 2.34 or later: more of the harness's CPU a query)"
    return f"posix_spawn (glibc {platform.libc_ver()[1]})"


def kill_group(pid: int) -> None:
    """SIGKILL to the process group led by pid (a child started in a session of its
    own), whatever of it is left; a group already gone is no error."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def reap(pid: int) -> int:
    """The exit status of an ended child, as Popen.returncode gives it (-N for signal N)."""
    _pid, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def reaped(pid: int) -> int | None:
    """reap() if the child has ended, else None."""
    done, status = os.waitpid(pid, os.WNOHANG)
    return os.waitstatus_to_exitcode(status) if done else None


def wait_by(pid: int, deadline: float) -> int | None:
    """The exit status if the process ends by deadline, else None: awaited on a pidfd
    (where there is none, by short sleeps between looks)."""
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        return _reap_by(pid, deadline)
    try:
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        poller.poll(max(0.0, deadline - time.monotonic()) * 1000)
    finally:
        os.close(pidfd)
    return reaped(pid)


def _collect(child: Child, timeout: float) -> tuple[bytes, bytes, int | None]:
    """stdout, stderr, and the exit status, or None if the process did not end within
    timeout. The answer is complete when the process exits, even if a background child it
    left still holds the pipes open, so the exit is awaited on a pidfd beside the pipes
    (where there is no pidfd, on the pipes closing)."""
    deadline = time.monotonic() + timeout
    chunks: dict[int, list[bytes]] = {child.stdout: [], child.stderr: []}
    try:
        pidfd: int | None = os.pidfd_open(child.pid)
    except (AttributeError, OSError):
        pidfd = None
    poller = select.poll()
    for fd in (child.stdout, child.stderr, *([pidfd] if pidfd is not None else [])):
        poller.register(fd, select.POLLIN)
    open_pipes, status = 2, None
    try:
        while open_pipes or (status is None and pidfd is not None):
            if status is None:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                ready = poller.poll(left * 1000)
            else:
                ready = poller.poll(0)  # exited: drain what is there, wait for no one
                if not ready:
                    break
            for fd, _event in ready:
                if fd == pidfd:
                    status = reap(child.pid)
                    poller.unregister(fd)
                    continue
                data = os.read(fd, 1 << 16)
                if data:
                    chunks[fd].append(data)
                else:
                    poller.unregister(fd)
                    open_pipes -= 1
        if status is None:
            status = _reap_by(child.pid, deadline)
    finally:
        if pidfd is not None:
            os.close(pidfd)
    return b"".join(chunks[child.stdout]), b"".join(chunks[child.stderr]), status


def _reap_by(pid: int, deadline: float) -> int | None:
    """The exit status if the process ends by deadline (only without a pidfd: a short
    sleep between looks), else None."""
    while (status := reaped(pid)) is None:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        time.sleep(min(left, 0.001))
    return status


class AnswerReader:
    """Answer lines from a batch finder's stdout, with a deadline per line and without a
    thread: the pipe is read without blocking, and polled only when it is empty. Its
    stderr is drained meanwhile (the last TAIL_KEEP bytes kept for an error message), so
    a finder that logs a lot never stalls on a full pipe."""

    def __init__(self, stdout: int, stderr: int) -> None:
        self.stdout, self.stderr_fd = stdout, stderr
        for fd in (stdout, stderr):
            os.set_blocking(fd, False)
        with contextlib.suppress(OSError, AttributeError):  # room for a long answer
            fcntl.fcntl(stdout, fcntl.F_SETPIPE_SZ, 1 << 20)
        self.lines: collections.deque[bytes] = collections.deque()
        self.partial: list[bytes] = []
        self.closed = False  # stdout reached its end
        self.stderr_open = True
        self.err = b""
        self.poller = select.poll()
        for fd in (stdout, stderr):
            self.poller.register(fd, select.POLLIN)

    def readline(self, deadline: float) -> bytes | None:
        """The next line, or None if the pipe closed (`closed` says so) or the deadline
        passed first."""
        while not self.lines:
            if self.closed:
                return None
            try:
                chunk = os.read(self.stdout, 1 << 20)
            except BlockingIOError:
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                for fd, _event in self.poller.poll(left * 1000):
                    if fd == self.stderr_fd:
                        self.drain_stderr(self.poller)
                continue
            if not chunk:
                self.closed = True
                self.poller.unregister(self.stdout)
                return None
            self._split(chunk)
        return self.lines.popleft()

    def rest(self, deadline: float) -> tuple[int, bytes]:
        """How many lines are still to come before stdout closes (or deadline), an
        unterminated last one included, and the first of them."""
        count, first = 0, b""
        while (line := self.readline(deadline)) is not None:
            count, first = count + 1, first if count else line
        if self.closed and self.partial:
            count, first = count + 1, first if count else b"".join(self.partial)
        return count, first

    def drain_stderr(self, poller: select.poll) -> None:
        """Read what stderr holds now; once it closes, poller stops watching it."""
        if self._read_stderr() == b"":
            self.stderr_open = False
            poller.unregister(self.stderr_fd)

    def _split(self, chunk: bytes) -> None:
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            if self.partial:
                self.lines.append(b"".join([*self.partial, chunk[start:end]]))
                self.partial = []
            else:
                self.lines.append(chunk[start:end])
            start = end + 1
        if start < len(chunk):
            self.partial.append(chunk[start:])

    def _read_stderr(self) -> bytes | None:
        """One read of stderr, its tail kept: what it held (b"" once closed), or None if
        it holds nothing now."""
        try:
            data = os.read(self.stderr_fd, 1 << 16)
        except BlockingIOError:
            return None
        self.err = (self.err + data)[-TAIL_KEEP:]
        return data

    def stderr(self) -> bytes:
        """The last TAIL_KEEP bytes the finder wrote to stderr, once it has ended."""
        with contextlib.suppress(OSError):
            while self._read_stderr():
                pass
        return self.err


def write_by(fd: int, data: bytes, deadline: float, reader: AnswerReader) -> bool:
    """All of data into a batch finder's stdin (non-blocking) by deadline; False if the
    finder stopped reading first. Its stderr is drained meanwhile, so that a finder
    blocked on a full stderr is not taken for one that stopped reading. A finder that
    has died reads nothing: its exit is reported when its answer does not come."""
    view = memoryview(data)
    poller: select.poll | None = None
    while view:
        try:
            view = view[os.write(fd, view) :]
            continue
        except BrokenPipeError:
            return True
        except BlockingIOError:
            pass
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        if poller is None:  # only once the pipe is full: most writes never get here
            poller = select.poll()
            poller.register(fd, select.POLLOUT)
            if reader.stderr_open:
                poller.register(reader.stderr_fd, select.POLLIN)
        for ready, _event in poller.poll(left * 1000):
            if ready == reader.stderr_fd:
                reader.drain_stderr(poller)
    return True


def communicate(child: Child, timeout: float) -> tuple[int | None, bytes, bytes]:
    """Output and exit status; None on timeout, after the whole group is killed."""
    try:
        out, err, status = _collect(child, timeout)
        if status is None:
            kill_group(child.pid)
            reap(child.pid)
        return status, out, err
    except BaseException:
        kill_group(child.pid)
        with contextlib.suppress(ChildProcessError):
            reap(child.pid)
        raise
    finally:
        os.close(child.stdout)
        os.close(child.stderr)


# glibc's values (spawn.h); other C libraries take the Popen path.
_SETSIGDEF, _SETSIGMASK, _SETSID = 0x04, 0x08, 0x80
_OPAQUE = 1024  # larger than glibc's posix_spawnattr_t (336 bytes) and file actions (80)


@functools.cache
def _glibc() -> ctypes.CDLL | None:
    """The C library, if it is a glibc with every call the native path needs."""
    if platform.libc_ver()[0] != "glibc":
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        for name in ("addchdir_np", "addclosefrom_np", "adddup2", "init", "destroy"):
            getattr(libc, f"posix_spawn_file_actions_{name}")
    except (OSError, AttributeError):
        return None
    pointer = ctypes.c_void_p
    libc.posix_spawn.argtypes = [ctypes.POINTER(ctypes.c_int), ctypes.c_char_p, *[pointer] * 4]
    return libc


def _sigset(*signals: int) -> ctypes.Array[ctypes.c_ulong]:
    """A glibc sigset_t holding signals: 1024 bits in unsigned longs, signal n at bit n-1."""
    bits = 8 * ctypes.sizeof(ctypes.c_ulong)
    words = (ctypes.c_ulong * (1024 // bits))()
    for signum in signals:
        words[(signum - 1) // bits] |= 1 << ((signum - 1) % bits)
    return words


class _NativeSpawn:
    """glibc's posix_spawn through ctypes (which lets go of the GIL for the call)."""

    @classmethod
    def create(cls, cwd: str, env: Mapping[bytes, bytes]) -> _NativeSpawn | None:
        libc = _glibc()
        return None if libc is None else cls(libc, cwd, env)

    def __init__(self, libc: ctypes.CDLL, cwd: str, env: Mapping[bytes, bytes]) -> None:
        self.libc = libc
        self.cwd = os.fsencode(cwd)
        self.entries = [k + b"=" + v for k, v in env.items()]  # kept alive for envp
        self.envp = (ctypes.c_char_p * (len(self.entries) + 1))(*self.entries, None)
        self.attr = ctypes.create_string_buffer(_OPAQUE)
        libc.posix_spawnattr_init(self.attr)
        # Popen's restore_signals resets SIGPIPE and SIGXFSZ, which Python ignores; glibc's
        # child sets its own two internal signals (32, 33) to ignored, which exec keeps,
        # and its sigaddset refuses them: the set is written bit by bit, as sigset_t is.
        defaults = _sigset(signal.SIGPIPE, signal.SIGXFSZ, *range(32, signal.SIGRTMIN))
        libc.posix_spawnattr_setsigdefault(self.attr, ctypes.byref(defaults))
        libc.posix_spawnattr_setsigmask(self.attr, ctypes.byref(_sigset()))
        libc.posix_spawnattr_setflags(self.attr, ctypes.c_short(_SETSID | _SETSIGDEF | _SETSIGMASK))

    def spawn(self, path: str, argv: Sequence[str], stdin: int, out_w: int, err_w: int) -> int:
        libc = self.libc
        actions = ctypes.create_string_buffer(_OPAQUE)
        libc.posix_spawn_file_actions_init(actions)
        try:
            for fd, target in ((stdin, 0), (out_w, 1), (err_w, 2)):
                libc.posix_spawn_file_actions_adddup2(actions, fd, target)
            libc.posix_spawn_file_actions_addchdir_np(actions, self.cwd)
            libc.posix_spawn_file_actions_addclosefrom_np(actions, 3)
            args = [os.fsencode(a) for a in argv]
            c_argv = (ctypes.c_char_p * (len(args) + 1))(*args, None)
            pid = ctypes.c_int()
            error = libc.posix_spawn(
                ctypes.byref(pid), os.fsencode(path), actions, self.attr, c_argv, self.envp
            )
        finally:
            libc.posix_spawn_file_actions_destroy(actions)
        if error:
            raise OSError(error, os.strerror(error), path)
        return pid.value

"""Starting one finder process per query, for as little of the harness's time as possible.

subprocess.Popen costs the harness about twice the CPU of the spawn itself (its pipes
wrapped in file objects, the environment encoded again, an exec-error pipe per process),
and in per-query mode that CPU competes with the finders for the same cores (see
`make bench`). Where the C library has them (glibc 2.34 and later), posix_spawn with
chdir and closefrom file actions, and setsid and default SIGPIPE/SIGXFSZ attributes,
does what Popen does for the harness in one call; elsewhere Popen does it.

A started process is a `Child`: its pid and the read ends of its stdout and stderr. The
caller reads them and reaps the pid (`reap`); nothing here waits.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import os
import platform
import shutil
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Child:
    pid: int
    stdout: int
    stderr: int


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
    """How per-query processes start here, for `recall doctor`."""
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

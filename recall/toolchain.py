"""What a compiler is known by: its content, never its name, path or `--version`.

A compiler replaced at the same path, answering `--version` alike but generating other
code, must not find what the old one built. So a compiler is the content of the program
PATH resolves its name to, and of the programs it runs to make a library from C, as it
names them itself (`cc -print-prog-name=cc1`, `as`, `ld`; a name it gives that is no file
and no program on PATH, clang's built-in `cc1` for one, is left out). One function for
every key that depends on a compiler: the harness's keys (a base build, a kept index,
results: running/identity.build_world, for the programs an engine's `compilers` names)
and the reference finder's compiled kernel (finders/reference/kernel.py).
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess

from recall.errors import RecallError

# what a C compiler runs to make a shared library: the compiler proper, the assembler,
# the linker
PARTS = ("cc1", "as", "ld")
PROBE_TIMEOUT_S = 60.0


def compiler_identity(name: str, path: str | None = None) -> str:
    """The identity of the compiler that `name` starts from PATH (the given PATH, else
    this process's), by content: a digest of its program and its parts'; "none" when no
    such program is on PATH. Hashed once per process for each version of each file
    (path, inode, size, mtime and ctime: a file rewritten in place, or another file
    renamed over it, is hashed again)."""
    found = shutil.which(name, path=path)
    if found is None:
        return "none"
    program = os.path.realpath(found)
    files = [program]
    for part in PARTS:
        named = _print_prog_name(program, part, _stat_key(program))
        located = named if os.sep in named else shutil.which(named, path=path)
        if located and os.path.isfile(located):
            files.append(os.path.realpath(located))
    digest = hashlib.sha256()
    for file in files:
        digest.update(_content(file, _stat_key(file)).encode() + b"\0")
    return f"compiler:{digest.hexdigest()}"


def _stat_key(path: str) -> tuple[int, ...]:
    stat = os.stat(path)
    return (stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)


@functools.cache
def _print_prog_name(program: str, part: str, _version: tuple[int, ...]) -> str:
    """What the compiler runs as part, as `-print-prog-name` names it (the part's own
    name when it says nothing)."""
    try:
        proc = subprocess.run(
            [program, f"-print-prog-name={part}"], capture_output=True, text=True,
            stdin=subprocess.DEVNULL, timeout=PROBE_TIMEOUT_S, check=False,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise RecallError(f"compiler {program}: cannot run: {exc}") from None
    named = proc.stdout.strip() if proc.returncode == 0 else ""
    return named or part


@functools.cache
def _content(path: str, _version: tuple[int, ...]) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()

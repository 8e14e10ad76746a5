"""`recall init`: a starter recall.toml in a finder's repo.

The starter is either a preset's own table (to adapt) or a blank engine whose every key
is written out with what it means, so that a first engine description is edited, not
looked up. It is created without ever replacing a file: an existing recall.toml is
somebody's work.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import tempfile
from importlib import resources
from pathlib import Path

from recall.build import finder_root
from recall.commands._flags import add_finder
from recall.engine import parse_engine, preset_names
from recall.errors import EXIT_OK, RecallError

FILENAME = "recall.toml"

BLANK = """\
# recall.toml: how recall builds, indexes and queries this finder.
# Every command is an argv list (never a shell string); `{bin}` as an element splices
# the `bin` list. Placeholders: {tree} (the source tree built from), {bin}, {python}
# (the harness's interpreter), {db} (an empty folder of the run's own), {corpus} (the
# frozen checkout), {names} (the corpus's distinct names, one per line), {language},
# {query}, {limit} (0 = unlimited).
[engine]

# Required: the program, and one query. Edit both.
bin = ["{tree}/my-finder"]
query = ["{bin}", "{query}", "--limit", "{limit}"]

# How to build it, run in the source tree (the repo, or a base's extracted archive).
# build = ["make"]

# Index a corpus once, into {db}; omitted: the harness only writes {names}.
# index = ["{bin}", "--index", "{corpus}", "--db", "{db}/index"]

# Many queries through one process: reads {"id": I, "query": Q, "limit": N} lines (I
# counts from 0 in each process) and answers one JSON line each, in order: {"id": I,
# "results": [...]} or {"id": I, "error": "..."} (or, echoing no id, the bare list or
# {"error": "..."}). A wrong id, or a line more than it was asked for, fails the run.
# batch = ["{bin}", "--batch", "--db", "{db}/index"]

# A query run with timing output, for --bench.
# profile = ["{bin}", "{query}", "--limit", "{limit}", "--profile"]

# Where the finder runs (default: the corpus).
# cwd = "{corpus}"

# A file fed on stdin to every query (fzf-style finders read candidates there).
# stdin = "{names}"

# The finder's environment is declared: PATH, its own HOME/XDG/TMPDIR, LC_ALL, TZ, then
# these. Extra variables, and the names whose values come from your shell (in the key).
# env = { MY_FINDER_DB = "{db}/index", MY_FINDER_JOBS = "1" }
# pass_env = ["MY_FINDER_MODEL"]
# env_remove = []  (accepted for old engine files; nothing else reaches the finder anyway)

# Code the finder runs that no argv names (an interpreter's modules): hashed into the key,
# and what lets an engine whose program is python3, node or sh be cached at all.
# inputs = ["finder/**/*.py"]

# What else decides the build: each argv's output joins the build's key.
# toolchain = [["rustc", "--version"]]

# "json": a list of {"name", "file", "line"} objects; "lines": one name per line.
# output = "json"

# Exit codes that mean "no match", not an error (fzf exits 1).
# no_match_exit = [1]
"""


def starter(preset: str | None) -> bytes:
    """The text to write: a preset's table under a header, or the blank engine."""
    if preset is None:
        return BLANK.encode()
    if preset not in preset_names():
        raise RecallError(
            f"--preset {preset}: no such preset (presets: {', '.join(preset_names())})"
        )
    body = (resources.files("recall") / "presets" / f"{preset}.toml").read_text("utf-8")
    header = (
        f"# recall.toml, started from recall's preset {preset!r}: adapt it to this repo.\n"
        "# Keys and placeholders: `recall init` without --preset writes them all out.\n"
    )
    return (header + body).encode()


def write_new(path: Path, data: bytes) -> None:
    """Create path with data in one step, refusing to replace anything already there."""
    parse_engine(data, str(path))
    if path.exists() or path.is_symlink():
        raise RecallError(f"{path}: already exists; not overwriting it")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    except OSError as exc:
        raise RecallError(f"{path}: cannot write: {exc.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, 0o644)
        try:
            os.link(tmp, path)
        except FileExistsError:
            raise RecallError(f"{path}: already exists; not overwriting it") from None
        except OSError as exc:
            raise RecallError(f"{path}: cannot write: {exc.strerror}") from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def next_step(path: Path, preset: str | None, cwd: Path) -> str:
    """The run to try first: one corpus and one type, from a folder holding corpus.json
    and queries.tsv (recall's own checkout, when the finder's repo has none)."""
    what = "edit bin and query" if preset is None else "check its build and bin"
    finder = path.parent
    harness = next(
        (d for d in (cwd, Path(__file__).resolve().parents[2]) if (d / "corpus.json").is_file()),
        None,
    )
    run = "recall --repo gin --type abbr3"
    if harness is None:
        command = f"{run} --finder {finder} (in recall's checkout, beside corpus.json)"
    elif harness == cwd and finder == cwd:
        command = run
    elif harness == cwd:
        command = f"{run} --finder {finder}"
    else:
        command = f"cd {harness} && {run} --finder {finder}"
    return f"wrote {path}: {what}, then run: {command}"


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("init", help="write a starter recall.toml in the finder's repo")
    parser.add_argument(
        "--preset", metavar="NAME",
        help="start from this preset (default: a blank engine with every key explained)",
    )  # fmt: skip
    add_finder(parser, ", whose top folder gets recall.toml")


def run(args: argparse.Namespace) -> int:
    path = finder_root(Path(args.finder)) / FILENAME
    write_new(path, starter(args.preset))
    print(next_step(path, args.preset, Path.cwd()))
    return EXIT_OK

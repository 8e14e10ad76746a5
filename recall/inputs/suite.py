"""Where a run's suite files and engine file are found, so that `recall` works from any folder.

A finder's repo carries a recall.toml, found in the current folder or above it as git
finds .git, and may carry its own suite files (corpus.json, the query sets, regress.tsv)
beside it. A suite file named by no flag is the one beside that recall.toml, else the one
in the current folder (recall's own checkout; a suite being made with `recall pin`), else
the default suite packaged with recall: in a wheel, copies of the top-level files of
recall's repo, made when the wheel is built (recall/suite/ holds links to them, the derive
settings too). `recall derive` reads and writes its files in the current folder.

A recall.toml says what to build and run, so one found by walking up is trusted as git
trusts a repository (`safe.directory`): only when it and its folder are owned by the
caller or root and it is writable by no one else; any other is refused in one line that
says how to name it on purpose (`--finder DIR`). A command that reads one found above the
current folder says which on stderr, and a run's report names the recall.toml it read
(`meta.config`).

A query set is strict when it is one of the suite's committed sets as the lookup finds
them (the finder's own beside its recall.toml, else here, else the packaged), whatever
folder the user stands in and however the file is named; any other file is foreign.
"""

from __future__ import annotations

import functools
import os
import stat
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from recall.cache import reporter
from recall.errors import RecallError
from recall.inputs.queryset import QUERY_SETS

CONFIG = "recall.toml"
CORPUS, QUERIES, REGRESS = "corpus.json", "queries.tsv", "regress.tsv"
# The commands that write the suite files they name: their default is a file here, never
# the installed package's.
WRITERS = ("pin",)
PACKAGED = "suite"


def find_config(start: Path) -> Path | None:
    """The recall.toml in start or the nearest folder above it that has one, refused
    unless the caller owns it (check_owned)."""
    start = start.absolute()
    for folder in (start, *start.parents):
        candidate = folder / CONFIG
        if candidate.is_file():
            check_owned(candidate, start)
            return candidate
    return None


def check_owned(config: Path, start: Path) -> None:
    """A recall.toml found by walking up from start is used only when it and its folder
    belong to the caller or root and no one else may write it (a folder writable by all
    only with the sticky bit, as /tmp has): its build and commands run as the caller."""
    me = os.geteuid()
    why = None
    try:
        file, folder = os.stat(config), os.stat(config.parent)
    except OSError as exc:
        raise RecallError(f"{config}: cannot read: {exc.strerror or exc}") from None
    if file.st_uid not in (me, 0):
        why = f"it is owned by uid {file.st_uid}, not by you (uid {me}) or root"
    elif folder.st_uid not in (me, 0):
        why = f"its folder is owned by uid {folder.st_uid}, not by you (uid {me}) or root"
    elif file.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        why = f"others may write it (mode {stat.filemode(file.st_mode)})"
    elif folder.st_mode & stat.S_IWOTH and not folder.st_mode & stat.S_ISVTX:
        why = f"anyone may replace it (its folder's mode is {stat.filemode(folder.st_mode)})"
    if why:
        raise RecallError(
            f"{config}: found from {start} up, but {why}; recall runs what a recall.toml "
            f"says, so it uses one found by walking up only when it is yours: name it on "
            f"purpose with --finder {config.parent} to use it anyway"
        )


@functools.cache
def announce(config: Path) -> None:
    """Say once a command, on stderr, which recall.toml above the current folder it read:
    one here, or named by --finder, the user sees or chose (a run's report names it too,
    in its meta)."""
    reporter().say(f"recall: using {config}, found from {Path.cwd()} up")


def packaged(name: str) -> Path:
    """The default suite's file of that name, as installed with recall."""
    return Path(str(resources.files("recall") / PACKAGED / name))


def suite_file(name: str, config: Path | None, *, writes: bool = False) -> Path:
    """A suite file that no flag names: beside config, else here, else the packaged one
    (for a command that writes it: here, made if absent)."""
    for folder in ([config.parent] if config else []) + [Path()]:
        if (folder / name).is_file():
            return folder / name
    return Path(name) if writes else packaged(name)


def config_of(finder: str | None) -> Path | None:
    """The recall.toml that sets a run's suite: the one in --finder DIR's top folder (or
    DIR itself) when given, else the one found from the current folder up."""
    if finder is None:
        return find_config(Path.cwd())
    for folder in (Path(finder), *Path(finder).absolute().parents):
        if (folder / CONFIG).is_file():
            return folder / CONFIG
        if (folder / ".git").exists():
            break
    return None


@dataclass(frozen=True)
class Located:
    """What a command's flags left unsaid, filled in: the finder's repo, the suite files,
    and the recall.toml that set them."""

    finder: str  # the folder of the recall.toml found from here up, else here
    config: Path | None  # the recall.toml that set them, or None
    finder_named: bool  # whether --finder or a recall.toml named the finder
    corpus: str
    queries: str | None  # None only for derive, whose None is every set
    default_regress: str  # the regress cases a run reads when --regress names none
    committed: bool = False  # queries is one of the suite's committed sets: strict


def locate(
    command: str, *, finder: str | None = None, corpus: str | None = None,
    queries: str | None = None,
) -> Located:  # fmt: skip
    """Fill in `finder` (None: the folder of the recall.toml found from here up, else
    here), `corpus` and `queries` (None, or a committed set named by name or file name,
    `typed` or `typed.tsv`, that is no file here: the suite file looked up). A finder named
    by no flag and no recall.toml leaves `finder_named` false: a run may then measure the
    reference finder recall ships."""
    config = config_of(finder)
    if config is not None and finder is None and config.parent != Path.cwd():
        announce(config.absolute())  # found above the folder the user stands in
    writes = command in WRITERS
    if command != "derive":  # derive all: None is every set
        files = {file for file, _settings in QUERY_SETS.values()}
        name = QUERY_SETS[queries][0] if queries in QUERY_SETS else queries
        if queries is None:
            queries = str(suite_file(QUERIES, config, writes=writes))
        elif not writes and name in files and not Path(queries).exists():
            queries = str(suite_file(name, config))  # `typed`, or typed.tsv from anywhere
    return Located(
        finder=finder if finder is not None else str(config.parent) if config else ".",
        config=config,
        finder_named=finder is not None or config is not None,
        corpus=corpus if corpus is not None else str(suite_file(CORPUS, config, writes=writes)),
        queries=queries,
        default_regress=str(suite_file(REGRESS, config)),
        committed=queries is not None and is_committed(Path(queries), config),
    )


def is_committed(path: Path, config: Path | None) -> bool:
    """Is the query file at path one of the suite's committed sets: the one the lookup
    finds for its name (beside config, else here, else the packaged), or the one recall
    ships? The same file by any name, from any folder."""
    for file, _settings in QUERY_SETS.values():
        for committed in (suite_file(file, config), packaged(file)):
            if _same_file(path, committed):
                return True
    return False


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or a.samefile(b)
    except OSError:
        return False

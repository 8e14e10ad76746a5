"""Where a run's suite files and engine file are found, so that `recall` works from any folder.

A finder's repo carries a recall.toml, found in the current folder or above it as git
finds .git, and may carry its own suite files (corpus.json, the query sets, regress.tsv)
beside it. A suite file named by no flag is the one beside that recall.toml, else the one
in the current folder (recall's own checkout; a suite being made with `recall pin`), else
the default suite packaged with recall: in a wheel, copies of the top-level files of
recall's repo, made when the wheel is built (recall/suite/ holds links to them, the derive
settings too). `recall derive` reads and writes its files in the current folder.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from recall.inputs.queryset import QUERY_SETS

CONFIG = "recall.toml"
CORPUS, QUERIES, REGRESS = "corpus.json", "queries.tsv", "regress.tsv"
# The commands that write the suite files they name: their default is a file here, never
# the installed package's.
WRITERS = ("pin",)
PACKAGED = "suite"


def find_config(start: Path) -> Path | None:
    """The recall.toml in start or the nearest folder above it that has one."""
    start = start.absolute()
    for folder in (start, *start.parents):
        candidate = folder / CONFIG
        if candidate.is_file():
            return candidate
    return None


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
    )

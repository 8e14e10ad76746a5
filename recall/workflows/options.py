"""What each workflow is asked, as typed, frozen values: the options of `recall run`,
`merge`, `history`, `bisect` and `results`.

The commands (recall/commands/) turn their flags into these, and a Python program builds
them directly (docs/api.md); below the commands no code reads a flag by its name. Each
default is written once, here, and the commands' --help shows it from here. A suite file
left None (the corpus, the query set, the finder's repo) is looked up as the CLI looks
it up (recall/inputs/suite.py), from the current folder.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from recall.running.build import BUILD_TIMEOUT_S

DEFAULT_REGRESS = "regress.tsv"  # the regress cases a run reads when present
QUERY_TIMEOUT_S = 30.0  # seconds a query may take before it counts as an error
CORES = os.cpu_count() or 1  # parallel queries: the cores


def listed(values: tuple[str, ...] | None) -> list[str] | None:
    """A selection as the query set's functions take it (None: every one)."""
    return None if values is None else list(values)


@dataclass(frozen=True)
class Data:
    """Where the data is: the pinned corpora, the query set, the caches, and which of the
    set's rows are asked. None: looked up or every one, as the CLI does."""

    corpus: str | None = None
    queries: str | None = None
    cache: str | None = None
    mirror: str | None = None
    repos: tuple[str, ...] | None = None
    types: tuple[str, ...] | None = None


@dataclass(frozen=True)
class RunOptions:
    """`recall run`: which binaries to measure over which rows, and what the report is
    judged against. `candidates` are the --engine and --bin values in the order given
    (("engine", "[LABEL=]E") or ("bin", "[LABEL=]PATH")): the report's runs keep it, after
    the working tree's own build unless a --bin or `no_candidate` takes its place."""

    data: Data = Data()
    split: str | None = None
    strict_queries: bool = False
    finder: str | None = None
    candidates: tuple[tuple[str, str], ...] = ()
    no_candidate: bool = False  # labeled engines alone: the working tree's build left out
    base: str | None = None
    base_bin: str | None = None
    against: str | None = None
    same_program_ok: bool = False
    jobs: int = CORES
    timeout: float = QUERY_TIMEOUT_S
    build_timeout: float = BUILD_TIMEOUT_S
    no_cache: bool = False
    allow_empty: bool = False
    bench: int | None = None
    accept: str | None = None
    regress: str | None = None
    no_regress: bool = False
    misses: bool = False
    save: str | None = None
    shard: tuple[int, int] | None = None

    @property
    def has_baseline(self) -> bool:
        return bool(self.base or self.base_bin or self.against)


@dataclass(frozen=True)
class Output:
    """How the CLI prints a run's report (the Python API returns the Report instead):
    checked with the run's options, since a shard prints none."""

    json: bool = False
    markdown: bool = False
    html: str | None = None
    fail_on_loss: bool = False


@dataclass(frozen=True)
class MergeOptions:
    """`recall merge` of a run's shards: the files they saved, the selection they ran
    (None: as the files say), and what the report is judged against."""

    files: tuple[str, ...]
    data: Data = Data()
    split: str | None = None
    strict_queries: bool = False
    accept: str | None = None
    regress: str | None = None
    no_regress: bool = False
    misses: bool = False
    needs_baseline: bool = False  # refuse shards run without one (the CLI's --fail-on-loss)


@dataclass(frozen=True)
class CommitOptions:
    """How `recall history` and `recall bisect` measure each commit of the finder's repo:
    one engine, read from the working tree, over one selection of sourced rows."""

    data: Data = Data()
    finder: str | None = None
    engine: str | None = None
    jobs: int = CORES
    timeout: float = QUERY_TIMEOUT_S
    build_timeout: float = BUILD_TIMEOUT_S
    no_cache: bool = False
    allow_empty: bool = False


@dataclass(frozen=True)
class HistoryOptions:
    """`recall history`: which commits (a range, refs, or the tags matching a pattern),
    every Nth of them, each measured as `commits` says."""

    commits: CommitOptions = CommitOptions()
    revs: tuple[str, ...] = ()
    tags: str | None = None
    first_parent: bool = False
    every: int = 1


@dataclass(frozen=True)
class BisectOptions:
    """`recall bisect`: the first commit between good and bad where the query's rank
    changed (query "REPO:QUERY"), or the #1 rate fell by `drop` points (metric)."""

    good: str
    bad: str
    commits: CommitOptions = CommitOptions()
    query: str | None = None
    source: str | None = None
    metric: str | None = None
    drop: float | None = None


@dataclass(frozen=True)
class ExplainOptions:
    """`recall explain`: one query of one pin through each binary (the working tree's
    engine, a --bin, and a baseline), its source looked up in the query set unless given
    (with its type). Of `data`, the suite files and caches serve; the pin is `repo`."""

    query: str
    repo: str
    data: Data = Data()
    source: str | None = None
    type: str | None = None
    finder: str | None = None
    engine: str | None = None
    bin: str | None = None
    base: str | None = None
    base_bin: str | None = None
    timeout: float = QUERY_TIMEOUT_S
    build_timeout: float = BUILD_TIMEOUT_S


@dataclass(frozen=True)
class ResultsOptions:
    """`recall results`: every peer finder and the reference over one query set; `only`
    narrows the peers to these presets, `reports` keeps (or, render_only, reads) each
    finder's JSON report."""

    corpus: str | None = None
    queries: str = "queries.tsv"
    cache: str | None = None
    mirror: str | None = None
    split: str | None = None
    jobs: int = 1
    reports: str | None = None
    render_only: bool = False
    only: tuple[str, ...] | None = None
    out: str = "docs/RESULTS.md"

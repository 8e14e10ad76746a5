"""The typed values of a history (what `recall history` measures, workflows/history.py):
each commit's row, its counts, and the history around them, written and read by the
report's codec (analysis/codec.py), so `--json` and `History.from_json` are one shape and
the history's renderer (render/history.py) takes these values, never a dict.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from recall.analysis.codec import Coded
from recall.analysis.model import Counts, QueryResult
from recall.analysis.report import counts
from recall.inputs.queryset import QueryRow

SCHEMA: Literal[1] = 1
KIND: Literal["recall-history"] = "recall-history"


@dataclass(frozen=True)
class Commit(Coded):
    """A commit of the finder's repo as a history row names it."""

    sha: str
    date: str  # committer date, ISO 8601 with its offset
    subject: str
    refs: tuple[str, ...] = ()  # the tags (or refs as given) that named it

    JSON_KEYS = ("sha", "short", "date", "subject", "refs")

    @property
    def short(self) -> str:
        return self.sha[:12]


@dataclass(frozen=True)
class Tally(Coded):
    """A run's counts over all rows, and per type and per repo (groups sorted by name): the
    report's own counts (analysis/report.py), so a history row and a report agree. In JSON
    the counts over all rows sit beside the groups, as a report's run has them."""

    all: Counts
    by_type: dict[str, Counts]
    by_repo: dict[str, Counts]

    JSON_FLAT = frozenset({"all"})


def summarize(rows: list[QueryRow], results: tuple[QueryResult, ...]) -> Tally:
    """The counts of a run over rows, as a history row holds them."""
    pairs = list(zip(rows, results, strict=True))

    def of(chosen: list[tuple[QueryRow, QueryResult]]) -> Counts:
        return counts([row for row, _r in chosen], [r for _row, r in chosen])

    def grouped(key: Callable[[QueryRow], str]) -> dict[str, Counts]:
        groups: dict[str, list[tuple[QueryRow, QueryResult]]] = {}
        for row, result in pairs:
            groups.setdefault(key(row), []).append((row, result))
        return {name: of(chosen) for name, chosen in sorted(groups.items())}

    return Tally(of(pairs), grouped(lambda row: row.type), grouped(lambda row: row.repo))


@dataclass(frozen=True)
class CommitRow(Coded):
    """One commit of a history: what it is, whether it was built or read from the cache
    now, and its counts and seconds, or why it could not be measured. In JSON the commit's
    keys and the tally's sit in the row's own object; a row that was not measured has
    neither counts nor seconds."""

    commit: Commit
    url: str | None  # its page, when the finder's origin is on GitHub
    built: bool
    cached: bool
    error: str | None
    tally: Tally | None  # None when it could not be measured
    index_s: float | None = None
    query_s: float | None = None

    JSON_FLAT = frozenset({"commit", "tally"})
    JSON_OMIT = dict.fromkeys(("tally", "index_s", "query_s"))


@dataclass(frozen=True)
class EngineUsed(Coded):
    """The engine file every commit of a history ran with, and its content's digest."""

    source: str
    sha256: str


@dataclass(frozen=True)
class History(Coded):
    """A history: what every commit was measured with (the finder's repo, its engine, the
    query set and the selection of its sourced rows), and each commit, oldest first. Its
    JSON is the versioned object of docs/history.md, what `recall history --json` prints,
    and `History.from_json` reads a saved one back (render/history.py draws either)."""

    finder: str
    engine: EngineUsed
    queries: str
    sourced: int
    repos: tuple[str, ...]
    types: tuple[str, ...]
    commits: tuple[CommitRow, ...]
    schema: Literal[1] = SCHEMA
    kind: Literal["recall-history"] = KIND

    JSON_KEYS = ("schema", "kind", "finder", "engine", "queries", "sourced", "repos", "types",
                 "commits")  # fmt: skip

    @property
    def ok(self) -> bool:
        """Whether any commit was measured (the command's exit 0)."""
        return any(row.error is None for row in self.commits)

    def header(self) -> dict:
        """The history's JSON but its commits: what a shard's file keeps for the merge."""
        return {key: value for key, value in self.to_json().items() if key != "commits"}

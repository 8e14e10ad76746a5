"""The plain values the stages pass on: a finder build, its hits and results, a corpus.

They sit apart from the code that makes them (build, measure) so that the stages that only
read them (saved, merge, report, regress) import no process or session code.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from recall.corpus import Checkout
from recall.engine import Engine, fill

TOP = 10  # the hits kept of each answer: enough for top-10 and for the report's examples


@dataclass(frozen=True)
class FinderBuild:
    """An engine bound to the tree it was built from and the interpreter `{python}` names
    (recall.interpreter: the harness's packages, never its code)."""

    label: str
    engine: Engine
    tree: Path
    python: str

    def values(self) -> dict[str, str]:
        return {"tree": str(self.tree), "python": self.python}

    def bin_argv(self) -> list[str]:
        return [fill(part, self.values()) for part in self.engine.bin]


@dataclass(frozen=True)
class Hit:
    name: str
    file: str | None
    line: int | None


@dataclass(frozen=True)
class QueryResult:
    rank: int | None
    top: tuple[Hit, ...]
    error: str | None = None


@dataclass(frozen=True)
class RunResult:
    label: str
    bin: str
    index_s: float
    query_s: float
    results: tuple[QueryResult, ...]
    cached: bool = False  # read from the results cache or a saved run, not run now
    dirtied: tuple[str, ...] = ()  # corpora whose checkout this binary wrote into

    @property
    def errors(self) -> int:
        return sum(1 for r in self.results if r.error)


@dataclass(frozen=True)
class Corpus:
    """A checkout and the names file the harness writes for it."""

    checkout: Checkout
    names: list[str]
    cache: Path | None = None  # where to rebuild the checkout from if a finder dirties it
    mirror: Path | None = None

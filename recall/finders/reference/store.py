"""The finder's SQLite index: every definition extract() returns, in its order.

One writer inserts rows in the sorted order of extract(), so row ids, and with them the
"first definition" of a name, never depend on timing. The database is written to a
temporary file beside the target and renamed into place, so a failed or interrupted
index never leaves a file that a later query would trust.
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from recall.errors import RecallError

if TYPE_CHECKING:
    import numpy as np

SCHEMA = 1

_CREATE = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE symbols (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    path TEXT NOT NULL,
    line INTEGER NOT NULL,
    kind TEXT NOT NULL,
    scope TEXT NOT NULL
);
"""


@dataclass(frozen=True)
class Definition:
    """Where a name is defined; scope is the enclosing owner as ctags reports it."""

    path: str
    line: int
    scope: str


class Catalog:
    """The index as the ranker needs it: distinct names, in order of their first
    definition, each with every definition (first by path and line).

    Definitions are kept as arrays (a path and a scope as numbers into lists of the
    distinct ones, a line), grouped by name, so that a million names take tens of bytes
    each here rather than a list and an object per definition; definitions(i) builds
    name i's Definition objects when they are asked for."""

    def __init__(
        self,
        names: list[str],
        paths: list[str],
        scopes: list[str],
        rows: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    ) -> None:
        """rows: per definition in index order, its name's number, path's, line, scope's."""
        import numpy as np

        name, path, line, scope = rows
        order = np.argsort(name, kind="stable")  # by name; each name's in index order
        self.names = names
        self.paths = paths
        self.scopes = scopes
        self.path = path[order].astype(np.int32)
        self.line = line[order].astype(np.int32)
        self.scope = scope[order].astype(np.int32)
        counts = np.bincount(name, minlength=len(names))
        self.start = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)

    def first(self, i: int) -> tuple[str, int]:
        """The path and line of name i's first definition."""
        at = int(self.start[i])
        return self.paths[self.path[at]], int(self.line[at])

    def first_of(self, ids: np.ndarray) -> tuple[list[str], list[int]]:
        """first() of many names at once: their paths and their lines."""
        at = self.start[ids]
        paths = self.paths
        return [paths[p] for p in self.path[at].tolist()], self.line[at].tolist()

    def definitions(self, i: int) -> list[Definition]:
        """Every definition of name i, first by path and line."""
        lo, hi = int(self.start[i]), int(self.start[i + 1])
        return [
            Definition(self.paths[p], line, self.scopes[s])
            for p, line, s in zip(
                self.path[lo:hi].tolist(),
                self.line[lo:hi].tolist(),
                self.scope[lo:hi].tolist(),
                strict=True,
            )
        ]


def build(corpus: Path, language: str, db: Path) -> int:
    """Index every definition under corpus into db; returns the number of rows."""
    from recall.inputs.languages import LANGUAGES  # lazily: the query path never needs it
    from recall.inputs.symbols import extract

    if language not in LANGUAGES:
        raise RecallError(
            f"unknown language {language!r}: expected one of {', '.join(sorted(LANGUAGES))}"
        )
    if not corpus.is_dir():
        raise RecallError(f"{corpus}: not a directory")
    symbols = extract(corpus, language)
    db.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{db.name}.", suffix=".tmp", dir=db.parent)
    os.close(fd)
    try:
        con = sqlite3.connect(tmp)
        try:
            con.executescript(_CREATE)
            con.executemany(
                "INSERT INTO meta VALUES (?, ?)",
                [("schema", str(SCHEMA)), ("language", language), ("corpus", str(corpus))],
            )
            con.executemany(
                "INSERT INTO symbols (name, path, line, kind, scope) VALUES (?, ?, ?, ?, ?)",
                ((s.name, s.path, s.line, s.kind, s.scope) for s in symbols),
            )
            con.commit()
        finally:
            con.close()
        os.replace(tmp, db)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return len(symbols)


def load(db: Path) -> Catalog:
    """Read an index written by build(); a missing or foreign file is a RecallError."""
    if not db.is_file():
        raise RecallError(
            f"{db}: no such index (run `python -m recall.finders.reference index` first)"
        )
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            row = con.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
            if row is None or row[0] != str(SCHEMA):
                raise RecallError(f"{db}: index schema {row and row[0]!r}, expected {SCHEMA}")
            import numpy as np

            rows = con.execute("SELECT name, path, line, scope FROM symbols ORDER BY id")
            names: dict[str, int] = {}
            paths: dict[str, int] = {}
            scopes: dict[str, int] = {}
            columns = [array("q"), array("q"), array("q"), array("q")]
            for name, path, line, scope in rows:
                columns[0].append(names.setdefault(name, len(names)))
                columns[1].append(paths.setdefault(path, len(paths)))
                columns[2].append(line)
                columns[3].append(scopes.setdefault(scope, len(scopes)))
            name_of, path_of, line_of, scope_of = (np.frombuffer(c, np.int64) for c in columns)
            catalog = Catalog(
                list(names),
                list(paths),
                list(scopes),
                (
                    name_of,
                    path_of.astype(np.int32),
                    line_of.astype(np.int32),
                    scope_of.astype(np.int32),
                ),
            )
        finally:
            con.close()
    except sqlite3.DatabaseError as exc:
        raise RecallError(f"{db}: not a finder index ({exc})") from None
    return catalog

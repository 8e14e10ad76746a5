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
from dataclasses import dataclass, field
from pathlib import Path

from recall.errors import RecallError

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


@dataclass
class Catalog:
    """The index as the ranker needs it: distinct names, in order of their first
    definition, each with every definition (first by path and line)."""

    names: list[str] = field(default_factory=list)
    definitions: list[list[Definition]] = field(default_factory=list)


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
            rows = con.execute("SELECT name, path, line, scope FROM symbols ORDER BY id")
            catalog = Catalog()
            slot: dict[str, int] = {}
            for name, path, line, scope in rows:
                at = slot.get(name)
                if at is None:
                    at = slot[name] = len(catalog.names)
                    catalog.names.append(name)
                    catalog.definitions.append([])
                catalog.definitions[at].append(Definition(path, line, scope))
        finally:
            con.close()
    except sqlite3.DatabaseError as exc:
        raise RecallError(f"{db}: not a finder index ({exc})") from None
    return catalog

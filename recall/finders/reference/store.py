"""The finder's SQLite index: every definition extract() returns, as a query process reads
it.

The catalog keeps the definitions in the sorted order of extract(), so the "first
definition" of a name never depends on timing: the names, paths and scopes, each name's
definitions and its answer row as JSON. Beside it the index keeps what the ranker derives
from the names (rank.index_arrays). All of it is arrays, a few blobs: a batch process's
start-up counts in the queries' time, and reading them takes milliseconds where building
them took a tenth of a second on rails. The database is written to a temporary file
beside the target and renamed into place, so a failed or interrupted index never leaves a
file that a later query would trust.
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
from array import array
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from recall.errors import RecallError

if TYPE_CHECKING:
    import numpy as np

SCHEMA = 2

_CREATE = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE arrays (key TEXT PRIMARY KEY, dtype TEXT NOT NULL, size INTEGER NOT NULL,
                     data BLOB NOT NULL);
"""
# The arrays table holds the catalog (below) and what the ranker derives from the names
# (rank.index_arrays): a query process reads them, a few blobs, instead of every row.
_TEXTS = ("names", "paths", "scopes")  # lists of str, kept NUL-separated
_CATALOG = ("path", "line", "scope", "start", "rows", "row_ends")


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
    name i's Definition objects when they are asked for. derived holds what the ranker
    derives from the names, as the index keeps it (None: the Finder builds it)."""

    def __init__(
        self,
        texts: dict[str, list[str]],
        arrays: Mapping[str, np.ndarray],
        derived: dict[str, np.ndarray] | None = None,
    ) -> None:
        """texts: names, paths, scopes; arrays: per definition grouped by name, its path's
        number, line and scope's number, and where each name's definitions start; and each
        name's answer row at its first definition, as the finder prints it (rows, its
        JSON concatenated as UTF-8, and row_ends, where each name's ends)."""
        self.names = texts["names"]
        self.paths = texts["paths"]
        self.scopes = texts["scopes"]
        self.path, self.line, self.scope, self.start, self.rows, self.row_ends = (
            arrays[k] for k in _CATALOG
        )
        self.derived = derived

    def first(self, i: int) -> tuple[str, int]:
        """The path and line of name i's first definition."""
        at = int(self.start[i])
        return self.paths[self.path[at]], int(self.line[at])

    def row(self, i: int) -> bytes:
        """Name i's answer row at its first definition, as JSON."""
        lo = int(self.row_ends[i - 1]) if i else 0
        return self.rows[lo : int(self.row_ends[i])].tobytes()

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


def answer_row(name: str, path: str, line: int) -> bytes:
    """A name's row in the finder's JSON answer, at one of its definitions."""
    import orjson

    return orjson.dumps({"name": name, "file": path, "line": line})


def catalog_of(definitions: Iterable[tuple[str, str, int, str]], located: bool = True) -> Catalog:
    """The catalog of (name, path, line, scope) definitions in index order; not located:
    answer rows that name the name alone (a names list has no file or line to give)."""
    import numpy as np
    import orjson

    names: dict[str, int] = {}
    paths: dict[str, int] = {}
    scopes: dict[str, int] = {}
    columns = [array("q"), array("q"), array("q"), array("q")]
    for name, path, line, scope in definitions:
        columns[0].append(names.setdefault(name, len(names)))
        columns[1].append(paths.setdefault(path, len(paths)))
        columns[2].append(line)
        columns[3].append(scopes.setdefault(scope, len(scopes)))
    name_of, path_of, line_of, scope_of = (np.frombuffer(c, np.int64) for c in columns)
    order = np.argsort(name_of, kind="stable")  # by name; each name's in index order
    counts = np.bincount(name_of, minlength=len(names))
    start = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
    path_at, line_at = path_of[order].astype(np.int32), line_of[order].astype(np.int32)
    path_list = list(paths)
    firsts = zip(names, path_at[start[:-1]].tolist(), line_at[start[:-1]].tolist(), strict=True)
    rows = [
        answer_row(n, path_list[p], k) if located else orjson.dumps({"name": n})
        for n, p, k in firsts
    ]
    sizes = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
    return Catalog(
        {"names": list(names), "paths": path_list, "scopes": list(scopes)},
        {
            "path": path_at,
            "line": line_at,
            "scope": scope_of[order].astype(np.int32),
            "start": start,
            "rows": np.frombuffer(b"".join(rows), dtype=np.uint8),
            "row_ends": np.cumsum(sizes, dtype=np.int64),
        },
    )


def build(
    corpus: Path,
    language: str,
    db: Path,
    derive: Callable[[list[str]], dict[str, np.ndarray]] | None = None,
) -> int:
    """Index every definition under corpus into db, with the catalog and, given derive,
    derive(names) for the query processes to read; returns the number of rows."""
    from recall.inputs.languages import LANGUAGES  # lazily: the query path never needs it
    from recall.inputs.symbols import extract

    if language not in LANGUAGES:
        raise RecallError(
            f"unknown language {language!r}: expected one of {', '.join(sorted(LANGUAGES))}"
        )
    if not corpus.is_dir():
        raise RecallError(f"{corpus}: not a directory")
    symbols = extract(corpus, language)
    catalog = catalog_of((s.name, s.path, s.line, s.scope) for s in symbols)
    write(db, catalog, {"language": language, "corpus": str(corpus)}, str(corpus), derive)
    return len(symbols)


def build_names(
    names: list[str], db: Path, derive: Callable[[list[str]], dict[str, np.ndarray]] | None = None
) -> int:
    """Index a names list alone into db (the judgments set's candidates: no corpus, so no
    file or line), as build() indexes a corpus's definitions; returns the names."""
    catalog = catalog_of(((name, "", 0, "") for name in names), located=False)
    write(db, catalog, {"names": "list"}, "the names list", derive)
    return len(catalog.names)


def write(
    db: Path,
    catalog: Catalog,
    meta: dict[str, str],
    where: str,
    derive: Callable[[list[str]], dict[str, np.ndarray]] | None = None,
) -> None:
    """The catalog (and derive(names)) into db, whole or not at all; where names the
    input in an error."""
    texts = {"names": catalog.names, "paths": catalog.paths, "scopes": catalog.scopes}
    for key, items in texts.items():
        held = next((t for t in items if "\0" in t), None)
        if held is not None:
            raise RecallError(f"{where}: a NUL character in one of its {key}: {held!r}")
    arrays = {
        **{k: getattr(catalog, k) for k in _CATALOG},
        **(derive(catalog.names) if derive else {}),
    }
    db.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{db.name}.", suffix=".tmp", dir=db.parent)
    os.close(fd)
    try:
        con = sqlite3.connect(tmp)
        try:
            con.executescript(_CREATE)
            con.executemany(
                "INSERT INTO meta VALUES (?, ?)",
                [("schema", str(SCHEMA)), *meta.items(), ("derived", "yes" if derive else "no")],
            )
            con.executemany(
                "INSERT INTO arrays VALUES (?, 'text', ?, ?)",
                ((k, len(v), "\0".join(v).encode("utf-8")) for k, v in texts.items()),
            )
            con.executemany(
                "INSERT INTO arrays VALUES (?, ?, ?, ?)",
                ((k, a.dtype.str, a.size, a.tobytes()) for k, a in arrays.items()),
            )
            con.commit()
        finally:
            con.close()
        os.replace(tmp, db)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def load(db: Path) -> Catalog:
    """Read an index written by build(); a missing or foreign file is a RecallError."""
    if not db.is_file():
        raise RecallError(
            f"{db}: no such index (run `python -m recall.finders.reference index` first)"
        )
    import numpy as np

    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            meta = dict(con.execute("SELECT key, value FROM meta").fetchall())
            if meta.get("schema") != str(SCHEMA):
                raise RecallError(
                    f"{db}: index schema {meta.get('schema')!r}, expected '{SCHEMA}' "
                    "(index again with this finder)"
                )
            stored = con.execute("SELECT key, dtype, size, data FROM arrays").fetchall()
        finally:
            con.close()
    except sqlite3.DatabaseError as exc:
        raise RecallError(f"{db}: not a finder index ({exc})") from None
    texts: dict[str, list[str]] = {}
    arrays: dict[str, np.ndarray] = {}
    for key, dtype, size, data in stored:
        if dtype == "text":
            items = data.decode("utf-8").split("\0") if size else []
            if len(items) != size:
                raise RecallError(f"{db}: its {key} hold {len(items)} texts, not {size}")
            texts[key] = items
            continue
        kept = np.frombuffer(data, dtype=np.dtype(dtype))
        if kept.size != size:
            raise RecallError(f"{db}: its array {key} holds {kept.size} items, not {size}")
        arrays[key] = kept
    missing = [k for k in (*_TEXTS, *_CATALOG) if k not in texts and k not in arrays]
    if missing:
        raise RecallError(f"{db}: no {', '.join(missing)} in the index (index again)")
    derived = {k: a for k, a in arrays.items() if k not in _CATALOG}
    return Catalog(texts, arrays, derived if meta.get("derived") == "yes" else None)

"""The finder's index: one file that a query process maps and uses as it is.

The `index` command writes every definition extract() returns as a catalog, in the sorted
order of extract(), so the "first definition" of a name never depends on timing: the
names, paths and scopes, each name's definitions and its answer row as JSON. The
`index-names` command writes a names list alone the same way (the judgments set's
candidates, with no corpus behind them): each name one definition with no file, line or
scope, its answer row naming the name alone; the file is the same kind. Beside it the
index keeps what the ranker derives from the names (arrays.py) and the compiled kernel
(kernel.py), so a query process, whose start-up counts in the queries' time, builds
nothing and imports no NumPy: it maps the file and hands the arrays' addresses to the
kernel, which checks that they hold together (rk_check) before any query.

Layout: MAGIC, the size of the table of contents (8 bytes, little-endian), the table
(JSON: meta, and each section's dtype, item count, offset and size), then each section
at a multiple of 64 bytes. The file is written to a temporary file beside the target and
renamed into place, so a failed or interrupted index never leaves a file that a later
query would trust.
"""

from __future__ import annotations

import contextlib
import hashlib
import mmap
import os
from collections.abc import Iterable

import orjson

from recall.errors import RecallError
from recall.finders.reference import kernel

TYPE_CHECKING = False  # typing for the type checker alone: see recall/__init__.py
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Literal

    import numpy as np

MAGIC = b"recall-finder-index\n"
SCHEMA = 3
ALIGN = 64
SQLITE = b"SQLite format 3\0"  # the indexes of schema 1 and 2

# each section's item type, and the count its items must number (a meta count, or
# "bytes": as many as the section holds)
_NAMES, _CHARS, _DEFS, _WORDS = "names", "chars", "definitions", "words"
SECTIONS: dict[str, tuple[str, str]] = {
    "offsets": ("<i8", _NAMES), "lengths": ("<i8", _NAMES), "codes": ("<i4", _CHARS),
    "bytes": ("|u1", "bytes"), "starts": ("|u1", _CHARS), "masks": ("<u8", _NAMES),
    "sets": ("<u8", _WORDS), "twice_sets": ("<u8", _WORDS), "by_length": ("<i8", _NAMES),
    "length_masks": ("<u8", _NAMES),
    "length_starts": ("<i8", "lengths"), "lower": ("|u1", "bytes"),
    "lower_ends": ("<i8", _NAMES), "lower_order": ("<i8", _NAMES),
    "lower_rank": ("<i8", _NAMES), "names": ("|u1", "bytes"), "name_ends": ("<i8", _NAMES),
    "tie_rank": ("<i8", _NAMES), "rows": ("|u1", "bytes"), "row_ends": ("<i8", _NAMES),
    "path": ("<i4", _DEFS), "line": ("<i4", _DEFS), "scope": ("<i4", _DEFS),
    "start": ("<i8", "names+1"), "paths": ("|u1", "bytes"), "scopes": ("|u1", "bytes"),
    "kernel": ("|u1", "bytes"),
}  # fmt: skip
_ITEM = {"<i8": 8, "<u8": 8, "<i4": 4, "|u1": 1}
_FORMAT: dict[str, Literal["q", "Q", "i", "B"]] = {"<i8": "q", "<u8": "Q", "<i4": "i", "|u1": "B"}


class Definition:
    """Where a name is defined; scope is the enclosing owner as ctags reports it."""

    __slots__ = ("line", "path", "scope")

    def __init__(self, path: str, line: int, scope: str) -> None:
        self.path, self.line, self.scope = path, line, scope


def answer_row(name: str, path: str, line: int) -> bytes:
    """A name's row in the finder's JSON answer, at one of its definitions."""
    return orjson.dumps({"name": name, "file": path, "line": line})


def catalog(
    definitions: Iterable[tuple[str, str, int, str]], located: bool = True
) -> tuple[dict[str, list[str]], dict[str, np.ndarray]]:
    """The catalog of (name, path, line, scope) definitions in index order: the distinct
    names (in order of their first definition), paths and scopes; and per definition,
    grouped by name, its path's number, line and scope's number, where each name's
    definitions start, and each name's answer row at its first definition (not located:
    a row naming the name alone, since a names list has no file or line to give)."""
    from array import array

    import numpy as np

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
    # appended as they are made: orjson's bytes keep a buffer of some kilobytes each, four
    # gigabytes for a million rows held in a list
    rows, row_ends = bytearray(), array("q")
    for name, p, k in firsts:
        rows += answer_row(name, path_list[p], k) if located else orjson.dumps({"name": name})
        row_ends.append(len(rows))
    texts = {"names": list(names), "paths": path_list, "scopes": list(scopes)}
    arrays: dict[str, np.ndarray] = {
        "path": path_at,
        "line": line_at,
        "scope": scope_of[order].astype(np.int32),
        "start": start,
        "rows": np.frombuffer(rows, dtype=np.uint8),
        "row_ends": np.frombuffer(row_ends, dtype=np.int64),
    }
    return texts, arrays


def build(corpus: Path, language: str, db: Path) -> int:
    """Index every definition under corpus into db, with what the ranker derives from the
    names and the compiled kernel; returns the number of definitions."""
    from recall.inputs.languages import LANGUAGES

    if language not in LANGUAGES:
        raise RecallError(
            f"unknown language {language!r}: expected one of {', '.join(sorted(LANGUAGES))}"
        )
    if not corpus.is_dir():
        raise RecallError(f"{corpus}: not a directory")
    library = kernel.build()  # first: a compiler that fails stops the index at once
    from recall.inputs.symbols import extract

    symbols = extract(corpus, language)
    texts, arrays = catalog((s.name, s.path, s.line, s.scope) for s in symbols)
    del symbols
    _index(db, texts, arrays, library, {"language": language, "corpus": str(corpus)}, str(corpus))
    return int(arrays["path"].size)


def build_names(names_file: Path, db: Path) -> int:
    """Index the names of names_file (one a line, verbatim; the judgments set's candidates:
    no corpus, so no file, line or scope) into db, as build() indexes a corpus's
    definitions; returns the number of names. The file is read here, not by the harness's
    adapters' reader, so the index process imports nothing beyond what `index` does
    (the preset's index_inputs)."""
    library = kernel.build()
    try:
        text = names_file.read_bytes().decode("utf-8")  # bytes: no newline translated
    except (OSError, UnicodeDecodeError) as exc:
        raise RecallError(f"{names_file}: cannot read: {exc}") from None
    names = [line for line in text.split("\n") if line]  # a name may hold other separators
    texts, arrays = catalog(((name, "", 0, "") for name in names), located=False)
    _index(db, texts, arrays, library, {"names list": str(names_file)}, str(names_file))
    return len(texts["names"])


def _index(
    db: Path,
    texts: dict[str, list[str]],
    arrays: dict[str, np.ndarray],
    library: bytes,
    source: dict[str, str],
    where: str,
) -> None:
    """The catalog with what the ranker derives from its names and the compiled kernel,
    into db; source says in the meta what was indexed, where names it in an error."""
    import numpy as np

    from recall.finders.reference.arrays import name_arrays

    for key, items in texts.items():
        held = next((t for t in items if "\0" in t), None)
        if held is not None:
            raise RecallError(f"{where}: a NUL character in one of its {key}: {held!r}")
    arrays.update(name_arrays(texts["names"]))
    for key in ("paths", "scopes"):
        arrays[key] = np.frombuffer("\0".join(texts[key]).encode("utf-8"), dtype=np.uint8)
    arrays["kernel"] = np.frombuffer(library, dtype=np.uint8)
    meta = {
        "schema": SCHEMA,
        **source,
        "names": len(texts["names"]),
        "paths": len(texts["paths"]),
        "scopes": len(texts["scopes"]),
        "definitions": int(arrays["path"].size),
        "chars": int(arrays["codes"].size),
        "kernel source": kernel.source_digest(),
        "kernel sha256": hashlib.sha256(library).hexdigest(),
    }
    _write(db, meta, arrays)


def _write(db: Path, meta: dict[str, object], arrays: dict[str, np.ndarray]) -> None:
    """The file: MAGIC, the table's size, the table, the sections; written beside db and
    renamed into place."""
    import tempfile

    sections: dict[str, tuple[str, int, int, int]] = {}
    at = 0
    for name in SECTIONS:
        array = arrays[name]
        dtype = SECTIONS[name][0]
        if array.dtype.str != dtype:
            raise ValueError(f"section {name}: {array.dtype.str}, not {dtype}")
        sections[name] = (dtype, int(array.size), at, int(array.nbytes))
        at += -(-array.nbytes // ALIGN) * ALIGN
    table = orjson.dumps({"meta": meta, "sections": sections})
    head = len(MAGIC) + 8 + len(table)
    first = -(-head // ALIGN) * ALIGN
    db.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{db.name}.", suffix=".tmp", dir=db.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(MAGIC + (first).to_bytes(8, "little") + table)
            out.write(bytes(first - head))
            for name, (_dtype, _count, _offset, size) in sections.items():
                out.write(arrays[name].data)
                out.write(bytes(-(-size // ALIGN) * ALIGN - size))
        os.replace(tmp, db)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


class Index:
    """An index mapped from its file, its sections checked against its table; the
    catalog as the owner rule and the text output need it (names, definitions, rows),
    each read when it is asked for."""

    def __init__(self, db: Path) -> None:
        self.db = db
        try:
            with open(db, "rb") as handle:
                head = handle.read(len(MAGIC) + 8)
                if head[: len(SQLITE)] == SQLITE:
                    raise RecallError(
                        f"{db}: an index of an older finder (SQLite), expected schema "
                        f"{SCHEMA} (index again with this finder)"
                    )
                if len(head) < len(MAGIC) + 8 or not head.startswith(MAGIC):
                    raise RecallError(f"{db}: not a finder index")
                first = int.from_bytes(head[len(MAGIC) :], "little")
                table = handle.read(max(0, first - len(head)))
                self._map = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_COPY)
        except FileNotFoundError:
            raise RecallError(
                f"{db}: no such index (run `python -m recall.finders.reference index` first)"
            ) from None
        except (OSError, ValueError) as exc:
            raise RecallError(f"{db}: cannot read the index: {exc}") from None
        self.meta, self.counts, self._sections = self._table(table, first, len(self._map))
        self._view = memoryview(self._map)
        self._base = kernel.address_of(self._map)
        self._first = first
        self._texts: dict[str, list[str]] = {}

    def _table(
        self, table: bytes, first: int, size: int
    ) -> tuple[dict[str, object], dict[str, int], dict[str, tuple[str, int, int, int]]]:
        """The table of contents, each section checked to lie in the file, hold whole
        items of its type, and number what the meta says."""
        db = self.db
        try:
            parsed = orjson.loads(table.rstrip(b"\0"))
            meta, listed = parsed["meta"], parsed["sections"]
            schema = meta.get("schema")
        except (orjson.JSONDecodeError, TypeError, KeyError, AttributeError):
            raise RecallError(f"{db}: not a finder index (its table of contents)") from None
        if schema != SCHEMA:
            raise RecallError(
                f"{db}: index schema {schema!r}, expected {SCHEMA} (index again with this finder)"
            )
        counts: dict[str, int] = {}
        for key in (_NAMES, _CHARS, _DEFS, "paths", "scopes"):
            value = meta.get(key)
            if type(value) is not int or value < 0:
                raise RecallError(f"{db}: not a finder index (its counts)")
            counts[key] = value
        counts[_WORDS] = 64 * ((counts[_NAMES] + 63) // 64)
        counts["names+1"] = counts[_NAMES] + 1
        sections: dict[str, tuple[str, int, int, int]] = {}
        for name, (dtype, counted) in SECTIONS.items():
            entry = listed.get(name) if isinstance(listed, dict) else None
            if not (
                isinstance(entry, list)
                and len(entry) == 4
                and entry[0] == dtype
                and all(type(v) is int and v >= 0 for v in entry[1:])
            ):
                raise RecallError(f"{db}: no section {name} of {dtype} in the index (index again)")
            _dtype, items, offset, nbytes = entry
            expected = counts.get(counted, items)
            if counted == "lengths":
                expected = items if items >= 2 else -1
            if (
                items != expected
                or nbytes != items * _ITEM[dtype]
                or offset % ALIGN
                or first + offset + nbytes > size
            ):
                raise RecallError(f"{db}: its section {name} does not fit its table (index again)")
            sections[name] = (dtype, items, first + offset, nbytes)
        if sections["bytes"][1] != counts[_CHARS] + 64:
            raise RecallError(f"{db}: its section bytes does not fit its table (index again)")
        return meta, counts, sections

    def array(self, name: str) -> memoryview:
        """A section as a memoryview of its items."""
        dtype, _items, offset, nbytes = self._sections[name]
        return self._view[offset : offset + nbytes].cast(_FORMAT[dtype])

    def address(self, name: str) -> int:
        return self._base + self._sections[name][2]

    def names_struct(self) -> kernel.Names:
        """The names' arrays as kernel.c's rk_names."""
        fields = {name: self.address(name) for name in kernel.ARRAYS}
        sizes = {name: self._sections[name][3] for name in ("lower", "names", "rows")}
        fields.update(
            count=self.counts[_NAMES], chars=self.counts[_CHARS],
            lengths_count=self._sections["length_starts"][1], lower_size=sizes["lower"],
            names_size=sizes["names"], rows_size=sizes["rows"],
        )  # fmt: skip
        return kernel.Names(**fields)

    def library(self) -> bytes:
        """The compiled kernel the index carries, checked against its digest and against
        this kernel.c: a library of other code is refused, before any query."""
        data = bytes(self.array("kernel"))
        if hashlib.sha256(data).hexdigest() != self.meta.get("kernel sha256"):
            raise RecallError(
                f"{self.db}: its compiled kernel does not match its digest (index again)"
            )
        if self.meta.get("kernel source") != kernel.source_digest():
            raise RecallError(
                f"{self.db}: its kernel was compiled from another kernel.c (index again with "
                "this finder)"
            )
        return data

    def name(self, i: int) -> str:
        ends = self.array("name_ends")
        return bytes(self.array("names")[ends[i - 1] if i else 0 : ends[i]]).decode("utf-8")

    def row(self, i: int) -> bytes:
        """Name i's answer row at its first definition, as JSON."""
        ends = self.array("row_ends")
        return bytes(self.array("rows")[ends[i - 1] if i else 0 : ends[i]])

    def _list(self, section: str) -> list[str]:
        """The paths or the scopes, decoded on first use."""
        if section not in self._texts:
            data = bytes(self.array(section)).decode("utf-8")
            items = data.split("\0") if self.counts[section] else []
            if len(items) != self.counts[section]:
                raise RecallError(f"{self.db}: its {section} hold {len(items)} texts, not "
                                  f"{self.counts[section]} (index again)")  # fmt: skip
            self._texts[section] = items
        return self._texts[section]

    def definitions(self, i: int) -> list[Definition]:
        """Every definition of name i, first by path and line."""
        start = self.array("start")
        lo, hi = start[i], start[i + 1]
        paths, scopes = self._list("paths"), self._list("scopes")
        return [
            Definition(paths[p], line, scopes[s])
            for p, line, s in zip(
                self.array("path")[lo:hi].tolist(),
                self.array("line")[lo:hi].tolist(),
                self.array("scope")[lo:hi].tolist(),
                strict=True,
            )
        ]

"""The query set file (queries.tsv): its rows, and reading it strictly.

A query set that is half-read gives numbers that look right and are not, so every
malformed line is refused with the file and line named; a BOM and CRLF line endings are
accepted cleanly, since editors add them without asking.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from recall.errors import RecallError
from recall.files import read_input
from recall.inputs.recipes import RECIPES, set_types
from recall.inputs.sides import SPLITS, Side, Split, on_split

HEADER = ("repo", "query", "type", "source")
# The types of the recipes' two sets (recall.inputs.recipes, the one registry), in order.
DERIVED_TYPES = set_types("default")
TYPED_TYPES = set_types("typed")
# The order reports list the types of a query set in: the recipes' (docs/queries.md).
TYPE_ORDER = tuple(recipe.type for recipe in RECIPES)
# The path set (paths.tsv, recipe set PATH_SET): file-picker queries whose source is a
# tracked path, made by recall.inputs.path_recipes (the registry's recipes take names).
PATH_SET = "paths"
NAMES, PATHS = "names", "paths"  # a set's domain: what its finders rank (inputs/paths.py)
# The judgments set (recall/inputs/judgments.py): each query over its own candidates, a
# domain of its own; its rows' type is the judgment's domain, a symbol or a path.
JUDGED = "judgments"
JUDGED_TYPES = ("symbol", "path")
PATH_TYPES = (
    "baseprefix", "wordstarts", "dirinitials", "fragment", "extfirst", "basetypo", "basecase",
)  # fmt: skip
EXACT = "exact"  # the name itself, which no recipe makes: a row a file may hold
HAND = "hand"
TYPES = (*TYPE_ORDER, *PATH_TYPES, EXACT, HAND)


# The committed query sets by name, each with the derive settings that make it (None: a
# set no corpus derives, written by people): `--queries typed` reads typed.tsv; any other
# value is a path.
QUERY_SETS: dict[str, tuple[str, str | None]] = {
    "default": ("queries.tsv", "derive.json"),
    "typed": ("typed.tsv", "derive-typed.json"),
    "typing": ("typing.tsv", "derive-typing.json"),  # steps, not rows: recall/inputs/keystrokes.py
    "paths": ("paths.tsv", "derive-paths.json"),
    "judgments": ("judgments.tsv", None),  # pairs, not rows: recall/inputs/judgments.py
}
# The sets `recall derive all` and `recall pin` make, each from its settings.
DERIVED_SETS = {name: (file, settings) for name, (file, settings) in QUERY_SETS.items() if settings}


QUERY_SETS_DEFAULT = "queries.tsv"  # --queries when not given


def query_set_path(value: str) -> Path:
    """A set's name as its file (unless a file of that very name is there), else a path."""
    if value in QUERY_SETS and not Path(value).exists():
        return Path(QUERY_SETS[value][0])
    return Path(value)


@dataclass(frozen=True)
class QueryRow:
    repo: str
    query: str
    type: str
    source: str  # the ground-truth name; empty for hand rows

    @property
    def sourced(self) -> bool:
        return self.type != HAND


def read_queries(path: Path, repos: set[str] | None = None) -> list[QueryRow]:
    """Parse and validate a query set; repos, when given, is the set of known pins."""
    return parse_queries(read_input(path), str(path), repos)


def read_lines(path: Path, where: str) -> list[str]:
    """A small hand-kept TSV's lines, UTF-8 with or without a BOM, LF or CRLF."""
    try:
        text = read_input(path, where).decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise RecallError(f"{where}: not UTF-8 (byte {exc.start})") from None
    return text.splitlines()


def parse_queries(data: bytes, where: str, repos: set[str] | None = None) -> list[QueryRow]:
    return parse_rows(data, where, HEADER, lambda fields, at, _line: _parse_row(fields, at, repos))


Row = TypeVar("Row", bound=Hashable)


def parse_rows(
    data: bytes, where: str, header: tuple[str, ...],
    parse: Callable[[tuple[str, ...], str, int], Row],
) -> list[Row]:  # fmt: skip
    """A committed set's rows under its header, each parsed from its tab-separated fields
    (verbatim) by parse(fields, `FILE:LINE`, line): UTF-8 with or without a BOM, LF or
    CRLF; a file that is empty, not UTF-8 or not under that header, or a row twice, is one
    error naming the file (and line)."""
    lines = data.removeprefix(b"\xef\xbb\xbf").split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    if not lines:
        raise RecallError(f"{where}: empty file; expected the header {' '.join(header)}")
    rows: list[Row] = []
    seen: dict[Row, int] = {}
    for number, raw in enumerate(lines, start=1):
        try:
            line = raw.removesuffix(b"\r").decode("utf-8")
        except UnicodeDecodeError:
            raise RecallError(f"{where}:{number}: not valid UTF-8") from None
        fields = tuple(line.split("\t"))
        if number == 1:
            if fields != header:
                raise RecallError(
                    f"{where}:1: header must be {'<TAB>'.join(header)}, got {line[:60]!r}"
                )
            continue
        row = parse(fields, f"{where}:{number}", number)
        if row in seen:
            raise RecallError(f"{where}:{number}: duplicate of line {seen[row]}")
        seen[row] = number
        rows.append(row)
    return rows


def _parse_row(fields: tuple[str, ...], at: str, repos: set[str] | None) -> QueryRow:
    if len(fields) != len(HEADER):
        raise RecallError(f"{at}: expected {len(HEADER)} tab-separated fields, got {len(fields)}")
    repo, query, kind, source = fields
    if repos is not None and repo not in repos:
        raise RecallError(f"{at}: unknown repo {repo!r} (not in the corpus pins)")
    if not query.strip():
        raise RecallError(f"{at}: empty query")
    if "\0" in query:
        raise RecallError(f"{at}: the query holds a NUL byte, which no argv can carry")
    if kind not in TYPES:
        raise RecallError(f"{at}: unknown type {kind!r} (one of {', '.join(TYPES)})")
    if kind == HAND and source:
        raise RecallError(f"{at}: a hand row has no source, got {source!r}")
    if kind != HAND and not source:
        raise RecallError(f"{at}: a {kind} row needs its source name")
    return QueryRow(repo, query, kind, source)


def format_queries(rows: list[QueryRow]) -> bytes:
    lines = ["\t".join(HEADER)]
    lines += ["\t".join((r.repo, r.query, r.type, r.source)) for r in rows]
    return ("\n".join(lines) + "\n").encode("utf-8")


def queries_digest(rows: list[QueryRow]) -> str:
    """A content hash of the rows run, independent of BOM, CRLF and other files' rows."""
    return hashlib.sha256(format_queries(rows)).hexdigest()


def split_repos(sides: Mapping[str, Side], split: Split | None) -> set[str] | None:
    """The repos whose rows --split runs, from each pin's side (recall/inputs/sides.py),
    or None without --split: every repo. The split is by whole corpora, so a hand row
    (no source) is on its corpus's side like the others."""
    if split is None:
        return None
    if split not in SPLITS:
        raise RecallError(f"--split: unknown split {split!r} (one of {', '.join(SPLITS)})")
    return {repo for repo, side in sides.items() if on_split(side, split)}


def select(
    rows: list[QueryRow], repos: list[str] | None, types: list[str] | None,
    split: set[str] | None = None,
) -> list[QueryRow]:  # fmt: skip
    """The rows of the --repo, --type and --split selection (None: every one); split is
    split_repos's set of the side's repos."""
    for kind in types or []:
        if kind not in TYPES:
            raise RecallError(f"--type: unknown type {kind!r} (one of {', '.join(TYPES)})")
    return [
        r
        for r in rows
        if (not repos or r.repo in repos)
        and (not types or r.type in types)
        and (split is None or r.repo in split)
    ]

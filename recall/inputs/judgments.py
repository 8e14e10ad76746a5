"""The judgments set (judgments.tsv): pairwise judgments that maintainers of fuzzy finders
wrote into their own tests, and the rows a run asks of a finder for them.

A row says that for `query`, `preferred` must rank strictly above `other`; no corpus is
involved. A finder is judged on each query's own candidates: every candidate of that
query's pairs, ranked as one list (docs/queries.md, "The judgments set"). So each distinct
(domain, query) runs over a names list of its own, its candidates sorted as `{names}`
always is, and queries whose candidate lists are the same share one list, one index and
one batch process: a pseudo-corpus. The rows that run are one QueryRow a candidate, its
`repo` the list's name, its `type` the domain and its `source` the candidate, so that the
harness's one rank rule (the candidate's place among the answer's distinct names) gives
every candidate's rank, and every other part of a run (the results cache, --save,
--shard and merge) carries them as it carries any set's rows.

The fields are verbatim: leading and trailing spaces belong to a candidate, so a line is
split on tabs and nothing is stripped. The header decides a file's kind (inputs/queryset.py
reads the others).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from recall.errors import RecallError
from recall.files import read_input
from recall.inputs.queryset import JUDGED_TYPES, QueryRow, parse_rows
from recall.inputs.sides import HOLDOUT, SPLITS, TUNE, Split

HEADER = ("domain", "query", "preferred", "other", "source")
DOMAINS = JUDGED_TYPES  # symbol, path: what a row's candidates are
LIST_PREFIX = "judged-"  # a pseudo-corpus's name: this, and the digest of its candidates
# A project is on the holdout when the first byte of sha256("owner/repo") is below this:
# 30% of projects, whole, as the corpora are held out whole (docs/queries.md).
HOLDOUT_BELOW = 77


@dataclass(frozen=True)
class Judgment:
    """One row: for `query`, `preferred` ranks strictly above `other` (a test asserts it);
    `source` cites `owner/repo path@commit test`."""

    domain: str
    query: str
    preferred: str
    other: str
    source: str
    line: int = field(default=0, compare=False)  # in the file read (line 1 is the header)

    @property
    def project(self) -> str:
        """The project whose test asserts it: `owner/repo`, the source's first word."""
        return self.source.split(" ", 1)[0]

    @property
    def asked(self) -> tuple[str, str]:
        """The (domain, query) it is judged under: one list of candidates."""
        return self.domain, self.query

    def reverse(self) -> tuple[str, str, str, str]:
        return self.domain, self.query, self.other, self.preferred


def project_side(project: str) -> str:
    """The side of the tune/holdout split a source project is on, all its rows with it:
    judgments of one project share its scorer's taste, as names of one corpus share its
    style, so a holdout of other rows of the tuned projects would predict nothing."""
    first = hashlib.sha256(project.encode("utf-8")).digest()[0]
    return HOLDOUT if first < HOLDOUT_BELOW else TUNE


def on_side(judgments: Iterable[Judgment], split: Split | None) -> list[Judgment]:
    """The judgments --split runs: those of the side's projects (every one without it)."""
    if split is None:
        return list(judgments)
    if split not in SPLITS:
        raise RecallError(f"--split: unknown split {split!r} (one of {', '.join(SPLITS)})")
    return [j for j in judgments if project_side(j.project) == split]


def projects_by_side(judgments: Iterable[Judgment]) -> dict[str, tuple[str, ...]]:
    """Each side's source projects, in file order: what a report says each side holds."""
    projects = list(dict.fromkeys(j.project for j in judgments))
    return {side: tuple(p for p in projects if project_side(p) == side) for side in SPLITS}


def is_judgments_file(path: Path) -> bool:
    """Does the file start with the judgments header (a BOM allowed)? A pipe is read once,
    and its reader gets the same bytes (files.read_input)."""
    first = read_input(path).split(b"\n", 1)[0]
    return first.removeprefix(b"\xef\xbb\xbf").rstrip(b"\r") == "\t".join(HEADER).encode()


def read_judgments(path: Path) -> list[Judgment]:
    """Parse a judgments file strictly: a bad row is one error naming file:line."""
    return parse_judgments(read_input(path), str(path))


def parse_judgments(data: bytes, where: str) -> list[Judgment]:
    rows = parse_rows(data, where, HEADER, _parse_row)
    if not rows:
        raise RecallError(f"{where}: no judgments under the header")
    return rows


def _parse_row(fields: tuple[str, ...], at: str, number: int) -> Judgment:
    if len(fields) != len(HEADER):
        raise RecallError(f"{at}: expected {len(HEADER)} tab-separated fields, got {len(fields)}")
    domain, query, preferred, other, source = fields
    if domain not in DOMAINS:
        raise RecallError(f"{at}: unknown domain {domain!r} (one of {', '.join(DOMAINS)})")
    for name, value in (("query", query), ("preferred", preferred), ("other", other)):
        if not value:
            raise RecallError(f"{at}: empty {name}")
        if "\0" in value or "\r" in value:
            what = "a NUL byte" if "\0" in value else "a carriage return"
            raise RecallError(f"{at}: the {name} holds {what}, which no names list can carry")
    if preferred == other:
        raise RecallError(f"{at}: preferred and other are the same candidate {preferred!r}")
    if not source.strip():
        raise RecallError(f"{at}: empty source (it cites owner/repo path@commit test)")
    return Judgment(domain, query, preferred, other, source, number)


def contested(judgments: Iterable[Judgment]) -> frozenset[Judgment]:
    """The pairs whose reverse (same domain and query) is in the file too: two tests that
    contradict each other, reported apart and left out of agreement."""
    rows = list(judgments)
    pairs = {(j.domain, j.query, j.preferred, j.other) for j in rows}
    return frozenset(j for j in rows if j.reverse() in pairs)


def candidates(judgments: Iterable[Judgment]) -> dict[tuple[str, str], tuple[str, ...]]:
    """Each (domain, query), in file order, with its candidates sorted as `{names}` is: no
    candidate is favoured by the order the file names it in."""
    found: dict[tuple[str, str], set[str]] = {}
    for j in judgments:
        found.setdefault(j.asked, set()).update((j.preferred, j.other))
    return {asked: tuple(sorted(names)) for asked, names in found.items()}


def list_name(names: tuple[str, ...]) -> str:
    """A pseudo-corpus's name, from its candidates alone: the same list has the same name
    in every file and every selection, so its rows and their cached results do too."""
    digest = hashlib.sha256("\n".join(names).encode("utf-8")).hexdigest()
    return f"{LIST_PREFIX}{digest[:16]}"


def judged_rows(judgments: Iterable[Judgment]) -> list[QueryRow]:
    """The rows a run asks: for each (domain, query) in file order, one row a candidate,
    over the list of its candidates."""
    return [
        QueryRow(list_name(names), query, domain, name)
        for (domain, query), names in candidates(judgments).items()
        for name in names
    ]


def lists_of(rows: Iterable[QueryRow]) -> dict[str, list[str]]:
    """Each pseudo-corpus of judged rows with its names (sorted): what a session writes as
    its `{names}`. Given every row of a list (judged_rows makes them whole)."""
    found: dict[str, set[str]] = {}
    for row in rows:
        found.setdefault(row.repo, set()).add(row.source)
    return {name: sorted(names) for name, names in found.items()}


def refuse_judgments(path: Path, command: str) -> None:
    """A command that reads query sets only, given a judgments file: one line that says
    which command measures it, not a complaint about its header."""
    if is_judgments_file(path):
        raise RecallError(
            f"{path}: a judgments set, which {command} does not read; recall run --queries "
            f"{path} measures a finder's agreement with it"
        )

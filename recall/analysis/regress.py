"""Regress cases: hand-written queries whose #1 result must (or must not) match a pattern.

Recall counts a name as found wherever it is defined; a regress case pins the definition
too, written `file:line name`, for the queries where only one answer is right.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from recall.analysis.model import FailingCase, QueryResult, RegressSummary
from recall.errors import RecallError
from recall.inputs.queryset import QueryRow, read_lines

HEADER = ("repo", "query", "expect")
TYPE = "regress"  # the type of the rows the cases add to a run; never counted as recall


@dataclass(frozen=True)
class Case:
    repo: str
    query: str
    expect: str  # as written, `!` included

    @property
    def row(self) -> QueryRow:
        return QueryRow(self.repo, self.query, TYPE, "")


def read_cases(path: Path, repos: set[str] | None) -> list[Case]:
    """Every case of the file, each line checked; repos, when given, is the set of known
    pins, and a case for any other repo is refused at its line."""
    lines = read_lines(path, str(path))
    if not lines or tuple(lines[0].split("\t")) != HEADER:
        raise RecallError(f"{path}:1: the header must be {'<TAB>'.join(HEADER)}")
    cases = []
    for number, line in enumerate(lines[1:], start=2):
        fields = line.split("\t")
        at = f"{path}:{number}"
        if len(fields) != len(HEADER):
            raise RecallError(f"{at}: expected 3 tab-separated fields, not {len(fields)}")
        repo, query, expect = fields
        if repos is not None and repo not in repos:
            raise RecallError(f"{at}: unknown repo {repo!r}")
        if not query or not expect.removeprefix("!"):
            raise RecallError(f"{at}: the query and the pattern must not be empty")
        if "\0" in query:
            raise RecallError(f"{at}: the query holds a NUL byte, which no argv can carry")
        try:
            re.compile(expect.removeprefix("!"))
        except re.error as exc:
            raise RecallError(f"{at}: bad pattern {expect!r}: {exc}") from None
        cases.append(Case(repo, query, expect))
    return cases


def has_locations(results: Iterable[QueryResult]) -> bool:
    """Does a finder print locations at all: does any hit of its answers name a file? A
    finder that prints names alone (fzy, fzf over a name list) can neither hold nor fail a
    case written `file:line name`, even where it answers nothing."""
    return any(hit.file is not None for result in results for hit in result.top)


def verdict(case: Case, result: QueryResult, located: bool = True) -> str:
    """`holds`, `fails`, or `n/a`: for a finder that prints no locations (`located`
    false), and for an answer whose first result has none."""
    if not located:
        return "n/a"
    if result.error:
        return "fails"
    if not result.top:
        return "holds" if case.expect.startswith("!") else "fails"
    first = result.top[0]
    if first.file is None or first.line is None:
        return "n/a"
    written = f"{first.file}:{first.line} {first.name}"
    matched = re.search(case.expect.removeprefix("!"), written) is not None
    return "holds" if matched != case.expect.startswith("!") else "fails"


def first_written(result: QueryResult) -> str | None:
    if result.error:
        return f"error: {result.error}"
    if not result.top:
        return None
    first = result.top[0]
    return f"{first.file}:{first.line} {first.name}" if first.file else first.name


def summarize(
    cases: list[Case], results: list[QueryResult], located: bool = True
) -> RegressSummary:
    """A finder's verdicts on the cases; `located`: whether it prints locations at all
    (has_locations over every answer of its run)."""
    verdicts = [verdict(c, r, located) for c, r in zip(cases, results, strict=True)]
    return RegressSummary(
        cases=len(cases),
        holds=verdicts.count("holds"),
        fails=verdicts.count("fails"),
        not_applicable=verdicts.count("n/a"),
        failing=tuple(
            FailingCase(c.repo, c.query, c.expect, first_written(r))
            for c, r, v in zip(cases, results, verdicts, strict=True)
            if v == "fails"
        ),
        no_locations=not located,
    )


def broken(
    cases: list[Case], base: list[QueryResult], new: list[QueryResult], *,
    base_located: bool = True, new_located: bool = True,
) -> tuple[FailingCase, ...]:  # fmt: skip
    """Cases that held in the baseline and fail in the candidate: losses (none where
    either side prints no locations: its verdicts are n/a)."""
    return tuple(
        FailingCase(c.repo, c.query, c.expect, first_written(n))
        for c, b, n in zip(cases, base, new, strict=True)
        if verdict(c, b, base_located) == "holds" and verdict(c, n, new_located) == "fails"
    )

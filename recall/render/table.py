"""The one table helper of every text and Markdown page: the run report, the results page
and the history table.

A name holding a control character (a tab, a newline, an ESC, a U+202E) must not break a
table or reach the terminal raw, nor, in Markdown, a pipe, a tag or a link, so every cell
(and, in Markdown, every header) is escaped for its medium (recall/render/escape.py); a
cell of `Markdown` that recall wrote itself (a code span) is put in as it is. `by_error`
groups listed rows under their error, for the text and the HTML report alike.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TypeVar

from recall.render.escape import Markdown, markdown
from recall.terminal import shown

T = TypeVar("T")

NUMERIC = re.compile(r"[-+]?[\d.]+%?( \(.*\))?|-|( / )?([\d.]+( / )?)+")


def _cell(text: str, in_markdown: bool) -> str:
    if not in_markdown:
        return shown(text)
    return text if isinstance(text, Markdown) else markdown(text)


def table(
    header: Sequence[str],
    body: Sequence[Sequence[str]],
    markdown: bool,
    *,
    right: Sequence[bool] | None = None,
    clip: dict[int, int] | None = None,
) -> list[str]:
    """The table's lines. `right` says which columns are right-aligned: given, it holds in
    Markdown too (`---:`); not given, text right-aligns the columns after the first whose
    every cell is a number, and Markdown aligns none. `clip` cuts a column of text to at
    most that many characters (a commit subject)."""
    cells = [[_cell(c, markdown) for c in row] for row in body]
    if markdown:
        rule = ["---:" if r else "---" for r in right] if right else ["---"] * len(header)
        head = [_cell(h, True) for h in header]
        lines = ["| " + " | ".join(head) + " |", "|" + "|".join(rule) + "|"]
        return lines + ["| " + " | ".join(row) + " |" for row in cells]
    rows = [list(header), *cells]
    for column, most in (clip or {}).items():
        for row in rows:
            row[column] = row[column][:most]
    columns = list(zip(*rows, strict=True))
    widths = [max(len(c) for c in col) for col in columns]
    if right is None:
        right = [
            i > 0 and all(NUMERIC.fullmatch(c) for c in col[1:]) for i, col in enumerate(columns)
        ]

    def fmt(row: list[str]) -> str:
        padded = [
            c.rjust(w) if r else c.ljust(w) for c, w, r in zip(row, widths, right, strict=True)
        ]
        return "  ".join(padded).rstrip()

    return [fmt(row) for row in rows]


def numbers_table(
    header: Sequence[str], body: Sequence[Sequence[str]], markdown: bool
) -> list[str]:
    """A table of a label and numbers: in text every column after the first is
    right-aligned (a cell with a marker or a range is no bare number); Markdown aligns none."""
    right = None if markdown else [i > 0 for i in range(len(header))]
    return table(header, body, markdown, right=right)


def more(hidden: int, markdown: bool, where: str = "--json or --html") -> list[str]:
    """The line after a list cut short: how many more rows, and where they are."""
    line = f"… and {hidden} more: see {where}"
    return ["", line] if markdown else [line]


def heading(text: str, markdown: bool) -> list[str]:
    """A section's title: a Markdown heading, or a line of its own, after a blank line."""
    return ["", f"## {text}" if markdown else text]


def first_rows(
    header: Sequence[str],
    body: Sequence[Sequence[str]],
    markdown: bool,
    shown_at_most: int,
    count: int | None = None,
) -> list[str]:
    """A long list's first rows as a table, and the line saying how many more the JSON and
    the page hold (a section naming rows left out of something: the first few suffice).
    `count`: how many rows the list has, where `body` holds only its first ones."""
    out = table(header, body[:shown_at_most], markdown)
    total = len(body) if count is None else count
    if total > shown_at_most:
        out += more(total - shown_at_most, markdown)
    return out


def by_error(rows: Sequence[T], error: Callable[[T], str]) -> list[tuple[str, list[T]]]:
    """Rows grouped by their error, in the order each error first comes: a report says an
    error once with the queries that got it, not once per query (a function that returns
    a str instead of a list fails every query the same way; a server that times out does
    the same again and again)."""
    groups: dict[str, list[T]] = {}
    for row in rows:
        groups.setdefault(error(row), []).append(row)
    return list(groups.items())

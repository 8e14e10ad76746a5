"""The one table helper of every text and Markdown page: the run report, the results page
and the history table.

A name holding a control character (a tab, a newline, an ESC) or, in Markdown, a pipe must
not break a table or reach the terminal raw, so every cell is shown escaped.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from recall.terminal import shown

NUMERIC = re.compile(r"[-+]?[\d.]+%?( \(.*\))?|-|( / )?([\d.]+( / )?)+")


def _cell(text: str, markdown: bool) -> str:
    text = shown(text)
    return text.replace("|", "\\|") if markdown else text


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
        lines = ["| " + " | ".join(header) + " |", "|" + "|".join(rule) + "|"]
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

"""The columns of a finder's counts, once: the header, how a `Counts` value is shown in
each cell, and how the cell is aligned, with the ceiling's row beside them.

The text and Markdown report (render/text.py), the HTML report (render/html.py) and the
results page (render/results_page.py) all build their counts tables from COUNTS, so a
column added here (nDCG@10, say) reaches every page at once instead of one of them, the
history's (render/history.py) among them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from recall.analysis.model import CeilingCounts, Counts, Holdout, Report

ABOVE = "^"  # a finder's #1 or top 10 above the ceiling's 95% range on the same rows
NONE = "-"  # a cell with nothing to show (the ceiling has no MRR)


@dataclass(frozen=True)
class Marks:
    """Which of a finder's counts are above the ceiling's 95% range on the same rows."""

    first: bool = False
    top10: bool = False


NO_MARKS = Marks()


@dataclass(frozen=True)
class Bound:
    """The ceiling as a row of a counts table: the expected #1 and top 10, their percents
    of n and their 95% ranges in counts (None in JSON reports kept before the ranges)."""

    n: int
    first: float
    first_pct: float
    first_ci: tuple[int, int] | None
    top10: float
    top10_pct: float
    top10_ci: tuple[int, int] | None


@dataclass(frozen=True)
class Column:
    """One column of a counts table: its header, its cell for a finder's counts, its cell
    in the ceiling's row (None: the ceiling has no such number), and whether it is
    right-aligned (a number) or left-aligned (text)."""

    header: str
    cell: Callable[[Counts, Marks], str]
    ceiling: Callable[[Bound], str] | None = None
    right: bool = True


def marked(text: str, above: bool) -> str:
    """A count with the ceiling's mark when it is above the ceiling's range."""
    return f"{text}{ABOVE}" if above else text


def share(count: int, pct: float) -> str:
    """A count with its percent of n: `7 (87.5%)`."""
    return f"{count} ({pct:.1f}%)"


def expected(count: float, pct: float, ci: tuple[int, int] | None) -> str:
    """A ceiling's expected count, its percent and its 95% range: `5.5 (68.8%) [5-6]`."""
    shown = "" if ci is None else f" [{ci[0]}-{ci[1]}]"
    return f"{count:.1f} ({pct:.1f}%){shown}"


COUNTS: tuple[Column, ...] = (
    Column("n", lambda c, _m: f"{c.n}", lambda b: f"{b.n}"),
    Column(
        "#1",
        lambda c, m: marked(share(c.first, c.first_pct), m.first),
        lambda b: expected(b.first, b.first_pct, b.first_ci),
    ),
    Column(
        "top 10",
        lambda c, m: marked(share(c.top10, c.top10_pct), m.top10),
        lambda b: expected(b.top10, b.top10_pct, b.top10_ci),
    ),
    Column("found", lambda c, _m: share(c.found, c.found_pct)),
    Column("MRR", lambda c, _m: f"{c.mrr:.3f}"),
    Column("nDCG@10", lambda c, _m: f"{c.ndcg10:.3f}"),
    Column("errors", lambda c, _m: f"{c.errors}"),
)
HEADER = [column.header for column in COUNTS]


def cells(c: Counts, marks: Marks = NO_MARKS) -> list[str]:
    """A finder's counts, one cell per column of COUNTS."""
    return [column.cell(c, marks) for column in COUNTS]


def ceiling_cells(bound: Bound) -> list[str]:
    """The ceiling's row under COUNTS: its expected counts, "-" where it has none."""
    return [column.ceiling(bound) if column.ceiling else NONE for column in COUNTS]


# A finder's counts in one cell, where a table has a column per finder (text and Markdown
# with several candidates), and the ceiling's beside them.
COMPACT = "#1% / top 10% / found% / MRR"
CEILING_COMPACT = "ceiling #1% / top 10%"
# The headline percents, as the summary of several finders shows them.
PERCENTS = ("#1", "top 10", "found")


def compact(c: Counts, marks: Marks = NO_MARKS) -> str:
    """A finder's COMPACT cell: `72.0^ / 90.1 / 95.0 / 0.801`."""
    first = marked(f"{c.first_pct:.1f}", marks.first)
    top10 = marked(f"{c.top10_pct:.1f}", marks.top10)
    return f"{first} / {top10} / {c.found_pct:.1f} / {c.mrr:.3f}"


def ceiling_compact(c: CeilingCounts | None, n: int) -> str:
    """A group's ceiling in percent with its ranges (CEILING_COMPACT), and its own n where it
    leaves rows of the group out of the group's n; "-" without a ceiling."""
    if not c:
        return NONE
    cell = (
        f"{c.first_pct:.1f} [{range_pct(c, c.first_ci)}] / "
        f"{c.top10_pct:.1f} [{range_pct(c, c.top10_ci)}]"
    )
    return cell if c.n == n else f"{cell} of {c.n}"


def percents(c: Counts) -> list[str]:
    """A finder's PERCENTS cells: `72.0%`, `90.1%`, `95.0%`."""
    return [f"{c.first_pct:.1f}%", f"{c.top10_pct:.1f}%", f"{c.found_pct:.1f}%"]


def left_aligned(first: int = 1) -> frozenset[int]:
    """The indexes of COUNTS's text columns in a table where they start at `first`."""
    return frozenset(first + i for i, column in enumerate(COUNTS) if not column.right)


def bound_of(c: CeilingCounts) -> Bound:
    return Bound(c.n, c.first, c.first_pct, c.first_ci, c.top10, c.top10_pct, c.top10_ci)


def range_pct(c: CeilingCounts, ci: tuple[int, int]) -> str:
    """A ceiling's 95% range in percent of its n: `62.5-87.5` ("-" without rows)."""
    return f"{100.0 * ci[0] / c.n:.1f}-{100.0 * ci[1] / c.n:.1f}" if c.n else "-"


def holdout_lines(holdout: Holdout) -> list[str]:
    """A --split holdout report's corpora, fresh and seen, and on each the first finder's
    margin over the best of the others (the JSON report's `holdout`): plain lines that
    text, Markdown and HTML show alike, each escaping them for its medium."""
    lines = []
    for name, view in (("fresh", holdout.fresh), ("seen", holdout.seen)):
        line = f"{name} holdout: {', '.join(view.corpora) or 'none'} ({view.n} sourced rows)"
        m = view.margin
        if m is not None:
            line += (
                f"; #1 {m.label} {m.first_pct:.1f}% against {m.other} "
                f"{m.other_pct:.1f}%, margin {m.points:+.1f} points (paired SE {m.se:.1f})"
            )
        lines.append(line)
    return lines


def split_note(report: Report) -> str:
    """Which side of the tune/holdout split a page's reports ran, if one, with the
    holdout's corpora, fresh and seen (docs/queries.md); empty for every row."""
    split = report.split
    if not split:
        return ""
    note = f" (its {split} split, `--split {split}`: docs/queries.md"
    holdout = report.holdout
    if holdout:
        note += "; " + "; ".join(
            f"{name} holdout {', '.join(view.corpora) or 'none'}"
            for name, view in (("fresh", holdout.fresh), ("seen", holdout.seen))
        )
    return note + ")"

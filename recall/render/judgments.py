"""A judgments run (recall/analysis/judgments.py) as text, Markdown and HTML: each finder's
agreement with its interval, by source project and by domain, the contested pairs, and a
diff's lost and gained judgments. One set of cells serves every medium."""

from __future__ import annotations

from collections.abc import Callable

from recall.analysis.judgments import (
    Agreement,
    Judged,
    JudgedDiff,
    JudgedRun,
    JudgmentChange,
    agrees,
)
from recall.render.escape import html as _e
from recall.render.escape import said
from recall.render.table import heading, more, numbers_table, table

CHANGES_SHOWN = 20  # a diff's lost and gained judgments in text and Markdown
NOTE = (
    "agree: preferred ranked strictly above other in the finder's answer over the query's "
    "own candidates (an answer without other counts as above it); 95% CI: Wilson's "
    "interval of the percent; neither: pairs where the finder found neither candidate, "
    "counted as disagreeing (docs/queries.md, the judgments set)"
)
HEADER = ["finder", "pairs", "agree", "95% CI", "neither", "symbol", "path"]


def agreement_cell(a: Agreement | None) -> str:
    """`401 (73.3%) [69.4-76.9]`: the count, its percent and its interval."""
    if a is None or not a.n:
        return "-"
    return f"{a.agree} ({a.pct:.1f}%) [{a.ci[0]:.1f}-{a.ci[1]:.1f}]"


def percent_cell(a: Agreement | None) -> str:
    """`73.3 [69.4-76.9]`: a cell of a table with a column per finder."""
    return "-" if a is None or not a.n else f"{a.pct:.1f} [{a.ci[0]:.1f}-{a.ci[1]:.1f}]"


def verbatim(text: str) -> str:
    """A query or candidate as a table cell: quoted where it starts or ends with a space,
    which belongs to it (fzy's `    a b c `) and which a table would not show."""
    return repr(text) if text != text.strip() else text


def _rank(rank: int | None) -> str:
    return "-" if rank is None else str(rank)


def ranks_cell(ranks: tuple[int | None, int | None]) -> str:
    """Where preferred and other ranked: `1 / 3`, `-` for not found."""
    return f"{_rank(ranks[0])} / {_rank(ranks[1])}"


def _head(judged: Judged) -> str:
    projects = len({p.project for p in judged.pairs})
    domains = {d: sum(1 for p in judged.pairs if p.domain == d) for d in ("symbol", "path")}
    plural = "" if projects == 1 else "s"
    return (
        f"Judgments: {len(judged.pairs)} pairs from {projects} project{plural} "
        f"({domains['symbol']} symbol, {domains['path']} path), {judged.queries} queries over "
        f"{judged.lists} "
        f"candidate lists; {judged.contested} contested"
    )


def sides_line(judged: Judged) -> str | None:
    """With --split: which side the pairs are of, and each side's projects (a project is
    on one side whole: docs/queries.md, the judgments set)."""
    if not judged.split:
        return None
    named = "; ".join(
        f"{side} {len(projects)} ({', '.join(projects)})" if projects else f"{side} none"
        for side, projects in judged.sides.items()
    )
    return f"the {judged.split} split of the judgments, by source project: {named}"


def overall_rows(runs: tuple[JudgedRun, ...]) -> list[list[str]]:
    return [
        [r.label, str(r.agreement.n), f"{r.agreement.agree} ({r.agreement.pct:.1f}%)",
         f"{r.agreement.ci[0]:.1f}-{r.agreement.ci[1]:.1f}", str(r.agreement.neither),
         percent_cell(r.by_domain.get("symbol")), percent_cell(r.by_domain.get("path"))]
        for r in runs
    ]  # fmt: skip


def group_rows(
    runs: tuple[JudgedRun, ...], of: Callable[[JudgedRun], dict[str, Agreement]]
) -> list[list[str]]:
    """A row a group (a project, a domain), its pairs, and a cell a finder."""
    keys = list(dict.fromkeys(k for r in runs for k in of(r)))
    return [
        [key, str(next(of(r)[key].n for r in runs if key in of(r))),
         *((agreement_cell if len(runs) == 1 else percent_cell)(of(r).get(key)) for r in runs)]
        for key in keys
    ]  # fmt: skip


def contested_rows(judged: Judged) -> list[list[str]]:
    """Each contested pair and, per finder, whether it orders the pair as its row says."""
    return [
        [verbatim(p.query), verbatim(p.preferred), verbatim(p.other), p.source,
         *("as row" if agrees(r.ranks[i]) else "reverse" for r in judged.runs)]
        for i, p in enumerate(judged.pairs)
        if p.contested
    ]  # fmt: skip


def change_rows(changes: tuple[JudgmentChange, ...]) -> list[list[str]]:
    return [
        [c.pair.domain, verbatim(c.pair.query), verbatim(c.pair.preferred),
         verbatim(c.pair.other), ranks_cell(c.base),
         ranks_cell(c.new), c.pair.source]
        for c in changes
    ]  # fmt: skip


CHANGE_HEADER = ["domain", "query", "preferred", "other", "base ranks", "new ranks", "source"]
CONTESTED_NOTE = (
    "a pair whose reverse (same domain and query) is in the file too: two tests that "
    "contradict each other, left out of agreement"
)
RANKS_NOTE = (
    "ranks: preferred / other in each side's answer (- not found); a string quoted starts "
    "or ends with a space of its own"
)


def render_judgments(judged: Judged, markdown: bool) -> list[str]:
    """The section's lines: the finders' agreement, by project and domain, the contested
    pairs, then each diff's lost and gained judgments."""
    out = heading(_head(judged), markdown)[1:]
    sides = sides_line(judged)
    if sides:
        out += ["", sides, ""] if markdown else [sides]
    out += numbers_table(HEADER, overall_rows(judged.runs), markdown)
    out += ["", NOTE]
    labels = [r.label for r in judged.runs]
    for title, of in (
        ("source project", lambda r: r.by_project),
        ("domain", lambda r: r.by_domain),
    ):
        out += heading(f"By {title}", markdown)
        if len(judged.runs) > 1:
            cell = "each cell: agreement % [95% CI]"
            out += [cell, ""] if markdown else [cell]
        out += numbers_table([title, "pairs", *labels], group_rows(judged.runs, of), markdown)
    out += heading(f"Contested pairs: {judged.contested} ({CONTESTED_NOTE})", markdown)
    if judged.contested:
        header = ["query", "preferred", "other", "source", *labels]
        out += table(header, contested_rows(judged), markdown)
    for d in judged.diffs:
        out += render_judged_diff(d, markdown)
    return out


def render_judged_diff(d: JudgedDiff, markdown: bool) -> list[str]:
    """A candidate's diff: its verdict, its counts, and the judgments lost and gained."""
    out = heading(f"Diff: {said(d.new, markdown)} against {said(d.base, markdown)}", markdown)
    out += [d.verdict_line(), ""] if markdown else [d.verdict_line()]
    out.append(d.counts_line())
    for title, changes in (("Lost judgments", d.lost), ("Gained judgments", d.gained)):
        out += heading(f"{title}: {len(changes)}", markdown)
        if not changes:
            continue
        out += [RANKS_NOTE, ""] if markdown else [RANKS_NOTE]
        out += table(CHANGE_HEADER, change_rows(changes[:CHANGES_SHOWN]), markdown)
        if len(changes) > CHANGES_SHOWN:
            out += more(len(changes) - CHANGES_SHOWN, markdown)
    return out


# HTML, from the JSON report's `judgments` object ----------------------------------------


def _table(head: list[str], rows: list[list[str]], text: frozenset[int]) -> str:
    def cls(i: int) -> str:
        return ' class="text"' if i in text else ""

    out = ["<table><tr>", *(f"<th{cls(i)}>{_e(h)}</th>" for i, h in enumerate(head)), "</tr>"]
    for row in rows:
        out += ["<tr>", *(f"<td{cls(i)}>{_e(c)}</td>" for i, c in enumerate(row)), "</tr>"]
    out.append("</table>")
    return "".join(out)


def judgments_html(judged: Judged) -> list[str]:
    """The judgments section of the HTML page."""
    labels = [r.label for r in judged.runs]
    sides = sides_line(judged)
    out = [
        f"<h2>{_e(_head(judged))}</h2>",
        *([f"<p>{_e(sides)}</p>"] if sides else []),
        _table(HEADER, overall_rows(judged.runs), frozenset({0})),
        f"<p>{_e(NOTE)}</p>",
    ]
    for title, of in (
        ("source project", lambda r: r.by_project),
        ("domain", lambda r: r.by_domain),
    ):
        out += [
            f"<h2>By {_e(title)}</h2>",
            _table([title, "pairs", *labels], group_rows(judged.runs, of), frozenset({0})),
        ]
    out.append(f"<h2>Contested pairs: {judged.contested}</h2><p>{_e(CONTESTED_NOTE)}</p>")
    if judged.contested:
        head = ["query", "preferred", "other", "source", *labels]
        out.append(_table(head, contested_rows(judged), frozenset(range(len(head)))))
    for d in judged.diffs:
        out += [
            f"<h2>Diff: {_e(d.new)} against {_e(d.base)}</h2>",
            f"<p><strong>{_e(d.verdict_line())}</strong></p>",
            f"<p>{_e(d.counts_line())}</p>",
        ]
        for title, changes in (("Lost judgments", d.lost), ("Gained judgments", d.gained)):
            out.append(f"<h3>{_e(title)}: {len(changes)}</h3>")
            if changes:
                out += [
                    f"<p>{_e(RANKS_NOTE)}</p>",
                    _table(CHANGE_HEADER, change_rows(changes), frozenset({0, 1, 2, 3, 6})),
                ]
    return out

"""Keystrokes to the name (a typing set's run, recall/analysis/effort.py) as text,
Markdown and HTML: the effort table of every finder and the ceiling, the k-curve, the
groups, and the sequences a candidate now needs more keystrokes for."""

from __future__ import annotations

from collections.abc import Sequence

from recall.analysis.effort import (
    CHANGES_SHOWN,
    LEFT_OUT_SHOWN,
    Effort,
    EffortChange,
    EffortCounts,
    EffortDiff,
    EffortRun,
)
from recall.render.columns import marked
from recall.render.escape import html as _e
from recall.render.escape import said
from recall.render.svg import percent_grid, svg_start
from recall.render.table import first_rows, heading, numbers_table, table

EFFORT_HEADER = [
    "sequences", "#1 reached", "keys to #1", "top 3 reached", "keys to top 3", "saved",
]  # fmt: skip
CELL = "#1% / keys to #1 / saved%"
GROUPS = (("sequence", "by_sequence"), ("repo", "by_repo"), ("language", "by_language"))
# One colour a line of the k-curve, the ceiling's dashed grey.
LINE_COLORS = ("#08519c", "#e6550d", "#31a354", "#756bb1", "#de2d26", "#636363", "#17becf",
               "#bcbd22", "#8c564b", "#e377c2")  # fmt: skip
CEILING_COLOR = "#969696"
LEGEND_CHAR_PX = 7
NOTE = (
    "keys to #1 and keys to top 3 are the mean keystrokes of the sequences that get there; "
    "saved is the keystrokes saved against typing each whole name (none where #1 never "
    "comes); ceiling: the best any finder can expect under the typing model, the k names a "
    "prefix could be typing toward each as likely, so the source is #1 with chance 1/k "
    "(docs/queries.md); its counts are expectations, and [low-high] is the 95% range of the "
    "count a finder as good as the model gets on these sequences"
)
ABOVE_NOTE = (
    "^ above the ceiling's 95% range on the same sequences: more than chance gives any "
    "finder under the typing model, so either that model is wrong for them or the "
    "finder's order suits this one sample (a lean the sample favours, or tuning on it): "
    "docs/queries.md"
)


def _keys(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _reached(count: float, pct: float, ci: tuple[int, int] | None, above: bool) -> str:
    """A count reached, its percent, and the ceiling's range or a finder's mark above it."""
    shown = f"{count} ({pct:.1f}%)"
    if ci is not None:
        shown += f" [{ci[0]}-{ci[1]}]"
    return marked(shown, above)


def _cells(c: EffortCounts, ceiling: EffortCounts | None) -> list[str]:
    """A finder's (or, against None, the ceiling's) row of the effort table."""
    if not c.n:  # a ceiling of no sequence (every one left out): no numbers to show
        return ["0", *["-"] * (len(EFFORT_HEADER) - 1)]
    first, top3 = c.above(ceiling)
    return [
        str(c.n), _reached(c.first, c.first_pct, c.first_ci, first), _keys(c.first_keys),
        _reached(c.top3, c.top3_pct, c.top3_ci, top3), _keys(c.top3_keys),
        f"{c.saved_pct:.1f}%",
    ]  # fmt: skip


def _cell(c: EffortCounts | None, ceiling: EffortCounts | None) -> str:
    """One group's numbers of a finder (or, against None, of the ceiling, with its #1
    range in percent)."""
    if c is None:
        return "-"
    first = f"{c.first_pct:.1f}"
    if c.first_ci is not None and c.n:
        first += f" [{100.0 * c.first_ci[0] / c.n:.1f}-{100.0 * c.first_ci[1] / c.n:.1f}]"
    first = marked(first, c.above(ceiling)[0])
    return f"{first} / {_keys(c.first_keys)} / {c.saved_pct:.1f}"


def _rows(effort: Effort) -> list[tuple[EffortRun, EffortRun | None]]:
    """Each finder with the ceiling it is judged against, then the ceiling itself."""
    return [*((run, effort.ceiling) for run in effort.runs), (effort.ceiling, None)]


def _any_above(effort: Effort) -> bool:
    pairs = [(run.counts, effort.ceiling.counts) for run in effort.runs]
    for _title, key in GROUPS:
        ceilings = getattr(effort.ceiling, key)
        pairs += [(c, ceilings.get(name)) for run in effort.runs
                  for name, c in getattr(run, key).items()]  # fmt: skip
    return any(any(c.above(ceiling)) for c, ceiling in pairs)


def _heading(text: str, markdown: bool) -> list[str]:
    """The shared heading, with a blank line under it in Markdown: the effort's tables follow
    their headings that way."""
    return heading(text, markdown) + ([""] if markdown else [])


def render_effort(effort: Effort, markdown: bool) -> list[str]:
    """The effort section's lines: the table, the k-curve, the groups, the diffs."""
    rows = _rows(effort)
    out = _heading(
        f"Keystrokes to the name: {effort.sequences} typing sequences, {effort.steps} steps, "
        f"{effort.prompts} distinct queries",
        markdown,
    )
    body = [[r.label, *_cells(r.counts, c.counts if c else None)] for r, c in rows]
    out += numbers_table(["finder", *EFFORT_HEADER], body, markdown)
    out += ["", NOTE]
    if _any_above(effort):
        out += ["", ABOVE_NOTE] if markdown else [ABOVE_NOTE]
    out += _heading("Share of sequences at #1 within k keystrokes (%)", markdown)
    body = [
        [r.label, *(f"{p:.1f}" if r.counts.n else "-" for p in r.counts.curve)] for r, _c in rows
    ]
    out += numbers_table(["finder", *(f"k={k}" for k in range(1, 11))], body, markdown)
    for title, key in GROUPS:
        out += _heading(f"Keystrokes by {title}", markdown)
        out += [f"each cell: {CELL}", ""] if markdown else [f"each cell: {CELL}"]
        out += numbers_table(
            [title, "n", *(r.label for r, _c in rows)], _group_rows(rows, key), markdown
        )
    out += _left_out(effort, markdown)
    for d in effort.diffs:
        out += render_effort_diff(d, markdown)
    return out


def _group_rows(rows: list[tuple[EffortRun, EffortRun | None]], key: str) -> list[list[str]]:
    """One row a group (a sequence type, a repo, a language): its n and each finder's
    cell, judged against the ceiling's cell of that group."""
    of_rows = [{g: c.n for g, c in getattr(r, key).items()} for r, _c in rows]
    return [
        [name, str(n),
         *(_cell(getattr(r, key).get(name), getattr(c, key).get(name) if c else None)
           for r, c in rows)]
        for name, n in _groups(of_rows)
    ]  # fmt: skip


def _groups(of_rows: list[dict[str, int]]) -> list[tuple[str, int]]:
    """Each group of any row (each finder's, then the ceiling's: group to sequences) with
    its sequences: a group whose every sequence the ceiling leaves out is still a
    finder's row, and its n is the finders'."""
    groups: dict[str, int] = {}
    for of_row in of_rows:
        for name, n in of_row.items():
            groups.setdefault(name, n)
    return list(groups.items())


def _left_out(effort: Effort, markdown: bool) -> list[str]:
    """The sequences the typing model does not type, left out of the ceiling, once."""
    rows = effort.left_out
    if not rows.count:
        return []
    out = _heading(
        f"Left out of the ceiling: {rows.count} sequence{'' if rows.count == 1 else 's'} the "
        "typing model does not type toward its source (its steps are no prefixes of the "
        "text that way types for the name); the finders' counts keep them",
        markdown,
    )
    body = [[r.repo, r.sequence, r.source, r.typed] for r in rows.first]
    header = ["repo", "sequence", "source", "typed"]
    return out + first_rows(header, body, markdown, LEFT_OUT_SHOWN, rows.count)


def render_effort_diff(d: EffortDiff, markdown: bool) -> list[str]:
    """The sequences a candidate needs more keystrokes for, and those that no longer
    reach the top 3: the rows of its losses (the Diff section says its verdict)."""
    out = _heading(
        f"Keystrokes to #1, {said(d.new, markdown)} against {said(d.base, markdown)}: "
        f"{d.more} sequences need more, {d.fewer} fewer, {d.same} the same",
        markdown,
    )
    out += _changes(d.more_keys, "was #1 at", markdown)
    if d.lost_top3:
        out += _heading(
            f"No longer in the top 3, {said(d.new, markdown)} against "
            f"{said(d.base, markdown)}: {len(d.lost_top3)} sequences",
            markdown,
        )
        out += _changes(d.lost_top3, "was top 3 at", markdown)
    return out


def _changes(changes: tuple[EffortChange, ...], was: str, markdown: bool) -> list[str]:
    if not changes:
        return []
    body = [
        [c.repo, c.sequence, c.source, str(c.base_keys), c.base_query,
         "never" if c.new_keys is None else str(c.new_keys)]
        for c in changes[:CHANGES_SHOWN]
    ]  # fmt: skip
    out = table(["repo", "sequence", "source", was, "typing", "now"], body, markdown)
    if len(changes) > CHANGES_SHOWN:
        out.append(f"... and {len(changes) - CHANGES_SHOWN} more: see --json or --html")
    return out


# HTML ------------------------------------------------------------------------------------


def k_curve(runs: Sequence[EffortRun], ceiling: EffortRun | None) -> str:
    """The share of sequences at #1 within k keystrokes, k = 1..10: a line per finder and
    the ceiling's, dashed."""
    lines = [(run, LINE_COLORS[i % len(LINE_COLORS)], False) for i, run in enumerate(runs)]
    if ceiling:
        lines.append((ceiling, CEILING_COLOR, True))
    ks = len(lines[0][0].counts.curve) if lines else 10
    # The legend as wide as its longest line (a base's label holds its ref and commit):
    # at most LEGEND_CHAR_PX a character of the page's 12px font, so none is cut off.
    longest = max((len(f"{run.label} (100.0% by {ks})") for run, _c, _d in lines), default=0)
    left, top, plot_w, plot_h = 50, 16, 520, 260
    legend_w = max(260, 56 + LEGEND_CHAR_PX * longest)
    width, height = left + plot_w + legend_w, top + plot_h + 44

    def x(k: int) -> float:
        return left + plot_w * (k - 1) / max(1, ks - 1)

    def y(pct: float) -> float:
        return top + plot_h * (1 - pct / 100)

    parts = [*svg_start(width, height, "k-curve"), *percent_grid(left, plot_w, y, "%")]
    for k in range(1, ks + 1):
        parts.append(
            f'<text x="{x(k):.1f}" y="{top + plot_h + 16}" text-anchor="middle">{k}</text>'
        )
    parts.append(
        f'<text x="{left + plot_w / 2}" y="{height - 6}" text-anchor="middle">'
        "keystrokes typed (k)</text>"
    )
    for i, (run, color, dashed) in enumerate(lines):
        points = " ".join(f"{x(k):.1f},{y(p):.1f}" for k, p in enumerate(run.counts.curve, 1))
        dash = ' stroke-dasharray="6,4"' if dashed else ""
        label = _e(run.label)
        parts.append(
            f'<polyline points="{points}" fill="none" stroke="{color}" stroke-width="2.5"'
            f"{dash}><title>{label}</title></polyline>"
        )
        for k, p in enumerate(run.counts.curve, 1):
            parts.append(
                f'<circle cx="{x(k):.1f}" cy="{y(p):.1f}" r="3" fill="{color}">'
                f"<title>{label}: {p:.1f}% at #1 within {k}</title></circle>"
            )
        ly = top + 14 + 20 * i
        parts.append(
            f'<line x1="{left + plot_w + 20}" y1="{ly - 4}" x2="{left + plot_w + 44}" '
            f'y2="{ly - 4}" stroke="{color}" stroke-width="2.5"{dash}/>'
            f'<text x="{left + plot_w + 50}" y="{ly}">{label} '
            f"({run.counts.curve[-1]:.1f}% by {ks})</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


def _html_table(head: list[str], rows: Sequence[Sequence[object]], text: int = 1) -> str:
    cls = ' class="text"'
    out = ["<table><tr>", *(f"<th{cls if i < text else ''}>{_e(h)}</th>" for i, h in
                            enumerate(head)), "</tr>"]  # fmt: skip
    for row in rows:
        cells = (f"<td{cls if i < text else ''}>{_e(c)}</td>" for i, c in enumerate(row))
        out += ["<tr>", *cells, "</tr>"]
    out.append("</table>")
    return "".join(out)


def effort_html(effort: Effort) -> list[str]:
    """The effort section of the HTML page (a report kept before the ceiling had ranges
    shows none)."""
    rows = _rows(effort)
    body = [[r.label, *_cells(r.counts, c.counts if c else None)] for r, c in rows]
    out = [
        f"<h2>Keystrokes to the name: {_e(effort.sequences)} typing sequences, "
        f"{_e(effort.steps)} steps, {_e(effort.prompts)} distinct queries</h2>",
        _html_table(["finder", *EFFORT_HEADER], body),
        f"<p>{_e(NOTE)}</p>",
        *([f"<p>{_e(ABOVE_NOTE)}</p>"] if _any_above(effort) else []),
        "<h2>Share of sequences at #1 within k keystrokes</h2>",
        k_curve(effort.runs, effort.ceiling if effort.ceiling.counts.n else None),
    ]
    for title, key in GROUPS:
        out += [
            f"<h2>Keystrokes by {_e(title)}</h2><p>each cell: {_e(CELL)}</p>",
            _html_table([title, "n", *(r.label for r, _c in rows)], _group_rows(rows, key)),
        ]
    left_out = effort.left_out
    if left_out.count:
        out += [
            f"<h2>Left out of the ceiling: {_e(left_out.count)} sequences the typing model "
            "does not type toward their source</h2>",
            _html_table(
                ["repo", "sequence", "source", "typed"],
                [[s.repo, s.sequence, s.source, s.typed] for s in left_out.first],
                text=4,
            ),
        ]
    for d in effort.diffs:
        out.append(
            f"<h2>Keystrokes to #1, {_e(d.new)} against {_e(d.base)}: {_e(d.more)} "
            f"sequences need more, {_e(d.fewer)} fewer, {_e(d.same)} the same</h2>"
        )
        out += _html_changes(d.more_keys, "was #1 at")
        if d.lost_top3:
            out.append(
                f"<h2>No longer in the top 3, {_e(d.new)} against {_e(d.base)}: "
                f"{_e(len(d.lost_top3))} sequences</h2>"
            )
            out += _html_changes(d.lost_top3, "was top 3 at")
    return out


def _html_changes(changes: tuple[EffortChange, ...], was: str) -> list[str]:
    if not changes:
        return []
    body = [
        [c.repo, c.sequence, c.source, c.base_keys, c.base_query,
         "never" if c.new_keys is None else c.new_keys]
        for c in changes
    ]  # fmt: skip
    return [_html_table(["repo", "sequence", "source", was, "typing", "now"], body, text=3)]

"""`--html FILE`: the report as one self-contained page.

A decision record outlives the network and any JS framework, so the page is plain HTML
with inline CSS and inline SVG drawn here; it fetches nothing when viewed. Every string
from a report (names, queries, paths, labels) is escaped, since corpus names are data a
stranger wrote: `recall.render.escape.html` shows their control and bidirectional
characters as escapes too (an ESC or a U+202E is no markup, yet would reach a reader raw).
It renders the typed report; a report kept as JSON makes the same page once read back
(`Report.from_json`).
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote, urlsplit

from recall.analysis.effort import EffortDiff
from recall.analysis.judgments import JudgedDiff
from recall.analysis.model import (
    CeilingCounts,
    CeilingSummary,
    CorpusPin,
    Counts,
    Diff,
    Lost,
    Report,
    RunSummary,
    UnknownSources,
)
from recall.analysis.stats import Verdict, shown_p
from recall.render.columns import (
    ABOVE,
    HEADER,
    NO_MARKS,
    NONE,
    PERCENTS,
    Marks,
    bound_of,
    ceiling_cells,
    cells,
    expected,
    holdout_lines,
    left_aligned,
    percents,
)
from recall.render.effort import effort_html
from recall.render.escape import html as _e
from recall.render.judgments import judgments_html
from recall.render.svg import PERCENT_TICKS, svg_start
from recall.render.table import by_error
from recall.render.text import restarts_line

COLORS = {"found": "#c6dbef", "top10": "#6baed6", "first": "#08519c"}
MOVE_COLORS = {"up": "#31a354", "found": "#006d2c", "same": "#969696", "down": "#de2d26",
               "lost": "#a50f15"}  # fmt: skip


def page_css(max_width: int, svg_text_px: int) -> str:
    """The style both pages share (this report's and the history's), which differ only in
    how wide they run and how large a chart's labels are."""
    return f"""
body {{ font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #222; max-width: {max_width}px; }}
h1 {{ font-size: 1.5em; }} h2 {{ font-size: 1.2em; margin-top: 1.8em; }}
table {{ border-collapse: collapse; margin: .5em 0; }}
th, td {{ padding: 3px 8px; border-bottom: 1px solid #ddd; text-align: right; }}
th.text, td.text {{ text-align: left; }}
th {{ background: #f3f3f3; }}
.meta {{ color: #666; font-size: 12px; }}
.legend span {{ display: inline-block; width: 12px; height: 12px; margin: 0 4px 0 12px;
               vertical-align: middle; }}
svg text {{ font: {svg_text_px}px system-ui, sans-serif; fill: #222; }}
"""


# The verdict box at the top of the page, its background by what the change did: a
# reader sees the outcome before any table (regressed where either outcome regressed).
VERDICT_BACKGROUND = {"regressed": "#fde0dd", "improved": "#e5f5e0", "same": "#eaeff5"}
CSS = (
    page_css(1100, 12)
    + "a { color: #08519c; }\n"
    + ".verdict { padding: .2em 1em; margin: .8em 0; border-radius: 4px; }\n"
    + "".join(f".verdict.{k} {{ background: {v}; }}\n" for k, v in VERDICT_BACKGROUND.items())
)


@dataclass(frozen=True)
class _Markup:
    """A table cell that is already escaped markup (a link), not text."""

    html: str


def _rank(rank: int | None) -> str:
    return "-" if rank is None else str(rank)


def source_link(pin: CorpusPin | None, file: str | None, line: int | None) -> str | None:
    """The file and line on the pinned commit, for pins hosted on GitHub."""
    if not pin or not file:
        return None
    parts = urlsplit(pin.url)
    if parts.hostname != "github.com":
        return None
    path = parts.path.strip("/").removesuffix(".git")
    if path.count("/") != 1:
        return None
    anchor = f"#L{line}" if line else ""
    return f"https://github.com/{path}/blob/{pin.sha}/{quote(file.lstrip('/'))}{anchor}"


def _marks(ceiling: CeilingCounts, label: str) -> Marks:
    """Whether a finder's #1 and top 10 are above the ceiling's 95% range on its rows."""
    mine = ceiling.against(label)
    return Marks(mine.first_above, mine.top10_above) if mine else NO_MARKS


def _headline(runs: tuple[RunSummary, ...], ceiling: CeilingCounts) -> str:
    """Every binary's counts (the columns of render/columns.py) and times, then the
    ceiling's row."""
    head = ["binary", *HEADER, "index s", "query s"]
    rows: list[list[object]] = [
        [run.label, *cells(run.counts, _marks(ceiling, run.label)), f"{run.index_s:.1f}",
         f"{run.query_s:.1f}"]
        for run in runs
    ]  # fmt: skip
    rows.append(["ceiling", *ceiling_cells(bound_of(ceiling)), NONE, NONE])
    return _table(head, rows, frozenset({0}) | left_aligned())


def _ceiling_table(title: str, by: dict[str, CeilingCounts]) -> str:
    """The best expected #1 and top 10 per group with their 95% ranges (counts), and the
    finders above a range on the same rows."""

    def above(c: CeilingCounts, top10: bool) -> str:
        labels = [f.label for f in c.finders if (f.top10_above if top10 else f.first_above)]
        return ", ".join(labels) or "-"

    rows = [
        [key, c.n, expected(c.first, c.first_pct, c.first_ci),
         expected(c.top10, c.top10_pct, c.top10_ci), above(c, False), above(c, True)]
        for key, c in by.items()
    ]  # fmt: skip
    head = [title, "n", "ceiling #1 [95% range]", "ceiling top 10 [95% range]",
            "above it on #1", "above it on top 10"]  # fmt: skip
    return _table(head, rows, frozenset({0, 4, 5}))


ABOVE_NOTE = (
    f"{ABOVE} and the columns above it: a finder's #1 or top 10 above the ceiling's 95% "
    "range on the same rows, more than chance gives any finder under the recipes' choice "
    "model: either that model is wrong for those rows, or the finder's order suits this "
    "one sample, a lean the sample favours or tuning on it (docs/queries.md)."
)


def _ceiling_notes(ceiling: CeilingSummary) -> list[str]:
    """What the range means, and the rows the ceiling leaves out, once."""
    out = [
        "<p>ceiling: the best #1 and top 10 any finder can expect, since several names can "
        "make one query; [low-high] is the 95% range of the count a finder as good as the "
        f"recipes' choice model gets on these rows. {_e(ABOVE_NOTE)}</p>"
    ]
    left_out = ceiling.left_out
    if left_out.count:
        rows: list[list[object]] = [[r.repo, r.query, r.type, r.source] for r in left_out.first]
        more = left_out.count - len(rows)
        out += [
            f"<h2>Left out of the ceiling: {_e(left_out.count)}</h2>",
            "<p>Rows the recipes cannot make (no recipe for the type, or no name, or not the "
            "source, yields the query): the finders are compared with the ceiling without "
            "them.</p>",
            _table(["repo", "query", "type", "source"], rows, frozenset({0, 1, 2, 3})),
            *([f"<p>… and {_e(more)} more: see --json.</p>"] if more > 0 else []),
        ]
    return out


def _table(head: list[str], rows: list[list[object]], text: frozenset[int] = frozenset({0})) -> str:
    def cls(i: int) -> str:
        return ' class="text"' if i in text else ""

    out = ["<table><tr>", *(f"<th{cls(i)}>{_e(h)}</th>" for i, h in enumerate(head)), "</tr>"]
    for row in rows:
        out.append("<tr>")
        for i, cell in enumerate(row):
            body = cell.html if isinstance(cell, _Markup) else _e(cell)
            out.append(f"<td{cls(i)}>{body}</td>")
        out.append("</tr>")
    out.append("</table>")
    return "".join(out)


def _legend() -> str:
    items = (("first", "#1"), ("top10", "top 10"), ("found", "found"))
    spans = "".join(f'<span style="background:{COLORS[k]}"></span>{_e(t)}' for k, t in items)
    return f'<p class="legend">{spans}</p>'


def bars(runs: tuple[RunSummary, ...], group: str) -> str:
    """Per key of a group (type, repo, language), one bar per binary: found, top 10 and
    #1 as nested shares of that key's sourced queries."""

    def of(run: RunSummary) -> dict[str, Counts]:
        by = {"by_type": run.by_type, "by_repo": run.by_repo, "by_language": run.by_language}
        return by[group]

    keys = [k for k in of(runs[0]) if any((c := of(run).get(k)) and c.n for run in runs)]
    label_w, run_w, bar_w, row_h, gap = 130, 90, 400, 18, 10
    width = label_w + run_w + bar_w + 330
    height = max(1, len(keys)) * (len(runs) * row_h + gap) + 24
    parts = svg_start(width, height, group)
    for tick in PERCENT_TICKS:
        x = label_w + run_w + bar_w * tick / 100
        parts.append(
            f'<line x1="{x:.1f}" y1="0" x2="{x:.1f}" y2="{height - 20}" stroke="#e5e5e5"/>'
            f'<text x="{x:.1f}" y="{height - 6}" text-anchor="middle">{tick}%</text>'
        )
    y = 0
    left = label_w + run_w
    for key in keys:
        parts.append(f'<text x="0" y="{y + 13}">{_e(key)}</text>')
        for run in runs:
            c = of(run).get(key)
            label = f"{key} [{run.label}]"
            if len(runs) > 1:
                short = run.label.split(" ")[0]
                parts.append(f'<text x="{label_w}" y="{y + 13}">{_e(short)}</text>')
            if c and c.n:
                for metric, count, pct in (
                    ("found", c.found, c.found_pct), ("top10", c.top10, c.top10_pct),
                    ("first", c.first, c.first_pct),
                ):  # fmt: skip
                    w = bar_w * pct / 100
                    parts.append(
                        f'<rect x="{left}" y="{y + 2}" width="{w:.1f}" height="{row_h - 4}" '
                        f'fill="{COLORS[metric]}"><title>{_e(label)}: {_e(metric)} '
                        f"{count} of {c.n}</title></rect>"
                    )
                summary = (
                    f"#1 {c.first_pct:.1f}% · top 10 {c.top10_pct:.1f}% · "
                    f"found {c.found_pct:.1f}% (n {c.n})"
                )
                parts.append(f'<text x="{left + bar_w + 8}" y="{y + 13}">{_e(summary)}</text>')
            y += row_h
        y += gap
    parts.append("</svg>")
    return "".join(parts)


def moves_chart(moves: dict[str, int]) -> str:
    """Where each source's rank went: one column per bucket of new minus base rank."""
    col_w, plot_h, top, bottom = 76, 180, 20, 40
    width, height = col_w * len(moves) + 20, plot_h + top + bottom
    # Unchanged sources usually outnumber the moved ones a hundred to one: the scale is
    # set by the moved buckets, and "same" is drawn full height, marked off scale.
    moved = [count for bucket, count in moves.items() if bucket != "same"]
    peak = max(moved, default=0) or 1
    parts = [
        *svg_start(width, height, "rank moves"),
        f'<line x1="10" y1="{top + plot_h}" x2="{width - 10}" y2="{top + plot_h}" stroke="#999"/>',
    ]
    for i, (bucket, count) in enumerate(moves.items()):
        off_scale = count > peak
        h = plot_h * min(count, peak) / peak
        x = 10 + i * col_w
        color = MOVE_COLORS.get(bucket.split(" ")[0], "#969696")
        parts.append(
            f'<rect x="{x + 8}" y="{top + plot_h - h:.1f}" width="{col_w - 16}" '
            f'height="{h:.1f}" fill="{color}"><title>{_e(bucket)}: {count}</title></rect>'
            f'<text x="{x + col_w / 2}" y="{top + plot_h - h - 4:.1f}" '
            f'text-anchor="middle">{count}{" (off scale)" if off_scale else ""}</text>'
            f'<text x="{x + col_w / 2}" y="{top + plot_h + 16}" '
            f'text-anchor="middle">{_e(bucket)}</text>'
        )
    parts.append(
        f'<text x="{width / 2}" y="{height - 4}" text-anchor="middle">'
        "new rank minus base rank (up: better)</text></svg>"
    )
    return "".join(parts)


def _lost_table(rows: tuple[Lost, ...], corpus: dict[str, CorpusPin]) -> str:
    if not rows:
        return "<p>None.</p>"
    head = ["repo", "query", "type", "source", "defined at", "old", "new", "#1 now"]
    body = []
    for r in rows:
        where = r.source_file
        if where and r.source_line:
            where = f"{where}:{r.source_line}"
        link = source_link(corpus.get(r.repo), r.source_file, r.source_line)
        if where and link:
            cell: object = _Markup(f'<a href="{_e(link)}">{_e(where)}</a>')
        else:
            cell = where or "-"
        body.append(
            [r.repo, r.query, r.type, r.source, cell, _rank(r.base_rank), _rank(r.new_rank),
             r.new_first or "-"]
        )  # fmt: skip
    return _table(head, body, frozenset({0, 1, 2, 3, 4, 7}))


def _verdict_cell(verdict: Verdict | None) -> str:
    return "-" if verdict is None else f"{verdict.outcome} ({shown_p(verdict.p)})"


def _verdicts_table(runs: tuple[RunSummary, ...], diffs: tuple[Diff, ...]) -> str:
    """Each finder's headline and its verdict against the baseline (the baseline's: `-`)."""
    verdicts = {d.new: d.verdict for d in diffs}
    rows: list[list[object]] = []
    for run in runs:
        v = verdicts.get(run.label)
        rows.append(
            [run.label, *percents(run.counts), _verdict_cell(v.first if v else None),
             _verdict_cell(v.top10 if v else None)]
        )  # fmt: skip
    head = ["binary", *PERCENTS, "verdict #1", "verdict top 10"]
    return _table(head, rows, frozenset({0, 4, 5}))


def _verdict_box(d: Diff, effort: EffortDiff | None) -> str:
    """A diff's verdict line and its counts, first on the page: of its sources, or of a
    typing set's sequences (effort: that diff's effort diff)."""
    if effort is not None:
        outcomes = [effort.verdict.first, effort.verdict.top3]
        summary = effort.verdict.summary
        counts = effort.counts_line()
    else:
        outcomes = [d.verdict.first, d.verdict.top10]
        summary = d.verdict.summary
        counts = (
            f"lost #1 {len(d.lost_first)}, lost the top 10 {len(d.lost_top10)}, gained #1 "
            f"{len(d.gained_first)}, entered the top 10 {len(d.gained_top10)}; sources up "
            f"{d.up}, down {d.down}, unchanged {d.same}"
        )
    said = {o.outcome for o in outcomes}
    kind = "regressed" if "regressed" in said else "improved" if "improved" in said else "same"
    return (
        f'<div class="verdict {kind}"><p><strong>{_e(d.new)} against {_e(d.base)}: '
        f"{_e(kind if kind != 'same' else 'no significant change')}</strong></p>"
        f"<p>{_e(summary)}</p><p>{_e(counts)}</p></div>"
    )


def _judged_box(d: JudgedDiff) -> str:
    """A judgments diff's verdict and counts, first on the page."""
    outcome = d.verdict.agreement.outcome
    kind = {"regressed": "regressed", "improved": "improved"}.get(outcome, "same")
    return (
        f'<div class="verdict {kind}"><p><strong>{_e(d.new)} against {_e(d.base)}: '
        f"{_e(outcome)}</strong></p><p>{_e(d.verdict.summary)}</p>"
        f"<p>{_e(d.counts_line())}</p></div>"
    )


def _seconds_table(runs: tuple[RunSummary, ...]) -> str:
    """Each binary's index and query seconds, for a report whose counts are elsewhere."""
    rows: list[list[object]] = [
        [run.label, f"{run.index_s:.1f}", f"{run.query_s:.1f}"] for run in runs
    ]
    return "<h2>Seconds</h2>" + _table(["binary", "index s", "query s"], rows)


def _diff_section(d: Diff, corpus: dict[str, CorpusPin]) -> list[str]:
    """One candidate's diff whole: its verdict, moves, and every lost and gained row."""
    out = [
        f"<h2>Diff: {_e(d.new)} against {_e(d.base)}</h2>",
        f"<p><strong>{_e(d.verdict.summary)}</strong></p>",
        f"<p>sources up {_e(d.up)}, down {_e(d.down)}, unchanged {_e(d.same)}; "
        f"queries whose top 10 changed: {_e(d.top10_changed)}</p>",
        f"<p>{_e(d.significance.summary())}</p>",
        "<h3>Where each source's rank moved</h3>",
        moves_chart(d.moves),
    ]
    for rows, title in (
        (d.lost_first, "Lost #1"), (d.gained_first, "Gained #1"),
        (d.lost_top10, "Lost the top 10"), (d.gained_top10, "Entered the top 10"),
    ):  # fmt: skip
        out += [f"<h3>{_e(title)}: {len(rows)}</h3>", _lost_table(rows, corpus)]
    return out


def _unknown_sources(unknown: UnknownSources) -> list[str]:
    """The foreign query file's rows whose source no corpus lists, once."""
    if not unknown.count:
        return []
    rows: list[list[object]] = [[u.line, u.repo, u.query, u.type, u.source] for u in unknown.first]
    more = unknown.count - len(rows)
    return [
        f"<h2>Unknown sources: {_e(unknown.count)}</h2>",
        "<p>Rows whose source is not a name of their corpus at its pin: counted as not "
        "found, for the ceiling too.</p>",
        _table(["line", "repo", "query", "type", "source"], rows, frozenset({1, 2, 3, 4})),
        *([f"<p>… and {_e(more)} more: see --json.</p>"] if more > 0 else []),
    ]


def render_html(report: Report) -> str:
    """The whole page of a report (docs/report-json.md says its parts)."""
    runs, meta = report.runs, report.meta
    split = f" (the {_e(report.split)} split)" if report.split else ""
    effort = report.effort  # a typing set's run: keystrokes to the name
    judgments = report.judgments  # a judgments set's run: agreement with people
    title = (
        f"recall: keystrokes to the name, {_e(effort.sequences)} typing sequences{split}"
        if effort
        else f"recall: agreement with maintainers' judgments, {len(judgments.pairs)} pairs"
        if judgments
        else f"recall: {_e(report.sourced)} sourced queries of {_e(report.queries)}{split}"
    )
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{title}</title>",
        f"<style>{CSS}</style></head><body>",
        f"<h1>{title}</h1>",
        f'<p class="meta">recall {_e(meta.recall)} · engine {_e(meta.engine.source)} · '
        f"Python {_e(meta.python)} · ctags {_e(meta.ctags)} · "
        f"queries sha256 {_e(meta.queries_sha256[:12])}</p>",
    ]
    diffs = report.diffs
    efforts: tuple[EffortDiff | None, ...] = (effort.diffs if effort else ()) or (
        (None,) * len(diffs)
    )
    out += [_verdict_box(d, e) for d, e in zip(diffs, efforts, strict=True)]  # first: the answer
    out += [_judged_box(d) for d in (judgments.diffs if judgments else ())]
    if report.holdout:  # --split holdout: its corpora, fresh and seen, and margins
        out += [f"<p>{_e(line)}</p>" for line in holdout_lines(report.holdout)]
    if judgments:  # its rows are candidates: the agreement, no sourced counts
        out += judgments_html(judgments)
        out.append(_seconds_table(runs))
    elif effort:  # its steps are prompts with no source: no sourced counts to draw
        out += effort_html(effort)
    else:
        out += ["<h2>Headline</h2>", _headline(runs, report.ceiling.counts)]
        out += _ceiling_notes(report.ceiling)
        ceiling = report.ceiling
        for group, name, by in (
            ("by_type", "type", ceiling.by_type), ("by_language", "language",
            ceiling.by_language), ("by_repo", "repo", ceiling.by_repo),
        ):  # fmt: skip
            out += [f"<h2>By {_e(name)}</h2>", _legend(), bars(runs, group)]
            out.append(_ceiling_table(name, by))
    out += _unknown_sources(report.unknown_sources)
    if len(diffs) > 1:
        out += ["<h2>Verdicts against the baseline</h2>", _verdicts_table(runs, diffs)]
    for d in diffs:
        out += _diff_section(d, report.corpus)
    for run in runs:
        if run.restarts:
            out.append(f"<p>{_e(restarts_line(run.label, run.restarts))}</p>")
        if run.off_corpus:
            out.append(
                f"<h2>Answers of {_e(run.label)} naming nothing in the corpus: "
                f"{_e(run.off_corpus)}</h2>"
            )
            out.append(
                _table(
                    ["repo", "query", "type", "first name listed"],
                    [[o.repo, o.query, o.type, o.answer] for o in run.off_corpus_first],
                    frozenset({0, 1, 2, 3}),
                )
            )
        if run.error_rows:
            out.append(f"<h2>Errors in {_e(run.label)}: {len(run.error_rows)}</h2>")
            groups = by_error(run.error_rows, lambda row: row.error)
            out.append(
                _table(
                    ["error", "queries", "repo: query (type)"],
                    [[error, len(got), "; ".join(f"{e.repo}: {e.query} ({e.type})"
                                                  for e in got)]
                     for error, got in groups],
                    frozenset({0, 2}),
                )
            )  # fmt: skip
    out.append("</body></html>\n")
    return "\n".join(out)

"""A history (analysis/history.py's typed History) as a text or Markdown table, and as one
self-contained HTML page with SVG line charts of #1 / top 10 / MRR over commits.

A saved `--json` history renders the same page once `History.from_json` has read it. As
the report page (render/html.py) does, it fetches nothing when viewed and escapes every string
that came from a repository (subjects, tags, names), since a stranger wrote them.
"""

from __future__ import annotations

from recall.analysis.history import CommitRow, History
from recall.analysis.model import Counts
from recall.render import columns
from recall.render.escape import html as _e
from recall.render.escape import markdown as markdown_text
from recall.render.html import page_css
from recall.render.svg import data_axis, grid, svg_start
from recall.render.table import table
from recall.terminal import safe_output, shown

METRICS = (("first_pct", "#1 %"), ("top10_pct", "top 10 %"), ("mrr", "MRR ×100"))
METRIC_COLORS = {"first_pct": "#08519c", "top10_pct": "#6baed6", "mrr": "#e6550d"}
GROUP_COLORS = ("#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d",
                "#666666", "#1f78b4", "#b2df8a")  # fmt: skip
CSS = page_css(1200, 11)
# A commit's row: who it is, then the counts columns every report shows (render/columns.py)
# but n, which the heading gives once.
COUNTED = columns.COUNTS[1:]
HEAD = ["commit", "date", "subject", *(column.header for column in COUNTED)]


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _name(row: CommitRow) -> str:
    """The short sha, with the tags that named it."""
    refs = row.commit.refs
    return f"{row.commit.sha[:7]} ({', '.join(refs)})" if refs else row.commit.sha[:7]


def _cells(row: CommitRow, c: Counts | None) -> list[str]:
    head = [_name(row), row.commit.date[:10], row.commit.subject]
    if row.error is not None:
        return [*head, *["-"] * (len(COUNTED) - 1), f"failed: {row.error}"]
    if c is None:
        return [*head, *["-"] * len(COUNTED)]
    return [*head, *(column.cell(c, columns.NO_MARKS) for column in COUNTED)]


def _counts(row: CommitRow, by: str | None, key: str | None) -> Counts | None:
    """A row's counts over all its rows (key None), or over one type's or repo's."""
    if row.tally is None:
        return None
    if key is None:
        return row.tally.all
    return (row.tally.by_type if by == "type" else row.tally.by_repo).get(key)


def groups(history: History, by: str | None) -> list[str]:
    """The keys of --by type|repo, as the measured commits have them."""
    if by is None:
        return []
    keys: dict[str, None] = {}
    for row in history.commits:
        keys.update(dict.fromkeys(_groups(row, by)))
    return sorted(keys)


def _groups(row: CommitRow, by: str) -> dict[str, Counts]:
    if row.tally is None:
        return {}
    return row.tally.by_type if by == "type" else row.tally.by_repo


def render(history: History, *, by: str | None = None, markdown: bool = False) -> str:
    """The history table (all rows together), then one per type or repo with --by."""

    def said(text: str) -> str:  # from outside: a path, repo and type names, an engine
        return markdown_text(text) if markdown else shown(text)

    h = history
    out = [f"recall history: {_count(len(h.commits), 'commit')} of {said(h.finder)}, "
           f"{h.sourced} sourced queries ({said(', '.join(h.repos))}; "
           f"{said(', '.join(h.types))}), engine {said(h.engine.source)}",
           ""]  # fmt: skip
    for key in [None, *groups(h, by)]:
        if key is not None:
            out += [f"## {by} {said(key)}" if markdown else f"{by} {said(key)}:", ""]
        body = [_cells(row, _counts(row, by, key)) for row in h.commits]
        out += [*_table(body, markdown), ""]
    failed = sum(1 for row in h.commits if row.error is not None)
    if failed:
        out.append(f"{failed} of {_count(len(h.commits), 'commit')} could not be measured")
    return safe_output("\n".join(out).rstrip("\n") + "\n")


def _table(body: list[list[str]], markdown: bool) -> list[str]:
    """Commit, date and subject (cut to 40 characters in text) on the left, numbers right."""
    right = [i >= 3 for i in range(len(HEAD))]
    return table(HEAD, body, markdown, right=right, clip=None if markdown else {2: 40})


# The page ------------------------------------------------------------------------------


def _value(c: Counts | None, metric: str) -> float | None:
    if c is None or not c.n:
        return None
    value: float = getattr(c, metric)
    return value * 100 if metric == "mrr" else value


Series = list[tuple[str, str, list[float | None]]]


def _safe_url(row: CommitRow) -> bool:
    """A commit's link, from a history's JSON, which may have been edited: https only, so
    no `javascript:` url becomes a link."""
    return row.url is not None and row.url.startswith("https://")


MIN_PLOT_W = 640  # a chart of a few commits still spreads them over the page
APART_PX = 3.0  # lines that would coincide are drawn this far apart


def chart(commits: tuple[CommitRow, ...], series: Series, title: str) -> str:
    """One SVG line chart, one x step per commit, its y axis scaled to the values drawn
    (svg.data_axis: fzy's -0.2 points between two releases is a step to see, not a pixel
    of a 0 to 100 axis). Each series is (label, colour, values); a None value (a commit
    that failed, or has no such rows) is a gap: the line stops at the point before and
    starts again after. A point of a later series that would fall on an earlier one's is
    drawn APART_PX lower, so no line hides another (its title keeps the exact value).
    Every point is a link to its commit when the commit has a url, else it carries the
    sha as its title."""
    left, right, top, plot_h, bottom = 52, 100, 24, 240, 90  # right: the last tilted label
    gaps = max(1, len(commits) - 1)
    step = max(56, MIN_PLOT_W / gaps) if len(commits) < 25 else max(8, 1400 // gaps)
    plot_w = step * gaps
    width, height = left + plot_w + right, top + plot_h + bottom
    low, high, ticks = data_axis([v for _l, _c, values in series for v in values if v is not None])

    def x(i: int) -> float:
        return left + (step * i if len(commits) > 1 else plot_w / 2)

    def y(v: float) -> float:
        return top + plot_h * (1 - (v - low) / (high - low))

    parts = [*svg_start(width, height, title), f'<text x="{left}" y="14">{_e(title)}</text>']
    parts += grid(left, plot_w, y, ticks)
    for i, row in enumerate(commits):
        label = _name(row)
        cx = x(i)
        parts.append(
            f'<text transform="translate({cx:.1f},{top + plot_h + 10}) rotate(45)" '
            f'font-size="10">{_e(label)}</text>'
        )
        if row.error is not None:
            parts.append(
                f'<text x="{cx:.1f}" y="{top + plot_h - 4}" text-anchor="middle" fill="#999">'
                f"×<title>{_e(row.commit.sha)}: {_e(row.error)}</title></text>"
            )
    drawn: list[list[float | None]] = []  # each series' y at each commit, once placed
    for label, color, values in series:
        ys = [None if v is None else y(v) for v in values]
        for i, py in enumerate(ys):
            taken = [placed[i] for placed in drawn]
            while py is not None and any(t is not None and abs(t - py) < APART_PX for t in taken):
                py += APART_PX
            ys[i] = py
        drawn.append(ys)
        segments: list[list[tuple[float, float]]] = [[]]
        for i, py in enumerate(ys):
            if py is None:
                segments.append([])
            else:
                segments[-1].append((x(i), py))
        for seg in segments:
            if len(seg) > 1:
                points = " ".join(f"{px:.1f},{py:.1f}" for px, py in seg)
                parts.append(
                    f'<polyline points="{points}" fill="none" stroke="{color}" '
                    f'stroke-width="2" data-series="{_e(label)}"/>'
                )
        for i, (v, py) in enumerate(zip(values, ys, strict=True)):
            if v is None or py is None:
                continue
            row = commits[i]
            tip = f"{row.commit.sha} {row.commit.subject}: {label} {v:.1f}"
            dot = (
                f'<circle cx="{x(i):.1f}" cy="{py:.1f}" r="3.5" fill="{color}">'
                f"<title>{_e(tip)}</title></circle>"
            )
            if _safe_url(row):
                dot = f'<a href="{_e(row.url)}">{dot}</a>'
            parts.append(dot)
    parts.append("</svg>")
    return "".join(parts)


def _legend(items: list[tuple[str, str]]) -> str:
    spans = "".join(f'<span style="background:{color}"></span>{_e(t)}' for t, color in items)
    return f'<p class="legend">{spans}</p>'


def charts(history: History, by: str | None) -> str:
    """Without --by: a chart per metric, each on its own axis. With --by: a chart per
    metric, a line per type or repo."""
    commits = history.commits
    keys = groups(history, by)
    if not keys:  # a chart a metric, each on its own axis: #1 and MRR move apart
        return "".join(
            chart(commits, [(name, METRIC_COLORS[metric],
                             [_value(_counts(row, by, None), metric) for row in commits])],
                  f"{name}, all sourced queries")
            for metric, name in METRICS
        )  # fmt: skip
    out = []
    colors = {key: GROUP_COLORS[i % len(GROUP_COLORS)] for i, key in enumerate(keys)}
    for metric, name in METRICS:
        series = [
            (key, colors[key], [_value(_counts(row, by, key), metric) for row in commits])
            for key in keys
        ]
        out.append(f"<h2>{_e(name)} by {_e(by)}</h2>")
        out.append(_legend([(key, colors[key]) for key in keys]))
        out.append(chart(commits, series, f"{name} by {by}"))
    return "".join(out)


def _html_table(history: History) -> str:
    out = ["<table><tr>", *(f'<th class="text">{_e(h)}</th>' if i < 3 else f"<th>{_e(h)}</th>"
                            for i, h in enumerate(HEAD)), "</tr>"]  # fmt: skip
    for row in history.commits:
        cells = _cells(row, _counts(row, None, None))
        name = _e(cells[0])
        if _safe_url(row):
            name = f'<a href="{_e(row.url)}">{name}</a>'
        else:
            name = f'<span title="{_e(row.commit.sha)}">{name}</span>'
        out.append(f'<tr><td class="text">{name}</td>')
        out += [f'<td class="text">{_e(c)}</td>' for c in cells[1:3]]
        out += [f"<td>{_e(c)}</td>" for c in cells[3:]]
        out.append("</tr>")
    out.append("</table>")
    return "".join(out)


def render_html(history: History, *, by: str | None = None) -> str:
    """The whole page: what was measured, the charts, the table."""
    h = history
    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>recall history: {_count(len(h.commits), 'commit')}</title>",
        f"<style>{CSS}</style></head><body>",
        f"<h1>recall history: {_count(len(h.commits), 'commit')}</h1>",
        f'<p class="meta">finder {_e(h.finder)} · engine {_e(h.engine.source)} · '
        f"{_e(h.sourced)} sourced queries ({_e(', '.join(h.repos))}; "
        f"{_e(', '.join(h.types))})</p>",
        charts(h, by),
        "<h2>Commits</h2>",
        _html_table(h),
        "</body></html>\n",
    ])  # fmt: skip

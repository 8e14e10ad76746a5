"""`--html FILE`: the report as one self-contained page.

A decision record outlives the network and any JS framework, so the page is plain HTML
with inline CSS and inline SVG drawn here; it fetches nothing when viewed. Every string
from a report (names, queries, paths, labels) is escaped, since corpus names are data a
stranger wrote: `recall.render.escape.html` shows their control and bidirectional
characters as escapes too (an ESC or a U+202E is no markup, yet would reach a reader raw).
It renders the JSON report (schema 2) rather than the model, so that a report kept as JSON
makes the same page.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote, urlsplit

from recall.analysis.stats import shown_p
from recall.render.columns import (
    ABOVE,
    HEADER,
    NO_MARKS,
    NONE,
    Marks,
    bound_from_json,
    ceiling_cells,
    cells,
    counts_from_json,
    expected,
    holdout_lines,
    left_aligned,
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


def source_link(pin: dict | None, file: str | None, line: int | None) -> str | None:
    """The file and line on the pinned commit, for pins hosted on GitHub."""
    if not pin or not file:
        return None
    parts = urlsplit(pin["url"])
    if parts.hostname != "github.com":
        return None
    path = parts.path.strip("/").removesuffix(".git")
    if path.count("/") != 1:
        return None
    anchor = f"#L{line}" if line else ""
    return f"https://github.com/{path}/blob/{pin['sha']}/{quote(file.lstrip('/'))}{anchor}"


def _marks(ceiling: dict | None, label: str) -> Marks:
    """Whether a finder's #1 and top 10 are above the ceiling's 95% range on its rows."""
    mine = next((f for f in (ceiling or {}).get("finders", []) if f["label"] == label), None)
    return Marks(mine["first_above"], mine["top10_above"]) if mine else NO_MARKS


def _expected(c: dict, key: str) -> str:
    """A ceiling's expected count, its percent and its 95% range in counts."""
    ci = c.get(f"{key}_ci")
    return expected(c[key], c[f"{key}_pct"], (ci[0], ci[1]) if ci else None)


def _headline(runs: list[dict], ceiling: dict | None) -> str:
    """Every binary's counts (the columns of render/columns.py) and times, then the
    ceiling's row."""
    head = ["binary", *HEADER, "index s", "query s"]
    rows: list[list[object]] = [
        [run["label"], *cells(counts_from_json(run), _marks(ceiling, run["label"])),
         f"{run['index_s']:.1f}", f"{run['query_s']:.1f}"]
        for run in runs
    ]  # fmt: skip
    if ceiling:
        rows.append(["ceiling", *ceiling_cells(bound_from_json(ceiling)), NONE, NONE])
    return _table(head, rows, frozenset({0}) | left_aligned())


def _ceiling_table(title: str, by: dict) -> str:
    """The best expected #1 and top 10 per group with their 95% ranges (counts), and the
    finders above a range on the same rows."""

    def above(c: dict, key: str) -> str:
        labels = [f["label"] for f in c.get("finders", []) if f[f"{key}_above"]]
        return ", ".join(labels) or "-"

    rows = [
        [key, c["n"], _expected(c, "first"), _expected(c, "top10"), above(c, "first"),
         above(c, "top10")]
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


def _ceiling_notes(ceiling: dict | None) -> list[str]:
    """What the range means, and the rows the ceiling leaves out, once."""
    if not ceiling:
        return []
    out = [
        "<p>ceiling: the best #1 and top 10 any finder can expect, since several names can "
        "make one query; [low-high] is the 95% range of the count a finder as good as the "
        f"recipes' choice model gets on these rows. {_e(ABOVE_NOTE)}</p>"
    ]
    left_out = ceiling.get("left_out") or {"count": 0, "first": []}
    if left_out["count"]:
        rows = [[r["repo"], r["query"], r["type"], r["source"]] for r in left_out["first"]]
        more = left_out["count"] - len(rows)
        out += [
            f"<h2>Left out of the ceiling: {_e(left_out['count'])}</h2>",
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


def bars(runs: list[dict], group: str) -> str:
    """Per key of a group (type, repo, language), one bar per binary: found, top 10 and
    #1 as nested shares of that key's sourced queries."""
    keys = [k for k in runs[0][group] if any(run[group].get(k, {}).get("n") for run in runs)]
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
            c = run[group].get(key)
            label = f"{key} [{run['label']}]"
            if len(runs) > 1:
                short = run["label"].split(" ")[0]
                parts.append(f'<text x="{label_w}" y="{y + 13}">{_e(short)}</text>')
            if c and c["n"]:
                for metric in ("found", "top10", "first"):
                    w = bar_w * c[f"{metric}_pct"] / 100
                    parts.append(
                        f'<rect x="{left}" y="{y + 2}" width="{w:.1f}" height="{row_h - 4}" '
                        f'fill="{COLORS[metric]}"><title>{_e(label)}: {_e(metric)} '
                        f"{c[metric]} of {c['n']}</title></rect>"
                    )
                summary = (
                    f"#1 {c['first_pct']:.1f}% · top 10 {c['top10_pct']:.1f}% · "
                    f"found {c['found_pct']:.1f}% (n {c['n']})"
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


def _lost_table(rows: list[dict], corpus: dict) -> str:
    if not rows:
        return "<p>None.</p>"
    head = ["repo", "query", "type", "source", "defined at", "old", "new", "#1 now"]
    body = []
    for r in rows:
        where = r.get("source_file")
        if where and r.get("source_line"):
            where = f"{where}:{r['source_line']}"
        link = source_link(corpus.get(r["repo"]), r.get("source_file"), r.get("source_line"))
        if where and link:
            cell: object = _Markup(f'<a href="{_e(link)}">{_e(where)}</a>')
        else:
            cell = where or "-"
        body.append(
            [r["repo"], r["query"], r["type"], r["source"], cell, _rank(r["base_rank"]),
             _rank(r["new_rank"]), r["new_first"] or "-"]
        )  # fmt: skip
    return _table(head, body, frozenset({0, 1, 2, 3, 4, 7}))


def _verdict_cell(verdict: dict | None) -> str:
    return "-" if verdict is None else f"{verdict['outcome']} ({shown_p(verdict['p'])})"


def _verdicts_table(runs: list[dict], diffs: list[dict]) -> str:
    """Each finder's headline and its verdict against the baseline (reports before the
    verdict existed show `-`)."""
    verdicts = {d["new"]: d.get("verdict") for d in diffs}
    rows: list[list[object]] = []
    for run in runs:
        v = verdicts.get(run["label"])
        rows.append(
            [run["label"], f"{run['first_pct']:.1f}%", f"{run['top10_pct']:.1f}%",
             f"{run['found_pct']:.1f}%", _verdict_cell(v and v["first"]),
             _verdict_cell(v and v["top10"])]
        )  # fmt: skip
    head = ["binary", "#1", "top 10", "found", "verdict #1", "verdict top 10"]
    return _table(head, rows, frozenset({0, 4, 5}))


def _verdict_box(d: dict, effort: dict | None) -> str:
    """A diff's verdict line and its counts, first on the page: of its sources, or of a
    typing set's sequences (effort: that diff's effort diff)."""
    verdict = (effort or d).get("verdict")
    if effort is not None:
        outcomes = [effort["verdict"]["first"], effort["verdict"]["top3"]]
        never = sum(1 for c in effort["more_keys"] if c["new_keys"] is None)
        counts = (
            f"sequences: {effort['more']} need more keystrokes to #1 ({never} never reach it "
            f"now), {effort['fewer']} fewer, {effort['same']} the same; "
            f"{len(effort['lost_top3'])} no longer reach the top 3"
        )
    else:
        outcomes = [verdict["first"], verdict["top10"]] if verdict else []
        counts = (
            f"lost #1 {len(d['lost_first'])}, lost the top 10 {len(d['lost_top10'])}, gained #1 "
            f"{len(d.get('gained_first', []))}, entered the top 10 "
            f"{len(d.get('gained_top10', []))}; sources up {d['up']}, down {d['down']}, "
            f"unchanged {d['same']}"
        )
    said = {o["outcome"] for o in outcomes}
    kind = "regressed" if "regressed" in said else "improved" if "improved" in said else "same"
    summary = f"<p>{_e(verdict['summary'])}</p>" if verdict else ""
    return (
        f'<div class="verdict {kind}"><p><strong>{_e(d["new"])} against {_e(d["base"])}: '
        f"{_e(kind if kind != 'same' else 'no significant change')}</strong></p>{summary}"
        f"<p>{_e(counts)}</p></div>"
    )


def _judged_box(d: dict) -> str:
    """A judgments diff's verdict and counts, first on the page."""
    verdict = d["verdict"]
    outcome = verdict["agreement"]["outcome"]
    kind = {"regressed": "regressed", "improved": "improved"}.get(outcome, "same")
    counts = f"judgments: {len(d['lost'])} lost, {len(d['gained'])} gained, {d['same']} the same"
    return (
        f'<div class="verdict {kind}"><p><strong>{_e(d["new"])} against {_e(d["base"])}: '
        f"{_e(outcome)}</strong></p><p>{_e(verdict['summary'])}</p><p>{_e(counts)}</p></div>"
    )


def _seconds_table(runs: list[dict]) -> str:
    """Each binary's index and query seconds, for a report whose counts are elsewhere."""
    rows: list[list[object]] = [
        [run["label"], f"{run['index_s']:.1f}", f"{run['query_s']:.1f}"] for run in runs
    ]
    return "<h2>Seconds</h2>" + _table(["binary", "index s", "query s"], rows)


def _diff_section(d: dict, corpus: dict) -> list[str]:
    """One candidate's diff whole: its verdict, moves, and every lost and gained row."""
    verdict = d.get("verdict")
    out = [f"<h2>Diff: {_e(d['new'])} against {_e(d['base'])}</h2>"]
    if verdict:
        out.append(f"<p><strong>{_e(verdict['summary'])}</strong></p>")
    out += [
        f"<p>sources up {_e(d['up'])}, down {_e(d['down'])}, unchanged {_e(d['same'])}; "
        f"queries whose top 10 changed: {_e(d['top10_changed'])}</p>",
        f"<p>{_e(d.get('significance', {}).get('summary', ''))}</p>",
        "<h3>Where each source's rank moved</h3>",
        moves_chart(d["moves"]),
    ]
    for key, title in (
        ("lost_first", "Lost #1"), ("gained_first", "Gained #1"),
        ("lost_top10", "Lost the top 10"), ("gained_top10", "Entered the top 10"),
    ):  # fmt: skip
        if key in d:
            out += [f"<h3>{_e(title)}: {len(d[key])}</h3>", _lost_table(d[key], corpus)]
    return out


def _unknown_sources(unknown: dict | None) -> list[str]:
    """The foreign query file's rows whose source no corpus lists, once."""
    if not unknown or not unknown["count"]:
        return []
    rows = [[u["line"], u["repo"], u["query"], u["type"], u["source"]] for u in unknown["first"]]
    more = unknown["count"] - len(rows)
    return [
        f"<h2>Unknown sources: {_e(unknown['count'])}</h2>",
        "<p>Rows whose source is not a name of their corpus at its pin: counted as not "
        "found, for the ceiling too.</p>",
        _table(["line", "repo", "query", "type", "source"], rows, frozenset({1, 2, 3, 4})),
        *([f"<p>… and {_e(more)} more: see --json.</p>"] if more > 0 else []),
    ]


def render_html(report: dict) -> str:
    """The whole page for a JSON report (`Report.to_json()`, schema 2, docs/report-json.md)."""
    runs, meta = report["runs"], report.get("meta", {})
    engine = meta.get("engine", {}).get("source", "")
    split = f" (the {_e(report['split'])} split)" if report.get("split") else ""
    effort = report.get("effort")  # a typing set's run: keystrokes to the name
    judgments = report.get("judgments")  # a judgments set's run: agreement with people
    title = (
        f"recall: keystrokes to the name, {_e(effort['sequences'])} typing sequences{split}"
        if effort
        else f"recall: agreement with maintainers' judgments, {len(judgments['pairs'])} pairs"
        if judgments
        else f"recall: {_e(report['sourced'])} sourced queries of {_e(report['queries'])}{split}"
    )
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{title}</title>",
        f"<style>{CSS}</style></head><body>",
        f"<h1>{title}</h1>",
        f'<p class="meta">recall {_e(meta.get("recall", ""))} · engine {_e(engine)} · '
        f"Python {_e(meta.get('python', ''))} · ctags {_e(meta.get('ctags', ''))} · "
        f"queries sha256 {_e(str(meta.get('queries_sha256', ''))[:12])}</p>",
    ]
    diffs = report.get("diffs") or ([report["diff"]] if report.get("diff") else [])
    efforts = (effort or {}).get("diffs") or [None] * len(diffs)
    out += [_verdict_box(d, e) for d, e in zip(diffs, efforts, strict=True)]  # first: the answer
    out += [_judged_box(d) for d in (judgments or {}).get("diffs", [])]
    if report.get("holdout"):  # --split holdout: its corpora, fresh and seen, and margins
        out += [f"<p>{_e(line)}</p>" for line in holdout_lines(report["holdout"])]
    if judgments:  # its rows are candidates: the agreement, no sourced counts
        out += judgments_html(judgments)
        out.append(_seconds_table(runs))
    elif effort:  # its steps are prompts with no source: no sourced counts to draw
        out += effort_html(effort)
    else:
        out += ["<h2>Headline</h2>", _headline(runs, report.get("ceiling"))]
        out += _ceiling_notes(report.get("ceiling"))
        for group, name in (("by_type", "type"), ("by_language", "language"), ("by_repo", "repo")):
            out += [f"<h2>By {_e(name)}</h2>", _legend(), bars(runs, group)]
            if report.get("ceiling"):
                out.append(_ceiling_table(name, report["ceiling"][group]))
    out += _unknown_sources(report.get("unknown_sources"))
    if len(diffs) > 1:
        out += ["<h2>Verdicts against the baseline</h2>", _verdicts_table(runs, diffs)]
    for d in diffs:
        out += _diff_section(d, report.get("corpus", {}))
    for run in runs:
        if run.get("restarts"):
            out.append(f"<p>{_e(restarts_line(run['label'], run['restarts']))}</p>")
        if run.get("off_corpus"):
            out.append(
                f"<h2>Answers of {_e(run['label'])} naming nothing in the corpus: "
                f"{_e(run['off_corpus'])}</h2>"
            )
            out.append(
                _table(
                    ["repo", "query", "type", "first name listed"],
                    [[o["repo"], o["query"], o["type"], o["answer"]]
                     for o in run["off_corpus_first"]],
                    frozenset({0, 1, 2, 3}),
                )
            )  # fmt: skip
        if run.get("error_rows"):
            out.append(f"<h2>Errors in {_e(run['label'])}: {len(run['error_rows'])}</h2>")
            groups = by_error(run["error_rows"], lambda row: row["error"])
            out.append(
                _table(
                    ["error", "queries", "repo: query (type)"],
                    [[error, len(got), "; ".join(f"{e['repo']}: {e['query']} ({e['type']})"
                                                  for e in got)]
                     for error, got in groups],
                    frozenset({0, 2}),
                )
            )  # fmt: skip
    out.append("</body></html>\n")
    return "\n".join(out)

"""The run report as text or Markdown: the tables `recall run` prints."""

from __future__ import annotations

from collections.abc import Callable

from recall.analysis.effort import Effort, EffortDiff
from recall.analysis.model import (
    LEFT_OUT_SHOWN,
    NOISE_SPREAD,
    AgainstCeiling,
    BenchSummary,
    CeilingCounts,
    CeilingSummary,
    Change,
    Counts,
    Diff,
    ErrorRow,
    FailingCase,
    Report,
    RunSummary,
)
from recall.analysis.stats import ALPHA, VERDICT_TEST, Verdict, shown_p
from recall.render.columns import (
    ABOVE,
    CEILING_COMPACT,
    COMPACT,
    COUNTS,
    HEADER,
    NO_MARKS,
    NONE,
    PERCENTS,
    Marks,
    bound_of,
    ceiling_cells,
    ceiling_compact,
    cells,
    compact,
    holdout_lines,
    percents,
)
from recall.render.commandline import explain_command
from recall.render.effort import render_effort
from recall.render.escape import said
from recall.render.judgments import render_judgments
from recall.render.table import by_error, first_rows, heading, more, numbers_table, table
from recall.terminal import safe_output, shown

# With several candidates, each diff's lost and gained lists show this many rows in text and
# Markdown; --json and --html keep them whole.
CAPPED = 20
Group = Callable[[RunSummary], dict[str, Counts]]
CeilingGroup = Callable[[CeilingSummary], dict[str, CeilingCounts]]
GROUPS: tuple[tuple[str, Group, CeilingGroup], ...] = (
    ("type", lambda r: r.by_type, lambda c: c.by_type),
    ("repo", lambda r: r.by_repo, lambda c: c.by_repo),
    ("language", lambda r: r.by_language, lambda c: c.by_language),
)


def _marks(against: AgainstCeiling | None) -> Marks:
    return Marks(against.first_above, against.top10_above) if against else NO_MARKS


def _any_above(summary: CeilingSummary) -> bool:
    cells = [summary.counts, *summary.by_type.values(), *summary.by_repo.values(),
             *summary.by_language.values()]  # fmt: skip
    return any(f.first_above or f.top10_above for c in cells for f in c.finders)


def _counts_table(label: str, body: list[list[str]], after: list[str], markdown: bool) -> list[str]:
    """A label, the columns of the counts (render/columns.py, aligned as it says in text;
    Markdown aligns none), then the numbers `after` them, right-aligned."""
    header = [label, *HEADER, *after]
    right = None if markdown else [False, *(c.right for c in COUNTS), *(True for _ in after)]
    return table(header, body, markdown, right=right)


def _ceiling_note(c: CeilingCounts, runs: tuple[RunSummary, ...], markdown: bool) -> list[str]:
    """What the row means, and each binary's distance to it in points on the same rows."""

    def gap(run: RunSummary) -> str:
        label = said(run.label, markdown)
        against = c.against(run.label)
        if against is None or not c.n:
            return f"{label} not compared"
        return (
            f"{label} {c.first_pct - 100.0 * against.first / c.n:.1f} / "
            f"{c.top10_pct - 100.0 * against.top10 / c.n:.1f}"
        )

    return [
        "ceiling: the best #1 and top 10 any finder can expect, since several names can make "
        "one query; [low-high] is the 95% range of the count a finder as good as the "
        "recipes' choice model gets on these rows (docs/queries.md)",
        f"points below it on its {c.n} row{'' if c.n == 1 else 's'} (#1 / top 10): "
        f"{', '.join(gap(run) for run in runs)}",
    ]


ABOVE_NOTE = (
    f"{ABOVE} above the ceiling's 95% range on the same rows: more than chance gives any "
    "finder under the recipes' choice model, so either that model is wrong for those rows "
    "or the finder's order suits this one sample (a lean the sample favours, or tuning on "
    "it): docs/queries.md"
)


def render(report: Report, *, markdown: bool = False) -> str:
    """The report as text or Markdown, with its misses when it holds them; in text, each
    lost row of a diff that has `explain_flags` is followed by the `recall explain` command
    that looks at it. With several candidates a summary of their verdicts comes first, and
    each diff's lists are cut to CAPPED rows (JSON and HTML keep them whole)."""
    out: list[str] = []
    runs = report.runs
    cap = CAPPED if len(report.diffs) > 1 else None
    if cap:
        out += _summary(report, markdown)
    if report.judgments is not None:  # a judgments set: candidates, not sourced rows
        out += render_judgments(report.judgments, markdown)
        out += _seconds(report, markdown)
    elif report.effort is not None:  # a typing set: every step is a hand row, its numbers here
        out += _typing_head(report, report.effort, markdown)
    else:
        out += _counts_head(report, markdown)
    top = report.ceiling
    for run in runs:
        if run.cached:
            out += [
                "",
                f"{said(run.label, markdown)}: results reused, not run now (times are from then)",
            ]
    for title, group, ceiling_group in () if report.effort or report.judgments else GROUPS:
        out += heading(f"By {title}", markdown)
        first = group(runs[0])
        keys = [k for k in first if first[k].n]  # hand rows: churn only
        bound = ceiling_group(top)
        if len(runs) == 1:
            body = [
                [key, *cells(first[key], _marks(_against(bound, key, runs[0]))),
                 ceiling_compact(bound.get(key), first[key].n)]
                for key in keys
            ]  # fmt: skip
            out += _counts_table(title, body, [CEILING_COMPACT], markdown)
            continue
        out += [f"each cell: {COMPACT}", ""] if markdown else [f"each cell: {COMPACT}"]
        body = [
            [key, str(first[key].n),
             *(compact(group(run)[key], _marks(_against(bound, key, run))) for run in runs),
             ceiling_compact(bound.get(key), first[key].n)]
            for key in keys
        ]  # fmt: skip
        header = [title, "n", *(run.label for run in runs), CEILING_COMPACT]
        out += numbers_table(header, body, markdown)
    for run in runs:
        label = said(run.label, markdown)
        if run.dirtied:
            out.append(
                f"{label} wrote into the checkout of {said(', '.join(run.dirtied), markdown)}; "
                "it was rebuilt from the pin"
            )
        if run.restarts:
            out += ["", restarts_line(label, run.restarts)]
        if run.off_corpus:
            out += heading(
                f"Answers of {label} naming nothing in the corpus: {run.off_corpus}", markdown
            )
            out += [
                _row_line(o.repo, o.query, f"first {o.answer!r}", markdown)
                for o in run.off_corpus_first
            ]
        if run.error_rows:
            out += heading(f"Errors in {label}: {len(run.error_rows)} queries", markdown)
            out += _error_lines(run.error_rows, markdown)
    if report.regress is not None:
        out += _render_regress(report, markdown)
    efforts = report.effort.diffs if report.effort else ()
    for i, d in enumerate(report.diffs):
        out += _render_diff(d, markdown, cap, efforts[i] if efforts else None)
    if report.bench is not None:
        out += ["", *render_bench(report.bench, markdown)]
    if report.misses is not None:
        out += heading(f"Misses: {len(report.misses)} sources not #1", markdown)
        body = [
            [m.repo, m.query, m.type, m.source, _rank(m.rank), m.first or "-"]
            for m in report.misses
        ]
        out += table(["repo", "query", "type", "source", "rank", "#1"], body, markdown)
    return safe_output("\n".join(out).lstrip("\n") + "\n")


def _counts_head(report: Report, markdown: bool) -> list[str]:
    """The headline, each binary's counts beside the ceiling's, and what the ceiling says."""
    runs = report.runs
    split = f" (the {report.split} split)" if report.split else ""
    out = heading(f"recall: {report.sourced} sourced queries of {report.queries}{split}", markdown)
    top = report.ceiling
    body = [
        [run.label, *cells(run.counts, _marks(top.counts.against(run.label))),
         f"{run.index_s:.1f}", f"{run.query_s:.1f}"]
        for run in runs
    ]  # fmt: skip
    body.append(["ceiling", *ceiling_cells(bound_of(top.counts)), NONE, NONE])
    out += _counts_table("binary", body, ["index s", "query s"], markdown)
    out += ["", *_ceiling_note(top.counts, runs, markdown)]
    if _any_above(top):
        out += ["", ABOVE_NOTE] if markdown else [ABOVE_NOTE]
    out += _left_out(top, markdown)
    return out + _holdout(report, markdown) + _unknown_sources(report, markdown)


def _typing_head(report: Report, effort: Effort, markdown: bool) -> list[str]:
    """A typing run's effort first, then each binary's seconds: its steps are prompts with
    no source of their own, so the sourced counts and their groups would be empty tables."""
    out = [f"the {report.split} split"] if report.split else []
    out += _holdout(report, markdown)
    return out + render_effort(effort, markdown) + _seconds(report, markdown)


def _seconds(report: Report, markdown: bool) -> list[str]:
    """Each binary's index and query seconds, for a report whose counts are elsewhere."""
    out = heading("Seconds", markdown)
    body = [[run.label, f"{run.index_s:.1f}", f"{run.query_s:.1f}"] for run in report.runs]
    return out + table(["binary", "index s", "query s"], body, markdown, right=[False, True, True])


def _holdout(report: Report, markdown: bool) -> list[str]:
    """A --split holdout report's corpora and margins (docs/queries.md: the fresh holdout
    is the one no tuning has read; the seen one is a second view)."""
    if report.holdout is None:
        return []
    lines = [said(line, markdown) for line in holdout_lines(report.holdout)]
    return ["", *lines] if not markdown else ["", *(f"- {line}" for line in lines)]


def _render_regress(report: Report, markdown: bool) -> list[str]:
    out: list[str] = []
    regress = report.regress
    assert regress is not None
    out += heading(f"Regress cases ({said(regress.file, markdown)}): {regress.cases}", markdown)
    if regress.skipped:
        skipped = f"{regress.skipped} regress cases skipped: their repos are not in the corpus pins"
        out += ["", skipped, ""] if markdown else [skipped]
    if not regress.cases:
        return out
    verdicts = [(run.label, run.regress) for run in report.runs if run.regress is not None]
    body = [[label, str(r.holds), str(r.fails), str(r.not_applicable)] for label, r in verdicts]
    out += table(["binary", "hold", "fail", "n/a"], body, markdown)
    unlocated = [said(label, markdown) for label, r in verdicts if r.no_locations]
    if unlocated:
        why = (
            f"n/a: {', '.join(unlocated)} print{'s' if len(unlocated) == 1 else ''} no "
            "locations (file:line), which every regress case matches, so no case applies"
        )
        out += ["", why] if markdown else [why]
    for label, r in verdicts:
        if r.failing:
            out += heading(
                f"Regress cases failing in {said(label, markdown)}: {len(r.failing)}", markdown
            )
            out += _cases_table(r.failing, markdown)
    return out


def _row_line(repo: str, query: str, what: str, markdown: bool) -> str:
    """One listed row of a section: its repo, its query quoted, and what it got."""
    return f"  {said(repo, markdown)}\t{said(repr(query), markdown)}: {said(what, markdown)}"


def restarts_line(label: str, restarts: int) -> str:
    """A finder's batch process started again is time the counts do not show: a language
    server that times out and restarts forty times costs minutes, and each restart after a
    death mid-run retries the query it died on."""
    times = "once" if restarts == 1 else f"{restarts} times"
    return f"{label}: its batch process was started again {times}, after a death or a timeout"


def _error_lines(rows: tuple[ErrorRow, ...], markdown: bool) -> list[str]:
    """Each error once: a row line where one query got it, else the error and then the
    queries that got it, one a line."""
    out = []
    for error, got in by_error(rows, lambda row: row.error):
        if len(got) == 1:
            out.append(_row_line(got[0].repo, got[0].query, error, markdown))
            continue
        out.append(f"  {len(got)} queries: {said(error, markdown)}")
        out += [f"    {said(e.repo, markdown)}\t{said(repr(e.query), markdown)}" for e in got]
    return out


def _cases_table(cases: tuple[FailingCase, ...], markdown: bool) -> list[str]:
    body = [[c.repo, c.query, c.expect, c.first or "-"] for c in cases]
    return table(["repo", "query", "expect", "#1 now"], body, markdown)


def _changes_table(
    changes: tuple[Change, ...], markdown: bool, *, first_now: bool = True
) -> list[str]:
    if not changes:
        return []
    body = [
        [c.repo, c.query, c.type, c.source, _rank(c.base_rank), _rank(c.new_rank),
         *([c.new_first or "-"] if first_now else [])]
        for c in changes
    ]  # fmt: skip
    header = ["repo", "query", "type", "source", "old", "new", *(["#1 now"] if first_now else [])]
    return table(header, body, markdown)


def _summary(report: Report, markdown: bool) -> list[str]:
    """Every finder's headline numbers and its verdict against the baseline, first."""
    base = report.runs[0]
    verdicts = {d.new: d.significance for d in report.diffs}
    body = []
    for run in report.runs:
        sig = verdicts.get(run.label)
        judged = [_verdict_cell(sig.first), _verdict_cell(sig.top10)] if sig else ["-", "-"]
        body.append([run.label, *percents(run.counts), *judged])
    header = ["binary", *PERCENTS, "verdict #1", "verdict top 10"]
    title = f"Summary: {len(report.diffs)} candidates against {base.label}"
    out = [f"## {title}" if markdown else title]
    out += table(header, body, markdown)
    note = f"verdict: {VERDICT_TEST} on #1 and on the top 10, two-sided, alpha {ALPHA:g}"
    return [*out, *([""] if markdown else []), note]


def _verdict_cell(verdict: Verdict) -> str:
    return f"{verdict.outcome} ({shown_p(verdict.p)})"


def _unknown_sources(report: Report, markdown: bool) -> list[str]:
    """The rows of a foreign query file whose source no corpus lists, once."""
    unknown = report.unknown_sources
    if not unknown.count:
        return []
    out = heading(
        f"Unknown sources: {unknown.count} row{'' if unknown.count == 1 else 's'} whose "
        "source is not a name of their corpus "
        "at its pin, counted as not found (by every finder and by the ceiling)",
        markdown,
    )
    body = [[str(u.line), u.repo, u.query, u.type, u.source] for u in unknown.first]
    out += table(["line", "repo", "query", "type", "source"], body, markdown)
    if unknown.count > len(unknown.first):
        out += more(unknown.count - len(unknown.first), markdown, "--json")
    return out


def _against(bound: dict[str, CeilingCounts], key: str, run: RunSummary) -> AgainstCeiling | None:
    cell = bound.get(key)
    return cell.against(run.label) if cell else None


def _left_out(summary: CeilingSummary, markdown: bool) -> list[str]:
    """The sourced rows the recipes cannot make, left out of the ceiling and of every
    finder's comparison with it (their own counts keep them), once."""
    rows = summary.left_out
    if not rows.count:
        return []
    out = heading(
        f"Left out of the ceiling: {rows.count} row{'' if rows.count == 1 else 's'} the recipes "
        "cannot make (no recipe for the type, or no name, or not the source, yields the "
        "query); the finders are compared with the ceiling without them",
        markdown,
    )
    body = [[r.repo, r.query, r.type, r.source] for r in rows.first]
    header = ["repo", "query", "type", "source"]
    return out + first_rows(header, body, markdown, LEFT_OUT_SHOWN, rows.count)


def diff_lines(d: Diff, effort: EffortDiff | None = None) -> tuple[str, str]:
    """A diff's verdict line and its counts line: of the sources, or for a typing set of
    its sequences (whose prompts have no source: the sources' counts would all be 0)."""
    if effort is not None:
        return (
            effort.verdict.summary,
            f"{effort.counts_line()}; distinct queries whose top 10 changed: {d.top10_changed}",
        )
    return (
        d.significance.verdict_line(),
        f"sources up {d.up}, down {d.down}, unchanged {d.same}; "
        f"queries whose top 10 changed: {d.top10_changed}",
    )


def log_lines(report: Report) -> list[str]:
    """What a CI job's log shows of each diff, whatever went to stdout (a summary file,
    a JSON file): its verdict line and its lost and gained counts, one line each, on
    stderr; and, for --fail-on-loss, what the losses are (loss_reasons)."""
    out: list[str] = []
    efforts = report.effort.diffs if report.effort else ()
    for judged in report.judgments.diffs if report.judgments else ():
        head = f"recall: {shown(judged.new)} against {shown(judged.base)}"
        out += [f"{head}: {judged.verdict_line()}", f"{head}: {judged.counts_line()}"]
    for i, d in enumerate(report.diffs):
        head = f"recall: {shown(d.new)} against {shown(d.base)}"
        effort = efforts[i] if efforts else None
        verdict, _counts = diff_lines(d, effort)
        out.append(f"{head}: {verdict}")
        if effort is not None:
            out.append(f"{head}: {effort.counts_line()}")
            continue
        accepted = f" ({len(d.accepted)} accepted, not counted)" if d.accepted else ""
        out.append(
            f"{head}: lost #1 {len(d.lost_first)}, lost the top 10 {len(d.lost_top10)}, "
            f"gained #1 {len(d.gained_first)}, entered the top 10 {len(d.gained_top10)}"
            f"{accepted}"
        )
    return out


def loss_reasons(report: Report) -> list[str]:
    """Each candidate's losses, as --fail-on-loss counts them (Report.is_loss)."""
    reasons: list[str] = []
    efforts = report.effort.diffs if report.effort else ()
    for judged in report.judgments.diffs if report.judgments else ():
        parts = [
            f"{count} {what}"
            for count, what in (
                (len(judged.lost), "judgments lost"), (judged.candidate_errors, "queries errored"),
            )
            if count
        ]  # fmt: skip
        if parts:
            reasons.append(f"{shown(judged.new)}: {', '.join(parts)}")
    for d in report.diffs:
        parts = [
            f"{count} {what}"
            for count, what in (
                (len(d.lost_first), "lost #1"), (len(d.lost_top10), "lost the top 10"),
                (len(d.regress_broken or ()), "regress cases broke"),
                (d.candidate_errors, "queries errored"),
            )
            if count
        ]  # fmt: skip
        for effort in efforts:
            if effort.new == d.new:
                parts += [
                    f"{count} {what}"
                    for count, what in (
                        (len(effort.more_keys), "sequences need more keystrokes to #1"),
                        (len(effort.lost_top3), "sequences left the top 3"),
                    )
                    if count
                ]
        if parts:
            reasons.append(f"{shown(d.new)}: {', '.join(parts)}")
    return reasons


def _render_diff(
    d: Diff, markdown: bool, cap: int | None = None, effort: EffortDiff | None = None
) -> list[str]:
    """A candidate's diff; for a typing set (effort: its sequences' diff, whose table the
    effort section shows) its verdict and counts are the sequences', and the sources'
    lists, empty for prompts that have none, are left out."""
    out: list[str] = []
    out += heading(f"Diff: {said(d.new, markdown)} against {said(d.base, markdown)}", markdown)
    verdict, counts = diff_lines(d, effort)
    out += [verdict, ""] if markdown else [verdict]
    out.append(counts)
    if effort is None:
        summary = d.significance.summary()
        out += ["", summary] if markdown else [summary]
    explained: set[str] = set()
    sections = (
        (d.lost_first, "Lost #1", True, True),
        (d.gained_first, "Gained #1", False, False),
        (d.lost_top10, "Lost the top 10", True, True),
        (d.gained_top10, "Entered the top 10", True, False),
    )
    for rows, title, first_now, lost in () if effort else sections:
        out += heading(f"{title}: {len(rows)}", markdown)
        shown_rows = rows[:cap] if cap is not None else rows
        out += _changes_table(shown_rows, markdown, first_now=first_now)
        if len(shown_rows) < len(rows):
            out += more(len(rows) - len(shown_rows), markdown)
        if lost and not markdown and d.explain_flags is not None:
            for c in shown_rows:
                line = explain_command(c.repo, c.query, c.source, c.type, d.explain_flags)
                if line not in explained:
                    explained.add(line)
                    out.append(f"  {shown(line)}")
    if d.accepted is not None:
        out += heading(f"Accepted losses: {len(d.accepted)}", markdown)
        out += _changes_table(d.accepted, markdown)
        if d.stale_accepted:
            out += heading(
                f"Stale accepted losses (no longer lost): {len(d.stale_accepted)}", markdown
            )
            body = [[s.repo, s.query, s.source] for s in d.stale_accepted]
            out += table(["repo", "query", "source"], body, markdown)
    if d.regress_broken is not None:
        out += heading(f"Regress cases that held and now fail: {len(d.regress_broken)}", markdown)
        out += _cases_table(d.regress_broken, markdown) if d.regress_broken else []
    if d.new_errors:
        out += heading(
            f"Errored in {said(d.new, markdown)}, answered in {said(d.base, markdown)}: "
            f"{len(d.new_errors)}",
            markdown,
        )
        out += [_row_line(c.repo, c.query, c.error, markdown) for c in d.new_errors]
    return out


def render_bench(bench: BenchSummary, markdown: bool) -> list[str]:
    """The bench section of the text or Markdown report."""
    title = (
        f"Bench: {bench.queries} hand queries x {bench.reps} reps, interleaved "
        "(ms, median and p90 over queries of per-query medians)"
    )
    out = [f"## {title}" if markdown else title]
    names = list(dict.fromkeys(name for run in bench.runs for name in run.phases))
    header = ["binary", "wall median", "wall p90"]
    for name in names:
        header += [f"{name} median", f"{name} p90"]
    header += ["spread", "errors"]
    body = []
    for run in bench.runs:
        cells = [run.label, _ms(run.wall_ms.median), _ms(run.wall_ms.p90)]
        for name in names:
            phase = run.phases.get(name)
            cells += [_ms(phase.median), _ms(phase.p90)] if phase else ["-", "-"]
        cells += [f"{100 * run.spread:.0f}%", str(run.errors)]
        body.append(cells)
    out += table(header, body, markdown)
    if bench.noisy:
        worst = max(bench.runs, key=lambda run: run.spread)
        out.append(
            f"warning: the machine was too noisy to trust these figures: a query's middle "
            f"half of reps spans {100 * worst.spread:.0f}% of its median in "
            f"{said(worst.label, markdown)} (over {100 * NOISE_SPREAD:.0f}%); every sample is kept"
        )
    for r in bench.ratios:
        out.append(
            f"{said(r.new, markdown)} / {said(r.base, markdown)} per query: "
            f"median {r.median:.3f} (p10 {r.p10:.3f}, p90 {r.p90:.3f})"
        )
    return out


def _ms(value: float) -> str:
    return f"{value:.1f}" if value >= 10 else f"{value:.2f}"


def _rank(rank: int | None) -> str:
    return "-" if rank is None else str(rank)

"""Turning results into numbers (pure functions) and numbers into text, Markdown, JSON."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from recall.bench import render_bench
from recall.corpus import Pin
from recall.explain import command as explain_command
from recall.model import QueryResult, RunResult
from recall.queryset import QueryRow
from recall.stats import compare, mean_ndcg_at_10, mean_reciprocal_rank
from recall.terminal import safe_output, shown

SCHEMA = 1


def counts(rows: list[QueryRow], results: list[QueryResult]) -> dict[str, float]:
    ranks = [r.rank for row, r in zip(rows, results, strict=True) if row.sourced]
    n = len(ranks)
    first = sum(1 for r in ranks if r == 1)
    top10 = sum(1 for r in ranks if r is not None and r <= 10)
    found = sum(1 for r in ranks if r is not None)
    errors = sum(1 for row, r in zip(rows, results, strict=True) if r.error)

    def pct(k: int) -> float:
        return round(100.0 * k / n, 1) if n else 0.0

    return {
        "n": n, "first": first, "top10": top10, "found": found, "errors": errors,
        "first_pct": pct(first), "top10_pct": pct(top10), "found_pct": pct(found),
        "mrr": round(mean_reciprocal_rank(ranks), 4),
        "ndcg10": round(mean_ndcg_at_10(ranks), 4),
    }  # fmt: skip


def _grouped(
    rows: list[QueryRow], results: list[QueryResult], key: Callable[[QueryRow], str]
) -> dict[str, dict[str, float]]:
    groups: dict[str, list[int]] = {}
    for i, row in enumerate(rows):
        groups.setdefault(key(row), []).append(i)
    return {
        name: counts([rows[i] for i in idx], [results[i] for i in idx])
        for name, idx in groups.items()
    }


def summarize(run: RunResult, rows: list[QueryRow], pins: dict[str, Pin]) -> dict:
    results = list(run.results)
    return {
        "label": run.label,
        "bin": run.bin,
        "index_s": round(run.index_s, 2),
        "query_s": round(run.query_s, 2),
        "cached": run.cached,
        **counts(rows, results),
        "by_type": _grouped(rows, results, lambda r: r.type),
        "by_repo": _grouped(rows, results, lambda r: r.repo),
        "by_language": _grouped(rows, results, lambda r: pins[r.repo].language),
        "error_rows": [
            {"repo": row.repo, "query": row.query, "type": row.type, "error": res.error}
            for row, res in zip(rows, results, strict=True)
            if res.error
        ],
        "dirtied": list(run.dirtied),
    }


@dataclass(frozen=True)
class Change:
    row: QueryRow
    base: QueryResult
    new: QueryResult

    def as_json(self) -> dict:
        return {
            "repo": self.row.repo, "query": self.row.query, "type": self.row.type,
            "source": self.row.source, "base_rank": self.base.rank,
            "new_rank": self.new.rank,
            "new_first": self.new.top[0].name if self.new.top else None,
        }  # fmt: skip


def _better(a: int | None, b: int | None) -> bool:
    """Is rank a better than rank b (found beats missed, smaller beats larger)?"""
    return a is not None and (b is None or a < b)


# Where a source's rank went, new rank minus base rank (negative: it moved up); "found"
# and "lost" are the moves between found and missed, "same" includes missed on both sides.
MOVE_BUCKETS = (
    ("up 10+", -(10**9), -10), ("up 5-9", -9, -5), ("up 2-4", -4, -2), ("up 1", -1, -1),
    ("same", 0, 0),
    ("down 1", 1, 1), ("down 2-4", 2, 4), ("down 5-9", 5, 9), ("down 10+", 10, 10**9),
)  # fmt: skip


def move_bucket(base_rank: int | None, new_rank: int | None) -> str:
    if base_rank is None or new_rank is None:
        if base_rank == new_rank:
            return "same"
        return "found" if base_rank is None else "lost"
    delta = new_rank - base_rank
    return next(name for name, low, high in MOVE_BUCKETS if low <= delta <= high)


def _lost_row(change: Change) -> dict:
    """A lost row with where the source is defined, from the base's hit that named it."""
    hit = next((h for h in change.base.top if h.name == change.row.source), None)
    return change.as_json() | {
        "source_file": hit.file if hit else None,
        "source_line": hit.line if hit else None,
    }


def diff(rows: list[QueryRow], base: RunResult, new: RunResult) -> dict:
    up = down = same = top10_changed = 0
    lost_first: list[Change] = []
    lost_top10: list[Change] = []
    newly_errored: list[Change] = []
    base_ranks, new_ranks = [], []
    moves = dict.fromkeys(["found", *(name for name, _, _ in MOVE_BUCKETS), "lost"], 0)
    for row, b, n in zip(rows, base.results, new.results, strict=True):
        if [h.name for h in b.top] != [h.name for h in n.top]:
            top10_changed += 1
        if n.error and not b.error:
            newly_errored.append(Change(row, b, n))
        if not row.sourced:
            continue
        base_ranks.append(b.rank)
        new_ranks.append(n.rank)
        moves[move_bucket(b.rank, n.rank)] += 1
        if _better(n.rank, b.rank):
            up += 1
        elif _better(b.rank, n.rank):
            down += 1
        else:
            same += 1
        if b.rank == 1 and n.rank != 1:
            lost_first.append(Change(row, b, n))
        if b.rank is not None and b.rank <= 10 and (n.rank is None or n.rank > 10):
            lost_top10.append(Change(row, b, n))
    significance = compare(base_ranks, new_ranks)
    return {
        "base": base.label, "new": new.label,
        "up": up, "down": down, "same": same, "top10_changed": top10_changed,
        "moves": moves,
        "lost_first": [_lost_row(c) for c in lost_first],
        "lost_top10": [_lost_row(c) for c in lost_top10],
        "new_errors": [c.as_json() | {"error": c.new.error} for c in newly_errored],
        "significance": significance.as_json() | {"summary": significance.summary()},
    }  # fmt: skip


def build_report(
    meta: dict, pins: dict[str, Pin], rows: list[QueryRow], runs: list[RunResult],
    diffs: list[dict],
) -> dict:  # fmt: skip
    """The report: `runs` in the order given; with a baseline, `diffs` holds each
    candidate's diff against it and `diff` the first one's, as before there were several."""
    report = {
        "schema": SCHEMA,
        "meta": meta,
        "corpus": {name: pin.as_json() for name, pin in pins.items()},
        "queries": len(rows),
        "sourced": sum(1 for r in rows if r.sourced),
        "runs": [summarize(run, rows, pins) for run in runs],
    }
    if diffs:
        report["diff"] = diffs[0]
        report["diffs"] = diffs
    return report


def misses(rows: list[QueryRow], run: RunResult) -> list[dict]:
    return [
        {
            "repo": row.repo,
            "query": row.query,
            "type": row.type,
            "source": row.source,
            "rank": res.rank,
            "first": res.top[0].name if res.top else None,
        }
        for row, res in zip(rows, run.results, strict=True)
        if row.sourced and res.rank != 1
    ]


# Rendering --------------------------------------------------------------------------


NUMERIC = re.compile(r"[-+]?[\d.]+%?( \(.*\))?|-|( / )?([\d.]+( / )?)+")


def _cell(text: str, markdown: bool) -> str:
    """A name holding a control character (a tab, a newline, an ESC) or, in Markdown, a
    pipe must not break the table or reach the terminal raw."""
    text = shown(text)
    return text.replace("|", "\\|") if markdown else text


def _table(header: list[str], body: list[list[str]], markdown: bool) -> list[str]:
    body = [[_cell(c, markdown) for c in row] for row in body]
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        return lines + ["| " + " | ".join(row) + " |" for row in body]
    columns = list(zip(header, *body, strict=True))
    widths = [max(len(c) for c in col) for col in columns]
    numeric = [
        i > 0 and all(NUMERIC.fullmatch(c) for c in col[1:]) for i, col in enumerate(columns)
    ]

    def fmt(cells: list[str]) -> str:
        padded = [
            c.rjust(w) if right else c.ljust(w)
            for c, w, right in zip(cells, widths, numeric, strict=True)
        ]
        return "  ".join(padded).rstrip()

    return [fmt(header), *(fmt(row) for row in body)]


def _cells(c: dict) -> list[str]:
    return [
        f"{c['n']}",
        f"{c['first']} ({c['first_pct']:.1f}%)",
        f"{c['top10']} ({c['top10_pct']:.1f}%)",
        f"{c['found']} ({c['found_pct']:.1f}%)",
        f"{c['mrr']:.3f}",
        f"{c['ndcg10']:.3f}",
        f"{c['errors']}",
    ]


METRIC_HEADER = ["n", "#1", "top 10", "found", "MRR", "nDCG@10", "errors"]
COLUMN_CELL = "#1% / top 10% / found% / MRR"


def _column_cell(c: dict) -> str:
    """One binary's numbers in one cell, for tables with a column per binary."""
    return f"{c['first_pct']:.1f} / {c['top10_pct']:.1f} / {c['found_pct']:.1f} / {c['mrr']:.3f}"


CEILING_CELL = "ceiling #1% / top 10%"


def _ceiling_cells(c: dict) -> list[str]:
    """The ceiling as a row of the binaries' table: expected counts at best, no MRR."""
    return [
        f"{c['n']}",
        f"{c['first']:.1f} ({c['first_pct']:.1f}%)",
        f"{c['top10']:.1f} ({c['top10_pct']:.1f}%)",
        "-", "-", "-", "-",
    ]  # fmt: skip


def _ceiling_cell(c: dict | None) -> str:
    return f"{c['first_pct']:.1f} / {c['top10_pct']:.1f}" if c else "-"


def _ceiling_note(c: dict, runs: list[dict]) -> list[str]:
    """What the row means, and each binary's distance to it in points."""
    gaps = ", ".join(
        f"{run['label']} {c['first_pct'] - run['first_pct']:.1f} / "
        f"{c['top10_pct'] - run['top10_pct']:.1f}"
        if run["n"] == c["n"]
        else f"{run['label']} not comparable (the ceiling covers {c['n']} of its {run['n']})"
        for run in runs
    )
    return [
        "ceiling: the best #1 and top 10 any finder can expect, since several names can make "
        "one query (docs/queries.md)",
        f"points below it (#1 / top 10): {gaps}",
    ]


def render(report: dict, *, markdown: bool = False, show_misses: list[dict] | None = None) -> str:
    """The report as text or Markdown; in text, each lost row of a diff that carries
    `explain_flags` is followed by the `recall explain` command that looks at it."""
    out: list[str] = []
    runs = report["runs"]
    out += _heading(f"recall: {report['sourced']} sourced queries of {report['queries']}", markdown)
    body = [
        [run["label"], *_cells(run), f"{run['index_s']:.1f}", f"{run['query_s']:.1f}"]
        for run in runs
    ]
    top = report.get("ceiling")
    if top:
        body.append(["ceiling", *_ceiling_cells(top), "-", "-"])
    out += _table(["binary", *METRIC_HEADER, "index s", "query s"], body, markdown)
    if top:
        out += ["", *_ceiling_note(top, runs)]
    for run in runs:
        if run.get("cached"):
            out += ["", f"{run['label']}: results reused, not run now (times are from then)"]
    for group, title in (("by_type", "type"), ("by_repo", "repo"), ("by_language", "language")):
        out += _heading(f"By {title}", markdown)
        keys = [k for k in runs[0][group] if runs[0][group][k]["n"]]  # hand rows: churn only
        bound = top[group] if top else None
        if len(runs) == 1:
            body = [[key, *_cells(runs[0][group][key])] for key in keys]
            header = [title, *METRIC_HEADER]
            if bound is not None:
                body = [
                    [*row, _ceiling_cell(bound.get(key))]
                    for row, key in zip(body, keys, strict=True)
                ]
                header.append(CEILING_CELL)
            out += _table(header, body, markdown)
            continue
        out += [f"each cell: {COLUMN_CELL}", ""] if markdown else [f"each cell: {COLUMN_CELL}"]
        body = [
            [key, str(runs[0][group][key]["n"]), *(_column_cell(run[group][key]) for run in runs)]
            for key in keys
        ]
        header = [title, "n", *(run["label"] for run in runs)]
        if bound is not None:
            body = [
                [*row, _ceiling_cell(bound.get(key))] for row, key in zip(body, keys, strict=True)
            ]
            header.append(CEILING_CELL)
        out += _table(header, body, markdown)
    for run in runs:
        if run.get("dirtied"):
            out.append(
                f"{run['label']} wrote into the checkout of {', '.join(run['dirtied'])}; "
                "it was rebuilt from the pin"
            )
        if run["error_rows"]:
            out += _heading(f"Errors in {run['label']}: {len(run['error_rows'])} queries", markdown)
            out += [
                f"  {e['repo']}\t{e['query']!r}: {shown(e['error'])}" for e in run["error_rows"]
            ]
    if "regress" in report:
        out += _render_regress(report, markdown)
    for d in report.get("diffs", []):
        out += _render_diff(d, markdown)
    if report.get("bench"):
        out += ["", *render_bench(report["bench"], markdown)]
    if show_misses is not None:
        out += _heading(f"Misses: {len(show_misses)} sources not #1", markdown)
        body = [
            [m["repo"], m["query"], m["type"], m["source"], _rank(m["rank"]), m["first"] or "-"]
            for m in show_misses
        ]
        out += _table(["repo", "query", "type", "source", "rank", "#1"], body, markdown)
    return safe_output("\n".join(out).lstrip("\n") + "\n")


def _render_regress(report: dict, markdown: bool) -> list[str]:
    out: list[str] = []
    regress = report["regress"]
    out += _heading(f"Regress cases ({regress['file']}): {regress['cases']}", markdown)
    if regress.get("skipped"):
        skipped = (
            f"{regress['skipped']} regress cases skipped: their repos are not in the corpus pins"
        )
        out += ["", skipped, ""] if markdown else [skipped]
    if not regress["cases"]:
        return out
    body = [
        [run["label"], str(r["holds"]), str(r["fails"]), str(r["not_applicable"])]
        for run in report["runs"]
        for r in [run["regress"]]
    ]
    out += _table(["binary", "hold", "fail", "n/a"], body, markdown)
    for run in report["runs"]:
        failing = run["regress"]["failing"]
        if failing:
            out += _heading(f"Regress cases failing in {run['label']}: {len(failing)}", markdown)
            out += _cases_table(failing, markdown)
    return out


def _heading(text: str, markdown: bool) -> list[str]:
    return ["", f"## {text}" if markdown else text]


def _cases_table(cases: list[dict], markdown: bool) -> list[str]:
    body = [[c["repo"], c["query"], c["expect"], c["first"] or "-"] for c in cases]
    return _table(["repo", "query", "expect", "#1 now"], body, markdown)


def _changes_table(changes: list[dict], markdown: bool) -> list[str]:
    if not changes:
        return []
    body = [
        [c["repo"], c["query"], c["type"], c["source"], _rank(c["base_rank"]),
         _rank(c["new_rank"]), c["new_first"] or "-"]
        for c in changes
    ]  # fmt: skip
    return _table(["repo", "query", "type", "source", "old", "new", "#1 now"], body, markdown)


def _render_diff(d: dict, markdown: bool) -> list[str]:
    out: list[str] = []
    out += _heading(f"Diff: {d['new']} against {d['base']}", markdown)
    out.append(
        f"sources up {d['up']}, down {d['down']}, unchanged {d['same']}; "
        f"queries whose top 10 changed: {d['top10_changed']}"
    )
    out += ["", d["significance"]["summary"]] if markdown else [d["significance"]["summary"]]
    for key, title in (("lost_first", "Lost #1"), ("lost_top10", "Lost the top 10")):
        out += _heading(f"{title}: {len(d[key])}", markdown)
        out += _changes_table(d[key], markdown)
        if not markdown and d.get("explain_flags") is not None:
            out += [
                f"  {shown(explain_command(c['repo'], c['query'], d['explain_flags']))}"
                for c in d[key]
            ]
    if "accepted" in d:
        out += _heading(f"Accepted losses: {len(d['accepted'])}", markdown)
        out += _changes_table(d["accepted"], markdown)
        if d["stale_accepted"]:
            out += _heading(
                f"Stale accepted losses (no longer lost): {len(d['stale_accepted'])}", markdown
            )
            body = [[s["repo"], s["query"], s["source"]] for s in d["stale_accepted"]]
            out += _table(["repo", "query", "source"], body, markdown)
    if "regress_broken" in d:
        out += _heading(
            f"Regress cases that held and now fail: {len(d['regress_broken'])}", markdown
        )
        out += _cases_table(d["regress_broken"], markdown) if d["regress_broken"] else []
    if d["new_errors"]:
        out += _heading(
            f"Errored in {d['new']}, answered in {d['base']}: {len(d['new_errors'])}", markdown
        )
        out += [f"  {c['repo']}\t{c['query']!r}: {shown(c['error'])}" for c in d["new_errors"]]
    return out


def _rank(rank: int | None) -> str:
    return "-" if rank is None else str(rank)

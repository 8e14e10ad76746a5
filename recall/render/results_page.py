"""The results page (docs/RESULTS.md): every finder's kept JSON report side by side.

It renders the reports that `recall results` ran or kept (`--reports DIR`), each read back
as a typed `Report` (schema 2, docs/report-json.md), so that `--render-only` makes the same
page from the kept files alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from recall.analysis.model import CeilingCounts, Counts, Report, RunSummary
from recall.inputs.queryset import NAMES, PATHS, TYPE_ORDER
from recall.render.columns import (
    ABOVE,
    COUNTS,
    HEADER,
    NONE,
    bound_of,
    ceiling_cells,
    cells,
    marked,
    range_pct,
    split_note,
)
from recall.render.effort_results import is_typing_page, render_effort_results
from recall.render.escape import Markdown, code_span, markdown
from recall.render.results_entry import Entry
from recall.render.table import table

GROUPS = (("by_type", "type"), ("by_language", "language"))
REFERENCE = "reference"  # the label of the harness's own finder among the peers


@dataclass(frozen=True)
class Words:
    """What the page says that depends on what its finders rank: names or paths."""

    title: str
    made_by: str  # the make targets that write the page
    rank: str  # how a rank is judged
    item: str  # what a finder puts first
    candidates: str  # what the per-query finders read
    ambiguous: str  # how one query comes from several items
    every: str  # what the ceiling's recipes run over
    given: str  # what every finder ran over, and what it cannot find


WORDS = {
    NAMES: Words(
        title="# Results: the reference finder and its peers",
        made_by="(make results, make results-typed)",
        rank="Rank is by name:",
        item="name",
        candidates="names list",
        ambiguous="several names can make one query (`tstcnt` from `test_count` and `TestContent`)",
        every="name of each corpus",
        given="over the same `{names}` list (the corpus's distinct ctags names, sorted) or, "
        "for the reference finder, its own index of the corpus. fzf and fzy treat `*` as a "
        "literal character, so glob queries find nothing there; subsequence matchers (fzf, "
        "fzy, frizbee with no typos) never find a transposition.",
    ),
    PATHS: Words(
        title="# Results on paths: the reference finder's path mode and the file pickers",
        made_by="(make results-paths)",
        rank="Rank is by path (the source is a tracked file path):",
        item="path",
        candidates="paths list",
        ambiguous="several paths can make one query (`.go cont` from gin's `context.go` and "
        "`context_test.go`)",
        every="tracked path of each corpus",
        given="over the same `{names}` list, here the corpus's tracked paths (`git ls-files` "
        "at the pin, sorted). Subsequence matchers (fzf, fzy, frizbee with no typos) never "
        "find a transposition (`basetypo`); fzf's smart case makes a query with a capital "
        "case-sensitive (`basecase`).",
    ),
}


def group(run: RunSummary, name: str) -> dict[str, Counts]:
    """A run's counts by type, repo or language, by the JSON's name of the group."""
    return {"by_type": run.by_type, "by_repo": run.by_repo, "by_language": run.by_language}[name]


def agreement(entries: list[Entry]) -> list[list[float | None]]:
    """The pairwise top-1 agreement: the percent of the set's queries on which two finders
    put the same name first (a query either answers with nothing is not an agreement);
    None on the diagonal."""
    firsts = [entry.firsts or () for entry in entries]
    matrix: list[list[float | None]] = []
    for a in firsts:
        row: list[float | None] = []
        for b in firsts:
            same = sum(1 for x, y in zip(a, b, strict=True) if x is not None and x == y)
            row.append(None if a is b else 100.0 * same / len(a) if a else 0.0)
        matrix.append(row)
    return matrix


def _table(header: list[str], body: list[list[str]], numeric: bool = True) -> list[str]:
    """The page's tables: Markdown; the first column is a label, the rest right-aligned
    numbers if numeric."""
    return table(header, body, True, right=[i > 0 and numeric for i in range(len(header))])


def _counts_table(label: str, body: list[list[str]], after: tuple[str, ...] = ()) -> list[str]:
    """A label, the counts' columns (render/columns.py, aligned as it says), then the
    numbers `after` them."""
    right = [False, *(column.right for column in COUNTS), *(True for _ in after)]
    return table([label, *HEADER, *after], body, True, right=right)


def _range(c: CeilingCounts, ci: tuple[int, int]) -> str:
    return f" [{range_pct(c, ci)}]" if c.n else ""


def _above(count: int, n: int, limit: CeilingCounts | None, ci: str) -> bool:
    """A finder's count above the ceiling's range, judged only where the ceiling covers
    the group's every row (the same n), since the page has no per-row results."""
    high = getattr(limit, ci)[1] if limit else 0
    return bool(limit and limit.n == n and count > high)


def latency_ms(report: Report) -> float:
    """The query phase's wall time over the queries run (hand rows included)."""
    run = report.runs[0]
    return 1000.0 * run.query_s / report.queries if report.queries else 0.0


def _keys(counts: dict[str, Counts], group: str) -> list[str]:
    """Rows with sources, types in the recipe table's order, languages alphabetically."""
    keys = sorted(k for k, c in counts.items() if c.n)
    if group == "by_type":
        keys.sort(key=lambda k: TYPE_ORDER.index(k) if k in TYPE_ORDER else len(TYPE_ORDER))
    return keys


def _best(entries: list[Entry], name: str, key: str) -> str:
    """The peer(s) with the most sources at #1 in one row, the reference finder left out
    (it has its own column to compare with); ties are all named, none at all is "-"."""
    peers = [e for e in entries if e.label != REFERENCE] or entries
    firsts = [(e.label, group(e.report.runs[0], name)[key].first) for e in peers]
    top = max(first for _, first in firsts)
    if top == 0:
        return "-"
    return ", ".join(label for label, first in firsts if first == top)


def render_results(every: list[Entry], host: dict[str, str], domain: str = NAMES) -> str:
    """The page, from each finder's label, version, command, note and report, in the
    words of its domain (the names or the paths its finders rank). Finders of some
    languages only (language servers) have a section of their own, beside the others'
    rows for the same languages, since their totals cover fewer queries."""
    if is_typing_page(every):  # a typing set's page: keystrokes to the name
        return render_effort_results(every, host)
    words = WORDS[domain]
    entries = [e for e in every if not e.languages]
    servers = [e for e in every if e.languages]
    if not entries:  # --only a language server: its own totals are the page
        entries, servers = every, []
    first = entries[0].report
    labels = [e.label for e in entries]
    out = [
        words.title,
        "",
        f"Generated by `recall results` {words.made_by}; do not edit it.",
        f"Every finder ran `recall run --engine E --json` over the committed query set"
        f"{split_note(first)}: "
        f"{first.queries} queries, {first.sourced} with a source, over the pinned "
        f"corpora {', '.join(sorted(first.runs[0].by_repo))}. "
        f"{words.rank} #1, in the top 10, or found at all (unlimited results), as a "
        "count and percent of the sourced queries; MRR is the mean reciprocal rank "
        "(a miss counts 0), nDCG@10 the mean normalised discounted gain of the source in "
        "the top 10 (the source the one relevant name).",
        "",
        "## Overall",
        "",
    ]
    body = []
    for entry in entries:
        run = entry.report.runs[0]
        body.append([
            entry.label, *cells(run.counts), f"{latency_ms(entry.report):.2f}",
            f"{run.index_s:.1f}",
        ])  # fmt: skip
    bound = first.ceiling
    body.append(["ceiling", *ceiling_cells(bound_of(bound.counts)), NONE, NONE])
    out += _counts_table("finder", body, ("ms / query", "index s"))
    out += [
        "",
        "ceiling is the best #1 and top 10 any finder can expect from these queries: "
        f"{words.ambiguous}, and given only the query, a finder can at best rank the "
        "likeliest of them first (docs/queries.md). It is computed from the recipes over "
        f"every {words.every}, with no finder involved. [low-high] is the 95% range of "
        "the count a finder as good as the recipes' choice model gets on these rows; "
        f"{ABOVE} marks a finder above it on the same rows (compared where the ceiling "
        "covers every row of the group): either the choice model is wrong there, or the "
        "finder's order suits this one sample (a lean the sample favours, or tuning on "
        "it).",
    ]
    out += [
        "",
        "ms / query is the time per query: the run's `query_s` (wall time of the query "
        "phase, summed over corpora) divided by the queries run, hand rows included. "
        "Per-query finders pay a process start and a read of the "
        f"{words.candidates} on every query; "
        "batch finders answer every query of a corpus from one process, with the harness "
        "keeping up to 16 requests ahead. index s is the engine's index step (none for "
        f"finders that read the {words.candidates}).",
    ]
    ceilings = {"by_type": bound.by_type, "by_language": bound.by_language}
    for name, title in GROUPS:
        keys = _keys(group(first.runs[0], name), name)
        out += ["", f"## By {title}: #1 / top 10 / found, percent of sourced queries", ""]
        body = []
        for key in keys:
            shares = []
            limit = ceilings[name].get(key)
            for entry in entries:
                c = group(entry.report.runs[0], name)[key]
                first_pct = marked(f"{c.first_pct:.1f}", _above(c.first, c.n, limit, "first_ci"))
                top10_pct = marked(f"{c.top10_pct:.1f}", _above(c.top10, c.n, limit, "top10_ci"))
                shares.append(f"{first_pct} / {top10_pct} / {c.found_pct:.1f}")
            n = str(group(first.runs[0], name)[key].n)
            body.append([key, n, *shares, _best(entries, name, key)])
            body[-1].append(
                f"{limit.first_pct:.1f}{_range(limit, limit.first_ci)} / "
                f"{limit.top10_pct:.1f}{_range(limit, limit.top10_ci)}"
                if limit
                else "-"
            )
        out += _table([title, "n", *labels, "best peer (#1)", "ceiling (#1 / top 10)"], body)
        out += ["", f"## By {title}: MRR", ""]
        body = [
            [key, *(f"{group(e.report.runs[0], name)[key].mrr:.3f}" for e in entries)]
            for key in keys
        ]
        out += _table([title, *labels], body)
    if all(e.firsts is not None and len(e.firsts) == first.queries for e in entries):
        out += [
            "",
            "## Top-1 agreement: percent of the queries on which two finders put the same "
            f"{words.item} first",
            "",
        ]
        body = [
            [entries[i].label, *("-" if v is None else f"{v:.1f}" for v in row)]
            for i, row in enumerate(agreement(entries))
        ]
        out += _table(["finder", *labels], body)
    out += _by_own_languages(entries, servers)
    out += ["", "## Finders", ""]
    body = [[e.label, e.version, code_span(e.command), Markdown(e.note)] for e in every]
    out += _table(["finder", "version", "command", "options"], body, numeric=False)
    out += [
        "",
        "Every finder ran isolated as any engine: its own temporary HOME and XDG folders, "
        f"`LC_ALL=C.UTF-8`, `TZ=UTC`, {words.given}",
        "",
        "## Machine",
        "",
    ]
    meta = first.meta
    out += _table(
        ["what", "value"],
        [
            [Markdown("CPUs (`nproc`)"), host["cpus"]],
            ["CPU model", host["cpu_model"]],
            ["system", host["system"]],
            ["Python", host["python"]],
            ["Universal Ctags", meta.ctags],
            ["recall", meta.recall],
            ["query jobs", host.get("jobs", "1")],
        ],
        numeric=False,
    )
    return "\n".join(out) + "\n"


def _by_own_languages(entries: list[Entry], servers: list[Entry]) -> list[str]:
    """Each finder of some languages on those languages: its rows by type, then every
    finder's #1 / top 10 / found on the same language rows."""
    out: list[str] = []
    for server in servers:
        run = server.report.runs[0]
        served = ", ".join(server.languages)
        out += ["", f"## {markdown(server.label)} on its languages ({served})", ""]
        body = [[key, *cells(run.by_type[key])] for key in _keys(run.by_type, "by_type")]
        out += _counts_table("type", body)
        out += [""]
        body = []
        for language in server.languages:
            for entry in [server, *entries]:
                c = entry.report.runs[0].by_language.get(language)
                if c and c.n:
                    body.append([f"{language}: {entry.label}", *cells(c)])
        out += _counts_table("language: finder", body)
        out += ["", f"{markdown(server.label)}: {latency_ms(server.report):.2f} ms / query."]
    return out

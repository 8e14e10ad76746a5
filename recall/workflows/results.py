"""`recall results`'s work: every finder's report run (or read back from `--reports`) and
the page of its query set rendered: the names, typed and typing pages, the paths page,
or the judgments page beside the other sets' kept shares."""

from __future__ import annotations

from dataclasses import dataclass

from recall.errors import RecallError
from recall.render.judgments_results import render_judgments_results
from recall.render.results_entry import Entry
from recall.render.results_page import render_results
from recall.workflows import results_judgments as judged
from recall.workflows import results_page as results
from recall.workflows.options import ResultsOptions


@dataclass(frozen=True)
class ResultsPage:
    """A results page made: each finder's entry (its column and report) and the Markdown
    the command writes to `options.out`."""

    entries: tuple[Entry, ...]
    markdown: str


def results_page(options: ResultsOptions) -> ResultsPage:
    """Every finder of the set's page run (or read back), checked comparable, rendered."""
    shares = {}
    if results.is_judgments_set(options.queries):  # read before any peer runs
        shares = judged.set_shares(options.sets, options.corpus)
    elif options.sets:
        raise RecallError("--set-reports: the sets' shares go on the judgments page alone")
    entries = results.peer_entries(options)
    results.check_comparable(entries)
    host = {**results.machine(), "jobs": results.measured_jobs(entries)}
    if judged.is_judgments_page(entries):
        page = render_judgments_results(entries, host, shares)
    else:
        page = render_results(entries, host, results.set_domain(options.queries))
    return ResultsPage(tuple(entries), page)

"""docs/RESULTS-judgments.md: every peer that reads a names list, over the judgments set
(recall/inputs/judgments.py), and how far recall's own query sets agree with it.

`recall results --queries judgments` runs each peer as the other pages do (`recall run
--engine E --json`): the name finders, and the file pickers in their path mode, labelled so
(a language server needs a corpus, which the set has not). The other sets' #1 shares come
from the reports their own results runs kept, named one a set (`--set-reports SET=DIR`;
`make results-judgments` names the folders `make results`, `results-typed`,
`results-typing` and `results-paths` keep), so that the page says which runs it compares.
"""

from __future__ import annotations

from pathlib import Path

from recall.errors import RecallError
from recall.files import file_sha256
from recall.inputs.queryset import query_set_path
from recall.inputs.suite import locate
from recall.render.judgments_results import PATH_MODE
from recall.render.results_entry import Entry
from recall.workflows.results_page import read_entry

# The committed sets whose #1 share the page sets beside the judgments' agreement; a typing
# set's is its sequences that reach #1.
SETS = ("default", "typed", "typing", "paths")


def is_judgments_page(entries: list[Entry]) -> bool:
    return bool(entries) and all(entry.report.judgments is not None for entry in entries)


def set_shares(
    sets: tuple[tuple[str, str], ...], corpus: str | None = None
) -> dict[str, dict[str, float]]:
    """Each named set's #1 share per finder, this page's label for it (a path-mode peer's
    with PATH_MODE), from the kept reports in its folder: each must be a report of that
    committed set, whole (no --split), of a finder of every language."""
    shares: dict[str, dict[str, float]] = {}
    for name, folder in sets:
        where = f"--set-reports {name}={folder}"
        if name not in SETS:
            raise RecallError(f"{where}: not one of the sets the page compares ({', '.join(SETS)})")
        if name in shares:
            raise RecallError(f"{where}: {name} is named twice")
        if not Path(folder).is_dir():
            raise RecallError(f"{where}: no such folder (`recall results --reports DIR` keeps one)")
        committed = locate("results", corpus=corpus, queries=name).queries or ""
        digest = file_sha256(query_set_path(committed))
        found: dict[str, float] = {}
        for path in sorted(Path(folder).glob("*.json")):
            entry = read_entry(path)
            report = entry.report
            if report.meta.queries_sha256 != digest:
                raise RecallError(f"{path}: a kept report of another query set than {committed}")
            if report.split:
                raise RecallError(f"{path}: a kept report of the {report.split} split alone")
            if entry.languages:
                continue  # a language server's share is of its languages' rows alone
            if name == "typing" and report.effort is None:
                raise RecallError(f"{path}: a kept report of no typing set")
            first = report.effort.runs[0].counts if report.effort else report.runs[0].counts
            label = entry.label + (PATH_MODE if name == "paths" else "")
            found[label] = float(first.first_pct)
        if not found:
            raise RecallError(f"{where}: no kept report of a finder in {folder}")
        shares[name] = found
    return shares

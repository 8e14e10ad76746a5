"""A finder's entry on a results page (docs/RESULTS.md and the pages beside it): the value
`recall results` runs or reads back from `--reports DIR`, and every results page renders."""

from __future__ import annotations

from dataclasses import dataclass

from recall.analysis.codec import Coded
from recall.analysis.model import Report


@dataclass(frozen=True)
class Entry(Coded):
    """One finder on a results page, as `recall results --reports DIR` keeps it: who it is
    and how it ran, the languages it serves (none: every one), its report, the name each
    query of the set got first (None: no answer), and the --jobs its seconds were measured
    with (None: a report kept before recall noted it)."""

    label: str
    version: str
    command: str
    note: str
    report: Report
    languages: tuple[str, ...] = ()
    firsts: tuple[str | None, ...] | None = None
    jobs: int | None = None

    JSON_KEYS = ("label", "version", "command", "note", "languages", "report", "firsts", "jobs")

"""A typing set's run: the finders' answers to its prompts mapped back to its steps, and
the report given its effort section (recall/analysis/effort.py)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from recall.analysis.keystroke_ceiling import effort
from recall.analysis.model import Report, RunResult
from recall.inputs.keystrokes import TypingRow
from recall.inputs.queryset import QueryRow


def prompt_answers(prompts: list[QueryRow], run: RunResult) -> Callable[[str, str], Sequence[str]]:
    """Each prompt's distinct names in ranked order (its top 10; an error answers none)."""
    ranked = {
        (row.repo, row.query): tuple(hit.name for hit in result.top)
        for row, result in zip(prompts, run.results, strict=True)
    }
    return lambda repo, query: ranked[(repo, query)]


def typing_report(
    report: Report,
    steps: Sequence[TypingRow],
    runs: list[tuple[str, Callable[[str, str], Sequence[str]]]],
    names: dict[str, list[str]],
    languages: dict[str, str],
    *,
    baseline: bool,
) -> Report:
    """The report with its effort section (the steps' sources checked before any finder
    ran: keystrokes.check_typing_sources)."""
    section = effort(list(steps), runs, names, languages, baseline=baseline)
    return dataclasses.replace(report, effort=section)

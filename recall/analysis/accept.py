"""Accepted losses (--accept FILE): losses a team has reviewed and decided to live with.

An accepted loss still shows in the report, apart from the others, so that nobody forgets
it was a trade; an accepted row that no longer loses is stale and is said so, so the file
does not quietly accept a future loss of the same query.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from recall.analysis.model import Change, Diff, Stale
from recall.errors import RecallError
from recall.inputs.queryset import QueryRow, read_lines

HEADER = ("repo", "query", "source")

Key = tuple[str, str, str]


def read_accepted(path: Path) -> list[Key]:
    keys: list[Key] = []
    for number, line in enumerate(read_lines(path, f"--accept {path}"), start=1):
        fields = tuple(line.split("\t"))
        if number == 1 and fields == HEADER:
            continue
        if len(fields) != 3 or not all(fields):
            raise RecallError(f"{path}:{number}: expected repo<TAB>query<TAB>source")
        keys.append((fields[0], fields[1], fields[2]))
    return keys


def in_selection(accepted: list[Key], every: list[QueryRow], ran: list[QueryRow]) -> list[Key]:
    """The accepted rows a run can judge: of a repo it ran, and not a row of the query set
    that its selection (--type, --shard) left out. A row outside the selection is neither
    accepted nor stale in this run; a row of a repo run that the query set does not hold
    (any more) can never lose again, so it stays in to be named stale."""
    repos = {row.repo for row in ran}
    ran_keys = {(row.repo, row.query, row.source) for row in ran}
    left_out = {(row.repo, row.query, row.source) for row in every} - ran_keys
    return [key for key in accepted if key[0] in repos and key not in left_out]


def apply_accepted(diff: Diff, accepted: list[Key]) -> Diff:
    """The diff with accepted rows moved out of the lost lists, and stale rows named."""
    wanted = set(accepted)

    def key(change: Change) -> Key:
        return (change.repo, change.query, change.source)

    every = (*diff.lost_first, *diff.lost_top10)
    lost = {key(c) for c in every}
    moved = [c for c in every if key(c) in wanted]
    return dataclasses.replace(
        diff,
        lost_first=tuple(c for c in diff.lost_first if key(c) not in wanted),
        lost_top10=tuple(c for c in diff.lost_top10 if key(c) not in wanted),
        accepted=tuple({key(c): c for c in moved}.values()),
        stale_accepted=tuple(Stale(r, q, s) for r, q, s in accepted if (r, q, s) not in lost),
    )

"""Command lines the reports print for the reader to paste into a shell.

Apart from `explain`, which runs them, so that a report can say how to look closer at a
row without importing the code that looks.
"""

from __future__ import annotations

import shlex


def option(flag: str, value: str) -> str:
    """`--flag value`, or `--flag=value` where the value would read as a flag itself."""
    if value.startswith("-"):
        return shlex.quote(f"{flag}={value}")
    return f"{flag} {shlex.quote(value)}"


def explain_command(repo: str, query: str, source: str, kind: str, flags: str = "") -> str:
    """The explain command line for one report row, pasteable into a shell: the row's
    repo, query, source and type name it exactly (two rows of one query differ in their
    source), and `flags` (run.explain_flags: the finder, engine, binaries and data files,
    absolute) make it run the same binaries from any folder. A query that starts with `-`
    goes last, after `--`, where it cannot read as a flag."""
    options = " ".join(
        option(flag, value)
        for flag, value in (("--repo", repo), ("--source", source), ("--type", kind))
        if value
    )
    tail = f" {flags}" if flags else ""
    if query.startswith("-"):
        return f"recall explain {options}{tail} -- {shlex.quote(query)}"
    return f"recall explain {shlex.quote(query)} {options}{tail}"

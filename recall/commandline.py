"""Command lines the reports print for the reader to paste into a shell.

Apart from `explain`, which runs them, so that a report can say how to look closer at a
row without importing the code that looks.
"""

from __future__ import annotations

import shlex


def explain_command(repo: str, query: str, extra: str = "") -> str:
    """The explain command line for a report row, pasteable into a shell."""
    line = f"recall explain {shlex.quote(query)} --repo {shlex.quote(repo)}"
    return f"{line} {extra}".rstrip()

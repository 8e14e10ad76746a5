"""Command lines the reports print for the reader to paste into a shell.

Apart from `explain`, which runs them, so that a report can say how to look closer at a
row without importing the code that looks.
"""

from __future__ import annotations

import shlex

from recall.terminal import has_control


def shell_quote(text: str) -> str:
    """text as one shell word that pastes back as exactly text: shlex's quoting, or, for
    text holding a control or bidirectional character (which a report must not print raw),
    bash's `$'...'` with that character as an escape (`$'q\\x1b'`; `\\u009b` above ASCII,
    since bash's `\\xHH` is one byte, not the character)."""
    if not has_control(text):
        return shlex.quote(text)
    escaped = "".join(
        "\\\\" if c == "\\" else "\\'" if c == "'" else
        (f"\\x{ord(c):02x}" if ord(c) < 0x80 else f"\\u{ord(c):04x}")
        if has_control(c) else c
        for c in text
    )  # fmt: skip
    return f"$'{escaped}'"


def explain_command(repo: str, query: str, extra: str = "") -> str:
    """The explain command line for a report row, pasteable into a shell."""
    line = f"recall explain {shell_quote(query)} --repo {shell_quote(repo)}"
    return f"{line} {extra}".rstrip()

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


def option(flag: str, value: str) -> str:
    """`--flag value`, or `--flag=value` where the value would read as a flag itself."""
    if value.startswith("-"):
        return shell_quote(f"{flag}={value}")
    return f"{flag} {shell_quote(value)}"


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
        return f"recall explain {options}{tail} -- {shell_quote(query)}"
    return f"recall explain {shell_quote(query)} {options}{tail}"

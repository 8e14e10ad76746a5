"""Text that reaches a terminal: names, queries and finder output shown, never obeyed.

A name in a top 10, a query, a source or a finder's stderr is data from a corpus or a
program; written raw, an ESC in it would recolour, move the cursor or retitle the window,
a BEL would ring, and a tab or newline would break a table. So every C0 and C1 control
character and DEL is shown as its Python escape (`\\x1b`, `\\x07`, `\\t`), as repr would;
the JSON report keeps the exact string.
"""

from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_CONTROL_BUT_LAYOUT = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _escaped(match: re.Match[str]) -> str:
    return repr(match.group())[1:-1]


def shown(text: str) -> str:
    """One field for a table cell or a line: every control character escaped, tab and
    newline included, so the field stays on its line and in its column."""
    return _CONTROL.sub(_escaped, text)


def safe_output(text: str) -> str:
    """A whole rendered report: every control character escaped except the tab and
    newline that lay it out, so nothing a field missed reaches the terminal raw."""
    return _CONTROL_BUT_LAYOUT.sub(_escaped, text)

"""Text that reaches a terminal: names, queries and finder output shown, never obeyed.

A name in a top 10, a query, a source or a finder's stderr is data from a corpus or a
program; written raw, an ESC in it would recolour, move the cursor or retitle the window,
a BEL would ring, a tab or newline would break a table, and a bidirectional control
(U+202E) would make the rest of the line read backwards, so a name shows as another. So
every C0 and C1 control character, DEL and the bidirectional controls are shown as their
Python escapes (`\\x1b`, `\\x07`, `\\t`, `\\u202e`), as repr would; the JSON report keeps
the exact string. This is the one rule for every medium: Markdown and HTML apply it first
(recall/render/escape.py).
"""

from __future__ import annotations

import re

# The bidirectional controls: marks (U+061C, U+200E, U+200F), embeddings and overrides
# (U+202A-U+202E), isolates (U+2066-U+2069); and the line and paragraph separators.
_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029"
_CONTROL = re.compile(f"[\x00-\x1f\x7f-\x9f{_BIDI}]")
_CONTROL_BUT_LAYOUT = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI}]")


def _escaped(match: re.Match[str]) -> str:
    return repr(match.group())[1:-1]


def has_control(text: str) -> bool:
    """Whether text holds a character that shown() would escape."""
    return _CONTROL.search(text) is not None


def shown(text: str) -> str:
    """One field for a table cell or a line: every control character escaped, tab and
    newline included, so the field stays on its line and in its column."""
    return _CONTROL.sub(_escaped, text)


def safe_output(text: str) -> str:
    """A whole rendered report: every control character escaped except the tab and
    newline that lay it out, so nothing a field missed reaches the terminal raw."""
    return _CONTROL_BUT_LAYOUT.sub(_escaped, text)

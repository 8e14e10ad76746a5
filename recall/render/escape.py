"""Text from outside, escaped for the medium it enters: Markdown and HTML (the terminal's
rule, `recall.terminal.shown`, comes first in both).

Names, queries and files come from a corpus, stderr from a finder, subjects from a
repository's commits, labels and paths from the command line: a stranger wrote them. In a
report they must read as the text they are, and do nothing: no tag, no table broken, no
link, no emphasis, no reordered line. So:
- every medium: C0 and C1 control characters, DEL and the bidirectional controls shown
  as their Python escapes (`\\x1b`, `\\u202e`), as `shown` does;
- HTML: then `&`, `<`, `>`, `"` and `'` as entities, in text and in attribute values;
- Markdown: then `&`, `<` and `>` as entities (no raw HTML, no `<...>` autolink), a
  backslash before every character that Markdown reads as syntax inside a line
  (backslash, backtick, `*`, `~`, `[`, `]`, `|`, an `_` that is not inside a word, and
  the `@` of an email address), and before the colon of a URL scheme (`https\\:`,
  `javascript\\:`) and the dot of `www.`, so that no text becomes a link, an email or an
  image. Rendered, the text reads as it was; raw, it holds those backslashes.
"""

from __future__ import annotations

import re
from html import escape

from recall.terminal import shown

_MARKDOWN_SYNTAX = re.compile(
    r"[\\`*~\[\]|]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])|(?<=[\w.+-])@(?=[\w-]+\.\w)"
)
# the schemes GFM links bare (http, https, ftp; mailto and xmpp as emails), and the ones
# a link must never carry
_SCHEME = re.compile(r"(?i)\b(https?|ftp|mailto|xmpp|javascript|vbscript|data|file)(:)")
_WWW = re.compile(r"(?i)\bwww\.")


class Markdown(str):
    """Markdown written by recall itself (a code span, a preset's note), which a table
    puts in a cell as it is."""

    __slots__ = ()


def html(value: object) -> str:
    """value as HTML text or a quoted attribute's value."""
    return escape(shown(str(value)), quote=True)


def markdown(text: str) -> str:
    """text as Markdown that reads as the text and does nothing else, on one line."""
    text = shown(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = _MARKDOWN_SYNTAX.sub(lambda m: "\\" + m.group(), text)
    text = _SCHEME.sub(lambda m: m.group(1) + "\\:", text)
    return _WWW.sub(lambda m: m.group()[:3] + "\\.", text)


def said(text: str, in_markdown: bool) -> str:
    """A string from outside (a label, a name, a path, stderr) inside a line of prose:
    escaped for Markdown, or shown on one line in text."""
    return markdown(text) if in_markdown else shown(text)


def code_span(text: str) -> Markdown:
    """text as a Markdown code span: shown literally, whatever it holds. The fence is one
    backtick longer than the longest run inside; a pipe is escaped, as GFM tables need
    even inside code (and render without the backslash)."""
    text = shown(text)
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    inside = text.replace("|", "\\|")
    return Markdown(f"{fence}{pad}{inside}{pad}{fence}")

"""How the finder reads a character: its class, its folded form, its bit in a name's
character set. The index (arrays.py) folds the names with these rules and the queries
(rank.py) fold the query with them, so both sides match alike; kernel.c's char_bit is
char_bit's twin."""

from __future__ import annotations

OTHER, LOWER, UPPER, DIGIT, LETTER = range(5)  # LETTER: a letter without case


def fold(c: str) -> str:
    """Lowercase one character, keeping it one character so positions stay aligned."""
    low = c.lower()
    return low if len(low) == 1 else c


def squash(text: str) -> str:
    """The lowercase letters and digits of a name: matching ignores case and separators."""
    if text.isascii():  # the common case, where lower() is fold() of every character
        return "".join(filter(str.isalnum, text.lower()))
    return "".join(fold(c) for c in text if c.isalnum())


def char_bit(code: int) -> int:
    """The bit of a folded character in a name's character-set mask."""
    if 97 <= code <= 122:
        return 1 << (code - 97)
    if 48 <= code <= 57:
        return 1 << (26 + code - 48)
    return 1 << (36 + code % 28)


def classify(code: int) -> tuple[int, int]:
    """Character class and folded code of one code point."""
    c = chr(code)
    if not c.isalnum():
        return OTHER, code
    if c.isdigit():
        kind = DIGIT
    elif c.isupper():
        kind = UPPER
    elif c.islower():
        kind = LOWER
    else:
        kind = LETTER
    return kind, ord(fold(c))

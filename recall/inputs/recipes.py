"""The recipes: every query type derive makes, in one registry that derive, ceiling and
queryset read (docs/queries.md has the recipes and why each is there).

A recipe is a pure function of a name (its words, and for a seeded choice the seed; for
`qualified` its owner and the corpus's language), so a row can be reproduced from its
source alone. Each seeded choice draws from a generator of its own (draw), so a row never
depends on the order rows are made in. A recipe's place in RECIPES is its order: the order
derive makes a name's rows in, and the order reports list the types in; its set is the
query set it makes (`default`, queries.tsv, or `typed`, typed.tsv); its draw is how the
ceiling counts the names that could have made a query (analysis.ceiling): `one` answer
per name, a uniform `choice` among `choices(words)`, or `inverted` from the query.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass

VOWELS = frozenset("aeiou")

# A word inside an alphanumeric run: a capital run before a capitalised word, a
# (capitalised) lowercase word, a capital run, or digits alone; digits that follow a
# word stay with it.
_WORD = re.compile(r"[A-Z]+(?=[A-Z][^\W\d_A-Z])\d*|[A-Z]?[^\W\d_A-Z]+\d*|[A-Z]+\d*|\d+")
_ALNUM_RUN = re.compile(r"[^\W_]+")


def is_searchable(name: str) -> bool:
    """A name a person could type: it holds a letter, and no tab or newline."""
    return (
        any(c.isalpha() for c in name)
        and "\t" not in name
        and "\n" not in name
        and "\r" not in name
        and name != "self"
    )


def words(name: str) -> list[str]:
    """Split a name into lowercase words (`HTTPServer` -> http, server)."""
    return [word.lower() for run in _ALNUM_RUN.findall(name) for word in _WORD.findall(run)]


def abbreviation(parts: list[str], width: int) -> str:
    return "".join(part[:width] for part in parts)


def first_last(parts: list[str]) -> str | None:
    return parts[0][:3] + parts[-1] if len(parts) >= 2 else None


def consonants(parts: list[str]) -> str | None:
    joined = "".join(parts)
    if not joined:
        return None
    return (joined[0] + "".join(c for c in joined[1:] if c not in VOWELS))[:6]


def swap_positions(lowered: str) -> list[int]:
    """Where a transposition changes the string: before two adjacent, different characters."""
    return [i for i in range(len(lowered) - 1) if lowered[i] != lowered[i + 1]]


def swapped(lowered: str, i: int) -> str:
    return lowered[:i] + lowered[i + 1] + lowered[i] + lowered[i + 2 :]


def typo(name: str, seed: int) -> str | None:
    """Swap two adjacent, different characters at a position drawn from (seed, name)."""
    lowered = name.lower()
    positions = swap_positions(lowered)
    if not positions:
        return None
    return swapped(lowered, random.Random(f"{seed}\0{name}").choice(positions))


def glob(parts: list[str]) -> str | None:
    return f"{parts[0][:3]}*{parts[-1][:3]}" if len(parts) >= 2 else None


# Keys next to each letter and digit on a QWERTY keyboard (rows staggered as on a real
# one): where a finger lands when it misses.
QWERTY_NEIGHBOURS = {
    "1": "2q", "2": "13qw", "3": "24we", "4": "35er", "5": "46rt", "6": "57ty", "7": "68yu",
    "8": "79ui", "9": "80io", "0": "9op",
    "q": "12wa", "w": "23qeas", "e": "34wrsd", "r": "45etdf", "t": "56ryfg", "y": "67tugh",
    "u": "78yihj", "i": "89uojk", "o": "90ipkl", "p": "0ol",
    "a": "qwsz", "s": "weadzx", "d": "ersfxc", "f": "rtdgcv", "g": "tyfhvb", "h": "yugjbn",
    "j": "uihknm", "k": "iojlm", "l": "opk",
    "z": "asx", "x": "sdzc", "c": "dfxv", "v": "fgcb", "b": "ghvn", "n": "hjbm", "m": "jkn",
}  # fmt: skip
PREFIX_MIN, PREFIX_MAX = 2, 8
COLONS_LANGUAGES = frozenset({"ruby", "rust", "c++"})  # Owner::name; the others Owner.name


def draw(seed: int, kind: str, name: str) -> random.Random:
    """The generator for one recipe of one name: rows never depend on sampling order."""
    return random.Random(f"{seed}\0{kind}\0{name}")


def prefix_lengths(lowered: str) -> range:
    """Progressive typing stops after 2 to 8 characters, never at the whole name."""
    return range(PREFIX_MIN, min(PREFIX_MAX, len(lowered) - 1) + 1)


def prefix(name: str, seed: int) -> str | None:
    lowered = name.lower()
    lengths = prefix_lengths(lowered)
    if not lengths:
        return None
    return lowered[: draw(seed, "prefix", name).choice(lengths)]


def one_word(parts: list[str], name: str, seed: int) -> str | None:
    """A word that is not the first: what someone remembers of a long name."""
    return draw(seed, "word", name).choice(parts[1:]) if len(parts) >= 2 else None


def word_pairs(parts: list[str]) -> list[str]:
    """Every two words of a name in their order, as typed with fzf's AND space."""
    return [f"{parts[i]} {parts[j]}" for i in range(len(parts)) for j in range(i + 1, len(parts))]


def two_words(parts: list[str], name: str, seed: int) -> str | None:
    pairs = word_pairs(parts)
    return draw(seed, "words", name).choice(pairs) if pairs else None


def qualified(name: str, owner: str | None, language: str) -> str | None:
    if not owner:
        return None
    return f"{owner}{'::' if language in COLONS_LANGUAGES else '.'}{name}"


def keyed_positions(lowered: str) -> list[int]:
    """Where a typing slip can happen: positions of letters and digits (ASCII keys)."""
    return [i for i, c in enumerate(lowered) if c in QWERTY_NEIGHBOURS]


def drop(name: str, seed: int) -> str | None:
    lowered = name.lower()
    positions = keyed_positions(lowered)
    if not positions:
        return None
    i = draw(seed, "drop", name).choice(positions)
    return lowered[:i] + lowered[i + 1 :]


def double(name: str, seed: int) -> str | None:
    lowered = name.lower()
    positions = keyed_positions(lowered)
    if not positions:
        return None
    i = draw(seed, "double", name).choice(positions)
    return lowered[: i + 1] + lowered[i:]


def neighbour(name: str, seed: int) -> str | None:
    lowered = name.lower()
    positions = keyed_positions(lowered)
    if not positions:
        return None
    rng = draw(seed, "neighbour", name)
    i = rng.choice(positions)
    return lowered[:i] + rng.choice(QWERTY_NEIGHBOURS[lowered[i]]) + lowered[i + 1 :]


def other_case(name: str, parts: list[str]) -> str | None:
    """The name in the other convention: with `_` in camelCase, else in snake_case."""
    if len(parts) < 2:
        return None
    if "_" in name:
        return parts[0] + "".join(part[:1].upper() + part[1:] for part in parts[1:])
    return "_".join(parts)


# A recipe's arguments: the name, its words, the seed, its scope owner and the language.
Make = Callable[[str, list[str], int, "str | None", str], "str | None"]


@dataclass(frozen=True)
class Recipe:
    type: str  # the query set's `type` column
    recipe_set: str  # the set it makes: "default" (queries.tsv) or "typed" (typed.tsv)
    make: Make
    draw: str  # "one", "choice" or "inverted": how the ceiling counts its names
    choices: Callable[[list[str]], list[str]] | None = None  # a "choice" draw's options


RECIPES = (
    Recipe("abbr3", "default", lambda name, parts, seed, *_: abbreviation(parts, 3), "one"),
    Recipe("abbr2", "default", lambda name, parts, seed, *_: abbreviation(parts, 2), "one"),
    Recipe("first+last", "default", lambda name, parts, seed, *_: first_last(parts), "one"),
    Recipe("consonants", "default", lambda name, parts, seed, *_: consonants(parts), "one"),
    Recipe("typo", "default", lambda name, parts, seed, *_: typo(name, seed), "inverted"),
    Recipe("glob", "default", lambda name, parts, seed, *_: glob(parts), "one"),
    Recipe("prefix", "typed", lambda name, parts, seed, *_: prefix(name, seed), "inverted"),
    Recipe(
        "word", "typed", lambda name, parts, seed, *_: one_word(parts, name, seed),
        "choice", lambda parts: parts[1:],
    ),
    Recipe(
        "words", "typed", lambda name, parts, seed, *_: two_words(parts, name, seed),
        "choice", word_pairs,
    ),
    Recipe(
        "qualified", "typed", lambda name, parts, seed, owner, lang: qualified(name, owner, lang),
        "one",
    ),
    Recipe("drop", "typed", lambda name, parts, seed, *_: drop(name, seed), "inverted"),
    Recipe("double", "typed", lambda name, parts, seed, *_: double(name, seed), "inverted"),
    Recipe(
        "neighbour", "typed", lambda name, parts, seed, *_: neighbour(name, seed),
        "inverted",
    ),
    Recipe("case", "typed", lambda name, parts, seed, *_: other_case(name, parts), "one"),
)  # fmt: skip
RECIPE = {recipe.type: recipe for recipe in RECIPES}
RECIPE_SETS = ("default", "typed")


def set_types(recipe_set: str) -> tuple[str, ...]:
    """The types a recipe set makes, in their order."""
    return tuple(recipe.type for recipe in RECIPES if recipe.recipe_set == recipe_set)


def make_queries(
    recipe_set: str, name: str, seed: int, owner: str | None = None, language: str = ""
) -> list[tuple[str, str]]:
    """Every (type, query) of a set's recipes that applies to name, in their order."""
    parts = words(name)
    if not parts:
        return []
    made = (
        (recipe.type, recipe.make(name, parts, seed, owner, language))
        for recipe in RECIPES
        if recipe.recipe_set == recipe_set
    )
    return [(kind, query) for kind, query in made if query]

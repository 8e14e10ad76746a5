"""The query generator: sloppy queries derived from real names, whose name is the truth.

Recipes are pure functions of a name (and, for the typo, a seed), so a row can be
reproduced from its source alone (`recall derive recipes --seed S NAME`). Sampling orders
names by a seeded hash, so the rows for a repo depend only on its names, the seed and N.
"""

from __future__ import annotations

import bisect
import hashlib
import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import orjson

from recall.errors import RecallError
from recall.inputs.corpus import Pin
from recall.inputs.queryset import DERIVED_TYPES, HAND, TYPED_TYPES, QueryRow
from recall.inputs.symbols import Symbol, distinct_names, is_searchable

DEFAULT_SEED = 1
MIN_LETTERS = 5
RECIPE_SETS = ("default", "typed")
VOWELS = frozenset("aeiou")

# A word inside an alphanumeric run: a capital run before a capitalised word, a
# (capitalised) lowercase word, a capital run, or digits alone; digits that follow a
# word stay with it.
_WORD = re.compile(r"[A-Z]+(?=[A-Z][^\W\d_A-Z])\d*|[A-Z]?[^\W\d_A-Z]+\d*|[A-Z]+\d*|\d+")
_ALNUM_RUN = re.compile(r"[^\W_]+")
_SCOPE_PARTS = re.compile(r"\.|::")


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


def recipes(name: str, seed: int = DEFAULT_SEED) -> list[tuple[str, str]]:
    """Every (type, query) that applies to name, in the order of DERIVED_TYPES."""
    parts = words(name)
    if not parts:
        return []
    makers: dict[str, Callable[[], str | None]] = {
        "abbr3": lambda: abbreviation(parts, 3),
        "abbr2": lambda: abbreviation(parts, 2),
        "first+last": lambda: first_last(parts),
        "consonants": lambda: consonants(parts),
        "typo": lambda: typo(name, seed),
        "glob": lambda: glob(parts),
    }
    made = ((kind, makers[kind]()) for kind in DERIVED_TYPES)
    return [(kind, query) for kind, query in made if query]


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


def typed_recipes(
    name: str, seed: int = DEFAULT_SEED, owner: str | None = None, language: str = ""
) -> list[tuple[str, str]]:
    """Every (type, query) of the typed set that applies to name, in TYPED_TYPES order;
    owner is the name's ctags scope owner (for `qualified`), language the corpus's."""
    parts = words(name)
    if not parts:
        return []
    makers: dict[str, Callable[[], str | None]] = {
        "prefix": lambda: prefix(name, seed),
        "word": lambda: one_word(parts, name, seed),
        "words": lambda: two_words(parts, name, seed),
        "qualified": lambda: qualified(name, owner, language),
        "drop": lambda: drop(name, seed),
        "double": lambda: double(name, seed),
        "neighbour": lambda: neighbour(name, seed),
        "case": lambda: other_case(name, parts),
    }
    made = ((kind, makers[kind]()) for kind in TYPED_TYPES)
    return [(kind, query) for kind, query in made if query]


class PrefixIndex:
    """Answers "does any name start with q?" case-insensitively in O(log n)."""

    def __init__(self, names: list[str]) -> None:
        self._lowered = sorted({name.lower() for name in names})

    def has_prefix(self, query: str) -> bool:
        q = query.lower()
        i = bisect.bisect_left(self._lowered, q)
        return i < len(self._lowered) and self._lowered[i].startswith(q)


def eligible(name: str) -> bool:
    return is_searchable(name) and sum(c.isalpha() for c in name) >= MIN_LETTERS


def sample_names(names: list[str], n: int, seed: int) -> list[str]:
    """N distinct eligible names, ordered by a seeded hash: growing N only appends."""

    def draw(name: str) -> bytes:
        return hashlib.sha256(f"{seed}\0{name}".encode()).digest()

    pool = sorted({name for name in names if eligible(name)}, key=lambda nm: (draw(nm), nm))
    return pool[:n]


@dataclass(frozen=True)
class NameSource:
    """What a corpus offers the generator: its distinct names, each scoped name's owner
    (the last part of the ctags scope of its first scoped definition), its language."""

    names: list[str]
    owners: dict[str, str]
    language: str


def name_source(symbols: list[Symbol], language: str) -> NameSource:
    owners: dict[str, str] = {}
    for symbol in symbols:  # sorted by path and line: the first definition wins
        if symbol.scope and symbol.name not in owners:
            owners[symbol.name] = _SCOPE_PARTS.split(symbol.scope)[-1]
    return NameSource(distinct_names(symbols), owners, language)


def derive_typed_rows(repo: str, source: NameSource, n: int, seed: int) -> list[QueryRow]:
    """The typed set's rows for n sampled names (no prefix rule: prefixes are the point)."""
    rows = []
    for name in sample_names(source.names, n, seed):
        for kind, query in typed_recipes(name, seed, source.owners.get(name), source.language):
            rows.append(QueryRow(repo, query, kind, name))
    return rows


def derive_set_rows(
    recipe_set: str, repo: str, source: NameSource, n: int, seed: int
) -> list[QueryRow]:
    if recipe_set == "typed":
        return derive_typed_rows(repo, source, n, seed)
    return derive_rows(repo, source.names, n, seed)


def derive_rows(repo: str, names: list[str], n: int, seed: int) -> list[QueryRow]:
    """The rows for n sampled names; non-glob queries that are a name prefix are dropped."""
    index = PrefixIndex(names)
    rows = []
    for name in sample_names(names, n, seed):
        for kind, query in recipes(name, seed):
            if kind == "glob" or not index.has_prefix(query):
                rows.append(QueryRow(repo, query, kind, name))
    return rows


@dataclass(frozen=True)
class RepoSettings:
    n: int
    seed: int


def load_settings(path: Path, pins: dict[str, Pin]) -> dict[str, RepoSettings]:
    """derive.json: {"repos": {NAME: {"n": N, "seed": S}}}, in corpus order."""
    try:
        data = orjson.loads(path.read_bytes())
    except OSError as exc:
        raise RecallError(f"{path}: cannot read: {exc.strerror}") from None
    except orjson.JSONDecodeError as exc:
        raise RecallError(f"{path}: not JSON: {exc}") from None
    repos = data.get("repos") if isinstance(data, dict) else None
    if not isinstance(repos, dict):
        raise RecallError(f'{path}: expected {{"repos": {{NAME: {{"n": N, "seed": S}}}}}}')
    settings = {}
    for name, entry in repos.items():
        if name not in pins:
            raise RecallError(f"{path}: repo {name!r} is not in the corpus pins")
        if not isinstance(entry, dict) or set(entry) != {"n", "seed"}:
            raise RecallError(f"{path}: repo {name!r}: expected exactly the keys n and seed")
        if not all(
            isinstance(entry[k], int) and not isinstance(entry[k], bool) and entry[k] >= 0
            for k in ("n", "seed")
        ):  # a bool is an int to Python: "n": true would sample one name
            raise RecallError(f"{path}: repo {name!r}: n and seed must be whole numbers")
        settings[name] = RepoSettings(entry["n"], entry["seed"])
    return {name: settings[name] for name in pins if name in settings}


def read_recipe_set(path: Path) -> str:
    """Which recipes a settings file's query set is made with: its `recipes` key, else
    the default six types."""
    try:
        data = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return "default"  # load_settings reports the file's problem
    recipe_set = data.get("recipes", "default") if isinstance(data, dict) else "default"
    if recipe_set not in RECIPE_SETS:
        raise RecallError(
            f"{path}: recipes must be one of {', '.join(RECIPE_SETS)}, got {recipe_set!r}"
        )
    return recipe_set


def derive_all(
    sources: dict[str, NameSource],
    settings: dict[str, RepoSettings],
    existing: list[QueryRow],
    recipe_set: str = "default",
) -> list[QueryRow]:
    """The whole query set: each repo's derived rows, then its hand rows as they were."""
    rows: list[QueryRow] = []
    for repo, conf in settings.items():
        rows += derive_set_rows(recipe_set, repo, sources[repo], conf.n, conf.seed)
        rows += [r for r in existing if r.repo == repo and r.type == HAND]
    rows += [r for r in existing if r.type == HAND and r.repo not in settings]
    return rows

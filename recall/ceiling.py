"""The ceiling of a query set: the best #1 and top 10 that any finder can expect.

Several names can yield one query (`tstcnt` comes from `test_count` and `TestContent`).
Given only the query, the intended name is any of those k names, so no finder can expect
to rank it first more than once in k, nor in its top 10 more than min(1, 10/k) of the
time. k counts the names that sampling could pick (the eligible ones) from which the
row's type yields exactly that query, over every choice a seeded recipe could have made
(every swap for `typo`, every length for `prefix`, every slip for `drop`, `double` and
`neighbour`...). No finder runs: the ceiling is a property of the query set alone.

Recipes that make one query per name are run forwards over every name. Those that could
make many are inverted: the names a query could have come from are built from the query
and looked up, so a corpus of 30,000 names costs a few hundred lookups per query rather
than every variant of every name.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from recall.derive import (
    PREFIX_MAX,
    PREFIX_MIN,
    QWERTY_NEIGHBOURS,
    NameSource,
    abbreviation,
    consonants,
    eligible,
    first_last,
    glob,
    keyed_positions,
    other_case,
    qualified,
    swap_positions,
    swapped,
    word_pairs,
    words,
)
from recall.queryset import QueryRow

TOP = 10
# One query per name: run forwards.
_SINGLE: dict[str, Callable[[str, list[str], NameSource], str | None]] = {
    "abbr3": lambda name, parts, source: abbreviation(parts, 3),
    "abbr2": lambda name, parts, source: abbreviation(parts, 2),
    "first+last": lambda name, parts, source: first_last(parts),
    "consonants": lambda name, parts, source: consonants(parts),
    "glob": lambda name, parts, source: glob(parts),
    "qualified": lambda name, parts, source: qualified(
        name, source.owners.get(name), source.language
    ),
    "case": lambda name, parts, source: other_case(name, parts),
}
# Several queries per name, each a set of strings: run forwards over words.
_MANY: dict[str, Callable[[list[str]], Iterable[str]]] = {
    "word": lambda parts: set(parts[1:]),
    "words": lambda parts: set(word_pairs(parts)),
}
INVERTED = ("typo", "prefix", "drop", "double", "neighbour")
KINDS = (*_SINGLE, *_MANY, *INVERTED)


class _Names:
    """One corpus's eligible names, lowercased and counted (two names may share one)."""

    def __init__(self, source: NameSource) -> None:
        self.source = source
        self.eligible = [name for name in source.names if eligible(name)]
        self.lowered = Counter(name.lower() for name in self.eligible)
        self.sorted_lowered = sorted(self.eligible, key=str.lower)
        self.keys = [name.lower() for name in self.sorted_lowered]

    def count(self, candidates: Iterable[str]) -> int:
        return sum(self.lowered[c] for c in set(candidates))

    def forwards(self, kinds: set[str]) -> dict[str, Counter[str]]:
        """For each of kinds, how many eligible names yield each query (one pass)."""
        made: dict[str, Counter[str]] = {kind: Counter() for kind in kinds}
        single = [(kind, _SINGLE[kind]) for kind in kinds if kind in _SINGLE]
        many = [(kind, _MANY[kind]) for kind in kinds if kind in _MANY]
        for name in self.eligible:
            parts = words(name)
            if not parts:
                continue
            for kind, recipe in single:
                query = recipe(name, parts, self.source)
                if query:
                    made[kind][query] += 1
            for kind, queries in many:
                made[kind].update(queries(parts))
        return made

    def inverted(self, kind: str, query: str) -> int:
        """How many eligible names a typo, prefix or slip of `kind` turns into query."""
        if kind == "typo":  # a swap undoes itself
            return self.count(swapped(query, i) for i in swap_positions(query))
        if kind == "prefix":  # every longer name that starts with it (not the whole name)
            if len(query) not in range(PREFIX_MIN, PREFIX_MAX + 1):
                return 0
            start = bisect.bisect_left(self.keys, query)
            end = bisect.bisect_left(self.keys, query + "\U0010ffff")
            return end - start - self.lowered[query]
        if kind == "drop":  # the name is the query with one key pressed back in
            return self.count(
                query[:i] + key + query[i:] for i in range(len(query) + 1)
                for key in QWERTY_NEIGHBOURS
            )  # fmt: skip
        if kind == "double":
            return self.count(
                query[:i] + query[i + 1 :] for i in keyed_positions(query)
                if i + 1 < len(query) and query[i] == query[i + 1]
            )  # fmt: skip
        if kind == "neighbour":  # the table is symmetric: the query's key's neighbours
            return self.count(
                query[:i] + key + query[i + 1 :] for i in keyed_positions(query)
                for key in QWERTY_NEIGHBOURS[query[i]]
            )  # fmt: skip
        raise ValueError(kind)


def ambiguity(rows: list[QueryRow], sources: dict[str, NameSource]) -> dict[QueryRow, int]:
    """k for every sourced row whose type has a recipe: how many eligible names of its
    corpus yield its query under its type (at least 1, its source)."""
    ks: dict[QueryRow, int] = {}
    for repo in dict.fromkeys(row.repo for row in rows):
        mine = [row for row in rows if row.repo == repo and row.sourced and row.type in KINDS]
        if not mine:
            continue
        names = _Names(sources[repo])
        forwards = names.forwards({row.type for row in mine} - set(INVERTED))
        for row in mine:
            if row.type in forwards:
                k = forwards[row.type][row.query]
            else:
                k = names.inverted(row.type, row.query)
            if k:
                ks[row] = k
    return ks


@dataclass(frozen=True)
class Ceiling:
    """Expected counts at best: `first` and `top10` are sums of 1/k and min(1, 10/k)."""

    n: int
    first: float
    top10: float

    @property
    def first_pct(self) -> float:
        return 100.0 * self.first / self.n if self.n else 0.0

    @property
    def top10_pct(self) -> float:
        return 100.0 * self.top10 / self.n if self.n else 0.0


def ceiling(ks: Iterable[int]) -> Ceiling:
    values = list(ks)
    return Ceiling(
        len(values), sum(1.0 / k for k in values), sum(min(1.0, TOP / k) for k in values)
    )


def ceilings(
    rows: list[QueryRow], ks: dict[QueryRow, int], languages: dict[str, str]
) -> dict[str, dict[str, Ceiling]]:
    """The ceiling overall and by type, repo and language, over the rows that have a k."""
    groups: dict[str, dict[str, list[int]]] = {
        "all": {}, "type": {}, "repo": {}, "language": {},
    }  # fmt: skip
    for row in rows:
        k = ks.get(row)
        if k is None:
            continue
        keys = {"all": "all", "type": row.type, "repo": row.repo, "language": languages[row.repo]}
        for axis, key in keys.items():
            groups[axis].setdefault(key, []).append(k)
    return {axis: {key: ceiling(v) for key, v in by.items()} for axis, by in groups.items()}

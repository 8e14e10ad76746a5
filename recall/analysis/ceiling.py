"""The ceiling of a query set: the best #1 and top 10 that any finder can expect.

Several names can yield one query (`tstcnt` comes from `test_count` and `TestContent`).
Given only the query, the intended name is one of those k names, drawn as sampling and
the recipe draw them: each eligible name is equally likely to be sampled, and yields the
query with the probability its recipe's seeded choice has of making it (1 for a recipe
with one answer; 1/9 for a typo of a name with nine swap positions). The best a finder
can do is rank names by that likelihood, so it is right first with probability
max(p) / sum(p), and in its top 10 with the sum of the 10 largest p over sum(p). For
one-answer recipes that is 1/k and min(1, 10/k), the spec's formula; for recipes that
choose (typo, prefix, word, words and the slips) a 1/k ceiling would not be one, since a
name with fewer choices is likelier to be the source (the reference finder beat it by 6
points on `words`). No finder runs: the ceiling is a property of the query set alone.

Recipes with one answer per name run forwards over every name; `word` and `words`
forwards over each name's words. The others are inverted: the names a query could have
come from are built from the query and looked up, a few hundred lookups per query rather
than every variant of every name of a 30,000-name corpus.
"""

from __future__ import annotations

import bisect
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from recall.analysis.model import (
    LEFT_OUT_SHOWN,
    CeilingCounts,
    CeilingSummary,
    LeftOut,
    LeftOutRows,
)
from recall.analysis.stats import interval, standard_error
from recall.inputs.derive import NameSource, eligible
from recall.inputs.queryset import QueryRow
from recall.inputs.recipes import (
    PREFIX_MAX,
    PREFIX_MIN,
    QWERTY_NEIGHBOURS,
    RECIPES,
    keyed_positions,
    prefix_lengths,
    swap_positions,
    swapped,
    words,
)

TOP = 10
# How each recipe's draws are counted (recall.inputs.recipes): one answer per name, run
# forwards with likelihood 1; a uniform choice among a name's words or pairs of words, run
# forwards over them; or inverted from the query (likelihood, _Names.inverted).
_SINGLE = {r.type: r.make for r in RECIPES if r.draw == "one"}
_CHOICES = {r.type: r.choices for r in RECIPES if r.draw == "choice" and r.choices}
INVERTED = tuple(r.type for r in RECIPES if r.draw == "inverted")
KINDS = (*_SINGLE, *_CHOICES, *INVERTED)
UNSEEDED = 0  # the seed given to a one-answer recipe, which draws nothing


def likelihood(kind: str, name: str, query: str) -> float:
    """The probability that an inverted recipe of `kind`, its seeded choices drawn
    uniformly as derive draws them, makes query from name."""
    low = name.lower()
    if kind == "prefix":
        lengths = prefix_lengths(low)
        return 1 / len(lengths) if len(query) in lengths and low.startswith(query) else 0.0
    if kind == "typo":
        positions = swap_positions(low)
        ways: float = sum(1 for i in positions if swapped(low, i) == query)
        return ways / len(positions) if positions else 0.0
    positions = keyed_positions(low)
    if not positions:
        return 0.0
    if kind == "drop":
        ways = sum(1 for i in positions if low[:i] + low[i + 1 :] == query)
    elif kind == "double":
        ways = sum(1 for i in positions if low[: i + 1] + low[i:] == query)
    else:  # neighbour: one position, then one of its keys
        if len(low) != len(query):
            return 0.0
        differ = [i for i in range(len(low)) if low[i] != query[i]]
        keys = QWERTY_NEIGHBOURS.get(low[differ[0]], "") if len(differ) == 1 else ""
        ways = 1 / len(keys) if keys and query[differ[0]] in keys else 0.0
    return ways / len(positions)


class _Names:
    """One corpus's eligible names, and each lowercased form's names (two may share)."""

    def __init__(self, source: NameSource) -> None:
        self.source = source
        self.eligible = [name for name in source.names if eligible(name)]
        self.by_lower: dict[str, list[str]] = defaultdict(list)
        for name in self.eligible:
            self.by_lower[name.lower()].append(name)
        self.keys = sorted(self.by_lower)
        # for prefixes, per key: its length and how many names share it
        self.key_lengths = np.array([len(key) for key in self.keys], dtype=np.int64)
        self.key_names = np.array([len(self.by_lower[key]) for key in self.keys], dtype=np.int64)

    def forwards(self, asked: set[tuple[str, str]]) -> dict[tuple[str, str], list[float]]:
        """The likelihoods of every name for each asked (kind, query) of the forward
        kinds, in one pass over the names."""
        kinds = {kind for kind, _query in asked}
        single = [(kind, _SINGLE[kind]) for kind in kinds if kind in _SINGLE]
        choices = [(kind, _CHOICES[kind]) for kind in kinds if kind in _CHOICES]
        found: dict[tuple[str, str], list[float]] = defaultdict(list)
        owners, language = self.source.owners, self.source.language
        for name in self.eligible:
            parts = words(name)
            if not parts:
                continue
            for kind, recipe in single:
                query = recipe(name, parts, UNSEEDED, owners.get(name), language)
                if query and (kind, query) in asked:
                    found[(kind, query)].append(1.0)
            for kind, choose in choices:
                options = choose(parts)
                for query, ways in Counter(options).items():
                    if (kind, query) in asked:
                        found[(kind, query)].append(ways / len(options))
        return found

    def inverted(self, kind: str, query: str) -> list[float]:
        """The likelihoods of the names a typo, prefix or slip of `kind` turns into query."""
        if kind == "prefix":
            return self._prefixed(query)
        if kind == "typo":  # a swap undoes itself
            candidates: Iterable[str] = (swapped(query, i) for i in swap_positions(query))
        elif kind == "drop":  # the name is the query with one key pressed back in
            candidates = (
                query[:i] + key + query[i:] for i in range(len(query) + 1)
                for key in QWERTY_NEIGHBOURS
            )  # fmt: skip
        elif kind == "double":
            candidates = (
                query[:i] + query[i + 1 :] for i in keyed_positions(query)
                if i + 1 < len(query) and query[i] == query[i + 1]
            )  # fmt: skip
        else:  # neighbour: the table is symmetric, so the query's key's neighbours
            candidates = (
                query[:i] + key + query[i + 1 :] for i in keyed_positions(query)
                for key in QWERTY_NEIGHBOURS[query[i]]
            )  # fmt: skip
        found = []
        for lowered in set(candidates):
            for name in self.by_lower.get(lowered, ()):
                p = likelihood(kind, name, query)
                if p:
                    found.append(p)
        return found

    def _prefixed(self, query: str) -> list[float]:
        """Every longer name that starts with query, each likely 1 / its number of prefix
        lengths (prefix_lengths, in bulk: a 2-letter prefix starts thousands of names)."""
        if not PREFIX_MIN <= len(query) <= PREFIX_MAX:
            return []
        start = bisect.bisect_left(self.keys, query)
        end = bisect.bisect_left(self.keys, query + "\U0010ffff")
        lengths, counts = self.key_lengths[start:end], self.key_names[start:end]
        longer = lengths > len(query)
        choices = np.minimum(PREFIX_MAX, lengths[longer] - 1) - PREFIX_MIN + 1
        return np.repeat(1.0 / choices, counts[longer]).tolist()


@dataclass(frozen=True)
class RowCeiling:
    """One query's best chances: k names could have made it; `first` and `top10` are the
    probabilities that a finder ranking them by likelihood has the source there."""

    k: int
    first: float
    top10: float


def row_ceiling(likelihoods: list[float]) -> RowCeiling:
    ranked = sorted(likelihoods, reverse=True)
    total = sum(ranked)
    return RowCeiling(len(ranked), ranked[0] / total, sum(ranked[:TOP]) / total)


def yields(kind: str, name: str, query: str, source: NameSource) -> bool:
    """Whether the recipe of `kind` can make query from name (sampling could pick it, and
    some seeded choice of its recipe gives exactly that query)."""
    if not eligible(name) or kind not in KINDS:
        return False
    if kind in INVERTED:
        return likelihood(kind, name, query) > 0
    parts = words(name)
    if not parts:
        return False
    if kind in _CHOICES:
        return query in _CHOICES[kind](parts)
    return _SINGLE[kind](name, parts, UNSEEDED, source.owners.get(name), source.language) == query


def row_ceilings(
    rows: list[QueryRow], sources: dict[str, NameSource]
) -> dict[QueryRow, RowCeiling]:
    """The ceiling of every sourced row the recipes can model: its type has a recipe and
    some name makes its query. A row whose source is a name of the corpus must be one of
    them, or the choice model says nothing of it (a foreign file's `tstcnt` typed by hand
    as consonants of `parse_engine`): it has no ceiling, and the report leaves it out of
    both sides. A row whose source the corpus lacks is the caller's (not found, chance 0)."""
    result: dict[QueryRow, RowCeiling] = {}
    for repo in dict.fromkeys(row.repo for row in rows):
        mine = [row for row in rows if row.repo == repo and row.sourced and row.type in KINDS]
        if not mine:
            continue
        source = sources[repo]
        names = _Names(source)
        known = set(source.names)
        forwards = names.forwards({(r.type, r.query) for r in mine if r.type not in INVERTED})
        for row in mine:
            if row.source in known and not yields(row.type, row.source, row.query, source):
                continue
            if row.type in INVERTED:
                found = names.inverted(row.type, row.query)
            else:
                found = forwards.get((row.type, row.query), [])
            if found:
                result[row] = row_ceiling(found)
    return result


@dataclass(frozen=True)
class Ceiling:
    """Expected counts at best over n rows (sums of the rows' chances), their standard
    errors and 95% ranges."""

    n: int
    first: float
    top10: float
    first_se: float = 0.0
    top10_se: float = 0.0
    first_ci: tuple[int, int] = (0, 0)
    top10_ci: tuple[int, int] = (0, 0)

    @property
    def first_pct(self) -> float:
        return 100.0 * self.first / self.n if self.n else 0.0

    @property
    def top10_pct(self) -> float:
        return 100.0 * self.top10 / self.n if self.n else 0.0


def ceiling(rows: Iterable[RowCeiling]) -> Ceiling:
    picked = list(rows)
    firsts, tops = [r.first for r in picked], [r.top10 for r in picked]
    return Ceiling(
        len(picked), sum(firsts), sum(tops), standard_error(firsts), standard_error(tops),
        interval(firsts), interval(tops),
    )  # fmt: skip


def ceilings(
    rows: list[QueryRow], per_row: dict[QueryRow, RowCeiling], languages: dict[str, str]
) -> dict[str, dict[str, Ceiling]]:
    """The ceiling overall and by type, repo and language, over the rows that have one."""
    groups: dict[str, dict[str, list[RowCeiling]]] = {
        "all": {}, "type": {}, "repo": {}, "language": {},
    }  # fmt: skip
    for row in rows:
        chances = per_row.get(row)
        if chances is None:
            continue
        keys = {"all": "all", "type": row.type, "repo": row.repo, "language": languages[row.repo]}
        for axis, key in keys.items():
            groups[axis].setdefault(key, []).append(chances)
    return {axis: {key: ceiling(v) for key, v in by.items()} for axis, by in groups.items()}


def summary(
    rows: list[QueryRow], per_row: dict[QueryRow, RowCeiling], languages: dict[str, str]
) -> CeilingSummary:
    """The ceiling as a report holds it: overall and by type, repo and language, each
    with its expected counts at best (fractions: sums of chances), their percentages,
    standard errors and 95% ranges, over the sourced rows it can model; the others are
    named (`left_out`), and the report compares the finders with it on its rows alone."""

    def cell(c: Ceiling) -> CeilingCounts:
        return CeilingCounts(
            n=c.n,
            first=round(c.first, 2),
            top10=round(c.top10, 2),
            first_pct=round(c.first_pct, 1),
            top10_pct=round(c.top10_pct, 1),
            first_se=round(c.first_se, 2),
            top10_se=round(c.top10_se, 2),
            first_ci=c.first_ci,
            top10_ci=c.top10_ci,
        )

    by = ceilings(rows, per_row, languages)
    left_out = [row for row in rows if row.sourced and row not in per_row]

    def of(axis: str) -> dict[str, CeilingCounts]:
        return {key: cell(c) for key, c in by[axis].items()}

    return CeilingSummary(
        counts=cell(by["all"]["all"]) if by["all"] else cell(Ceiling(0, 0.0, 0.0)),
        by_type=of("type"),
        by_repo=of("repo"),
        by_language=of("language"),
        left_out=LeftOutRows(
            len(left_out),
            tuple(LeftOut(r.repo, r.query, r.type, r.source) for r in left_out[:LEFT_OUT_SHOWN]),
        ),
        unmodelled=frozenset((r.repo, r.query, r.type, r.source) for r in left_out),
    )


def encode_rows(rows: list[QueryRow], per_row: dict[QueryRow, RowCeiling]) -> list:
    """Per-row chances in row order, for the cache: [k, first, top10] or None."""
    return [
        [c.k, c.first, c.top10] if (c := per_row.get(row)) is not None else None for row in rows
    ]


def decode_rows(rows: list[QueryRow], data: object) -> dict[QueryRow, RowCeiling] | None:
    """The cache's per-row chances back, or None when they do not fit these rows."""
    if not isinstance(data, list) or len(data) != len(rows):
        return None
    out: dict[QueryRow, RowCeiling] = {}
    for row, item in zip(rows, data, strict=True):
        if item is None:
            continue
        if not (
            isinstance(item, list)
            and len(item) == 3
            and isinstance(item[0], int)
            and all(isinstance(x, float) for x in item[1:])
        ):
            return None
        out[row] = RowCeiling(item[0], item[1], item[2])
    return out

"""The query generator: sloppy queries derived from real names, whose name is the truth.

The recipes are recall.inputs.recipes's, pure functions of a name (and a seed), so a row
can be reproduced from its source alone (`recall derive recipes --seed S NAME`). Sampling
orders names by a seeded hash, so the rows for a repo depend only on its names, the seed
and N.
"""

from __future__ import annotations

import bisect
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

import orjson

from recall.errors import RecallError
from recall.files import read_input
from recall.inputs.corpus import Pin
from recall.inputs.queryset import HAND, PATH_SET, QueryRow
from recall.inputs.recipes import RECIPE_SETS, is_searchable, make_queries
from recall.inputs.symbols import Symbol, distinct_names

DEFAULT_SEED = 1
MIN_LETTERS = 5
_SCOPE_PARTS = re.compile(r"\.|::")


def recipes(name: str, seed: int = DEFAULT_SEED) -> list[tuple[str, str]]:
    """Every (type, query) of the default set that applies to name, in its order."""
    return make_queries("default", name, seed)


def typed_recipes(
    name: str, seed: int = DEFAULT_SEED, owner: str | None = None, language: str = ""
) -> list[tuple[str, str]]:
    """Every (type, query) of the typed set that applies to name, in its order; owner is
    the name's ctags scope owner (for `qualified`), language the corpus's."""
    return make_queries("typed", name, seed, owner, language)


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
        data = orjson.loads(read_input(path))
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
        data = orjson.loads(read_input(path))
    except (RecallError, orjson.JSONDecodeError):
        return "default"  # load_settings reports the file's problem
    recipe_set = data.get("recipes", "default") if isinstance(data, dict) else "default"
    known = (*RECIPE_SETS, PATH_SET)  # the path set's recipes: recall.inputs.path_recipes
    if recipe_set not in known:
        raise RecallError(f"{path}: recipes must be one of {', '.join(known)}, got {recipe_set!r}")
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

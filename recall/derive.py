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

from recall.corpus import Pin
from recall.errors import RecallError
from recall.queryset import DERIVED_TYPES, HAND, QueryRow
from recall.symbols import is_searchable

DEFAULT_SEED = 1
MIN_LETTERS = 5
VOWELS = frozenset("aeiou")

# A word inside an alphanumeric run: a capital run before a capitalised word, a
# (capitalised) lowercase word, a capital run, or digits alone; digits that follow a
# word stay with it.
_WORD = re.compile(r"[A-Z]+(?=[A-Z][^\W\d_A-Z])\d*|[A-Z]?[^\W\d_A-Z]+\d*|[A-Z]+\d*|\d+")
_ALNUM_RUN = re.compile(r"[^\W_]+")


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


def typo(name: str, seed: int) -> str | None:
    """Swap two adjacent, different characters at a position drawn from (seed, name)."""
    lowered = name.lower()
    positions = [i for i in range(len(lowered) - 1) if lowered[i] != lowered[i + 1]]
    if not positions:
        return None
    i = random.Random(f"{seed}\0{name}").choice(positions)
    return lowered[:i] + lowered[i + 1] + lowered[i] + lowered[i + 2 :]


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


def derive_all(
    names_by_repo: dict[str, list[str]],
    settings: dict[str, RepoSettings],
    existing: list[QueryRow],
) -> list[QueryRow]:
    """The whole query set: each repo's derived rows, then its hand rows as they were."""
    rows: list[QueryRow] = []
    for repo, conf in settings.items():
        rows += derive_rows(repo, names_by_repo[repo], conf.n, conf.seed)
        rows += [r for r in existing if r.repo == repo and r.type == HAND]
    rows += [r for r in existing if r.type == HAND and r.repo not in settings]
    return rows

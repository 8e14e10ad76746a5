"""The path set's recipes: what people type into a file picker, derived from real paths.

Each recipe is a function of a tracked path (and, where it chooses, a seed), so a row is
reproduced from its source alone (`recall derive recipes --set paths PATH`). Every
recipe gives the list of queries it could make from a path, each as likely as the
others (`choices`); the row is one of them, drawn by a generator seeded with the seed,
the type and the path. The ceiling (recall/analysis/path_ceiling.py) reads the same lists, so the
choice model it assumes is the one that made the rows.

For `src/components/ButtonGroup.tsx` (folders src, components; basename ButtonGroup.tsx;
stem ButtonGroup; extension tsx):

| type | recipe | example |
|---|---|---|
| baseprefix | the lowercased basename's first N characters, N drawn from 3 to 8 | `butto` |
| wordstarts | the first letter of each word of the stem (two words or more) | `bg` |
| dirinitials | each folder's first letter or digit, then the stem's first 3 | `scbut` |
| fragment | the last folder's first 4 characters, `/`, the basename's first 4 | `comp/butt` |
| extfirst | `.`, the extension, a space, the stem's first 4 characters | `.tsx butt` |
| basetypo | the lowercased stem, two adjacent different characters swapped | `butotngroup` |
| basecase | the stem lowercased if it has a capital, else capitalised | `buttongroup` |

(N at most the basename's length less one; the swap's position drawn.)
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable
from dataclasses import dataclass

from recall.inputs.derive import RepoSettings
from recall.inputs.queryset import HAND, PATH_TYPES, QueryRow
from recall.inputs.recipes import is_searchable, swap_positions, swapped, words

MIN_STEM_LETTERS = 3
BASE_PREFIX_MIN, BASE_PREFIX_MAX = 3, 8
DIR_STEM = 3  # characters of the stem after the folder initials
FRAGMENT = 4  # characters of the folder and of the basename around the `/`
EXT_STEM = 4  # characters of the stem after the extension


@dataclass(frozen=True)
class PathParts:
    """A path cut as a picker's user sees it: folders, basename, stem and extension (the
    part after the basename's last dot, unless that dot starts it: `.gitignore` has none)."""

    dirs: tuple[str, ...]
    base: str
    stem: str
    ext: str


def parts_of(path: str) -> PathParts:
    *dirs, base = path.split("/")
    dot = base.rfind(".")
    stem, ext = (base[:dot], base[dot + 1 :]) if dot > 0 else (base, "")
    return PathParts(tuple(dirs), base, stem, ext)


def eligible(path: str) -> bool:
    """A path sampling may pick: typeable, and a stem of 3 letters or more to type."""
    stem = parts_of(path).stem
    return is_searchable(path) and sum(c.isalpha() for c in stem) >= MIN_STEM_LETTERS


def base_prefix_lengths(base: str) -> range:
    return range(BASE_PREFIX_MIN, min(BASE_PREFIX_MAX, len(base) - 1) + 1)


def base_prefixes(p: PathParts) -> list[str]:
    lowered = p.base.lower()
    return [lowered[:n] for n in base_prefix_lengths(lowered)]


def word_starts(p: PathParts) -> list[str]:
    parts = words(p.stem)
    return ["".join(word[0] for word in parts)] if len(parts) >= 2 else []


def dir_initials(p: PathParts) -> list[str]:
    initials = "".join(next((c for c in d.lower() if c.isalnum()), "") for d in p.dirs)
    return [initials + p.stem.lower()[:DIR_STEM]] if initials else []


def fragment(p: PathParts) -> list[str]:
    if not p.dirs:
        return []
    return [f"{p.dirs[-1].lower()[:FRAGMENT]}/{p.base.lower()[:FRAGMENT]}"]


def ext_first(p: PathParts) -> list[str]:
    return [f".{p.ext.lower()} {p.stem.lower()[:EXT_STEM]}"] if p.ext else []


def base_typos(p: PathParts) -> list[str]:
    lowered = p.stem.lower()
    return [swapped(lowered, i) for i in swap_positions(lowered)]


def base_case(p: PathParts) -> list[str]:
    if any(c.isupper() for c in p.stem):
        other = p.stem.lower()
    else:
        at = next((i for i, c in enumerate(p.stem) if c.isalpha()), None)
        other = p.stem if at is None else p.stem[:at] + p.stem[at].upper() + p.stem[at + 1 :]
    return [other] if other != p.stem else []


# Each type's queries for a path, equally likely: one for the recipes that do not choose.
CHOICES: dict[str, Callable[[PathParts], list[str]]] = {
    "baseprefix": base_prefixes,
    "wordstarts": word_starts,
    "dirinitials": dir_initials,
    "fragment": fragment,
    "extfirst": ext_first,
    "basetypo": base_typos,
    "basecase": base_case,
}
assert tuple(CHOICES) == PATH_TYPES


def choices(kind: str, path: str) -> list[str]:
    """Every query the recipe of `kind` could make from path (repeats count twice)."""
    return CHOICES[kind](parts_of(path))


def path_recipes(path: str, seed: int) -> list[tuple[str, str]]:
    """Every (type, query) of the path set that applies to path, in PATH_TYPES order."""
    made = []
    for kind in PATH_TYPES:
        options = choices(kind, path)
        if options:
            made.append((kind, random.Random(f"{seed}\0{kind}\0{path}").choice(options)))
    return made


def sample_paths(paths: list[str], n: int, seed: int) -> list[str]:
    """N distinct eligible paths, ordered by a seeded hash: growing N only appends."""

    def draw(path: str) -> bytes:
        return hashlib.sha256(f"{seed}\0{path}".encode()).digest()

    return sorted({p for p in paths if eligible(p)}, key=lambda p: (draw(p), p))[:n]


def derive_path_rows(repo: str, paths: list[str], n: int, seed: int) -> list[QueryRow]:
    """The path set's rows for n sampled paths of repo (no prefix rule: a basename's
    prefix is one of the recipes)."""
    return [
        QueryRow(repo, query, kind, path)
        for path in sample_paths(paths, n, seed)
        for kind, query in path_recipes(path, seed)
    ]


def derive_all_paths(
    paths: dict[str, list[str]], settings: dict[str, RepoSettings], existing: list[QueryRow]
) -> list[QueryRow]:
    """The whole path set: each repo's derived rows, then its hand rows as they were (as
    recall.inputs.derive.derive_all does for names)."""
    rows: list[QueryRow] = []
    for repo, conf in settings.items():
        rows += derive_path_rows(repo, paths[repo], conf.n, conf.seed)
        rows += [r for r in existing if r.repo == repo and r.type == HAND]
    rows += [r for r in existing if r.type == HAND and r.repo not in settings]
    return rows

"""The second domain's candidates: each pin's tracked file paths, as a file picker lists them.

A file picker ranks the paths of a repository, not its symbols. The candidates of a
corpus are the paths `git ls-files` lists in its frozen checkout (submodules, which are
folders of another repository, left out), relative to the checkout's root and sorted,
so they are a function of the pinned tree alone. They are kept in the cache under a key
of the tree and of the listing rule, like the symbols, so a run lists them once.

Which domain a query set is in follows from its types: rows of the path types (PATH_TYPES
in recall.inputs.queryset) rank paths, a judgments set's rows each query's own candidates,
every other sourced type ranks names. A set mixing two is refused: one run gives a finder
one list of candidates a corpus.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import git

from recall.cache import memoised
from recall.errors import RecallError
from recall.inputs.corpus import Checkout
from recall.inputs.queryset import JUDGED, JUDGED_TYPES, NAMES, PATH_TYPES, PATHS, QueryRow
from recall.inputs.recipes import is_searchable

# The listing rule's version: a change to what is listed changes every key.
LISTING = "ls-files -s -z; no gitlinks; searchable paths; v1"
GITLINK = "160000"  # a submodule's entry: a commit of another repository, not a file


def domain_of(rows: list[QueryRow], where: str = "the query set") -> str:
    """`paths` when the sourced rows are of the path types, `judgments` when they are a
    judgments set's (recall.inputs.judgments: each query over its own candidates), `names`
    otherwise; a set with two is an error, since a run gives each finder one candidate
    list per corpus."""
    kinds = {_domain(row.type) for row in rows if row.sourced}
    if len(kinds) > 1:
        if kinds == {PATHS, NAMES}:
            first = next(row for row in rows if row.sourced and row.type in PATH_TYPES)
            raise RecallError(
                f"{where} mixes path rows (such as {first.type} {first.query!r}) with name "
                "rows: run the path set and a name set separately"
            )
        raise RecallError(f"{where} mixes judgments rows with a query set's rows")
    return kinds.pop() if kinds else NAMES


def _domain(kind: str) -> str:
    return PATHS if kind in PATH_TYPES else JUDGED if kind in JUDGED_TYPES else NAMES


def list_paths(root: Path) -> list[str]:
    """The tracked files of the checkout at root, sorted, as `git ls-files` lists them:
    no submodule entries, and no path a person could not type (a tab, a newline)."""
    try:
        out = git.Repo(root).git.ls_files("-s", "-z")
    except git.GitCommandError as exc:
        tail = str(exc.stderr or exc).strip().splitlines()[-1:]
        raise RecallError(f"git ls-files failed in {root}: {' '.join(tail)}") from None
    paths = set()
    for entry in out.split("\0"):
        if not entry:
            continue
        info, _tab, path = entry.partition("\t")
        if info.split(" ", 1)[0] == GITLINK or not is_searchable(path):
            continue
        paths.add(path)
    return sorted(paths)


def paths_key(tree: str) -> str:
    """The cache entry of a tree's paths: the tree and the listing rule decide them."""
    return hashlib.sha256(f"{tree}\0{LISTING}".encode()).hexdigest()[:24]


def cached_paths(root: Path, tree: str, cache: Path) -> list[str]:
    """list_paths(), memoised in the cache by the checkout's tree (as the symbols are)."""
    return memoised(
        cache / "paths" / f"{paths_key(tree)}.json",
        lambda: list_paths(root),
        _decode_paths,
        lambda paths: paths,
        "paths",
        "not a list of paths",
    )


def _decode_paths(kept: object) -> list[str] | None:
    if isinstance(kept, list) and all(isinstance(p, str) for p in kept):
        return kept
    return None


def checkout_paths(checkout: Checkout, cache: Path) -> list[str]:
    return cached_paths(checkout.path, checkout.tree, cache)

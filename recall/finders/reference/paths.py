"""The reference finder's path mode: rank a repository's file paths as a file picker does.

    python -m recall.finders.reference.paths --names FILE [--query Q [--limit N]]
    (without --query: the harness's batch protocol on stdin, JSON lines in and out)

It reuses the names' scorer (recall.finders.reference.rank.Ranker: subsequence alignment with word
starts, typos, prefixes, exact names) on three views of each path, and adds what a path
has that a name has not:

- segments: the basename is what people type first, so a term is scored against the
  stem (the basename without its extension), the basename and the whole path, and a match
  in the stem or the basename earns BASENAME over one spread over the folders;
- a term with `/` is a fragment of the path: scored against the whole path, with a bonus
  when its last part starts the basename and the part before starts a folder;
- a term that starts with `.` and has no other dot is an extension when a path has it;
- terms separated by spaces must all match (the AND of fzf and most pickers); a path's
  score is the sum of its terms'.

Ties break by the shorter basename (the likelier end of a prefix), then the shorter
path, then the path. No recipe of the query generator is looked up: every score is the
query against the path itself.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from recall.finders.reference.chars import squash
from recall.finders.reference.rank import Query, Ranker, parse_query

BASENAME = 0.6  # a term matched inside the stem or the basename, over one in the folders
BASENAME_LEAST = 0.3  # ... for a match that aligns well there (a scattered one does not)
SPLIT = 0.0  # a term matched as folders then basename (see split_scores) ...
SPLIT_DIR = 0.5  # ... its folder part weighing this much of its stem part
SPLIT_STEM_LEAST = 2  # ... at least this many characters in the stem
WEAK_BELOW = -1.0  # a view's scores at or below: near misses, no match
FRAGMENT_BASE = 0.5  # a `/` fragment whose last part starts the basename ...
FRAGMENT_DIR = 0.3  # ... and whose part before starts a folder of the path
EXTENSION = 1.0  # `.rs`: the path's extension is the term
EXTENSION_PREFIX = 0.6  # ... or starts with it
FLOOR = -10.0  # below every score a view can give: "no match"


def split_path(path: str) -> tuple[list[str], str, str, str]:
    """Folders, basename, stem and extension (after the basename's last dot, unless that
    dot starts it: `.gitignore` has none)."""
    *dirs, base = path.split("/")
    dot = base.rfind(".")
    stem, ext = (base[:dot], base[dot + 1 :]) if dot > 0 else (base, "")
    return dirs, base, stem, ext


def term_query(text: str) -> Query:
    """A term as the names' scorer reads it; no `Owner::name` reading of its dots (a dot in
    a path is an extension's, not a qualifier's), but a `*` still a glob's."""
    if "*" in text:
        return parse_query(text)
    chars = squash(text)
    return Query(text, chars, (False,) * len(chars), False, "")


class _View:
    """One view of every path (stems, basenames, folders or the paths themselves): a
    Ranker over its distinct strings and, for each, the paths that have it."""

    def __init__(self, texts: Sequence[str]) -> None:
        distinct = sorted(set(texts))
        where = {text: i for i, text in enumerate(distinct)}
        self.ranker = Ranker(distinct)
        self.of_path = np.array([where[text] for text in texts], dtype=np.int64)

    def by_path(self, query: Query) -> np.ndarray:
        """The ranker's score of query for every path, FLOOR where it does not match."""
        ids, values = self.ranker.score(query)
        scores = np.full(len(self.ranker.names), FLOOR)
        scores[ids] = values
        return scores[self.of_path]

    def dense(self, query: Query) -> np.ndarray:
        """by_path without the near misses (a WEAK score is no match here)."""
        values = self.by_path(query)
        return np.where(values > WEAK_BELOW, values, FLOOR)

    def scores(self, query: Query, bonus: float, into: np.ndarray, least: float = FLOOR) -> None:
        """Raise into[path] to the view's score of query plus bonus, where that score is
        above least."""
        values = self.by_path(query)
        np.maximum(into, np.where(values > least, values + bonus, FLOOR), out=into)


class PathFinder:
    """Tracked paths and their views, built once per process; each query is arithmetic."""

    def __init__(self, paths: Sequence[str]) -> None:
        self.paths = list(paths)
        parts = [split_path(p) for p in self.paths]
        self.dirs = [[d.lower() for d in dirs] for dirs, _b, _s, _e in parts]
        self.bases = [base.lower() for _d, base, _s, _e in parts]
        self.exts = [ext.lower() for _d, _b, _s, ext in parts]
        self.stem_view = _View([stem for _d, _b, stem, _e in parts])
        self.base_view = _View([base for _d, base, _s, _e in parts])
        self.path_view = _View(self.paths)
        self.dir_view = _View(["/".join(dirs) for dirs, _b, _s, _e in parts])
        self.has_dir = np.array([bool(dirs) for dirs, _b, _s, _e in parts], dtype=bool)
        order = sorted(
            range(len(self.paths)),
            key=lambda i: (len(self.bases[i]), len(self.paths[i]), self.paths[i]),
        )
        self.tie_rank = np.empty(len(self.paths), dtype=np.int64)
        self.tie_rank[order] = np.arange(len(self.paths))

    def term_scores(self, term: str) -> np.ndarray:
        """Every path's score for one term (FLOOR where it does not match)."""
        scores = np.full(len(self.paths), FLOOR)
        if "/" in term:
            self.path_view.scores(term_query(term), 0.0, scores)
            parts = [p.lower() for p in term.split("/") if p]
            if parts:
                for i in np.flatnonzero(scores > FLOOR).tolist():
                    if self.bases[i].startswith(parts[-1]):
                        scores[i] += FRAGMENT_BASE
                        if len(parts) > 1 and any(d.startswith(parts[-2]) for d in self.dirs[i]):
                            scores[i] += FRAGMENT_DIR
            return scores
        if term.startswith(".") and "." not in term[1:] and len(term) > 1:
            ext = term[1:].lower()
            hit = np.array([e == ext for e in self.exts], dtype=bool)
            near = np.array([e.startswith(ext) for e in self.exts], dtype=bool)
            if near.any():
                scores[near] = EXTENSION_PREFIX
                scores[hit] = EXTENSION
                return scores
        query = term_query(term)
        if not query.chars:
            return np.zeros(len(self.paths))  # a term of punctuation alone filters nothing
        self.path_view.scores(query, 0.0, scores)
        self.base_view.scores(query, BASENAME, scores, BASENAME_LEAST)
        self.stem_view.scores(query, BASENAME, scores, BASENAME_LEAST)
        if "*" not in term:
            np.maximum(scores, self.split_scores(term), out=scores)
        return scores

    def split_scores(self, term: str) -> np.ndarray:
        """The term as folders then basename: its first k characters in the folders, the
        rest in the stem, for the best k; each part scored as a name (word starts, runs),
        the two averaged over the characters each matched."""
        best = np.full(len(self.paths), FLOOR)
        chars = squash(term)
        for k in range(1, len(chars) - SPLIT_STEM_LEAST + 1):
            folders = self.dir_view.dense(term_query(chars[:k]))
            stem = self.stem_view.dense(term_query(chars[k:]))
            ok = (folders > FLOOR) & (stem > FLOOR) & self.has_dir
            # each part's score weighs as many characters as it matched
            mean = (SPLIT_DIR * k * folders + (len(chars) - k) * stem) / (
                SPLIT_DIR * k + len(chars) - k
            )
            both = np.where(ok, mean + SPLIT, FLOOR)
            np.maximum(best, both, out=best)
        return best

    def order(self, text: str, limit: int = 0) -> list[int]:
        """Path indexes best first; every path that matches each term, or limit of them."""
        terms = text.split()
        if not terms:
            return []
        total = np.zeros(len(self.paths))
        for term in terms:
            scores = self.term_scores(term)
            total = np.where(scores > FLOOR, total + scores, FLOOR * len(terms))
        ids = np.flatnonzero(total > FLOOR * len(terms) / 2)
        ranked = ids[np.lexsort((self.tie_rank[ids], -np.round(total[ids], 6)))]
        if limit > 0:
            ranked = ranked[:limit]
        return ranked.tolist()

    def search(self, text: str, limit: int = 0) -> list[dict[str, object]]:
        return [{"name": self.paths[i], "file": self.paths[i]} for i in self.order(text, limit)]


def main(argv: list[str] | None = None) -> int:
    from recall.finders.kinds.adapter import run_worker

    parser = argparse.ArgumentParser(
        prog="python -m recall.finders.reference.paths",
        description="The reference finder over a paths file: --query once, else JSON lines.",
    )
    parser.add_argument("--names", type=Path, required=True, help="one path a line")
    parser.add_argument("--query", help="answer this one query and exit")
    parser.add_argument("--limit", type=int, default=0, help="with --query (0 = unlimited)")
    args = parser.parse_args(argv)
    if args.limit < 0:
        parser.error("--limit must be 0 or more")
    return run_worker(
        "recall.finders.reference.paths",
        args.names,
        lambda paths: PathFinder(paths).search,
        args.query,
        args.limit,
    )


if __name__ == "__main__":
    sys.exit(main())

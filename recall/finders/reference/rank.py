"""Scoring a query against every distinct name, and the scale its rules share.

The finder has to rank the name a person meant first for sloppy queries: abbreviations
made of word starts, dropped vowels, skipped middle words, swapped letters, globs, and
`Owner::name`. No per-name abbreviation is stored; every score is computed from the query
against the name itself, by five rules, each a pass of kernel.c over the names' arrays:

1. The alignment: character-set masks and the query as a subsequence (for a glob, its
   segments in order) say which names can match, and those are scored with an fzy-style
   alignment: matched characters earn bonuses at word starts and for contiguous runs,
   skipped characters cost (vowels less, since people drop them when abbreviating); see
   weights.py. Its score is divided by a perfect alignment's, into (-1, ~1.1], and raised
   by WHOLE where the name holds the query as a run of whole words (a word typed whole,
   `results` in collect_results_ok), which an alignment, scoring each character, cannot
   tell from a run that ends inside a word; not for a run holding a one-letter word.
2. The weak pass, when fewer than WEAK_WHEN names align: names missing one query
   character, after every real match.
3. Typos: an edit distance with transpositions of one or two from the lowercased name,
   among the names of about the query's length.
4. Prefixes: the names that start with the query as typed.
5. Exact names, in any case or separator convention; a name with the query's word starts
   (file_name for `fileName`) above one that is only the same lowercased (Filename).

A name's score is the highest any rule gives it; ties break deterministically: score
(rounded to 6 decimals), then shorter name, then name. This module says which rule applies
to a query and with what text (query_args), holds the scale (below), and serves the owner
rule, which reads definitions; kernel.c computes the rest. It imports no NumPy: a query
process's start-up counts in its queries' time.
"""

from __future__ import annotations

from collections.abc import Sequence

from recall.finders.reference import kernel, weights
from recall.finders.reference.chars import fold, squash
from recall.finders.reference.store import Definition, Index, answer_row

TYPE_CHECKING = False  # typing for the type checker alone: see recall/__init__.py
if TYPE_CHECKING:
    import numpy as np

# The merged scale: alignments map into (-1, ~1.1], typos and exact names sit around them.
EXACT_CASE = 3.0
EXACT_LOWER = 2.9
EXACT_SQUASHED = 2.8  # the same name in another case convention or with other separators
EXACT_WORDS = 2.85  # ... with the query's word starts (file_name for `fileName`); a name
# the same lowercased but with other words (Filename) is then EXACT_SQUASHED
TYPO_ONE = 0.92  # one edit (a swap of neighbours counts as one) from the lowercased name
TYPO_LONG = 10  # ... for a query of this many characters or more; shorter ones get less:
TYPO_SHORT = 0.05  # ... this much less per character short of TYPO_LONG
TYPO_TWO = 0.0  # two edits: above poor alignments, below decent ones
PREFIX = 1.5  # the name starts with the query as typed: progressive typing (`test_fl`);
# above every alignment, below the exact name; among them shorter names first (tie-break)
OWNER_EXACT = 0.6  # `Owner::name`: a definition whose scope names the owner
OWNER_PREFIX = 0.4
WHOLE = 0.5  # raises an alignment whose name holds the query as a run of whole words:
# above one-edit typos, below most prefixes (DECISIONS.md, entry 13)
WEAK = -2.0  # near subsequences (one query character missing), after every real match
WEAK_CAP = 500
WEAK_WHEN = 20  # ... listed only when the real matches are fewer than this
ABSENT = -10.0  # the score a rule compares with for a name not yet scored


class Query:
    """A query split into what the scorer needs: its alphanumeric characters, where a
    glob `*` separates them, and an optional owner for `Owner::name`."""

    __slots__ = ("chars", "is_glob", "owner", "raw", "star_before")

    def __init__(
        self, raw: str, chars: str, star_before: tuple[bool, ...], is_glob: bool, owner: str
    ) -> None:
        self.raw = raw
        self.chars = chars  # alphanumeric, folded to lowercase
        self.star_before = star_before  # a `*` sits before chars[i]
        self.is_glob = is_glob
        self.owner = owner  # squashed owner of a qualified query, else ""


def qualified_parts(text: str) -> list[str]:
    """text split at each `::`, `.` and `#` (the separators of an owner and its member),
    empty parts dropped."""
    return [p for p in text.replace("::", "#").replace(".", "#").split("#") if p]


def parse_query(text: str) -> Query:
    """Lowercase the query, drop separators and note glob stars; `*` matches any run."""
    raw = text.strip()
    owner = ""
    body = raw
    if "*" not in raw:
        parts = qualified_parts(raw)
        if len(parts) >= 2 and squash(parts[-1]) and squash(parts[-2]):
            owner, body = squash(parts[-2]), parts[-1]
    if "*" not in body and body.isascii():  # the common case: lower() folds every character
        folded = "".join(filter(str.isalnum, body.lower()))
        return Query(raw, folded, (False,) * len(folded), "*" in raw, owner)
    chars: list[str] = []
    stars: list[bool] = []
    pending_star = False
    for c in body.lower() if body.isascii() else body:
        if c == "*":
            pending_star = True
        elif c.isalnum():
            chars.append(fold(c))
            stars.append(pending_star and bool(chars[:-1]))
            pending_star = False
    return Query(raw, "".join(chars), tuple(stars), "*" in raw, owner)


def the_weights() -> kernel.Weights:
    """weights.py's and this module's weights, as the kernel takes them."""
    aligned = {name.lower(): float(getattr(weights, name)) for name in (
        "BASE", "BONUS_FIRST", "BONUS_WORD", "BONUS_CONSEC", "BONUS_END", "GAP_OPEN",
        "VOWEL_HOP", "TAIL_JUMP", "SKIP_WORD", "SKIP_VOWEL", "SKIP_OTHER", "SKIP_LEAD",
        "SKIP_TRAIL", "TRAIL_WORD", "STAR_FACTOR", "NEG",
    )}  # fmt: skip
    return kernel.Weights(
        **aligned, exact_case=EXACT_CASE, exact_lower=EXACT_LOWER,
        exact_squashed=EXACT_SQUASHED, typo_one=TYPO_ONE, typo_short=TYPO_SHORT,
        typo_two=TYPO_TWO, prefix=PREFIX, weak=WEAK, whole=WHOLE, exact_words=EXACT_WORDS,
        typo_long=TYPO_LONG, weak_cap=WEAK_CAP, weak_when=WEAK_WHEN,
    )  # fmt: skip


def query_args(query: Query, args: kernel.QueryArgs) -> tuple[bytes, ...]:
    """Fill args (kernel.c's rk_query) for query: which rule applies, with what text.
    Returns the buffers args points into, to be kept until the kernel has answered."""
    chars = query.chars
    args.chars = chars32 = chars.encode("utf-32-le", "surrogatepass")
    args.m = len(chars)
    args.star = star = bytes(query.star_before)
    args.is_glob = query.is_glob
    lower = query.raw.lower()
    kept: tuple[bytes, ...] = (chars32, star)
    # typos: a typo is made on the lowercased name, so it is compared with that,
    # separators included; never for a short query or a glob
    if len(chars) >= 4 and not query.is_glob:
        args.typo_text = text32 = lower.encode("utf-32-le", "surrogatepass")
        args.typo_len = len(lower)
        kept += (text32,)
        if query.owner or not lower.isascii():  # else its letters and digits are chars
            own = squash(lower)
            args.typo_chars = typo_chars = own.encode("utf-32-le", "surrogatepass")
            args.typo_chars_len = len(own)
            kept += (typo_chars,)
        else:
            args.typo_chars, args.typo_chars_len = None, 0
    else:
        args.typo_text, args.typo_len, args.typo_chars, args.typo_chars_len = None, 0, None, 0
    # prefixes: names that start with the query, separators and all: someone typing a
    # name from its start is part way through it, and the shorter names are the likelier
    if len(lower) >= 2 and not query.is_glob and not query.owner:
        args.prefix = prefix = lower.encode("utf-8", "surrogatepass")
        args.prefix_len = len(prefix)
        kept += (prefix,)
    else:
        args.prefix, args.prefix_len = None, 0
    # the whole name typed (the part after the owner of an `Owner::name`)
    text = query.raw if not query.owner else query.raw[-len(chars) :]
    args.exact = exact = text.encode("utf-8", "surrogatepass")
    args.exact_len = len(exact)
    args.exact_lower = exact_lower = text.lower().encode("utf-8", "surrogatepass")
    args.exact_lower_len = len(exact_lower)
    return (*kept, exact, exact_lower)


class Finder:
    """A loaded index and the kernel over its names: what both the per-query and the batch
    mode use, so the two cannot rank differently."""

    def __init__(self, index: Index) -> None:
        self.index = index
        lib = kernel.load(index.library(), str(index.db))
        self.kernel = kernel.Kernel(lib, index.names_struct(), the_weights(), index)
        self._args = kernel.QueryArgs()

    def search_json(self, text: str, limit: int = 0) -> bytes | memoryview:
        """The best `limit` names for the query (all plausible ones for 0), best first, as
        the one-line JSON list the harness reads: the rows the index keeps for each name's
        first definition; for an `Owner::name` query, a row at the definition chosen where
        there is one. (A view of the kernel's buffer, valid until the next query.)"""
        query = parse_query(text)
        if not query.owner:
            kept = query_args(query, self._args)
            answer = self.kernel.search(self._args, limit)
            del kept
            return answer
        ids, chosen = self._owner_order(query, text, limit)
        parts = []
        for i in ids:
            where = chosen.get(i)
            parts.append(self.index.row(i) if where is None else answer_row(
                self.index.name(i), where.path, where.line))  # fmt: skip
        return b"[" + b",".join(parts) + b"]"

    def _score(self, query: Query) -> dict[int, float]:
        kept = query_args(query, self._args)
        ids, values = self.kernel.score(self._args)
        del kept
        return dict(zip(ids, values, strict=True))

    def _owner_order(
        self, query: Query, text: str, limit: int
    ) -> tuple[list[int], dict[int, Definition]]:
        """`Owner::name`: the query scored, raised by its plain reading (the qualifier as
        a separator: `owner_name`), names defined inside a scope that names the owner
        lifted and pointed at that definition; best first."""
        scores = self._score(query)
        plain = parse_query(text.replace("::", "_").replace(".", "_").replace("#", "_"))
        for i, value in self._score(plain).items():
            scores[i] = max(scores.get(i, ABSENT), value)
        chosen: dict[int, Definition] = {}
        for i, value in scores.items():
            if value <= WEAK:
                continue
            best = 0.0
            for d in self.index.definitions(i):
                if not d.scope:
                    continue
                parts = [squash(p) for p in qualified_parts(d.scope)]
                if not parts:
                    continue
                if parts[-1] == query.owner:
                    bonus = OWNER_EXACT + 0.05
                elif query.owner in parts:
                    bonus = OWNER_EXACT
                elif any(p.startswith(query.owner) for p in parts):
                    bonus = OWNER_PREFIX
                else:
                    continue
                if bonus > best:
                    best = bonus
                    chosen[i] = d
            scores[i] = value + best
        ids = list(scores)
        return self.kernel.order(ids, [scores[i] for i in ids], limit), chosen


class Ranker:
    """Names ranked in memory, with no index: the path mode's views (paths.py). The names'
    arrays are built here (arrays.py, NumPy) and the kernel compiled, or found compiled,
    in the kernel cache."""

    def __init__(self, names: Sequence[str]) -> None:
        import numpy as np

        from recall.finders.reference.arrays import name_arrays

        self.names = list(names)
        arrays = name_arrays(self.names)
        rows, row_ends = np.zeros(1, np.uint8), np.zeros(len(self.names), np.int64)
        arrays.update(rows=rows, row_ends=row_ends)
        self.arrays = {k: np.ascontiguousarray(a) for k, a in arrays.items()}
        addresses = {k: a.ctypes.data for k, a in self.arrays.items()}
        struct = kernel.Names(
            **{name: addresses[name] for name in kernel.ARRAYS}, count=len(self.names),
            chars=self.arrays["codes"].size, lengths_count=self.arrays["length_starts"].size,
            lower_size=self.arrays["lower"].size, names_size=self.arrays["names"].size,
            rows_size=0,
        )  # fmt: skip
        lib = kernel.load(kernel.build(), kernel.SOURCE)
        self.kernel = kernel.Kernel(lib, struct, the_weights(), self.arrays)
        self._args = kernel.QueryArgs()

    def score(self, query: Query) -> tuple[np.ndarray, np.ndarray]:
        """Every plausible candidate and its score (higher is better), in no particular
        order."""
        import numpy as np

        kept = query_args(query, self._args)
        ids, values = self.kernel.score(self._args)
        del kept
        return np.array(ids, dtype=np.int64), np.array(values, dtype=np.float64)

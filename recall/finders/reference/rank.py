"""Scoring a query against every distinct name of an index.

The finder has to rank the name a person meant first for sloppy queries: abbreviations
made of word starts, dropped vowels, skipped middle words, swapped letters, globs, and
`Owner::name`. No per-name abbreviation is stored; every score is computed from the query
against the name itself, in three stages so that a 30,000-name corpus answers in a few
milliseconds:

1. One compiled pass over every name (kernel.py): a character-set mask and the query as
   a subsequence (for a glob, its segments in order) say which names can match, and those
   are scored with an fzy-style alignment: matched characters earn bonuses at word starts
   and for contiguous runs, skipped characters cost (vowels less, since people drop them
   when abbreviating).
2. RapidFuzz's edit distance with transpositions finds the typos among the names of about
   the query's length and letters; a sorted list finds the names that start with it.
3. Merge the alignment scores with the typo, prefix and exact-match scores on one scale,
   in dense arrays over every name, and break ties deterministically: score, then shorter
   name, then name.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from rapidfuzz import process
from rapidfuzz.distance import OSA

from recall.finders.reference import kernel
from recall.finders.reference.store import Catalog, Definition
from recall.finders.reference.weights import (
    BASE,
    BONUS_CONSEC,
    BONUS_END,
    BONUS_FIRST,
    SKIP_OTHER,
    SKIP_VOWEL,
)

# The merged scale: alignments map into (-1, ~1.1], typos and exact names sit around them.
EXACT_CASE = 3.0
EXACT_LOWER = 2.9
EXACT_SQUASHED = 2.8  # the same name in another case convention or with other separators
TYPO_ONE = 0.92  # one edit (a swap of neighbours counts as one) from the lowercased name
TYPO_LONG = 10  # ... for a query of this many characters or more; shorter ones get less:
TYPO_SHORT = 0.05  # ... this much less per character short of TYPO_LONG
TYPO_TWO = 0.0  # two edits: above poor alignments, below decent ones
PREFIX = 1.5  # the name starts with the query as typed: progressive typing (`test_fl`);
# above every alignment, below the exact name; among them shorter names first (tie-break)
OWNER_EXACT = 0.6  # `Owner::name`: a definition whose scope names the owner
OWNER_PREFIX = 0.4
WEAK = -2.0  # near subsequences (one query character missing), after every real match
WEAK_CAP = 500
WEAK_WHEN = 20  # ... listed only when the real matches are fewer than this
ABSENT = -10.0  # the score a rule compares with for a name not yet scored

_QUALIFIER = re.compile(r"::|[.#]")
_VOWELS = frozenset("aeiou")
_OTHER, _LOWER, _UPPER, _DIGIT, _LETTER = range(5)  # _LETTER: a letter without case


def _fold(c: str) -> str:
    """Lowercase one character, keeping it one character so positions stay aligned."""
    low = c.lower()
    return low if len(low) == 1 else c


def squash(text: str) -> str:
    """The lowercase letters and digits of a name: matching ignores case and separators."""
    if text.isascii():  # the common case, where lower() is _fold() of every character
        return "".join(filter(str.isalnum, text.lower()))
    return "".join(_fold(c) for c in text if c.isalnum())


def _char_bit(code: int) -> int:
    """The bit of a folded character in a name's character-set mask."""
    if 97 <= code <= 122:
        return 1 << (code - 97)
    if 48 <= code <= 57:
        return 1 << (26 + code - 48)
    return 1 << (36 + code % 28)


def _classify(code: int) -> tuple[int, int]:
    """Character class and folded code of one code point."""
    c = chr(code)
    if not c.isalnum():
        return _OTHER, code
    if c.isdigit():
        kind = _DIGIT
    elif c.isupper():
        kind = _UPPER
    elif c.islower():
        kind = _LOWER
    else:
        kind = _LETTER
    return kind, ord(_fold(c))


def _running_max(x: np.ndarray) -> np.ndarray:
    """np.maximum.accumulate(x, axis=0); x is scratch and may be overwritten. accumulate()
    walks one cell at a time (about 5 ns a cell), which only pays for few columns; for
    more, whole-row maxima are faster: over shifts that double (log2(rows) calls, as many
    cells each) up to a few thousand columns, then row by row (one call per row)."""
    rows, cols = x.shape
    if cols < 100:
        return np.maximum.accumulate(x, axis=0, out=x)
    if cols >= 2000:
        for j in range(1, rows):
            np.maximum(x[j - 1], x[j], out=x[j])
        return x
    src, dst = x, np.empty_like(x)
    shift = 1
    while shift < rows:
        dst[:shift] = src[:shift]
        np.maximum(src[shift:], src[:-shift], out=dst[shift:])
        src, dst = dst, src
        shift *= 2
    return src


@dataclass(frozen=True)
class Query:
    """A query split into what the scorer needs: its alphanumeric characters, where a
    glob `*` separates them, and an optional owner for `Owner::name`."""

    raw: str
    chars: str  # alphanumeric, folded to lowercase
    star_before: tuple[bool, ...]  # a `*` sits before chars[i]
    is_glob: bool
    owner: str  # squashed owner of a qualified query, else ""


def parse_query(text: str) -> Query:
    """Lowercase the query, drop separators and note glob stars; `*` matches any run."""
    raw = text.strip()
    owner = ""
    body = raw
    if "*" not in raw:
        parts = [p for p in _QUALIFIER.split(raw) if p]
        if len(parts) >= 2 and squash(parts[-1]) and squash(parts[-2]):
            owner, body = squash(parts[-2]), parts[-1]
    chars: list[str] = []
    stars: list[bool] = []
    pending_star = False
    for c in body.lower() if body.isascii() else body:
        if c == "*":
            pending_star = True
        elif c.isalnum():
            chars.append(_fold(c))
            stars.append(pending_star and bool(chars[:-1]))
            pending_star = False
    return Query(raw, "".join(chars), tuple(stars), "*" in raw, owner)


CHUNK = 1 << 13  # names per step of Ranker's build: its temporaries take ~100 B a character


@dataclass(frozen=True)
class _Chunk:
    """Ranker's arrays for a run of names, and the running skip cost after them."""

    codes: np.ndarray
    starts: np.ndarray
    through: np.ndarray
    lengths: np.ndarray
    masks: np.ndarray
    carry: float


class SortedText:
    """Sorted strings kept as one UTF-8 buffer and offsets, for bisect: a few bytes per
    string where a list of str objects takes some fifty more."""

    def __init__(self, texts: list[str]) -> None:
        self._buffer = "".join(texts).encode("utf-8")
        sizes = np.fromiter(
            (len(t) if t.isascii() else len(t.encode("utf-8")) for t in texts),
            dtype=np.int64,
            count=len(texts),
        )
        self._ends = np.cumsum(sizes)
        self._starts = self._ends - sizes

    def __len__(self) -> int:
        return int(self._ends.size)

    def __getitem__(self, i: int) -> str:
        return self._buffer[int(self._starts[i]) : int(self._ends[i])].decode("utf-8")


class Ranker:
    """Distinct names with what scoring needs of them, derived from the names alone: the
    folded codes of each name's letters and digits, its word starts and its running skip
    cost, concatenated into flat arrays with an offset per name (so memory follows the
    names' total length, not their count times the longest one), a character-set mask
    per name, and the lowercased names sorted for prefix lookup.

    It is built with NumPy over the concatenated names, once per process, so that each
    query is one compiled pass (kernel.py) and a little NumPy.
    """

    def __init__(self, names: Sequence[str]) -> None:
        kernel.library()  # built now if need be: a missing compiler fails here, not per query
        self.names = list(names)
        count = len(self.names)
        # Built CHUNK names at a time into arrays sized for every character, so that the
        # temporaries of a step (several bytes per character each) stay small.
        room = sum(map(len, self.names))
        codes = np.empty(room, dtype=np.int32)
        starts = np.empty(room, dtype=np.uint8)
        through = np.empty(room, dtype=np.float32)
        self.lengths = np.zeros(count, dtype=np.int64)
        self.masks = np.zeros(count, dtype=np.uint64)
        filled = 0
        carry = 0.0  # the running skip cost over every name so far (see _chunk)
        for lo in range(0, count, CHUNK):
            part = self._chunk(self.names[lo : lo + CHUNK], carry)
            size = part.codes.size
            codes[filled : filled + size] = part.codes
            starts[filled : filled + size] = part.starts
            through[filled : filled + size] = part.through
            self.lengths[lo : lo + CHUNK] = part.lengths
            self.masks[lo : lo + CHUNK] = part.masks
            filled += size
            carry = part.carry
        self.offsets = np.concatenate(([0], np.cumsum(self.lengths)[:-1])).astype(np.int64)
        self.packed = kernel.Packed(
            codes[:filled], starts[:filled], through[:filled], self.offsets, self.lengths,
            self.masks,
        )  # fmt: skip
        # The lowercased names, sorted (stably), as one UTF-8 buffer: prefix lookup bisects
        # it, and UTF-8's byte order is the code points' order.
        lower = np.array([n.lower() for n in self.names], dtype=object)
        self.lower_lengths = np.fromiter(map(len, lower), dtype=np.int64, count=count)
        self.lower_order = np.argsort(lower, kind="stable").astype(np.int64)
        self.sorted_lower = SortedText(lower[self.lower_order].tolist())

    @staticmethod
    def _chunk(names: list[str], carry: float) -> _Chunk:
        """The arrays of a run of names. Each character's skip cost is summed over all
        names in order, in float64, from carry (the sum over the names before these), and
        each name's running sum is that less the sum at its start, in float32: the same
        additions in the same order whatever the chunks, so scores never depend on them."""
        count = len(names)
        flat = np.frombuffer(("\0".join(names) + "\0").encode("utf-32-le"), np.uint32)
        kind, folded = Ranker._classes(flat)
        alnum = kind != _OTHER
        prev = np.concatenate(([_OTHER], kind[:-1]))
        nxt = np.concatenate((kind[1:], [_OTHER]))
        starts = alnum & (
            (prev == _OTHER)
            | ((kind == _UPPER) & (prev == _LOWER))
            | ((kind == _UPPER) & (prev == _UPPER) & (nxt == _LOWER))
            | ((kind != _DIGIT) & (prev == _DIGIT))
        )
        ends = flat == 0
        owner = np.cumsum(ends, dtype=np.int64) - ends  # name number of every character
        rows = owner[alnum]
        codes = folded[alnum].astype(np.int32)
        lens = np.bincount(rows, minlength=count).astype(np.int64)
        offsets = np.concatenate(([0], np.cumsum(lens)[:-1])).astype(np.int64)
        vowel = np.isin(codes, [ord(v) for v in _VOWELS])
        step = np.where(vowel, SKIP_VOWEL, SKIP_OTHER)
        run = np.cumsum(np.concatenate(([carry], step)), dtype=np.float64)
        start = run[offsets]  # run[0] is carry: the sum before each name
        through = (run[1:] - start[rows]).astype(np.float32)
        lut = np.array([_char_bit(c) for c in range(128)], dtype=np.uint64)
        bits = np.where(codes < 128, lut[np.minimum(codes, 127)], 0).astype(np.uint64)
        for at in np.flatnonzero(codes >= 128).tolist():
            bits[at] = _char_bit(int(codes[at]))
        masks = np.zeros(count, dtype=np.uint64)
        filled = lens > 0
        if codes.size:
            masks[filled] = np.bitwise_or.reduceat(bits, offsets[filled])
        return _Chunk(codes, starts[alnum].astype(np.uint8), through, lens, masks, float(run[-1]))

    @staticmethod
    def _classes(flat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Character class and folded code of every character, via a table for ASCII and
        Python's own rules for the few other code points."""
        table = [_classify(c) for c in range(128)]
        kind_lut = np.array([k for k, _ in table], dtype=np.int8)
        fold_lut = np.array([f for _, f in table], dtype=np.uint32)
        small = np.minimum(flat, 127)
        kind = kind_lut[small]
        folded = fold_lut[small]
        wide = np.flatnonzero(flat >= 128)
        if wide.size:
            for code in np.unique(flat[wide]).tolist():
                k, f = _classify(code)
                where = wide[flat[wide] == code]
                kind[where] = k
                folded[where] = f
        return kind, folded

    def score(self, query: Query) -> Scores:
        """Every plausible candidate with its score (higher is better), in name order."""
        q = query.chars
        m = len(q)
        scores = Scores(len(self.names))
        if m == 0:
            return scores
        qcodes = np.array([ord(c) for c in q], dtype=np.int32)
        qmask = 0
        for c in q:
            qmask |= _char_bit(ord(c))
        stars = np.array(query.star_before, dtype=np.bool_)
        cuts = [i for i in range(1, m) if query.star_before[i]]
        seg_starts = np.array([0, *cuts, m], dtype=np.int64)
        full, raw, exact = kernel.match(
            qcodes, stars, seg_starts, query.is_glob, qmask, self.packed
        )
        if full.size:
            ideal = BASE * m + BONUS_FIRST + (BASE + BONUS_CONSEC) * (m - 1) + BONUS_END
            ratio = raw / ideal
            ok = ratio > -1e6
            ratio = ratio[ok]
            with np.errstate(divide="ignore"):  # ratio 1: the other branch is taken
                ratio = np.where(ratio >= 0, ratio, ratio / (1.0 - ratio))  # into (-1, 0)
            scores.put(full[ok], ratio.astype(np.float64))
        if m >= 4 and scores.size < WEAK_WHEN:
            near = kernel.near(qcodes, qmask, self.packed)
            self._add_weak(near, scores)
        self._add_typos(query, scores)
        self._add_prefix(query, scores)
        self._add_exact(query, exact, scores)
        return scores

    def _add_typos(self, query: Query, scores: Scores) -> None:
        """Names one or two edits (a swap of neighbours is one) from the query; a typo is
        made on the lowercased name, so compare with that, separators included.

        Each edit brings in or takes out at most one character, so a name whose length or
        character set differs from the query's by more than the edits allowed is skipped
        before the edit distance is computed."""
        text = query.raw.lower()
        if len(query.chars) < 4 or query.is_glob:
            return
        cutoff = 1 if len(text) < 8 else 2
        tmask = np.uint64(0)
        for c in squash(text):
            tmask |= np.uint64(_char_bit(ord(c)))
        idx = np.flatnonzero(np.abs(self.lower_lengths - len(text)) <= cutoff)
        masks = self.masks[idx]
        ok = np.bitwise_count(tmask & ~masks) <= cutoff
        ok &= np.bitwise_count(masks & ~tmask) <= cutoff
        idx = idx[ok]
        if not idx.size:
            return
        names = self.names
        dist = process.cdist(
            [text],
            [names[i].lower() for i in idx.tolist()],
            scorer=OSA.distance,
            score_cutoff=cutoff,
            dtype=np.int32,
            workers=1,
        )[0]
        # A short query is one edit from many names by chance: trust the edit less.
        one = TYPO_ONE - TYPO_SHORT * max(0, TYPO_LONG - len(query.chars))
        close = dist <= cutoff
        scores.raise_to(idx[close], np.where(dist[close] <= 1, one, TYPO_TWO))

    def _add_prefix(self, query: Query, scores: Scores) -> None:
        """Names that start with the query, separators and all: someone typing a name from
        its start is part way through it, and the shorter names are the likelier ends."""
        text = query.raw.lower()
        if len(text) < 2 or query.is_glob or query.owner:
            return
        start = bisect.bisect_left(self.sorted_lower, text)
        end = bisect.bisect_left(self.sorted_lower, text + "\U0010ffff")
        ids = self.lower_order[start:end]
        scores.raise_to(ids, np.full(ids.size, PREFIX))

    def _add_exact(self, query: Query, exact: np.ndarray, scores: Scores) -> None:
        """The whole name typed, in any case or separator convention, always wins; exact
        holds the names whose letters and digits are the query's."""
        text = query.raw if not query.owner else query.raw[-len(query.chars) :]
        values = []
        for i in exact.tolist():
            value = EXACT_SQUASHED
            if self.names[i].lower() == text.lower():
                value = EXACT_LOWER
            if self.names[i] == text:
                value = EXACT_CASE
            values.append(value)
        scores.raise_to(exact, np.array(values, dtype=np.float64))

    def _add_weak(self, near: np.ndarray, scores: Scores) -> None:
        """Names missing one query character, shortest first and capped, so that an
        unlimited list still finds a name the query garbles."""
        if not near.size:
            return
        lens = self.lengths[near]
        order = np.argsort(lens, kind="stable")[:WEAK_CAP]
        ids = near[order]
        new = ~scores.present[ids]
        scores.put(ids[new], WEAK - lens[order][new].astype(np.float64) / 1000.0)


class Scores:
    """Dense scores over every name: a value and whether the name is a candidate at all.
    Each rule raises a name's value or sets it; the order of candidates never matters,
    since ranking sorts them by score and a total tie order (Finder.tie_rank)."""

    def __init__(self, count: int) -> None:
        self.value = np.full(count, ABSENT, dtype=np.float64)
        self.present = np.zeros(count, dtype=np.bool_)
        self.size = 0

    def put(self, ids: np.ndarray, values: np.ndarray) -> None:
        """Set these names' scores."""
        self.value[ids] = values
        self._mark(ids)

    def raise_to(self, ids: np.ndarray, values: np.ndarray) -> None:
        """Raise these names' scores to values where that is higher (an absent name
        counts as ABSENT); ids may repeat only with equal values."""
        higher = values > self.value[ids]
        self.value[ids[higher]] = values[higher]
        self._mark(ids)

    def _mark(self, ids: np.ndarray) -> None:
        self.size += int(np.count_nonzero(~self.present[ids]))
        self.present[ids] = True

    def candidates(self) -> np.ndarray:
        """Every name with a score, in name order."""
        return np.flatnonzero(self.present)


@dataclass(frozen=True)
class Hit:
    """One output row: a distinct name at its chosen definition."""

    name: str
    file: str
    line: int
    score: float


class Finder:
    """A loaded index and its ranker: what both the per-query and the batch mode use, so
    the two cannot rank differently."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self.ranker = Ranker(catalog.names)
        names = catalog.names
        # Ties break by shorter name, then name: distinct names make that a total order,
        # so the definition's path and line never have to be consulted.
        # (Two stable sorts, by name then by length, in NumPy: no tuple per name.)
        by_name = np.argsort(np.array(names, dtype=object), kind="stable")
        lengths = np.fromiter(map(len, names), dtype=np.int64, count=len(names))
        order = by_name[np.argsort(lengths[by_name], kind="stable")]
        self.tie_rank = np.empty(len(names), dtype=np.int64)
        self.tie_rank[order] = np.arange(len(names))
        # Each name's JSON row at its first definition, serialised on first use and kept:
        # an unlimited list is then one gather and one join.
        self._rows = np.empty(len(names), dtype=object)
        self._have_row = np.zeros(len(names), dtype=bool)

    def ranked(self, text: str, limit: int = 0) -> list[tuple[int, Definition | None, float]]:
        """(name index, definition if not the first one, score) best first; limit 0 keeps
        every plausible name."""
        ids, chosen, scores = self._order(text, limit)
        values = scores.value[ids].tolist()
        return [(i, chosen.get(i), v) for i, v in zip(ids.tolist(), values, strict=True)]

    def _order(self, text: str, limit: int) -> tuple[np.ndarray, dict[int, Definition], Scores]:
        """Name indexes best first, the definitions chosen for an owner, and the scores."""
        query = parse_query(text)
        scores = self.ranker.score(query)
        chosen: dict[int, Definition] = {}
        if query.owner:
            plain = self.ranker.score(
                parse_query(text.replace("::", "_").replace(".", "_").replace("#", "_"))
            )
            ids = plain.candidates()
            scores.raise_to(ids, plain.value[ids])
            self._owner_bonus(query.owner, scores, chosen)
        ids = scores.candidates()
        values = scores.value[ids]
        # Rounded, so that float noise between equal alignments cannot decide a tie.
        order = np.lexsort((self.tie_rank[ids], -np.round(values, 6)))
        if limit > 0:
            order = order[:limit]
        return ids[order], chosen, scores

    def search(self, text: str, limit: int = 0) -> list[Hit]:
        """The best `limit` names for the query (all plausible ones for 0), best first."""
        names, catalog = self.catalog.names, self.catalog
        hits = []
        for i, where, value in self.ranked(text, limit):
            path, line = (where.path, where.line) if where else catalog.first(i)
            hits.append(Hit(names[i], path, line, value))
        return hits

    def search_json(self, text: str, limit: int = 0) -> bytes:
        """search() as the one-line JSON list the harness reads; each name's row is
        serialised once per process, which matters for long unlimited lists."""
        import orjson

        ids, chosen, _ = self._order(text, limit)
        names, catalog = self.catalog.names, self.catalog
        new = ids[~self._have_row[ids]]
        paths, lines = catalog.first_of(new)
        rows = self._rows
        for i, path, line in zip(new.tolist(), paths, lines, strict=True):
            serialised = orjson.dumps({"name": names[i], "file": path, "line": line})
            # a copy of its own size: orjson's bytes keep a buffer of 4 KB or so, which a
            # cache of a row per name would hold for every name
            rows[i] = bytes(memoryview(serialised))
        self._have_row[ids] = True
        parts = self._rows[ids].tolist()
        if chosen:
            for k, i in enumerate(ids.tolist()):
                where = chosen.get(i)
                if where is not None:
                    row = {"name": names[i], "file": where.path, "line": where.line}
                    parts[k] = orjson.dumps(row)
        return b"[" + b",".join(parts) + b"]"

    def _owner_bonus(self, owner: str, scores: Scores, chosen: dict[int, Definition]) -> None:
        """`Owner::name`: lift names defined inside a scope that names the owner, and
        point at that definition rather than the first one."""
        for i in scores.candidates().tolist():
            value = float(scores.value[i])
            if value <= WEAK:
                continue
            best = 0.0
            for d in self.catalog.definitions(i):
                if not d.scope:
                    continue
                parts = [squash(p) for p in _QUALIFIER.split(d.scope) if p]
                if not parts:
                    continue
                if parts[-1] == owner:
                    bonus = OWNER_EXACT + 0.05
                elif owner in parts:
                    bonus = OWNER_EXACT
                elif any(p.startswith(owner) for p in parts):
                    bonus = OWNER_PREFIX
                else:
                    continue
                if bonus > best:
                    best = bonus
                    chosen[i] = d
            scores.value[i] = value + best

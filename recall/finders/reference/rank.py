"""Scoring a query against every distinct name of an index.

The finder has to rank the name a person meant first for sloppy queries: abbreviations
made of word starts, dropped vowels, skipped middle words, swapped letters, globs, and
`Owner::name`. No per-name abbreviation is stored; every score is computed from the query
against the name itself, in three stages so that a 30,000-name corpus answers in a few
milliseconds:

1. Prefilter in C (RapidFuzz over the whole name list): the longest common subsequence
   of the query and each name's alphanumeric form says which names can hold the query as
   a subsequence, and an edit distance with transpositions finds the typos.
2. Score the survivors with an fzy-style alignment, vectorised with NumPy over all of them
   at once: matched characters earn bonuses at word starts and for contiguous runs,
   skipped characters cost (vowels less, since people drop them when abbreviating).
3. Merge the alignment scores with the typo and exact-match scores on one scale and
   break ties deterministically: score, then shorter name, then name, then location.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from rapidfuzz import process
from rapidfuzz.distance import OSA, LCSseq

from recall.finders.reference.store import Catalog, Definition

# Alignment weights, per matched or skipped character of a name's alphanumeric form.
BASE = 1.0  # every matched character
BONUS_FIRST = 3.0  # the name's first character
BONUS_WORD = 2.5  # a word start: after a separator, at a camel hump, after digits
BONUS_CONSEC = 2.5  # a character right after the previous match: runs are how words are typed
BONUS_END = 1.0  # the last query character is the name's last: a whole last word typed
GAP_OPEN = 1.0  # each jump over skipped characters
VOWEL_HOP = 0.5  # a hop over a vowel inside a run, per vowel
TAIL_JUMP = 1.5  # a jump to a word start over the rest of the current word only
SKIP_WORD = 0.5  # ... plus this much per whole word it skips
SKIP_VOWEL = 0.15  # skipping a vowel is cheap: abbreviations drop them
SKIP_OTHER = 0.5
SKIP_LEAD = 1.0  # factor on the cost of characters before the first match
SKIP_TRAIL = 0.05  # factor on the cost of characters after the last match
TRAIL_WORD = 0.5  # each whole word after the last match
STAR_FACTOR = 0.05  # factor on the cost of characters a glob `*` swallows
NEG = np.float32(-1e9)
BUCKET_MIN = 200  # names per alignment bucket, at least (see Ranker._align)

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

_QUALIFIER = re.compile(r"::|[.#]")
_VOWELS = frozenset("aeiou")
_OTHER, _LOWER, _UPPER, _DIGIT, _LETTER = range(5)  # _LETTER: a letter without case
_CODE, _BONUS, _COST, _WORDS = range(4)  # channels of Ranker.packed
_CHANNELS = 4


def _fold(c: str) -> str:
    """Lowercase one character, keeping it one character so positions stay aligned."""
    low = c.lower()
    return low if len(low) == 1 else c


def squash(text: str) -> str:
    """The lowercase letters and digits of a name: matching ignores case and separators."""
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
    for c in body:
        if c == "*":
            pending_star = True
        elif c.isalnum():
            chars.append(_fold(c))
            stars.append(pending_star and bool(chars[:-1]))
            pending_star = False
    return Query(raw, "".join(chars), tuple(stars), "*" in raw, owner)


class Ranker:
    """Distinct names with their lowercase and alphanumeric forms, character-set masks and
    padded per-character matrices (codes, word-start bonuses, cumulative skip costs).

    All of it is derived from the names alone, with NumPy over the concatenated names so a
    30,000-name index is ready in a fraction of a second, and it is built once per process
    so that each query only does arithmetic.
    """

    def __init__(self, names: Sequence[str]) -> None:
        self.names = list(names)
        self.lower = [n.lower() for n in self.names]
        count = len(self.names)
        flat = np.frombuffer(("\0".join(self.names) + "\0").encode("utf-32-le"), np.uint32)
        kind, folded = self._classes(flat)
        alnum = kind != _OTHER
        prev = np.concatenate(([_OTHER], kind[:-1]))
        nxt = np.concatenate((kind[1:], [_OTHER]))
        starts = alnum & (
            (prev == _OTHER)
            | ((kind == _UPPER) & (prev == _LOWER))
            | ((kind == _UPPER) & (prev == _UPPER) & (nxt == _LOWER))
            | ((kind != _DIGIT) & (prev == _DIGIT))
        )
        owner = np.cumsum(flat == 0) - (flat == 0)  # name number of every character
        keep = np.flatnonzero(alnum)
        rows = owner[keep]
        codes = folded[keep]
        lens = np.bincount(rows, minlength=count).astype(np.int64)
        offsets = np.concatenate(([0], np.cumsum(lens)[:-1])).astype(np.int64)
        cols = np.arange(keep.size) - offsets[rows]
        text = codes.astype("<u4").tobytes().decode("utf-32-le")
        self.squashed = [
            text[o : o + n] for o, n in zip(offsets.tolist(), lens.tolist(), strict=True)
        ]
        # An object array, so that gathering a candidate pool's strings is one C-level
        # fancy index rather than a Python loop per query.
        self.squashed_array = np.array(self.squashed, dtype=object)
        self.by_squashed: dict[str, list[int]] = {}
        for i, sq in enumerate(self.squashed):
            self.by_squashed.setdefault(sq, []).append(i)
        self.lengths = lens
        width = int(lens.max(initial=0)) + 1
        # Name-major channels, so that gathering the candidates copies whole rows: the
        # folded code, the bonus for matching there, and the skip cost and the word starts
        # summed up to and including each position (past the end: the name's totals).
        self.packed = np.zeros((count, _CHANNELS, width), dtype=np.float32)
        self.packed[rows, _CODE, cols] = codes
        self.packed[rows, _BONUS, cols] = np.where(starts[keep], BONUS_WORD, 0.0)
        self.packed[:, _BONUS, 0] = BONUS_FIRST
        vowel = np.isin(codes, [ord(v) for v in _VOWELS])
        step = np.where(vowel, SKIP_VOWEL, SKIP_OTHER)
        self.total_cost = self._running_sum(step, _COST, rows, cols, offsets, lens)
        self.total_words = self._running_sum(starts[keep], _WORDS, rows, cols, offsets, lens)
        lut = np.array([_char_bit(c) for c in range(128)], dtype=np.uint64)
        bits = np.where(codes < 128, lut[np.minimum(codes, 127)], 0).astype(np.uint64)
        for at in np.flatnonzero(codes >= 128).tolist():
            bits[at] = _char_bit(int(codes[at]))
        self.masks = np.zeros(count, dtype=np.uint64)
        filled = lens > 0
        if keep.size:
            self.masks[filled] = np.bitwise_or.reduceat(bits, offsets[filled])
        self.lower_lengths = np.array([len(x) for x in self.lower], dtype=np.int64)
        self.lower_array = np.array(self.lower, dtype=object)
        self.lower_order = np.array(sorted(range(count), key=self.lower.__getitem__), np.int64)
        self.sorted_lower = [self.lower[i] for i in self.lower_order.tolist()]

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

    def _running_sum(
        self,
        step: np.ndarray,
        channel: int,
        rows: np.ndarray,
        cols: np.ndarray,
        offsets: np.ndarray,
        lens: np.ndarray,
    ) -> np.ndarray:
        """Fill a channel with each name's running sum of step (a value per character of
        the concatenated names); returns the per-name totals."""
        run = np.cumsum(step, dtype=np.float64)
        before = np.concatenate(([0.0], run))
        start = before[offsets]
        total = (before[offsets + lens] - start).astype(np.float32)
        self.packed[:, channel, :] = total[:, None]
        self.packed[rows, channel, cols] = (run - start[rows]).astype(np.float32)
        return total

    def score(self, query: Query) -> dict[int, float]:
        """Name index -> score for every plausible candidate; higher is better."""
        q = query.chars
        m = len(q)
        scores: dict[int, float] = {}
        if m == 0:
            return scores
        qmask = np.uint64(0)
        for c in q:
            qmask |= np.uint64(_char_bit(ord(c)))
        missing = np.bitwise_count(qmask & ~self.masks)
        pool = np.flatnonzero(missing == 0)
        glob = query.is_glob
        full = self._subsequences(q, pool, m)
        if glob:
            full = self._glob_matches(query, full)
        if full.size:
            ideal = BASE * m + BONUS_FIRST + (BASE + BONUS_CONSEC) * (m - 1) + BONUS_END
            ratio = self._align(query, full) / ideal
            ok = ratio > -1e6
            ratio = ratio[ok]
            ratio = np.where(ratio >= 0, ratio, ratio / (1.0 - ratio))  # into (-1, 0)
            scores.update(zip(full[ok].tolist(), ratio.tolist(), strict=True))
        if m >= 4 and len(scores) < WEAK_WHEN:
            near = self._subsequences(q, np.flatnonzero(missing <= 1), m - 1)
            self._add_weak(near, scores)
        self._add_typos(query, scores)
        self._add_prefix(query, scores)
        self._add_exact(query, scores)
        return scores

    def _subsequences(self, q: str, pool: np.ndarray, least: int) -> np.ndarray:
        """The names in pool sharing a common subsequence of `least` characters or more
        with q (least == len(q): q is a subsequence), by RapidFuzz's bit-parallel LCS."""
        if not pool.size:
            return pool
        lcs = process.cdist(
            [q],
            self.squashed_array[pool].tolist(),
            scorer=LCSseq.similarity,
            score_cutoff=least,
            dtype=np.int32,
            workers=1,
        )[0]
        return pool[lcs >= least]

    def _glob_matches(self, query: Query, pool: np.ndarray) -> np.ndarray:
        """The names in pool holding the glob's segments in order (a `*` matches any run,
        separators and case are ignored), by one compiled regex; the pool is already
        cut to names holding the query as a subsequence, which every match does."""
        segments: list[str] = []
        for c, star in zip(query.chars, query.star_before, strict=True):
            if star or not segments:
                segments.append("")
            segments[-1] += c
        pattern = re.compile(".*?".join(re.escape(seg) for seg in segments))
        squashed = self.squashed
        return np.array([i for i in pool.tolist() if pattern.search(squashed[i])], dtype=np.int64)

    def _align(self, query: Query, idx: np.ndarray) -> np.ndarray:
        """Best alignment score of the query against each name in idx.

        An fzy-style dynamic programme with one step per query character, vectorised over
        names: matrices are position-major, so each step is a handful of whole-row NumPy
        operations, and names are aligned in buckets of similar length so that one long
        name does not widen every row.
        """
        out = np.empty(len(idx), dtype=np.float32)
        lens = self.lengths[idx]
        order = np.argsort(lens, kind="stable")
        sorted_lens = lens[order]
        lo = 0
        while lo < len(order):
            # A bucket costs a fixed overhead per query character plus its cells: keep
            # widths within 1.5x, but never split off fewer than BUCKET_MIN names.
            cap = max(int(sorted_lens[lo]) * 3 // 2, int(sorted_lens[lo]) + 8)
            hi = int(np.searchsorted(sorted_lens, cap, side="right"))
            hi = max(hi, min(lo + BUCKET_MIN, len(order)))
            if len(order) - hi < BUCKET_MIN:
                hi = len(order)
            part = order[lo:hi]
            out[part] = self._align_bucket(query, idx[part])
            lo = hi
        return out

    def _align_bucket(self, query: Query, idx: np.ndarray) -> np.ndarray:
        """_align() for names of similar length; rows are positions, columns names.

        A mismatch adds NEG instead of going through np.where, and running maxima over
        many names are row loops: both are several times faster on these shapes.
        """
        lens = self.lengths[idx]
        width = int(lens.max())
        block = np.ascontiguousarray(self.packed[idx, :, :width].transpose(1, 2, 0))
        codes, bonus, through, words = block
        before = np.empty_like(through)  # cost of the characters before position j
        before[0] = 0.0
        before[1:] = through[:-1]
        q = query.chars
        misses: dict[str, np.ndarray] = {}

        def miss(c: str) -> np.ndarray:
            if c not in misses:
                misses[c] = (codes != ord(c)).astype(np.float32) * NEG
            return misses[c]

        d = BASE + bonus - SKIP_LEAD * before + miss(q[0])
        consec_bonus = BASE + np.maximum(bonus, BONUS_CONSEC)
        # Landing on a word start costs TAIL_JUMP plus SKIP_WORD per word skipped whole
        # (word starts strictly between the two matches), whatever their length.
        land = np.where(bonus > 0, bonus + (BASE - TAIL_JUMP), NEG)
        land[1:] -= SKIP_WORD * words[:-1]
        counted = SKIP_WORD * words
        step = through - before
        vowel = np.where(step < (SKIP_VOWEL + SKIP_OTHER) / 2, 0.0, NEG).astype(np.float32)
        hop1 = np.full_like(d, NEG)
        hop1[2:] = consec_bonus[2:] + vowel[1:-1] - VOWEL_HOP
        hop2 = np.full_like(d, NEG)
        hop2[3:] = consec_bonus[3:] + vowel[1:-2] + vowel[2:-1] - 2 * VOWEL_HOP
        arrive = bonus + (BASE - GAP_OPEN) - before  # what a jump earns, before its skips
        best = np.empty_like(d)
        for i in range(1, len(q)):
            best[0] = NEG
            if query.star_before[i]:
                reach = _running_max(d + STAR_FACTOR * through)
                np.subtract(reach[:-1], STAR_FACTOR * before[1:], out=best[1:])
                best[1:] += BASE + bonus[1:]
            else:
                np.add(d[:-1], consec_bonus[1:], out=best[1:])
                if not query.is_glob:  # inside a glob segment: contiguous only
                    # A jump costs what it skips, but landing on a word start costs at
                    # most TAIL_JUMP plus SKIP_WORD per skipped word: an abbreviation takes
                    # a prefix of each word, so the rest of a word is skipped for free, and
                    # consecutive words beat words picked out of a longer name.
                    reach = _running_max(d + through)
                    jump = reach[:-2] + arrive[2:]
                    np.maximum(best[2:], jump, out=best[2:])
                    far = _running_max(d + counted)[:-2] + land[2:]
                    np.maximum(best[2:], far, out=best[2:])
                    # Hopping over one or two vowels keeps a run nearly contiguous:
                    # that is how people drop vowels (`tstflt` for test_float).
                    np.maximum(best[2:], d[:-2] + hop1[2:], out=best[2:])
                    np.maximum(best[3:], d[:-3] + hop2[3:], out=best[3:])
            d = best + miss(q[i])
            np.maximum(d, NEG, out=d)  # keep impossible cells from drifting further down
        d -= SKIP_TRAIL * (self.total_cost[idx] - through)
        d -= TRAIL_WORD * (self.total_words[idx] - words)
        d[lens - 1, np.arange(len(idx))] += BONUS_END
        return d.max(axis=0)

    def _add_typos(self, query: Query, scores: dict[int, float]) -> None:
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
        dist = process.cdist(
            [text],
            self.lower_array[idx].tolist(),
            scorer=OSA.distance,
            score_cutoff=cutoff,
            dtype=np.int32,
            workers=1,
        )[0]
        # A short query is one edit from many names by chance: trust the edit less.
        one = TYPO_ONE - TYPO_SHORT * max(0, TYPO_LONG - len(query.chars))
        close = dist <= cutoff
        for i, d in zip(idx[close].tolist(), dist[close].tolist(), strict=True):
            value = one if d <= 1 else TYPO_TWO
            if value > scores.get(i, -10.0):
                scores[i] = value

    def _add_prefix(self, query: Query, scores: dict[int, float]) -> None:
        """Names that start with the query, separators and all: someone typing a name from
        its start is part way through it, and the shorter names are the likelier ends."""
        text = query.raw.lower()
        if len(text) < 2 or query.is_glob or query.owner:
            return
        start = bisect.bisect_left(self.sorted_lower, text)
        end = bisect.bisect_left(self.sorted_lower, text + "\U0010ffff")
        for i in self.lower_order[start:end].tolist():
            if scores.get(i, -10.0) < PREFIX:
                scores[i] = PREFIX

    def _add_exact(self, query: Query, scores: dict[int, float]) -> None:
        """The whole name typed, in any case or separator convention, always wins."""
        text = query.raw if not query.owner else query.raw[-len(query.chars) :]
        for i in self.by_squashed.get(query.chars, []):
            value = EXACT_SQUASHED
            if self.lower[i] == text.lower():
                value = EXACT_LOWER
            if self.names[i] == text:
                value = EXACT_CASE
            scores[i] = max(scores.get(i, -10.0), value)

    def _add_weak(self, near: np.ndarray, scores: dict[int, float]) -> None:
        """Names missing one query character, shortest first and capped, so that an
        unlimited list still finds a name the query garbles."""
        if not near.size:
            return
        lens = self.lengths[near]
        order = np.argsort(lens, kind="stable")[:WEAK_CAP]
        for j in order.tolist():
            i = int(near[j])
            if i not in scores:
                scores[i] = WEAK - float(lens[j]) / 1000.0


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
        order = sorted(range(len(names)), key=lambda i: (len(names[i]), names[i]))
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
        return [(i, chosen.get(i), scores[i]) for i in ids.tolist()]

    def _order(
        self, text: str, limit: int
    ) -> tuple[np.ndarray, dict[int, Definition], dict[int, float]]:
        """Name indexes best first, the definitions chosen for an owner, and the scores."""
        query = parse_query(text)
        scores = self.ranker.score(query)
        chosen: dict[int, Definition] = {}
        if query.owner:
            plain = parse_query(text.replace("::", "_").replace(".", "_").replace("#", "_"))
            for i, value in self.ranker.score(plain).items():
                if value > scores.get(i, -10.0):
                    scores[i] = value
            self._owner_bonus(query.owner, scores, chosen)
        if not scores:
            return np.zeros(0, dtype=np.int64), chosen, scores
        ids = np.fromiter(scores.keys(), dtype=np.int64, count=len(scores))
        values = np.fromiter(scores.values(), dtype=np.float64, count=len(scores))
        # Rounded, so that float noise between equal alignments cannot decide a tie.
        order = np.lexsort((self.tie_rank[ids], -np.round(values, 6)))
        if limit > 0:
            order = order[:limit]
        return ids[order], chosen, scores

    def search(self, text: str, limit: int = 0) -> list[Hit]:
        """The best `limit` names for the query (all plausible ones for 0), best first."""
        names, defs = self.catalog.names, self.catalog.definitions
        hits = []
        for i, where, value in self.ranked(text, limit):
            at = where or defs[i][0]
            hits.append(Hit(names[i], at.path, at.line, value))
        return hits

    def search_json(self, text: str, limit: int = 0) -> bytes:
        """search() as the one-line JSON list the harness reads; each name's row is
        serialised once per process, which matters for long unlimited lists."""
        import orjson

        ids, chosen, _ = self._order(text, limit)
        names, defs = self.catalog.names, self.catalog.definitions
        for i in ids[~self._have_row[ids]].tolist():
            at = defs[i][0]
            self._rows[i] = orjson.dumps({"name": names[i], "file": at.path, "line": at.line})
        self._have_row[ids] = True
        parts = self._rows[ids].tolist()
        if chosen:
            for k, i in enumerate(ids.tolist()):
                where = chosen.get(i)
                if where is not None:
                    row = {"name": names[i], "file": where.path, "line": where.line}
                    parts[k] = orjson.dumps(row)
        return b"[" + b",".join(parts) + b"]"

    def _owner_bonus(
        self, owner: str, scores: dict[int, float], chosen: dict[int, Definition]
    ) -> None:
        """`Owner::name`: lift names defined inside a scope that names the owner, and
        point at that definition rather than the first one."""
        for i, value in list(scores.items()):
            if value <= WEAK:
                continue
            best = 0.0
            for d in self.catalog.definitions[i]:
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
            scores[i] = value + best

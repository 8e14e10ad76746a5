"""What the finder derives from its distinct names alone, as flat arrays that kernel.c
walks: each name's folded letters and digits (as codes, and as bytes), its word starts,
its character-set mask, the bit sets over the names per character, the names (and their
masks) by the length of their lowercased form, the lowercased names sorted, the names
themselves, and the tie order.

The `index` command builds them once (store.py keeps them in the index, where a query
process maps them without building anything) and the path mode builds them in memory
(rank.Ranker). None of them depends on a weight: what does (each character's skip cost)
is computed by kernel.c when a process opens the names, so a change of weights indexes
nothing. They are built with NumPy, CHUNK names at a time into arrays sized for every
character, so memory follows the names' total length and a step's temporaries (several
bytes a character each) stay small.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from recall.finders.reference.chars import DIGIT, LOWER, OTHER, UPPER, char_bit, classify

CHUNK = 1 << 13  # names per step of the build
BYTE_OTHER = 255  # a code this high or higher is this byte (kernel.c's BYTE_OTHER)
PAD = 64  # bytes after the last name's, which the kernel's 16-byte loads may read (15 at most)


def name_arrays(names: Sequence[str]) -> dict[str, np.ndarray]:
    """Every array of the module's docstring, under the name kernel.c's rk_names gives
    it."""
    names = list(names)
    count = len(names)
    room = sum(map(len, names))
    codes = np.empty(room, dtype=np.int32)
    starts = np.empty(room, dtype=np.uint8)
    lengths = np.zeros(count, dtype=np.int64)
    masks = np.zeros(count, dtype=np.uint64)
    twice = np.zeros(count, dtype=np.uint64)
    filled = 0
    for lo in range(0, count, CHUNK):
        part_codes, part_starts, part_lengths, part_masks, part_twice = _chunk(
            names[lo : lo + CHUNK]
        )
        size = part_codes.size
        codes[filled : filled + size] = part_codes
        starts[filled : filled + size] = part_starts
        lengths[lo : lo + CHUNK] = part_lengths
        masks[lo : lo + CHUNK] = part_masks
        twice[lo : lo + CHUNK] = part_twice
        filled += size
    codes, starts = codes[:filled], starts[:filled]
    as_bytes = np.zeros(filled + PAD, dtype=np.uint8)
    np.minimum(codes, BYTE_OTHER, out=as_bytes[:filled], casting="unsafe")
    lower = [n.lower() for n in names]
    # the lowercased names sorted (stably): prefix lookup bisects them, and UTF-8's byte
    # order is the code points' order
    lower_order = np.argsort(np.array(lower, dtype=object), kind="stable").astype(np.int64)
    lower_rank = np.empty(count, dtype=np.int64)
    lower_rank[lower_order] = np.arange(count)
    sorted_lower, lower_ends = utf8_arrays([lower[i] for i in lower_order.tolist()])
    # the names by the length of their lowercased form, and where each length starts:
    # the names a typo can be are the few of about the query's length
    lower_lengths = np.fromiter(map(len, lower), dtype=np.int64, count=count)
    by_length = np.argsort(lower_lengths, kind="stable").astype(np.int64)
    longest = int(lower_lengths.max(initial=0))
    name_bytes, name_ends = utf8_arrays(names)
    return {
        "offsets": np.concatenate(([0], np.cumsum(lengths)[:-1])).astype(np.int64),
        "lengths": lengths,
        "codes": codes,
        "bytes": as_bytes,
        "starts": starts,
        "masks": masks,
        "sets": bit_sets(masks),
        "twice_sets": bit_sets(twice),
        "by_length": by_length,
        "length_masks": masks[by_length],
        "length_starts": np.searchsorted(lower_lengths[by_length], np.arange(longest + 2)).astype(
            np.int64
        ),
        "lower": sorted_lower,
        "lower_ends": lower_ends,
        "lower_order": lower_order,
        "lower_rank": lower_rank,
        "names": name_bytes,
        "name_ends": name_ends,
        "tie_rank": tie_rank(names),
    }


def utf8_arrays(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Texts as one UTF-8 buffer (bytes in an array) and where each one ends."""
    buffer = np.frombuffer("".join(texts).encode("utf-8"), dtype=np.uint8)
    sizes = np.fromiter(
        (len(t) if t.isascii() else len(t.encode("utf-8")) for t in texts),
        dtype=np.int64,
        count=len(texts),
    )
    return buffer, np.cumsum(sizes, dtype=np.int64)


def tie_rank(names: Sequence[str]) -> np.ndarray:
    """Each name's place in the tie order, shorter name then name: distinct names make that
    a total order, so a definition's path and line never have to be consulted. (Two stable
    sorts, by name then by length, in NumPy: no tuple per name.)"""
    by_name = np.argsort(np.array(names, dtype=object), kind="stable")
    lengths = np.fromiter(map(len, names), dtype=np.int64, count=len(names))
    order = by_name[np.argsort(lengths[by_name], kind="stable")]
    rank = np.empty(len(names), dtype=np.int64)
    rank[order] = np.arange(len(names))
    return rank


def bit_sets(masks: np.ndarray) -> np.ndarray:
    """For each of the 64 bits, the names whose mask has it, as a bitset over the names: a
    word of 64 names, name i at bit i % 64 of word i // 64; the 64 sets one after another
    (words each, flat, as an index keeps it). The kernel ANDs the sets of a query's bits,
    a word at a time, where a pass would read every name's mask."""
    count = masks.size
    words = (count + 63) // 64
    padded = np.zeros(words * 64, dtype=np.uint64)
    padded[:count] = masks
    out = np.empty((64, words), dtype=np.uint64)
    for bit in range(64):
        held = ((padded >> np.uint64(bit)) & np.uint64(1)).astype(np.uint8)
        out[bit] = np.packbits(held, bitorder="little").view("<u8")
    return out.reshape(-1)


def _chunk(names: list[str]) -> tuple[np.ndarray, ...]:
    """A run of names' codes, word starts, lengths, masks and twice masks."""
    count = len(names)
    flat = np.frombuffer(("\0".join(names) + "\0").encode("utf-32-le"), np.uint32)
    kind, folded = _classes(flat)
    alnum = kind != OTHER
    prev = np.concatenate(([OTHER], kind[:-1]))
    nxt = np.concatenate((kind[1:], [OTHER]))
    starts = alnum & (
        (prev == OTHER)
        | ((kind == UPPER) & (prev == LOWER))
        | ((kind == UPPER) & (prev == UPPER) & (nxt == LOWER))
        | ((kind != DIGIT) & (prev == DIGIT))
    )
    ends = flat == 0
    owner = np.cumsum(ends, dtype=np.int64) - ends  # name number of every character
    rows = owner[alnum]
    codes = folded[alnum].astype(np.int32)
    lens = np.bincount(rows, minlength=count).astype(np.int64)
    offsets = np.concatenate(([0], np.cumsum(lens)[:-1])).astype(np.int64)
    lut = np.array([char_bit(c) for c in range(128)], dtype=np.uint64)
    bits = np.where(codes < 128, lut[np.minimum(codes, 127)], 0).astype(np.uint64)
    for at in np.flatnonzero(codes >= 128).tolist():
        bits[at] = char_bit(int(codes[at]))
    masks = np.zeros(count, dtype=np.uint64)
    filled = lens > 0
    if codes.size:
        masks[filled] = np.bitwise_or.reduceat(bits, offsets[filled])
    # the bits of the characters a name holds twice or more: (name, code) pairs sorted,
    # a pair equal to the one before is a repeat
    pairs = (rows << 21) | codes.astype(np.int64)
    order = np.argsort(pairs, kind="stable")
    again = order[1:][pairs[order[1:]] == pairs[order[:-1]]]
    twice = np.zeros(count, dtype=np.uint64)
    np.bitwise_or.at(twice, rows[again], bits[again])
    return codes, starts[alnum].astype(np.uint8), lens, masks, twice


def _classes(flat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Character class and folded code of every character, via a table for ASCII and
    Python's own rules for the few other code points."""
    table = [classify(c) for c in range(128)]
    kind_lut = np.array([k for k, _ in table], dtype=np.int8)
    fold_lut = np.array([f for _, f in table], dtype=np.uint32)
    small = np.minimum(flat, 127)
    kind = kind_lut[small]
    folded = fold_lut[small]
    wide = np.flatnonzero(flat >= 128)
    if wide.size:
        for code in np.unique(flat[wide]).tolist():
            k, f = classify(code)
            where = wide[flat[wide] == code]
            kind[where] = k
            folded[where] = f
    return kind, folded

"""The compiled inner loop of the ranker (kernel.c), built on first use and called here.

rank.py keeps the names as flat arrays (each name's folded codes, word starts and running
skip costs, concatenated, with offsets), so memory follows the names' total length.
kernel.c walks them in one pass per query: for each name the character-set masks, the
subsequence (for a glob, the segments in order) and the alignment, where NumPy needed a
padded matrix per bucket and Python a loop per name. Its float operations are NumPy's,
in float32 and in the same order, so rankings are byte-identical to the NumPy ranker.
It also copies an answer's rows (kept in the index as JSON) into one list (Rows).

The C file is compiled with the C compiler on PATH (`cc`), once per content of kernel.c,
its flags and the weights, into RECALL_KERNEL_CACHE, else recall's folder in the user's
cache dir (under XDG_CACHE_HOME, which the harness points into each run's own folder):
never beside this file, since the finder runs from a tree under test that it must not
write into. A compile takes a fraction of a second; loading the result, a millisecond.
The `index` command compiles it, so that a run's query processes, whose time is the
queries' time, only load it; with a kept index (no `index` process), the first one builds.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from recall.errors import RecallError
from recall.finders.reference import weights

SOURCE = Path(__file__).with_name("kernel.c")
# -ffp-contract=off: no fused multiply-add, so each float32 operation rounds as NumPy's.
FLAGS = ("-O2", "-fPIC", "-shared", "-std=c11", "-ffp-contract=off")
WEIGHTS = (
    "BASE", "BONUS_FIRST", "BONUS_WORD", "BONUS_CONSEC", "BONUS_END", "GAP_OPEN", "VOWEL_HOP",
    "TAIL_JUMP", "SKIP_WORD", "SKIP_VOWEL", "SKIP_OTHER", "SKIP_LEAD", "SKIP_TRAIL",
    "TRAIL_WORD", "STAR_FACTOR", "NEG",
)  # fmt: skip

# Packed.bytes holds each code below this as itself and every other as this one, which no
# query of one-byte characters holds: so such a query matches bytes as it matches codes.
BYTE_OTHER = 255
# Bytes after the last name's, which the kernel's 16-byte loads may read (15 at most).
PAD = 64

_P = ctypes.c_void_p
_I = ctypes.c_int64


def cache_dir() -> Path:
    """Where compiled kernels are kept."""
    chosen = os.environ.get("RECALL_KERNEL_CACHE")
    if chosen:
        return Path(chosen)
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("recall")) / "kernel"


def compile_command(source: Path, target: Path) -> list[str]:
    """The compiler's argv: the weights go in as -D definitions, repr() being exact."""
    defines = [f"-D{name}={float(getattr(weights, name))!r}" for name in WEIGHTS]
    return ["cc", *FLAGS, *defines, "-o", str(target), str(source)]


@functools.cache
def library() -> ctypes.CDLL:
    """The compiled kernel, built first if this content has not been built before."""
    source = SOURCE.read_bytes()
    key = hashlib.sha256(
        b"\0".join([source, platform.machine().encode(), _compiler().encode(),
                    *map(str.encode, compile_command(Path("kernel.c"), Path("kernel.so")))])
    ).hexdigest()[:20]  # fmt: skip
    folder = cache_dir()
    target = folder / f"kernel-{key}.so"
    if not target.is_file():
        _build(folder, target)
    try:
        lib = ctypes.CDLL(str(target))
    except OSError:  # not a library (damaged in the cache): built again, once
        _build(folder, target)
        lib = ctypes.CDLL(str(target))
    lib.rk_match.restype = _I
    lib.rk_match.argtypes = [_P, _P, ctypes.c_int32, _P, _P, _I, ctypes.c_int32, _I,
                             ctypes.c_uint64, ctypes.c_uint64, _P, _P, _I, *[_P] * 6, _I, _P,
                             _P, _P, _P]  # fmt: skip
    lib.rk_near.restype = _I
    lib.rk_near.argtypes = [_P, _P, ctypes.c_int32, _P, _I, ctypes.c_uint64, ctypes.c_uint64,
                            _P, _P, _I, *[_P] * 5, _I, _P]  # fmt: skip
    lib.rk_rows.restype = _I
    lib.rk_rows.argtypes = [_P, _P, _P, _I, _P, _I]
    return lib


def _compiler() -> str:
    """The cc on PATH as its file (path, size, mtime): a library another compiler built is
    not this one's, and a stat costs nothing beside a `cc --version` at every start."""
    found = shutil.which("cc")
    if found is None:
        return "none"
    real = os.path.realpath(found)
    stat = os.stat(real)
    return f"{real}:{stat.st_size}:{stat.st_mtime_ns}"


def _build(folder: Path, target: Path) -> None:
    """Compile kernel.c into target, through a temporary file renamed into place, so a
    failed or concurrent build never leaves a half-written library to load."""
    if shutil.which("cc") is None:
        raise RecallError(
            f"the reference finder compiles {SOURCE.name} on first use and needs a C "
            "compiler: no `cc` on PATH (install gcc)"
        )
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".kernel-", suffix=".so", dir=folder)
    except OSError as exc:
        raise RecallError(f"cannot write the compiled kernel into {folder}: {exc}") from None
    os.close(fd)
    try:
        proc = subprocess.run(
            compile_command(SOURCE, Path(tmp)), capture_output=True, text=True, check=False
        )
        if proc.returncode != 0:
            tail = proc.stderr.strip().splitlines()[-1:] or [f"exit {proc.returncode}"]
            raise RecallError(f"compiling {SOURCE}: {tail[0]}")
        os.replace(tmp, target)
    finally:
        Path(tmp).unlink(missing_ok=True)


def _ptr(array: np.ndarray) -> int:
    return int(array.__array_interface__["data"][0])


def _one_byte(qcodes: np.ndarray) -> bool:
    """Whether every query character is one byte of Packed.bytes (below BYTE_OTHER): only
    then may the kernel compare bytes in place of codes."""
    return bool(qcodes.size) and int(qcodes.max()) < BYTE_OTHER


def match(
    qcodes: np.ndarray,
    star_before: np.ndarray,
    seg_starts: np.ndarray,
    is_glob: bool,
    qmask: int,
    qtwice: int,
    names: Packed,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every name that holds the query (as a subsequence, or the glob's segments in
    order) and its raw alignment score, in name order; and the names whose letters and
    digits are the query's exactly (a glob's included, whether the glob holds or not).
    qmask has the bits of the query's characters, qtwice those of the ones it holds twice
    or more (a name must hold them as often: Packed.twice_sets)."""
    ids, raw, exact = names.out_ids, names.out_raw, names.out_exact
    exacts = ctypes.c_int64(0)
    qbytes = qcodes.astype(np.uint8)
    found = library().rk_match(
        _ptr(qcodes), _ptr(qbytes), _one_byte(qcodes), _ptr(star_before), _ptr(seg_starts),
        seg_starts.size - 1, is_glob, qcodes.size, qmask, qtwice, *names.set_pointers,
        *names.pointers[1:], names.width, _ptr(ids), _ptr(raw), _ptr(exact),
        ctypes.addressof(exacts),
    )  # fmt: skip
    if found < 0:
        raise MemoryError("the finder's kernel ran out of memory")
    return ids[:found].copy(), raw[:found].copy(), exact[: exacts.value].copy()


def near(
    qcodes: np.ndarray, qbits: np.ndarray, qmask: int, qtwice: int, names: Packed
) -> np.ndarray:
    """The names that hold all but at most one of the query's characters in order, in
    name order (qbits: each character's bit; qmask and qtwice as for match)."""
    count = names.masks.size
    ids = names.out_ids
    qbytes = qcodes.astype(np.uint8)
    found = library().rk_near(
        _ptr(qcodes), _ptr(qbytes), _one_byte(qcodes), _ptr(qbits), qcodes.size, qmask, qtwice,
        *names.set_pointers, *names.pointers[:5], count, _ptr(ids),
    )  # fmt: skip
    if found < 0:
        raise MemoryError("the finder's kernel ran out of memory")
    return ids[:found].copy()


class Rows:
    """Every name's answer row (UTF-8 JSON, concatenated in rows, uint8; ends: where each
    one ends, int64), and a buffer kept for the lists made of them: an unlimited answer
    is some hundred kilobytes, copied once out of the buffer."""

    def __init__(self, rows: np.ndarray, ends: np.ndarray) -> None:
        self.rows = np.ascontiguousarray(rows, dtype=np.uint8)
        self.ends = np.ascontiguousarray(ends, dtype=np.int64)
        self.buffer = np.empty(1 << 16, dtype=np.uint8)

    def json(self, ids: np.ndarray) -> bytes:
        """The JSON list of the rows of ids, in their order."""
        ids = np.ascontiguousarray(ids, dtype=np.int64)
        while True:
            written = library().rk_rows(
                _ptr(self.rows), _ptr(self.ends), _ptr(ids), ids.size, _ptr(self.buffer),
                self.buffer.size,
            )  # fmt: skip
            if written >= 0:
                return self.buffer[:written].tobytes()
            self.buffer = np.empty(max(-written, 2 * self.buffer.size), dtype=np.uint8)


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


class Packed:
    """The flat arrays the kernel walks; every array C-contiguous, of the dtype kernel.c
    reads (a wrong one would be read as garbage, so they are converted here)."""

    def __init__(
        self,
        codes: np.ndarray,
        starts: np.ndarray,
        through: np.ndarray,
        offsets: np.ndarray,
        lengths: np.ndarray,
        masks: np.ndarray,
        sets: np.ndarray,
        twice_sets: np.ndarray,
    ) -> None:
        """sets and twice_sets: bit_sets() of the masks and of the bits of the characters
        each name holds twice or more."""
        self.codes = np.ascontiguousarray(codes, dtype=np.int32)
        self.starts = np.ascontiguousarray(starts, dtype=np.uint8)
        self.through = np.ascontiguousarray(through, dtype=np.float32)
        self.offsets = np.ascontiguousarray(offsets, dtype=np.int64)
        self.lengths = np.ascontiguousarray(lengths, dtype=np.int64)
        self.masks = np.ascontiguousarray(masks, dtype=np.uint64)
        words = (self.masks.size + 63) // 64
        self.sets = np.ascontiguousarray(sets, dtype=np.uint64)
        self.twice_sets = np.ascontiguousarray(twice_sets, dtype=np.uint64)
        if self.sets.size != 64 * words or self.twice_sets.size != 64 * words:
            raise ValueError(f"bit sets of 64 x {words} words expected for the names")
        self.bytes = np.zeros(self.codes.size + PAD, dtype=np.uint8)
        np.minimum(self.codes, BYTE_OTHER, out=self.bytes[: self.codes.size], casting="unsafe")
        self.width = int(self.lengths.max(initial=0))
        # Where the kernel writes its answers, one slot a name at most: kept, since fresh
        # arrays of that size would be fresh pages, each faulted in at every query.
        self.out_ids = np.empty(self.masks.size, np.int64)
        self.out_raw = np.empty(self.masks.size, np.float32)
        self.out_exact = np.empty(self.masks.size, np.int64)
        # the names' addresses in the kernel's order: rk_match takes all but the masks,
        # rk_near the first five
        self.pointers = tuple(
            _ptr(a)
            for a in (
                self.masks, self.offsets, self.lengths, self.codes, self.bytes, self.starts,
                self.through,
            )
        )  # fmt: skip
        # the addresses of the bit sets and their words per bit, for rk_match and rk_near
        self.set_pointers = (_ptr(self.sets), _ptr(self.twice_sets), words)

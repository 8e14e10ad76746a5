"""The compiled inner loop of the ranker (kernel.c), built on first use and called here.

rank.py keeps the names as flat arrays (each name's folded codes, word starts and running
skip costs, concatenated, with offsets), so memory follows the names' total length.
kernel.c walks them in one pass per query: for each name the character-set mask, the
subsequence (for a glob, the segments in order) and the alignment, where NumPy needed a
padded matrix per bucket and Python a loop per name. Its float operations are NumPy's,
in float32 and in the same order, so rankings are byte-identical to the NumPy ranker.

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
    lib.rk_match.argtypes = [_P, _P, _P, _I, ctypes.c_int32, _I, ctypes.c_uint64, *[_P] * 6,
                             _I, _I, _P, _P, _P, _P]  # fmt: skip
    lib.rk_near.restype = _I
    lib.rk_near.argtypes = [_P, _I, ctypes.c_uint64, _P, _P, _P, _P, _I, _P]
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


def match(
    qcodes: np.ndarray,
    star_before: np.ndarray,
    seg_starts: np.ndarray,
    is_glob: bool,
    qmask: int,
    names: Packed,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every name that holds the query (as a subsequence, or the glob's segments in
    order) and its raw alignment score, in name order; and the names whose letters and
    digits are the query's exactly (a glob's included, whether the glob holds or not)."""
    count = names.masks.size
    ids = np.empty(count, np.int64)
    raw = np.empty(count, np.float32)
    exact = np.empty(count, np.int64)
    exacts = ctypes.c_int64(0)
    found = library().rk_match(
        _ptr(qcodes), _ptr(star_before), _ptr(seg_starts), seg_starts.size - 1, is_glob,
        qcodes.size, qmask, *names.pointers, count, names.width, _ptr(ids), _ptr(raw),
        _ptr(exact), ctypes.addressof(exacts),
    )  # fmt: skip
    if found < 0:
        raise MemoryError("the finder's kernel ran out of memory")
    return ids[:found], raw[:found], exact[: exacts.value]


def near(qcodes: np.ndarray, qmask: int, names: Packed) -> np.ndarray:
    """The names that hold all but at most one of the query's characters in order, in
    name order."""
    count = names.masks.size
    ids = np.empty(count, np.int64)
    found = library().rk_near(
        _ptr(qcodes), qcodes.size, qmask, *names.pointers[:4], count, _ptr(ids),
    )  # fmt: skip
    if found < 0:
        raise MemoryError("the finder's kernel ran out of memory")
    return ids[:found]


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
    ) -> None:
        self.codes = np.ascontiguousarray(codes, dtype=np.int32)
        self.starts = np.ascontiguousarray(starts, dtype=np.uint8)
        self.through = np.ascontiguousarray(through, dtype=np.float32)
        self.offsets = np.ascontiguousarray(offsets, dtype=np.int64)
        self.lengths = np.ascontiguousarray(lengths, dtype=np.int64)
        self.masks = np.ascontiguousarray(masks, dtype=np.uint64)
        self.width = int(self.lengths.max(initial=0))
        # the addresses rk_match takes, in its order (rk_near takes the first four)
        self.pointers = tuple(
            _ptr(a)
            for a in (self.masks, self.offsets, self.lengths, self.codes, self.starts, self.through)
        )

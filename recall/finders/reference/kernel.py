"""The compiled kernel (kernel.c): built when the finder indexes, carried in the index,
loaded by each query process, and called here through ctypes.

kernel.c holds every rule of the query (rank.py says which applies with what text) over
the names' flat arrays (arrays.py), so a query is one call and the query process imports
neither NumPy nor RapidFuzz. It is compiled with the C compiler on PATH (`cc`) by the
`index` command, into the kernel cache (RECALL_KERNEL_CACHE, else recall's folder in the
user's cache dir: under XDG_CACHE_HOME, which the harness points into each session's own
folder), an entry of recall.cache known by kernel.c, its flags, the machine and the
compiler's content (recall.toolchain), and checked against its digest when read. The
index then carries the library's bytes, so a query process (whose start-up counts in the
queries' time) compiles nothing, hashes no compiler and finds no cache: it loads the
library from the index through an anonymous file, checked to be the library this
kernel.c makes (its interface version and every function this module calls) before any
query. The weights are passed at run time, so the library depends on kernel.c and the
compiler alone.
"""

from __future__ import annotations

import ctypes
import hashlib
import mmap
import os

from recall.errors import RecallError

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernel.c")
# -ffp-contract=off: no fused multiply-add, so each float operation rounds as NumPy's did
FLAGS = ("-O2", "-fPIC", "-shared", "-std=c11", "-ffp-contract=off")
LIBS = ("-lm",)
VERSION = 5  # kernel.c's rk_version(): the interface below
LIBRARY = "kernel.so"  # the file inside a kernel cache entry
MARKER = ".recall-compiled"

_I = ctypes.c_int64
_P = ctypes.c_void_p
_D = ctypes.c_double
_MIN = -(2**63)  # kernel.c's INT64_MIN: memory ran out


class Weights(ctypes.Structure):
    """kernel.c's rk_weights: the alignment's weights (weights.py) and the merged scale's
    (rank.py)."""

    _fields_ = [
        *((name, _D) for name in (
            "base", "bonus_first", "bonus_word", "bonus_consec", "bonus_end", "gap_open",
            "vowel_hop", "tail_jump", "skip_word", "skip_vowel", "skip_other", "skip_lead",
            "skip_trail", "trail_word", "star_factor", "neg", "exact_case", "exact_lower",
            "exact_squashed", "typo_one", "typo_short", "typo_two", "prefix", "weak", "whole",
            "exact_words",
        )),
        *((name, _I) for name in ("typo_long", "weak_cap", "weak_when")),
    ]  # fmt: skip


# kernel.c's rk_names: each field a count (_I) or an array's address (_P), in its order
NAMES_FIELDS = (
    ("count", _I), ("chars", _I), ("offsets", _P), ("lengths", _P), ("codes", _P),
    ("bytes", _P), ("starts", _P), ("masks", _P), ("sets", _P), ("twice_sets", _P),
    ("by_length", _P), ("length_masks", _P), ("length_starts", _P), ("lengths_count", _I),
    ("lower", _P), ("lower_size", _I), ("lower_ends", _P), ("lower_order", _P), ("lower_rank", _P),
    ("names", _P), ("names_size", _I), ("name_ends", _P), ("tie_rank", _P), ("rows", _P),
    ("rows_size", _I), ("row_ends", _P),
)  # fmt: skip


ARRAYS = tuple(name for name, kind in NAMES_FIELDS if kind is _P)


class Names(ctypes.Structure):
    """kernel.c's rk_names: the addresses of the names' arrays and their sizes."""

    _fields_ = list(NAMES_FIELDS)


class QueryArgs(ctypes.Structure):
    """kernel.c's rk_query: one query's texts, each rule's own (rank.query_args)."""

    _fields_ = [
        ("chars", ctypes.c_char_p), ("m", _I), ("star", ctypes.c_char_p),
        ("is_glob", ctypes.c_int32), ("typo_text", ctypes.c_char_p), ("typo_len", _I),
        ("typo_chars", ctypes.c_char_p), ("typo_chars_len", _I),
        ("prefix", ctypes.c_char_p), ("prefix_len", _I), ("exact", ctypes.c_char_p),
        ("exact_len", _I), ("exact_lower", ctypes.c_char_p), ("exact_lower_len", _I),
    ]  # fmt: skip


_OUT_I = ctypes.POINTER(ctypes.POINTER(_I))
_OUT_D = ctypes.POINTER(ctypes.POINTER(_D))
_OUT_F = ctypes.POINTER(ctypes.POINTER(ctypes.c_float))
# every function this module calls: (result, arguments)
FUNCTIONS: dict[str, tuple[object, list[object]]] = {
    "rk_version": (_I, []),
    "rk_check": (ctypes.c_char_p, [ctypes.POINTER(Names)]),
    "rk_open": (_P, [ctypes.POINTER(Names), ctypes.POINTER(Weights)]),
    "rk_close": (None, [_P]),
    "rk_search": (_I, [_P, ctypes.POINTER(QueryArgs), _I, _P, _I]),
    "rk_answer": (_I, [_P, _P, _I]),
    "rk_score": (_I, [_P, ctypes.POINTER(QueryArgs), _OUT_I, _OUT_D]),
    "rk_order": (_I, [_P, _P, _P, _I, _I, _P]),
    "rk_match": (_I, [_P, ctypes.POINTER(QueryArgs), _OUT_I, _OUT_F, _OUT_I, ctypes.POINTER(_I)]),
    "rk_near": (_I, [_P, ctypes.POINTER(QueryArgs), _OUT_I]),
    "rk_through": (ctypes.POINTER(ctypes.c_float), [_P]),
    "rk_osa": (_I, [_P, _I, _P, _I, _I]),
    "rk_word_starts": (_I, [_P, _I, _I, _P]),
}


def address_of(buffer: mmap.mmap | bytearray) -> int:
    """The address of a writable buffer's first byte (an mmap, a bytearray)."""
    return ctypes.addressof(ctypes.c_char.from_buffer(buffer))


def source_digest() -> str:
    """What a library is made from besides the compiler: kernel.c, its flags and
    libraries. An index records it, and a query process refuses an index whose library
    was made from another."""
    with open(SOURCE, "rb") as handle:
        source = handle.read()
    return hashlib.sha256(b"\0".join([source, *(f.encode() for f in (*FLAGS, *LIBS))])).hexdigest()


def compile_command(source: str, target: str) -> list[str]:
    return ["cc", *FLAGS, "-o", target, source, *LIBS]


def load(data: bytes, origin: str) -> ctypes.CDLL:
    """The library whose bytes are data (origin names where they came from, for errors),
    checked to be this kernel.c's: anything else is a RecallError, before any query."""
    try:
        lib = _open_library(data)
    except OSError as exc:
        raise RecallError(f"{origin}: the compiled kernel is not a library: {exc}") from None
    for name, (result, arguments) in FUNCTIONS.items():
        try:
            function = getattr(lib, name)
        except AttributeError:
            raise RecallError(
                f"{origin}: the compiled kernel has no {name} (not built from this kernel.c)"
            ) from None
        function.restype = result
        function.argtypes = arguments
    if lib.rk_version() != VERSION:
        raise RecallError(
            f"{origin}: the compiled kernel is version {lib.rk_version()}, this kernel.py "
            f"calls version {VERSION}"
        )
    return lib


def _open_library(data: bytes) -> ctypes.CDLL:
    """data loaded as a library from an anonymous file (Linux's memfd), or, where there is
    none or it may not be mapped executable, from a temporary file removed once loaded."""
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("recall-kernel", os.MFD_CLOEXEC)
        try:
            _write_all(fd, data)
            return ctypes.CDLL(f"/proc/self/fd/{fd}")
        except OSError:
            pass
        finally:
            os.close(fd)
    import tempfile

    fd, path = tempfile.mkstemp(prefix="recall-kernel-", suffix=".so")
    try:
        _write_all(fd, data)
        return ctypes.CDLL(path)
    finally:
        os.close(fd)
        os.unlink(path)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def cache_dir() -> str:
    """Where compiled kernels are kept."""
    chosen = os.environ.get("RECALL_KERNEL_CACHE")
    if chosen:
        return chosen
    from platformdirs import user_cache_dir

    return os.path.join(user_cache_dir("recall"), "kernel")


def cache_key() -> str:
    """A compiled kernel's entry in the kernel cache: what it is made from (source_digest),
    the machine, and the compiler on PATH by its content (recall.toolchain, the identity
    the harness keys kept indexes and results by)."""
    import platform

    from recall.toolchain import compiler_identity

    parts = [source_digest(), platform.machine(), compiler_identity("cc")]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:24]


def build() -> bytes:
    """The library this kernel.c makes with the cc on PATH, as bytes: from the kernel cache
    (its digest checked), else compiled into it. Checked by load() before it is kept, so
    a compiler that writes nothing, or something that is not this kernel, fails here with
    one line, before any index is written or any query runs."""
    import shutil
    import subprocess
    from pathlib import Path

    from recall.cache import FolderEntry

    if shutil.which("cc") is None:
        raise RecallError(
            "the reference finder compiles kernel.c when it indexes and needs a C "
            "compiler: no `cc` on PATH (install gcc)"
        )
    key = cache_key()
    folder = Path(cache_dir())

    def make(tmp: Path) -> None:
        target = tmp / LIBRARY
        proc = subprocess.run(
            compile_command(SOURCE, str(target)), capture_output=True, text=True, check=False
        )
        if proc.returncode != 0:
            tail = proc.stderr.strip().splitlines()[-1:] or [f"exit {proc.returncode}"]
            raise RecallError(f"compiling {SOURCE}: {tail[0]}")
        if not target.is_file() or not target.stat().st_size:
            raise RecallError(f"compiling {SOURCE}: cc exited 0 but wrote no library")
        load(target.read_bytes(), f"{SOURCE} compiled by cc")

    entry = FolderEntry(folder.parent, folder.name, key, MARKER)
    try:
        made = entry.get(make, "kernel.c compiled")
        return (made / LIBRARY).read_bytes()
    except OSError as exc:
        raise RecallError(
            f"cannot write the compiled kernel into {folder}: {exc.strerror or exc}"
        ) from None


class Kernel:
    """An open set of names (kernel.c's rk_open): the library, the names' arrays (whose
    buffers `keep` holds alive: the addresses in names point into them) and the weights."""

    def __init__(self, lib: ctypes.CDLL, names: Names, weights: Weights, keep: object) -> None:
        problem = lib.rk_check(ctypes.byref(names))
        if problem is not None:
            raise RecallError(f"the names' arrays do not hold together: {problem.decode()}")
        self.lib = lib
        self._keep = keep
        self._state = lib.rk_open(ctypes.byref(names), ctypes.byref(weights))
        if not self._state:
            raise MemoryError("the finder's kernel ran out of memory")
        self._room(1 << 17)
        self._ids = ctypes.POINTER(_I)()
        self._values = ctypes.POINTER(_D)()

    def _room(self, size: int) -> None:
        """A buffer of size bytes for the answers, and its address."""
        self._out = bytearray(size)
        self._address = address_of(self._out)

    def search(self, query: QueryArgs, limit: int) -> memoryview:
        """The query's JSON list of rows, best first (limit of them, 0 for all): a view of
        the buffer the kernel wrote it into, valid until the next query (an answer is some
        hundred kilobytes, copied once, into the line that sends it)."""
        size = self.lib.rk_search(self._state, ctypes.byref(query), limit, self._address,
                                  len(self._out))  # fmt: skip
        if size < 0 and size != _MIN:
            self._room(max(-size, 2 * len(self._out)))
            size = self.lib.rk_answer(self._state, self._address, len(self._out))
        if size < 0:
            raise MemoryError("the finder's kernel ran out of memory")
        return memoryview(self._out)[:size]

    def score(self, query: QueryArgs) -> tuple[list[int], list[float]]:
        """The query's candidates and their scores, in no particular order."""
        count = self.lib.rk_score(
            self._state, ctypes.byref(query), ctypes.byref(self._ids), ctypes.byref(self._values)
        )
        if count < 0:
            raise MemoryError("the finder's kernel ran out of memory")
        return self._ids[:count], self._values[:count]

    def order(self, ids: list[int], values: list[float], limit: int) -> list[int]:
        """ids best first by their values (then the tie order), limit of them (0: all)."""
        count = len(ids)
        id_array, value_array = (_I * count)(*ids), (_D * count)(*values)
        out = (_I * count)()
        kept = self.lib.rk_order(self._state, id_array, value_array, count, limit, out)
        return out[:kept]

    def through(self, chars: int) -> list[float]:
        """Each character's skip cost, as rk_open computed it."""
        return self.lib.rk_through(self._state)[:chars]

    def match(self, query: QueryArgs) -> tuple[list[int], list[float], list[int]]:
        """The alignment's matches, their raw scores, and the exact names."""
        raw = ctypes.POINTER(ctypes.c_float)()
        exact = ctypes.POINTER(_I)()
        exacts = _I()
        found = self.lib.rk_match(
            self._state, ctypes.byref(query), ctypes.byref(self._ids), ctypes.byref(raw),
            ctypes.byref(exact), ctypes.byref(exacts),
        )  # fmt: skip
        if found < 0:
            raise MemoryError("the finder's kernel ran out of memory")
        return self._ids[:found], raw[:found], exact[: exacts.value]

    def near(self, query: QueryArgs) -> list[int]:
        """The names that hold all but one of the query's characters in order."""
        found = self.lib.rk_near(self._state, ctypes.byref(query), ctypes.byref(self._ids))
        if found < 0:
            raise MemoryError("the finder's kernel ran out of memory")
        return self._ids[:found]

    def __del__(self) -> None:
        state, self._state = getattr(self, "_state", None), None
        if state:
            self.lib.rk_close(state)

"""Kept indexes: an engine's `{db}` kept under the cache when it says its index is
deterministic (`index_cache = true`), and copied into each later session instead of
indexing again.

A kept index stands in for running the index argv, so it is known by everything that
could change what that argv writes: the build (its cache identity, as a result's key
has it; for a working tree, its content: build.tree_identity), the engine description
and its index argv, the corpus pin, the names file, ctags's and Python's versions, and
the programs and packages the engine runs (saved.environment_key). It is written whole
or not at all: indexed in the session, copied into a temporary folder beside the entry,
then renamed into place, under the entry's lock; a failed index is never kept. Each
session gets its own copy, so a finder that writes into its `{db}` while it answers
cannot change what the next run starts from.
"""

from __future__ import annotations

import hashlib
import platform
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import orjson

from recall.corpus import Pin, hold_in_use, use_lock
from recall.engine import Engine
from recall.errors import RecallError
from recall.saved import environment_key
from recall.symbols import ctags_version

KIND = "indexes"  # <cache>/indexes/<key>/db, as `recall cache` lists it
MARKER = ".recall-indexed"  # written last, inside the entry: a folder without it is not one
FORMAT = 1  # bump when what a kept index holds or how it is keyed changes


def index_key(build: str, engine: Engine, pin: Pin, names: bytes) -> str:
    """The entry of an index of build on pin, whose names file holds names."""
    key = {
        "format": FORMAT,
        "build": build,
        "engine": engine.digest,
        "index": list(engine.index),
        "pin": pin.as_json(),
        "names": hashlib.sha256(names).hexdigest(),
        "ctags": ctags_version(),
        "python": platform.python_version(),
        "environment": environment_key(engine),
    }
    return hashlib.sha256(orjson.dumps(key, option=orjson.OPT_SORT_KEYS)).hexdigest()[:32]


@dataclass(frozen=True)
class KeptIndex:
    """One entry of <cache>/indexes: the `{db}` folder an index argv wrote."""

    cache: Path
    key: str

    @property
    def root(self) -> Path:
        return self.cache / KIND

    @property
    def path(self) -> Path:
        return self.root / self.key

    @property
    def lock(self) -> Path:
        """Held while the entry is looked up, made or copied: one index at a time."""
        return self.root / f"{self.key}.lock"

    def hold(self) -> None:
        """Mark the entry in use by this process, so `recall cache prune` leaves it."""
        hold_in_use(use_lock(self.cache, KIND, self.key))

    def restore(self, db: Path) -> bool:
        """Copy the kept index into db (an empty folder); False if none is kept. Call
        with the lock held."""
        if not (self.path / MARKER).is_file():
            return False
        try:
            shutil.copytree(self.path / "db", db, symlinks=True, dirs_exist_ok=True)
        except OSError as exc:
            raise RecallError(f"cache {self.path}: cannot copy: {exc.strerror or exc}") from None
        return True

    def store(self, db: Path) -> None:
        """Keep a copy of db, an index just written in full. Call with the lock held."""
        try:
            shutil.rmtree(self.path, ignore_errors=True)  # no marker: a half entry
            for stale in self.root.glob(f".tmp-{self.key}-*"):  # a killed store's
                shutil.rmtree(stale, ignore_errors=True)
            tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{self.key}-", dir=self.root))
            try:
                shutil.copytree(db, tmp / "db", symlinks=True)
                (tmp / MARKER).write_text(self.key + "\n")
                tmp.rename(self.path)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
        except OSError as exc:
            raise RecallError(f"cache {self.root}: cannot write: {exc.strerror or exc}") from None

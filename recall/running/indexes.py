"""Kept indexes: an engine's `{db}` kept under the cache when it says its index is
deterministic (`index_cache = true`), and copied into each later session instead of
indexing again.

A kept index stands in for running the index argv, so it is known by everything that
could change what that argv writes: the build (its cache identity, as a result's key
has it; for a working tree, its content: build.tree_identity), or, for an engine that
declares the files of the tree its index reads (`index_inputs`), those files' content
alone; the engine description and its index argv (`index_names` for a names list
alone), the corpus pin (none for a names list alone: its names are all it has), the
names file, ctags's identity and Python's version, and the environment, programs, files
and packages the engine runs (identity.environment_key), and the world its build ran in,
its compilers included (identity.build_world). It is one entry of recall.cache:
indexed in the session, copied into a temporary folder beside the entry, then renamed
into place with its digest, under the entry's lock; a failed index is never kept, and
a kept one edited on disk is dropped and made again. Each session gets its own copy, so
a finder that writes into its `{db}` while it answers cannot change what the next run
starts from.
"""

from __future__ import annotations

import hashlib
import platform
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from recall.cache import FolderEntry, key_digest
from recall.errors import RecallError
from recall.finders.engine import Engine
from recall.inputs.corpus import Pin
from recall.inputs.symbols import ctags_identity
from recall.running.identity import build_world, environment_key, index_input_files

KIND = "indexes"  # <cache>/indexes/<key>/db, as `recall cache` lists it
MARKER = ".recall-indexed"  # written last, inside the entry: a folder without it is not one
FORMAT = 3  # bump when what a kept index holds or how it is keyed changes


def index_key(
    build: str, engine: Engine, argv: tuple[str, ...], pin: Pin | None, names: bytes, tree: Path
) -> str:
    """The entry of an index of build (its tree at tree) made by argv (its `index`, or for
    a names list alone its `index_names`) on pin (None: the names list is all there is),
    whose names file holds names. An engine that declares index_inputs is known by those
    files' content in tree, not by the build (a commit, or the whole working tree), unless
    one of its patterns names no file there."""
    declared = index_input_files(engine, tree) if engine.index_inputs else None
    key = {
        "format": FORMAT,
        "build": build if declared is None else "index_inputs",
        "index inputs": declared,
        "engine": engine.digest,
        "index": list(argv),
        "pin": pin.identity() if pin else None,
        "names": hashlib.sha256(names).hexdigest(),
        "ctags": ctags_identity(),
        "python": platform.python_version(),
        "environment": environment_key(engine),
        "build world": build_world(engine),
    }
    return key_digest(key)


@dataclass(frozen=True)
class KeptIndex:
    """One entry of <cache>/indexes: the `{db}` folder an index argv wrote."""

    cache: Path
    key: str

    @property
    def entry(self) -> FolderEntry:
        return FolderEntry(self.cache, KIND, self.key, MARKER)

    @property
    def root(self) -> Path:
        return self.entry.root

    @property
    def path(self) -> Path:
        return self.entry.path

    def restore_or_make(self, db: Path, index: Callable[[], None]) -> None:
        """Fill db (an empty folder) from the kept index, checked against its digest;
        else run index() into it and keep a copy. Held in use, under the entry's lock: one
        index at a time. A copy that cannot be kept (a full or read-only cache) is one
        warning line; the index just made is used all the same."""
        entry = self.entry
        entry.hold()
        with entry.locked():
            if entry.valid():
                try:
                    shutil.copytree(entry.path / "db", db, symlinks=True, dirs_exist_ok=True)
                except OSError as exc:
                    raise RecallError(
                        f"cache {entry.path}: cannot copy: {exc.strerror or exc}"
                    ) from None
                return
            index()
            entry.keep(lambda tmp: shutil.copytree(db, tmp / "db", symlinks=True), self.key)

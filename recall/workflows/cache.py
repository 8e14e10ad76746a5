"""`recall cache list` and `recall cache prune`: what the cache holds and what can go (the
command, recall/commands/cache.py, is its flags).

Checkouts, builds and kept indexes are large and rebuilt slowly, so prune removes only
what is stale (a checkout no pin asks for, symbols or paths of no current checkout, builds
past --keep-builds, anything unused for --older-than days) and never an entry a running
harness holds: runs keep a shared lock on <kind>/<key>.inuse (cache.hold_in_use) that
prune must take exclusively, without waiting, before it deletes anything.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from recall.cache import discard, leftover_key, try_exclusive, use_lock
from recall.errors import RecallError
from recall.inputs.corpus import MARKER, Pin, cache_root, load_pins, read_marker
from recall.inputs.paths import paths_key
from recall.inputs.suite import locate
from recall.inputs.symbols import ctags_identity, symbols_key
from recall.workflows.options import Data, PruneOptions

KINDS = (
    "corpora", "builds", "indexes", "interpreters", "node", "symbols", "paths", "results",
    "ceilings", "names",
)  # fmt: skip
DAY_S = 86400.0
LEFTOVER = (".tmp-", ".trash-")  # folders a killed fetch, build or prune left behind
_SHORT_SHA = re.compile(r"[0-9a-f]{12}")  # a checkout is corpora/<name>-<sha12>


@dataclass(frozen=True)
class Entry:
    """One entry of the cache: a checkout, a build, a kept index, a file of symbols..."""

    kind: str  # one of KINDS
    key: str  # the repo name, build key, or file name
    path: Path
    size: int  # bytes on disk, links not followed
    last_used: float  # epoch seconds: the in-use mark if any, else when it was written
    note: str = ""  # why it is stale, when it is

    @property
    def lock(self) -> Path | None:
        """The fetch/build lock that guards creating the entry (files need none)."""
        return self.path.parent / f"{self.key}.lock" if self.path.is_dir() else None


def size(path: Path) -> int:
    if not path.is_dir() or path.is_symlink():
        return path.lstat().st_size
    total = 0
    for folder, _dirs, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(folder, name)).st_size
    return total


def _last_used(cache: Path, kind: str, key: str, written: Path) -> float:
    mark = use_lock(cache, kind, key)
    stamps = [written.stat().st_mtime] if written.exists() else []
    if mark.exists():
        stamps.append(mark.stat().st_mtime)
    return max(stamps, default=0.0)


def entries(cache: Path) -> list[Entry]:
    """Every entry under cache, sorted by kind then key (leftover temporary folders too)."""
    written = {
        "corpora": Path(".git") / MARKER,
        "builds": Path(".recall-built"),
        "indexes": Path(".recall-indexed"),  # recall.running.indexes.MARKER
        "interpreters": Path(".recall-made"),
        "node": Path(".recall-installed"),  # recall.finders.kinds.node.MARKER
        "names": Path(".recall-names"),  # recall.running.probe.NAMES_MARKER
    }
    found: list[Entry] = []
    for kind in KINDS:
        folder = cache / kind
        if not folder.is_dir():
            continue
        if kind in written:
            paths = [(p, p.name) for p in sorted(folder.iterdir()) if p.is_dir()]
        else:
            paths = [(p, str(p.relative_to(folder))) for p in sorted(folder.rglob("*"))]
            paths = [(p, k) for p, k in paths if p.is_file() and not p.name.startswith(".")]
        for path, key in paths:
            stamp = path / written[kind] if kind in written else path
            used = _last_used(cache, kind, key, stamp if stamp.exists() else path)
            found.append(Entry(kind, key, path, size(path), used))
    return found


def _checkout_pin(path: Path) -> dict:
    """The checkout's marker, or {} for one that is missing or of the wrong shape (such a
    checkout holds no sha a pin asks for, so prune counts it stale)."""
    return read_marker(path / ".git" / MARKER) or {}


def stale(
    found: list[Entry],
    pins: dict[str, Pin] | None,
    ctags: dict[str, object] | None,
    *,
    older_than_days: float | None,
    keep_builds: int | None,
    now: float,
) -> list[Entry]:
    """The entries not needed: each with the reason, in listing order."""
    chosen: dict[Path, Entry] = {}

    def pick(entry: Entry, why: str) -> None:
        chosen.setdefault(entry.path, dataclasses.replace(entry, note=why))

    live_symbols: set[str] = set()
    live_paths: set[str] = set()
    for entry in found:
        if entry.kind != "corpora":
            continue
        recorded = _checkout_pin(entry.path)
        name, _, short = entry.key.rpartition("-")
        if entry.key.startswith(LEFTOVER):
            pick(entry, "left over from an interrupted fetch")
        elif not name or not _SHORT_SHA.fullmatch(short):
            pick(entry, "a checkout kept by repo name only (the layout before corpora/NAME-SHA)")
        elif pins is not None and name not in pins:
            pick(entry, "no pin of that name")
        elif pins is not None and short != pins[name].sha[:12]:
            pick(entry, "a checkout of another sha than the pin")
        elif pins is not None and recorded.get("sha") != pins[name].sha:
            pick(entry, "holds another sha than the pin")
        elif pins is not None and "tree" in recorded:
            live_paths.add(f"{paths_key(recorded['tree'])}.json")
            if ctags:
                key = symbols_key(recorded["tree"], pins[name].language, ctags)
                live_symbols.add(f"{key}.json")
    if pins is not None and ctags:
        for entry in found:
            if entry.kind == "symbols" and entry.key not in live_symbols:
                pick(entry, "symbols of no current checkout")
    if pins is not None:
        for entry in found:
            if entry.kind == "paths" and entry.key not in live_paths:
                pick(entry, "paths of no current checkout")
    builds = [e for e in found if e.kind == "builds"]
    for entry in found:
        if entry.kind in ("builds", "interpreters", "node") and entry.key.startswith(LEFTOVER):
            pick(entry, "left over from an interrupted build")
        if entry.kind == "names" and entry.key.startswith(LEFTOVER):
            pick(entry, "left over from an interrupted write")
        if entry.kind == "indexes" and entry.key.startswith(LEFTOVER):
            pick(entry, "left over from an interrupted index")
    if keep_builds is not None:
        complete = [e for e in builds if not e.key.startswith(LEFTOVER)]
        newest = sorted(complete, key=lambda e: (-e.last_used, e.key))
        for entry in newest[keep_builds:]:
            pick(entry, f"beyond the {keep_builds} most recently used builds")
    if older_than_days is not None:
        for entry in found:
            if now - entry.last_used > older_than_days * DAY_S:
                pick(entry, f"unused for over {older_than_days:g} days")
    return [chosen[e.path] for e in found if e.path in chosen]


@contextlib.contextmanager
def _claimed(cache: Path, entry: Entry) -> Iterator[bool]:
    """True while no run holds the entry and no fetch or build is making it."""
    if entry.kind not in ("corpora", "builds", "indexes", "interpreters", "node", "names"):
        yield True
        return
    name = leftover_key(entry.key) if entry.key.startswith(LEFTOVER) else entry.key
    with try_exclusive(use_lock(cache, entry.kind, name)) as free:
        if not free:
            yield False
            return
        with try_exclusive(entry.path.parent / f"{name}.lock") as idle:
            yield idle


def remove(cache: Path, entry: Entry) -> bool:
    """Delete entry unless it is in use; whatever happens, no half-removed entry stays
    where a run would trust it (the folder is renamed aside first). An entry that is a
    symbolic link is removed as a link: what it points at is never followed into."""
    with _claimed(cache, entry) as free:
        if not free:
            return False
        discard(entry.path)
    return True


def human(size: int) -> str:
    value = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"


def when(stamp: float) -> str:
    return datetime.fromtimestamp(stamp, UTC).strftime("%Y-%m-%d %H:%M")


def render_list(found: list[Entry]) -> str:
    lines = [f"{e.kind}\t{e.key}\t{human(e.size)}\t{when(e.last_used)}" for e in found]
    lines.append(f"total\t{len(found)} entries\t{human(sum(e.size for e in found))}")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Outcome:
    """One stale entry, pruned: removed (or, dry, free to be), or busy and kept."""

    entry: Entry
    free: bool  # no run held it: removed, or would be
    link_target: str | None = None  # an entry that is a link: what it points at, left


@dataclass(frozen=True)
class Pruned:
    """What `recall cache prune` removed (or, dry, would), each with why, and the bytes."""

    outcomes: tuple[Outcome, ...]
    dry_run: bool

    @property
    def freed(self) -> int:
        return sum(o.entry.size for o in self.outcomes if o.free)


def prune(cache: Path, chosen: list[Entry], *, dry_run: bool) -> Pruned:
    outcomes = []
    for entry in chosen:
        link = os.readlink(entry.path) if entry.path.is_symlink() else None
        if dry_run:
            with _claimed(cache, entry) as free:
                pass
        else:
            free = remove(cache, entry)
        outcomes.append(Outcome(entry, free, link))
    return Pruned(tuple(outcomes), dry_run)


def render_pruned(pruned: Pruned) -> str:
    """The outcome as `recall cache prune` prints it."""
    lines = []
    for outcome in pruned.outcomes:
        entry = outcome.entry
        verb, note = ("would remove" if pruned.dry_run else "removed"), entry.note
        if outcome.link_target is not None:
            verb += " the link"
            note += f"; only the link: {outcome.link_target} is left as it was"
        if outcome.free:
            lines.append(f"{verb}\t{entry.kind}\t{entry.key}\t{human(entry.size)}\t{note}")
        else:
            lines.append(f"busy, kept\t{entry.kind}\t{entry.key}\t{human(entry.size)}")
    lines.append(f"{'would free' if pruned.dry_run else 'freed'} {human(pruned.freed)}")
    return "\n".join(lines) + "\n"


def list_entries(data: Data) -> tuple[Entry, ...]:
    """Every entry of the data's cache (the Python API's `recall.cache_entries`)."""
    return tuple(entries(cache_root(data.cache)))


def prune_stale(options: PruneOptions) -> Pruned:
    """Remove the cache's stale entries, never one a running harness holds (the Python
    API's `recall.prune`): a checkout no pin of the corpus asks for, symbols or paths of
    no current checkout, builds past keep_builds, entries unused for older_than days."""
    found = locate("cache", corpus=options.data.corpus)
    corpus = Path(found.corpus)
    pins = load_pins(corpus) if corpus.exists() else None
    try:
        ctags = ctags_identity()
    except RecallError:
        ctags = None  # without ctags no symbols key can be told current: keep them all
    cache = cache_root(options.data.cache)
    chosen = stale(
        entries(cache), pins, ctags, older_than_days=options.older_than,
        keep_builds=options.keep_builds, now=time.time(),
    )  # fmt: skip
    return prune(cache, chosen, dry_run=options.dry_run)

"""`recall pin`: add or move a pin and regenerate that repo's queries in one step (the
command, recall/commands/pin.py, is its flags).

Moving a pin without regenerating its queries leaves rows whose source no longer exists,
which read as misses of the finder. So the pin, its derive settings and its rows change
together, each file written whole, and only once the new pin has been fetched.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import os
import re
import signal
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from recall.errors import RecallError
from recall.files import Staged, read_input, stage
from recall.inputs import keystrokes
from recall.inputs.corpus import Pin, cache_root, fetch, load_pins, mirror_root, validate_pin
from recall.inputs.derive import (
    DEFAULT_SEED,
    RECIPE_SETS,
    RepoSettings,
    derive_set_rows,
    load_settings,
    name_source,
    read_recipe_set,
)
from recall.inputs.judgments import refuse_judgments
from recall.inputs.path_recipes import derive_path_rows
from recall.inputs.paths import checkout_paths
from recall.inputs.queryset import (
    DERIVED_SETS,
    DERIVED_TYPES,
    PATH_SET,
    PATH_TYPES,
    TYPED_TYPES,
    QueryRow,
    format_queries,
    query_set_path,
    read_queries,
)
from recall.inputs.sides import HOLDOUT
from recall.inputs.suite import locate
from recall.inputs.symbols import checkout_symbols
from recall.terminal import shown
from recall.workflows.options import PinOptions

DEFAULT_N = 100
_QUALIFIER = re.compile(r"::|\.|#")


@dataclass(frozen=True)
class PinChange:
    """What a pin changed: the pin as written and the one it replaced (None: new), the
    repo's derived rows added, removed and kept, its hand rows kept, and those of them
    that aim at a name the new pin no longer has."""

    pin: Pin
    previous: Pin | None
    added: int
    removed: int
    kept: int
    hand: int
    stale: tuple[QueryRow, ...]  # hand rows whose target name is gone at the new pin
    corpus: Path = Path("corpus.json")  # the files it wrote
    queries: Path = Path("queries.tsv")


def intended_name(row: QueryRow) -> str:
    """A hand row has no source: the name it aims at is its query read as a (qualified) name."""
    return row.source or _QUALIFIER.split(row.query)[-1]


def placed(pin: Pin, previous: Pin | None) -> Pin:
    """The pin on its side of the split: a moved pin keeps its own, and a new corpus joins
    the holdout (SPEC.md: a corpus pinned later joins the holdout and never leaves it),
    so no command of recall ever moves a corpus to the tune side."""
    return dataclasses.replace(pin, split=previous.split if previous else HOLDOUT)


def derived_types(recipe_set: str) -> tuple[str, ...]:
    """The types a set's recipes make (the rest of its rows are kept as written)."""
    if recipe_set == PATH_SET:
        return PATH_TYPES
    return TYPED_TYPES if recipe_set == "typed" else DERIVED_TYPES


def merge_rows(
    existing: list[QueryRow],
    settings: dict[str, RepoSettings],
    repo: str,
    fresh: list[QueryRow],
    derived: tuple[str, ...] = DERIVED_TYPES,
) -> list[QueryRow]:
    """The query set as `derive all` orders it, with only repo's derived rows replaced."""
    rows: list[QueryRow] = []
    for name in settings:
        mine = [r for r in existing if r.repo == name]
        rows += fresh if name == repo else [r for r in mine if r.type in derived]
        rows += [r for r in mine if r.type not in derived]
    rows += [r for r in existing if r.repo not in settings]
    return rows


def pin_repo(
    pin: Pin,
    n: int | None,
    *,
    corpus: Path,
    settings_path: Path,
    queries: Path,
    cache: Path,
    mirror: Path | None,
    force: bool = False,
    recipes: str = "default",
) -> PinChange:
    """Fetch pin, then write corpus.json, derive.json and the query set to match it.
    The rows are made with the settings file's recipes; recipes is the set for a new
    settings file (`typed` for `--queries typed`).

    The whole read-modify-write holds an exclusive lock on corpus.json's folder, so a
    second pin (of any repo) waits for the first and then reads the files it wrote: both
    land. The three files are written as a set (see _write_set)."""
    pin = validate_pin(corpus, pin.name, pin.as_json())
    typing = (
        keystrokes.is_typing_settings(settings_path)
        if settings_path.exists()
        else recipes == keystrokes.RECIPES
    )
    with _project_locked(corpus.absolute().parent):
        if typing:
            return _pin_typing(pin, n, corpus, settings_path, queries, cache, mirror, force)
        return _pin_locked(pin, n, corpus, settings_path, queries, cache, mirror, force, recipes)


def _pin_locked(
    pin: Pin, n: int | None, corpus: Path, settings_path: Path, queries: Path, cache: Path,
    mirror: Path | None, force: bool, recipes: str,
) -> PinChange:  # fmt: skip
    """pin() under its lock: read the three files, fetch the pinned commit, derive its rows,
    and write the files back as a set. It is one function because every step reads what
    the one before it decided, and the order keeps the project whole: the settings file
    is checked before anything is fetched, the derived rows are made with the recipe set
    the settings file names (not the one asked for, once the file says one), a pin whose
    names yield no derived row refuses to drop the old ones unless forced, the hand-kept
    rows whose source the move makes vanish are found by listing the previous pin's names
    too (they are reported as stale, never dropped), and nothing is written until all of
    it has worked, so a fault at any step leaves the three files as they were."""
    pins = load_pins(corpus) if corpus.exists() else {}
    previous = pins.get(pin.name)
    pin = placed(pin, previous)
    new_pins = {**pins, pin.name: pin}
    settings_data: dict = (
        {"repos": {}} if recipes == "default" else {"recipes": recipes, "repos": {}}
    )
    if settings_path.exists():
        load_settings(settings_path, new_pins)  # refuse a broken file before fetching
        settings_data = _read_json(settings_path)
    repos = settings_data["repos"]
    entry = repos.get(pin.name) or {"n": DEFAULT_N, "seed": set_seed(repos)}
    if n is not None:
        entry = {**entry, "n": n}
    new_settings = {**settings_data, "repos": {**repos, pin.name: entry}}
    existing = read_queries(queries, set(new_pins)) if queries.exists() else []

    recipe_set = read_recipe_set(settings_path) if settings_path.exists() else recipes
    derived = derived_types(recipe_set)
    checkout = fetch(pin, cache, mirror)
    source = name_source(checkout_symbols(checkout, cache), pin.language)
    names = source.names
    if recipe_set == PATH_SET:  # the path set samples the pin's tracked paths
        paths = checkout_paths(checkout, cache)
        fresh = derive_path_rows(pin.name, paths, entry["n"], entry["seed"])
    else:
        fresh = derive_set_rows(recipe_set, pin.name, source, entry["n"], entry["seed"])

    old_derived = [r for r in existing if r.repo == pin.name and r.type in derived]
    if not fresh and entry["n"] > 0 and not force:
        raise RecallError(
            f"pin {pin.name} --language {pin.language}: no name at {pin.sha[:12]} can be "
            f"sampled, so all {len(old_derived)} derived rows of {pin.name} would go and none "
            "come: check the language, or give --force"
        )
    hand = [r for r in existing if r.repo == pin.name and r.type not in derived]
    old_count, new_count = Counter(old_derived), Counter(fresh)
    kept = sum((old_count & new_count).values())
    stale: tuple[QueryRow, ...] = ()
    if previous is not None and hand:
        old_checkout = fetch(previous, cache, mirror)
        before = set(name_source(checkout_symbols(old_checkout, cache), previous.language).names)
        after = set(names)
        stale = tuple(
            r for r in hand if intended_name(r) in before and intended_name(r) not in after
        )

    checked = {
        name: RepoSettings(new_settings["repos"][name]["n"], new_settings["repos"][name]["seed"])
        for name in new_pins
        if name in new_settings["repos"]
    }
    _write_set([
        (queries, format_queries(merge_rows(existing, checked, pin.name, fresh, derived))),
        (settings_path, _settings_bytes(new_settings, new_pins)),
        (corpus, _pins_bytes(new_pins)),
    ])  # fmt: skip
    return PinChange(
        pin, previous, added=len(fresh) - kept, removed=len(old_derived) - kept, kept=kept,
        hand=len(hand), stale=stale, corpus=corpus, queries=queries,
    )  # fmt: skip


def _pin_typing(
    pin: Pin, n: int | None, corpus: Path, settings_path: Path, queries: Path, cache: Path,
    mirror: Path | None, force: bool,
) -> PinChange:  # fmt: skip
    """pin() of the typing set (recall/inputs/keystrokes.py), under the same lock and with
    the same guarantees: its rows are the steps of sequences, every one derived (no hand
    rows), so the repo's steps are made anew, the other repos' kept, in the order `derive
    all` writes them. A repo new to the set samples a quarter of its default-set n with
    the default set's seed (derive.json beside it), as the committed set does, so its
    sources are the default set's first names."""
    pins = load_pins(corpus) if corpus.exists() else {}
    previous = pins.get(pin.name)
    pin = placed(pin, previous)
    new_pins = {**pins, pin.name: pin}
    settings_data: dict = {"recipes": keystrokes.RECIPES, "repos": {}}
    if settings_path.exists():
        load_settings(settings_path, new_pins)  # refuse a broken file before fetching
        settings_data = _read_json(settings_path)
    repos = settings_data["repos"]
    entry = repos.get(pin.name) or _typing_entry(
        settings_path.parent / "derive.json", pin.name, new_pins
    )
    if n is not None:
        entry = {**entry, "n": n}
    new_settings = {**settings_data, "repos": {**repos, pin.name: entry}}
    existing = keystrokes.read_typing(queries, set(new_pins)) if queries.exists() else []

    checkout = fetch(pin, cache, mirror)
    source = name_source(checkout_symbols(checkout, cache), pin.language)
    fresh = keystrokes.derive_typing_rows(pin.name, source, entry["n"], entry["seed"])
    old = [r for r in existing if r.repo == pin.name]
    if not fresh and entry["n"] > 0 and not force:
        raise RecallError(
            f"pin {pin.name} --language {pin.language}: no name at {pin.sha[:12]} can be "
            f"sampled, so all {len(old)} typing steps of {pin.name} would go and none come: "
            "check the language, or give --force"
        )
    order = [name for name in new_pins if name in new_settings["repos"]]
    rows = [
        r for name in order for r in (fresh if name == pin.name else existing) if r.repo == name
    ]
    rows += [r for r in existing if r.repo not in order]
    kept = sum((Counter(old) & Counter(fresh)).values())
    _write_set([
        (queries, keystrokes.format_typing(rows)),
        (settings_path, _settings_bytes(new_settings, new_pins)),
        (corpus, _pins_bytes(new_pins)),
    ])  # fmt: skip
    return PinChange(
        pin, previous, added=len(fresh) - kept, removed=len(old) - kept, kept=kept, hand=0,
        stale=(), corpus=corpus, queries=queries,
    )  # fmt: skip


def set_seed(repos: dict) -> int:
    """The seed a repo new to a settings file samples with: the one its repos share (the
    typed set's 2, the path set's 3), so that a set keeps one seed; else DEFAULT_SEED.
    The settings file has been checked (load_settings): every entry holds a whole seed."""
    seeds = {entry["seed"] for entry in repos.values()}
    return seeds.pop() if len(seeds) == 1 else DEFAULT_SEED


def _typing_entry(default_settings: Path, repo: str, pins: dict[str, Pin]) -> dict:
    """A repo's n and seed for the typing set: a quarter of its default-set n, with its
    seed, where derive.json has it; else a quarter of DEFAULT_N."""
    conf = load_settings(default_settings, pins).get(repo) if default_settings.exists() else None
    if conf is None:
        return {"n": DEFAULT_N // 4, "seed": DEFAULT_SEED}
    return {"n": conf.n // 4, "seed": conf.seed}


@contextlib.contextmanager
def _project_locked(folder: Path) -> Iterator[None]:
    """An exclusive flock on the folder itself, like fetch's lock on its lock file, but
    taking no file of its own: the project holds only what the user named, and the
    lock holds whatever --cache each pin is given. Released by the kernel if killed."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _write_set(files: list[tuple[Path, bytes]]) -> None:
    """Write files as a set: every one to a temporary beside it (flushed to disk) first,
    so a failure or an interruption there changes none; then the renames, in order, with
    SIGINT, SIGTERM and SIGHUP held until all are done. The last file (corpus.json) is
    the commit point: a pin that shows in it has its settings and rows. Only SIGKILL or
    a crash between two renames, microseconds apart, could leave a mix."""
    staged: list[Staged] = []
    try:
        for path, data in files:
            staged.append(stage(path, data, durable=True))
        held = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}
        before = signal.pthread_sigmask(signal.SIG_BLOCK, held)
        try:
            while staged:
                staged[0].commit()
                staged.pop(0)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, before)
    finally:
        for left in staged:
            left.discard()


def _read_json(path: Path) -> dict:
    try:
        data = json.loads(read_input(path).decode("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise RecallError(f"{path}: not JSON: {exc}") from None
    except RecursionError:
        raise RecallError(f"{path}: not JSON: nested too deeply") from None
    if not isinstance(data, dict):
        raise RecallError(f'{path}: expected {{"repos": {{NAME: {{"n": N, "seed": S}}}}}}')
    return data


def _pins_bytes(pins: dict[str, Pin]) -> bytes:
    data = {name: p.as_json() for name, p in pins.items()}
    return (json.dumps(data, indent=2) + "\n").encode("utf-8")


def _settings_bytes(data: dict, pins: dict[str, Pin]) -> bytes:
    """derive.json in its committed shape: one repo a line, in corpus order."""
    repos = data["repos"]
    order = [name for name in pins if name in repos] + [n for n in repos if n not in pins]
    lines = [f"    {json.dumps(name)}: {json.dumps(repos[name])}" for name in order]
    rest = {k: v for k, v in data.items() if k != "repos"}
    head = "".join(f"  {json.dumps(k)}: {json.dumps(v)},\n" for k, v in rest.items())
    return ("{\n" + head + '  "repos": {\n' + ",\n".join(lines) + "\n  }\n}\n").encode()


def render(change: PinChange) -> str:
    """The change as `recall pin` prints it."""
    corpus, queries = change.corpus, change.queries
    if change.previous is None:
        moved = "added"
    elif change.previous.sha == change.pin.sha:
        moved = "unchanged"
    else:
        moved = f"moved from {change.previous.sha[:12]}"
    lines = [
        f"{corpus}: {change.pin.name} {change.pin.sha[:12]} ({moved})",
        f"{queries}: {change.pin.name}: {change.added} rows added, {change.removed} removed, "
        f"{change.kept} kept; {change.hand} hand rows kept",
    ]
    if change.stale:
        lines.append(
            f"{len(change.stale)} hand rows of {change.pin.name} aim at a name gone at "
            f"{change.pin.sha[:12]}:"
        )
        lines += [f"  {shown(r.query)}\t{shown(intended_name(r))}" for r in change.stale]
    return "\n".join(lines) + "\n"


def set_files(queries: str, settings: str | None) -> tuple[Path, Path]:
    """The query set's file and its derive settings: a committed set's name (`typed`)
    stands for its own pair, so its rows are made with its own recipes."""
    if settings is None:
        named = DERIVED_SETS.get(queries)
        settings = (
            named[1] if named and query_set_path(queries) == Path(named[0]) else "derive.json"
        )
    return query_set_path(queries), Path(settings)


def pin(options: PinOptions) -> PinChange:
    """Pin options.repo at options.sha and regenerate its rows in the query set (its
    derive settings and recipes the set's own): the Python API's `recall.pin`; `recall
    pin` prints it (`render`)."""
    data = options.data
    found = locate("pin", finder=None, corpus=data.corpus, queries=data.queries)
    corpus = Path(found.corpus)
    named = found.queries or "queries.tsv"
    queries, settings = set_files(named, options.settings)
    if queries.exists():
        refuse_judgments(queries, "recall pin")  # no corpus derives it: nothing to regenerate
    recipes = named if named in (*RECIPE_SETS, PATH_SET, keystrokes.RECIPES) else "default"
    return pin_repo(
        Pin(options.repo, options.url, options.sha, options.language), options.n,
        corpus=corpus, settings_path=settings, queries=queries, cache=cache_root(data.cache),
        mirror=mirror_root(data.mirror), force=options.force, recipes=recipes,
    )  # fmt: skip

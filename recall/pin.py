"""`recall pin`: add or move a pin and regenerate that repo's queries in one step.

Moving a pin without regenerating its queries leaves rows whose source no longer exists,
which read as misses of the finder. So the pin, its derive settings and its rows change
together, each file written whole, and only once the new pin has been fetched.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from recall.corpus import Pin, fetch, load_pins, validate_pin
from recall.derive import DEFAULT_SEED, RepoSettings, derive_rows, load_settings
from recall.errors import RecallError
from recall.queryset import DERIVED_TYPES, QueryRow, format_queries, read_queries
from recall.symbols import checkout_symbols, distinct_names, write_atomic
from recall.terminal import shown

DEFAULT_N = 100
_QUALIFIER = re.compile(r"::|\.|#")


@dataclass(frozen=True)
class PinChange:
    pin: Pin
    previous: Pin | None
    added: int
    removed: int
    kept: int
    hand: int
    stale: tuple[QueryRow, ...]  # hand rows whose target name is gone at the new pin


def intended_name(row: QueryRow) -> str:
    """A hand row has no source: the name it aims at is its query read as a (qualified) name."""
    return row.source or _QUALIFIER.split(row.query)[-1]


def merge_rows(
    existing: list[QueryRow],
    settings: dict[str, RepoSettings],
    repo: str,
    fresh: list[QueryRow],
) -> list[QueryRow]:
    """The query set as `derive all` orders it, with only repo's derived rows replaced."""
    rows: list[QueryRow] = []
    for name in settings:
        mine = [r for r in existing if r.repo == name]
        rows += fresh if name == repo else [r for r in mine if r.type in DERIVED_TYPES]
        rows += [r for r in mine if r.type not in DERIVED_TYPES]
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
) -> PinChange:
    """Fetch pin, then write corpus.json, derive.json and the query set to match it."""
    pins = load_pins(corpus) if corpus.exists() else {}
    pin = validate_pin(corpus, pin.name, pin.as_json())
    previous = pins.get(pin.name)
    if n is not None and n < 0:
        raise RecallError("--n must be zero or more")
    new_pins = {**pins, pin.name: pin}
    settings_data = {"repos": {}}
    if settings_path.exists():
        load_settings(settings_path, new_pins)  # refuse a broken file before fetching
        settings_data = _read_json(settings_path)
    repos = settings_data["repos"]
    entry = repos.get(pin.name) or {"n": DEFAULT_N, "seed": DEFAULT_SEED}
    if n is not None:
        entry = {**entry, "n": n}
    new_settings = {**settings_data, "repos": {**repos, pin.name: entry}}
    existing = read_queries(queries, set(new_pins)) if queries.exists() else []

    checkout = fetch(pin, cache, mirror)
    names = distinct_names(checkout_symbols(checkout, cache))
    fresh = derive_rows(pin.name, names, entry["n"], entry["seed"])

    old_derived = [r for r in existing if r.repo == pin.name and r.type in DERIVED_TYPES]
    hand = [r for r in existing if r.repo == pin.name and r.type not in DERIVED_TYPES]
    old_count, new_count = Counter(old_derived), Counter(fresh)
    kept = sum((old_count & new_count).values())
    stale: tuple[QueryRow, ...] = ()
    if previous is not None and hand:
        old_checkout = fetch(previous, cache, mirror)
        before = set(distinct_names(checkout_symbols(old_checkout, cache)))
        after = set(names)
        stale = tuple(
            r for r in hand if intended_name(r) in before and intended_name(r) not in after
        )

    _write_pins(corpus, new_pins)
    write_atomic(settings_path, _settings_bytes(new_settings, new_pins))
    checked = load_settings(settings_path, new_pins)
    write_atomic(queries, format_queries(merge_rows(existing, checked, pin.name, fresh)))
    return PinChange(
        pin, previous, added=len(fresh) - kept, removed=len(old_derived) - kept, kept=kept,
        hand=len(hand), stale=stale,
    )  # fmt: skip


def _read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise RecallError(f"{path}: cannot read: {exc.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise RecallError(f"{path}: not JSON: {exc}") from None
    except RecursionError:
        raise RecallError(f"{path}: not JSON: nested too deeply") from None
    if not isinstance(data, dict):
        raise RecallError(f'{path}: expected {{"repos": {{NAME: {{"n": N, "seed": S}}}}}}')
    return data


def _write_pins(path: Path, pins: dict[str, Pin]) -> None:
    data = {name: p.as_json() for name, p in pins.items()}
    write_atomic(path, (json.dumps(data, indent=2) + "\n").encode("utf-8"))


def _settings_bytes(data: dict, pins: dict[str, Pin]) -> bytes:
    """derive.json in its committed shape: one repo a line, in corpus order."""
    repos = data["repos"]
    order = [name for name in pins if name in repos] + [n for n in repos if n not in pins]
    lines = [f"    {json.dumps(name)}: {json.dumps(repos[name])}" for name in order]
    rest = {k: v for k, v in data.items() if k != "repos"}
    head = "".join(f"  {json.dumps(k)}: {json.dumps(v)},\n" for k, v in rest.items())
    return ("{\n" + head + '  "repos": {\n' + ",\n".join(lines) + "\n  }\n}\n").encode()


def render(change: PinChange, corpus: Path, queries: Path) -> str:
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

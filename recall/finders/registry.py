"""A preset's columns on the results pages: its `[[results]]` tables (docs/engines.md).

The preset that says how a finder runs also says how the results pages show it (label,
note, what names its version) and how `recall results` runs it (timeout, allow_empty, a
bundled binary), so that a finder is described once. One preset may have several columns
(fzf: Debian's binary and the one inside the iterfzf wheel). Read and checked with the
preset (finders/engine.py), every fault one line naming the file and the key.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from recall.errors import RecallError
from recall.inputs.queryset import NAMES, PATHS

DOMAINS = (NAMES, PATHS)
# The keys of a [[results]] table, and what each holds (docs/engines.md).
REQUIRED = ("domain", "order", "label", "note")
VERSIONS = ("pypi", "npm", "debian", "commit", "bundled")  # at most one: what names the version
KEYS = (*REQUIRED, *VERSIONS, "allow_empty", "timeout")


@dataclass(frozen=True)
class Column:
    """One finder's column on the results pages of its domain, in `order` among them.

    Its version is named by at most one of: `pypi` (the distribution's installed version),
    `npm` (the packages' versions the tree's lock installs), `debian` (dpkg's version of the
    package), `commit` (the commit of the tree it runs from: recall's own code), `bundled`
    (the program of the preset's `bin` inside this PyPI package's folder, run with --bin,
    and its --version); none of them: the `bin` program's own --version."""

    preset: str
    domain: str
    order: int
    label: str
    note: str
    pypi: str | None = None
    npm: tuple[str, ...] = ()
    debian: str | None = None
    commit: bool = False
    bundled: str | None = None
    # a finder that rightly finds (almost) nothing, as a prefix matcher given typed
    # queries: its run needs --allow-empty, which would hide a broken engine anywhere else
    allow_empty: bool = False
    # --timeout of its run, for a server whose wait for its index (inside the first
    # query's time) can be longer than the default 30 s: clangd indexes redis for minutes
    timeout: float | None = None


def parse_columns(value: object, source: str) -> tuple[Column, ...]:
    """A preset's [[results]] tables as its columns, each key checked."""
    if not isinstance(value, list) or not all(isinstance(table, dict) for table in value):
        raise RecallError(f"{source}: results must be [[results]] tables")
    preset = source.removeprefix("preset:")
    return tuple(
        _column(table, preset, f"{source}: [[results]]" + (f" {i}" if len(value) > 1 else ""))
        for i, table in enumerate(value, start=1)
    )


def _column(table: dict, preset: str, where: str) -> Column:
    for key in table:
        if key not in KEYS:
            raise RecallError(f"{where} unknown key {key!r}")
    for key in REQUIRED:
        if key not in table:
            raise RecallError(f"{where} missing key {key!r}")
    if table["domain"] not in DOMAINS:
        raise RecallError(f"{where} domain must be one of {', '.join(DOMAINS)}")
    order = table["order"]
    if not isinstance(order, int) or isinstance(order, bool) or order < 0:
        raise RecallError(f"{where} order must be an integer, 0 or more")
    for key in ("label", "note", "pypi", "debian", "bundled"):
        if key in table and not (isinstance(table[key], str) and table[key].strip()):
            raise RecallError(f"{where} {key} must be a non-empty string")
    npm = table.get("npm", [])
    if not isinstance(npm, list) or not all(isinstance(p, str) and p for p in npm):
        raise RecallError(f"{where} npm must be a list of package names")
    for key in ("commit", "allow_empty"):
        if not isinstance(table.get(key, False), bool):
            raise RecallError(f"{where} {key} must be true or false")
    named = [key for key in VERSIONS if table.get(key)]
    if len(named) > 1:
        raise RecallError(f"{where} {' and '.join(named)}: at most one names the version")
    timeout = table.get("timeout")
    if timeout is not None and (
        not isinstance(timeout, int | float) or isinstance(timeout, bool) or timeout <= 0
    ):
        raise RecallError(f"{where} timeout must be a number of seconds above 0")
    return Column(
        preset=preset, domain=table["domain"], order=order, label=table["label"],
        note=table["note"], pypi=table.get("pypi"), npm=tuple(npm), debian=table.get("debian"),
        commit=table.get("commit", False), bundled=table.get("bundled"),
        allow_empty=table.get("allow_empty", False),
        timeout=None if timeout is None else float(timeout),
    )  # fmt: skip


def ordered(columns: list[Column], domain: str) -> list[Column]:
    """The columns of one domain's page in their `order`; two columns of one order, or of
    one label (a kept report's file name), are refused, naming both presets."""
    mine = sorted((c for c in columns if c.domain == domain), key=lambda c: c.order)
    for before, after in itertools.pairwise(mine):
        if before.order == after.order:
            raise RecallError(
                f"preset:{after.preset}: [[results]] order {after.order} is also "
                f"preset:{before.preset}'s on the {domain} page"
            )
    seen: dict[str, str] = {}
    for column in mine:
        if column.label in seen:
            raise RecallError(
                f"preset:{column.preset}: [[results]] label {column.label!r} is also "
                f"preset:{seen[column.label]}'s on the {domain} page"
            )
        seen[column.label] = column.preset
    return mine

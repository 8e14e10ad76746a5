"""The plain values of the running stage: a finder build, and a corpus as a session sees it.

They name an engine and a checkout, so they sit here rather than in analysis/model.py,
which the report and the renderers import without loading engine or git code.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from recall.finders.engine import Engine, fill
from recall.inputs.corpus import Checkout


@dataclass(frozen=True)
class FinderBuild:
    """An engine bound to the tree it was built from and the interpreter `{python}` names
    (recall.running.interpreter: the harness's packages, never its code)."""

    label: str
    engine: Engine
    tree: Path
    python: str

    def values(self) -> dict[str, str]:
        return {"tree": str(self.tree), "python": self.python}

    def bin_argv(self) -> list[str]:
        return [fill(part, self.values()) for part in self.engine.bin]


@dataclass(frozen=True)
class Corpus:
    """A checkout and the names file the harness writes for it; or a names list alone,
    with no checkout (a judgments query's candidates, recall/inputs/judgments.py), known
    by its `label`."""

    checkout: Checkout | None
    names: list[str]
    cache: Path | None = None  # where to rebuild the checkout from if a finder dirties it
    mirror: Path | None = None
    label: str = ""  # a names list's name; a checkout is known by its pin's

    @property
    def name(self) -> str:
        return self.checkout.pin.name if self.checkout else self.label

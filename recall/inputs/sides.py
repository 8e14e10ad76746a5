"""The sides of the tune/holdout split, a pin's `split` in corpus.json (docs/queries.md).

The holdout is whole corpora: names of one repository share its style, so a holdout made
of other names of the tuned repositories predicts nothing about code no tuning has read
(issue 43: its margins were as large as tune's, +12.4 against +9.9 points #1, while on two
corpora pinned fresh the per-type lead did not hold). A table of its own, read by the pins
(corpus) and by the query sets' selection (queryset, keystrokes), which load no git code.
"""

import typing
from typing import Final

TUNE: Final = "tune"
HOLDOUT: Final = "holdout"
SEEN: Final = "seen"
# A pin's side: `tune`; `holdout`, the fresh holdout, which no tuning has read; or `seen`,
# held out too but read while tuning, so a second view of the holdout, not a sealed one.
Side = typing.Literal["tune", "holdout", "seen"]
SIDES: tuple[str, ...] = typing.get_args(Side)
# What --split selects: `tune` the tune corpora, `holdout` the fresh and the seen ones.
Split = typing.Literal["tune", "holdout"]
SPLITS: tuple[str, ...] = typing.get_args(Split)


def on_split(side: Side, split: Split) -> bool:
    """Whether a corpus on `side` is run by --split `split`."""
    return side == split or (split == HOLDOUT and side == SEEN)

"""The ceiling of keystrokes to the name, and the effort section assembled with it.

The ceiling needs no finder: under the typing model, the names a step's query could be
typing toward are the k eligible names of the corpus whose sequence of that kind types it,
each as likely as the others (one sequence per kind and name; at the step that types the
source's whole text, the names typed whole by it, since any finder can put an exact match
first). The best a finder can expect, ranking them in any one order, is the source #1 by
that step with chance 1/k (in the top 3 with min(1, 3/k)): its numbers are expectations
over the sampled sources, the fewest keystrokes at which the source is the likeliest name
weighed by how often a tie goes its way. A finder that changes its order from step to
step can pass it by a little on one sample.

A foreign typing file may hold sequences the model never types (`T`, `Te` toward
`Context`, whose prefix way types `c`, `co`, ...): no chance can be given to them, so they
have no ceiling and are named (`left_out`), as a name set's rows the recipes cannot make
are; the finders' own counts keep them.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable, Iterable, Sequence

from recall.analysis.effort import (
    LEFT_OUT_SHOWN,
    VISIBLE,
    Chances,
    Effort,
    LeftOutSequence,
    LeftOutSequences,
    TypedSequence,
    certain,
    effort_diff,
    effort_run,
    reach,
    typed_sequences,
)
from recall.inputs.derive import eligible
from recall.inputs.keystrokes import TypingRow, typed_text


class TypedTexts:
    """One corpus's eligible names as each sequence kind types them, sorted, so that the
    names a query could be typing toward are counted by two bisections."""

    def __init__(self, names: Iterable[str]) -> None:
        self.names = {name for name in names if eligible(name)}
        self.texts: dict[str, list[str]] = {}

    def _sorted(self, kind: str) -> list[str]:
        if kind not in self.texts:
            made = (typed_text(kind, name) for name in self.names)
            self.texts[kind] = sorted(text for text in made if text)
        return self.texts[kind]

    def typing_toward(self, kind: str, query: str) -> int:
        """How many eligible names a sequence of `kind` that has typed query could be
        typing toward: those whose whole text starts with it."""
        texts = self._sorted(kind)
        return bisect.bisect_left(texts, query + "\U0010ffff") - bisect.bisect_left(texts, query)

    def typed_whole(self, kind: str, query: str) -> int:
        """How many eligible names a sequence of `kind` types exactly query, whole."""
        texts = self._sorted(kind)
        return bisect.bisect_right(texts, query) - bisect.bisect_left(texts, query)


def modelled(sequence: TypedSequence) -> bool:
    """Does the typing model type this sequence toward its source: are its steps prefixes
    of the text its way types for the name? Then every step's k counts the source itself
    (or, for a name sampling could not pick, one more), and is 1 or more."""
    whole = typed_text(sequence.kind, sequence.source)
    return whole is not None and all(whole.startswith(query) for query in sequence.queries)


def ceiling_chances(sequence: TypedSequence, texts: TypedTexts) -> Chances:
    """The best a finder can expect on this sequence under the typing model: at each step
    the k names the query could be typing toward are equally likely, so a finder that ranks
    them in one order (any order; the steps' sets shrink, each inside the last) has the
    source #1 by step s with chance 1/k_s, and in the top 3 with min(1, 3/k_s); first at
    step s with the growth of that chance since the step before. At the step that types the
    source's whole text only the names it types whole count: any finder can rank an exact
    match first, and the longer names' sequences go on. A source that sampling could not
    pick (a foreign file's) is one more candidate."""
    extra = 0 if sequence.source in texts.names else 1
    whole = typed_text(sequence.kind, sequence.source)
    by_first, by_top3 = [0.0], [0.0]
    for query in sequence.queries:
        if query == whole:  # the whole text typed: a finder may put exact matches first
            k = texts.typed_whole(sequence.kind, query) + extra
        else:
            k = texts.typing_toward(sequence.kind, query) + extra
        by_first.append(max(by_first[-1], 1.0 / k))
        by_top3.append(max(by_top3[-1], min(1.0, VISIBLE / k)))

    def growth(by: list[float]) -> tuple[float, ...]:
        return tuple(b - a for a, b in itertools.pairwise(by))

    return Chances(growth(by_first), growth(by_top3))


def effort(
    rows: list[TypingRow],
    runs: list[tuple[str, Callable[[str, str], Sequence[str]]]],
    names: dict[str, list[str]],
    languages: dict[str, str],
    *,
    baseline: bool,
) -> Effort:
    """The effort section: each run (its label and its answers), the ceiling over the
    corpora's names (of the sequences the model types; the others named), and with a
    baseline (the first run) each later run's diff."""
    sequences = typed_sequences(rows)
    reaches = [[reach(s, answers) for s in sequences] for _label, answers in runs]
    texts = {repo: TypedTexts(names[repo]) for repo in dict.fromkeys(s.repo for s in sequences)}
    made = [s for s in sequences if modelled(s)]
    left_out = [s for s in sequences if not modelled(s)]
    best = [ceiling_chances(s, texts[s.repo]) for s in made]
    labels = [label for label, _answers in runs]
    diffs = (
        tuple(
            effort_diff(labels[0], label, sequences, reaches[0], mine)
            for label, mine in zip(labels[1:], reaches[1:], strict=True)
        )
        if baseline
        else ()
    )
    return Effort(
        sequences=len(sequences),
        steps=len(rows),
        prompts=len({(r.repo, r.query) for r in rows}),
        runs=tuple(
            effort_run(
                label,
                sequences,
                [certain(r, len(s.queries)) for r, s in zip(mine, sequences, strict=True)],
                languages,
            )
            for label, mine in zip(labels, reaches, strict=True)
        ),
        ceiling=effort_run("ceiling", made, best, languages, ranged=True),
        diffs=diffs,
        left_out=LeftOutSequences(
            len(left_out),
            tuple(
                LeftOutSequence(s.repo, s.kind, s.source, s.queries[-1])
                for s in left_out[:LEFT_OUT_SHOWN]
            ),
        ),
    )

"""The ceiling of the path set: the best #1 and top 10 any file picker can expect.

The same model as the names' ceiling (recall/analysis/ceiling.py), over paths: given only the
query, its source is one of the k eligible paths of its corpus whose recipe can make it,
each as likely as that recipe's seeded choice is to make it (1 for the recipes that do not
choose; 1 of the basename's prefix lengths for `baseprefix`, 1 of the stem's swap
positions for `basetypo`). The best a finder can do is rank those paths by likelihood, so
a row's ceiling is max(p) / sum(p) for #1 and the 10 largest p over sum(p) for the top 10.

Every recipe is run forwards over every eligible path (a few thousand per corpus, a few
dozen queries each), reading the very lists the generator draws from
(recall.inputs.path_recipes.choices), so the model cannot drift from the rows.
"""

from __future__ import annotations

from collections import Counter, defaultdict

from recall.analysis.ceiling import RowCeiling, row_ceiling
from recall.inputs.path_recipes import choices, eligible
from recall.inputs.queryset import PATH_TYPES, QueryRow


def likelihoods(
    paths: list[str], asked: set[tuple[str, str]]
) -> dict[tuple[str, str], list[float]]:
    """For each asked (type, query), the likelihood of every eligible path that makes it."""
    kinds = sorted({kind for kind, _query in asked})
    found: dict[tuple[str, str], list[float]] = defaultdict(list)
    for path in paths:
        if not eligible(path):
            continue
        for kind in kinds:
            options = choices(kind, path)
            for query, ways in Counter(options).items():
                if (kind, query) in asked:
                    found[(kind, query)].append(ways / len(options))
    return found


def row_ceilings(rows: list[QueryRow], paths: dict[str, list[str]]) -> dict[QueryRow, RowCeiling]:
    """The ceiling of every sourced path row the recipes can model. A row whose source is
    a path of its corpus that its recipe cannot turn into its query (a hand-typed row of a
    foreign file) has none, and the report leaves it out of both sides, as for names; a row
    whose source the corpus lacks is the caller's (not found, chance 0)."""
    result: dict[QueryRow, RowCeiling] = {}
    for repo in dict.fromkeys(row.repo for row in rows):
        mine = [r for r in rows if r.repo == repo and r.sourced and r.type in PATH_TYPES]
        if not mine:
            continue
        known = set(paths[repo])
        found = likelihoods(paths[repo], {(r.type, r.query) for r in mine})
        for row in mine:
            if row.source in known and not (
                eligible(row.source) and row.query in choices(row.type, row.source)
            ):
                continue
            chances = found.get((row.type, row.query))
            if chances:
                result[row] = row_ceiling(chances)
    return result

"""The ceiling of a run's rows, kept in the cache: what no finder can beat, computed once
for the pins, the rows and the code that makes it, and read back by every run after."""

from __future__ import annotations

import contextlib
import hashlib
from pathlib import Path

import orjson

from recall.analysis import ceiling, path_ceiling
from recall.analysis.model import (
    CeilingSummary,
)
from recall.cache import keep_file, read_file, warn
from recall.inputs import derive, path_recipes, recipes, symbols
from recall.inputs.paths import PATHS, domain_of
from recall.inputs.queryset import (
    QueryRow,
)
from recall.inputs.symbols import checkout_symbols, ctags_identity
from recall.running.identity import data_key
from recall.running.measure import Corpora


def query_set_ceiling(
    rows: list[QueryRow], corpora: Corpora, unknown: list[QueryRow] | None = None
) -> CeilingSummary:
    """The best #1 and top 10 any finder can expect on these rows (recall/analysis/ceiling.py). It
    depends on the pins, the rows, the names ctags finds and the recipes alone, so it is
    kept in the cache under those (ctags's version and the code that extracts, filters and
    derives), and a run from the results cache needs no corpus. A row whose source is no
    name (`unknown`) is not found for the ceiling either: it counts, with chance 0, so
    that the ceiling covers exactly the rows the finders ran. A row the recipes cannot
    make from its source has no ceiling: the summary names it in `left_out`, and the
    report compares the finders with the ceiling without it."""
    pins, cache = corpora.pins, corpora.cache
    code = hashlib.sha256()
    is_paths = domain_of(rows) == PATHS
    for module in (
        ceiling,
        derive,
        recipes,
        symbols,
        *((path_ceiling, path_recipes) if is_paths else ()),
    ):
        code.update(Path(module.__file__ or "").read_bytes())
    key = {"data": data_key(pins, rows), "code": code.hexdigest(), "ctags": ctags_identity()}
    digest = hashlib.sha256(orjson.dumps(key, option=orjson.OPT_SORT_KEYS)).hexdigest()
    path = cache / "ceilings" / f"{digest}.json"
    per_row = None
    kept = read_file(path)
    if kept is not None:
        with contextlib.suppress(orjson.JSONDecodeError):
            per_row = ceiling.decode_rows(rows, orjson.loads(kept))
        if per_row is None:
            warn(f"cache entry {path} is not a ceiling of these rows: dropped, made again")
    if per_row is None:
        opened = corpora.open(rows)
        repos = dict.fromkeys(row.repo for row in rows)
        if is_paths:  # the corpora's candidates are their paths
            per_row = path_ceiling.row_ceilings(rows, {r: opened[r].names for r in repos})
        else:
            checkouts = {repo: opened[repo].checkout for repo in repos}
            sources = {
                repo: derive.name_source(checkout_symbols(checkout, cache), pins[repo].language)
                for repo, checkout in checkouts.items()
                if checkout is not None  # every pin's; a names list alone has no ceiling
            }
            per_row = ceiling.row_ceilings(rows, sources)
        keep_file(path, orjson.dumps(ceiling.encode_rows(rows, per_row)))
    per_row |= dict.fromkeys(unknown or [], ceiling.RowCeiling(0, 0.0, 0.0))
    return ceiling.summary(rows, per_row, {name: pin.language for name, pin in pins.items()})

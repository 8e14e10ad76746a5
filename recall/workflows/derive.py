"""`recall derive`'s work: the queries each name derives, a sample of one repo's rows, and
the committed query sets regenerated (or checked) from their settings (the command,
recall/commands/derive.py, parses its flags into these options and prints what they
give)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from recall.errors import RecallError
from recall.files import read_input, write_atomic
from recall.inputs import keystrokes
from recall.inputs.corpus import Pin, cache_root, fetch, load_pins, mirror_root, select_pins
from recall.inputs.derive import (
    NameSource,
    derive_all,
    derive_rows,
    load_settings,
    name_source,
    read_recipe_set,
    recipes,
    typed_recipes,
)
from recall.inputs.path_recipes import derive_all_paths, path_recipes
from recall.inputs.paths import checkout_paths
from recall.inputs.queryset import DERIVED_SETS, PATH_SET, QueryRow, format_queries, read_queries
from recall.inputs.suite import locate
from recall.inputs.symbols import checkout_symbols
from recall.workflows.options import Data, DeriveOptions, RecipesOptions, SampleOptions


def derived_queries(options: RecipesOptions) -> list[tuple[str, str, str]]:
    """Each name's (name, type, query) rows of the options' recipe set, in its order."""
    made = []
    for name in options.names:
        if options.recipe_set == "typed":
            rows = typed_recipes(name, options.seed, options.owner, options.language)
        elif options.recipe_set == PATH_SET:
            rows = path_recipes(name, options.seed)
        else:
            rows = recipes(name, options.seed)
        made += [(name, kind, query) for kind, query in rows]
    return made


def sample(options: SampleOptions) -> list[QueryRow]:
    """The rows of n names sampled from the repo's pinned checkout."""
    corpus = _corpus(options.data)
    (pin,) = select_pins(load_pins(corpus), [options.repo], corpus)
    return derive_rows(pin.name, _source(pin, options.data).names, options.n, options.seed)


@dataclass(frozen=True)
class Derived:
    """One query set made now: its file, its rows, and whether the file held other bytes
    (with `check`, left as it was; else written)."""

    queries: Path
    rows: int
    changed: bool


def derive_sets(options: DeriveOptions) -> Iterator[Derived]:
    """Each query set made from its settings, in turn, and written unless `check` (a set
    is said as soon as it is made: a later one's failure leaves the earlier ones said)."""
    data = options.data
    pins = load_pins(_corpus(data))
    sources: dict[str, NameSource] = {}
    for queries, settings_path in _sets(options):
        settings = load_settings(settings_path, pins)

        def source(repo: str) -> NameSource:
            if repo not in sources:
                sources[repo] = _source(pins[repo], data)
            return sources[repo]

        if keystrokes.is_typing_settings(settings_path):  # its own rows: steps of sequences
            made = keystrokes.derive_typing_all({r: source(r) for r in settings}, settings)
            text = keystrokes.format_typing(made)
        elif (recipe_set := read_recipe_set(settings_path)) == PATH_SET:
            existing = read_queries(queries, set(pins)) if queries.exists() else []
            paths = {repo: _paths(pins[repo], data) for repo in settings}
            text = format_queries(derive_all_paths(paths, settings, existing))
        else:
            existing = read_queries(queries, set(pins)) if queries.exists() else []
            named = {repo: source(repo) for repo in settings}
            text = format_queries(derive_all(named, settings, existing, recipe_set))
        current = read_input(queries) if queries.exists() else b""
        if text != current and not options.check:
            write_atomic(queries, text)
        yield Derived(queries, text.count(b"\n") - 1, text != current)


def _sets(options: DeriveOptions) -> list[tuple[Path, Path]]:
    """The (query file, settings file) pairs to make: the one named, else every named set
    whose settings are here."""
    if options.settings or options.queries:
        return [(Path(options.queries or "queries.tsv"), Path(options.settings or "derive.json"))]
    named = [(Path(q), Path(d)) for q, d in DERIVED_SETS.values()]
    sets = [(queries, settings) for queries, settings in named if settings.exists()]
    if not sets:  # else nothing is made or checked, and exit 0 says all is well
        raise RecallError(
            f"derive all: no derive settings in {Path.cwd()} ("
            + ", ".join(settings.name for _queries, settings in named)
            + "): run it in a suite's folder (recall's checkout, or a finder's with sets "
            "of its own), or name one set with --settings FILE --queries FILE"
        )
    return sets


def _corpus(data: Data) -> Path:
    """The pinned corpora: the one given, else looked up as every command looks it up."""
    return Path(locate("derive", corpus=data.corpus).corpus)


def _source(pin: Pin, data: Data) -> NameSource:
    cache = cache_root(data.cache)
    checkout = fetch(pin, cache, mirror_root(data.mirror))
    return name_source(checkout_symbols(checkout, cache), pin.language)


def _paths(pin: Pin, data: Data) -> list[str]:
    cache = cache_root(data.cache)
    return checkout_paths(fetch(pin, cache, mirror_root(data.mirror)), cache)

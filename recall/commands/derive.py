"""`recall derive recipes|sample|all`: the queries each name derives, a sample of one
repo's rows, and the committed query sets regenerated (or checked) from their settings."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from recall.commands._flags import add_common, locate_flags
from recall.errors import EXIT_LOSS, EXIT_OK, RecallError
from recall.files import read_input, write_atomic
from recall.inputs import keystrokes
from recall.inputs.corpus import Pin, cache_root, fetch, load_pins, mirror_root, select_pins
from recall.inputs.derive import (
    DEFAULT_SEED,
    RECIPE_SETS,
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
from recall.inputs.queryset import DERIVED_SETS, PATH_SET, format_queries, read_queries
from recall.inputs.symbols import checkout_symbols


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("derive", help="derive queries from the corpora's names")
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")

    recipes_p = verbs.add_parser("recipes", help="print source, type, query for names")
    recipes_p.add_argument("names", nargs="+", metavar="NAME")
    recipes_p.add_argument(
        "--seed", type=int, default=DEFAULT_SEED, help="recipe seed (default: %(default)s)"
    )
    recipes_p.add_argument(
        "--set", choices=(*RECIPE_SETS, PATH_SET), default="default", dest="recipe_set",
        help="the query set's recipes (default: %(default)s)",
    )  # fmt: skip
    recipes_p.add_argument(
        "--owner", metavar="OWNER", help="typed set: the name's scope owner, for `qualified`"
    )
    recipes_p.add_argument(
        "--language", metavar="L", default="", help="typed set: the corpus language"
    )

    sample_p = verbs.add_parser(
        "sample", help="print the queries.tsv rows of N sampled names of one pinned repo",
        description="Sample N names of a pinned repo and print their rows: each name gives "
        "up to six rows (one a type), fewer where a recipe does not apply or its query is a "
        "prefix of a name.",
    )  # fmt: skip
    add_common(sample_p)
    sample_p.add_argument("repo", metavar="REPO")
    sample_p.add_argument(
        "--n", type=int, required=True, metavar="N",
        help="how many names to sample (not rows: a name gives up to six)",
    )  # fmt: skip
    sample_p.add_argument(
        "--seed", type=int, default=DEFAULT_SEED, help="sampling seed (default: %(default)s)"
    )

    all_p = verbs.add_parser(
        "all", help="regenerate the query sets from their derive settings (hand rows kept)"
    )
    add_common(all_p)
    all_p.add_argument(
        "--settings", metavar="FILE",
        help="one query set's settings (default: every named set whose settings exist: "
        + ", ".join(f"{q} from {d}" for q, d in DERIVED_SETS.values()) + ")",
    )  # fmt: skip
    all_p.add_argument("--queries", metavar="FILE", help="that set's file (default: queries.tsv)")
    all_p.add_argument(
        "--check", action="store_true", help="exit 1 if a result differs from its file"
    )


def run(args: argparse.Namespace) -> int:
    locate_flags(args)
    verbs = {"recipes": _recipes, "sample": _sample, "all": _all}
    return verbs[args.verb](args)


def _recipes(args: argparse.Namespace) -> int:
    for name in args.names:
        if args.recipe_set == "typed":
            made = typed_recipes(name, args.seed, args.owner, args.language)
        elif args.recipe_set == PATH_SET:
            made = path_recipes(name, args.seed)
        else:
            made = recipes(name, args.seed)
        for kind, query in made:
            print(f"{name}\t{kind}\t{query}")
    return EXIT_OK


def _source(pin: Pin, args: argparse.Namespace) -> NameSource:
    cache = cache_root(args.cache)
    checkout = fetch(pin, cache, mirror_root(args.mirror))
    return name_source(checkout_symbols(checkout, cache), pin.language)


def _paths(pin: Pin, args: argparse.Namespace) -> list[str]:
    cache = cache_root(args.cache)
    return checkout_paths(fetch(pin, cache, mirror_root(args.mirror)), cache)


def _sample(args: argparse.Namespace) -> int:
    corpus = Path(args.corpus)
    (pin,) = select_pins(load_pins(corpus), [args.repo], corpus)
    if args.n < 0:
        raise RecallError("--n must be zero or more")
    rows = derive_rows(pin.name, _source(pin, args).names, args.n, args.seed)
    sys.stdout.buffer.write(format_queries(rows).split(b"\n", 1)[1])
    return EXIT_OK


def _all(args: argparse.Namespace) -> int:
    if args.settings or args.queries:
        sets = [(Path(args.queries or "queries.tsv"), Path(args.settings or "derive.json"))]
    else:
        named = [(Path(q), Path(d)) for q, d in DERIVED_SETS.values()]
        sets = [(queries, settings) for queries, settings in named if settings.exists()]
        if not sets:  # else nothing is made or checked, and exit 0 says all is well
            raise RecallError(
                f"derive all: no derive settings in {Path.cwd()} ("
                + ", ".join(settings.name for _queries, settings in named)
                + "): run it in a suite's folder (recall's checkout, or a finder's with sets "
                "of its own), or name one set with --settings FILE --queries FILE"
            )
    pins = load_pins(Path(args.corpus))
    sources: dict[str, NameSource] = {}
    status = EXIT_OK
    for queries, settings_path in sets:
        settings = load_settings(settings_path, pins)
        if keystrokes.is_typing_settings(settings_path):  # its own rows: steps of sequences
            for repo in settings:
                if repo not in sources:
                    sources[repo] = _source(pins[repo], args)
            data = keystrokes.format_typing(keystrokes.derive_typing_all(sources, settings))
        elif (recipe_set := read_recipe_set(settings_path)) == PATH_SET:
            existing = read_queries(queries, set(pins)) if queries.exists() else []
            paths = {repo: _paths(pins[repo], args) for repo in settings}
            data = format_queries(derive_all_paths(paths, settings, existing))
        else:
            existing = read_queries(queries, set(pins)) if queries.exists() else []
            for repo in settings:
                if repo not in sources:
                    sources[repo] = _source(pins[repo], args)
            data = format_queries(derive_all(sources, settings, existing, recipe_set))
        current = read_input(queries) if queries.exists() else b""
        count = data.count(b"\n") - 1
        if args.check:
            if data != current:
                print(f"recall: {queries} differs from what derive all makes now", file=sys.stderr)
                status = EXIT_LOSS
            else:
                print(f"{queries}: up to date ({count} rows)")
            continue
        if data != current:
            write_atomic(queries, data)
        print(f"{queries}: {count} rows")
    return status

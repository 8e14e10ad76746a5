"""`recall derive recipes|sample|all`: the queries each name derives, a sample of one
repo's rows, and the committed query sets regenerated (or checked) from their settings
(the work is recall/workflows/derive.py's; this is its flags)."""

from __future__ import annotations

import argparse
import sys
import typing

from recall.commands._flags import add_common
from recall.errors import EXIT_LOSS, EXIT_OK
from recall.inputs.queryset import DERIVED_SETS, format_queries
from recall.workflows import derive
from recall.workflows.options import (
    Data,
    DeriveOptions,
    RecipeSet,
    RecipesOptions,
    SampleOptions,
)


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("derive", help="derive queries from the corpora's names")
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")

    recipes_p = verbs.add_parser("recipes", help="print source, type, query for names")
    recipes_p.add_argument("names", nargs="+", metavar="NAME")
    recipes_p.add_argument(
        "--seed", type=int, default=RecipesOptions.seed, help="recipe seed (default: %(default)s)"
    )
    recipes_p.add_argument(
        "--set", choices=typing.get_args(RecipeSet), default=RecipesOptions.recipe_set,
        dest="recipe_set", help="the query set's recipes (default: %(default)s)",
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
        "--seed", type=int, default=SampleOptions.seed, help="sampling seed (default: %(default)s)"
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
    verbs = {"recipes": _recipes, "sample": _sample, "all": _all}
    return verbs[args.verb](args)


def _recipes(args: argparse.Namespace) -> int:
    options = RecipesOptions(
        names=tuple(args.names), seed=args.seed, recipe_set=args.recipe_set, owner=args.owner,
        language=args.language,
    )  # fmt: skip
    for name, kind, query in derive.derived_queries(options):
        print(f"{name}\t{kind}\t{query}")
    return EXIT_OK


def _data(args: argparse.Namespace) -> Data:
    return Data(corpus=args.corpus, cache=args.cache, mirror=args.mirror)


def _sample(args: argparse.Namespace) -> int:
    rows = derive.sample(SampleOptions(repo=args.repo, n=args.n, data=_data(args), seed=args.seed))
    sys.stdout.buffer.write(format_queries(rows).split(b"\n", 1)[1])
    return EXIT_OK


def _all(args: argparse.Namespace) -> int:
    options = DeriveOptions(
        data=_data(args), settings=args.settings, queries=args.queries, check=args.check
    )
    status = EXIT_OK
    for made in derive.derive_sets(options):
        if not options.check:
            print(f"{made.queries}: {made.rows} rows")
        elif made.changed:
            print(f"recall: {made.queries} differs from what derive all makes now", file=sys.stderr)
            status = EXIT_LOSS
        else:
            print(f"{made.queries}: up to date ({made.rows} rows)")
    return status

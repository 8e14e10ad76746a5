"""`recall bisect --good REF --bad REF`: the first commit at which a query's rank changed
or the #1 rate fell (the search, and the test of "bad" each way asks for, are
recall/workflows/bisection.py's; this is its flags)."""

from __future__ import annotations

import argparse
import sys
import typing

from recall.commands._flags import add_commits_run, commit_options
from recall.errors import EXIT_OK
from recall.workflows import bisection
from recall.workflows.options import BisectOptions, Metric


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bisect", help="the first commit where a query's rank or #1 rate changed")
    p.add_argument("--good", required=True, metavar="REF", help="a commit before the change")
    p.add_argument("--bad", required=True, metavar="REF", help="a commit after it")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument(
        "--query",
        metavar="REPO:QUERY",
        help="bad = the query's rank differs from its rank at --good",
    )
    what.add_argument(
        "--metric",
        choices=typing.get_args(Metric),
        help="bad = the #1 rate fell by --drop points or more from --good's",
    )
    p.add_argument("--drop", type=float, metavar="PTS", help="with --metric: points of #1 %%")
    p.add_argument("--source", metavar="NAME", help="with --query: the intended name, when the "
                   "query set has the query for several")  # fmt: skip
    add_commits_run(p)


def run(args: argparse.Namespace) -> int:
    options = options_of(args)
    sys.stdout.write(bisection.render(bisection.find_first_bad(options)))
    return EXIT_OK


def options_of(args: argparse.Namespace) -> BisectOptions:
    return BisectOptions(
        good=args.good, bad=args.bad, commits=commit_options(args), query=args.query,
        source=args.source, metric=args.metric, drop=args.drop,
    )  # fmt: skip

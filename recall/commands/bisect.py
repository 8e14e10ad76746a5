"""`recall bisect --good REF --bad REF`: the first commit at which a query's rank changed
or the #1 rate fell (the search is recall/bisect.py's; this is its flags and the test of
"bad" each way asks for)."""

from __future__ import annotations

import argparse
import sys

from recall.commands._flags import add_commits_run
from recall.errors import EXIT_OK, RecallError
from recall.running.build import check_build_timeout
from recall.workflows import bisection as bisection
from recall.workflows import history


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
        choices=("first_pct",),
        help="bad = the #1 rate fell by --drop points or more from --good's",
    )
    p.add_argument("--drop", type=float, metavar="PTS", help="with --metric: points of #1 %%")
    p.add_argument("--source", metavar="NAME", help="with --query: the intended name, when the "
                   "query set has the query for several")  # fmt: skip
    add_commits_run(p)


def run(args: argparse.Namespace) -> int:
    check_build_timeout(args.build_timeout)
    if args.metric and (args.drop is None or not args.drop > 0):
        raise RecallError("--metric first_pct needs --drop PTS, above 0")
    if args.drop is not None and not args.metric:
        raise RecallError("--drop goes with --metric first_pct")
    if args.source is not None and not args.query:
        raise RecallError("--source goes with --query")
    if args.query and not args.repo:
        args.repo = [args.query.partition(":")[0]]
    plan = history.make_plan(args)
    row = bisection.query_row(plan, args.query, args.source) if args.query else None
    if row is not None:
        what = f"rank of {row.source} ({row.repo}:{row.query})"
        rank = bisection.rank_of(plan, row)
        verdict = bisection.bisect(plan, args.good, args.bad, rank, lambda g, v: v != g)
    else:
        what, drop = "#1 %", args.drop

        def fell(good: float | int | None, value: float | int | None) -> bool:
            return good is not None and value is not None and good - value >= drop - 1e-9

        verdict = bisection.bisect(plan, args.good, args.bad, bisection.first_pct(plan), fell)
    sys.stdout.write(bisection.render(plan, verdict, what, row))
    return EXIT_OK

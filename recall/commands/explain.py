"""`recall explain QUERY --repo R`: one query through each binary, the top 10 side by
side (the work is recall/workflows/explain.py's; this is its flags, turned into
ExplainOptions, and the printing)."""

from __future__ import annotations

import argparse
import sys

import orjson

from recall.commands._flags import (
    add_baseline,
    add_build_timeout,
    add_common,
    add_finder,
    add_queries,
)
from recall.errors import EXIT_OK
from recall.terminal import safe_output
from recall.workflows import explain
from recall.workflows.options import Data, ExplainOptions


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("explain", help="one query through each binary, top 10 side by side")
    add_common(p)
    p.add_argument("query", metavar="QUERY")
    p.add_argument("--repo", required=True, metavar="R", help="the pin the query runs on")
    p.add_argument("--engine", metavar="E", help="preset name or engine TOML file")
    add_finder(p)
    p.add_argument("--bin", metavar="PATH", help="candidate binary built by hand")
    add_baseline(p)
    p.add_argument(
        "--source", metavar="NAME",
        help="the intended name (default: the query's source in the query set)",
    )  # fmt: skip
    p.add_argument(
        "--type", metavar="T", help="the row's type, with --source (default: the set's row's)"
    )
    add_queries(p, "the query set the source is looked up in")
    p.add_argument("--json", action="store_true", help="print the same as one JSON object")
    p.add_argument(
        "--timeout", type=float, default=ExplainOptions.timeout,
        help="seconds for the query (default: %(default)s)",
    )  # fmt: skip
    add_build_timeout(p)


def run(args: argparse.Namespace) -> int:
    explained = explain.explain(options_of(args))
    data = explained.data
    if args.json:
        sys.stdout.buffer.write(orjson.dumps(data, option=orjson.OPT_INDENT_2) + b"\n")
    else:
        sys.stdout.write(explain.render(data, explained.sides))
        lines = [f"  {name}={value}" for name, value in data["environment"].items()]
        text = "environment ({run}: the session's folder):\n" + "\n".join(lines) + "\n"
        sys.stdout.write(safe_output(text))
    return EXIT_OK


def options_of(args: argparse.Namespace) -> ExplainOptions:
    return ExplainOptions(
        query=args.query, repo=args.repo,
        data=Data(corpus=args.corpus, queries=args.queries, cache=args.cache, mirror=args.mirror),
        source=args.source, type=args.type, finder=args.finder, engine=args.engine,
        bin=args.bin, base=args.base, base_bin=args.base_bin, timeout=args.timeout,
        build_timeout=args.build_timeout,
    )  # fmt: skip

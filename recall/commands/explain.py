"""`recall explain QUERY --repo R`: one query through each binary, the top 10 side by
side (the work is recall/explain.py's; this is its flags and the steps around it)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import orjson

from recall.commands._flags import (
    add_baseline,
    add_build_timeout,
    add_common,
    add_finder,
    add_queries,
)
from recall.errors import EXIT_OK
from recall.finders.engine import finder_env, resolve_engine
from recall.inputs.corpus import cache_root, load_pins, mirror_root, select_pins
from recall.inputs.keystrokes import refuse_typing
from recall.inputs.queryset import is_committed_set, query_set_path, read_queries
from recall.running.build import check_build_timeout, finder_root, make_binaries
from recall.running.measure import open_corpus
from recall.terminal import safe_output
from recall.workflows import explain
from recall.workflows.run import check_timeout


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
        "--timeout", type=float, default=explain.EXPLAIN_TIMEOUT_S,
        help="seconds for the query (default: %(default)s)",
    )  # fmt: skip
    add_build_timeout(p)


def run(args: argparse.Namespace) -> int:
    check_timeout(args.timeout)
    check_build_timeout(args.build_timeout)
    corpus, queries = Path(args.corpus), query_set_path(args.queries)
    (pin,) = select_pins(load_pins(corpus), [args.repo], corpus)
    refuse_typing(queries, "recall explain")
    rows = read_queries(queries, None) if queries.exists() else []
    row = explain.pick_row(rows, pin.name, args.query, args.source, args.type)
    cache = cache_root(args.cache)
    root = finder_root(Path(args.finder))
    engine = resolve_engine(args.engine, root)
    target = open_corpus(pin, cache, mirror_root(args.mirror))
    strict = is_committed_set(args.queries)
    explain.check_source(row, target.names, bool(args.source), rows, queries, strict)
    binaries = make_binaries(
        root, engine, cache, bin_path=args.bin, base=args.base, base_bin=args.base_bin,
        build_timeout=args.build_timeout,
    )  # fmt: skip
    sides = [explain.explain_one(b, target, row, args.timeout) for b in binaries]
    data = explain.as_json(pin, row, sides)
    environment = finder_env(engine, os.environ)  # what the finder ran with, name by name
    data["environment"] = environment
    if args.json:
        sys.stdout.buffer.write(orjson.dumps(data, option=orjson.OPT_INDENT_2) + b"\n")
    else:
        sys.stdout.write(explain.render(data, sides))
        lines = [f"  {name}={value}" for name, value in environment.items()]
        text = "environment ({run}: the session's folder):\n" + "\n".join(lines) + "\n"
        sys.stdout.write(safe_output(text))
    return EXIT_OK

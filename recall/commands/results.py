"""`recall results`: every peer finder and the reference over one query set, written as
docs/RESULTS.md (the work is recall/workflows/results.py's; this is its flags)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from recall.commands._flags import add_common, add_split, tupled
from recall.errors import EXIT_OK
from recall.files import target, write_atomic
from recall.workflows.options import ResultsOptions
from recall.workflows.results import results_page


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "results",
        help="every peer finder and the reference over a query set: docs/RESULTS.md",
        description="Run every peer finder and the reference finder over the query set "
        "(recall run --json each) and write the results page.",
    )
    add_common(parser)
    parser.add_argument("--out", default=ResultsOptions.out, help="the page to write")
    parser.add_argument(
        "--queries",
        default=ResultsOptions.queries,
        help="the query set: a file or a committed set's name",
    )
    add_split(parser)
    parser.add_argument(
        "--jobs", type=int, default=ResultsOptions.jobs,
        help="parallel queries for per-query finders (default: 1, so latency is per query); "
        "every finder is run anew (no cached run), so its seconds are measured with these",
    )  # fmt: skip
    parser.add_argument(
        "--reports", metavar="DIR",
        help="keep each finder's JSON report there; with --render-only, read them from there",
    )  # fmt: skip
    parser.add_argument(
        "--render-only", action="store_true",
        help="run nothing: render the page from the reports kept in --reports",
    )  # fmt: skip
    parser.add_argument(
        "--set-reports", action="append", metavar="SET=DIR", type=_set_reports,
        help="with --queries judgments: the folder where SET's results run kept its reports "
        "(--reports DIR), whose #1 shares the page correlates with the agreement (repeatable; "
        "SET one of default, typed, typing, paths)",
    )  # fmt: skip
    parser.add_argument(
        "--only", action="append", metavar="PRESET",
        help="run only the peers of this preset (repeatable), e.g. while trying a change",
    )  # fmt: skip


def run(args: argparse.Namespace) -> int:
    """Run (or read back) every finder's report and write the page."""
    options = options_of(args)
    out = Path(options.out)
    out.parent.mkdir(parents=True, exist_ok=True)  # docs/ for a new page
    target(out)  # a FIFO or a device there is refused before any work
    made = results_page(options)
    write_atomic(out, made.markdown.encode("utf-8"))
    print(f"recall results: wrote {options.out} ({len(made.entries)} finders)", file=sys.stderr)
    return EXIT_OK


def options_of(args: argparse.Namespace) -> ResultsOptions:
    return ResultsOptions(
        corpus=args.corpus, queries=args.queries, cache=args.cache, mirror=args.mirror,
        split=args.split, jobs=args.jobs, reports=args.reports, render_only=args.render_only,
        only=tupled(args.only), out=args.out, sets=tuple(args.set_reports or ()),
    )  # fmt: skip


def _set_reports(value: str) -> tuple[str, str]:
    """`SET=DIR`, split; the set's name is checked with its reports."""
    name, sep, folder = value.partition("=")
    if not (sep and name and folder):
        raise argparse.ArgumentTypeError(f"expected SET=DIR, got {value!r}")
    return name, folder

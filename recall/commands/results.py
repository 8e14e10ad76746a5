"""`recall results`: every peer finder and the reference over one query set, written as
docs/RESULTS.md (recall/results.py runs them and renders the page)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from recall.commands._flags import add_common, add_split
from recall.errors import EXIT_OK, RecallError
from recall.files import target, write_atomic
from recall.render.results_page import render_results
from recall.workflows import results_page as results


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "results",
        help="every peer finder and the reference over a query set: docs/RESULTS.md",
        description="Run every peer finder and the reference finder over the query set "
        "(recall run --json each) and write the results page.",
    )
    add_common(parser)
    parser.add_argument("--out", default="docs/RESULTS.md", help="the page to write")
    parser.add_argument(
        "--queries", default="queries.tsv", help="the query set: a file or a committed set's name"
    )
    add_split(parser)
    parser.add_argument(
        "--jobs", type=int, default=1,
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
        "--only", action="append", metavar="PRESET",
        help="run only the peers of this preset (repeatable), e.g. while trying a change",
    )  # fmt: skip


def run(args: argparse.Namespace) -> int:
    """Run (or read back) every finder's report and write the page."""
    if args.jobs < 1:
        raise RecallError("--jobs must be 1 or more")
    target(Path(args.out))  # a FIFO or a device there is refused before any work
    entries = results.peer_entries(args)
    results.check_comparable(entries)
    page = render_results(entries, {**results.machine(), "jobs": results.measured_jobs(entries)})
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(out, page.encode("utf-8"))
    print(f"recall results: wrote {args.out} ({len(entries)} finders)", file=sys.stderr)
    return EXIT_OK

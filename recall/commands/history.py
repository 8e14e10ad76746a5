"""`recall history`: the finder measured at many commits of its repo, as a table, JSON or
a page of charts (the measuring is recall/history.py's, the rendering history_page's)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import orjson

from recall import history, history_page
from recall.build import check_build_timeout
from recall.commands._flags import add_commits_run
from recall.errors import EXIT_FAILURE, EXIT_OK, RecallError
from recall.symbols import write_atomic


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("history", help="measure the finder at many commits of its repo")
    p.add_argument(
        "revs", nargs="*", metavar="RANGE|REF",
        help="a range as git rev-list takes it (A..B), or refs (default with --tags: tags)",
    )  # fmt: skip
    p.add_argument(
        "--tags",
        nargs="?",
        const="*",
        metavar="PATTERN",
        help="every tag matching PATTERN (a glob; default: all), oldest first",
    )
    p.add_argument("--first-parent", action="store_true", help="a range's first parents only")
    p.add_argument(
        "--every",
        type=int,
        default=1,
        metavar="N",
        help="every Nth commit, counted back from the newest (default: 1)",
    )
    add_output_flags(p)
    add_commits_run(p)


def add_output_flags(p: argparse.ArgumentParser) -> None:
    """How a history is printed: history and merge of its shards print the same."""
    p.add_argument("--by", choices=("type", "repo"), help="also a table and chart per type or repo")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print the history as one JSON object")
    out.add_argument("--markdown", action="store_true", help="print the history as Markdown")
    p.add_argument("--html", metavar="FILE", help="also write a page with SVG charts to FILE")


def run(args: argparse.Namespace) -> int:
    check_build_timeout(args.build_timeout)
    plan = history.make_plan(args)
    if args.tags is not None and args.revs:
        raise RecallError("history: give --tags or RANGE|REF..., not both")
    if args.tags is not None:
        commits = history.tag_commits(plan.root, args.tags)
    elif not args.revs:
        raise RecallError("history: give a RANGE (A..B), REFs, or --tags [PATTERN]")
    elif history.is_range(args.revs):
        commits = history.range_commits(plan.root, args.revs, first_parent=args.first_parent)
    else:
        commits = history.listed_commits(plan.root, args.revs)
    points = history.history(plan, history.thin(commits, args.every))
    return print_history(args, history.as_json(plan, points))


def print_history(args: argparse.Namespace, data: dict) -> int:
    """The history as --json, --markdown or text (and --html), and its exit status: 0
    unless every commit failed."""
    if args.html:
        page = history_page.render_html(data, by=args.by).encode("utf-8")
        try:
            write_atomic(Path(args.html), page)
        except OSError as exc:
            raise RecallError(f"--html {args.html}: cannot write: {exc.strerror or exc}") from None
    if args.json:
        sys.stdout.buffer.write(orjson.dumps(data, option=orjson.OPT_INDENT_2) + b"\n")
    else:
        sys.stdout.write(history_page.render(data, by=args.by, markdown=args.markdown))
    return EXIT_OK if any(commit["error"] is None for commit in data["commits"]) else EXIT_FAILURE

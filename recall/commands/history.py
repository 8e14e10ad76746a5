"""`recall history`: the finder measured at many commits of its repo, as a table, JSON or
a page of charts (the measuring is recall/workflows/history.py's, the rendering
render/history.py's)."""

from __future__ import annotations

import argparse
from pathlib import Path

from recall.commands._flags import add_commits_run, commit_options, shard_spec
from recall.commands._output import print_history
from recall.errors import EXIT_OK, RecallError
from recall.files import target
from recall.workflows import history, history_shards
from recall.workflows.options import HistoryOptions


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
        default=HistoryOptions.every,
        metavar="N",
        help="every Nth commit, counted back from the newest (default: 1)",
    )
    add_output_flags(p)
    add_commits_run(p)
    p.add_argument(
        "--shard", type=shard_spec, metavar="K/N",
        help="measure shard K of N only and --save it for recall merge; prints no history. "
        "The (commit, repo) pairs are counted oldest commit first, repos sorted within "
        "each; shard K takes the K-th of N runs of consecutive pairs",
    )  # fmt: skip
    p.add_argument("--save", metavar="FILE", help="with --shard: write the shard's results to FILE")


def add_output_flags(p: argparse.ArgumentParser) -> None:
    """How a history is printed: history and merge of its shards print the same."""
    p.add_argument("--by", choices=("type", "repo"), help="also a table and chart per type or repo")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print the history as one JSON object")
    out.add_argument("--markdown", action="store_true", help="print the history as Markdown")
    p.add_argument("--html", metavar="FILE", help="also write a page with SVG charts to FILE")


def run(args: argparse.Namespace) -> int:
    options = options_of(args)
    if options.shard:
        for flag in ("json", "markdown", "html", "by"):
            if getattr(args, flag):
                raise RecallError(
                    f"--shard and --{flag}: a shard prints no history; give --{flag} to recall "
                    "merge"
                )
        saved = history_shards.measure_saved(options)
        (k, n) = saved.shard
        print(
            f"recall: history shard {k}/{n}: {saved.pairs} of {saved.total} "
            f"(commit, repo) pairs ({saved.commits} commits) saved to {saved.file}; recall "
            "merge with the other shards' files makes the history"
        )
        return EXIT_OK
    if args.html:
        target(Path(args.html))  # a FIFO or a device there is refused before any work
    return print_history(args, history.measure_history(options))


def options_of(args: argparse.Namespace) -> HistoryOptions:
    return HistoryOptions(
        commits=commit_options(args), revs=tuple(args.revs), tags=args.tags,
        first_parent=args.first_parent, every=args.every, shard=args.shard, save=args.save,
    )  # fmt: skip

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
    _check_shard_flags(args)
    for named in (args.html, args.save):
        if named:
            target(Path(named))  # a FIFO or a device there is refused before any work
    plan = history.make_plan(options.commits)
    commits = history.chosen_commits(plan, options)
    if args.shard:
        return _shard(args, plan, commits)
    points = history.history(plan, commits)
    return print_history(args, history.history_of(plan, points))


def options_of(args: argparse.Namespace) -> HistoryOptions:
    return HistoryOptions(
        commits=commit_options(args), revs=tuple(args.revs), tags=args.tags,
        first_parent=args.first_parent, every=args.every,
    )  # fmt: skip


def _check_shard_flags(args: argparse.Namespace) -> None:
    if args.save and not args.shard:
        raise RecallError("--save goes with --shard K/N: a shard's results go to recall merge")
    if not args.shard:
        return
    if not args.save:
        raise RecallError("--shard needs --save FILE: a shard's results go to recall merge")
    for flag in ("json", "markdown", "html", "by"):
        if getattr(args, flag):
            raise RecallError(
                f"--shard and --{flag}: a shard prints no history; give --{flag} to recall merge"
            )


def _shard(args: argparse.Namespace, plan: history.Plan, commits: list[history.Commit]) -> int:
    """Measure this shard's (commit, repo) pairs and save them for recall merge."""
    k, n = args.shard
    measured = history_shards.measure_shard(plan, commits, k, n)
    urls = [(commit, history.commit_url(plan.root, commit.sha)) for commit in commits]
    history_shards.save_shard(Path(args.save), plan, urls, measured, args.shard)
    pairs = sum(len(part.repos) for part, _key in measured)
    total = len(commits) * len({row.repo for row in plan.rows})
    print(
        f"recall: history shard {k}/{n}: {pairs} of {total} "
        f"(commit, repo) pairs ({len(measured)} commits) saved to {args.save}; recall merge "
        "with the other shards' files makes the history"
    )
    return EXIT_OK

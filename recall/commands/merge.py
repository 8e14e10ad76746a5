"""`recall merge FILE...`: the files of `recall run --shard K/N --save FILE` as the one
report the unsharded run prints (recall/merge.py joins them, run.cmd_merge reports)."""

from __future__ import annotations

import argparse

from recall import run as running
from recall.commands._flags import add_common, add_queries, add_report_flags, add_selection


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "merge",
        help="one report from the files of recall run --shard K/N --save FILE",
        description="Merge the saved runs of every shard of a run into the report the "
        "unsharded run prints (the seconds are the shards' sums). Give the selection "
        "(--queries, --repo, --type, --regress) the shards ran with.",
    )
    add_common(p)
    p.add_argument("files", nargs="+", metavar="FILE", help="each shard's --save file")
    add_report_flags(p)
    add_queries(p)
    add_selection(p)


def run(args: argparse.Namespace) -> int:
    return running.cmd_merge(args)

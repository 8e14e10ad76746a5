"""`recall merge FILE...`: the files of `recall run --shard K/N --save FILE` as the one
report the unsharded run prints (recall/workflows/merge.py joins and reports them),
or those of `recall history --shard K/N --save FILE` as the one history
(history_shards.merge_history); this is its flags."""

from __future__ import annotations

import argparse

from recall.commands._flags import (
    add_common,
    add_queries,
    add_report_flags,
    add_selection,
    add_split,
    data_of,
)
from recall.commands._output import output_of, print_history, print_report
from recall.errors import RecallError
from recall.running.results_cache import HISTORY_KIND
from recall.workflows import history_shards
from recall.workflows import merge as merging
from recall.workflows.options import MergeOptions


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "merge",
        help="one report from the files of recall run --shard K/N --save FILE "
        "(or one history from those of recall history --shard K/N --save FILE)",
        description="Merge the saved runs of every shard of a run into the report the "
        "unsharded run prints (the seconds are the shards' sums), or the files of every "
        "shard of a history into the history the unsharded one prints (the seconds "
        "summed too). The --repo, --type and --split selection is the one the files hold; give "
        "--queries (and for a run --regress) the shards ran with. --fail-on-loss, "
        "--accept, --regress, --no-regress and --misses judge a run's report only.",
    )
    add_common(p)
    p.add_argument("files", nargs="+", metavar="FILE", help="each shard's --save file")
    add_report_flags(p)
    add_queries(p)
    add_selection(p)
    add_split(p)
    p.add_argument(
        "--by", choices=("type", "repo"),
        help="history files: also a table and chart per type or repo",
    )  # fmt: skip


def run(args: argparse.Namespace) -> int:
    options = options_of(args)
    if merging.shards_kind(options.files) == HISTORY_KIND:
        return print_history(args, history_shards.merge_history(options))
    if args.by:
        raise RecallError("--by goes with the files of a history's shards")
    return print_report(merging.merge(options), output_of(args))


def options_of(args: argparse.Namespace) -> MergeOptions:
    return MergeOptions(
        files=tuple(args.files), data=data_of(args), split=args.split,
        strict_queries=args.strict_queries, accept=args.accept, regress=args.regress,
        no_regress=args.no_regress, misses=args.misses, needs_baseline=args.fail_on_loss,
    )  # fmt: skip

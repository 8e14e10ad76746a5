"""`recall merge FILE...`: the files of `recall run --shard K/N --save FILE` as the one
report the unsharded run prints (recall/workflows/merge.py joins them, run.merge reports),
or those of `recall history --shard K/N --save FILE` as the one history
(recall/workflows/history_shards.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

from recall.commands._flags import (
    add_common,
    add_queries,
    add_report_flags,
    add_selection,
    add_split,
    data_of,
    locate_flags,
)
from recall.commands._output import output_of, print_history, print_report
from recall.errors import RecallError
from recall.inputs.queryset import query_set_path
from recall.inputs.sides import SPLITS
from recall.running.results_cache import HISTORY_KIND, SAVED_KIND, read_saved
from recall.workflows import history, history_shards
from recall.workflows import run as running
from recall.workflows.options import MergeOptions

NOUNS = {SAVED_KIND: "run", HISTORY_KIND: "history"}
RUN_ONLY = ("fail_on_loss", "accept", "regress", "no_regress", "misses")


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
    files = [read_saved(Path(f), "merge", tuple(NOUNS)) for f in args.files]
    kinds = [data["kind"] for data in files]
    for path, kind in zip(args.files, kinds, strict=True):
        if kind != kinds[0]:
            raise RecallError(
                f"merge {path}: the file of a {NOUNS[kind]} shard, and {args.files[0]} of a "
                f"{NOUNS[kinds[0]]} shard: merge the shards of one run or of one history"
            )
    if kinds[0] == SAVED_KIND:
        if args.by:
            raise RecallError("--by goes with the files of a history's shards")
        if args.repo is None and args.type is None and args.split is None:
            args.repo, args.type, args.split = shards_selection(args.files, files)
        options = MergeOptions(
            files=tuple(args.files), data=data_of(args), split=args.split,
            strict_queries=args.strict_queries, accept=args.accept, regress=args.regress,
            no_regress=args.no_regress, misses=args.misses, needs_baseline=args.fail_on_loss,
        )  # fmt: skip
        return print_report(running.merge(options), output_of(args))
    if args.split is not None:
        raise RecallError("--split goes with the files of a run's shards, not a history's")
    for flag in RUN_ONLY:
        if getattr(args, flag):
            raise RecallError(
                f"--{flag.replace('_', '-')} goes with the files of a run's shards, not a history's"
            )
    locate_flags(args)
    corpus, queries = Path(args.corpus), query_set_path(args.queries)
    pins, _all_rows, rows = history.select_rows(corpus, queries, args.repo, args.type)
    paths = [Path(f) for f in args.files]
    if args.repo is None and args.type is None:  # the rows the shards ran: all in each file
        rows = history_shards.load_shard(paths[0]).rows
    merged = history_shards.merge(paths, pins, rows, corpus)
    return print_history(args, merged)


def shards_selection(
    paths: list[str], files: list[dict]
) -> tuple[list[str] | None, list[str] | None, str | None]:
    """The --repo, --type and --split a run's shards ran with, as their files say: the same
    in every file, or the merge refuses (a file from before they said it: no selection; one
    from before --split: every row)."""
    found = [data.get("selection") for data in files]
    for path, selection in zip(paths, found, strict=True):
        if selection != found[0]:
            raise RecallError(
                f"merge {path}: ran with another --repo/--type/--split selection than {paths[0]}"
            )
    selection = found[0]
    if not isinstance(selection, dict):
        return None, None, None
    repos, types, split = selection.get("repo"), selection.get("type"), selection.get("split")
    if split is not None and split not in SPLITS:
        raise RecallError(f"merge {paths[0]}: selection.split must be one of {', '.join(SPLITS)}")
    for flag, value in (("repo", repos), ("type", types)):
        if value is not None and not (
            isinstance(value, list) and all(isinstance(v, str) for v in value)
        ):
            raise RecallError(f"merge {paths[0]}: selection.{flag} must be a list of strings")
    return repos, types, split

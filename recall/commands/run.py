"""`recall run`, the default command: its flags. The run itself (build, measure, report,
exit status) is recall/run.py's cmd_run."""

from __future__ import annotations

import argparse

from recall.commands._flags import (
    add_baseline,
    add_build_timeout,
    add_common,
    add_finder,
    add_jobs,
    add_queries,
    add_report_flags,
    add_selection,
    add_split,
    add_timeout,
    shard_spec,
)
from recall.workflows import run as running


class _Candidate(argparse.Action):
    """--engine and --bin in the order given: the report's runs keep that order."""

    def __call__(
        self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
        values: object, option_string: str | None = None,
    ) -> None:  # fmt: skip
        kind = "bin" if option_string == "--bin" else "engine"
        namespace.candidates = [*namespace.candidates, (kind, values)]


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="measure the finder (the default command)")
    add_common(p)
    p.add_argument(
        "--engine",
        action=_Candidate,
        metavar="[LABEL=]E",
        help="preset name or engine TOML file; unlabeled: the engine of the baseline and of "
        "--bin (default: recall.toml in the finder repo, else the reference finder); "
        "LABEL=E adds a candidate built from the working tree with engine E (repeatable)",
    )
    p.add_argument(
        "--bin",
        action=_Candidate,
        metavar="[LABEL=]PATH",
        help="a candidate binary built by hand, run with the unlabeled engine (repeatable; "
        "default candidate: the engine built from the working tree)",
    )
    add_finder(p)
    base = add_baseline(p)
    p.add_argument(
        "--same-program-ok", action="store_true",
        help="let --base REF run the very program the candidate runs (an engine whose bin is "
        "a program on PATH, not one its build makes in the tree); refused otherwise",
    )  # fmt: skip
    base.add_argument(
        "--against", metavar="FILE",
        help="baseline: the last run saved in FILE by --save, without running anything",
    )  # fmt: skip
    p.add_argument(
        "--save", metavar="FILE",
        help="also write every run's per-query results, with their cache keys, to FILE",
    )  # fmt: skip
    p.add_argument(
        "--no-cache", action="store_true",
        help="run every binary afresh: neither read nor write the results cache or kept indexes",
    )  # fmt: skip
    add_report_flags(p)
    add_jobs(p)
    add_queries(p)
    add_selection(p)
    add_split(p)
    add_timeout(p)
    add_build_timeout(p)
    p.add_argument(
        "--bench", type=int, metavar="REPS",
        help="also time the hand queries through every binary: a warm-up, then REPS reps",
    )  # fmt: skip
    p.add_argument(
        "--allow-empty",
        action="store_true",
        help="accept a binary that returns nothing for 95%% of queries",
    )
    p.add_argument(
        "--shard", type=shard_spec, metavar="K/N",
        help="run shard K of N only (every N-th repo of the selection) and --save its runs "
        "for recall merge; prints no report",
    )  # fmt: skip
    p.set_defaults(candidates=[])


def run(args: argparse.Namespace) -> int:
    return running.cmd_run(args)

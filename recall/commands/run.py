"""`recall run`, the default command: its flags, turned into RunOptions, and the report
printed as asked, with its exit status. The run itself (build, measure, report) is
recall/workflows/run.py's."""

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
    data_of,
    shard_spec,
)
from recall.commands._output import output_of, print_report
from recall.errors import EXIT_OK
from recall.workflows import run as running
from recall.workflows.options import RunOptions


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
    p.add_argument(
        "--no-candidate", action="store_true",
        help="measure the labeled --engine LABEL=E alone: leave out the working tree's own "
        "build, which is otherwise measured first, as `candidate`",
    )  # fmt: skip
    add_finder(p)
    base = add_baseline(p)
    p.add_argument(
        "--same-program-ok", action="store_true",
        help="let --base REF run the very program the candidate runs (an engine whose bin is "
        "a program on PATH, not one its build makes in the tree; or a working tree that "
        "holds REF's code unchanged, as --base HEAD on a clean tree): both sides then run "
        "for real; refused otherwise",
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
    options, output = options_of(args), output_of(args)
    running.check_run(options, output)
    measurement = running.measure(options)
    if options.shard:
        k, n = options.shard
        rows = measurement.plan.rows
        repos = ", ".join(dict.fromkeys(row.repo for row in rows))
        if measurement.plan.judgments:  # its repos are candidate lists, named by digests
            repos = f"{len(set(row.repo for row in rows))} of the judgments' candidate lists"
        print(
            f"recall: shard {k}/{n} ({repos}): {len(rows)} rows, {len(measurement.measured)} "
            f"runs saved to {options.save}; recall merge with the other shards' files makes "
            "the report"
        )
        return EXIT_OK
    report = running.report(measurement)
    return print_report(report, output)


def options_of(args: argparse.Namespace) -> RunOptions:
    return RunOptions(
        data=data_of(args), split=args.split, strict_queries=args.strict_queries,
        finder=args.finder, candidates=tuple(args.candidates),
        no_candidate=args.no_candidate, base=args.base,
        base_bin=args.base_bin, against=args.against, same_program_ok=args.same_program_ok,
        jobs=args.jobs, timeout=args.timeout, build_timeout=args.build_timeout,
        no_cache=args.no_cache, allow_empty=args.allow_empty, bench=args.bench,
        accept=args.accept, regress=args.regress, no_regress=args.no_regress,
        misses=args.misses, save=args.save, shard=args.shard,
    )  # fmt: skip

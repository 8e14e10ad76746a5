"""The flags several commands share, defined once so that every command spells, defaults
and explains them alike (the global three, the query set, the finder repo, how a report
is printed, the run flags that history and bisect measure each commit with), and their
values as the workflows take them. The defaults are the options' own
(recall/workflows/options.py). It imports nothing heavy: the CLI reads GLOBAL_VALUE_FLAGS
before it knows the command."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from recall.workflows.options import CommitOptions, Data

GLOBAL_VALUE_FLAGS = ("--cache", "--mirror", "--corpus")  # every command takes these


def add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--cache", metavar="DIR",
        help="cache folder (default: $RECALL_CACHE, else the user cache dir for recall)",
    )  # fmt: skip
    parser.add_argument(
        "--mirror", metavar="DIR",
        help="folder of bare mirrors laid out DIR/<host>/<path>, tried before each url "
        "(default: $RECALL_MIRROR)",
    )  # fmt: skip
    parser.add_argument(
        "--corpus", metavar="FILE",
        help="the pinned corpora (default: corpus.json beside the finder's recall.toml, else "
        "in the current folder, else the one recall ships)",
    )  # fmt: skip


def add_build_timeout(parser: argparse.ArgumentParser) -> None:
    from recall.workflows.options import RunOptions

    parser.add_argument(
        "--build-timeout", type=float, default=RunOptions.build_timeout, metavar="SECONDS",
        help="seconds a build may take before it is killed (default: %(default)g)",
    )  # fmt: skip


def add_queries(parser: argparse.ArgumentParser, what: str = "the query set") -> None:
    from recall.inputs.queryset import QUERY_SETS

    parser.add_argument(
        "--queries", metavar="SET",
        help=f"{what}: a file, or a committed set's name ({', '.join(QUERY_SETS)}), whose "
        "file is looked up as --corpus's is (default: queries.tsv)",
    )  # fmt: skip


def add_finder(parser: argparse.ArgumentParser, purpose: str = "", *, found: bool = True) -> None:
    """found: by default the folder of the recall.toml in the current folder or above it
    (as git finds .git), else the current folder; else the current folder."""
    where = "the folder of the recall.toml here or above, else ." if found else "."
    parser.add_argument(
        "--finder", metavar="DIR", default=None if found else ".",
        help=f"the finder's repo{purpose} (default: {where})",
    )  # fmt: skip


def add_baseline(parser: argparse.ArgumentParser) -> argparse._MutuallyExclusiveGroup:
    """--base and --base-bin, one or the other; the group, for a command with more kinds."""
    base = parser.add_mutually_exclusive_group()
    base.add_argument("--base", metavar="REF", help="baseline: build REF of the finder repo")
    base.add_argument("--base-bin", metavar="PATH", help="baseline: a binary built by hand")
    return base


def add_settings(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--settings", metavar="FILE", default="derive.json",
        help="per-repo n and seed (default: %(default)s)",
    )  # fmt: skip


def add_selection(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--repo", action="append", metavar="R", help="only this repo (repeatable)")
    parser.add_argument("--type", action="append", metavar="T", help="only this type (repeatable)")


def add_split(parser: argparse.ArgumentParser) -> None:
    from recall.inputs.sides import SPLITS

    parser.add_argument(
        "--split", choices=SPLITS,
        help="only the rows of the corpora on this side of the tune/holdout split, as each "
        "pin's `split` in corpus.json says; holdout runs the fresh holdout and the seen "
        "one, and the report names both; with a judgments set, the pairs of the source "
        "projects on this side: docs/queries.md (default: every row)",
    )  # fmt: skip


def add_jobs(parser: argparse.ArgumentParser) -> None:
    from recall.workflows.options import RunOptions

    parser.add_argument(
        "--jobs",
        type=int,
        default=RunOptions.jobs,
        help="parallel queries: per-query processes, or batch processes drawing the rows "
        "of the corpora, the largest first (default: %(default)s, the cores)",
    )


def add_timeout(parser: argparse.ArgumentParser) -> None:
    from recall.workflows.options import RunOptions

    parser.add_argument(
        "--timeout",
        type=float,
        default=RunOptions.timeout,
        help="seconds per query before it counts as an error (default: %(default)s)",
    )


def add_report_flags(p: argparse.ArgumentParser) -> None:
    """How a report is printed and judged: run and merge print the same report."""
    from recall.workflows.options import DEFAULT_REGRESS

    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print the report as one JSON object")
    out.add_argument("--markdown", action="store_true", help="print the report as Markdown")
    p.add_argument(
        "--fail-on-loss",
        action="store_true",
        help="exit 1 if a source lost #1 or the top 10 (unless accepted), a typing sequence "
        "needs more keystrokes to #1 or left the top 3, a regress case that held broke, or a "
        "query errored (needs a baseline)",
    )
    p.add_argument(
        "--accept", metavar="FILE",
        help="repo<TAB>query<TAB>source rows of reviewed losses: listed apart, not failing",
    )  # fmt: skip
    p.add_argument(
        "--regress", metavar="FILE",
        help=f"regress cases, repo<TAB>query<TAB>expect (default: {DEFAULT_REGRESS} when "
        "present; its cases for repos the corpus does not pin are skipped)",
    )  # fmt: skip
    p.add_argument("--no-regress", action="store_true", help="skip the regress cases")
    p.add_argument(
        "--strict-queries", action="store_true",
        help="refuse a --queries file with a source that is not a name of its corpus (the "
        "committed sets always are; other files run such rows as not found and list them)",
    )  # fmt: skip
    p.add_argument("--misses", action="store_true", help="list every source not ranked #1")
    p.add_argument(
        "--html", metavar="FILE",
        help="also write the report as one self-contained HTML page with charts",
    )  # fmt: skip


def add_commits_run(p: argparse.ArgumentParser) -> None:
    """The run flags that history and bisect measure each commit with."""
    add_common(p)
    add_finder(p)
    p.add_argument(
        "--engine",
        metavar="E",
        help="preset name or engine TOML file "
        "(default: recall.toml in the finder repo, else the reference finder)",
    )
    add_queries(p)
    add_selection(p)
    add_timeout(p)
    add_build_timeout(p)
    add_jobs(p)
    p.add_argument(
        "--no-cache",
        action="store_true",
        help="run every commit afresh: neither read nor write the results cache",
    )
    p.add_argument(
        "--allow-empty",
        action="store_true",
        help="accept a commit that returns nothing for 95%% of queries",
    )


def shard_spec(text: str) -> tuple[int, int]:
    """K/N with 1 <= K <= N, for --shard."""
    k, sep, n = text.partition("/")
    digits = all(part.isascii() and part.isdigit() for part in (k, n))  # not `²`
    if not (sep and digits and 1 <= int(k) <= int(n)):
        raise argparse.ArgumentTypeError(f"{text!r}: give K/N with 1 <= K <= N, as 2/3")
    return int(k), int(n)


def locate_flags(args: argparse.Namespace) -> None:
    """Fill in, in the flags of a command that works on them alone, what they left unsaid:
    the finder's repo and the suite files, looked up as a workflow looks them up
    (recall/inputs/suite.py)."""
    from recall.inputs.suite import locate

    found = locate(
        args.command, finder=getattr(args, "finder", None),
        corpus=getattr(args, "corpus", None), queries=getattr(args, "queries", None),
    )  # fmt: skip
    if hasattr(args, "finder"):
        args.finder = found.finder
    if hasattr(args, "corpus"):
        args.corpus = found.corpus
    if hasattr(args, "queries"):
        args.queries = found.queries


def tupled(values: list[str] | None) -> tuple[str, ...] | None:
    """A repeatable flag's values as the options hold them (None: not given)."""
    return None if values is None else tuple(values)


def data_of(args: argparse.Namespace) -> Data:
    """The data flags (the global three, the query set, --repo and --type) as the options
    hold them."""
    from recall.workflows.options import Data

    return Data(
        corpus=args.corpus, queries=args.queries, cache=args.cache, mirror=args.mirror,
        repos=tupled(getattr(args, "repo", None)), types=tupled(getattr(args, "type", None)),
    )  # fmt: skip


def commit_options(args: argparse.Namespace) -> CommitOptions:
    """The flags of add_commits_run, with which history and bisect measure each commit."""
    from recall.workflows.options import CommitOptions

    return CommitOptions(
        data=data_of(args), finder=args.finder, engine=args.engine, jobs=args.jobs,
        timeout=args.timeout, build_timeout=args.build_timeout, no_cache=args.no_cache,
        allow_empty=args.allow_empty,
    )  # fmt: skip

"""`recall cache list` and `recall cache prune`: what the cache holds and what can go (the
work is recall/workflows/cache.py's; this is its flags)."""

from __future__ import annotations

import argparse
import sys

from recall.commands._flags import add_common
from recall.errors import EXIT_OK
from recall.workflows import cache
from recall.workflows.options import Data, PruneOptions


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("cache", help="list the cache's entries or prune what is not needed")
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    list_p = verbs.add_parser("list", help="every checkout, build, symbols and results entry")
    add_common(list_p)
    prune_p = verbs.add_parser(
        "prune", help="remove stale entries (never one a running harness holds)"
    )
    add_common(prune_p)
    prune_p.add_argument(
        "--older-than", type=float, metavar="DAYS", help="also remove entries unused this long"
    )
    prune_p.add_argument(
        "--keep-builds", type=int, metavar="N", help="keep only the N most recently used builds"
    )
    prune_p.add_argument("--dry-run", action="store_true", help="say what would go; remove nothing")


def run(args: argparse.Namespace) -> int:
    data = Data(corpus=args.corpus, cache=args.cache, mirror=args.mirror)
    if args.verb == "list":
        sys.stdout.write(cache.render_list(list(cache.list_entries(data))))
        return EXIT_OK
    options = PruneOptions(
        data=data, older_than=args.older_than, keep_builds=args.keep_builds,
        dry_run=args.dry_run,
    )  # fmt: skip
    sys.stdout.write(cache.render_pruned(cache.prune_stale(options)))
    return EXIT_OK
